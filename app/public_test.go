package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gofiber/fiber/v2"
)

type listResp struct {
	Data       []attestation.Attestation `json:"data"`
	Pagination struct {
		Limit      int    `json:"limit"`
		Offset     int    `json:"offset"`
		Total      int64  `json:"total"`
		NextCursor string `json:"nextCursor"`
	} `json:"pagination"`
}

func seeded(t *testing.T) (*apptest.Env, *apptest.Node) {
	t.Helper()
	env := apptest.NewEnv(t, apptest.Options{Agents: 6, Attestations: 3000})
	return env, env.StartNode(t, apptest.NodeOptions{})
}

func count(t *testing.T, env *apptest.Env, where string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := env.Store.Pool().QueryRow(context.Background(), "SELECT count(*) FROM attestations "+where, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestListLimitAndOffsetBoundaries(t *testing.T) {
	t.Parallel()
	_, node := seeded(t)
	for _, tc := range []struct {
		query     string
		status    int
		wantLimit int
		wantLen   int
	}{
		{"", 200, 20, 20},
		{"?limit=1", 200, 1, 1},
		{"?limit=20", 200, 20, 20},
		{"?limit=100", 200, 100, 100},
		{"?limit=101", 200, 100, 100},
		{"?limit=1000000000000000", 200, 100, 100},
		{"?limit=0", 400, 0, 0},
		{"?limit=-5", 400, 0, 0},
		{"?limit=abc", 400, 0, 0},
		{"?limit=1.5", 400, 0, 0},
		{"?limit=", 400, 0, 0},
		{"?limit=99999999999999999999999", 400, 0, 0},
		{"?offset=-1", 400, 0, 0},
		{"?offset=abc", 400, 0, 0},
		{"?offset=99999999999999999999999", 400, 0, 0},
		{"?offset=100001", 400, 0, 0},
		{"?offset=100000", 200, 20, 0},
		{"?offset=2990", 200, 20, 10},
		{"?offset=0&limit=5", 200, 5, 5},
		{"?limit=5&limit=6", 400, 0, 0},
		{"?lmit=5", 400, 0, 0},
	} {
		r := node.Get(t, "/attestations"+tc.query)
		if r.Status != tc.status {
			t.Errorf("%q: status %d, want %d: %s", tc.query, r.Status, tc.status, r.Body)
			continue
		}
		if tc.status != 200 {
			if r.ErrorCode() != "INVALID_PARAM" {
				t.Errorf("%q: code %q", tc.query, r.ErrorCode())
			}
			continue
		}
		var lr listResp
		r.JSON(t, &lr)
		if lr.Pagination.Limit != tc.wantLimit || len(lr.Data) != tc.wantLen || lr.Pagination.Total != 3000 {
			t.Errorf("%q: limit %d len %d total %d; want limit %d len %d total 3000", tc.query,
				lr.Pagination.Limit, len(lr.Data), lr.Pagination.Total, tc.wantLimit, tc.wantLen)
		}
	}
}

func TestListOrderAndOffsetPagesAgree(t *testing.T) {
	t.Parallel()
	_, node := seeded(t)
	var all []attestation.Attestation
	for off := 0; off < 3000; off += 100 {
		var lr listResp
		node.Get(t, fmt.Sprintf("/attestations?limit=100&offset=%d", off)).JSON(t, &lr)
		all = append(all, lr.Data...)
	}
	if len(all) != 3000 {
		t.Fatalf("walked %d records, want 3000", len(all))
	}
	seen := map[string]bool{}
	for i, a := range all {
		if seen[a.PDA] {
			t.Fatalf("duplicate %s", a.PDA)
		}
		seen[a.PDA] = true
		if i > 0 && !before(all[i-1], a) {
			t.Fatalf("order broken at %d: %+v then %+v", i, all[i-1], a)
		}
	}
}

// before reports whether a sorts strictly before b (ts desc, slot desc, pda desc).
func before(a, b attestation.Attestation) bool {
	if !a.Timestamp.Equal(b.Timestamp.Time) {
		return a.Timestamp.After(b.Timestamp.Time)
	}
	if a.Slot != b.Slot {
		return a.Slot > b.Slot
	}
	return a.PDA > b.PDA
}

func TestListFilters(t *testing.T) {
	t.Parallel()
	env, node := seeded(t)
	agent := env.Seeded.Agents[0].PDA.String()
	for _, typ := range attestation.ActionTypes() {
		var lr listResp
		node.Get(t, "/attestations?limit=100&actionType="+typ.String()).JSON(t, &lr)
		want := count(t, env, "WHERE action_type = $1", int16(typ))
		if lr.Pagination.Total != want {
			t.Errorf("%s: total %d, want %d", typ, lr.Pagination.Total, want)
		}
		for _, a := range lr.Data {
			if a.ActionType != typ {
				t.Fatalf("%s filter returned %s", typ, a.ActionType)
			}
		}
		var both listResp
		node.Get(t, "/attestations?limit=100&actionType="+typ.String()+"&agentPda="+agent).JSON(t, &both)
		if want := count(t, env, "WHERE action_type = $1 AND agent_pda = $2", int16(typ), agent); both.Pagination.Total != want {
			t.Errorf("%s+agent: total %d, want %d", typ, both.Pagination.Total, want)
		}
	}
	for _, bad := range []string{"Unknown", "toolcall", "TOOLCALL", "7", ""} {
		r := node.Get(t, "/attestations?actionType="+url.QueryEscape(bad))
		if r.Status != 400 || r.ErrorCode() != "INVALID_PARAM" {
			t.Errorf("actionType=%q: %d %s", bad, r.Status, r.Body)
		}
	}
	var lr listResp
	node.Get(t, "/attestations?agentPda="+agent).JSON(t, &lr)
	if want := count(t, env, "WHERE agent_pda = $1", agent); lr.Pagination.Total != want || want == 0 {
		t.Errorf("agent total %d, want %d", lr.Pagination.Total, want)
	}
	for _, bad := range []string{"abc", "0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl", strings.Repeat("1", 45), agent + "x"} {
		if r := node.Get(t, "/attestations?agentPda="+bad); r.Status != 400 {
			t.Errorf("agentPda=%q: %d", bad, r.Status)
		}
	}
}

func TestListTimeRange(t *testing.T) {
	t.Parallel()
	env, node := seeded(t)
	var mid time.Time
	if err := env.Store.Pool().QueryRow(context.Background(),
		"SELECT ts FROM attestations ORDER BY ts OFFSET 1500 LIMIT 1").Scan(&mid); err != nil {
		t.Fatal(err)
	}
	mid = mid.UTC()
	day := mid.Truncate(24 * time.Hour)
	for _, tc := range []struct {
		query string
		where string
		args  []any
	}{
		{"from=" + mid.Format(time.RFC3339), "WHERE ts >= $1", []any{mid}},
		{"to=" + mid.Format(time.RFC3339), "WHERE ts < $1", []any{mid}},
		{"from=" + url.QueryEscape(mid.Add(-time.Hour).Format("2006-01-02T15:04:05+00:00")) + "&to=" + mid.Format(time.RFC3339),
			"WHERE ts >= $1 AND ts < $2", []any{mid.Add(-time.Hour), mid}},
		{"from=" + day.Format("2006-01-02"), "WHERE ts >= $1", []any{day}},
		{"from=" + day.Format("2006-01-02") + "&to=" + day.Add(24*time.Hour).Format("2006-01-02"),
			"WHERE ts >= $1 AND ts < $2", []any{day, day.Add(24 * time.Hour)}},
		{"from=" + mid.Format(time.RFC3339) + "&to=" + mid.Format(time.RFC3339), "WHERE false", nil},
		{"from=" + url.QueryEscape(mid.Add(2*time.Hour).In(time.FixedZone("x", 2*3600)).Format(time.RFC3339)), "WHERE ts >= $1", []any{mid.Add(2 * time.Hour)}},
	} {
		var lr listResp
		r := node.Get(t, "/attestations?limit=100&"+tc.query)
		if r.Status != 200 {
			t.Errorf("%s: %d %s", tc.query, r.Status, r.Body)
			continue
		}
		r.JSON(t, &lr)
		if want := count(t, env, tc.where, tc.args...); lr.Pagination.Total != want {
			t.Errorf("%s: total %d, want %d", tc.query, lr.Pagination.Total, want)
		}
	}
	for _, bad := range []string{
		"from=yesterday", "to=2026-13-01", "from=2026-11-21T10:00:00", "from=1700000000",
		"from=2026-11-22&to=2026-11-21", "from=2026-11-21T10:00:01Z&to=2026-11-21T10:00:00Z",
	} {
		if r := node.Get(t, "/attestations?"+bad); r.Status != 400 || r.ErrorCode() != "INVALID_PARAM" {
			t.Errorf("%s: %d %s", bad, r.Status, r.Body)
		}
	}
}

func TestGetAttestationAndAgent(t *testing.T) {
	t.Parallel()
	env, node := seeded(t)
	var lr listResp
	node.Get(t, "/attestations?limit=1").JSON(t, &lr)
	a := lr.Data[0]
	var one struct{ Data attestation.Attestation }
	node.Get(t, "/attestations/"+a.PDA).JSON(t, &one)
	if one.Data != a {
		t.Fatalf("detail %+v != list item %+v", one.Data, a)
	}
	// Twice more: served from the cache layers, identical.
	for i := 0; i < 2; i++ {
		var again struct{ Data attestation.Attestation }
		node.Get(t, "/attestations/"+a.PDA).JSON(t, &again)
		if again.Data != a {
			t.Fatal("cached detail differs")
		}
	}
	// The stored signature checks out against the stored hash and key.
	id, _ := attestation.ParseAddress(a.AgentID)
	h, _ := attestation.ParseHash(a.ActionHash)
	sig, err := parseSig(a.AgentSignature)
	if err != nil || !attestation.VerifySignature(id, h, sig) {
		t.Fatalf("seeded signature does not verify: %v", err)
	}
	for _, tc := range []struct {
		path, code string
		status     int
	}{
		{"/attestations/abc", "INVALID_PARAM", 400},
		{"/attestations/" + strings.Repeat("1", 45), "INVALID_PARAM", 400},
		{"/attestations/" + a.PDA + "0", "INVALID_PARAM", 400},
		{"/attestations/11111111111111111111111111111111", "ATTESTATION_NOT_FOUND", 404},
		{"/attestations/" + a.AgentPDA, "ATTESTATION_NOT_FOUND", 404},
		{"/agents/abc", "INVALID_PARAM", 400},
		{"/agents/11111111111111111111111111111111", "AGENT_NOT_FOUND", 404},
		{"/agents/11111111111111111111111111111111/stats", "AGENT_NOT_FOUND", 404},
		{"/agents/" + a.PDA, "AGENT_NOT_FOUND", 404},
		{"/agents/x/stats", "INVALID_PARAM", 400},
		{"/attestations/" + a.PDA + "?x=1", "INVALID_PARAM", 400},
		{"/nope", "NOT_FOUND", 404},
		{"/attestations/" + a.PDA + "/extra", "NOT_FOUND", 404},
	} {
		r := node.Get(t, tc.path)
		if r.Status != tc.status || r.ErrorCode() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.path, r.Status, r.ErrorCode(), tc.status, tc.code)
		}
	}
	// Agent detail and stats agree with the database.
	ag := env.Seeded.Agents[0].PDA.String()
	var detail struct{ Data attestation.Agent }
	node.Get(t, "/agents/"+ag).JSON(t, &detail)
	want := count(t, env, "WHERE agent_pda = $1", ag)
	if detail.Data.PDA != ag || detail.Data.Metrics.AttestationCount != want || len(detail.Data.Policies.History) == 0 {
		t.Fatalf("agent detail %+v, want count %d", detail.Data, want)
	}
	var st struct {
		Data struct {
			AgentPDA           string           `json:"agentPda"`
			TotalAttestations  int64            `json:"totalAttestations"`
			ByType             map[string]int64 `json:"byType"`
			RecentAttestations []attestation.Attestation
		}
	}
	node.Get(t, "/agents/"+ag+"/stats").JSON(t, &st)
	var sum int64
	for _, n := range st.Data.ByType {
		sum += n
	}
	if st.Data.TotalAttestations != want || sum != want || len(st.Data.ByType) != 7 || len(st.Data.RecentAttestations) != 10 {
		t.Fatalf("agent stats %+v, want total %d", st.Data, want)
	}
	// The node answers these from memory now (without decoding the
	// address): the checks of every request still hold, and a remembered
	// 404 is still a 404.
	for range 2 {
		for _, tc := range []struct {
			path, code string
			status     int
		}{
			{"/agents/" + ag + "?x=1", "INVALID_PARAM", 400},
			{"/agents/" + ag + "/stats?limit=1", "INVALID_PARAM", 400},
			{"/attestations/" + a.PDA + "?x=1", "INVALID_PARAM", 400},
			{"/agents/" + ag + "x", "INVALID_PARAM", 400},
			{"/agents/11111111111111111111111111111111/stats", "AGENT_NOT_FOUND", 404},
			{"/attestations/11111111111111111111111111111111", "ATTESTATION_NOT_FOUND", 404},
		} {
			if r := node.Get(t, tc.path); r.Status != tc.status || r.ErrorCode() != tc.code {
				t.Errorf("%s: %d %s, want %d %s", tc.path, r.Status, r.ErrorCode(), tc.status, tc.code)
			}
		}
	}
	// A revocation shows on the agent, with its time, once indexed.
	victim := env.Seeded.Agents[1].PDA.String()
	revokedAt := time.Now().UTC().Truncate(time.Second)
	_, err = env.Store.Apply(context.Background(), &store.Batch{Revocations: []store.AgentRevocation{{
		Event: store.Event{TxSignature: "revoke-test", Slot: 1 << 40, Commitment: attestation.Finalized},
		PDA:   victim, At: revokedAt,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	node.SettleEpoch(t)
	var revoked struct{ Data attestation.Agent }
	node.Get(t, "/agents/"+victim).JSON(t, &revoked)
	if !revoked.Data.Revoked || revoked.Data.RevokedAt == nil || !revoked.Data.RevokedAt.Equal(revokedAt) {
		t.Fatalf("after revocation: revoked %v at %v, want true at %v", revoked.Data.Revoked, revoked.Data.RevokedAt, revokedAt)
	}
}

func TestStatsAndHealth(t *testing.T) {
	t.Parallel()
	env, node := seeded(t)
	var st struct {
		Agents       int64            `json:"agents"`
		Attestations int64            `json:"attestations"`
		ByType       map[string]int64 `json:"byType"`
		Last24h      int64            `json:"last24h"`
	}
	node.Get(t, "/stats").JSON(t, &st)
	if st.Agents != 6 || st.Attestations != 3000 || len(st.ByType) != 7 {
		t.Fatalf("stats %+v", st)
	}
	if want := count(t, env, "WHERE ts >= now() - interval '24 hours'"); st.Last24h != want {
		t.Errorf("last24h %d, want %d", st.Last24h, want)
	}
	var h app.Health
	r := node.Get(t, "/health")
	r.JSON(t, &h)
	if r.Status != 200 || h.Status != "ok" || h.Postgres != "ok" || h.Redis != "ok" || h.Version == "" || h.Reasons == nil || len(h.Reasons) != 0 {
		t.Fatalf("health %d %+v", r.Status, h)
	}
	if r.Header.Get("X-Request-ID") == "" {
		t.Error("no X-Request-ID")
	}
	r = node.Do(t, "GET", "/health", nil, map[string]string{"X-Request-ID": "trace-42"})
	if got := r.Header.Get("X-Request-ID"); got != "trace-42" {
		t.Errorf("X-Request-ID not echoed: %q", got)
	}
	var doc map[string]any
	node.Get(t, "/openapi.json").JSON(t, &doc)
	if doc["openapi"] != "3.0.3" {
		t.Errorf("openapi.json: %v", doc["openapi"])
	}
}

func TestMethodsRoutesAndPanics(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	release := make(chan struct{})
	node := env.StartNode(t, apptest.NodeOptions{Routes: func(a *app.API) {
		a.Route(http.MethodGet, "/boom", func(*fiber.Ctx) error { panic("secret internal detail") })
		a.Route(http.MethodGet, "/fail", func(*fiber.Ctx) error { return fmt.Errorf("dial tcp 10.0.0.1: secret") })
		a.Route(http.MethodGet, "/slow", func(*fiber.Ctx) error { <-release; return nil })
	}})
	for _, tc := range []struct {
		method, path, code string
		status             int
	}{
		{"POST", "/attestations", "METHOD_NOT_ALLOWED", 405},
		{"DELETE", "/stats", "METHOD_NOT_ALLOWED", 405},
		{"PUT", "/attestations/11111111111111111111111111111111", "METHOD_NOT_ALLOWED", 405},
		{"GET", "/unknown", "NOT_FOUND", 404},
		{"POST", "/unknown", "NOT_FOUND", 404},
		{"GET", "/boom", "INTERNAL_ERROR", 500},
		{"GET", "/fail", "INTERNAL_ERROR", 500},
	} {
		r := node.Do(t, tc.method, tc.path, nil, nil)
		if r.Status != tc.status || r.ErrorCode() != tc.code {
			t.Errorf("%s %s: %d %s, want %d %s", tc.method, tc.path, r.Status, r.Body, tc.status, tc.code)
		}
		if strings.Contains(string(r.Body), "secret") {
			t.Errorf("%s %s leaked internals: %s", tc.method, tc.path, r.Body)
		}
	}
	// Outside the API prefix too.
	res, err := http.Get(node.Root + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Errorf("GET / = %d", res.StatusCode)
	}
	// Empty database: lists are empty, stats zero, not errors.
	var lr listResp
	node.Get(t, "/attestations").JSON(t, &lr)
	if len(lr.Data) != 0 || lr.Pagination.Total != 0 || lr.Data == nil {
		t.Fatalf("empty list: %+v", lr)
	}
	// The in-flight gauge counts a request being served, and nothing once
	// every request ended, the panicking one included.
	done := make(chan struct{})
	go func() {
		defer close(done)
		if res, err := http.Get(node.URL + "/slow"); err == nil {
			res.Body.Close()
		}
	}()
	testenv.WaitForState(t, "/slow in flight", testenv.Patience, func() (bool, string) {
		n := inFlight(t, node)
		return n == 1, fmt.Sprintf("in flight %v, want 1", n)
	})
	close(release)
	<-done
	if n := inFlight(t, node); n != 0 {
		t.Fatalf("in flight after every request ended: %v, want 0", n)
	}
}

// inFlight reads attestd_http_requests_in_flight from the node's registry.
func inFlight(t *testing.T, node *apptest.Node) float64 {
	t.Helper()
	mfs, err := node.Reg.Gather()
	testenv.Must(t, err, "gather")
	for _, mf := range mfs {
		if mf.GetName() == "attestd_http_requests_in_flight" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no attestd_http_requests_in_flight")
	return 0
}
