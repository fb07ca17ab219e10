package mcp

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/attestd/attestd/attestation"
	"github.com/google/jsonschema-go/jsonschema"
)

// Patterns of the inputs, as the API checks them.
const (
	addressPattern = `^[1-9A-HJ-NP-Za-km-z]{32,44}$`
	hashPattern    = `^(0[xX])?[0-9a-fA-F]{64}$`
	// apiHashPattern is the list's actionHash: no 0x.
	apiHashPattern   = `^[0-9a-fA-F]{64}$`
	signaturePattern = `^[1-9A-HJ-NP-Za-km-z]{64,88}$`
)

// typeSchemas are the JSON shapes of domain types whose Go kind differs
// from their JSON form.
func typeSchemas() map[reflect.Type]*jsonschema.Schema {
	return map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[attestation.Time](): {Type: "string", Format: "date-time",
			Description: "RFC 3339 UTC to the second, e.g. 2026-11-21T10:00:00Z"},
		reflect.TypeFor[attestation.ActionType](): actionTypeSchema(),
		reflect.TypeFor[json.RawMessage]():        {},
		reflect.TypeFor[LogStatus]():              {Type: "string", Enum: []any{string(LogVerified), string(LogNotLogged), string(LogFailed), string(LogUnavailable)}},
		reflect.TypeFor[KeySource]():              {Type: "string", Enum: []any{string(KeyPinned), string(KeyService)}},
	}
}

func actionTypeSchema() *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string"}
	for _, n := range attestation.ActionTypeNames() {
		s.Enum = append(s.Enum, n)
	}
	return s
}

// schemaFor infers the schema of T and lets patch refine its properties.
func schemaFor[T any](patch func(props map[string]*jsonschema.Schema)) (*jsonschema.Schema, error) {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: typeSchemas()})
	if err != nil {
		return nil, fmt.Errorf("mcp: schema of %T: %w", *new(T), err)
	}
	if patch != nil {
		patch(s.Properties)
	}
	return s, nil
}

func ptr[T any](v T) *T { return &v }

// property helpers for patches

func address(s *jsonschema.Schema) { s.Pattern = addressPattern }

func intRange(s *jsonschema.Schema, lo, hi float64) { s.Minimum, s.Maximum = ptr(lo), ptr(hi) }

func enumActionType(s *jsonschema.Schema) { s.Enum = actionTypeSchema().Enum }
