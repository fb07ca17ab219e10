// Package egress provides the only way webhook deliveries leave the
// process: an HTTP client that dials public addresses only, and the checks
// a webhook URL passes before it is stored.
//
// Invariants: the address check runs at dial time, on the concrete IP the
// socket is about to connect to, after DNS resolution (so a name that
// re-resolves to a private address is refused: DNS rebinding), with
// IPv4-mapped, NAT64, 6to4 and IPv4-compatible IPv6 forms unwrapped first;
// the client never uses a proxy and never follows a redirect.
package egress
