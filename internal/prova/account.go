package prova

import (
	"fmt"

	"github.com/gagliardetto/solana-go"
)

// AgentAccountSize is the AgentAccount's data length, discriminator included.
const AgentAccountSize = 8 + 32 + 32 + 32 + 8 + 8 + 1 + 1

// AgentAccount is the program's per-agent account, a PDA with seeds
// ["prova_agent", operator].
type AgentAccount struct {
	Operator         solana.PublicKey
	AgentID          [32]byte
	PolicyRoot       [32]byte
	AttestationCount uint64
	CreatedAt        int64
	Revoked          bool
	Bump             uint8
}

// Encode returns the account data: discriminator + borsh.
func (a AgentAccount) Encode() []byte {
	w := writer{make([]byte, 0, AgentAccountSize)}
	w.raw(DiscAgentAccount[:])
	w.raw(a.Operator[:])
	w.raw(a.AgentID[:])
	w.raw(a.PolicyRoot[:])
	w.u64(a.AttestationCount)
	w.i64(a.CreatedAt)
	w.boolean(a.Revoked)
	w.u8(a.Bump)
	return w.b
}

// DecodeAgentAccount decodes AgentAccount data. Anchor accounts may be
// allocated larger than their content, so trailing bytes are allowed.
func DecodeAgentAccount(data []byte) (AgentAccount, error) {
	var a AgentAccount
	r := &reader{b: data}
	r.disc(DiscAgentAccount, "AgentAccount")
	r.pubkey(&a.Operator, "operator")
	r.bytes32(&a.AgentID, "agent_id")
	r.bytes32(&a.PolicyRoot, "policy_root")
	a.AttestationCount = r.u64("attestation_count")
	a.CreatedAt = r.i64("created_at")
	a.Revoked = r.boolean("revoked")
	a.Bump = r.u8("bump")
	if r.err != nil {
		return AgentAccount{}, fmt.Errorf("decode AgentAccount: %w", r.err)
	}
	return a, nil
}
