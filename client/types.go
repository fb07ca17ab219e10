package client

import (
	"github.com/attestd/attestd/attestation"
)

// Attestation is one indexed attestation (the API's Attestation shape).
type Attestation = attestation.Attestation

// Agent is one indexed agent with its metrics and policies.
type Agent = attestation.Agent

// Time is a UTC instant in the API's format (RFC 3339 to the second).
type Time = attestation.Time

// ByType maps every action type name to a count (zeros included).
type ByType map[string]int64

// Pagination is the pagination object of list answers.
type Pagination struct {
	Limit  int   `json:"limit"`
	Offset int   `json:"offset"`
	Total  int64 `json:"total"`
	// NextCursor is set when the page is full: pass it as ListParams.Cursor.
	NextCursor string `json:"nextCursor,omitempty"`
}

// AttestationPage is one page of GET /attestations.
type AttestationPage struct {
	Data       []Attestation `json:"data"`
	Pagination Pagination    `json:"pagination"`
}

// Stats are the global counts of GET /stats.
type Stats struct {
	Agents       int64  `json:"agents"`
	Attestations int64  `json:"attestations"`
	ByType       ByType `json:"byType"`
	Last24h      int64  `json:"last24h"`
	IndexedSlot  uint64 `json:"indexedSlot"`
}

// AgentStats are the per-agent statistics of GET /agents/:agentId/stats.
type AgentStats struct {
	AgentPDA           string        `json:"agentPda"`
	TotalAttestations  int64         `json:"totalAttestations"`
	ByType             ByType        `json:"byType"`
	FirstAttestationAt *Time         `json:"firstAttestationAt"`
	LastAttestationAt  *Time         `json:"lastAttestationAt"`
	Last24h            int64         `json:"last24h"`
	Last7d             int64         `json:"last7d"`
	RecentAttestations []Attestation `json:"recentAttestations"`
}

// Health is the body of GET /health.
type Health struct {
	Status        string `json:"status"` // ok, degraded or down
	Version       string `json:"version"`
	UptimeSeconds int64  `json:"uptimeSeconds"`
	Postgres      string `json:"postgres"`
	Redis         string `json:"redis"`
	// Cache is "full" while the read cache refuses writes to Redis; the
	// node still answers ("ok" otherwise).
	Cache   string        `json:"cache"`
	Indexer IndexerStatus `json:"indexer"`
	Chain   ChainStatus   `json:"chain"`
	// Reasons says why the status is not ok (empty when it is).
	Reasons  []string  `json:"reasons"`
	Replicas []Replica `json:"replicas"`
}

// Replica is a read replica of the node as /health reports it.
type Replica struct {
	Index      int      `json:"index"`  // position in the node's DATABASE_READ_URLS, from 1
	Status     string   `json:"status"` // ok, lagging, down or not_replica
	LagSeconds *float64 `json:"lagSeconds"`
}

// IndexerStatus is the indexer's progress as /health reports it.
type IndexerStatus struct {
	LastIndexedSlot uint64 `json:"lastIndexedSlot"`
	ChainSlot       uint64 `json:"chainSlot"`
	LagSlots        uint64 `json:"lagSlots"`
	LastIndexedAt   *Time  `json:"lastIndexedAt"`
	Synced          bool   `json:"synced"`
}

// ChainStatus is the chain connection as /health reports it.
type ChainStatus struct {
	RPC       string `json:"rpc"`
	Reachable bool   `json:"reachable"`
}

// FullHistory is the answer of GET /premium/full-history/:agentId: up to
// 1000 attestations of the agent, newest first.
type FullHistory struct {
	Data       []Attestation `json:"data"`
	Agent      Agent         `json:"agent"`
	Pagination Pagination    `json:"pagination"`
}

// BulkVerifyResult is the answer of POST /premium/bulk-verify.
type BulkVerifyResult struct {
	Data    []Verification    `json:"data"`
	Summary BulkVerifySummary `json:"summary"`
}

// Verification is the verdict on one attestation id. Valid means indexed,
// finalized, and the agent's Ed25519 signature over the hash checks out;
// Reason says why not otherwise.
type Verification struct {
	ID         string `json:"id"`
	Valid      bool   `json:"valid"`
	Reason     string `json:"reason,omitempty"`
	ActionType string `json:"actionType,omitempty"`
	Timestamp  *Time  `json:"timestamp,omitempty"`
	CheckedAt  *Time  `json:"checkedAt,omitempty"`
	// InLog says whether the attestation has a leaf in the transparency
	// log, at LogIndex (nil without one); LogProof proves it.
	InLog    bool   `json:"inLog"`
	LogIndex *int64 `json:"logIndex"`
}

// Reasons a Verification is not valid.
const (
	ReasonMalformedID      = "malformed_id"
	ReasonNotFound         = "not_found"
	ReasonSignatureInvalid = "signature_invalid"
	ReasonNotFinalized     = "not_finalized"
)

// BulkVerifySummary counts the verdicts of one bulk verification. Invalid
// includes NotFound (ids not indexed or malformed).
type BulkVerifySummary struct {
	Total    int `json:"total"`
	Valid    int `json:"valid"`
	Invalid  int `json:"invalid"`
	NotFound int `json:"notFound"`
}
