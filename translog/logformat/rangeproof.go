package logformat

import (
	"errors"
	"fmt"
	"math/bits"

	"golang.org/x/mod/sumdb/tlog"
)

// A range proof shows that the leaf hashes of [first, end) are exactly the
// leaves at those positions of the RFC 6962 tree of size leaves whose root
// is R: with the compact range of [0, first) on their left and the
// complete subtrees covering [end, size) on their right, they hash up to R.

// MaxRangeProofHashes bounds a range proof: at most 63 hashes on the left
// (the set bits of first) and 63 on the right.
const MaxRangeProofHashes = 2 * 63

// maxStoredSize is the largest tree ProveRange reads: beyond it, tlog's
// stored hash indexes overflow an int64.
const maxStoredSize = int64(1) << 62

// ErrRangeProof is the error of a range proof that does not check, or of
// a range that no proof can cover.
var ErrRangeProof = errors.New("range proof")

// Node names a complete subtree as tlog numbers them: the subtree at
// Level, Index covers the leaves [Index<<Level, (Index+1)<<Level).
type Node struct {
	Level int
	Index int64
}

// RangeProof is an RFC 6962 range proof of the leaves [first, end) in a
// tree of size leaves: the hashes of the nodes RangeProofNodes names.
type RangeProof struct {
	Left  []tlog.Hash // the compact range of [0, first), left to right
	Right []tlog.Hash // the subtrees covering [end, size), left to right
}

// RangeProofNodes says which complete subtrees a range proof of
// [first, end) in a tree of size holds, left part then right part. The
// left part is the compact range of [0, first): a subtree per set bit of
// first, largest first. The right part covers [end, size) greedily: at
// position p, the largest aligned subtree that starts at p and ends by
// size.
func RangeProofNodes(size, first, end int64) (left, right []Node, err error) {
	if err := checkRange(size, first, end); err != nil {
		return nil, nil, err
	}
	var p int64
	for l := 62; l >= 0; l-- {
		if first&(int64(1)<<l) != 0 {
			left = append(left, Node{Level: l, Index: p >> l})
			p += int64(1) << l
		}
	}
	for p = end; p < size; {
		l := bits.TrailingZeros64(uint64(p)) // p > 0: at most 62
		for size-p < int64(1)<<l {
			l--
		}
		right = append(right, Node{Level: l, Index: p >> l})
		p += int64(1) << l
	}
	return left, right, nil
}

// checkRange reports whether [first, end) is a non-empty range of leaves
// of a tree of size.
func checkRange(size, first, end int64) error {
	switch {
	case size < 0:
		return fmt.Errorf("%w: a tree of negative size %d", ErrRangeProof, size)
	case first < 0:
		return fmt.Errorf("%w: the range starts at negative %d", ErrRangeProof, first)
	case first >= end:
		return fmt.Errorf("%w: the range [%d, %d) is empty", ErrRangeProof, first, end)
	case end > size:
		return fmt.Errorf("%w: the range [%d, %d) ends beyond the tree of size %d", ErrRangeProof, first, end, size)
	}
	return nil
}

// stackNode is a node of RangeRoot's stack with its hash.
type stackNode struct {
	Node
	hash tlog.Hash
}

// RangeRoot computes the root of the tree of size from the proof and the
// leaf hashes of [first, first+len(leafHashes)) (RangeHasher, given them
// all). A proof that does not have the hashes RangeProofNodes names is an
// error.
func RangeRoot(size, first int64, leafHashes []tlog.Hash, p RangeProof) (tlog.Hash, error) {
	if err := checkRange(size, first, first+1); err != nil || int64(len(leafHashes)) > size-first {
		return tlog.Hash{}, fmt.Errorf("%w: %d leaves from %d are not a range of a tree of size %d", ErrRangeProof, len(leafHashes), first, size)
	}
	h, err := NewRangeHasher(size, first, first+int64(len(leafHashes)), p)
	if err != nil {
		return tlog.Hash{}, err
	}
	for _, l := range leafHashes {
		if err := h.Add(l); err != nil {
			return tlog.Hash{}, err
		}
	}
	return h.Root()
}

// ProveRange reads the range proof of [first, end) in the tree of size
// from r, the log's stored hashes (tlog.StoredHashIndex(n.Level, n.Index)
// for each node of RangeProofNodes).
func ProveRange(size, first, end int64, r tlog.HashReader) (RangeProof, error) {
	left, right, err := RangeProofNodes(size, first, end)
	if err != nil {
		return RangeProof{}, err
	}
	if size > maxStoredSize {
		return RangeProof{}, fmt.Errorf("%w: a tree of size %d is larger than 2^62", ErrRangeProof, size)
	}
	nodes := append(append(make([]Node, 0, len(left)+len(right)), left...), right...)
	if len(nodes) == 0 {
		return RangeProof{}, nil
	}
	idx := make([]int64, len(nodes))
	for i, n := range nodes {
		idx[i] = tlog.StoredHashIndex(n.Level, n.Index)
	}
	hashes, err := r.ReadHashes(idx)
	if err != nil {
		return RangeProof{}, fmt.Errorf("reading the range proof of [%d, %d) in a tree of size %d: %w", first, end, size, err)
	}
	if len(hashes) != len(idx) {
		return RangeProof{}, fmt.Errorf("reading the range proof of [%d, %d) in a tree of size %d: %d hashes for %d indexes", first, end, size, len(hashes), len(idx))
	}
	p := RangeProof{Left: hashes[:len(left):len(left)], Right: hashes[len(left):]}
	if len(p.Left) == 0 {
		p.Left = nil
	}
	if len(p.Right) == 0 {
		p.Right = nil
	}
	return p, nil
}

// VerifyRange checks that leafHashes are the leaves of
// [first, first+len(leafHashes)) in the tree of size whose root is root,
// by the proof p.
func VerifyRange(size, first int64, leafHashes []tlog.Hash, p RangeProof, root tlog.Hash) error {
	got, err := RangeRoot(size, first, leafHashes, p)
	if err != nil {
		return err
	}
	if got != root {
		return fmt.Errorf("%w: the leaves [%d, %d) do not match the tree of size %d", ErrRangeProof, first, first+int64(len(leafHashes)), size)
	}
	return nil
}
