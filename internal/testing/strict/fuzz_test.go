package strict

import (
	"strings"
	"testing"
)

// FuzzValidateAnswer: the strict validator never panics, whatever the
// method, path, status and body (it judges answers of nodes under test,
// hostile ones included), and a body it accepts is JSON.
func FuzzValidateAnswer(f *testing.F) {
	for _, s := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/agents/{agentId}", 200, `{"data":{"revokedAt":null}}`},
		{"POST", "/premium/bulk-verify", 200, `{"data":[{"id":"x","valid":false,"reason":null,"actionType":null,"timestamp":null,"checkedAt":"2026-11-24T00:00:00Z"}],"summary":{"total":1,"valid":0,"invalid":1,"notFound":1}}`},
		{"GET", "/health", 503, `{"status":"down"}`},
		{"GET", "/stats", 304, ``},
		{"DELETE", "/keys/{prefix}", 204, `{}`},
		{"GET", "/nope", 200, `[`},
		{"get", "/stats", 999, strings.Repeat("[", 20000)},
		{"GET", "/attestations", 200, `{"data":[],"pagination":{"limit":1e400,"offset":-0,"total":1.0}}`},
		{"GET", "/stats", 200, "{\"agents\":1,\"agents\":\"x\",\"\xff\":0}"},
	} {
		f.Add(s.method, s.path, s.status, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method, path string, status int, body []byte) {
		if err := ValidateAnswer(method, path, status, body); err == nil && len(body) > 0 {
			var ok bool
			for _, c := range body {
				if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
					ok = true
				}
			}
			if !ok {
				t.Fatalf("accepted a blank body %q", body)
			}
		}
	})
}
