package client

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/attestd/attestd/attestation"
	"github.com/gowebpki/jcs"
)

// ForensicReport is the structured audit report of
// GET /premium/forensic-report/:agentId.
type ForensicReport struct {
	Agent         Agent                      `json:"agent"`
	Period        ReportPeriod               `json:"period"`
	Summary       ReportSummary              `json:"summary"`
	Timeline      []TimelineDay              `json:"timeline"`
	Integrity     ReportIntegrity            `json:"integrity"`
	Anomalies     []Anomaly                  `json:"anomalies"`
	PolicyHistory []attestation.PolicyChange `json:"policyHistory"`
	GeneratedAt   Time                       `json:"generatedAt"`
	// ReportHash is the SHA-256 (hex) of the RFC 8785 canonical JSON of the
	// report without this field; VerifyHash recomputes it.
	ReportHash string `json:"reportHash"`

	raw json.RawMessage // the report as received
}

// ReportPeriod is the time span a report covers.
type ReportPeriod struct {
	From *Time `json:"from"`
	To   *Time `json:"to"`
}

// ReportSummary are the report's totals.
type ReportSummary struct {
	Totals     int64  `json:"totals"`
	ByType     ByType `json:"byType"`
	FirstAt    *Time  `json:"firstAt"`
	LastAt     *Time  `json:"lastAt"`
	ActiveDays int64  `json:"activeDays"`
}

// TimelineDay counts one day's attestations.
type TimelineDay struct {
	Day    string `json:"day"` // YYYY-MM-DD (UTC)
	Count  int64  `json:"count"`
	ByType ByType `json:"byType"`
}

// ReportIntegrity says how many signatures were checked and how many failed.
type ReportIntegrity struct {
	SignaturesChecked int64 `json:"signaturesChecked"`
	SignaturesFailed  int64 `json:"signaturesFailed"`
	Unfinalized       int64 `json:"unfinalized"`
}

// Anomaly is one finding: a burst, a long gap, an attestation after
// revocation, a duplicate hash.
type Anomaly struct {
	Kind   string `json:"kind"`
	At     *Time  `json:"at"`
	Detail string `json:"detail"`
}

// UnmarshalJSON decodes the report and keeps its raw JSON for VerifyHash.
func (r *ForensicReport) UnmarshalJSON(b []byte) error {
	type plain ForensicReport
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = ForensicReport(p)
	r.raw = append(json.RawMessage(nil), b...)
	return nil
}

// Raw is the report's JSON as the API sent it (nil for a report not
// decoded from JSON).
func (r *ForensicReport) Raw() json.RawMessage { return r.raw }

// VerifyHash recomputes reportHash over the report as received: SHA-256 of
// the RFC 8785 canonical JSON of the report object without reportHash. It
// returns the recomputed hash and whether it equals ReportHash.
func (r *ForensicReport) VerifyHash() (string, bool, error) {
	if r.raw == nil {
		return "", false, errors.New("attestd client: report was not decoded from the API's JSON")
	}
	sum, err := ReportHash(r.raw)
	if err != nil {
		return "", false, err
	}
	return sum, strings.EqualFold(sum, strings.TrimPrefix(r.ReportHash, "0x")), nil
}

// ReportHash computes a forensic report's hash from its JSON object: the
// SHA-256 (lowercase hex) of the RFC 8785 canonical form of the object
// without its reportHash member.
func ReportHash(report json.RawMessage) (string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(report, &m); err != nil {
		return "", fmt.Errorf("attestd client: report hash: report is not a JSON object: %w", err)
	}
	delete(m, "reportHash")
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("attestd client: report hash: %w", err)
	}
	canon, err := jcs.Transform(b)
	if err != nil {
		return "", fmt.Errorf("attestd client: report hash: canonicalize: %w", err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}
