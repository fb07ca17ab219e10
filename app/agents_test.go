package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
)

type agentListResp struct {
	Data       []store.AgentItem `json:"data"`
	Pagination struct {
		Limit      int    `json:"limit"`
		Offset     int    `json:"offset"`
		Total      int64  `json:"total"`
		NextCursor string `json:"nextCursor"`
	} `json:"pagination"`
}

// TestListAgentsNewestActivityFirst: GET /agents pages every agent once,
// by cursor and by offset, in the order of their newest activity, with
// the counts the database holds; a new attestation moves its agent first.
func TestListAgentsNewestActivityFirst(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 13, Attestations: 2000})
	node := env.StartNode(t, apptest.NodeOptions{})
	ctx := context.Background()
	type row struct {
		pda   string
		n     int64
		last  *time.Time
		act   time.Time
		revok bool
	}
	var want []row
	rows, err := env.Store.Pool().Query(ctx, `SELECT a.pda, (SELECT count(*) FROM attestations t WHERE t.agent_pda = a.pda),
			(SELECT max(ts) FROM attestations t WHERE t.agent_pda = a.pda), a.updated_at, a.revoked FROM agents a`)
	testenv.Must(t, err, "agents")
	for rows.Next() {
		var r row
		testenv.Must(t, rows.Scan(&r.pda, &r.n, &r.last, &r.act, &r.revok), "scan")
		if r.last != nil && r.last.After(r.act) {
			r.act = *r.last
		}
		want = append(want, r)
	}
	rows.Close()
	// Expected order: activity desc, pda desc.
	for i := range want {
		for j := i + 1; j < len(want); j++ {
			a, b := want[i], want[j]
			if b.act.After(a.act) || (b.act.Equal(a.act) && b.pda > a.pda) {
				want[i], want[j] = b, a
			}
		}
	}
	for _, limit := range []int{1, 4, 13, 100} {
		var got []store.AgentItem
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 20 {
				t.Fatalf("limit %d: more than 20 pages", limit)
			}
			q := url.Values{"limit": {strconv.Itoa(limit)}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			var p agentListResp
			r := node.Get(t, "/agents?"+q.Encode())
			if r.Status != 200 {
				t.Fatalf("limit %d: %d %s", limit, r.Status, r.Body)
			}
			r.JSON(t, &p)
			if p.Pagination.Total != int64(len(want)) || p.Pagination.Limit != min(limit, 100) {
				t.Errorf("limit %d: pagination %+v", limit, p.Pagination)
			}
			got = append(got, p.Data...)
			if p.Pagination.NextCursor == "" {
				break
			}
			cursor = p.Pagination.NextCursor
		}
		if len(got) != len(want) {
			t.Fatalf("limit %d: %d agents, want %d", limit, len(got), len(want))
		}
		for i, g := range got {
			w := want[i]
			if g.PDA != w.pda || g.AttestationCount != w.n || !g.LastActivityAt.Equal(w.act.Truncate(time.Second)) || g.Revoked != w.revok ||
				(w.last == nil) != (g.LastAttestationAt == nil) || (w.last != nil && !g.LastAttestationAt.Equal(*w.last)) {
				t.Errorf("limit %d, row %d: %+v, want %+v", limit, i, g, w)
			}
		}
	}
	var byOffset agentListResp
	node.Get(t, "/agents?limit=3&offset=3").JSON(t, &byOffset)
	if len(byOffset.Data) != 3 || byOffset.Data[0].PDA != want[3].pda {
		t.Errorf("offset 3: %+v", byOffset.Data)
	}

	// A new attestation of the least active agent puts it first.
	last := want[len(want)-1]
	agent := env.Seeded.Agents[0]
	for _, a := range env.Seeded.Agents {
		if a.PDA.String() == last.pda {
			agent = a
		}
	}
	recs := seed.NewAttestations([]seed.Agent{agent}, 1, time.Now().Add(time.Hour), 1<<40, 99)
	_, err = env.Store.Apply(ctx, &store.Batch{Attestations: recs})
	testenv.Must(t, err, "apply")
	node.SettleEpoch(t)
	var first agentListResp
	node.Get(t, "/agents?limit=1").JSON(t, &first)
	if len(first.Data) != 1 || first.Data[0].PDA != agent.PDA.String() || first.Data[0].AttestationCount != last.n+1 {
		t.Errorf("after a new attestation: %+v, want %s first with %d", first.Data, agent.PDA, last.n+1)
	}
	// A fork removes it: the agent's activity goes back.
	_, err = env.Store.Pool().Exec(ctx, `UPDATE attestations SET finalized = false WHERE pda = $1`, recs[0].PDA)
	testenv.Must(t, err, "unfinalize")
	_, err = env.Store.RemoveTransactions(ctx, []string{recs[0].TxSignature})
	testenv.Must(t, err, "remove")
	var la *time.Time
	testenv.Must(t, env.Store.Pool().QueryRow(ctx, `SELECT last_attestation_at FROM agents WHERE pda = $1`, agent.PDA.String()).Scan(&la), "read")
	if (la == nil) != (last.last == nil) || (la != nil && !la.Equal(*last.last)) {
		t.Errorf("after the fork removal: last attestation %v, want %v", la, last.last)
	}
}

// TestAgentListParams: the list's parameters, good and bad.
func TestAgentListParams(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 3, Attestations: 50})
	node := env.StartNode(t, apptest.NodeOptions{})
	var lr listResp
	node.Get(t, "/attestations?limit=1").JSON(t, &lr)
	otherCursor := lr.Pagination.NextCursor
	good := app.EncodeAgentCursor(&store.AgentCursor{ActivityAt: time.Now(), PDA: env.Seeded.Agents[0].PDA.String()})
	for _, tc := range []struct {
		query  string
		status int
		n      int
	}{
		{"", 200, 3},
		{"?limit=2", 200, 2},
		{"?limit=1000", 200, 3},
		{"?offset=2", 200, 1},
		{"?offset=100000", 200, 0},
		{"?cursor=" + good, 200, -1},
		{"?limit=0", 400, 0},
		{"?limit=x", 400, 0},
		{"?offset=-1", 400, 0},
		{"?offset=100001", 400, 0},
		{"?cursor=" + good + "&offset=1", 400, 0},
		{"?cursor=" + otherCursor, 400, 0}, // an /attestations cursor
		{"?cursor=%00%01", 400, 0},
		{"?cursor=" + strings.Repeat("A", 200), 400, 0},
		{"?cursor=YS45OTk5OTk5OTk5OTk5OTk5OTk5OTkuMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTEx", 400, 0}, // time out of range
		{"?agentPda=x", 400, 0},
		{"?limit=1&limit=2", 400, 0},
	} {
		r := node.Get(t, "/agents"+tc.query)
		if r.Status != tc.status {
			t.Errorf("%q: %d, want %d: %s", tc.query, r.Status, tc.status, r.Body)
			continue
		}
		if tc.status != 200 {
			if r.ErrorCode() != "INVALID_PARAM" {
				t.Errorf("%q: code %q", tc.query, r.ErrorCode())
			}
			continue
		}
		var p agentListResp
		r.JSON(t, &p)
		if tc.n >= 0 && len(p.Data) != tc.n {
			t.Errorf("%q: %d agents, want %d", tc.query, len(p.Data), tc.n)
		}
	}
}

type activityResp struct {
	Data struct {
		AgentPDA *string `json:"agentPda"`
		Bucket   string  `json:"bucket"`
		From, To string
		Series   []struct {
			At     string           `json:"at"`
			Total  int64            `json:"total"`
			ByType map[string]int64 `json:"byType"`
		} `json:"series"`
	} `json:"data"`
}

// TestActivitySeries: the hourly and daily series sum to what the rows
// say, bucket by bucket and type by type; the range is bounded and
// checked.
func TestActivitySeries(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	env := apptest.NewEnv(t, apptest.Options{Agents: 4, Attestations: 3000})
	node := env.StartNode(t, apptest.NodeOptions{Configure: func(d *app.Deps) { d.Now = func() time.Time { return now } }})
	agent := env.Seeded.Agents[1].PDA.String()
	ctx := context.Background()
	countIn := func(agent string, from, to time.Time, typ string) int64 {
		q := `SELECT count(*) FROM attestations WHERE ts >= $1 AND ts < $2 AND ($3 = '' OR agent_pda = $3)
			AND ($4 = '' OR action_type = array_position(ARRAY['Transaction','Decision','ModelInvocation','ToolCall','ResourceAccess','PolicyCheck','Custom'], $4) - 1)`
		var n int64
		testenv.Must(t, env.Store.Pool().QueryRow(ctx, q, from, to, agent, typ).Scan(&n), "count")
		return n
	}
	for _, tc := range []struct {
		path    string
		agent   string
		buckets int // -1: any
		step    time.Duration
	}{
		{"/stats/activity", "", 24, time.Hour},
		{"/stats/activity?bucket=hour&from=" + now.Add(-72*time.Hour).Format(time.RFC3339), "", -1, time.Hour},
		{"/stats/activity?bucket=day", "", -1, 24 * time.Hour},
		{"/stats/activity?bucket=day&from=" + now.AddDate(0, 0, -30).Format("2006-01-02"), "", 31, 24 * time.Hour},
		{"/agents/" + agent + "/activity?bucket=day", agent, -1, 24 * time.Hour},
		{"/agents/" + agent + "/activity?bucket=hour&from=" + now.AddDate(0, 0, -7).Format(time.RFC3339), agent, -1, time.Hour},
	} {
		var a activityResp
		r := node.Get(t, tc.path)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", tc.path, r.Status, r.Body)
		}
		r.JSON(t, &a)
		if tc.buckets >= 0 && len(a.Data.Series) != tc.buckets {
			t.Errorf("%s: %d buckets, want %d", tc.path, len(a.Data.Series), tc.buckets)
		}
		if (tc.agent == "") != (a.Data.AgentPDA == nil) {
			t.Errorf("%s: agentPda %v", tc.path, a.Data.AgentPDA)
		}
		var sum int64
		for i, p := range a.Data.Series {
			at, err := time.Parse(time.RFC3339, p.At)
			testenv.Must(t, err, "at")
			if i == 0 && p.At != a.Data.From {
				t.Errorf("%s: first bucket %s, from %s", tc.path, p.At, a.Data.From)
			}
			if want := countIn(tc.agent, at, at.Add(tc.step), ""); p.Total != want {
				t.Errorf("%s: bucket %s total %d, rows %d", tc.path, p.At, p.Total, want)
			}
			var types int64
			for typ, n := range p.ByType {
				types += n
				if p.Total > 0 && i%5 == 0 {
					if want := countIn(tc.agent, at, at.Add(tc.step), typ); n != want {
						t.Errorf("%s: bucket %s %s %d, rows %d", tc.path, p.At, typ, n, want)
					}
				}
			}
			if types != p.Total {
				t.Errorf("%s: bucket %s types sum to %d, total %d", tc.path, p.At, types, p.Total)
			}
			sum += p.Total
		}
		from, _ := time.Parse(time.RFC3339, a.Data.From)
		to, _ := time.Parse(time.RFC3339, a.Data.To)
		if want := countIn(tc.agent, from, to, ""); sum != want {
			t.Errorf("%s: series sums to %d, rows in [from, to) %d", tc.path, sum, want)
		}
		if strings.Contains(tc.path, "bucket=day") && !strings.Contains(tc.path, "from=") {
			if total := countIn(tc.agent, time.Time{}, now.Add(time.Hour), ""); sum != total {
				t.Errorf("%s: the whole history is %d, the series %d", tc.path, total, sum)
			}
		}
	}
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/stats/activity?bucket=week", 400},
		{"/stats/activity?bucket=", 400},
		{"/stats/activity?from=2020-01-01", 400}, // longer than 744 hours
		{"/stats/activity?bucket=day&from=1990-01-01&to=2026-01-01", 400},
		{"/stats/activity?from=2026-01-02&to=2026-01-01", 400},
		{"/stats/activity?from=2026-01-01T10:00:00Z&to=2026-01-01T10:00:00Z", 400},
		{"/stats/activity?from=yesterday", 400},
		{"/stats/activity?to=" + strings.Repeat("9", 100), 400},
		{"/stats/activity?limit=5", 400},
		{"/stats/activity?from=2026-01-01T10:30:00Z&to=2026-01-01T10:30:01Z", 200}, // one bucket
		{"/stats/activity?bucket=day&from=0001-01-01&to=0001-01-02", 200},
		{"/stats/activity?bucket=day&from=9999-12-30", 400}, // to (now) before from
		{"/agents/nope/activity", 400},
		{"/agents/11111111111111111111111111111111/activity", 404},
	} {
		r := node.Get(t, tc.path)
		if r.Status != tc.status {
			t.Errorf("%s: %d, want %d: %s", tc.path, r.Status, tc.status, r.Body)
		}
	}
}

// TestSamplePayloads: the seed publishes its newest attestations'
// payloads, each under the SHA-256 of its bytes; the route finds one by
// hash and refuses a malformed hash.
func TestSamplePayloads(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 3, Attestations: 200})
	node := env.StartNode(t, apptest.NodeOptions{})
	if len(env.Seeded.Samples) != seed.SampleCount {
		t.Fatalf("the seed published %d samples, want %d", len(env.Seeded.Samples), seed.SampleCount)
	}
	var all struct {
		Data []store.Sample `json:"data"`
	}
	node.Get(t, "/samples").JSON(t, &all)
	if len(all.Data) != seed.SampleCount {
		t.Fatalf("/samples: %d", len(all.Data))
	}
	for _, s := range env.Seeded.Samples {
		sum := sha256.Sum256([]byte(s.Payload))
		if hex.EncodeToString(sum[:]) != s.ActionHash {
			t.Errorf("sample %s: payload does not hash to its actionHash", s.PDA)
		}
		var one struct{ Data attestation.Attestation }
		node.Get(t, "/attestations/"+s.PDA).JSON(t, &one)
		if one.Data.ActionHash != s.ActionHash {
			t.Errorf("sample %s: the attestation's hash is %s, the sample's %s", s.PDA, one.Data.ActionHash, s.ActionHash)
		}
		var got struct {
			Data []store.Sample `json:"data"`
		}
		node.Get(t, "/samples?actionHash="+s.ActionHash).JSON(t, &got)
		if len(got.Data) != 1 || got.Data[0].Payload != s.Payload {
			t.Errorf("sample %s by hash: %+v", s.PDA, got.Data)
		}
	}
	var none struct {
		Data []store.Sample `json:"data"`
	}
	node.Get(t, "/samples?actionHash="+strings.Repeat("0", 64)).JSON(t, &none)
	if none.Data == nil || len(none.Data) != 0 {
		t.Errorf("an unknown hash: %+v", none.Data)
	}
	for _, q := range []string{"?actionHash=" + strings.Repeat("A", 64), "?actionHash=abc", "?actionHash=" + strings.Repeat("g", 64),
		"?actionHash=" + strings.Repeat("0", 65), "?limit=0", "?hash=1"} {
		if r := node.Get(t, "/samples"+q); r.Status != 400 {
			t.Errorf("/samples%s: %d", q, r.Status)
		}
	}
	// The database refuses a sample that does not hash to its key.
	_, err := env.Store.Pool().Exec(context.Background(), `INSERT INTO sample_payloads (action_hash, payload) VALUES (sha256('a'), 'b')`)
	if err == nil {
		t.Error("a sample under another payload's hash was stored")
	}
}
