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
	Thresholds    ReportThresholds           `json:"thresholds"`
	GeneratedAt   Time                       `json:"generatedAt"`
	// ReportHash is the SHA-256 (hex) of the RFC 8785 canonical JSON of the
	// report without this field; VerifyHash recomputes it.
	ReportHash string `json:"reportHash"`

	raw json.RawMessage // the report as received
}

// ReportPeriod is the half-open range [From, To) a report covers; a nil
// bound is open.
type ReportPeriod struct {
	From *Time `json:"from"`
	To   *Time `json:"to"`
}

// ReportSummary counts the period's attestations.
type ReportSummary struct {
	Totals     ReportTotals `json:"totals"`
	ByType     ByType       `json:"byType"`
	FirstAt    *Time        `json:"firstAt"`
	LastAt     *Time        `json:"lastAt"`
	ActiveDays int64        `json:"activeDays"`
	// AnomalyCounts counts every anomaly by kind (Anomalies lists at most
	// Thresholds.MaxAnomaliesPerKind of each).
	AnomalyCounts map[string]int64 `json:"anomalyCounts"`
}

// ReportTotals are the period's counts.
type ReportTotals struct {
	Attestations int64 `json:"attestations"`
	Finalized    int64 `json:"finalized"`
	Unfinalized  int64 `json:"unfinalized"`
	PrivacyMode  int64 `json:"privacyMode"`
}

// TimelineDay counts one active UTC day's attestations.
type TimelineDay struct {
	Day    string `json:"day"` // YYYY-MM-DD
	Count  int64  `json:"count"`
	ByType ByType `json:"byType"`
}

// ReportIntegrity says how far the period's records can be trusted.
type ReportIntegrity struct {
	SignaturesChecked int64 `json:"signaturesChecked"`
	SignaturesFailed  int64 `json:"signaturesFailed"`
	Unfinalized       int64 `json:"unfinalized"`
	// Recheck is the re-verification of the newest signatures made while
	// the report was built.
	Recheck ReportRecheck `json:"recheck"`
	// Log counts the period's finalized attestations in the transparency
	// log and those the appender has not reached yet.
	Log ReportLogCoverage `json:"log"`
}

// ReportLogCoverage is a report's transparency log coverage (the
// server's premium.LogCoverage).
type ReportLogCoverage struct {
	InLog          int64 `json:"inLog"`
	AwaitingAppend int64 `json:"awaitingAppend"`
}

// LogPosition is one attestation's place in the transparency log
// (LogIndex nil when it has no leaf).
type LogPosition struct {
	PDA      string `json:"pda"`
	InLog    bool   `json:"inLog"`
	LogIndex *int64 `json:"logIndex"`
}

// ReportRecheck counts re-verified signatures.
type ReportRecheck struct {
	Checked int64 `json:"checked"`
	Failed  int64 `json:"failed"`
}

// ReportLog is the former name of ReportLogCoverage.
//
// Deprecated: use ReportLogCoverage, the name the server's type has.
type ReportLog = ReportLogCoverage

// Anomaly kinds of forensic reports.
const (
	AnomalyBurst            = "burst"
	AnomalyLongGap          = "long_gap"
	AnomalyAfterRevocation  = "after_revocation"
	AnomalyDuplicateHash    = "duplicate_hash"
	AnomalyInvalidSignature = "invalid_signature"
)

// Anomaly is one finding of a report.
type Anomaly struct {
	Kind   string   `json:"kind"`
	At     Time     `json:"at"`
	Until  *Time    `json:"until"`
	Count  int64    `json:"count"`
	PDAs   []string `json:"pdas"`
	Detail string   `json:"detail"`
	// Log is, for each of PDAs in order, its place in the transparency log.
	Log []LogPosition `json:"log"`
}

// ReportThresholds are the anomaly rules the report was built with.
type ReportThresholds struct {
	BurstPerMinute      int64 `json:"burstPerMinute"`
	LongGapSeconds      int64 `json:"longGapSeconds"`
	MaxAnomaliesPerKind int64 `json:"maxAnomaliesPerKind"`
	RecheckNewest       int64 `json:"recheckNewest"`
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
