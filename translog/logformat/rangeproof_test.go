package logformat

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// rangeTree is an in-memory tlog tree: its leaf hashes and stored hashes.
type rangeTree struct {
	leaves []tlog.Hash
	stored []tlog.Hash
}

// newRangeTree builds a tree of n leaves ("leaf 0", "leaf 1", ...).
func newRangeTree(t testing.TB, n int64) *rangeTree {
	t.Helper()
	tr := &rangeTree{}
	for i := range n {
		tr.leaves = append(tr.leaves, tlog.RecordHash(fmt.Appendf(nil, "leaf %d", i)))
		h, err := tlog.StoredHashes(i, fmt.Appendf(nil, "leaf %d", i), tr.reader(i))
		if err != nil {
			t.Fatal(err)
		}
		tr.stored = append(tr.stored, h...)
	}
	return tr
}

// reader reads the stored hashes of the tree of size: any index beyond
// them is an error, so a proof cannot use what the tree does not have.
func (tr *rangeTree) reader(size int64) tlog.HashReader {
	return tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		n := tlog.StoredHashCount(size)
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x < 0 || x >= n || x >= int64(len(tr.stored)) {
				return nil, fmt.Errorf("no stored hash %d in a tree of size %d", x, size)
			}
			out[i] = tr.stored[x]
		}
		return out, nil
	})
}

func TestRangeProofNodes(t *testing.T) {
	for _, tt := range []struct {
		size, first, end int64
		left, right      []Node
	}{
		{1, 0, 1, nil, nil},
		{7, 0, 1, nil, []Node{{0, 1}, {1, 1}, {1, 2}, {0, 6}}},
		{7, 6, 7, []Node{{2, 0}, {1, 2}}, nil},
		{8, 3, 5, []Node{{1, 0}, {0, 2}}, []Node{{0, 5}, {1, 3}}},
		{13, 5, 6, []Node{{2, 0}, {0, 4}}, []Node{{1, 3}, {2, 2}, {0, 12}}},
		{16, 0, 16, nil, nil},
		{70, 64, 70, []Node{{6, 0}}, nil},
		{70, 1, 2, []Node{{0, 0}}, []Node{{1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {2, 16}, {1, 34}}},
		{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64, leftOf(math.MaxInt64 - 1), nil},
	} {
		left, right, err := RangeProofNodes(tt.size, tt.first, tt.end)
		if err != nil || !slices.Equal(left, tt.left) || !slices.Equal(right, tt.right) {
			t.Errorf("RangeProofNodes(%d, %d, %d) = %v, %v, %v; want %v, %v", tt.size, tt.first, tt.end, left, right, err, tt.left, tt.right)
		}
	}
	for _, tt := range [][3]int64{
		{-1, 0, 1}, {0, 0, 1}, {5, 2, 2}, {5, 3, 2}, {5, -1, 2}, {5, 4, 6}, {math.MinInt64, 0, 1}, {5, math.MinInt64, 1},
	} {
		if left, right, err := RangeProofNodes(tt[0], tt[1], tt[2]); err == nil || !errors.Is(err, ErrRangeProof) {
			t.Errorf("RangeProofNodes(%d, %d, %d) = %v, %v, %v; want an ErrRangeProof", tt[0], tt[1], tt[2], left, right, err)
		}
	}
}

// leftOf is the compact range of [0, first), by its definition.
func leftOf(first int64) []Node {
	var out []Node
	for l := 62; l >= 0; l-- {
		if first>>l&1 == 1 {
			out = append(out, Node{l, (first >> l) - 1})
		}
	}
	return out
}

// checkCover fails unless left, the leaves of [first, end) and right are
// complete subtrees of the tree of size covering it left to right.
func checkCover(t *testing.T, size, first, end int64, left, right []Node) {
	t.Helper()
	p := int64(0)
	for _, n := range slices.Concat(left, []Node{{-1, 0}}, right) {
		if n.Level == -1 {
			if p != first {
				t.Fatalf("size %d, [%d, %d): the left part ends at %d", size, first, end, p)
			}
			p = end
			continue
		}
		if n.Index<<n.Level != p || (n.Index+1)<<n.Level > size {
			t.Fatalf("size %d, [%d, %d): node %v at %d", size, first, end, n, p)
		}
		p += 1 << n.Level
	}
	if p != size {
		t.Fatalf("size %d, [%d, %d): the right part ends at %d", size, first, end, p)
	}
	if len(left)+len(right) > MaxRangeProofHashes {
		t.Fatalf("size %d, [%d, %d): %d nodes", size, first, end, len(left)+len(right))
	}
}

// TestRangeProof proves and verifies every range of every tree of up to
// 70 leaves, and checks that tampering with any part of it fails (with
// -short, in trees of up to 24 leaves).
func TestRangeProof(t *testing.T) {
	const maxSize = 70
	full := newRangeTree(t, maxSize)
	for size := int64(1); size <= maxSize; size++ {
		root, err := tlog.TreeHash(size, full.reader(size))
		if err != nil {
			t.Fatal(err)
		}
		for first := range size {
			for end := first + 1; end <= size; end++ {
				left, right, err := RangeProofNodes(size, first, end)
				if err != nil {
					t.Fatal(err)
				}
				checkCover(t, size, first, end, left, right)
				p, err := ProveRange(size, first, end, full.reader(size))
				if err != nil {
					t.Fatalf("ProveRange(%d, %d, %d): %v", size, first, end, err)
				}
				leaves := full.leaves[first:end]
				if got, err := RangeRoot(size, first, leaves, p); err != nil || got != root {
					t.Fatalf("RangeRoot(%d, %d, %d leaves) = %v, %v; want %v", size, first, len(leaves), got, err, root)
				}
				if err := VerifyRange(size, first, leaves, p, root); err != nil {
					t.Fatalf("VerifyRange(%d, %d, %d leaves): %v", size, first, len(leaves), err)
				}
				if !testing.Short() || size <= 24 {
					checkTampered(t, size, first, leaves, p, root)
				}
			}
		}
	}
}

// checkTampered fails unless every change of a good proof's input fails
// to verify.
func checkTampered(t *testing.T, size, first int64, leaves []tlog.Hash, p RangeProof, root tlog.Hash) {
	t.Helper()
	type bad struct {
		name   string
		first  int64
		leaves []tlog.Hash
		p      RangeProof
	}
	changed := slices.Clone(leaves)
	changed[len(changed)/2][7] ^= 1
	cases := []bad{
		{"a changed leaf", first, changed, p},
		{"the last leaf dropped", first, leaves[:len(leaves)-1], p},
		{"first+1", first + 1, leaves, p},
		{"first-1", first - 1, leaves, p},
		{"no proof", first, leaves, RangeProof{}},
	}
	if len(leaves) >= 2 {
		swapped := slices.Clone(leaves)
		swapped[0], swapped[1] = swapped[1], swapped[0]
		cases = append(cases, bad{"a swapped pair", first, swapped, p})
	}
	if n := len(p.Left); n > 0 {
		q := RangeProof{Left: slices.Clone(p.Left), Right: p.Right}
		q.Left[n/2][0] ^= 0x80
		cases = append(cases, bad{"a left hash tampered", first, leaves, q})
	}
	if n := len(p.Right); n > 0 {
		q := RangeProof{Left: p.Left, Right: slices.Clone(p.Right)}
		q.Right[n/2][31] ^= 1
		cases = append(cases, bad{"a right hash tampered", first, leaves, q})
	}
	if len(p.Left)+len(p.Right) > 0 {
		cases = append(cases, bad{"left and right swapped", first, leaves, RangeProof{Left: p.Right, Right: p.Left}},
			bad{"an extra hash", first, leaves, RangeProof{Left: p.Left, Right: append(slices.Clone(p.Right), root)}})
	}
	for _, c := range cases {
		if len(c.p.Left) == len(p.Left) && len(c.p.Right) == len(p.Right) && c.first == first && slices.Equal(c.leaves, leaves) &&
			slices.Equal(c.p.Left, p.Left) && slices.Equal(c.p.Right, p.Right) {
			continue // "no proof" of a whole tree, "swapped" equal halves: unchanged
		}
		if err := VerifyRange(size, c.first, c.leaves, c.p, root); err == nil || !errors.Is(err, ErrRangeProof) {
			t.Fatalf("size %d, first %d, %d leaves, %s: VerifyRange = %v, want an ErrRangeProof", size, first, len(leaves), c.name, err)
		}
	}
}

func TestRangeRootErrors(t *testing.T) {
	h := tlog.RecordHash([]byte("x"))
	long := make([]tlog.Hash, 64)
	for _, tt := range []struct {
		name        string
		size, first int64
		leaves      []tlog.Hash
		p           RangeProof
	}{
		{"negative size", -1, 0, []tlog.Hash{h}, RangeProof{}},
		{"empty tree", 0, 0, []tlog.Hash{h}, RangeProof{}},
		{"no leaves", 4, 1, nil, RangeProof{Left: []tlog.Hash{h}}},
		{"negative first", 4, -1, []tlog.Hash{h}, RangeProof{}},
		{"first at size", 4, 4, []tlog.Hash{h}, RangeProof{}},
		{"beyond size", 4, 3, []tlog.Hash{h, h}, RangeProof{}},
		{"largest first", math.MaxInt64, math.MaxInt64, []tlog.Hash{h}, RangeProof{}},
		{"too few left", 4, 1, []tlog.Hash{h}, RangeProof{Right: []tlog.Hash{h}}},
		{"too many right", 4, 1, []tlog.Hash{h}, RangeProof{Left: []tlog.Hash{h}, Right: []tlog.Hash{h, h}}},
		{"too long", 4, 1, []tlog.Hash{h}, RangeProof{Left: long, Right: long}},
		{"too long and huge", math.MaxInt64, 0, []tlog.Hash{h}, RangeProof{Left: make([]tlog.Hash, 127)}},
	} {
		if got, err := RangeRoot(tt.size, tt.first, tt.leaves, tt.p); err == nil || !errors.Is(err, ErrRangeProof) {
			t.Errorf("%s: RangeRoot = %v, %v; want an ErrRangeProof", tt.name, got, err)
		}
	}
}

func TestProveRangeErrors(t *testing.T) {
	tr := newRangeTree(t, 8)
	short := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) { return make([]tlog.Hash, len(idx)-1), nil })
	for _, tt := range []struct {
		name             string
		size, first, end int64
		r                tlog.HashReader
	}{
		{"empty range", 8, 3, 3, tr.reader(8)},
		{"beyond size", 8, 3, 9, tr.reader(8)},
		{"negative size", -8, 3, 9, tr.reader(8)},
		{"hashes the reader has not", 9, 3, 4, tr.reader(8)},
		{"a short read", 8, 3, 4, short},
		{"larger than 2^62", 1<<62 + 1, 0, 1, tr.reader(8)},
	} {
		if p, err := ProveRange(tt.size, tt.first, tt.end, tt.r); err == nil {
			t.Errorf("%s: ProveRange(%d, %d, %d) = %+v, want an error", tt.name, tt.size, tt.first, tt.end, p)
		}
	}
	if p, err := ProveRange(8, 0, 8, short); err != nil || p.Left != nil || p.Right != nil {
		t.Errorf("ProveRange of the whole tree = %+v, %v; want an empty proof", p, err)
	}
}

// FuzzRangeRoot: RangeRoot never panics, whatever the size, first, number
// of leaves and proof lengths; what it accepts has the hashes
// RangeProofNodes names; and in a tree of up to 128 leaves, a proof
// ProveRange reads gives the tree's root.
func FuzzRangeRoot(f *testing.F) {
	for _, s := range [][6]int64{
		{7, 0, 1, 0, 4, 0}, {7, 6, 1, 2, 0, 1}, {70, 1, 1, 1, 7, 2}, {1, 0, 1, 0, 0, 3}, {0, 0, 0, 0, 0, 4},
		{-1, 0, 1, 0, 0, 5}, {math.MaxInt64, math.MaxInt64 - 1, 1, 62, 0, 6}, {math.MaxInt64, 0, 255, 0, 127, 7},
		{1 << 62, 1<<62 - 1, 1, 62, 1, 8}, {math.MinInt64, math.MinInt64, 3, 200, 200, 9}, {128, 127, 2, 7, 0, 10},
	} {
		f.Add(s[0], s[1], uint8(s[2]), uint8(s[3]), uint8(s[4]), byte(s[5]))
	}
	const maxTree = 128
	tr := newRangeTree(f, maxTree)
	roots := make([]tlog.Hash, maxTree+1)
	for size := int64(1); size <= maxTree; size++ {
		h, err := tlog.TreeHash(size, tr.reader(size))
		if err != nil {
			f.Fatal(err)
		}
		roots[size] = h
	}
	f.Fuzz(func(t *testing.T, size, first int64, nLeaves, nLeft, nRight uint8, seed byte) {
		hash := func(i int) tlog.Hash { return tlog.RecordHash([]byte{seed, byte(i), byte(i >> 8)}) }
		leaves := make([]tlog.Hash, nLeaves)
		for i := range leaves {
			leaves[i] = hash(i)
		}
		p := RangeProof{Left: make([]tlog.Hash, nLeft), Right: make([]tlog.Hash, nRight)}
		for i := range p.Left {
			p.Left[i] = hash(300 + i)
		}
		for i := range p.Right {
			p.Right[i] = hash(600 + i)
		}
		root, err := RangeRoot(size, first, leaves, p)
		if verr := VerifyRange(size, first, leaves, p, root); (err == nil) != (verr == nil) {
			t.Fatalf("RangeRoot: %v, but VerifyRange of its root: %v", err, verr)
		}
		if err == nil {
			left, right, err := RangeProofNodes(size, first, first+int64(nLeaves))
			if err != nil || len(left) != int(nLeft) || len(right) != int(nRight) {
				t.Fatalf("RangeRoot(%d, %d, %d leaves) took %d+%d hashes; the nodes are %v, %v, %v", size, first, nLeaves, nLeft, nRight, left, right, err)
			}
		}
		end := first + int64(nLeaves)
		if size < 1 || size > maxTree || first < 0 || nLeaves == 0 || end > size {
			return
		}
		p, err = ProveRange(size, first, end, tr.reader(size))
		if err != nil {
			t.Fatalf("ProveRange(%d, %d, %d): %v", size, first, end, err)
		}
		if err := VerifyRange(size, first, tr.leaves[first:end], p, roots[size]); err != nil {
			t.Fatalf("VerifyRange(%d, %d, %d leaves): %v", size, first, nLeaves, err)
		}
	})
}
