package prova

import (
	"fmt"

	"github.com/attestd/attestd/attestation"
	"github.com/gagliardetto/solana-go"
)

// AttestationInput is one entry of record_attestations: the agent's Ed25519
// signature (by its agent_id key) over ActionHash.
type AttestationInput struct {
	ActionType  attestation.ActionType
	ActionHash  [32]byte
	PrivacyMode bool
	Signature   [64]byte
}

// AttestationInputSize is the borsh size of one AttestationInput.
const AttestationInputSize = 1 + 32 + 1 + 64

// Offsets inside record_attestations data, for the Ed25519 precompile to
// reference: entry i's hash is at RecordHashOffset(i), its signature at
// RecordSignatureOffset(i).
func RecordHashOffset(i int) int      { return 8 + 4 + AttestationInputSize*i + 1 }
func RecordSignatureOffset(i int) int { return 8 + 4 + AttestationInputSize*i + 1 + 32 + 1 }

// InstructionArgs is the decoded data of one of the program's instructions.
type InstructionArgs interface {
	Discriminator() Discriminator
	// Encode returns the instruction data: discriminator + borsh args.
	Encode() []byte
	// Name is the Anchor instruction name in UpperCamelCase, as logged by
	// "Program log: Instruction: <Name>".
	Name() string
}

// RegisterAgentArgs are register_agent's arguments.
type RegisterAgentArgs struct {
	AgentID    [32]byte
	PolicyRoot [32]byte
}

// RecordAttestationsArgs are record_attestations' arguments.
type RecordAttestationsArgs struct {
	Attestations []AttestationInput
}

// RevokeAgentArgs are revoke_agent's (empty) arguments.
type RevokeAgentArgs struct{}

// UpdatePolicyRootArgs are update_policy_root's arguments.
type UpdatePolicyRootArgs struct {
	NewRoot [32]byte
}

func (RegisterAgentArgs) Discriminator() Discriminator      { return DiscRegisterAgent }
func (RecordAttestationsArgs) Discriminator() Discriminator { return DiscRecordAttestations }
func (RevokeAgentArgs) Discriminator() Discriminator        { return DiscRevokeAgent }
func (UpdatePolicyRootArgs) Discriminator() Discriminator   { return DiscUpdatePolicyRoot }

func (RegisterAgentArgs) Name() string      { return "RegisterAgent" }
func (RecordAttestationsArgs) Name() string { return "RecordAttestations" }
func (RevokeAgentArgs) Name() string        { return "RevokeAgent" }
func (UpdatePolicyRootArgs) Name() string   { return "UpdatePolicyRoot" }

func (a RegisterAgentArgs) Encode() []byte {
	w := writer{make([]byte, 0, 8+64)}
	w.raw(DiscRegisterAgent[:])
	w.raw(a.AgentID[:])
	w.raw(a.PolicyRoot[:])
	return w.b
}

func (a RecordAttestationsArgs) Encode() []byte {
	w := writer{make([]byte, 0, 8+4+AttestationInputSize*len(a.Attestations))}
	w.raw(DiscRecordAttestations[:])
	w.u32(uint32(len(a.Attestations)))
	for _, in := range a.Attestations {
		w.u8(uint8(in.ActionType))
		w.raw(in.ActionHash[:])
		w.boolean(in.PrivacyMode)
		w.raw(in.Signature[:])
	}
	return w.b
}

func (RevokeAgentArgs) Encode() []byte { return append([]byte(nil), DiscRevokeAgent[:]...) }

func (a UpdatePolicyRootArgs) Encode() []byte {
	w := writer{make([]byte, 0, 8+32)}
	w.raw(DiscUpdatePolicyRoot[:])
	w.raw(a.NewRoot[:])
	return w.b
}

// DecodeInstruction decodes the data of one of the program's instructions.
// It does not apply the program's business rules (such as the batch limit):
// an empty or over-long record_attestations decodes fine.
func DecodeInstruction(data []byte) (InstructionArgs, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("decode instruction: %d bytes: %w", len(data), ErrShort)
	}
	r := &reader{b: data, off: 8}
	switch Discriminator(data[:8]) {
	case DiscRegisterAgent:
		var a RegisterAgentArgs
		r.bytes32(&a.AgentID, "agent_id")
		r.bytes32(&a.PolicyRoot, "policy_root")
		if err := r.done(); err != nil {
			return nil, fmt.Errorf("decode register_agent: %w", err)
		}
		return a, nil
	case DiscRecordAttestations:
		n := r.u32("attestations length")
		if r.err == nil && uint64(n)*AttestationInputSize > uint64(len(data)-r.off) {
			return nil, fmt.Errorf("decode record_attestations: %d entries need %d bytes, have %d: %w",
				n, uint64(n)*AttestationInputSize, len(data)-r.off, ErrShort)
		}
		a := RecordAttestationsArgs{Attestations: make([]AttestationInput, n)}
		for i := range a.Attestations {
			in := &a.Attestations[i]
			in.ActionType = r.actionType("action_type")
			r.bytes32(&in.ActionHash, "action_hash")
			in.PrivacyMode = r.boolean("privacy_mode")
			r.bytes64(&in.Signature, "signature")
		}
		if err := r.done(); err != nil {
			return nil, fmt.Errorf("decode record_attestations: %w", err)
		}
		return a, nil
	case DiscRevokeAgent:
		if err := r.done(); err != nil {
			return nil, fmt.Errorf("decode revoke_agent: %w", err)
		}
		return RevokeAgentArgs{}, nil
	case DiscUpdatePolicyRoot:
		var a UpdatePolicyRootArgs
		r.bytes32(&a.NewRoot, "new_root")
		if err := r.done(); err != nil {
			return nil, fmt.Errorf("decode update_policy_root: %w", err)
		}
		return a, nil
	}
	return nil, fmt.Errorf("decode instruction %v: %w", data[:8], ErrUnknownDiscriminator)
}

// NewRegisterAgentInstruction builds register_agent: accounts agent PDA
// (writable), operator (writable, signer), system program.
func NewRegisterAgentInstruction(programID, operator solana.PublicKey, args RegisterAgentArgs) (solana.Instruction, error) {
	agent, _, err := attestation.DeriveAgentPDA(programID, operator)
	if err != nil {
		return nil, fmt.Errorf("register_agent: %w", err)
	}
	return solana.NewInstruction(programID, solana.AccountMetaSlice{
		solana.Meta(agent).WRITE(),
		solana.Meta(operator).WRITE().SIGNER(),
		solana.Meta(solana.SystemProgramID),
	}, args.Encode()), nil
}

// NewRecordAttestationsInstruction builds record_attestations: accounts
// agent PDA (writable), operator (writable, signer), instructions sysvar.
// The transaction must carry, right before it, the Ed25519 precompile
// instruction of NewEd25519InstructionForRecord.
func NewRecordAttestationsInstruction(programID, operator solana.PublicKey, args RecordAttestationsArgs) (solana.Instruction, error) {
	agent, _, err := attestation.DeriveAgentPDA(programID, operator)
	if err != nil {
		return nil, fmt.Errorf("record_attestations: %w", err)
	}
	return solana.NewInstruction(programID, solana.AccountMetaSlice{
		solana.Meta(agent).WRITE(),
		solana.Meta(operator).WRITE().SIGNER(),
		solana.Meta(solana.SysVarInstructionsPubkey),
	}, args.Encode()), nil
}

// NewRevokeAgentInstruction builds revoke_agent: agent PDA (writable),
// operator (writable, signer).
func NewRevokeAgentInstruction(programID, operator solana.PublicKey) (solana.Instruction, error) {
	agent, _, err := attestation.DeriveAgentPDA(programID, operator)
	if err != nil {
		return nil, fmt.Errorf("revoke_agent: %w", err)
	}
	return solana.NewInstruction(programID, solana.AccountMetaSlice{
		solana.Meta(agent).WRITE(),
		solana.Meta(operator).WRITE().SIGNER(),
	}, RevokeAgentArgs{}.Encode()), nil
}

// NewUpdatePolicyRootInstruction builds update_policy_root: agent PDA
// (writable), operator (writable, signer).
func NewUpdatePolicyRootInstruction(programID, operator solana.PublicKey, args UpdatePolicyRootArgs) (solana.Instruction, error) {
	agent, _, err := attestation.DeriveAgentPDA(programID, operator)
	if err != nil {
		return nil, fmt.Errorf("update_policy_root: %w", err)
	}
	return solana.NewInstruction(programID, solana.AccountMetaSlice{
		solana.Meta(agent).WRITE(),
		solana.Meta(operator).WRITE().SIGNER(),
	}, args.Encode()), nil
}
