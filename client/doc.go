// Package client provides a Go client of the attestd REST API: one method
// per route, each under a deadline, with non-2xx answers returned as
// *APIError decoded from the error envelope (status, code, message, and the
// retry delay of a 429). Records decode into the types of package
// attestation.
package client
