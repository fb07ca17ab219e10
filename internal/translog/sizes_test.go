package translog_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/translog"
	"github.com/attestd/attestd/translog/logformat"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// TestProofsAtSizes grows a real tree in PostgreSQL through the sizes
// where RFC 6962 trees change shape (1, 2, 3, 255, 256, 257, 65,537) and,
// at each, checks as a client that trusts only the verifier key: the
// signed checkpoint; inclusion proofs of the first, the last and random
// leaves; consistency from every earlier checkpoint; the tiles (a
// tlog.TileHashReader over HTTP proves the same records) and the entry
// bundle that holds the last leaf.
func TestProofsAtSizes(t *testing.T) {
	le := newLogEnv(t, 4)
	ctx := context.Background()
	v, err := note.NewVerifier(le.key.VerifierKey)
	testenv.Must(t, err, "verifier")
	rng := rand.New(rand.NewPCG(24, 24))
	var seen []logformat.Checkpoint
	var have int64
	for _, size := range []int64{1, 2, 3, 255, 256, 257, 65537} {
		le.bulk(t, int(size-have), attestation.Finalized)
		have = size
		if c := le.appendAll(t); c.Size != size {
			t.Fatalf("checkpoint of size %d, want %d", c.Size, size)
		}
		text := waitCheckpoint(t, le.node, size)
		cp, err := logformat.OpenCheckpoint([]byte(text), v)
		testenv.Must(t, err, "open checkpoint of size %d", size)
		if cp.Origin != le.key.Name || cp.Size != size {
			t.Fatalf("checkpoint %+v", cp)
		}
		// The root is the RFC 6962 root of the leaves as stored.
		if root := recomputeRoot(t, le, size); root != cp.Root {
			t.Fatalf("size %d: checkpoint root %s, leaves give %s", size, cp.Root, root)
		}
		idxs := []int64{0, size - 1}
		for range 5 {
			idxs = append(idxs, rng.Int64N(size))
		}
		tiles := tlog.TileHashReader(tlog.Tree{N: size, Hash: cp.Root}, &httpTiles{t: t, base: le.node.Root + "/log/tile/"})
		for _, idx := range idxs {
			pda := pdaAt(t, le, idx)
			at, err := le.st.GetAttestation(ctx, pda)
			testenv.Must(t, err, "attestation %s", pda)
			var p proofAnswer
			r := le.node.Get(t, "/attestations/"+pda+"/proof")
			if r.Status != http.StatusOK {
				t.Fatalf("size %d leaf %d: %d %s", size, idx, r.Status, r.Body)
			}
			r.JSON(t, &p)
			if p.Data.LeafIndex != idx || p.Data.TreeSize != size {
				t.Fatalf("size %d leaf %d: answer says leaf %d of %d", size, idx, p.Data.LeafIndex, p.Data.TreeSize)
			}
			if err := verifyProof(le.key.VerifierKey, p, at); err != nil {
				t.Fatalf("size %d leaf %d: %v", size, idx, err)
			}
			fromTiles, err := tlog.ProveRecord(size, idx, tiles)
			testenv.Must(t, err, "size %d leaf %d: prove from tiles", size, idx)
			if len(fromTiles) != len(p.Data.InclusionProof) {
				t.Fatalf("size %d leaf %d: tiles prove with %d hashes, the answer %d", size, idx, len(fromTiles), len(p.Data.InclusionProof))
			}
			for i := range fromTiles {
				if string(fromTiles[i][:]) != string(p.Data.InclusionProof[i]) {
					t.Fatalf("size %d leaf %d: hash %d differs between tiles and answer", size, idx, i)
				}
			}
		}
		// Consistency from every checkpoint seen before (and to itself).
		for _, old := range append(seen, cp) {
			var c struct {
				Data struct {
					From, To int64
					Proof    [][]byte
				}
			}
			r := le.node.Get(t, fmt.Sprintf("/log/consistency?from=%d&to=%d", old.Size, size))
			if r.Status != http.StatusOK {
				t.Fatalf("consistency %d..%d: %d %s", old.Size, size, r.Status, r.Body)
			}
			r.JSON(t, &c)
			proof := make(tlog.TreeProof, len(c.Data.Proof))
			for i, h := range c.Data.Proof {
				proof[i] = tlog.Hash(h)
			}
			if err := tlog.CheckTree(proof, size, cp.Root, old.Size, old.Root); err != nil {
				t.Fatalf("consistency %d..%d does not verify: %v", old.Size, size, err)
			}
			if r.Header.Get("Cache-Control") != translog.ControlImmutable {
				t.Fatalf("consistency Cache-Control %q", r.Header.Get("Cache-Control"))
			}
		}
		// The entry bundle holding the last leaf.
		last := size - 1
		et := logformat.Tile{Level: -1, N: last / 256, W: int(last%256) + 1}
		body, hdr := getTile(t, le.node.Root+"/log/tile/"+et.Path())
		leaves := parseBundle(t, body)
		if len(leaves) != et.W {
			t.Fatalf("entry bundle %s: %d leaves", et.Path(), len(leaves))
		}
		for i, leaf := range leaves {
			var want []byte
			testenv.Must(t, le.st.Pool().QueryRow(ctx, `SELECT leaf FROM log_leaves WHERE idx = $1`, et.N*256+int64(i)).Scan(&want), "leaf")
			if string(leaf) != string(want) {
				t.Fatalf("entry bundle %s: leaf %d differs", et.Path(), i)
			}
		}
		// A tile of a given width never changes: partial ones too.
		if wantCC := translog.ControlImmutable; hdr.Get("Cache-Control") != wantCC || hdr.Get("ETag") == "" {
			t.Fatalf("entry bundle %s: Cache-Control %q, ETag %q", et.Path(), hdr.Get("Cache-Control"), hdr.Get("ETag"))
		}
		seen = append(seen, cp)
	}
}

// pdaAt is the pda of leaf idx.
func pdaAt(t testing.TB, le *logEnv, idx int64) string {
	var pda string
	testenv.Must(t, le.st.Pool().QueryRow(context.Background(), `SELECT pda FROM log_leaves WHERE idx = $1`, idx).Scan(&pda), "pda of leaf %d", idx)
	return pda
}

// recomputeRoot computes the RFC 6962 root of the first size leaves as
// stored, in memory, without the stored hashes.
func recomputeRoot(t testing.TB, le *logEnv, size int64) tlog.Hash {
	rows, err := le.st.Pool().Query(context.Background(), `SELECT leaf FROM log_leaves WHERE idx < $1 ORDER BY idx`, size)
	testenv.Must(t, err, "leaves")
	defer rows.Close()
	var level []tlog.Hash
	for rows.Next() {
		var b []byte
		testenv.Must(t, rows.Scan(&b), "scan")
		level = append(level, tlog.RecordHash(b))
	}
	if int64(len(level)) != size {
		t.Fatalf("%d leaves stored, want %d", len(level), size)
	}
	return rfc6962Root(level)
}

// rfc6962Root is RFC 6962's MTH, straight from its definition.
func rfc6962Root(h []tlog.Hash) tlog.Hash {
	if len(h) == 1 {
		return h[0]
	}
	k := 1
	for k*2 < len(h) {
		k *= 2
	}
	return tlog.NodeHash(rfc6962Root(h[:k]), rfc6962Root(h[k:]))
}

// httpTiles is a tlog.TileReader over the node's tile routes.
type httpTiles struct {
	t    testing.TB
	base string
}

func (h *httpTiles) Height() int { return logformat.TileHeight }

func (h *httpTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, tl := range tiles {
		p := logformat.Tile{Level: tl.L, N: tl.N, W: tl.W}.Path()
		b, hdr := getTile(h.t, h.base+p)
		// A tile of a given width never changes: partial ones too.
		if want := translog.ControlImmutable; hdr.Get("Cache-Control") != want {
			h.t.Fatalf("tile %s: Cache-Control %q, want %q", p, hdr.Get("Cache-Control"), want)
		}
		out[i] = b
	}
	return out, nil
}

func (h *httpTiles) SaveTiles([]tlog.Tile, [][]byte) {}

// getTile GETs a tile and fails the test unless it is 200.
func getTile(t testing.TB, url string) ([]byte, http.Header) {
	t.Helper()
	res, err := http.Get(url)
	testenv.Must(t, err, "GET %s", url)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	testenv.Must(t, err, "read %s", url)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, b)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/octet-stream") {
		t.Fatalf("GET %s: Content-Type %q", url, ct)
	}
	return b, res.Header
}

// parseBundle splits an entry bundle into its leaves.
func parseBundle(t testing.TB, b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 2 {
			t.Fatalf("entry bundle: %d trailing bytes", len(b))
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+n {
			t.Fatalf("entry bundle: leaf of %d bytes, %d left", n, len(b)-2)
		}
		out = append(out, b[2:2+n])
		b = b[2+n:]
	}
	return out
}
