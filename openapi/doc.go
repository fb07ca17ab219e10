// Package openapi embeds openapi.yaml, the API contract users read, and
// serves it as JSON. Tests validate every response they receive against it.
package openapi
