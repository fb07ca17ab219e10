package store

import (
	"encoding/hex"

	"time"

	"github.com/mr-tron/base58"

	"github.com/attestd/attestd/attestation"
)

// Event position: every on-chain event is identified by the transaction
// that emitted it and its index among that transaction's program events.
type Event struct {
	TxSignature string // base58
	EventIndex  int
	Slot        uint64
	Commitment  attestation.Commitment
}

// AgentRegistration is an AgentRegistered event, with the policy root read
// from the AgentAccount.
type AgentRegistration struct {
	Event
	PDA        string // AgentAccount address, base58
	Operator   string // base58
	AgentID    [32]byte
	PolicyRoot [32]byte
	At         time.Time
}

// AgentRevocation is an AgentRevokedEvent.
type AgentRevocation struct {
	Event
	PDA string
	At  time.Time
}

// PolicyUpdate is a PolicyRootUpdated event.
type PolicyUpdate struct {
	Event
	PDA        string
	PolicyRoot [32]byte
	At         time.Time
}

// AttestationRecord is an AttestationIssued event ready to store.
type AttestationRecord struct {
	Event
	PDA            string // derived with attestation.DerivePDA
	AgentPDA       string
	AgentID        [32]byte
	ActionType     attestation.ActionType
	ActionHash     [32]byte
	PrivacyMode    bool
	Timestamp      time.Time
	Signature      [64]byte
	SignatureValid bool // attestation.VerifySignature, checked at ingest
}

// Checkpoint is how far a named reader (the indexer) has come.
type Checkpoint struct {
	Name      string
	Slot      uint64
	Signature string // newest processed transaction signature
	UpdatedAt time.Time
}

// Batch is everything one ingest step writes, applied in one transaction:
// agent events in order (registrations, then policy updates, then
// revocations), attestations, an outbox row per newly stored event, and the
// checkpoint when set. Applying the same batch twice changes nothing.
type Batch struct {
	Registrations []AgentRegistration
	PolicyUpdates []PolicyUpdate
	Revocations   []AgentRevocation
	Attestations  []AttestationRecord
	Checkpoint    *Checkpoint
}

// Applied says what a batch changed.
type Applied struct {
	Agents       int // new agents
	AgentChanges int // new policy updates and revocations
	Attestations int // new attestations
}

// Changed reports whether anything new was stored.
func (a Applied) Changed() bool { return a.Agents+a.AgentChanges+a.Attestations > 0 }

// API returns the record in its API shape.
func (r *AttestationRecord) API() attestation.Attestation {
	c := r.Commitment
	if c == "" {
		c = attestation.Confirmed
	}
	return attestation.Attestation{
		PDA:            r.PDA,
		AgentPDA:       r.AgentPDA,
		AgentID:        base58.Encode(r.AgentID[:]),
		ActionType:     r.ActionType,
		ActionHash:     hex.EncodeToString(r.ActionHash[:]),
		TxSignature:    r.TxSignature,
		Slot:           r.Slot,
		Timestamp:      attestation.At(r.Timestamp),
		PrivacyMode:    r.PrivacyMode,
		AgentSignature: base58.Encode(r.Signature[:]),
		Commitment:     c,
	}
}
