package prova

import (
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gagliardetto/solana-go"
)

// Ed25519ProgramID is the native Ed25519 signature-verification precompile.
var Ed25519ProgramID = solana.MustPublicKeyFromBase58("Ed25519SigVerify111111111111111111111111111")

// Layout of the precompile's data (agave sdk/ed25519-program): a u8 count,
// a u8 padding, then count 14-byte offset records, then the bytes they
// point at. An instruction index of 0xFFFF means "this instruction".
const (
	ed25519OffsetsStart = 2
	ed25519OffsetsSize  = 14
	// Ed25519CurrentInstruction is the instruction index meaning "the
	// precompile instruction itself".
	Ed25519CurrentInstruction = 0xFFFF
)

// Ed25519Check is one signature the precompile verifies.
type Ed25519Check struct {
	PublicKey [32]byte
	Signature [64]byte
	Message   []byte
}

// Ed25519Offsets is one offset record of the precompile's data.
type Ed25519Offsets struct {
	SignatureOffset           uint16
	SignatureInstructionIndex uint16
	PublicKeyOffset           uint16
	PublicKeyInstructionIndex uint16
	MessageDataOffset         uint16
	MessageDataSize           uint16
	MessageInstructionIndex   uint16
}

// ErrEd25519 marks a precompile instruction that is malformed or whose
// signatures do not verify: the runtime fails the transaction.
var ErrEd25519 = errors.New("ed25519 precompile")

// EncodeEd25519 lays out self-contained precompile data for the checks:
// every key, signature and message lives in the instruction itself
// (instruction index 0xFFFF); a public key shared by several checks is
// written once.
func EncodeEd25519(checks []Ed25519Check) ([]byte, error) {
	if len(checks) == 0 || len(checks) > 255 {
		return nil, fmt.Errorf("%w: %d signatures, want 1..255", ErrEd25519, len(checks))
	}
	data := make([]byte, ed25519OffsetsStart+ed25519OffsetsSize*len(checks))
	data[0] = byte(len(checks))
	keyAt := map[[32]byte]int{}
	put := func(p []byte) (uint16, error) {
		off := len(data)
		if off+len(p) > 0xFFFF {
			return 0, fmt.Errorf("%w: data exceeds 65535 bytes", ErrEd25519)
		}
		data = append(data, p...)
		return uint16(off), nil
	}
	for i, c := range checks {
		var o Ed25519Offsets
		o.SignatureInstructionIndex = Ed25519CurrentInstruction
		o.PublicKeyInstructionIndex = Ed25519CurrentInstruction
		o.MessageInstructionIndex = Ed25519CurrentInstruction
		var err error
		if at, ok := keyAt[c.PublicKey]; ok {
			o.PublicKeyOffset = uint16(at)
		} else {
			if o.PublicKeyOffset, err = put(c.PublicKey[:]); err != nil {
				return nil, err
			}
			keyAt[c.PublicKey] = int(o.PublicKeyOffset)
		}
		if o.SignatureOffset, err = put(c.Signature[:]); err != nil {
			return nil, err
		}
		if o.MessageDataOffset, err = put(c.Message); err != nil {
			return nil, err
		}
		o.MessageDataSize = uint16(len(c.Message))
		rec := data[ed25519OffsetsStart+ed25519OffsetsSize*i:]
		binary.LittleEndian.PutUint16(rec[0:], o.SignatureOffset)
		binary.LittleEndian.PutUint16(rec[2:], o.SignatureInstructionIndex)
		binary.LittleEndian.PutUint16(rec[4:], o.PublicKeyOffset)
		binary.LittleEndian.PutUint16(rec[6:], o.PublicKeyInstructionIndex)
		binary.LittleEndian.PutUint16(rec[8:], o.MessageDataOffset)
		binary.LittleEndian.PutUint16(rec[10:], o.MessageDataSize)
		binary.LittleEndian.PutUint16(rec[12:], o.MessageInstructionIndex)
	}
	return data, nil
}

// NewEd25519Instruction builds the precompile instruction for the checks
// (no accounts).
func NewEd25519Instruction(checks []Ed25519Check) (solana.Instruction, error) {
	data, err := EncodeEd25519(checks)
	if err != nil {
		return nil, err
	}
	return solana.NewInstruction(Ed25519ProgramID, solana.AccountMetaSlice{}, data), nil
}

// NewEd25519InstructionForRecord builds the precompile instruction that
// must precede record_attestations: one check per attestation, the agent's
// key (agent_id) over its action hash.
func NewEd25519InstructionForRecord(agentID [32]byte, atts []AttestationInput) (solana.Instruction, error) {
	checks := make([]Ed25519Check, len(atts))
	for i, a := range atts {
		h := a.ActionHash
		checks[i] = Ed25519Check{PublicKey: agentID, Signature: a.Signature, Message: h[:]}
	}
	return NewEd25519Instruction(checks)
}

// ParseEd25519Offsets reads the offset records of precompile data.
func ParseEd25519Offsets(data []byte) ([]Ed25519Offsets, error) {
	if len(data) < ed25519OffsetsStart {
		return nil, fmt.Errorf("%w: %d bytes: %w", ErrEd25519, len(data), ErrShort)
	}
	n := int(data[0])
	if n == 0 && len(data) > ed25519OffsetsStart {
		return nil, fmt.Errorf("%w: zero signatures with %d bytes of data", ErrEd25519, len(data))
	}
	if len(data) < ed25519OffsetsStart+n*ed25519OffsetsSize {
		return nil, fmt.Errorf("%w: %d offset records need %d bytes, have %d: %w",
			ErrEd25519, n, ed25519OffsetsStart+n*ed25519OffsetsSize, len(data), ErrShort)
	}
	out := make([]Ed25519Offsets, n)
	for i := range out {
		rec := data[ed25519OffsetsStart+ed25519OffsetsSize*i:]
		out[i] = Ed25519Offsets{
			SignatureOffset:           binary.LittleEndian.Uint16(rec[0:]),
			SignatureInstructionIndex: binary.LittleEndian.Uint16(rec[2:]),
			PublicKeyOffset:           binary.LittleEndian.Uint16(rec[4:]),
			PublicKeyInstructionIndex: binary.LittleEndian.Uint16(rec[6:]),
			MessageDataOffset:         binary.LittleEndian.Uint16(rec[8:]),
			MessageDataSize:           binary.LittleEndian.Uint16(rec[10:]),
			MessageInstructionIndex:   binary.LittleEndian.Uint16(rec[12:]),
		}
	}
	return out, nil
}

// VerifyEd25519 runs the precompile over data, the precompile instruction
// at index current of the transaction; instruction(i) returns the data of
// the transaction's instruction i (ok false when there is none). It
// resolves every offset record, verifies every signature and returns the
// checks; any out-of-range reference or bad signature is an error, as the
// runtime fails the whole transaction.
func VerifyEd25519(data []byte, current int, instruction func(i int) ([]byte, bool)) ([]Ed25519Check, error) {
	offs, err := ParseEd25519Offsets(data)
	if err != nil {
		return nil, err
	}
	slice := func(ixIndex, off, size uint16, what string) ([]byte, error) {
		src := data
		if ixIndex != Ed25519CurrentInstruction && int(ixIndex) != current {
			var ok bool
			if src, ok = instruction(int(ixIndex)); !ok {
				return nil, fmt.Errorf("%w: %s: no instruction %d", ErrEd25519, what, ixIndex)
			}
		}
		end := int(off) + int(size)
		if end > len(src) {
			return nil, fmt.Errorf("%w: %s: bytes %d..%d out of range (%d)", ErrEd25519, what, off, end, len(src))
		}
		return src[off:end], nil
	}
	checks := make([]Ed25519Check, len(offs))
	for i, o := range offs {
		sig, err := slice(o.SignatureInstructionIndex, o.SignatureOffset, 64, "signature")
		if err != nil {
			return nil, err
		}
		key, err := slice(o.PublicKeyInstructionIndex, o.PublicKeyOffset, 32, "public key")
		if err != nil {
			return nil, err
		}
		msg, err := slice(o.MessageInstructionIndex, o.MessageDataOffset, o.MessageDataSize, "message")
		if err != nil {
			return nil, err
		}
		if !ed25519.Verify(ed25519.PublicKey(key), msg, sig) {
			return nil, fmt.Errorf("%w: signature %d does not verify", ErrEd25519, i)
		}
		c := &checks[i]
		copy(c.PublicKey[:], key)
		copy(c.Signature[:], sig)
		c.Message = append([]byte(nil), msg...)
	}
	return checks, nil
}
