package client_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/attestd/attestd/client"
)

func TestReportHashIsOverTheCanonicalForm(t *testing.T) {
	t.Parallel()
	// The RFC 8785 form of the report without reportHash: keys sorted, no
	// whitespace, numbers as ECMAScript writes them.
	canonical := `{"agent":{"pda":"x"},"generatedAt":"2026-11-21T10:00:00Z","summary":{"activeDays":3,"totals":1.5e+21}}`
	sum := sha256.Sum256([]byte(canonical))
	want := hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name   string
		report string
		same   bool
	}{
		{"already canonical", canonical, true},
		{"other key order, spacing, number spelling, with reportHash", `{ "summary": {"totals": 1500000000000000000000, "activeDays": 3.0},
			"reportHash": "ignored", "generatedAt": "2026-11-21T10:00:00Z", "agent": {"pda": "x"} }`, true},
		{"a changed value", strings.Replace(canonical, `"x"`, `"y"`, 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := client.ReportHash(json.RawMessage(tc.report))
			if err != nil {
				t.Fatal(err)
			}
			if (got == want) != tc.same {
				t.Fatalf("ReportHash = %s, want equal to %s: %v", got, want, tc.same)
			}
		})
	}
	if _, err := client.ReportHash(json.RawMessage(`[1]`)); err == nil {
		t.Error("an array hashed as a report")
	}
}

func TestForensicReportVerifyHash(t *testing.T) {
	t.Parallel()
	body := `{"agent":{"pda":"A"},"period":{"from":"2026-11-01T00:00:00Z","to":"2026-11-21T00:00:00Z"},
		"summary":{"totals":{"attestations":2,"finalized":2,"unfinalized":0,"privacyMode":0},"byType":{"ToolCall":2},
		"firstAt":null,"lastAt":null,"activeDays":1,"anomalyCounts":{}},
		"timeline":[],"integrity":{"signaturesChecked":2,"signaturesFailed":0,"unfinalized":0},"anomalies":[],
		"policyHistory":[],"generatedAt":"2026-11-21T10:00:00Z","reportHash":"HASH"}`
	h, err := client.ReportHash(json.RawMessage(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, hash string
		valid      bool
	}{
		{"as computed", h, true},
		{"upper case with 0x", "0x" + strings.ToUpper(h), true},
		{"another hash", "00" + h[2:], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r client.ForensicReport
			if err := json.Unmarshal([]byte(strings.Replace(body, "HASH", tc.hash, 1)), &r); err != nil {
				t.Fatal(err)
			}
			got, ok, err := r.VerifyHash()
			if err != nil || ok != tc.valid || got != h || r.Summary.Totals.Attestations != 2 || r.Agent.PDA != "A" {
				t.Fatalf("VerifyHash = %s %v %v; report %+v", got, ok, err, r)
			}
		})
	}
	if _, _, err := (&client.ForensicReport{}).VerifyHash(); err == nil {
		t.Fatal("a report not decoded from JSON verified")
	}
}
