package verifier

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/mr-tron/base58"
)

// fullHistory1000 is a full history of 1000 records shaped as the example
// answer, with random hashes, signatures and addresses (the incompressible
// part of a real one).
func fullHistory1000(t testing.TB) []byte {
	t.Helper()
	raw, err := os.ReadFile("examples/full-history.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var items []map[string]any
	if err := json.Unmarshal(doc["data"], &items); err != nil || len(items) == 0 {
		t.Fatalf("example data: %v", err)
	}
	rnd := func(n int) []byte { b := make([]byte, n); _, _ = rand.Read(b); return b }
	out := make([]map[string]any, 1000)
	for i := range out {
		it := map[string]any{}
		for k, v := range items[0] {
			it[k] = v
		}
		it["actionHash"] = hex.EncodeToString(rnd(32))
		it["agentSignature"], it["txSignature"], it["pda"] = base58.Encode(rnd(64)), base58.Encode(rnd(64)), base58.Encode(rnd(32))
		it["slot"] = 100_000 + i
		out[i] = it
	}
	b, _ := json.Marshal(out)
	doc["data"] = b
	full, _ := json.Marshal(doc)
	return full
}

// The kept form of the largest premium answer is far below the bounds,
// and decodes back to the same bytes.
func TestKeptFormOfTheLargestAnswer(t *testing.T) {
	plain := fullHistory1000(t)
	z := gzipBytes(plain)
	if len(z) > MaxAnswerBytes/4 || len(plain) > MaxAnswerPlain/16 {
		t.Fatalf("a 1000-record history: %d bytes, %d kept", len(plain), len(z))
	}
	k := &Kept{body: z, plain: len(plain)}
	got, gz, err := k.Body(true)
	if err != nil || gz || !bytes.Equal(got, plain) {
		t.Fatalf("decoded %v %v", gz, err)
	}
	// A kept body whose length is not the recorded one is refused.
	if _, _, err := (&Kept{body: z, plain: len(plain) - 1}).Body(false); err == nil {
		t.Fatal("a kept body of another length decoded")
	}
	if _, err := gunzipBounded([]byte("not gzip")); err == nil {
		t.Fatal("garbage decoded")
	}
	t.Logf("1000-record full history: %d bytes plain, %d kept (%.0f%%)", len(plain), len(z), 100*float64(len(z))/float64(len(plain)))
}

// BenchmarkKeepCompress is the CPU a paid answer's kept form costs (a
// 1000-record full history sent plain; a gzip answer is kept as sent).
func BenchmarkKeepCompress(b *testing.B) {
	plain := fullHistory1000(b)
	b.SetBytes(int64(len(plain)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = gzipBytes(plain)
	}
}
