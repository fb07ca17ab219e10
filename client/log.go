package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/attestd/attestd/translog/logformat"
	"github.com/gowebpki/jcs"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Errors of log verification. Every failure wraps exactly one of them
// (test with errors.Is), with the detail in its message.
var (
	// ErrCheckpointMalformed: the checkpoint is not a C2SP tlog-checkpoint
	// (origin line, decimal size, base64 root hash) in a signed note.
	ErrCheckpointMalformed = errors.New("checkpoint malformed")
	// ErrCheckpointSignature: the checkpoint carries no valid signature by
	// the verifier key (a wrong key, a tampered body or signature).
	ErrCheckpointSignature = errors.New("checkpoint signature invalid")
	// ErrCheckpointOrigin: the checkpoint names another log.
	ErrCheckpointOrigin = errors.New("checkpoint origin mismatch")
	// ErrCheckpointWitnesses: fewer of the witnesses the verifier trusts
	// cosigned the checkpoint than its quorum (LogVerifier.WithWitnesses),
	// or a cosignature by one of them does not verify.
	ErrCheckpointWitnesses = errors.New("checkpoint not witnessed")
	// ErrLeafMismatch: the leaf bytes are not the canonical JSON of the
	// attestation the service served.
	ErrLeafMismatch = errors.New("leaf mismatch")
	// ErrInclusionProof: the inclusion proof does not lead from the leaf to
	// the checkpoint's root hash.
	ErrInclusionProof = errors.New("inclusion proof invalid")
	// ErrConsistencyProof: the consistency proof does not show the older
	// tree to be a prefix of the newer.
	ErrConsistencyProof = errors.New("consistency proof invalid")
	// ErrLogFork: a checkpoint does not extend the one seen before it (a
	// fork, or a rollback to a smaller tree). A *ForkError carries both.
	ErrLogFork = errors.New("log fork")
	// ErrNotLogged: the service has no proof for the attestation yet (not
	// finalized, or finalized but not yet appended): the proof route's 409.
	ErrNotLogged = errors.New("attestation not in the log yet")
)

// MaxProofHashes bounds an inclusion or consistency proof: a tree of 2^63
// leaves needs at most 63 hashes for inclusion and about twice that for
// consistency.
const MaxProofHashes = 128

// maxCheckpoint bounds a checkpoint note (origin, size, hash, a few
// extension lines and signatures fit in far less).
const maxCheckpoint = 16 << 10

// Leaf is the part of an attestation the log commits to, in the API's
// field names and values. Its canonical JSON (RFC 8785) is the leaf.
type Leaf struct {
	PDA         string `json:"pda"`
	AgentPDA    string `json:"agentPda"`
	ActionType  string `json:"actionType"`
	ActionHash  string `json:"actionHash"`
	TxSignature string `json:"txSignature"`
	Slot        uint64 `json:"slot"`
	Timestamp   Time   `json:"timestamp"`
}

// LeafOf is the log leaf of a.
func LeafOf(a *Attestation) Leaf {
	return Leaf{
		PDA: a.PDA, AgentPDA: a.AgentPDA, ActionType: a.ActionType.String(), ActionHash: a.ActionHash,
		TxSignature: a.TxSignature, Slot: a.Slot, Timestamp: a.Timestamp,
	}
}

// maxSafeInteger is the largest integer RFC 8785 writes exactly (2^53-1):
// JCS serializes numbers as IEEE 754 doubles.
const maxSafeInteger = 1<<53 - 1

// LeafBytes is the log's leaf for a: the RFC 8785 (JCS) canonical JSON of
// {pda, agentPda, actionType, actionHash, txSignature, slot, timestamp}.
func LeafBytes(a *Attestation) ([]byte, error) {
	if !a.ActionType.Valid() {
		return nil, fmt.Errorf("leaf: invalid action type %d", uint8(a.ActionType))
	}
	if a.Slot > maxSafeInteger {
		return nil, fmt.Errorf("leaf: slot %d beyond 2^53-1 has no exact canonical JSON", a.Slot)
	}
	b, err := json.Marshal(LeafOf(a))
	if err != nil {
		return nil, fmt.Errorf("leaf: %w", err)
	}
	c, err := jcs.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("leaf: canonical JSON: %w", err)
	}
	return c, nil
}

// LogProof is the answer of GET /attestations/:id/proof: where the
// attestation's leaf is in the log and the proof that it is there.
type LogProof struct {
	LeafIndex int64 `json:"leafIndex"`
	TreeSize  int64 `json:"treeSize"`
	// Leaf is the leaf bytes (base64 in JSON).
	Leaf []byte `json:"leaf"`
	// InclusionProof is the RFC 6962 audit path, leaf side first (base64
	// SHA-256 hashes in JSON).
	InclusionProof [][]byte `json:"inclusionProof"`
	// Checkpoint is the signed note of the tree the proof is against.
	Checkpoint string `json:"checkpoint"`
	// TxSignature and Slot name the transaction, for checking with any
	// Solana RPC that the chain holds it (the log does not prove that).
	TxSignature string `json:"txSignature"`
	Slot        uint64 `json:"slot"`
}

// ConsistencyProof is the answer of GET /log/consistency.
type ConsistencyProof struct {
	From  int64    `json:"from"`
	To    int64    `json:"to"`
	Proof [][]byte `json:"proof"`
}

// Checkpoint is a verified C2SP tlog-checkpoint: the log's size and root
// hash as the operator signed them.
type Checkpoint struct {
	Origin string
	Size   int64
	Hash   tlog.Hash
	// Extensions are the lines after the root hash, if any.
	Extensions []string
	// KeyName is the name of the verifier key whose signature checked out.
	KeyName string
	// Witnesses names the trusted witnesses whose cosignature checked out
	// (LogVerifier.WithWitnesses).
	Witnesses []string
	// Note is the whole signed note, as served (the evidence to keep).
	Note []byte
}

// LogVerifier checks checkpoints against one operator key and origin,
// and, with WithWitnesses, the cosignatures of witnesses it trusts.
type LogVerifier struct {
	verifier  note.Verifier
	origin    string
	witnesses []*logformat.CosignatureVerifier
	quorum    int
}

// WithWitnesses returns a copy of v that also requires quorum
// cosignatures (C2SP tlog-cosignature) by the witnesses of these verifier
// keys (name+keyid+base64, as litewitness prints them): the client's own
// policy, whatever the service's. Cosignatures of other witnesses are
// ignored.
func (v *LogVerifier) WithWitnesses(quorum int, vkeys ...string) (*LogVerifier, error) {
	if quorum < 0 || quorum > len(vkeys) {
		return nil, fmt.Errorf("log verifier: a quorum of %d with %d witness keys", quorum, len(vkeys))
	}
	c := *v
	c.witnesses, c.quorum = nil, quorum
	for _, k := range vkeys {
		w, err := logformat.ParseCosignatureKey(strings.TrimSpace(k))
		if err != nil {
			return nil, fmt.Errorf("log verifier: witness key: %w", err)
		}
		c.witnesses = append(c.witnesses, w)
	}
	return &c, nil
}

// NewLogVerifier parses a verifier key (<name>+<hash>+<base64>, what
// GET /log/key and `attestd log keygen` print). The checkpoints it accepts
// must carry the key's name as their origin; WithOrigin expects another.
func NewLogVerifier(vkey string) (*LogVerifier, error) {
	v, err := note.NewVerifier(strings.TrimSpace(vkey))
	if err != nil {
		return nil, fmt.Errorf("log verifier key: %w", err)
	}
	return &LogVerifier{verifier: v, origin: v.Name()}, nil
}

// WithOrigin returns a copy of v that expects checkpoints of origin.
func (v *LogVerifier) WithOrigin(origin string) *LogVerifier {
	c := *v
	c.origin = origin
	return &c
}

// KeyName is the verifier key's name.
func (v *LogVerifier) KeyName() string { return v.verifier.Name() }

// Origin is the checkpoint origin v expects.
func (v *LogVerifier) Origin() string { return v.origin }

// OpenCheckpoint verifies a signed checkpoint note: a valid signature by
// v's key over a well-formed checkpoint of v's origin.
func (v *LogVerifier) OpenCheckpoint(text []byte) (*Checkpoint, error) {
	if len(text) > maxCheckpoint {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrCheckpointMalformed, len(text), maxCheckpoint)
	}
	vs := []note.Verifier{v.verifier}
	for _, w := range v.witnesses {
		vs = append(vs, w)
	}
	n, err := note.Open(text, note.VerifierList(vs...))
	if err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		switch {
		case errors.As(err, &unverified):
			return nil, fmt.Errorf("%w: no signature by key %s", ErrCheckpointSignature, v.verifier.Name())
		case errors.As(err, &invalid) && (invalid.Name != v.verifier.Name() || invalid.Hash != v.verifier.KeyHash()):
			return nil, fmt.Errorf("%w: the cosignature by witness %s does not verify", ErrCheckpointWitnesses, invalid.Name)
		case errors.As(err, &invalid):
			return nil, fmt.Errorf("%w: the signature by key %s does not verify", ErrCheckpointSignature, v.verifier.Name())
		}
		return nil, fmt.Errorf("%w: %w", ErrCheckpointMalformed, err)
	}
	var keyName string
	var witnessed []string
	for _, sig := range n.Sigs {
		if sig.Name == v.verifier.Name() && sig.Hash == v.verifier.KeyHash() {
			keyName = sig.Name
		} else {
			witnessed = append(witnessed, sig.Name)
		}
	}
	if keyName == "" {
		return nil, fmt.Errorf("%w: no signature by key %s", ErrCheckpointSignature, v.verifier.Name())
	}
	if len(witnessed) < v.quorum {
		return nil, fmt.Errorf("%w: cosigned by %d of the %d trusted witnesses (%s), %d required", ErrCheckpointWitnesses,
			len(witnessed), len(v.witnesses), strings.Join(witnessed, ", "), v.quorum)
	}
	cp, err := ParseCheckpoint(n.Text)
	if err != nil {
		return nil, err
	}
	if cp.Origin != v.origin {
		return nil, fmt.Errorf("%w: checkpoint of %q, expected %q", ErrCheckpointOrigin, cp.Origin, v.origin)
	}
	cp.KeyName, cp.Witnesses = keyName, witnessed
	cp.Note = bytes.Clone(text)
	return cp, nil
}

// ParseCheckpoint parses the body of a checkpoint note (unverified): the
// origin line, the tree size in decimal, the base64 root hash, then any
// extension lines.
func ParseCheckpoint(text string) (*Checkpoint, error) {
	if !strings.HasSuffix(text, "\n") || !utf8.ValidString(text) {
		return nil, fmt.Errorf("%w: not newline-terminated UTF-8 text", ErrCheckpointMalformed)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 3 {
		return nil, fmt.Errorf("%w: %d lines, want origin, size and root hash", ErrCheckpointMalformed, len(lines))
	}
	origin := lines[0]
	if origin == "" {
		return nil, fmt.Errorf("%w: empty origin line", ErrCheckpointMalformed)
	}
	size, err := parseSize(lines[1])
	if err != nil {
		return nil, fmt.Errorf("%w: tree size: %w", ErrCheckpointMalformed, err)
	}
	h, err := decodeHash(lines[2])
	if err != nil {
		return nil, fmt.Errorf("%w: root hash: %w", ErrCheckpointMalformed, err)
	}
	for _, l := range lines[3:] {
		if l == "" {
			return nil, fmt.Errorf("%w: empty extension line", ErrCheckpointMalformed)
		}
	}
	return &Checkpoint{Origin: origin, Size: size, Hash: h, Extensions: lines[3:]}, nil
}

// parseSize parses a tree size: ASCII decimal, no sign, no leading zero.
func parseSize(s string) (int64, error) {
	if s == "" || len(s) > 19 || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("%q is not a decimal size", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a decimal size", s)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a decimal size", s)
	}
	return n, nil
}

// decodeHash decodes one standard-base64 SHA-256 hash.
func decodeHash(s string) (tlog.Hash, error) {
	var h tlog.Hash
	if len(s) != base64.StdEncoding.EncodedLen(tlog.HashSize) {
		return h, fmt.Errorf("%q is not 32 bytes of base64", s)
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != tlog.HashSize {
		return h, fmt.Errorf("%q is not 32 bytes of base64", s)
	}
	copy(h[:], b)
	return h, nil
}

// proofHashes checks and converts the hashes of a proof.
func proofHashes(p [][]byte, sentinel error) ([]tlog.Hash, error) {
	if len(p) > MaxProofHashes {
		return nil, fmt.Errorf("%w: %d hashes, more than %d", sentinel, len(p), MaxProofHashes)
	}
	out := make([]tlog.Hash, len(p))
	for i, b := range p {
		if len(b) != tlog.HashSize {
			return nil, fmt.Errorf("%w: hash %d is %d bytes, not %d", sentinel, i, len(b), tlog.HashSize)
		}
		copy(out[i][:], b)
	}
	return out, nil
}

// Inclusion is what VerifyInclusion proved: the attestation's leaf is at
// LeafIndex in the tree of the signed Checkpoint.
type Inclusion struct {
	LeafIndex  int64
	TreeSize   int64
	Leaf       []byte
	Checkpoint *Checkpoint
	// TxSignature and Slot are for checking the transaction with any RPC.
	TxSignature string
	Slot        uint64
}

// VerifyInclusion checks a proof answer against the attestation the
// service served (a) and the operator's key (v), in order: the checkpoint's
// signature and origin, that the leaf bytes are the canonical JSON of a
// (recomputed here from a's fields, never taken on trust), and the
// inclusion proof from the leaf to the checkpoint's root hash. Each
// failure wraps one of the Err* values of this package.
func VerifyInclusion(v *LogVerifier, a *Attestation, p *LogProof) (*Inclusion, error) {
	if v == nil || a == nil || p == nil {
		return nil, errors.New("verify inclusion: nil verifier, attestation or proof")
	}
	cp, err := v.OpenCheckpoint([]byte(p.Checkpoint))
	if err != nil {
		return nil, err
	}
	want, err := LeafBytes(a)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLeafMismatch, err)
	}
	if !bytes.Equal(want, p.Leaf) {
		return nil, fmt.Errorf("%w: the proof's leaf %s is not the canonical JSON of the served attestation %s", ErrLeafMismatch, clip(p.Leaf), clip(want))
	}
	if p.TxSignature != a.TxSignature || p.Slot != a.Slot {
		return nil, fmt.Errorf("%w: the proof names transaction %s at slot %d, the attestation %s at slot %d",
			ErrLeafMismatch, p.TxSignature, p.Slot, a.TxSignature, a.Slot)
	}
	if p.TreeSize != cp.Size {
		return nil, fmt.Errorf("%w: proof for a tree of %d leaves, checkpoint of %d", ErrInclusionProof, p.TreeSize, cp.Size)
	}
	if p.LeafIndex < 0 || p.LeafIndex >= cp.Size {
		return nil, fmt.Errorf("%w: leaf index %d outside a tree of %d leaves", ErrInclusionProof, p.LeafIndex, cp.Size)
	}
	hashes, err := proofHashes(p.InclusionProof, ErrInclusionProof)
	if err != nil {
		return nil, err
	}
	if err := tlog.CheckRecord(hashes, cp.Size, cp.Hash, p.LeafIndex, tlog.RecordHash(p.Leaf)); err != nil {
		return nil, fmt.Errorf("%w: leaf %d does not lead to the root of the tree of %d leaves", ErrInclusionProof, p.LeafIndex, cp.Size)
	}
	return &Inclusion{LeafIndex: p.LeafIndex, TreeSize: cp.Size, Leaf: want, Checkpoint: cp, TxSignature: p.TxSignature, Slot: p.Slot}, nil
}

// VerifyConsistency checks that the tree of old is a prefix of the tree of
// newer (both verified checkpoints, from OpenCheckpoint) with an RFC 6962
// consistency proof from old.Size to newer.Size. Equal sizes need equal
// hashes and no proof; an empty old tree is a prefix of every tree.
func VerifyConsistency(old, newer *Checkpoint, proof [][]byte) error {
	if old == nil || newer == nil {
		return errors.New("verify consistency: nil checkpoint")
	}
	if old.Origin != newer.Origin {
		return fmt.Errorf("%w: checkpoints of two logs, %q and %q", ErrConsistencyProof, old.Origin, newer.Origin)
	}
	switch {
	case old.Size > newer.Size:
		return fmt.Errorf("%w: the tree shrank from %d to %d leaves", ErrConsistencyProof, old.Size, newer.Size)
	case old.Size == newer.Size:
		if old.Hash != newer.Hash {
			return fmt.Errorf("%w: two root hashes for the tree of %d leaves", ErrConsistencyProof, old.Size)
		}
		return nil
	case old.Size == 0:
		return nil
	}
	hashes, err := proofHashes(proof, ErrConsistencyProof)
	if err != nil {
		return err
	}
	if err := tlog.CheckTree(hashes, newer.Size, newer.Hash, old.Size, old.Hash); err != nil {
		return fmt.Errorf("%w: the tree of %d leaves is not a prefix of the tree of %d", ErrConsistencyProof, old.Size, newer.Size)
	}
	return nil
}

// clip quotes b for an error message, at most 400 bytes of it.
func clip(b []byte) string {
	if len(b) > 400 {
		return strconv.Quote(string(b[:400])) + "..."
	}
	return strconv.Quote(string(b))
}
