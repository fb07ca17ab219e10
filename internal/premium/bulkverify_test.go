package premium

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/store"
)

func ids(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%q", fmt.Sprintf("id%d", i))
	}
	return `{"ids":[` + strings.Join(parts, ",") + `]}`
}

func TestParseBulkRequest(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int // 0: accepted
		n          int
	}{
		{"one", `{"ids":["a"]}`, 0, 1},
		{"whitespace", " \n{ \"ids\" : [ \"a\" , \"b\" ] }\n", 0, 2},
		{"1000", ids(1000), 0, 1000},
		{"duplicates kept", `{"ids":["a","a","b"]}`, 0, 3},
		{"empty string id", `{"ids":[""]}`, 0, 1},
		{"escapes", `{"ids":["\u0041\n"]}`, 0, 1},
		{"zero", `{"ids":[]}`, 422, 0},
		{"1001", ids(1001), 422, 0},
		{"empty body", ``, 400, 0},
		{"not json", `ids=a`, 400, 0},
		{"truncated", `{"ids":["a"`, 400, 0},
		{"trailing garbage", `{"ids":["a"]} x`, 400, 0},
		{"two objects", `{"ids":["a"]}{"ids":["b"]}`, 400, 0},
		{"array body", `["a"]`, 400, 0},
		{"null body", `null`, 400, 0},
		{"string body", `"a"`, 400, 0},
		{"missing ids", `{}`, 400, 0},
		{"ids null", `{"ids":null}`, 400, 0},
		{"ids string", `{"ids":"a"}`, 400, 0},
		{"ids object", `{"ids":{"a":1}}`, 400, 0},
		{"number id", `{"ids":[1]}`, 400, 0},
		{"null id", `{"ids":["a",null]}`, 400, 0},
		{"bool id", `{"ids":[true]}`, 400, 0},
		{"object id", `{"ids":[{"id":"a"}]}`, 400, 0},
		{"nested array id", `{"ids":[["a"]]}`, 400, 0},
		{"unknown field", `{"ids":["a"],"extra":1}`, 400, 0},
		{"case-folded field", `{"IDS":["a"]}`, 400, 0},
		{"non-string among 1001", `{"ids":[1` + strings.Repeat(`,"a"`, 1000) + `]}`, 400, 0},
	} {
		got, err := ParseBulkRequest([]byte(tc.body))
		status := 0
		if err != nil {
			e, ok := apierror.As(err)
			if !ok {
				t.Errorf("%s: not an API error: %v", tc.name, err)
				continue
			}
			status = e.Status
			if (status == 422) != (e.Code == apierror.CodeBatchLimitExceeded) {
				t.Errorf("%s: status %d with code %s", tc.name, status, e.Code)
			}
		}
		if status != tc.status || len(got) != tc.n {
			t.Errorf("%s: status %d, %d ids (%v); want %d, %d", tc.name, status, len(got), err, tc.status, tc.n)
		}
	}
	got, _ := ParseBulkRequest([]byte(`{"ids":["b","a","b"]}`))
	if !slices.Equal(got, []string{"b", "a", "b"}) {
		t.Fatalf("order or duplicates lost: %v", got)
	}
}

// FuzzParseBulkRequest: any body is either accepted with 1..1000 ids that
// the standard decoder agrees on, or refused with 400 or 422, never a
// panic or another status.
func FuzzParseBulkRequest(f *testing.F) {
	for _, s := range []string{`{"ids":["a"]}`, `{"ids":[]}`, `{"ids":[1]}`, `{"ids":null}`, `{"ids":["a",null]}`,
		`{"ids":"a"}`, `{"IDS":["a"]}`, `{"ids":["a"],"ids":["b","c"]}`, `{"ids":["\ud800"]}`, ` {"ids" : [ "a" ] } `,
		`{"ids":[["a"]]}`, `[]`, `null`, ``, `{"ids":["a"]}x`, ids(1000), ids(1001)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := ParseBulkRequest(body)
		if err != nil {
			e, ok := apierror.As(err)
			if !ok || (e.Status != http.StatusBadRequest && e.Status != http.StatusUnprocessableEntity) {
				t.Fatalf("%q: error %v", body, err)
			}
			if e.Status == http.StatusUnprocessableEntity {
				// A batch-size refusal is only for a well-formed array of strings.
				var ref struct {
					IDs []string `json:"ids"`
				}
				if json.Unmarshal(body, &ref) != nil || (len(ref.IDs) >= 1 && len(ref.IDs) <= MaxBulkIDs) {
					t.Fatalf("%q: 422 for a body that is not a well-formed batch of the wrong size", body)
				}
			}
			return
		}
		if len(got) < 1 || len(got) > MaxBulkIDs {
			t.Fatalf("%q: accepted %d ids", body, len(got))
		}
		var ref struct {
			IDs []string `json:"ids"`
		}
		if err := json.Unmarshal(body, &ref); err != nil {
			t.Fatalf("%q: accepted, but encoding/json refuses it: %v", body, err)
		}
		if !slices.Equal(ref.IDs, got) {
			t.Fatalf("%q: got %q, encoding/json reads %q", body, got, ref.IDs)
		}
		// What we accept, we accept again after a round trip.
		again, err := ParseBulkRequest(mustJSON(t, map[string][]string{"ids": got}))
		if err != nil || !slices.Equal(again, got) {
			t.Fatalf("%q: round trip %q %v", body, again, err)
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCanonicalPDA(t *testing.T) {
	for id, want := range map[string]bool{
		"9rhhxmdYQuYLCyDBRV2nPNC1BLEdE223gV7AM4AiLcC5": true,
		"11111111111111111111111111111111":             true,
		"":                                             false,
		"nope":                                         false,
		"9rhhxmdYQuYLCyDBRV2nPNC1BLEdE223gV7AM4AiLcC0":  false, // 0 is not base58
		"9rhhxmdYQuYLCyDBRV2nPNC1BLEdE223gV7AM4AiLcC5 ": false,
		strings.Repeat("z", 44):                         false, // more than 32 bytes
	} {
		if canonicalPDA(id) != want {
			t.Errorf("%q: %v", id, !want)
		}
	}
}

func signedRow(t testing.TB, seed byte) store.VerifyRow {
	t.Helper()
	key := ed25519.NewKeyFromSeed(bytesOf(seed, 32))
	r := store.VerifyRow{PDA: fmt.Sprintf("pda%d", seed), ActionHash: sha256.Sum256([]byte{seed})}
	copy(r.AgentID[:], key.Public().(ed25519.PublicKey))
	copy(r.Signature[:], ed25519.Sign(key, r.ActionHash[:]))
	return r
}

func bytesOf(b byte, n int) []byte { return []byte(strings.Repeat(string(rune(b)), n))[:n] }

func TestVerifierRechecksChangedRecords(t *testing.T) {
	for _, memo := range []int{0, 3, 1000} {
		v := newVerifier(memo)
		rows := make([]store.VerifyRow, 40) // enough to run in parallel
		for i := range rows {
			rows[i] = signedRow(t, byte(i))
		}
		rows[7].ActionHash[0] ^= 1        // tampered hash
		rows[9].Signature[3] ^= 1         // tampered signature
		rows[11].AgentID = [32]byte{}     // another key
		for pass := 0; pass < 3; pass++ { // memo hits must agree with fresh checks
			got := v.checkAll(rows)
			for i, ok := range got {
				want := i != 7 && i != 9 && i != 11
				if ok != want {
					t.Fatalf("memo %d pass %d row %d: %v", memo, pass, i, ok)
				}
			}
		}
		// Tampering a row that verified before is caught despite the memo.
		rows[0].ActionHash[5] ^= 1
		if v.checkAll(rows)[0] {
			t.Fatalf("memo %d: tampered row still verifies", memo)
		}
		if memo > 0 && len(v.memo) > memo {
			t.Fatalf("memo grew to %d entries, bound %d", len(v.memo), memo)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want Config
		bad  bool
	}{
		{env: nil},
		{env: map[string]string{"ATTESTD_REPORT_BURST_PER_MINUTE": "50", "ATTESTD_REPORT_LONG_GAP": "2h",
			"ATTESTD_REPORT_MAX_ANOMALIES": "10", "ATTESTD_REPORT_RECHECK": "20", "ATTESTD_VERIFY_MEMO_ENTRIES": "0"},
			want: Config{Rules: Rules{BurstPerMinute: 50, LongGapSeconds: 7200, MaxAnomaliesPerKind: 10, RecheckNewest: 20}, MemoEntries: -1}},
		{env: map[string]string{"ATTESTD_VERIFY_MEMO_ENTRIES": "5000"}, want: Config{MemoEntries: 5000}},
		{env: map[string]string{"ATTESTD_REPORT_BURST_PER_MINUTE": "0"}, bad: true},
		{env: map[string]string{"ATTESTD_REPORT_LONG_GAP": "10s"}, bad: true},
		{env: map[string]string{"ATTESTD_REPORT_LONG_GAP": "a while"}, bad: true},
		{env: map[string]string{"ATTESTD_REPORT_RECHECK": "100000"}, bad: true},
		{env: map[string]string{"ATTESTD_VERIFY_MEMO_ENTRIES": "-1"}, bad: true},
	} {
		got, err := ConfigFromEnv(func(k string) string { return tc.env[k] })
		if (err != nil) != tc.bad {
			t.Errorf("%v: %v", tc.env, err)
			continue
		}
		if !tc.bad && (got.Rules != tc.want.Rules || got.MemoEntries != tc.want.MemoEntries) {
			t.Errorf("%v: got %+v", tc.env, got)
		}
	}
}

func TestNewAppliesDefaultRules(t *testing.T) {
	h := &Handler{}
	if _, err := New(Deps{}); err == nil {
		t.Fatal("New without store and cache")
	}
	_ = h
	if DefaultRules.BurstPerMinute <= 100 {
		t.Fatal("a single transaction (100 events) must not be a burst")
	}
	if time.Duration(DefaultRules.LongGapSeconds)*time.Second != 24*time.Hour {
		t.Fatal("documented long gap is 24h")
	}
}

func TestVerifierStream(t *testing.T) {
	v := newVerifier(100)
	var rows []store.VerifyRow
	for i := 0; i < 300; i++ {
		r := signedRow(t, byte(i))
		r.PDA = fmt.Sprintf("pda-%d", i)
		if i%7 == 0 {
			r.Signature[1] ^= 1
		}
		rows = append(rows, r)
	}
	found, ok, err := v.stream(func(emit func(store.VerifyRow)) error {
		for _, r := range rows {
			emit(r)
		}
		return nil
	})
	if err != nil || len(found) != len(rows) || len(ok) != len(rows) {
		t.Fatalf("%d rows, %d results, %v", len(found), len(ok), err)
	}
	for i, r := range rows {
		if ok[r.PDA] != (i%7 != 0) {
			t.Fatalf("row %d: %v", i, ok[r.PDA])
		}
	}
	boom := fmt.Errorf("connection lost")
	if _, _, err := v.stream(func(emit func(store.VerifyRow)) error { emit(rows[0]); return boom }); err != boom {
		t.Fatalf("error not passed on: %v", err)
	}
}
