// Package apierror is the API's error envelope,
// {"error": {"code": "SNAKE_CASE", "message": "human sentence"}}, with the
// codes of the contract. Every package that answers an HTTP error writes it
// through here, so the shape cannot drift.
package apierror
