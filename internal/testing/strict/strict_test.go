package strict

import (
	"strings"
	"testing"
)

// TestDocumentIsStrict: nothing in the document is read differently by a
// strict validator (ajv, the generators) than by kin-openapi: no nullable
// beside allOf or without type, every nullable enum lists null, formats
// known, no $ref with constraining siblings.
func TestDocumentIsStrict(t *testing.T) {
	defects, err := StrictDefects()
	if err != nil {
		t.Fatal(err)
	}
	if len(defects) > 0 {
		t.Fatalf("%d defects a strict validator refuses (write nullable fields inline: type, format/pattern, nullable: true; "+
			"list null in a nullable enum):\n%s", len(defects), strings.Join(defects, "\n"))
	}
}

// TestStrictReadsNullableAsAjvDoes pins the translation on small schemas:
// what ajv (openapi-response-validator) accepts and refuses.
func TestStrictReadsNullableAsAjvDoes(t *testing.T) {
	for _, c := range []struct {
		name   string
		schema map[string]any
		defect string
	}{
		{"nullable with allOf", map[string]any{"type": "string", "nullable": true,
			"allOf": []any{map[string]any{"$ref": "#/components/schemas/Time"}}}, "nullable with allOf"},
		{"nullable enum without null", map[string]any{"type": "string", "nullable": true, "enum": []any{"a"}}, "without null"},
		{"nullable without type", map[string]any{"nullable": true, "description": "x"}, "without type"},
		{"unknown format", map[string]any{"type": "string", "format": "uuid-ish"}, "unknown format"},
		{"ref with siblings", map[string]any{"$ref": "#/components/schemas/Time", "nullable": false, "maxLength": 3}, "sibling"},
		{"empty object", map[string]any{"type": "object"}, "neither properties nor additionalProperties"},
		{"inline nullable", map[string]any{"type": "string", "format": "date-time", "nullable": true}, ""},
		{"nullable enum with null", map[string]any{"type": "string", "nullable": true, "enum": []any{"a", nil}}, ""},
	} {
		var defects []string
		translate(c.schema, "#", &defects)
		got := strings.Join(defects, "; ")
		if (c.defect == "") != (got == "") || !strings.Contains(got, c.defect) {
			t.Errorf("%s: defects %q, want one saying %q", c.name, got, c.defect)
		}
	}
}
