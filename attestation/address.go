package attestation

import (
	"crypto/ed25519"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/bits"

	"github.com/gagliardetto/solana-go"
)

// DefaultProgramID is the Prova program's address on mainnet and devnet.
const DefaultProgramID = "G11dBAzLQaADtHHM2AZNz3ThCDnkY5nhX3Ujddu1CMM1"

// Seeds of the program-derived addresses.
var (
	AttestationSeed = []byte("attestation")
	AgentSeed       = []byte("prova_agent")
)

// MaxEventsPerTx bounds the event index: one record_attestations
// transaction carries at most 100 attestations (plus a few agent events).
const MaxEventsPerTx = 1 << 16

// DerivePDA computes an attestation's address: FindProgramAddress over
// ["attestation", txSig[0:32], txSig[32:64], u16-LE(eventIndex)].
func DerivePDA(programID solana.PublicKey, txSig solana.Signature, eventIndex int) (solana.PublicKey, error) {
	if eventIndex < 0 || eventIndex >= MaxEventsPerTx {
		return solana.PublicKey{}, fmt.Errorf("event index %d out of range", eventIndex)
	}
	var idx [2]byte
	binary.LittleEndian.PutUint16(idx[:], uint16(eventIndex))
	pda, _, err := solana.FindProgramAddress([][]byte{AttestationSeed, txSig[0:32], txSig[32:64], idx[:]}, programID)
	if err != nil {
		return solana.PublicKey{}, fmt.Errorf("derive attestation pda: %w", err)
	}
	return pda, nil
}

// DeriveAgentPDA computes an agent account's address from its operator.
func DeriveAgentPDA(programID, operator solana.PublicKey) (solana.PublicKey, uint8, error) {
	pda, bump, err := solana.FindProgramAddress([][]byte{AgentSeed, operator[:]}, programID)
	if err != nil {
		return solana.PublicKey{}, 0, fmt.Errorf("derive agent pda: %w", err)
	}
	return pda, bump, nil
}

// VerifySignature checks the agent's Ed25519 signature over the action hash.
// agentID is the agent's Ed25519 public key.
func VerifySignature(agentID [32]byte, actionHash [32]byte, sig [64]byte) bool {
	return ed25519.Verify(ed25519.PublicKey(agentID[:]), actionHash[:], sig[:])
}

// ParseHash decodes a 64-character hex SHA-256 (either case, optional 0x).
func ParseHash(s string) ([32]byte, error) {
	var h [32]byte
	if len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X") {
		s = s[2:]
	}
	if len(s) != 64 {
		return h, errors.New("hash must be 64 hexadecimal characters")
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, errors.New("hash must be hexadecimal")
	}
	return h, nil
}

// Lengths of the base58 text of 32 bytes.
const (
	MinAddressLen = 32
	MaxAddressLen = 44
)

// ParseAddress decodes a base58 Solana address (32 bytes).
func ParseAddress(s string) (solana.PublicKey, error) {
	if len(s) < MinAddressLen || len(s) > MaxAddressLen {
		return solana.PublicKey{}, errors.New("address must be 32 to 44 base58 characters")
	}
	pk, ok := decodeAddress(s)
	if !ok {
		return solana.PublicKey{}, errors.New("address is not valid base58 for 32 bytes")
	}
	return pk, nil
}

// base58Digits maps a byte to its base58 digit (Bitcoin alphabet), 0xff
// for bytes outside the alphabet.
var base58Digits = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz" {
		t[c] = byte(i)
	}
	return t
}()

// decodeAddress decodes base58 to exactly 32 bytes, as base58 decoding
// followed by a length check does (FuzzDecodeAddress holds it to that),
// without allocating: every request that names an agent or an
// attestation decodes one. Leading '1's are leading zero bytes; the rest
// is a number, read ten digits at a time into four 64-bit limbs, whose
// significant bytes must fill the rest of the 32.
func decodeAddress(s string) (pk solana.PublicKey, ok bool) {
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	var n [4]uint64 // little-endian limbs
	for i := zeros; i < len(s); {
		// Up to ten digits at a time: 58^10 < 2^64.
		chunk, scale := uint64(0), uint64(1)
		for k := 0; k < 10 && i < len(s); k, i = k+1, i+1 {
			d := base58Digits[s[i]]
			if d == 0xff {
				return pk, false
			}
			chunk, scale = chunk*58+uint64(d), scale*58
		}
		carry := chunk
		for j := range n {
			hi, lo := bits.Mul64(n[j], scale)
			var c uint64
			n[j], c = bits.Add64(lo, carry, 0)
			carry = hi + c
		}
		if carry != 0 {
			return pk, false // 2^256 or more
		}
	}
	var be [32]byte
	for j := range n {
		binary.BigEndian.PutUint64(be[24-8*j:], n[j])
	}
	significant := 32
	for significant > 0 && be[32-significant] == 0 {
		significant--
	}
	if zeros+significant != 32 {
		return pk, false
	}
	copy(pk[zeros:], be[32-significant:])
	return pk, true
}
