package app_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestLookupByActionHashAndTransaction: "who attested this payload" and
// "what did this transaction record" are filters of the list: exact
// answers (compared with SQL), any hex case, combined with the other
// filters, paged by cursor in the list's order (a hash attested 30 times,
// walked 7 at a time, each row once), cached with ETags.
func TestLookupByActionHashAndTransaction(t *testing.T) {
	t.Parallel()
	env, node := seeded(t)
	ctx := context.Background()
	// A payload attested 30 times by two agents, over two transactions.
	payload := []byte(`{"tool":"search","q":"attested often"}`)
	hash := sha256.Sum256(payload)
	var maxSlot int64
	testenv.Must(t, env.Store.Pool().QueryRow(ctx, "SELECT max(slot) FROM attestations").Scan(&maxSlot), "max slot")
	var recs []store.AttestationRecord
	for i, a := range env.Seeded.Agents[:2] {
		batch := seed.NewAttestations([]seed.Agent{a}, 15, time.Now().Add(-time.Duration(i)*time.Hour), uint64(maxSlot)+uint64(1000*(i+1)), uint64(900+i))
		for j := range batch {
			batch[j].ActionHash = hash
			copy(batch[j].Signature[:], ed25519.Sign(a.Key, hash[:]))
		}
		recs = append(recs, batch...)
	}
	if _, err := env.Store.Apply(ctx, &store.Batch{Attestations: recs}); err != nil {
		t.Fatal(err)
	}
	node.SettleEpoch(t)
	hexHash := hex.EncodeToString(hash[:])

	var all listResp
	node.Get(t, "/attestations?limit=100&actionHash="+hexHash).JSON(t, &all)
	if all.Pagination.Total != 30 || len(all.Data) != 30 {
		t.Fatalf("by hash: total %d, %d rows, want 30", all.Pagination.Total, len(all.Data))
	}
	for _, a := range all.Data {
		if a.ActionHash != hexHash {
			t.Fatalf("by hash: row %s has hash %s", a.PDA, a.ActionHash)
		}
	}
	upper := node.Get(t, "/attestations?limit=100&actionHash="+strings.ToUpper(hexHash))
	lower := node.Get(t, "/attestations?limit=100&actionHash="+hexHash)
	if upper.Status != 200 || string(upper.Body) != string(lower.Body) || upper.Header.Get("ETag") != lower.Header.Get("ETag") {
		t.Errorf("upper-case hex: %d, a different answer or tag", upper.Status)
	}
	if r := node.Do(t, http.MethodGet, "/attestations?limit=100&actionHash="+hexHash, nil, map[string]string{"If-None-Match": lower.Header.Get("ETag")}); r.Status != http.StatusNotModified {
		t.Errorf("by hash with its ETag: %d", r.Status)
	}
	// Walk by cursor: every row once, in the list's order.
	seen := map[string]bool{}
	var order []string
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		var p listResp
		path := "/attestations?limit=7&actionHash=" + hexHash
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		node.Get(t, path).JSON(t, &p)
		for _, a := range p.Data {
			if seen[a.PDA] {
				t.Fatalf("cursor walk: %s twice", a.PDA)
			}
			seen[a.PDA] = true
			order = append(order, a.PDA)
		}
		if cursor = p.Pagination.NextCursor; cursor == "" {
			break
		}
	}
	if len(order) != 30 {
		t.Fatalf("cursor walk: %d rows, want 30", len(order))
	}
	for i := range order {
		if order[i] != all.Data[i].PDA {
			t.Fatalf("cursor walk row %d: %s, the one page says %s", i, order[i], all.Data[i].PDA)
		}
	}
	// Combined: one agent's, one type's, a time range.
	agent := env.Seeded.Agents[0].PDA.String()
	var mine listResp
	node.Get(t, "/attestations?limit=100&actionHash="+hexHash+"&agentPda="+agent).JSON(t, &mine)
	if mine.Pagination.Total != 15 {
		t.Errorf("by hash and agent: %d, want 15", mine.Pagination.Total)
	}
	typ := all.Data[0].ActionType.String()
	want := count(t, env, "WHERE action_hash = $1 AND action_type = $2 AND ts >= $3", hash[:], int16(all.Data[0].ActionType), time.Now().Add(-30*time.Minute).UTC())
	var typed listResp
	node.Get(t, "/attestations?actionHash="+hexHash+"&actionType="+typ+"&from="+url.QueryEscape(time.Now().Add(-30*time.Minute).UTC().Format(time.RFC3339))).JSON(t, &typed)
	if typed.Pagination.Total != want {
		t.Errorf("by hash, type and time: %d, SQL says %d", typed.Pagination.Total, want)
	}

	// By transaction: each of the two, and a seeded one.
	var tx string
	var n int64
	testenv.Must(t, env.Store.Pool().QueryRow(ctx, `SELECT tx_signature, count(*) FROM attestations WHERE action_hash <> $1
		GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1`, hash[:]).Scan(&tx, &n), "a transaction")
	inTx := map[string]int64{} // the new records by transaction (most hold one, some several)
	for _, r := range recs {
		inTx[r.TxSignature]++
	}
	for _, c := range []struct {
		tx   string
		want int64
	}{{recs[0].TxSignature, inTx[recs[0].TxSignature]}, {recs[29].TxSignature, inTx[recs[29].TxSignature]}, {tx, n}} {
		var p listResp
		node.Get(t, "/attestations?limit=100&txSignature="+c.tx).JSON(t, &p)
		if p.Pagination.Total != c.want || int64(len(p.Data)) != c.want {
			t.Errorf("by transaction %s: total %d, %d rows, want %d", c.tx, p.Pagination.Total, len(p.Data), c.want)
		}
		for _, a := range p.Data {
			if a.TxSignature != c.tx {
				t.Errorf("by transaction %s: row of %s", c.tx, a.TxSignature)
			}
		}
	}
	// Both lookups at once, and a lookup that matches nothing.
	var both, none listResp
	node.Get(t, "/attestations?actionHash="+hexHash+"&txSignature="+recs[0].TxSignature).JSON(t, &both)
	node.Get(t, "/attestations?actionHash="+strings.Repeat("00", 32)).JSON(t, &none)
	if both.Pagination.Total != inTx[recs[0].TxSignature] || none.Pagination.Total != 0 || len(none.Data) != 0 || none.Pagination.NextCursor != "" {
		t.Errorf("hash and transaction: %d (want %d); unknown hash: %d rows, total %d", both.Pagination.Total, inTx[recs[0].TxSignature], len(none.Data), none.Pagination.Total)
	}
}

// TestLookupHostileValues: what is not a SHA-256 in hex or a base58
// signature of 64 bytes is a 400 in the envelope, never a 500 or a wider
// answer; repeated parameters too. The same values on the stream's and
// the agents' lookups.
func TestLookupHostileValues(t *testing.T) {
	t.Parallel()
	_, node := seeded(t)
	hex64 := strings.Repeat("ab", 32)
	sig := strings.Repeat("z", 87)
	bad := map[string][]string{
		"actionHash": {"", " ", "0x" + hex64, hex64[:63], hex64 + "a", hex64[:62] + "zz", hex64[:62] + "\x00\x00", hex64[:60] + "éé",
			strings.Repeat("ab", 4096), "%", hex64 + "&actionHash=" + hex64, hex64[:63] + " ", "-" + hex64[:63], strings.Repeat("０", 64)},
		"txSignature": {"", "1", strings.Repeat("1", 63), strings.Repeat("z", 89), strings.Repeat("z", 86) + "0", strings.Repeat("z", 86) + "O",
			strings.Repeat("z", 86) + "l", strings.Repeat("z", 86) + "I", strings.Repeat("z", 86) + "\x00", strings.Repeat("2", 64),
			strings.Repeat("z", 8000), sig + "&txSignature=" + sig, strings.Repeat("z", 86) + "é"},
		"operator": {"", "x", strings.Repeat("1", 45), strings.Repeat("z", 44), "0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl", "\x00"},
	}
	cases := 0
	for param, values := range bad {
		path := "/attestations"
		if param == "operator" {
			path = "/agents"
		}
		for _, v := range values {
			q := param + "=" + url.QueryEscape(v)
			if strings.Contains(v, "&") { // a repeated parameter, as sent
				q = param + "=" + v
			}
			r := node.Get(t, path+"?"+q)
			cases++
			if r.Status != http.StatusBadRequest || r.ErrorCode() != "INVALID_PARAM" {
				t.Errorf("%s %s=%.40q: %d %.200s", path, param, v, r.Status, r.Body)
			}
		}
	}
	// Good values that match nothing are an empty page, not an error.
	for _, q := range []string{"actionHash=" + hex64, "actionHash=" + strings.ToUpper(hex64), "txSignature=" + strings.Repeat("z", 87)} {
		var p listResp
		r := node.Get(t, "/attestations?"+q)
		cases++
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", q, r.Status, r.Body)
		}
		r.JSON(t, &p)
		if p.Pagination.Total != 0 || len(p.Data) != 0 {
			t.Errorf("%s: %d rows", q, len(p.Data))
		}
	}
	// Concurrent lookups of the same and of different values.
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			q := "actionHash=" + hex64
			if i%2 == 1 {
				q = "txSignature=" + strings.Repeat("z", 87)
			}
			if r := node.Get(t, "/attestations?"+q); r.Status != 200 {
				t.Errorf("concurrent %s: %d", q, r.Status)
			}
		}(i)
	}
	wg.Wait()
	t.Logf("%d hostile and boundary lookups, 16 concurrent", cases)
}

// TestAgentsByOperator: an operator's address finds its agent (its pda is
// derived from the operator's); another address finds none.
func TestAgentsByOperator(t *testing.T) {
	t.Parallel()
	env, node := seeded(t)
	a := env.Seeded.Agents[2]
	var page struct {
		Data       []struct{ PDA, Operator string }
		Pagination struct{ Total int64 }
	}
	node.Get(t, "/agents?operator="+a.Operator.String()).JSON(t, &page)
	if page.Pagination.Total != 1 || len(page.Data) != 1 || page.Data[0].PDA != a.PDA.String() || page.Data[0].Operator != a.Operator.String() {
		t.Fatalf("agents of operator %s: %+v", a.Operator, page)
	}
	node.Get(t, "/agents?operator="+a.PDA.String()).JSON(t, &page)
	if page.Pagination.Total != 0 || len(page.Data) != 0 {
		t.Errorf("an agent's pda as operator: %+v", page)
	}
}

// TestOverview: the home page's figures are what the database says: the
// counts, the last 5 minutes and 24 hours, the agents active in 24 hours,
// the busiest ones in order, the unfinalized rows; cached with an ETag.
func TestOverview(t *testing.T) {
	t.Parallel()
	env, node := seeded(t)
	ctx := context.Background()
	var maxSlot int64
	testenv.Must(t, env.Store.Pool().QueryRow(ctx, "SELECT max(slot) FROM attestations").Scan(&maxSlot), "max slot")
	now := time.Now()
	// Now: 120 of agent 1 (confirmed: more than any seeded agent attests in
	// a day), 5 of agent 0; 3 hours ago: 4 of agent 2.
	batches := []struct {
		agent, n int
		at       time.Time
		final    bool
	}{{1, 120, now, false}, {0, 5, now, true}, {2, 4, now.Add(-3 * time.Hour), true}}
	for i, b := range batches {
		recs := seed.NewAttestations([]seed.Agent{env.Seeded.Agents[b.agent]}, b.n, b.at, uint64(maxSlot)+uint64(100*(i+1)), uint64(700+i))
		if !b.final {
			for j := range recs {
				recs[j].Commitment = attestation.Confirmed
			}
		}
		if _, err := env.Store.Apply(ctx, &store.Batch{Attestations: recs}); err != nil {
			t.Fatal(err)
		}
	}
	node.SettleEpoch(t)
	r := node.Get(t, "/stats/overview")
	if r.Status != 200 || !strings.HasSuffix(string(r.Body), "}\n") {
		t.Fatalf("overview: %d %s", r.Status, r.Body)
	}
	// Cached: the same bytes again, 304 on its tag (asked at once: the
	// cache's lifetime is seconds, and the checks below take longer on a
	// loaded machine).
	if again := node.Get(t, "/stats/overview"); string(again.Body) != string(r.Body) {
		t.Errorf("a second read differs")
	}
	if c := node.Do(t, http.MethodGet, "/stats/overview", nil, map[string]string{"If-None-Match": r.Header.Get("ETag")}); c.Status != http.StatusNotModified {
		t.Errorf("overview with its tag: %d", c.Status)
	}
	var o struct {
		Data struct {
			At                                    string
			Agents, Attestations, ActiveAgents24h int64
			Rate                                  struct {
				WindowSeconds, LastWindow, Last24h int64
				PerMinuteNow, PerMinute24h         float64
			}
			TopAgents24h []struct {
				AgentPDA     string
				Attestations int64
			}
			Finality struct {
				Unfinalized         int64
				OldestUnfinalizedAt *string
			}
			Indexer *struct{ LastIndexedSlot int64 }
			Log     *struct{ Size int64 }
		}
	}
	r.JSON(t, &o)
	d := o.Data
	at, err := time.Parse(time.RFC3339, d.At)
	testenv.Must(t, err, "at")
	q := func(where string, args ...any) int64 { return count(t, env, where, args...) }
	if want := q(""); d.Attestations != want {
		t.Errorf("attestations %d, want %d", d.Attestations, want)
	}
	if want := q("WHERE ts >= $1 AND ts < $2", at.Add(-5*time.Minute), at.Add(time.Second)); d.Rate.LastWindow != want || want < 125 {
		t.Errorf("last 5 min %d, want %d (at least the 125 new)", d.Rate.LastWindow, want)
	}
	if want := q("WHERE ts >= $1 AND ts < $2", at.Add(-24*time.Hour), at.Add(time.Second)); d.Rate.Last24h != want {
		t.Errorf("last 24 h %d, want %d", d.Rate.Last24h, want)
	}
	if d.Rate.WindowSeconds != 300 || d.Rate.PerMinuteNow != float64(int64(float64(d.Rate.LastWindow)/5*10+0.5))/10 {
		t.Errorf("per minute now %v of %d in %d s", d.Rate.PerMinuteNow, d.Rate.LastWindow, d.Rate.WindowSeconds)
	}
	var active int64
	testenv.Must(t, env.Store.Pool().QueryRow(ctx, `SELECT count(DISTINCT agent_pda) FROM attestations WHERE ts >= $1`, at.Add(-24*time.Hour)).Scan(&active), "active")
	if d.ActiveAgents24h != active || active < 3 {
		t.Errorf("active agents %d, want %d", d.ActiveAgents24h, active)
	}
	rows, err := env.Store.Pool().Query(ctx, `SELECT agent_pda, count(*) FROM attestations WHERE ts >= $1 AND ts < $2
		GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 5`, at.Add(-24*time.Hour), at.Add(time.Second))
	testenv.Must(t, err, "top")
	var top []string
	for rows.Next() {
		var a string
		var n int64
		testenv.Must(t, rows.Scan(&a, &n), "scan")
		top = append(top, a+" "+itoa(n))
	}
	if len(top) != len(d.TopAgents24h) {
		t.Fatalf("top agents %+v, want %q", d.TopAgents24h, top)
	}
	for i, a := range d.TopAgents24h {
		if top[i] != a.AgentPDA+" "+itoa(a.Attestations) {
			t.Errorf("top agent %d: %s %d, want %s", i, a.AgentPDA, a.Attestations, top[i])
		}
	}
	if !strings.HasPrefix(top[0], env.Seeded.Agents[1].PDA.String()+" ") {
		t.Errorf("busiest %s, want agent 1 with its 120 new", top[0])
	}
	if want := q("WHERE NOT finalized"); d.Finality.Unfinalized != want || want != 120 || d.Finality.OldestUnfinalizedAt == nil {
		t.Errorf("unfinalized %d (oldest %v), want %d", d.Finality.Unfinalized, d.Finality.OldestUnfinalizedAt, want)
	}
	if d.Log != nil {
		t.Errorf("a node without a log says %+v", d.Log)
	}
	if c := node.Get(t, "/stats/overview?x=1"); c.Status != http.StatusBadRequest {
		t.Errorf("overview with a parameter: %d", c.Status)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestJSONAnswersEndWithANewline: every JSON answer, made per request or
// cached, success or error, ends with a newline.
func TestJSONAnswersEndWithANewline(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 1, Attestations: 30})
	node := env.StartNode(t, apptest.NodeOptions{})
	for _, p := range []string{"/health", "/stats", "/stats/overview", "/attestations?limit=2", "/agents", "/stats/activity",
		"/openapi.json", "/attestations/nope", "/nope", "/attestations?limit=x"} {
		for i := 0; i < 2; i++ { // made, then cached
			r := node.Get(t, p)
			if !strings.HasSuffix(string(r.Body), "\n") || strings.HasSuffix(string(r.Body), "\n\n") {
				t.Errorf("%s (read %d): %d ends with %q", p, i+1, r.Status, string(r.Body[max(0, len(r.Body)-8):]))
			}
		}
	}
}
