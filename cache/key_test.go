package cache

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/store"
)

// part is one piece of a request as the key builder sees it.
type part struct {
	kind byte // 's' string, 'i' int, '-' absent, 't' time
	s    string
	n    int64
	t    time.Time
}

func encodeParts(parts []part) string {
	k := NewKey("k")
	for _, p := range parts {
		switch p.kind {
		case 's':
			k = k.String(p.s)
		case 'i':
			k = k.Int(p.n)
		case '-':
			k = k.Absent()
		case 't':
			t := p.t
			k = k.Time(&t)
		}
	}
	return k.Key()
}

// decodeParts turns fuzz bytes into a request: every byte value chooses a
// kind and its payload, so strings hold separators and digits, ints and
// times reach their extremes.
func decodeParts(b []byte) []part {
	var out []part
	for len(b) > 0 {
		op := b[0] % 4
		b = b[1:]
		switch op {
		case 0:
			n := 0
			if len(b) > 0 {
				n = int(b[0]) % 8
				b = b[1:]
			}
			n = min(n, len(b))
			out = append(out, part{kind: 's', s: string(b[:n])})
			b = b[n:]
		case 1, 3:
			var v [8]byte
			m := copy(v[:], b)
			b = b[m:]
			x := int64(binary.LittleEndian.Uint64(v[:]))
			if op == 1 {
				out = append(out, part{kind: 'i', n: x})
			} else {
				// Any second from year 1 to 9999, any nanosecond.
				sec := int64(uint64(x)%uint64(maxSec-minSec)) + minSec
				out = append(out, part{kind: 't', t: time.Unix(sec, int64(uint64(x)>>34)%1e9).UTC()})
			}
		case 2:
			out = append(out, part{kind: '-'})
		}
	}
	return out
}

var (
	minSec = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	maxSec = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
)

func sameParts(a, b []part) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].kind != b[i].kind || a[i].s != b[i].s || a[i].n != b[i].n || !a[i].t.Equal(b[i].t) {
			return false
		}
	}
	return true
}

// FuzzKeyInjective: two requests share a key only when they are the same
// request.
func FuzzKeyInjective(f *testing.F) {
	f.Add([]byte{0, 3, 'a', ':', 'b'}, []byte{0, 1, 'a', 0, 1, 'b'})
	f.Add([]byte{2, 1, 0, 0, 0, 0, 0, 0, 0, 0}, []byte{1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{3, 255, 255, 255, 255, 255, 255, 255, 127}, []byte{3, 0, 0, 0, 0, 0, 0, 0, 128})
	f.Fuzz(func(t *testing.T, x, y []byte) {
		a, b := decodeParts(x), decodeParts(y)
		if (encodeParts(a) == encodeParts(b)) != sameParts(a, b) {
			t.Fatalf("requests %+v and %+v: keys %q and %q", a, b, encodeParts(a), encodeParts(b))
		}
	})
}

// TestKeyDistinguishes holds the cases that collided before keys were
// built this way: absent against the zero or epoch instant, instants
// nanoseconds overflow, separators inside values.
func TestKeyDistinguishes(t *testing.T) {
	epoch, zero := time.Unix(0, 0).UTC(), time.Time{}
	far1 := time.Date(2262, 4, 12, 0, 0, 0, 0, time.UTC) // beyond int64 nanoseconds
	far2 := far1.Add(time.Duration(math.MaxInt64))
	keys := map[string]string{}
	add := func(name string, k Key) {
		key := k.Key()
		if other, dup := keys[key]; dup {
			t.Errorf("%s and %s share the key %q", name, other, key)
		}
		keys[key] = name
	}
	add("open", NewKey("l").Range(store.Range{}))
	add("to epoch", NewKey("l").Range(store.Range{To: &epoch}))
	add("to zero", NewKey("l").Range(store.Range{To: &zero}))
	add("from epoch", NewKey("l").Range(store.Range{From: &epoch}))
	add("to far1", NewKey("l").Range(store.Range{To: &far1}))
	add("to far2", NewKey("l").Range(store.Range{To: &far2}))
	add("a:b|c", NewKey("l").String("a:b").String("c"))
	add("a|b:c", NewKey("l").String("a").String("b:c"))
	add("kind l:x", NewKey("l:x"))
	add("kind l, x", NewKey("l").String("x"))
	add("int 1", NewKey("l").Int(1))
	add("absent", NewKey("l").Absent())
}

// TestKeyRandomRequests: a property test over random requests with many
// near-duplicates: equal keys exactly for equal requests.
func TestKeyRandomRequests(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[string][]part{}
	for i := 0; i < 200_000; i++ {
		b := make([]byte, r.IntN(24))
		for j := range b {
			b[j] = byte(r.IntN(6)) // small alphabet: many collisions to try
		}
		p := decodeParts(b)
		k := encodeParts(p)
		if prev, ok := seen[k]; ok && !sameParts(prev, p) {
			t.Fatalf("%+v and %+v share %q", prev, p, k)
		}
		seen[k] = p
	}
	if !reflect.DeepEqual(decodeParts(nil), []part(nil)) {
		t.Fatal("empty input")
	}
}

// TestKeyOnTheStack: a key that stays in its function costs no
// allocation, up to its first 96 bytes (what Cache.Peek lookups rely on).
func TestKeyOnTheStack(t *testing.T) {
	id := "ymLLn37UUtDx8XzPPj4mu6FDf7F2TqvbveDo3rW9joC"
	var n int
	if allocs := testing.AllocsPerRun(100, func() {
		n += len(NewKey("attestation").String(id).Int(20).Absent().Bytes())
	}); allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
	want := NewKey("attestation").String(id).Int(20).Absent().Key()
	if got := string(NewKey("attestation").String(id).Int(20).Absent().Bytes()); got != want {
		t.Fatalf("Bytes %q, Key %q", got, want)
	}
}
