package premium_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gowebpki/jcs"
)

type verifyResp struct {
	Data []struct {
		ID         string  `json:"id"`
		Valid      bool    `json:"valid"`
		Reason     *string `json:"reason"`
		ActionType *string `json:"actionType"`
		Timestamp  *string `json:"timestamp"`
		CheckedAt  string  `json:"checkedAt"`
	} `json:"data"`
	Summary premium.VerifySummary `json:"summary"`
}

func TestBulkVerifyBoundaries(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 1500})
	pn := startNode(t, env, premium.Config{})
	all := pdas(t, env, "ORDER BY pda LIMIT 1001")
	acc, _, err := pn.keys.Store().EnsureAccount(context.Background(), "acme")
	testenv.Must(t, err, "account")
	revoked, err := pn.keys.Create(context.Background(), acc.ID, "revoked")
	testenv.Must(t, err, "key")
	_, err = pn.keys.Revoke(context.Background(), revoked.Key.Prefix, 0)
	testenv.Must(t, err, "revoke")
	unknown, err := apikey.Generate()
	testenv.Must(t, err, "generate")

	// A valid body of exactly MaxBulkBody bytes, padded with spaces.
	exact := idsBody(all[:10])
	exact = append(exact[:len(exact)-1], append(bytes.Repeat([]byte(" "), premium.MaxBulkBody-len(exact)), '}')...)
	over := append(bytes.Clone(exact[:len(exact)-1]), ' ', '}')
	if len(exact) != 256<<10 || len(over) != 256<<10+1 {
		t.Fatalf("fixture sizes %d %d", len(exact), len(over))
	}
	js := "application/json"
	for _, tc := range []struct {
		name   string
		body   []byte
		ct     string
		key    string
		status int
		code   string
		n      int
	}{
		{"0 ids", []byte(`{"ids":[]}`), js, pn.key, 422, "BATCH_LIMIT_EXCEEDED", 0},
		{"1 id", idsBody(all[:1]), js, pn.key, 200, "", 1},
		{"1000 ids", idsBody(all[:1000]), js, pn.key, 200, "", 1000},
		{"1001 ids", idsBody(all[:1001]), js, pn.key, 422, "BATCH_LIMIT_EXCEEDED", 0},
		{"exactly 256 KiB", exact, js, pn.key, 200, "", 10},
		{"256 KiB + 1", over, js, pn.key, 413, "PAYLOAD_TOO_LARGE", 0},
		{"512 KiB", append(bytes.Repeat([]byte(" "), 512<<10), idsBody(all[:1])...), js, pn.key, 413, "PAYLOAD_TOO_LARGE", 0},
		{"bad json", []byte(`{"ids":["a"`), js, pn.key, 400, "INVALID_PARAM", 0},
		{"not an object", []byte(`["a"]`), js, pn.key, 400, "INVALID_PARAM", 0},
		{"ids are numbers", []byte(`{"ids":[1,2]}`), js, pn.key, 400, "INVALID_PARAM", 0},
		{"an id is null", []byte(`{"ids":["` + all[0] + `",null]}`), js, pn.key, 400, "INVALID_PARAM", 0},
		{"an id is an object", []byte(`{"ids":[{"id":"` + all[0] + `"}]}`), js, pn.key, 400, "INVALID_PARAM", 0},
		{"ids not an array", []byte(`{"ids":"` + all[0] + `"}`), js, pn.key, 400, "INVALID_PARAM", 0},
		{"unknown field", []byte(`{"ids":["` + all[0] + `"],"mode":"fast"}`), js, pn.key, 400, "INVALID_PARAM", 0},
		{"text/plain", idsBody(all[:1]), "text/plain", pn.key, 415, "UNSUPPORTED_MEDIA_TYPE", 0},
		{"form", idsBody(all[:1]), "application/x-www-form-urlencoded", pn.key, 415, "UNSUPPORTED_MEDIA_TYPE", 0},
		{"no content type", idsBody(all[:1]), "", pn.key, 415, "UNSUPPORTED_MEDIA_TYPE", 0},
		{"json with charset", idsBody(all[:1]), "application/json; charset=utf-8", pn.key, 200, "", 1},
		{"missing key", idsBody(all[:1]), js, "", 401, "UNAUTHORIZED", 0},
		{"malformed key", idsBody(all[:1]), js, "atst_short", 401, "UNAUTHORIZED", 0},
		{"unknown key", idsBody(all[:1]), js, unknown.Secret, 401, "UNAUTHORIZED", 0},
		{"revoked key", idsBody(all[:1]), js, revoked.Secret, 401, "UNAUTHORIZED", 0},
	} {
		h := map[string]string{}
		if tc.ct != "" {
			h["Content-Type"] = tc.ct
		}
		if tc.key != "" {
			h["x-api-key"] = tc.key
		}
		r := pn.raw(t, http.MethodPost, "/premium/bulk-verify", tc.body, h)
		if r.Status != tc.status || r.ErrorCode() != tc.code {
			t.Errorf("%s: %d %s", tc.name, r.Status, truncate(r.Body))
			continue
		}
		if tc.status == 200 {
			var v verifyResp
			r.JSON(t, &v)
			if len(v.Data) != tc.n || v.Summary.Total != tc.n || v.Summary.Valid != tc.n {
				t.Errorf("%s: %d answers, summary %+v", tc.name, len(v.Data), v.Summary)
			}
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	testenv.Must(t, err, "encode")
	return b
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

func TestBulkVerifyAnswersInOrder(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 500})
	pn := startNode(t, env, premium.Config{})
	now := time.Now().UTC().Truncate(time.Second)
	recs := seed.NewAttestations(env.Seeded.Agents[:1], 3, now, 1_000_000, 11)
	recs[0].Commitment = attestation.Confirmed // not finalized yet
	bad := reissue(t, recs[1], 1_000_100)
	bad.Signature[0] ^= 0xff
	bad.SignatureValid = false
	apply(t, env, &store.Batch{Attestations: append(recs, bad)})

	good := pdas(t, env, "WHERE finalized AND signature_valid ORDER BY pda LIMIT 2")
	absent := "11111111111111111111111111111111"
	ids := []string{good[0], "nope", absent, recs[0].PDA, good[1], bad.PDA, good[0], "", good[0] + "x", strings.ToLower(good[1])}
	want := []string{"", "malformed_id", "not_found", "not_finalized", "", "signature_invalid", "", "malformed_id", "malformed_id", "?"}
	var v verifyResp
	r := pn.verify(t, mustJSON(t, map[string]any{"ids": ids}))
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	r.JSON(t, &v)
	if len(v.Data) != len(ids) {
		t.Fatalf("%d answers for %d ids", len(v.Data), len(ids))
	}
	for i, d := range v.Data {
		if d.ID != ids[i] {
			t.Errorf("answer %d is for %q, want %q", i, d.ID, ids[i])
		}
		if want[i] == "?" {
			continue // a lower-cased pda may or may not decode; either way it is not valid
		}
		reason := ""
		if d.Reason != nil {
			reason = *d.Reason
		}
		if reason != want[i] || d.Valid != (want[i] == "") {
			t.Errorf("%d (%q): valid %v reason %q, want %q", i, ids[i], d.Valid, reason, want[i])
		}
		indexed := want[i] == "" || want[i] == "not_finalized" || want[i] == "signature_invalid"
		if (d.ActionType != nil) != indexed || (d.Timestamp != nil) != indexed {
			t.Errorf("%d: actionType %v timestamp %v for indexed=%v", i, d.ActionType, d.Timestamp, indexed)
		}
		if _, err := time.Parse(time.RFC3339, d.CheckedAt); err != nil {
			t.Errorf("%d: checkedAt %q", i, d.CheckedAt)
		}
	}
	s := v.Summary
	// notFound: nope, absent, "", pda+"x" and the lower-cased pda (either reason).
	if s.Total != 10 || s.Valid != 3 || s.Invalid != 7 || s.NotFound != 5 {
		t.Errorf("summary %+v", s)
	}
}

func TestBulkVerifyCatchesTamperedRecords(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 500})
	pn := startNode(t, env, premium.Config{})
	ids := pdas(t, env, "ORDER BY pda LIMIT 3")
	var v verifyResp
	pn.verify(t, idsBody(ids)).JSON(t, &v) // warm every cache and the memo
	if v.Summary.Valid != 3 {
		t.Fatalf("before tampering: %+v", v.Summary)
	}
	// Change the stored hash; the stored signature_valid flag still says true.
	ctx := context.Background()
	tag, err := env.Store.Pool().Exec(ctx, `UPDATE attestations SET action_hash = sha256(action_hash) WHERE pda = $1`, ids[1])
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("tamper: %v %v", tag, err)
	}
	testenv.Must(t, pn.Cache.BumpEpoch(ctx, 0), "bump epoch")
	pn.verify(t, idsBody(ids)).JSON(t, &v)
	if !v.Data[0].Valid || v.Data[1].Valid || !v.Data[2].Valid {
		t.Fatalf("after tampering: %+v", v.Data)
	}
	if v.Data[1].Reason == nil || *v.Data[1].Reason != premium.ReasonSignatureInvalid {
		t.Fatalf("reason %v", v.Data[1].Reason)
	}
	if v.Summary.Valid != 2 || v.Summary.Invalid != 1 || v.Summary.NotFound != 0 {
		t.Fatalf("summary %+v", v.Summary)
	}
	var stored bool
	testenv.Must(t, env.Store.Pool().QueryRow(ctx, `SELECT signature_valid FROM attestations WHERE pda = $1`, ids[1]).Scan(&stored), "flag")
	if !stored {
		t.Fatal("fixture: the stored flag should still claim a valid signature")
	}
}

type historyResp struct {
	Data       []attestation.Attestation `json:"data"`
	Agent      attestation.Agent         `json:"agent"`
	Pagination struct {
		Limit      int    `json:"limit"`
		Offset     int    `json:"offset"`
		Total      int64  `json:"total"`
		NextCursor string `json:"nextCursor"`
	} `json:"pagination"`
}

func TestFullHistory(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 3000})
	pn := startNode(t, env, premium.Config{})
	agent := env.Seeded.Agents[0].PDA.String()
	total := count(t, env, "WHERE agent_pda = $1", agent)
	if total <= 1000 {
		t.Fatalf("fixture: agent has %d attestations, want > 1000", total)
	}
	var full historyResp
	pn.get(t, "/premium/full-history/"+agent).JSON(t, &full)
	if len(full.Data) != 1000 || full.Pagination.Limit != 1000 || full.Pagination.Total != total || full.Pagination.NextCursor == "" {
		t.Fatalf("default page: %d items, pagination %+v (total %d)", len(full.Data), full.Pagination, total)
	}
	if full.Agent.PDA != agent || full.Agent.Metrics.AttestationCount != total {
		t.Fatalf("agent %+v", full.Agent)
	}
	for i, a := range full.Data {
		if a.AgentPDA != agent {
			t.Fatalf("item %d of agent %s", i, a.AgentPDA)
		}
		if i > 0 && !newerFirst(full.Data[i-1], a) {
			t.Fatalf("order broken at %d", i)
		}
	}
	var clamped, page historyResp
	pn.get(t, "/premium/full-history/"+agent+"?limit=5000").JSON(t, &clamped)
	if clamped.Pagination.Limit != 1000 || len(clamped.Data) != 1000 {
		t.Fatalf("limit 5000: %+v", clamped.Pagination)
	}
	pn.get(t, "/premium/full-history/"+agent+"?limit=10&offset=5").JSON(t, &page)
	if len(page.Data) != 10 || page.Data[0].PDA != full.Data[5].PDA || page.Data[9].PDA != full.Data[14].PDA {
		t.Fatal("limit/offset page does not match the full page")
	}
	// Walking by cursor returns every attestation once.
	seen := map[string]bool{}
	path := "/premium/full-history/" + agent
	for {
		var p historyResp
		pn.get(t, path).JSON(t, &p)
		for _, a := range p.Data {
			if seen[a.PDA] {
				t.Fatalf("%s twice", a.PDA)
			}
			seen[a.PDA] = true
		}
		if p.Pagination.NextCursor == "" {
			break
		}
		path = "/premium/full-history/" + agent + "?cursor=" + p.Pagination.NextCursor
	}
	if int64(len(seen)) != total {
		t.Fatalf("cursor walk saw %d of %d", len(seen), total)
	}
	// A time range: half-open, counted like GET /attestations.
	mid := full.Data[500].Timestamp.Time
	from, to := mid.Add(-24*time.Hour), mid
	var ranged historyResp
	pn.get(t, fmt.Sprintf("/premium/full-history/%s?from=%s&to=%s", agent, from.Format(time.RFC3339), to.Format(time.RFC3339))).JSON(t, &ranged)
	want := count(t, env, "WHERE agent_pda = $1 AND ts >= $2 AND ts < $3", agent, from, to)
	if ranged.Pagination.Total != want || int64(len(ranged.Data)) != min(want, 1000) {
		t.Fatalf("range: total %d len %d, want %d", ranged.Pagination.Total, len(ranged.Data), want)
	}
	for _, a := range ranged.Data {
		if a.Timestamp.Before(from) || !a.Timestamp.Before(to) {
			t.Fatalf("%s outside [%s, %s)", a.Timestamp, from, to)
		}
	}
	for _, tc := range []struct {
		path   string
		status int
		code   string
	}{
		{"/premium/full-history/11111111111111111111111111111111", 404, "AGENT_NOT_FOUND"},
		{"/premium/full-history/not-an-address", 400, "INVALID_PARAM"},
		{"/premium/full-history/" + agent + "?limit=0", 400, "INVALID_PARAM"},
		{"/premium/full-history/" + agent + "?offset=-1", 400, "INVALID_PARAM"},
		{"/premium/full-history/" + agent + "?offset=100001", 400, "INVALID_PARAM"},
		{"/premium/full-history/" + agent + "?from=yesterday", 400, "INVALID_PARAM"},
		{"/premium/full-history/" + agent + "?from=2026-11-02&to=2026-11-01", 400, "INVALID_PARAM"},
		{"/premium/full-history/" + agent + "?cursor=abc", 400, "INVALID_PARAM"},
		{"/premium/full-history/" + agent + "?actionType=ToolCall", 400, "INVALID_PARAM"},
		{"/premium/full-history/" + agent + "?limit=1&limit=2", 400, "INVALID_PARAM"},
	} {
		r := pn.get(t, tc.path)
		if r.Status != tc.status || r.ErrorCode() != tc.code {
			t.Errorf("%s: %d %s", tc.path, r.Status, r.Body)
		}
	}
	if r := pn.Get(t, "/premium/full-history/"+agent); r.Status != 401 {
		t.Errorf("no key: %d", r.Status)
	}
}

func newerFirst(a, b attestation.Attestation) bool {
	if !a.Timestamp.Equal(b.Timestamp.Time) {
		return a.Timestamp.After(b.Timestamp.Time)
	}
	if a.Slot != b.Slot {
		return a.Slot > b.Slot
	}
	return a.PDA > b.PDA
}

// crafted is an agent whose records hold one anomaly of each kind.
type crafted struct {
	agent seed.Agent
	recs  []store.AttestationRecord
	t1    time.Time // 5 attestations; 4 days of silence follow
	t2    time.Time // a burst of 600
}

func craftAgent(t *testing.T, env *apptest.Env, now time.Time) crafted {
	t.Helper()
	const base = 50_000_000
	c := crafted{t1: now.Add(-9 * 24 * time.Hour), t2: now.Add(-5 * 24 * time.Hour)}
	c.agent = newAgent(t, env, now.Add(-10*24*time.Hour), base)
	agents := []seed.Agent{c.agent}
	var root [32]byte
	root[0] = 7
	apply(t, env, &store.Batch{PolicyUpdates: []store.PolicyUpdate{{
		Event: store.Event{TxSignature: randomSig(t).String(), Slot: base + 10, Commitment: attestation.Finalized},
		PDA:   c.agent.PDA.String(), PolicyRoot: root, At: now.Add(-7 * 24 * time.Hour)}}})
	g1 := seed.NewAttestations(agents, 5, c.t1, base+100, 1)
	g2 := seed.NewAttestations(agents, 600, c.t2, base+1000, 2)
	g3 := seed.NewAttestations(agents, 3, c.t2.Add(time.Hour), base+3000, 3)
	dup := reissue(t, g3[0], base+3500)
	bad := reissue(t, g3[1], base+3600)
	bad.ActionHash[0] ^= 1
	bad.SignatureValid = false
	c.recs = slices.Concat(g1, g2, g3, []store.AttestationRecord{dup, bad})
	apply(t, env, &store.Batch{Attestations: c.recs})
	apply(t, env, &store.Batch{Revocations: []store.AgentRevocation{{
		Event: store.Event{TxSignature: randomSig(t).String(), Slot: base + 5000, Commitment: attestation.Finalized},
		PDA:   c.agent.PDA.String(), At: c.t2.Add(2 * time.Hour)}}})
	g4 := seed.NewAttestations(agents, 2, c.t2.Add(3*time.Hour), base+6000, 4)
	apply(t, env, &store.Batch{Attestations: g4})
	c.recs = append(c.recs, g4...)
	return c
}

// verifyReportHash recomputes reportHash from the answer's JSON the way an
// auditor would: take data, drop reportHash, canonicalise (RFC 8785), hash.
func verifyReportHash(t *testing.T, body []byte) string {
	t.Helper()
	var env struct {
		Data map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("decode report: %v", err)
	}
	var claimed string
	testenv.Must(t, json.Unmarshal(env.Data["reportHash"], &claimed), "reportHash")
	delete(env.Data, "reportHash")
	b, err := json.Marshal(env.Data)
	testenv.Must(t, err, "encode")
	canon, err := jcs.Transform(b)
	testenv.Must(t, err, "canonicalise")
	sum := sha256.Sum256(canon)
	if got := hex.EncodeToString(sum[:]); got != claimed {
		t.Fatalf("reportHash %s does not recompute (got %s)", claimed, got)
	}
	return claimed
}

func TestForensicReport(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 300})
	pn := startNode(t, env, premium.Config{})
	now := time.Now().UTC().Truncate(time.Second)
	c := craftAgent(t, env, now)
	agent := c.agent.PDA.String()
	// The report is cached per epoch: let the node hear the last bump of
	// the setup first, or the cached answer below could be from an epoch
	// the node only reached after this request.
	pn.SettleEpoch(t)

	r := pn.get(t, "/premium/forensic-report/"+agent)
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	hash := verifyReportHash(t, r.Body)
	var rep struct{ Data premium.Report }
	r.JSON(t, &rep)
	d := rep.Data
	if d.ReportHash != hash || d.Agent.PDA != agent || !d.Agent.Revoked {
		t.Fatalf("agent %+v hash %s", d.Agent, d.ReportHash)
	}
	if d.Period.From != nil || d.Period.To != nil {
		t.Fatalf("open period: %+v", d.Period)
	}
	// Totals, types and timeline against the records themselves.
	total := int64(len(c.recs))
	if d.Summary.Totals.Attestations != total || d.Summary.Totals.Finalized != total || d.Summary.Totals.Unfinalized != 0 {
		t.Fatalf("totals %+v, want %d", d.Summary.Totals, total)
	}
	byType, byDay, privacy := map[string]int64{}, map[string]int64{}, int64(0)
	for _, rec := range c.recs {
		byType[rec.ActionType.String()]++
		byDay[rec.Timestamp.UTC().Format(time.DateOnly)]++
		if rec.PrivacyMode {
			privacy++
		}
	}
	if d.Summary.Totals.PrivacyMode != privacy {
		t.Errorf("privacy %d, want %d", d.Summary.Totals.PrivacyMode, privacy)
	}
	for name, n := range d.Summary.ByType {
		if byType[name] != n {
			t.Errorf("byType[%s] = %d, want %d", name, n, byType[name])
		}
	}
	if d.Summary.ActiveDays != len(byDay) || len(d.Timeline) != len(byDay) {
		t.Fatalf("active days %d, timeline %d, want %d", d.Summary.ActiveDays, len(d.Timeline), len(byDay))
	}
	var sum int64
	for i, day := range d.Timeline {
		var typed int64
		for _, n := range day.ByType {
			typed += n
		}
		if byDay[day.Day] != day.Count || typed != day.Count || (i > 0 && d.Timeline[i-1].Day >= day.Day) {
			t.Errorf("timeline %+v, want count %d", day, byDay[day.Day])
		}
		sum += day.Count
	}
	if sum != total || d.Summary.FirstAt.Time != c.t1 || d.Summary.LastAt.Time != c.t2.Add(3*time.Hour) {
		t.Errorf("timeline sums to %d; first %v last %v", sum, d.Summary.FirstAt, d.Summary.LastAt)
	}
	// One anomaly of each kind.
	wantCounts := map[string]int64{premium.KindBurst: 1, premium.KindLongGap: 1, premium.KindAfterRevocation: 2,
		premium.KindDuplicateHash: 1, premium.KindInvalidSignature: 1}
	for k, n := range wantCounts {
		if d.Summary.AnomalyCounts[k] != n {
			t.Errorf("anomalyCounts[%s] = %d, want %d", k, d.Summary.AnomalyCounts[k], n)
		}
	}
	kinds := map[string][]premium.Anomaly{}
	for i, a := range d.Anomalies {
		kinds[a.Kind] = append(kinds[a.Kind], a)
		if i > 0 && a.At.Before(d.Anomalies[i-1].At.Time) {
			t.Errorf("anomalies out of order at %d", i)
		}
	}
	if b := kinds[premium.KindBurst]; len(b) != 1 || b[0].Count != 600 || b[0].At.Time != c.t2.Truncate(time.Minute) {
		t.Errorf("burst %+v", b)
	}
	if g := kinds[premium.KindLongGap]; len(g) != 1 || g[0].At.Time != c.t1 || g[0].Until.Time != c.t2 {
		t.Errorf("gap %+v", g)
	}
	if a := kinds[premium.KindAfterRevocation]; len(a) != 2 || a[0].At.Time != c.t2.Add(3*time.Hour) {
		t.Errorf("after revocation %+v", a)
	}
	g3dup := c.recs[len(c.recs)-4] // the reissued duplicate
	if dp := kinds[premium.KindDuplicateHash]; len(dp) != 1 || dp[0].Count != 2 || len(dp[0].PDAs) != 2 || !slices.Contains(dp[0].PDAs, g3dup.PDA) {
		t.Errorf("duplicate %+v (dup %s)", dp, g3dup.PDA)
	}
	badRec := c.recs[len(c.recs)-3]
	if iv := kinds[premium.KindInvalidSignature]; len(iv) != 1 || iv[0].PDAs[0] != badRec.PDA {
		t.Errorf("invalid signature %+v (bad %s)", iv, badRec.PDA)
	}
	if d.Integrity.SignaturesChecked != total || d.Integrity.SignaturesFailed != 1 || d.Integrity.Recheck.Checked != int(total) ||
		d.Integrity.Recheck.Failed != 1 {
		t.Errorf("integrity %+v", d.Integrity)
	}
	if len(d.PolicyHistory) != 2 || d.Thresholds != premium.DefaultRules {
		t.Errorf("policy history %d, thresholds %+v", len(d.PolicyHistory), d.Thresholds)
	}

	// Cached: the same bytes (same generatedAt), still verifying.
	time.Sleep(1100 * time.Millisecond)
	again := pn.get(t, "/premium/forensic-report/"+agent)
	if !bytes.Equal(again.Body, r.Body) {
		t.Fatal("a cached report differs from the first answer")
	}
	verifyReportHash(t, again.Body)

	// A period: from after the gap drops g1 and the gap.
	from := c.t1.Add(24 * time.Hour)
	var part struct{ Data premium.Report }
	pr := pn.get(t, "/premium/forensic-report/"+agent+"?from="+from.Format(time.RFC3339))
	verifyReportHash(t, pr.Body)
	pr.JSON(t, &part)
	if part.Data.Summary.Totals.Attestations != total-5 || part.Data.Summary.AnomalyCounts[premium.KindLongGap] != 0 ||
		part.Data.Period.From == nil || part.Data.Period.From.Time != from || part.Data.Period.To != nil {
		t.Errorf("period report: totals %+v counts %v period %+v", part.Data.Summary.Totals, part.Data.Summary.AnomalyCounts, part.Data.Period)
	}
	var empty struct{ Data premium.Report }
	er := pn.get(t, "/premium/forensic-report/"+agent+"?from=2000-01-01&to=2000-01-02")
	verifyReportHash(t, er.Body)
	er.JSON(t, &empty)
	if empty.Data.Summary.Totals.Attestations != 0 || len(empty.Data.Timeline) != 0 || empty.Data.Summary.FirstAt != nil || len(empty.Data.Anomalies) != 0 {
		t.Errorf("empty period: %+v", empty.Data.Summary)
	}

	for _, tc := range []struct {
		path   string
		status int
		code   string
	}{
		{"/premium/forensic-report/11111111111111111111111111111111", 404, "AGENT_NOT_FOUND"},
		{"/premium/forensic-report/0OIl", 400, "INVALID_PARAM"},
		{"/premium/forensic-report/" + agent + "?from=2026-13-01", 400, "INVALID_PARAM"},
		{"/premium/forensic-report/" + agent + "?from=2026-11-02&to=2026-11-01", 400, "INVALID_PARAM"},
		{"/premium/forensic-report/" + agent + "?limit=5", 400, "INVALID_PARAM"},
	} {
		if r := pn.get(t, tc.path); r.Status != tc.status || r.ErrorCode() != tc.code {
			t.Errorf("%s: %d %s", tc.path, r.Status, r.Body)
		}
	}
	if r := pn.Get(t, "/premium/forensic-report/"+agent); r.Status != 401 {
		t.Errorf("no key: %d", r.Status)
	}

	// Tamper with a record that passed at ingest: after the epoch bump the
	// re-check catches it although the stored flag still says valid.
	ctx := context.Background()
	_, err := env.Store.Pool().Exec(ctx, `UPDATE attestations SET action_hash = sha256(action_hash) WHERE pda = $1`, c.recs[0].PDA)
	testenv.Must(t, err, "tamper")
	testenv.Must(t, pn.Cache.BumpEpoch(ctx, 0), "bump epoch")
	var tampered struct{ Data premium.Report }
	tr := pn.get(t, "/premium/forensic-report/"+agent)
	verifyReportHash(t, tr.Body)
	tr.JSON(t, &tampered)
	if tampered.Data.Integrity.SignaturesFailed != 2 || tampered.Data.Integrity.Recheck.Failed != 2 ||
		tampered.Data.Summary.AnomalyCounts[premium.KindInvalidSignature] != 2 || tampered.Data.ReportHash == hash {
		t.Errorf("after tampering: integrity %+v counts %v", tampered.Data.Integrity, tampered.Data.Summary.AnomalyCounts)
	}
}

func TestReportHashIsOverCanonicalJSON(t *testing.T) {
	t.Parallel()
	rep := &premium.Report{Anomalies: []premium.Anomaly{{Kind: "burst", Detail: "<&> ü \u2028"}}, Timeline: []premium.TimelineDay{}}
	testenv.Must(t, premium.Seal(rep), "seal")
	sealed := rep.ReportHash
	// Field order and escaping do not matter: the canonical form does.
	b, _ := json.Marshal(rep)
	var m map[string]any
	testenv.Must(t, json.Unmarshal(b, &m), "decode")
	delete(m, "reportHash")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "   ")
	testenv.Must(t, enc.Encode(m), "encode")
	canon, err := jcs.Transform(buf.Bytes())
	testenv.Must(t, err, "jcs")
	sum := sha256.Sum256(canon)
	if hex.EncodeToString(sum[:]) != sealed {
		t.Fatal("hash is not over the canonical form")
	}
	testenv.Must(t, premium.Seal(rep), "reseal")
	if rep.ReportHash != sealed {
		t.Fatal("sealing twice changes the hash")
	}
	rep.Summary.Totals.Attestations++
	testenv.Must(t, premium.Seal(rep), "reseal")
	if rep.ReportHash == sealed {
		t.Fatal("the hash does not cover the content")
	}
}
