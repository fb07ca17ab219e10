package logfixture

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/client"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Log is an append-only tree in memory with a signing key. Safe for
// concurrent use.
type Log struct {
	Origin string
	// VerifierKey is the key checkpoints verify with.
	VerifierKey string
	signer      note.Signer

	mu     sync.Mutex
	hashes []tlog.Hash // stored hashes (tlog.StoredHashes layout)
	leaves [][]byte
	index  map[string]int64 // attestation pda -> leaf index
}

// New makes an empty log whose key is named origin.
func New(origin string) (*Log, error) {
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		return nil, fmt.Errorf("log key: %w", err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, fmt.Errorf("log key: %w", err)
	}
	return &Log{Origin: origin, VerifierKey: vkey, signer: s, index: map[string]int64{}}, nil
}

// Signer is the log's signing key.
func (l *Log) Signer() note.Signer { return l.signer }

func (l *Log) reader() tlog.HashReaderFunc {
	return func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x < 0 || x >= int64(len(l.hashes)) {
				return nil, fmt.Errorf("hash %d not stored", x)
			}
			out[i] = l.hashes[x]
		}
		return out, nil
	}
}

// AppendLeaf appends raw leaf bytes and returns the leaf's index.
func (l *Log) AppendLeaf(leaf []byte) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := int64(len(l.leaves))
	hs, err := tlog.StoredHashes(n, leaf, l.reader())
	if err != nil {
		return 0, err
	}
	l.hashes = append(l.hashes, hs...)
	l.leaves = append(l.leaves, append([]byte(nil), leaf...))
	return n, nil
}

// Append appends the leaf of a.
func (l *Log) Append(a *attestation.Attestation) (int64, error) {
	leaf, err := client.LeafBytes(a)
	if err != nil {
		return 0, err
	}
	n, err := l.AppendLeaf(leaf)
	if err != nil {
		return 0, err
	}
	l.mu.Lock()
	l.index[a.PDA] = n
	l.mu.Unlock()
	return n, nil
}

// Size is the number of leaves.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.leaves))
}

// Index is the leaf index of attestation pda.
func (l *Log) Index(pda string) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, ok := l.index[pda]
	return n, ok
}

// RootHash is the root of the tree of the first size leaves.
func (l *Log) RootHash(size int64) (tlog.Hash, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if size == 0 {
		return tlog.Hash{}, nil
	}
	return tlog.TreeHash(size, l.reader())
}

// CheckpointBody is the unsigned C2SP checkpoint of the first size leaves.
func (l *Log) CheckpointBody(size int64) (string, error) {
	h, err := l.RootHash(size)
	if err != nil {
		return "", err
	}
	return FormatCheckpoint(l.Origin, size, h), nil
}

// FormatCheckpoint is a C2SP checkpoint body.
func FormatCheckpoint(origin string, size int64, h tlog.Hash) string {
	return origin + "\n" + strconv.FormatInt(size, 10) + "\n" + h.String() + "\n"
}

// Sign signs a note body with the log's key.
func (l *Log) Sign(body string) (string, error) {
	b, err := note.Sign(&note.Note{Text: body}, l.signer)
	if err != nil {
		return "", fmt.Errorf("sign checkpoint: %w", err)
	}
	return string(b), nil
}

// Checkpoint is the signed checkpoint of the first size leaves.
func (l *Log) Checkpoint(size int64) (string, error) {
	body, err := l.CheckpointBody(size)
	if err != nil {
		return "", err
	}
	return l.Sign(body)
}

// Proof is the proof answer for leaf n in the tree of size leaves.
func (l *Log) Proof(n, size int64, a *attestation.Attestation) (*client.LogProof, error) {
	cp, err := l.Checkpoint(size)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n < 0 || n >= size || size > int64(len(l.leaves)) {
		return nil, fmt.Errorf("no leaf %d in a tree of %d", n, size)
	}
	p, err := tlog.ProveRecord(size, n, l.reader())
	if err != nil {
		return nil, err
	}
	out := &client.LogProof{LeafIndex: n, TreeSize: size, Leaf: append([]byte(nil), l.leaves[n]...), Checkpoint: cp,
		InclusionProof: make([][]byte, len(p))}
	for i, h := range p {
		out.InclusionProof[i] = append([]byte(nil), h[:]...)
	}
	if a != nil {
		out.TxSignature, out.Slot = a.TxSignature, a.Slot
	}
	return out, nil
}

// Consistency is the proof that the tree of from leaves is a prefix of the
// tree of to leaves.
func (l *Log) Consistency(from, to int64) ([][]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if from == 0 || from == to {
		return [][]byte{}, nil
	}
	p, err := tlog.ProveTree(to, from, l.reader())
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(p))
	for i, h := range p {
		out[i] = append([]byte(nil), h[:]...)
	}
	return out, nil
}

// Handler serves the log routes as the API does: the checkpoint of the
// whole tree (or of what Checkpoint returns, when set) at the origin's
// path (/log/checkpoint, below the root), the key and consistency proofs
// under /api/v1. Tests swap CheckpointText to serve forks and rollbacks.
type Handler struct {
	Log *Log
	// CheckpointText, when set, is served instead of the current checkpoint.
	CheckpointText func() string
	// ConsistencyHook, when set, may rewrite a consistency proof.
	ConsistencyHook func(from, to int64, p [][]byte) [][]byte
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, api := strings.CutPrefix(r.URL.Path, "/api/v1")
	if api == (path == "/log/checkpoint") {
		path = "" // the checkpoint is at the origin, the rest in the API
	}
	switch path {
	case "/log/key":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, h.Log.VerifierKey)
	case "/log/checkpoint":
		var text string
		if h.CheckpointText != nil {
			text = h.CheckpointText()
		} else {
			var err error
			if text, err = h.Log.Checkpoint(h.Log.Size()); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, text)
	case "/log/consistency":
		from, err1 := strconv.ParseInt(r.URL.Query().Get("from"), 10, 64)
		to, err2 := strconv.ParseInt(r.URL.Query().Get("to"), 10, 64)
		if err1 != nil || err2 != nil || from < 0 || to < from || to > h.Log.Size() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"code":"BAD_REQUEST","message":"bad sizes"}}`)
			return
		}
		p, err := h.Log.Consistency(from, to)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if h.ConsistencyHook != nil {
			p = h.ConsistencyHook(from, to, p)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"data": client.ConsistencyProof{From: from, To: to, Proof: p}})
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":"NOT_FOUND","message":"no route"}}`)
	}
}
