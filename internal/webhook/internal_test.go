package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook/queue"
	"github.com/redis/go-redis/v9"
)

func TestBodyIsStableAndShaped(t *testing.T) {
	e := store.OutboxEvent{ID: 42, Type: "agent.revoked", CreatedAt: time.Date(2026, 11, 21, 10, 0, 0, 700e6, time.UTC),
		Payload: []byte(`{"pda": "x", "slot": 7}`)}
	b := Body(e, config.Origin{})
	if b != `{"id":"evt_42","type":"agent.revoked","createdAt":"2026-11-21T10:00:00Z","data":{"pda":"x","slot":7}}` {
		t.Fatalf("body %s", b)
	}
	if Body(e, config.Origin{}) != b {
		t.Fatal("two bodies of one event differ")
	}
	e.Payload = []byte("not json")
	var v map[string]any
	if err := json.Unmarshal([]byte(Body(e, config.Origin{})), &v); err != nil || v["data"] != nil {
		t.Fatalf("a bad payload must give valid JSON with null data: %v %v", err, v)
	}
}

// TestAttestationCreatedLinksItsProof: an attestation.created delivery
// adds a log member (the SPEC's four members unchanged): the link to the
// attestation's tlog-proof, absolute on the public origin, and its state
// when the event was written; hostile payloads give no link (never a
// link built from a value that is not an address) and valid JSON.
func TestAttestationCreatedLinksItsProof(t *testing.T) {
	const pda = "7Np41oeYqPefeNQEHSv1UDhYrehxin3NStELsSKCT4K2"
	origin := config.Origin{Scheme: "https", Host: "attestd.example.com"}
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	ev := func(typ, payload string) store.OutboxEvent {
		return store.OutboxEvent{ID: 7, Type: typ, CreatedAt: at, Payload: []byte(payload)}
	}
	want := `{"id":"evt_7","type":"attestation.created","createdAt":"2026-11-21T10:00:00Z","data":{"pda":"` + pda + `","commitment":"finalized"},` +
		`"log":{"state":"awaiting_append","proof":"https://attestd.example.com/api/v1/attestations/` + pda + `/proof?format=tlog-proof"}}`
	if b := Body(ev("attestation.created", `{"pda":"`+pda+`","commitment":"finalized"}`), origin); b != want {
		t.Fatalf("body\n%s\nwant\n%s", b, want)
	}
	long := strings.Repeat("1", 45)
	for _, c := range []struct {
		name, typ, payload string
		origin             config.Origin
		state, proof       string // "" state: no log member
	}{
		{"finalized", "attestation.created", `{"pda":"` + pda + `","commitment":"finalized"}`, origin, LogAwaitingAppend, "https://attestd.example.com/api/v1/attestations/" + pda + "/proof?format=tlog-proof"},
		{"confirmed", "attestation.created", `{"pda":"` + pda + `","commitment":"confirmed"}`, origin, LogAwaitingFinalization, "https://attestd.example.com/api/v1/attestations/" + pda + "/proof?format=tlog-proof"},
		{"no origin: a path", "attestation.created", `{"pda":"` + pda + `","commitment":"finalized"}`, config.Origin{}, LogAwaitingAppend, "/api/v1/attestations/" + pda + "/proof?format=tlog-proof"},
		{"origin with a port", "attestation.created", `{"pda":"` + pda + `","commitment":"finalized"}`, config.Origin{Scheme: "http", Host: "127.0.0.1:8080"}, LogAwaitingAppend, "http://127.0.0.1:8080/api/v1/attestations/" + pda + "/proof?format=tlog-proof"},
		{"another event type", "agent.revoked", `{"pda":"` + pda + `","commitment":"finalized"}`, origin, "", ""},
		{"webhook.test", "webhook.test", `{"webhookId":"wh_1"}`, origin, "", ""},
		{"not json", "attestation.created", `not json`, origin, "", ""},
		{"null", "attestation.created", `null`, origin, "", ""},
		{"array", "attestation.created", `[1,2]`, origin, "", ""},
		{"no pda", "attestation.created", `{"commitment":"finalized"}`, origin, "", ""},
		{"empty pda", "attestation.created", `{"pda":"","commitment":"finalized"}`, origin, "", ""},
		{"pda a number", "attestation.created", `{"pda":12,"commitment":"finalized"}`, origin, "", ""},
		{"path traversal", "attestation.created", `{"pda":"../../admin/keys?x=1111111111111111111","commitment":"finalized"}`, origin, "", ""},
		{"another host", "attestation.created", `{"pda":"https://evil.example/","commitment":"finalized"}`, origin, "", ""},
		{"query in pda", "attestation.created", `{"pda":"` + pda[:30] + `?a=b#c","commitment":"finalized"}`, origin, "", ""},
		{"NUL in pda", "attestation.created", `{"pda":"` + pda[:32] + `\u0000","commitment":"finalized"}`, origin, "", ""},
		{"unicode pda", "attestation.created", `{"pda":"` + pda[:31] + `é","commitment":"finalized"}`, origin, "", ""},
		{"base58 excluded 0", "attestation.created", `{"pda":"0` + pda[1:] + `","commitment":"finalized"}`, origin, "", ""},
		{"base58 excluded l", "attestation.created", `{"pda":"l` + pda[1:] + `","commitment":"finalized"}`, origin, "", ""},
		{"too short", "attestation.created", `{"pda":"` + pda[:31] + `","commitment":"finalized"}`, origin, "", ""},
		{"too long", "attestation.created", `{"pda":"` + long + `","commitment":"finalized"}`, origin, "", ""},
		{"oversized", "attestation.created", `{"pda":"` + strings.Repeat("A", 1<<20) + `","commitment":"finalized"}`, origin, "", ""},
		{"unknown commitment", "attestation.created", `{"pda":"` + pda + `","commitment":"processed"}`, origin, "", ""},
		{"no commitment", "attestation.created", `{"pda":"` + pda + `"}`, origin, "", ""},
		{"commitment case", "attestation.created", `{"pda":"` + pda + `","commitment":"Finalized"}`, origin, "", ""},
		{"duplicate pda: the last wins, as data shows it", "attestation.created", `{"pda":"../x","pda":"` + pda + `","commitment":"finalized"}`, origin, LogAwaitingAppend, "https://attestd.example.com/api/v1/attestations/" + pda + "/proof?format=tlog-proof"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := Body(ev(c.typ, c.payload), c.origin)
			if Body(ev(c.typ, c.payload), c.origin) != b {
				t.Fatal("two bodies of one event differ")
			}
			var v struct {
				ID, Type, CreatedAt string
				Data                json.RawMessage
				Log                 *LogLink
			}
			if err := json.Unmarshal([]byte(b), &v); err != nil {
				t.Fatalf("not JSON: %v: %.200s", err, b)
			}
			var all map[string]json.RawMessage
			_ = json.Unmarshal([]byte(b), &all)
			if v.ID != "evt_7" || v.Type != c.typ || v.CreatedAt != "2026-11-21T10:00:00Z" || all["data"] == nil {
				t.Fatalf("the SPEC's members changed: %.200s", b)
			}
			if c.state == "" {
				if v.Log != nil || len(all) != 4 {
					t.Fatalf("want no log member: %.300s", b)
				}
				return
			}
			if v.Log == nil || v.Log.State != c.state || v.Log.Proof != c.proof || len(all) != 5 {
				t.Fatalf("log %+v, want %s %s", v.Log, c.state, c.proof)
			}
		})
	}
}

func TestOutcomeFollowsTheSchedule(t *testing.T) {
	w := &Worker{cfg: Config{Schedule: []time.Duration{30 * time.Second, 2 * time.Minute}}, now: time.Now}
	at := time.Now()
	job := &queue.Job{Delivery: "msg_1", Webhook: "wh_1", Created: at.UnixMilli()}
	m := queue.Msg{Part: 1, StreamID: "1-0", JobID: "msg_1", Job: job}
	fail := result{at: at, status: 500, err: "500"}

	o := w.outcomeOf(m, job, fail)
	if o.result != "retrying" || o.settle.Done || o.attempt.Attempt != 1 || o.attempt.NextAttemptAt == nil {
		t.Fatalf("first failure: %+v", o)
	}
	if d := o.attempt.NextAttemptAt.Sub(at); d < 30*time.Second || d > 33*time.Second {
		t.Fatalf("first retry after %s, want 30 s (+ at most 10%%)", d)
	}
	if o.settle.Record == nil || o.settle.Record.Attempts != 1 || !o.settle.At.Equal(*o.attempt.NextAttemptAt) {
		t.Fatalf("retry record %+v", o.settle)
	}
	job.Attempts = 1
	if o := w.outcomeOf(m, job, result{at: at, status: 429, retryAfter: 10 * time.Minute}); o.attempt.NextAttemptAt.Sub(at) != 10*time.Minute {
		t.Fatalf("Retry-After longer than the schedule: next after %s", o.attempt.NextAttemptAt.Sub(at))
	}
	job.Attempts = 2
	if o := w.outcomeOf(m, job, fail); o.result != "failed" || !o.settle.Done || o.attempt.NextAttemptAt != nil {
		t.Fatalf("schedule exhausted: %+v", o)
	}
	job.Attempts = 0
	if o := w.outcomeOf(m, job, result{at: at, status: 410, err: "gone"}); o.result != "failed" || !o.attempt.Gone {
		t.Fatalf("410: %+v", o)
	}
	if o := w.outcomeOf(m, job, result{at: at, status: 204}); o.result != "succeeded" || !o.settle.Done || !o.attempt.Succeeded {
		t.Fatalf("success: %+v", o)
	}
	job.Manual = true
	if o := w.outcomeOf(m, job, fail); o.result != "failed" || o.attempt.NextAttemptAt != nil || !o.attempt.Manual {
		t.Fatalf("manual failure is never retried: %+v", o)
	}
	for _, r := range []result{{status: 302}, {status: 199}, {status: 0, err: "refused"}} {
		if r.ok() {
			t.Errorf("%+v counted as success", r)
		}
	}
}

func TestRetryAfterAndCleanText(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{"": 0, "120": 2 * time.Minute, "-5": 0, "x": 0, "999999": maxRetryAfter,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second, now.Add(-time.Hour).Format(http.TimeFormat): 0} {
		if got := httpapi.ParseRetryAfter(v, now, maxRetryAfter); got != want {
			t.Errorf("Retry-After %q: %s, want %s", v, got, want)
		}
	}
	s := cleanText("ok\x00\x1b[31m\xff\xfe"+strings.Repeat("é", 2000), 1024)
	if !utf8.ValidString(s) || len(s) > 1024 || strings.ContainsAny(s, "\x00\x1b") || !strings.HasPrefix(s, "ok[31m\uFFFD") {
		t.Fatalf("cleaned %q", s[:20])
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := ConfigFromEnv(env(nil))
	if err != nil || c.Enabled() || c.MaxPerAccount != 25 || len(c.Schedule) != 6 || c.Schedule[5] != 24*time.Hour ||
		c.DisableAfter != 72*time.Hour || c.AllowLoopback || c.HostRate != 50 || c.UnverifiedHostRate != 5 || len(c.VerifySchedule) != 4 ||
		c.VerifySchedule[3] != 30*time.Minute {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = ConfigFromEnv(env(map[string]string{"ATTESTD_WEBHOOK_RETRY_SCHEDULE": "1s, 5s", "ATTESTD_WEBHOOK_ALLOW_LOOPBACK": "1",
		"ATTESTD_WEBHOOK_SECRET_KEYS": "k1:" + strings.Repeat("A", 43) + "=", "ATTESTD_WEBHOOK_CONCURRENCY": "4",
		"ATTESTD_WEBHOOK_HOST_RATE": "0", "ATTESTD_WEBHOOK_VERIFY_SCHEDULE": "1s", "ATTESTD_WEBHOOK_UNVERIFIED_HOST_RATE": "0"}))
	if err != nil || !c.Enabled() || len(c.Schedule) != 2 || !c.AllowLoopback || c.EndpointConcurrency != 4 || c.HostRate != 0 ||
		c.UnverifiedHostRate != 0 || len(c.VerifySchedule) != 1 {
		t.Fatalf("set: %+v %v", c, err)
	}
	_, err = ConfigFromEnv(env(map[string]string{"ATTESTD_WEBHOOK_RETRY_SCHEDULE": "1s,soon", "ATTESTD_WEBHOOK_SECRET_KEYS": "k1:short",
		"ATTESTD_WEBHOOK_ALLOW_LOOPBACK": "yes", "ATTESTD_WEBHOOK_PARTITIONS": "0", "ATTESTD_WEBHOOK_HOST_RATE": "-1",
		"ATTESTD_WEBHOOK_VERIFY_SCHEDULE": "1s,never", "ATTESTD_WEBHOOK_UNVERIFIED_HOST_RATE": "5/s"}))
	for _, name := range []string{"RETRY_SCHEDULE", "SECRET_KEYS", "ALLOW_LOOPBACK", "PARTITIONS", "HOST_RATE", "VERIFY_SCHEDULE", "UNVERIFIED_HOST_RATE"} {
		if err == nil || !strings.Contains(err.Error(), "ATTESTD_WEBHOOK_"+name) {
			t.Errorf("bad %s not reported: %v", name, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "short") {
		t.Errorf("an error quotes key material: %v", err)
	}
	// ATTESTD_WEBHOOK_UNVERIFIED_HOST_RATE: every hostile value refused, the bounds kept.
	for _, v := range []string{"-1", "x", "1e3", "2.5", "99999999999999999999", "1000001", "5\x00", "５", "0x10", "5 5"} {
		if _, err := ConfigFromEnv(env(map[string]string{"ATTESTD_WEBHOOK_UNVERIFIED_HOST_RATE": v})); err == nil ||
			!strings.Contains(err.Error(), "ATTESTD_WEBHOOK_UNVERIFIED_HOST_RATE") {
			t.Errorf("ATTESTD_WEBHOOK_UNVERIFIED_HOST_RATE=%q: %v", v, err)
		}
	}
	for v, want := range map[string]int{"0": 0, "1": 1, " 7 ": 7, "+5": 5, "1000000": 1_000_000} {
		if c, err := ConfigFromEnv(env(map[string]string{"ATTESTD_WEBHOOK_UNVERIFIED_HOST_RATE": v})); err != nil || c.UnverifiedHostRate != want {
			t.Errorf("ATTESTD_WEBHOOK_UNVERIFIED_HOST_RATE=%q: %d %v", v, c.UnverifiedHostRate, err)
		}
	}
}

// TestChallengeAnswer: the answer echoes a verification request's
// challenge, and anything else is not one.
func TestChallengeAnswer(t *testing.T) {
	body := verifyRequest("msg_00000000000000000000000000000001", "wh_000000000000000000000001", "abc-_", time.Unix(0, 0))
	a, ok := ChallengeAnswer(body)
	if !ok || string(a) != `{"challenge":"abc-_"}` {
		t.Fatalf("answer %s %v", a, ok)
	}
	for _, b := range []string{``, `{}`, `{"type":"webhook.test","data":{"challenge":"x"}}`, `{"type":"webhook.verify","data":{}}`,
		`{"type":"webhook.verify","data":{"challenge":""}}`, `[1]`} {
		if a, ok := ChallengeAnswer([]byte(b)); ok {
			t.Errorf("%s answered %s", b, a)
		}
	}
}

// TestThrottleSharesOneRateInRedis: two workers' throttles for one
// webhook admit one burst together, then make callers wait; the key
// lives under the deployment's prefix.
func TestThrottleSharesOneRateInRedis(t *testing.T) {
	url, prefix := testenv.Redis(t)
	opt, err := redis.ParseURL(url)
	testenv.Must(t, err, "redis url")
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	const rate = 40
	a, b := newThrottle(rdb, prefix, rate), newThrottle(rdb, prefix, rate)
	ctx := context.Background()
	admitted, waited := 0, 0
	start := time.Now()
	for i := range 200 {
		th := a
		if i%2 == 1 {
			th = b
		}
		if d := th.wait(ctx, "wh_1"); d == 0 {
			admitted++
		} else if d > 0 {
			waited++
		}
	}
	// The burst (rate), plus what refills during the loop (as long as the
	// loop took: a loaded machine takes longer), plus at most one unspent
	// reservation per worker.
	refilled := int(float64(rate)*time.Since(start).Seconds()) + 1
	if admitted < rate || admitted > rate+refilled+2*a.take || waited == 0 {
		t.Fatalf("admitted %d, waited %d", admitted, waited)
	}
	keys, err := rdb.Keys(ctx, prefix+"rate:wh:wh_1").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("rate key under the prefix: %v %v", keys, err)
	}
	if (*throttle)(nil).wait(ctx, "x") != 0 {
		t.Fatal("no throttle must not wait")
	}
}

// TestHostOfIsOneKeyPerHost: the per-host cap's key ignores case, the
// port and the root's trailing dot.
func TestHostOfIsOneKeyPerHost(t *testing.T) {
	for _, raw := range []string{"https://example.com/a", "https://EXAMPLE.com./b", "https://example.com:443/c",
		"https://Example.Com.:8443/d?x=1"} {
		if got := hostOf(raw); got != "example.com" {
			t.Errorf("hostOf(%q) = %q, want example.com", raw, got)
		}
	}
}
