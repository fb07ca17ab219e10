package attestation

import (
	"crypto/ed25519"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

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

// ParseAddress decodes a base58 Solana address (32 bytes).
func ParseAddress(s string) (solana.PublicKey, error) {
	if len(s) < 32 || len(s) > 44 {
		return solana.PublicKey{}, errors.New("address must be 32 to 44 base58 characters")
	}
	pk, err := solana.PublicKeyFromBase58(s)
	if err != nil {
		return solana.PublicKey{}, errors.New("address is not valid base58 for 32 bytes")
	}
	return pk, nil
}
