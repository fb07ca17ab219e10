// Package apierror provides the API's error envelope,
// {"error": {"code": "SNAKE_CASE", "message": "..."}}, and its codes. Every
// package that answers an HTTP error writes it through here, so the shape
// cannot drift.
package apierror
