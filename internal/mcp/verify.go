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
	"github.com/attestd/attestd/client"
	"github.com/gagliardetto/solana-go"
	"github.com/gowebpki/jcs"
)

// VerifyInput is verify_action_hash's input.
type VerifyInput struct {
	Payload        string `json:"payload" jsonschema:"the action payload exactly as issued (text); when it is JSON its RFC 8785 canonical form is hashed too"`
	ExpectedHash   string `json:"expectedHash,omitempty" jsonschema:"the SHA-256 to compare with: 64 hexadecimal characters, either case, optional 0x prefix; give this, or attestationPda, or neither to search the index"`
	AttestationPDA string `json:"attestationPda,omitempty" jsonschema:"compare with the actionHash of this attestation (fetched) and check its agent signature: a base58 pda; give this, or expectedHash, or neither to search the index"`
}

// Verdicts of verify_action_hash.
const (
	Verified = "VERIFIED"
	Mismatch = "MISMATCH"
	// NotAttested: searched (no expectedHash, no attestationPda), and no
	// indexed attestation commits to either form of the payload.
	NotAttested = "NOT_ATTESTED"
)

// MaxMatches is how many attestations a search lists (the newest first);
// Matched says how many there are in all.
const MaxMatches = 20

// Forms of the payload that may match.
const (
	FormRaw       = "raw"       // the payload's UTF-8 bytes as given
	FormCanonical = "canonical" // RFC 8785 canonical JSON of the payload
)

// VerifyOutput is verify_action_hash's answer.
type VerifyOutput struct {
	Result string `json:"result" jsonschema:"VERIFIED or MISMATCH; NOT_ATTESTED when the index was searched and no attestation has the payload's hash"`
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
	// Matches are the attestations that commit to the payload, newest
	// first (at most MaxMatches), when the index was searched; Matched is
	// how many there are in all.
	Matches []AttestationSignature `json:"matches,omitempty"`
	Matched int64                  `json:"matched,omitempty"`
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
	if hasHash && hasAtt {
		return VerifyOutput{}, "", errors.New("give exactly one of expectedHash (a SHA-256 in hex) or attestationPda (an attestation to fetch), or neither to search the index for the payload")
	}
	out := VerifyOutput{}
	out.PayloadHash, out.CanonicalHash, out.PayloadIsJSON = HashPayload(in.Payload)
	if !hasHash && !hasAtt {
		return s.searchPayload(ctx, out)
	}
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

// searchPayload asks the index which attestations commit to the payload:
// to its bytes first, then to its RFC 8785 form (a JSON payload written
// with other spacing or key order). The first form with attestations is
// the verdict; each listed attestation's agent signature is checked.
func (s *Server) searchPayload(ctx context.Context, out VerifyOutput) (VerifyOutput, string, error) {
	out.ExpectedFrom = "search"
	forms := [][2]string{{FormRaw, out.PayloadHash}}
	if out.CanonicalHash != "" && out.CanonicalHash != out.PayloadHash {
		forms = append(forms, [2]string{FormCanonical, out.CanonicalHash})
	}
	for _, f := range forms {
		page, err := s.api.ListAttestations(ctx, client.ListParams{ActionHash: f[1], Limit: MaxMatches})
		if err != nil {
			return VerifyOutput{}, "", s.apiError(err)
		}
		if len(page.Data) == 0 {
			continue
		}
		out.Result, out.MatchedForm, out.ExpectedHash, out.Matched = Verified, f[0], f[1], page.Pagination.Total
		h, _ := attestation.ParseHash(f[1])
		for _, a := range page.Data {
			out.Matches = append(out.Matches, AttestationSignature{PDA: a.PDA, AgentPDA: a.AgentPDA, AgentID: a.AgentID, ActionType: a.ActionType,
				Timestamp: a.Timestamp, TxSignature: a.TxSignature, Commitment: string(a.Commitment),
				SignatureValid: signatureValid(a.AgentID, h, a.AgentSignature)})
		}
		return out, verifyText(&out), nil
	}
	out.Result, out.ExpectedHash = NotAttested, out.PayloadHash
	return out, verifyText(&out), nil
}
