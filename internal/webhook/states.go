package webhook

// deliveryResult is what became of a delivery job, as the
// attestd_webhook_deliveries_total{result} metric and the worker's counts
// name it.
type deliveryResult string

const (
	resultSucceeded deliveryResult = "succeeded" // the receiver took it
	resultRetrying  deliveryResult = "retrying"  // failed; a retry is scheduled
	resultFailed    deliveryResult = "failed"    // failed with no retry left
	resultDeferred  deliveryResult = "deferred"  // put off without an attempt
	resultDropped   deliveryResult = "dropped"   // webhook gone or inactive, or settled elsewhere
)

// verificationResult is what became of an endpoint verification attempt,
// as attestd_webhook_verifications_total{result} names it.
type verificationResult string

const (
	verificationVerified   verificationResult = "verified"   // the receiver echoed the challenge
	verificationUnverified verificationResult = "unverified" // it answered without it, or no attempt is left
	verificationRetrying   verificationResult = "retrying"   // no answer; tried again later
	verificationPostponed  verificationResult = "postponed"  // to its turn at the host's cap; nothing sent
)
