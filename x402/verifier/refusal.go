package verifier

import (
	"net/http"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/x402"
)

// Refusal is why a paid request gets no content: an HTTP status and the
// error envelope's code, the x402 reason (a bounded set: it labels
// metrics) and a sentence for people.
type Refusal struct {
	Status  int
	Code    string
	Reason  string
	Message string
	// Challenge: the answer carries the payment instructions (a new
	// payment can fix it).
	Challenge bool
	// RetryAfter: seconds after which the same payment is worth
	// presenting again (0: it is not).
	RetryAfter int
}

func (r *Refusal) Error() string { return r.Reason + ": " + r.Message }

// Reasons beyond the scheme's.
const (
	ReasonMissing            = "payment_required"
	ReasonBlockhashExpired   = "invalid_exact_svm_payload_blockhash_expired"
	ReasonSimulationFailed   = "transaction_simulation_failed"
	ReasonReplayed           = "duplicate_settlement"
	ReasonFacilitatorRefused = "facilitator_refused"
	ReasonFacilitatorDown    = "facilitator_unavailable"
	ReasonRPCDown            = "rpc_unavailable"
	ReasonLedgerDown         = "ledger_unavailable"
	ReasonSettleFailed       = "settlement_failed"
	ReasonNotConfirmed       = "settlement_not_confirmed"
	ReasonNotReady           = "payments_not_ready"
	// ReasonAnswerExpired: a settled payment presented again after the
	// retention of the answer it bought.
	ReasonAnswerExpired = "payment_answer_expired"
	// ReasonAnswerLost: a settled payment presented again whose ledger
	// row was recovered from the chain after a restore: its kept answer
	// was lost with the database (409; not charged again, no new answer).
	ReasonAnswerLost = "payment_answer_lost"
	// ReasonOtherResource: the payment names another resource than the
	// request's (its payload's resource.url).
	ReasonOtherResource = "invalid_payment_resource"
)

func challenge(reason, msg string) *Refusal {
	return &Refusal{Status: http.StatusPaymentRequired, Code: apierror.CodePaymentRequired, Reason: reason, Message: msg, Challenge: true}
}

func malformed(reason, msg string) *Refusal {
	return &Refusal{Status: http.StatusBadRequest, Code: apierror.CodeInvalidParam, Reason: reason, Message: msg, Challenge: true}
}

func unavailable(reason, msg string) *Refusal {
	return &Refusal{Status: http.StatusServiceUnavailable, Code: apierror.CodeUnavailable, Reason: reason, Message: msg}
}

func replayed() *Refusal {
	return &Refusal{Status: http.StatusConflict, Code: apierror.CodePaymentReplayed, Reason: ReasonReplayed, Challenge: true,
		Message: "this payment was already used for an answer (one payment buys one answer); sign a new payment for this request"}
}

// fromCheck turns a decode or scheme error into a refusal: what does not
// decode is 400, what decodes but does not pay is 402.
func fromCheck(err error) *Refusal {
	e, ok := x402.AsError(err)
	if !ok {
		return malformed(x402.ReasonInvalidPayload, err.Error())
	}
	switch e.Reason {
	case x402.ReasonInvalidPayload, x402.ReasonInvalidVersion, x402.ReasonInvalidTransaction:
		return malformed(e.Reason, "invalid payment: "+e.Detail)
	}
	return challenge(e.Reason, "payment refused: "+e.Detail)
}
