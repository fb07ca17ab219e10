package prova

import (
	"errors"
	"fmt"

	"github.com/attestd/attestd/attestation"
	"github.com/gagliardetto/solana-go"
)

// ErrUnknownDiscriminator is returned for data whose first 8 bytes match no
// known event, instruction or account.
var ErrUnknownDiscriminator = errors.New("unknown discriminator")

// Event is one of the program's four events.
type Event interface {
	// Discriminator is the event's 8-byte IDL prefix.
	Discriminator() Discriminator
	// Encode returns the event as the program logs it: discriminator + borsh.
	Encode() []byte
}

// AgentRegistered is emitted by register_agent.
type AgentRegistered struct {
	Agent     solana.PublicKey // AgentAccount PDA
	Operator  solana.PublicKey
	AgentID   [32]byte
	Timestamp int64
}

// AttestationIssued is emitted once per attestation by record_attestations.
type AttestationIssued struct {
	Agent       solana.PublicKey // AgentAccount PDA
	AgentID     [32]byte
	ActionType  attestation.ActionType
	ActionHash  [32]byte
	PrivacyMode bool
	Timestamp   int64
	Signature   [64]byte
}

// AgentRevokedEvent is emitted by revoke_agent.
type AgentRevokedEvent struct {
	Agent     solana.PublicKey
	Operator  solana.PublicKey
	Timestamp int64
}

// PolicyRootUpdated is emitted by update_policy_root.
type PolicyRootUpdated struct {
	Agent     solana.PublicKey
	Operator  solana.PublicKey
	NewRoot   [32]byte
	Timestamp int64
}

// Encoded sizes of the events, discriminator included.
const (
	AgentRegisteredSize   = 8 + 32 + 32 + 32 + 8
	AttestationIssuedSize = 8 + 32 + 32 + 1 + 32 + 1 + 8 + 64
	AgentRevokedSize      = 8 + 32 + 32 + 8
	PolicyRootUpdatedSize = 8 + 32 + 32 + 32 + 8
)

func (AgentRegistered) Discriminator() Discriminator   { return DiscAgentRegistered }
func (AttestationIssued) Discriminator() Discriminator { return DiscAttestationIssued }
func (AgentRevokedEvent) Discriminator() Discriminator { return DiscAgentRevoked }
func (PolicyRootUpdated) Discriminator() Discriminator { return DiscPolicyRootUpdated }

func (e AgentRegistered) Encode() []byte {
	w := writer{make([]byte, 0, AgentRegisteredSize)}
	w.raw(DiscAgentRegistered[:])
	w.raw(e.Agent[:])
	w.raw(e.Operator[:])
	w.raw(e.AgentID[:])
	w.i64(e.Timestamp)
	return w.b
}

func (e AttestationIssued) Encode() []byte {
	w := writer{make([]byte, 0, AttestationIssuedSize)}
	w.raw(DiscAttestationIssued[:])
	w.raw(e.Agent[:])
	w.raw(e.AgentID[:])
	w.u8(uint8(e.ActionType))
	w.raw(e.ActionHash[:])
	w.boolean(e.PrivacyMode)
	w.i64(e.Timestamp)
	w.raw(e.Signature[:])
	return w.b
}

func (e AgentRevokedEvent) Encode() []byte {
	w := writer{make([]byte, 0, AgentRevokedSize)}
	w.raw(DiscAgentRevoked[:])
	w.raw(e.Agent[:])
	w.raw(e.Operator[:])
	w.i64(e.Timestamp)
	return w.b
}

func (e PolicyRootUpdated) Encode() []byte {
	w := writer{make([]byte, 0, PolicyRootUpdatedSize)}
	w.raw(DiscPolicyRootUpdated[:])
	w.raw(e.Agent[:])
	w.raw(e.Operator[:])
	w.raw(e.NewRoot[:])
	w.i64(e.Timestamp)
	return w.b
}

func (r *reader) pubkey(dst *solana.PublicKey, what string) {
	if p := r.take(32, what); p != nil {
		copy(dst[:], p)
	}
}

func (r *reader) actionType(what string) attestation.ActionType {
	v := r.u8(what)
	if r.err == nil && !attestation.ActionType(v).Valid() {
		r.err = fmt.Errorf("%s at offset %d: invalid ActionType variant %d", what, r.off-1, v)
	}
	return attestation.ActionType(v)
}

// DecodeEvent decodes event data (discriminator + borsh). Data whose
// discriminator is not one of the four events gives ErrUnknownDiscriminator;
// truncated or over-long data, an invalid bool or an unknown ActionType
// variant gives another error.
func DecodeEvent(data []byte) (Event, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("decode event: %d bytes: %w", len(data), ErrShort)
	}
	r := &reader{b: data, off: 8}
	switch Discriminator(data[:8]) {
	case DiscAgentRegistered:
		var e AgentRegistered
		r.pubkey(&e.Agent, "agent")
		r.pubkey(&e.Operator, "operator")
		r.bytes32(&e.AgentID, "agent_id")
		e.Timestamp = r.i64("timestamp")
		if err := r.done(); err != nil {
			return nil, fmt.Errorf("decode AgentRegistered: %w", err)
		}
		return e, nil
	case DiscAttestationIssued:
		var e AttestationIssued
		r.pubkey(&e.Agent, "agent")
		r.bytes32(&e.AgentID, "agent_id")
		e.ActionType = r.actionType("action_type")
		r.bytes32(&e.ActionHash, "action_hash")
		e.PrivacyMode = r.boolean("privacy_mode")
		e.Timestamp = r.i64("timestamp")
		r.bytes64(&e.Signature, "signature")
		if err := r.done(); err != nil {
			return nil, fmt.Errorf("decode AttestationIssued: %w", err)
		}
		return e, nil
	case DiscAgentRevoked:
		var e AgentRevokedEvent
		r.pubkey(&e.Agent, "agent")
		r.pubkey(&e.Operator, "operator")
		e.Timestamp = r.i64("timestamp")
		if err := r.done(); err != nil {
			return nil, fmt.Errorf("decode AgentRevokedEvent: %w", err)
		}
		return e, nil
	case DiscPolicyRootUpdated:
		var e PolicyRootUpdated
		r.pubkey(&e.Agent, "agent")
		r.pubkey(&e.Operator, "operator")
		r.bytes32(&e.NewRoot, "new_root")
		e.Timestamp = r.i64("timestamp")
		if err := r.done(); err != nil {
			return nil, fmt.Errorf("decode PolicyRootUpdated: %w", err)
		}
		return e, nil
	}
	return nil, fmt.Errorf("decode event %v: %w", data[:8], ErrUnknownDiscriminator)
}
