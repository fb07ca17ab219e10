package logformat

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// ProofHeader is the first line of a C2SP tlog-proof.
const ProofHeader = "c2sp.org/tlog-proof@v1"

// ProofMediaType is the media type the API answers a tlog-proof with;
// files of them end in .tlog-proof.
const ProofMediaType = "text/x-tlog-proof"

// MaxProofSize bounds a tlog-proof read: 63 hashes, a checkpoint with a
// few dozen signatures, and an attestation leaf fit in far less.
const MaxProofSize = 64 << 10

// Proof is a C2SP tlog-proof: a self-contained, offline-verifiable proof
// that the entry at Index is in the tree of Checkpoint (with the
// witnesses' cosignatures). attestd's Extra is the leaf itself (the
// attestation's RFC 8785 JSON): the verifier hashes it, so the proof
// names the attestation and is checked by nothing but its keys.
type Proof struct {
	Extra      []byte // nil: no extra line
	Index      int64
	Hashes     []tlog.Hash // from the leaf's sibling up to the root's child
	Checkpoint string      // the signed note, verbatim
}

// Marshal writes the proof in its text form.
func (p Proof) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString(ProofHeader + "\n")
	if p.Extra != nil {
		b.WriteString("extra " + base64.StdEncoding.EncodeToString(p.Extra) + "\n")
	}
	b.WriteString("index " + strconv.FormatInt(p.Index, 10) + "\n")
	for _, h := range p.Hashes {
		b.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	b.WriteString("\n")
	b.WriteString(p.Checkpoint)
	return b.Bytes()
}

// ErrProofFormat is the error of bytes that are not a tlog-proof.
var ErrProofFormat = errors.New("not a tlog-proof (c2sp.org/tlog-proof@v1)")

// ParseProof reads a tlog-proof; only its one spelling is accepted (no
// leading zeros, canonical base64, at most 63 hashes).
func ParseProof(b []byte) (Proof, error) {
	if len(b) > MaxProofSize {
		return Proof{}, fmt.Errorf("%w: more than %d bytes", ErrProofFormat, MaxProofSize)
	}
	head, cp, ok := bytes.Cut(b, []byte("\n\n"))
	if !ok {
		return Proof{}, fmt.Errorf("%w: no blank line before the checkpoint", ErrProofFormat)
	}
	lines := strings.Split(string(head), "\n")
	if lines[0] != ProofHeader {
		return Proof{}, fmt.Errorf("%w: the first line is not %s", ErrProofFormat, ProofHeader)
	}
	lines = lines[1:]
	var p Proof
	if len(lines) > 0 && strings.HasPrefix(lines[0], "extra ") {
		e := strings.TrimPrefix(lines[0], "extra ")
		x, err := base64.StdEncoding.DecodeString(e)
		if err != nil || base64.StdEncoding.EncodeToString(x) != e {
			return Proof{}, fmt.Errorf("%w: the extra line is not base64", ErrProofFormat)
		}
		p.Extra, lines = x, lines[1:]
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "index ") {
		return Proof{}, fmt.Errorf("%w: no index line", ErrProofFormat)
	}
	idx := strings.TrimPrefix(lines[0], "index ")
	n, ok := Decimal(idx, 1<<62)
	if !ok && idx == "0" {
		n, ok = 0, true
	}
	if !ok {
		return Proof{}, fmt.Errorf("%w: the index is not a decimal number", ErrProofFormat)
	}
	p.Index = n
	if len(lines)-1 > 63 {
		return Proof{}, fmt.Errorf("%w: more than 63 proof hashes", ErrProofFormat)
	}
	for _, l := range lines[1:] {
		h, err := base64.StdEncoding.DecodeString(l)
		if err != nil || len(h) != tlog.HashSize || base64.StdEncoding.EncodeToString(h) != l {
			return Proof{}, fmt.Errorf("%w: a proof line is not a base64 hash", ErrProofFormat)
		}
		p.Hashes = append(p.Hashes, tlog.Hash(h))
	}
	p.Checkpoint = string(cp)
	return p, nil
}

// ProofPolicy is what a verifier trusts: the log's keys (any one must
// have signed; their name is the origin), its witnesses' keys, and how
// many of them must have cosigned.
type ProofPolicy struct {
	Log       []note.Verifier
	Witnesses []*CosignatureVerifier
	Quorum    int
}

// Verified is what a proof established.
type Verified struct {
	Checkpoint Checkpoint
	Index      int64
	Leaf       []byte
	LogKey     string   // the name of the log key that signed
	Witnesses  []string // the witnesses whose cosignature verified
}

// Proof verification errors, by step.
var (
	ErrProofSignature = errors.New("checkpoint signature")
	ErrProofWitnesses = errors.New("witness cosignatures")
	ErrProofInclusion = errors.New("inclusion proof")
	ErrProofNoLeaf    = errors.New("the proof carries no leaf (its extra line)")
)

// VerifyProof checks p with policy and nothing else (no network): the
// checkpoint's signature by a log key and origin, at least Quorum
// cosignatures of the policy's witnesses over it, and the inclusion of
// leaf (p.Extra when leaf is nil) at p.Index in its tree.
func VerifyProof(p Proof, leaf []byte, policy ProofPolicy) (Verified, error) {
	if leaf == nil {
		leaf = p.Extra
	}
	if leaf == nil {
		return Verified{}, ErrProofNoLeaf
	}
	if len(policy.Log) == 0 {
		return Verified{}, fmt.Errorf("%w: no log key to check it with", ErrProofSignature)
	}
	vs := make([]note.Verifier, 0, len(policy.Log)+len(policy.Witnesses))
	vs = append(vs, policy.Log...)
	for _, w := range policy.Witnesses {
		vs = append(vs, w)
	}
	n, err := note.Open([]byte(p.Checkpoint), note.VerifierList(vs...))
	if err != nil {
		return Verified{}, fmt.Errorf("%w: %v", ErrProofSignature, err)
	}
	out := Verified{Index: p.Index, Leaf: leaf}
	origin := policy.Log[0].Name()
	for _, s := range n.Sigs {
		isLog := false
		for _, l := range policy.Log {
			if s.Name == l.Name() && s.Hash == l.KeyHash() {
				isLog = true
			}
		}
		if isLog {
			out.LogKey = s.Name
			continue
		}
		out.Witnesses = append(out.Witnesses, s.Name)
	}
	if out.LogKey == "" {
		return Verified{}, fmt.Errorf("%w: no signature by the log's key", ErrProofSignature)
	}
	cp, err := ParseCheckpoint(n.Text)
	if err != nil {
		return Verified{}, fmt.Errorf("%w: %v", ErrProofSignature, err)
	}
	if cp.Origin != origin {
		return Verified{}, fmt.Errorf("%w: a checkpoint of %q, not of %q", ErrProofSignature, cp.Origin, origin)
	}
	out.Checkpoint = cp
	if len(out.Witnesses) < policy.Quorum {
		return Verified{}, fmt.Errorf("%w: %d of the %d witnesses cosigned, the policy wants %d", ErrProofWitnesses, len(out.Witnesses), len(policy.Witnesses), policy.Quorum)
	}
	if p.Index < 0 || p.Index >= cp.Size {
		return Verified{}, fmt.Errorf("%w: index %d is not in a tree of size %d", ErrProofInclusion, p.Index, cp.Size)
	}
	if err := tlog.CheckRecord(tlog.RecordProof(p.Hashes), cp.Size, cp.Root, p.Index, tlog.RecordHash(leaf)); err != nil {
		return Verified{}, fmt.Errorf("%w: %v", ErrProofInclusion, err)
	}
	return out, nil
}
