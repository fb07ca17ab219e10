// Package client is a Go client of the attestd REST API (/api/v1).
//
// One method per route: Health, Stats, ListAttestations (every filter, offset
// or keyset cursor) and AllAttestations (walks every page by cursor),
// GetAttestation, GetAgent, GetAgentStats, and the premium FullHistory,
// ForensicReport and BulkVerify, which need an API key (WithAPIKey; sent as
// the x-api-key header).
//
// Every call runs under a deadline: the caller's context, bounded by the
// client's timeout (DefaultTimeout unless WithTimeout says otherwise). A
// non-2xx answer is returned as an *APIError decoded from the API's error
// envelope, {"error": {"code", "message"}}, with the HTTP status and, on 429,
// the Retry-After delay, so callers can branch:
//
//	c, err := client.New("http://127.0.0.1:8080", client.WithAPIKey(key))
//	at, err := c.GetAttestation(ctx, pda)
//	var apiErr *client.APIError
//	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound { ... }
//
// Records use the domain types of package attestation (Attestation, Agent),
// which decode the API's JSON shapes exactly.
package client
