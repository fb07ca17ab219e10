package x402

import "time"

// DefaultSettleTimeout is how long a server waits by default
// (ATTESTD_X402_SETTLE_TIMEOUT) for a payment's settlement to confirm
// before it answers the paid request: a paying client's deadline must be
// longer than this plus the request itself.
const DefaultSettleTimeout = 20 * time.Second
