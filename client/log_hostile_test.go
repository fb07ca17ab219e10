package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/testing/logfixture"
)

// TestVerifyAttestationHostileService serves hostile answers to
// VerifyAttestation and the Monitor: each must fail with an error (never
// verify, never panic, never read without bound).
func TestVerifyAttestationHostileService(t *testing.T) {
	t.Parallel()
	l, as := filledLog(t, 9, 11)
	a := as[4]
	good, err := l.Proof(4, 9, a)
	if err != nil {
		t.Fatal(err)
	}
	att, _ := json.Marshal(map[string]any{"data": a})
	proofJSON := func(edit func(m map[string]any)) string {
		b, _ := json.Marshal(good)
		var m map[string]any
		json.Unmarshal(b, &m)
		edit(m)
		out, _ := json.Marshal(map[string]any{"data": m})
		return string(out)
	}
	huge := make([]string, 100000)
	for i := range huge {
		huge[i] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	}
	cases := []struct{ name, attestation, proof string }{
		{"proof not JSON", string(att), "<html>"},
		{"proof data null", string(att), `{"data":null}`},
		{"proof data array", string(att), `{"data":[]}`},
		{"leaf not base64", string(att), proofJSON(func(m map[string]any) { m["leaf"] = "!!!" })},
		{"leaf empty", string(att), proofJSON(func(m map[string]any) { m["leaf"] = "" })},
		{"index negative", string(att), proofJSON(func(m map[string]any) { m["leafIndex"] = -1 })},
		{"index huge", string(att), proofJSON(func(m map[string]any) { m["leafIndex"] = int64(1) << 62 })},
		{"index float", string(att), proofJSON(func(m map[string]any) { m["leafIndex"] = 4.5 })},
		{"tree size huge", string(att), proofJSON(func(m map[string]any) { m["treeSize"] = int64(1) << 62 })},
		{"tree size zero", string(att), proofJSON(func(m map[string]any) { m["treeSize"] = 0 })},
		{"100000 proof hashes", string(att), proofJSON(func(m map[string]any) { m["inclusionProof"] = huge })},
		{"proof hashes null", string(att), proofJSON(func(m map[string]any) { m["inclusionProof"] = nil })},
		{"proof hash not a string", string(att), proofJSON(func(m map[string]any) { m["inclusionProof"] = []any{1, 2} })},
		{"checkpoint 1 MB", string(att), proofJSON(func(m map[string]any) { m["checkpoint"] = strings.Repeat("x\n", 1<<19) })},
		{"checkpoint only signatures", string(att), proofJSON(func(m map[string]any) { m["checkpoint"] = "\n\n— attestd.test/log AAAA\n" })},
		{"checkpoint NUL bytes", string(att), proofJSON(func(m map[string]any) { m["checkpoint"] = "a\x00\n1\nx\n\n" })},
		{"attestation not JSON", "{", proofJSON(func(map[string]any) {})},
		{"attestation of another pda", strings.Replace(string(att), a.PDA, as[5].PDA, 1), proofJSON(func(map[string]any) {})},
		{"attestation action type unknown", strings.Replace(string(att), `"actionType":"`+a.ActionType.String()+`"`, `"actionType":"Evil"`, 1), proofJSON(func(map[string]any) {})},
		{"attestation slot beyond 2^53", strings.Replace(string(att), fmt.Sprintf(`"slot":%d`, a.Slot), `"slot":18446744073709551615`, 1), proofJSON(func(map[string]any) {})},
		{"409 not logged", string(att), "409"},
		{"500", string(att), "500"},
	}
	v := mustVerifier(t, l.VerifierKey)
	for _, tc := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			body := tc.attestation
			if strings.HasSuffix(r.URL.Path, "/proof") {
				body = tc.proof
			}
			switch body {
			case "409":
				w.WriteHeader(409)
				body = `{"error":{"code":"ATTESTATION_NOT_LOGGED","message":"wait"}}`
			case "500":
				w.WriteHeader(500)
				body = "oops"
			}
			fmt.Fprint(w, body)
		}))
		c := newClient(t, srv.URL)
		_, in, err := c.VerifyAttestation(context.Background(), v, a.PDA)
		srv.Close()
		if err == nil {
			t.Errorf("%s: verified %+v", tc.name, in)
		}
	}
	t.Logf("%d hostile proof answers, all refused", len(cases))

	// Hostile checkpoints for the monitor: garbage, huge, unsigned,
	// consistency answers for other sizes.
	h := &logfixture.Handler{Log: l}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := newClient(t, srv.URL)
	store := &client.MemoryStore{}
	m := &client.Monitor{Client: c, Verifier: v, Store: store}
	if _, err := m.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := []string{"", "garbage", strings.Repeat("a", 1<<20), "attestd.test/log\n99\nAAAA\n\n"}
	for _, text := range r {
		h.CheckpointText = func() string { return text }
		if _, err := m.Check(context.Background()); err == nil {
			t.Errorf("checkpoint %.20q accepted", text)
		}
	}
	h.CheckpointText = nil
	l.Append(&attestation.Attestation{PDA: "x", ActionType: attestation.Custom})
	h.ConsistencyHook = func(from, to int64, p [][]byte) [][]byte { return append(p, p...) }
	if _, err := m.Check(context.Background()); !errors.Is(err, client.ErrLogFork) {
		t.Errorf("doubled consistency proof: %v", err)
	}
	t.Logf("%d hostile checkpoints and 1 hostile consistency proof refused", len(r))
}
