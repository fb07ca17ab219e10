package webhookapi

import (
	"errors"
	"testing"

	"github.com/attestd/attestd/internal/apierror"
)

// FuzzParseBody: no body panics or is accepted with an invalid field; the
// only errors are 4xx API errors.
func FuzzParseBody(f *testing.F) {
	for _, s := range []string{`{"url":"https://example.com/x","events":["attestation.created"]}`,
		`{"filter":{"agents":["9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"],"actionTypes":["ToolCall"]}}`,
		`{"active":true,"description":"x"}`, `{"events":[]}`, `[]`, `{"filter":{"agents":[1]}}`, `{"url":"\u0000"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r, err := parseBody("application/json", []byte(body), "url", "events", "filter", "description", "active")
		if err != nil {
			var ae *apierror.Error
			if !errors.As(err, &ae) || ae.Status < 400 || ae.Status > 499 {
				t.Fatalf("error %v", err)
			}
			return
		}
		if r.Events != nil && checkEvents(*r.Events) != nil {
			t.Fatalf("accepted events %v", *r.Events)
		}
		if r.Description != nil && checkDescription(*r.Description) != nil {
			t.Fatalf("accepted description %q", *r.Description)
		}
		if r.Filter != nil && (len(r.Filter.Agents) > maxAgents || r.Filter.Agents == nil || r.Filter.ActionTypes == nil) {
			t.Fatalf("accepted filter %+v", r.Filter)
		}
	})
}
