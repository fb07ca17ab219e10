package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/attestd/attestd/attestation"
	"github.com/gagliardetto/solana-go"
	"github.com/gowebpki/jcs"
)

// VerifyInput is verify_action_hash's input.
type VerifyInput struct {
	Payload        string `json:"payload" jsonschema:"the action payload exactly as issued (text); when it is JSON its RFC 8785 canonical form is hashed too"`
	ExpectedHash   string `json:"expectedHash,omitempty" jsonschema:"the SHA-256 to compare with: 64 hexadecimal characters, either case, optional 0x prefix; give this or attestationPda"`
	AttestationPDA string `json:"attestationPda,omitempty" jsonschema:"compare with the actionHash of this attestation (fetched) and check its agent signature: a base58 pda; give this or expectedHash"`
}

// Verdicts of verify_action_hash.
const (
	Verified = "VERIFIED"
	Mismatch = "MISMATCH"
)

// Forms of the payload that may match.
const (
	FormRaw       = "raw"       // the payload's UTF-8 bytes as given
	FormCanonical = "canonical" // RFC 8785 canonical JSON of the payload
)

// VerifyOutput is verify_action_hash's answer.
type VerifyOutput struct {
	Result string `json:"result" jsonschema:"VERIFIED or MISMATCH"`
	// ExpectedHash is the hash compared with (lowercase, no 0x).
	ExpectedHash string `json:"expectedHash"`
	// ExpectedFrom says where it came from: expectedHash or attestation.
	ExpectedFrom string `json:"expectedFrom"`
	// PayloadHash is the SHA-256 of the payload's UTF-8 bytes.
	PayloadHash string `json:"payloadHash"`
	// CanonicalHash is the SHA-256 of the RFC 8785 form (JSON payloads only).
	CanonicalHash string `json:"canonicalHash,omitempty"`
	PayloadIsJSON bool   `json:"payloadIsJson"`
	// MatchedForm is raw or canonical when VERIFIED.
	MatchedForm string                `json:"matchedForm,omitempty"`
	Attestation *AttestationSignature `json:"attestation,omitempty"`
}

// AttestationSignature is the attestation compared with and the check of
// its agent's signature.
type AttestationSignature struct {
	PDA         string                 `json:"pda"`
	AgentPDA    string                 `json:"agentPda"`
	AgentID     string                 `json:"agentId"`
	ActionType  attestation.ActionType `json:"actionType"`
	Timestamp   attestation.Time       `json:"timestamp"`
	TxSignature string                 `json:"txSignature"`
	Commitment  string                 `json:"commitment"`
	// SignatureValid says whether agentSignature is agentId's Ed25519
	// signature over the 32 bytes of actionHash.
	SignatureValid bool `json:"signatureValid"`
}

// HashPayload returns the SHA-256 (lowercase hex) of payload's bytes and,
// when payload is JSON, of its RFC 8785 canonical form ("" otherwise).
func HashPayload(payload string) (raw, canonical string, isJSON bool) {
	sum := sha256.Sum256([]byte(payload))
	raw = hex.EncodeToString(sum[:])
	if !json.Valid([]byte(payload)) {
		return raw, "", false
	}
	c, err := jcs.Transform([]byte(payload))
	if err != nil {
		// Valid JSON that has no canonical form (a number beyond float64, say).
		return raw, "", true
	}
	sum = sha256.Sum256(c)
	return raw, hex.EncodeToString(sum[:]), true
}

func (s *Server) verifyActionHash(ctx context.Context, in VerifyInput) (VerifyOutput, string, error) {
	hasHash, hasAtt := strings.TrimSpace(in.ExpectedHash) != "", strings.TrimSpace(in.AttestationPDA) != ""
	if hasHash == hasAtt {
		return VerifyOutput{}, "", errors.New("give exactly one of expectedHash (a SHA-256 in hex) or attestationPda (an attestation to fetch)")
	}
	out := VerifyOutput{}
	out.PayloadHash, out.CanonicalHash, out.PayloadIsJSON = HashPayload(in.Payload)
	var expected [32]byte
	if hasHash {
		h, err := attestation.ParseHash(strings.TrimSpace(in.ExpectedHash))
		if err != nil {
			return VerifyOutput{}, "", fmt.Errorf("expectedHash: %w", err)
		}
		expected, out.ExpectedFrom = h, "expectedHash"
	} else {
		a, err := s.api.GetAttestation(ctx, strings.TrimSpace(in.AttestationPDA))
		if err != nil {
			return VerifyOutput{}, "", s.apiError(err)
		}
		h, err := attestation.ParseHash(a.ActionHash)
		if err != nil {
			return VerifyOutput{}, "", fmt.Errorf("attestation %s has a malformed actionHash %q: %w", a.PDA, a.ActionHash, err)
		}
		expected, out.ExpectedFrom = h, "attestation"
		out.Attestation = &AttestationSignature{PDA: a.PDA, AgentPDA: a.AgentPDA, AgentID: a.AgentID, ActionType: a.ActionType,
			Timestamp: a.Timestamp, TxSignature: a.TxSignature, Commitment: string(a.Commitment),
			SignatureValid: signatureValid(a.AgentID, h, a.AgentSignature)}
	}
	out.ExpectedHash = hex.EncodeToString(expected[:])
	switch {
	case out.PayloadHash == out.ExpectedHash:
		out.Result, out.MatchedForm = Verified, FormRaw
	case out.CanonicalHash != "" && out.CanonicalHash == out.ExpectedHash:
		out.Result, out.MatchedForm = Verified, FormCanonical
	default:
		out.Result = Mismatch
	}
	return out, verifyText(&out), nil
}

// signatureValid checks the agent's base58 Ed25519 signature over hash.
func signatureValid(agentID string, hash [32]byte, sig string) bool {
	pk, err := attestation.ParseAddress(agentID)
	if err != nil {
		return false
	}
	sg, err := solana.SignatureFromBase58(sig)
	if err != nil {
		return false
	}
	return attestation.VerifySignature([32]byte(pk), hash, [64]byte(sg))
}
