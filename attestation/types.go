package attestation

import "time"

// Commitment is how final the transaction that carries a record is.
type Commitment string

// The two commitment levels a stored record can have.
const (
	Confirmed Commitment = "confirmed"
	Finalized Commitment = "finalized"
)

// Attestation is one indexed AttestationIssued event, in its API shape.
type Attestation struct {
	PDA            string     `json:"pda"`
	AgentPDA       string     `json:"agentPda"`
	AgentID        string     `json:"agentId"`
	ActionType     ActionType `json:"actionType"`
	ActionHash     string     `json:"actionHash"`
	TxSignature    string     `json:"txSignature"`
	Slot           uint64     `json:"slot"`
	Timestamp      Time       `json:"timestamp"`
	PrivacyMode    bool       `json:"privacyMode"`
	AgentSignature string     `json:"agentSignature"`
	Commitment     Commitment `json:"commitment"`
}

// AgentMetrics summarises an agent's attestations.
type AgentMetrics struct {
	AttestationCount   int64 `json:"attestationCount"`
	FirstAttestationAt *Time `json:"firstAttestationAt"`
	LastAttestationAt  *Time `json:"lastAttestationAt"`
	Last24h            int64 `json:"last24h"`
}

// PolicyChange is one entry of an agent's policy-root history.
type PolicyChange struct {
	PolicyRoot  string `json:"policyRoot"`
	UpdatedAt   Time   `json:"updatedAt"`
	TxSignature string `json:"txSignature"`
	Slot        uint64 `json:"slot"`
}

// AgentPolicies is the agent's current policy root and its history.
type AgentPolicies struct {
	PolicyRoot string         `json:"policyRoot"`
	UpdatedAt  Time           `json:"updatedAt"`
	History    []PolicyChange `json:"history"`
}

// Agent is an indexed AgentAccount, in its API shape.
type Agent struct {
	PDA          string        `json:"pda"`
	Operator     string        `json:"operator"`
	AgentID      string        `json:"agentId"`
	PolicyRoot   string        `json:"policyRoot"`
	RegisteredAt Time          `json:"registeredAt"`
	Revoked      bool          `json:"revoked"`
	RevokedAt    *Time         `json:"revokedAt"`
	UpdatedAt    Time          `json:"updatedAt"`
	Metrics      AgentMetrics  `json:"metrics"`
	Policies     AgentPolicies `json:"policies"`
}

// Time is a UTC instant that marshals as RFC 3339 to the second
// (for example 2026-11-21T10:00:00Z), the API's only timestamp format.
type Time struct{ time.Time }

// TimeFormat is the layout of every timestamp the API writes.
const TimeFormat = "2006-01-02T15:04:05Z"

// At wraps t, truncated to the second and in UTC.
func At(t time.Time) Time { return Time{t.UTC().Truncate(time.Second)} }

// Unix wraps unix seconds.
func Unix(sec int64) Time { return Time{time.Unix(sec, 0).UTC()} }

// OptTime is the Time of *t, or nil when t is nil (the zero instant
// included: it is a time like any other).
func OptTime(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	v := At(*t)
	return &v
}

// MarshalJSON writes the time as a quoted RFC 3339 UTC string.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(TimeFormat)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, TimeFormat)
	return append(b, '"'), nil
}

// UnmarshalJSON reads any RFC 3339 time.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	v, err := time.Parse(`"`+time.RFC3339+`"`, string(b))
	if err != nil {
		return err
	}
	*t = At(v)
	return nil
}

// String formats the time like MarshalJSON, unquoted.
func (t Time) String() string { return t.UTC().Format(TimeFormat) }
