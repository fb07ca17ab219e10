package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/testenv"
	"github.com/attestd/attestd/store"
	"github.com/attestd/attestd/webhook/queue"
	"github.com/redis/go-redis/v9"
)

func TestBodyIsStableAndShaped(t *testing.T) {
	e := store.OutboxEvent{ID: 42, Type: "attestation.created", CreatedAt: time.Date(2026, 11, 21, 10, 0, 0, 700e6, time.UTC),
		Payload: []byte(`{"pda": "x", "slot": 7, "agentPda": "y"}`)}
	b := Body(e)
	if b != `{"id":"evt_42","type":"attestation.created","createdAt":"2026-11-21T10:00:00Z","data":{"pda":"x","slot":7,"agentPda":"y"}}` {
		t.Fatalf("body %s", b)
	}
	if Body(e) != b {
		t.Fatal("two bodies of one event differ")
	}
	e.Payload = []byte("not json")
	var v map[string]any
	if err := json.Unmarshal([]byte(Body(e)), &v); err != nil || v["data"] != nil {
		t.Fatalf("a bad payload must give valid JSON with null data: %v %v", err, v)
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
		if got := ParseRetryAfter(v, now); got != want {
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

// FuzzParseBody: no body panics or is accepted with an invalid field; the
// only errors are 4xx API errors.
func FuzzParseBody(f *testing.F) {
	for _, s := range []string{`{"url":"https://example.com/x","events":["attestation.created"]}`,
		`{"filter":{"agents":["9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"],"actionTypes":["ToolCall"]}}`,
		`{"active":true,"description":"x"}`, `{"events":[]}`, `[]`, `{"filter":{"agents":[1]}}`, `{"url":"\u0000"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r, err := parseBody("application/json", []byte(body), "url", "events", "filter", "description", "active")
		if err != nil {
			var ae *apierror.Error
			if !errors.As(err, &ae) || ae.Status < 400 || ae.Status > 499 {
				t.Fatalf("error %v", err)
			}
			return
		}
		if r.Events != nil && checkEvents(*r.Events) != nil {
			t.Fatalf("accepted events %v", *r.Events)
		}
		if r.Description != nil && checkDescription(*r.Description) != nil {
			t.Fatalf("accepted description %q", *r.Description)
		}
		if r.Filter != nil && (len(r.Filter.Agents) > maxAgents || r.Filter.Agents == nil || r.Filter.ActionTypes == nil) {
			t.Fatalf("accepted filter %+v", r.Filter)
		}
	})
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
	// The burst (rate), plus what refills during the loop, plus at most
	// one unspent reservation per worker.
	if admitted < rate || admitted > rate+rate/2+2*a.take || waited == 0 {
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
