package logformat

import (
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// RangeHasher rebuilds a tree's root from a range proof and the range's
// leaf hashes given one at a time: it pushes the left nodes, each leaf,
// then the right nodes on a stack, merging the top two when they are
// siblings (of one level, the left one at an even index), and folds what
// remains right to left with tlog.NodeHash, RFC 6962's root of a tree
// whose size is not a power of two. It works in memory that grows with the log of
// the range, not with the range: for files of a million leaves.
type RangeHasher struct {
	size, first, end, pos int64
	right                 []Node
	proof                 RangeProof
	stack                 []stackNode
}

// NewRangeHasher starts rebuilding the root of the tree of size from the
// proof p of [first, end): Add each leaf hash of the range in order, then
// Root.
func NewRangeHasher(size, first, end int64, p RangeProof) (*RangeHasher, error) {
	if len(p.Left)+len(p.Right) > MaxRangeProofHashes {
		return nil, fmt.Errorf("%w: %d hashes, more than %d", ErrRangeProof, len(p.Left)+len(p.Right), MaxRangeProofHashes)
	}
	left, right, err := RangeProofNodes(size, first, end)
	if err != nil {
		return nil, err
	}
	if len(p.Left) != len(left) || len(p.Right) != len(right) {
		return nil, fmt.Errorf("%w: %d left and %d right hashes, want %d and %d for [%d, %d) in a tree of size %d",
			ErrRangeProof, len(p.Left), len(p.Right), len(left), len(right), first, end, size)
	}
	h := &RangeHasher{size: size, first: first, end: end, pos: first, right: right, proof: p, stack: make([]stackNode, 0, 128)}
	for i, n := range left {
		h.push(n, p.Left[i])
	}
	return h, nil
}

// push puts a node on the stack, merging the top two while they are
// siblings (one level, the left one at an even index).
func (h *RangeHasher) push(n Node, hash tlog.Hash) {
	h.stack = append(h.stack, stackNode{n, hash})
	for len(h.stack) >= 2 {
		l, r := h.stack[len(h.stack)-2], h.stack[len(h.stack)-1]
		if l.Level != r.Level || l.Index%2 != 0 || l.Index+1 != r.Index {
			return
		}
		h.stack = append(h.stack[:len(h.stack)-2], stackNode{Node{l.Level + 1, l.Index / 2}, tlog.NodeHash(l.hash, r.hash)})
	}
}

// Add takes the hash of the next leaf of the range.
func (h *RangeHasher) Add(leafHash tlog.Hash) error {
	if h.pos >= h.end {
		return fmt.Errorf("%w: a leaf beyond the range [%d, %d)", ErrRangeProof, h.first, h.end)
	}
	h.push(Node{0, h.pos}, leafHash)
	h.pos++
	return nil
}

// Added is how many leaves were added.
func (h *RangeHasher) Added() int64 { return h.pos - h.first }

// Root is the tree's root, once every leaf of the range was added. It
// may be called once.
func (h *RangeHasher) Root() (tlog.Hash, error) {
	if h.pos != h.end {
		return tlog.Hash{}, fmt.Errorf("%w: %d leaves of the range [%d, %d) given, want %d", ErrRangeProof, h.pos-h.first, h.first, h.end, h.end-h.first)
	}
	for i, n := range h.right {
		h.push(n, h.proof.Right[i])
	}
	root := h.stack[len(h.stack)-1].hash
	for i := len(h.stack) - 2; i >= 0; i-- {
		root = tlog.NodeHash(h.stack[i].hash, root)
	}
	return root, nil
}
