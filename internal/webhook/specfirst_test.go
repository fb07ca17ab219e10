package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/prometheus/client_golang/prometheus"
)

// specReceiver is a webhook receiver written to SPEC.md only, as Stripe's,
// GitHub's and Svix's subscribers are: it checks x-service-signature
// (sha256= and the hex HMAC-SHA256 of the raw body, keyed with the secret)
// and answers 200 with an empty body. It knows nothing of webhook.verify
// and never echoes anything. A request whose signature matches none of
// the secrets it trusts is answered 401 and counted as refused.
type specReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	secrets []string
	got     []delivery // every request it accepted, whatever its type
	refused int
}

func newSpecReceiver(t *testing.T) *specReceiver {
	rc := &specReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		sig := r.Header.Get("x-service-signature")
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for _, s := range rc.secrets {
			m := hmac.New(sha256.New, []byte(s))
			m.Write(body)
			if hmac.Equal([]byte(sig), []byte("sha256="+hex.EncodeToString(m.Sum(nil)))) {
				rc.got = append(rc.got, delivery{Header: r.Header.Clone(), Body: body, At: time.Now()})
				w.WriteHeader(http.StatusOK)
				return
			}
		}
		rc.refused++
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *specReceiver) URL() string { return rc.srv.URL + "/webhooks/attestd" }

// trust adds a webhook's secret.
func (rc *specReceiver) trust(secret string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.secrets = append(rc.secrets, secret)
}

// requests is every request accepted, verification requests included.
func (rc *specReceiver) requests() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

func (rc *specReceiver) refusals() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.refused
}

// split sorts the requests a receiver accepted: the deliveries of type
// typ by webhook-id (the test's bookkeeping, not the receiver's: it
// treats every request alike), and how many were verification requests.
func split(t testing.TB, ds []delivery, typ string) (byID map[string]int, verifies int) {
	byID = map[string]int{}
	for _, d := range ds {
		if isVerification(d.Body) {
			verifies++
			continue
		}
		if _, ty := d.event(t); ty == typ {
			byID[d.Header.Get("webhook-id")]++
		}
	}
	return byID, verifies
}

// TestSpecReceiverGetsEveryEvent: a receiver that only verifies signatures
// and answers 200 (SPEC.md's) gets every event, those before its first
// worker and after, and "Send test", under the default caps; its endpoint
// verification ends unverified after one request (it answered, without
// the challenge), and the webhook says which cap applies and what
// answering gives.
func TestSpecReceiverGetsEveryEvent(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	d := webhook.DefaultConfig()
	cfg.HostRate, cfg.UnverifiedHostRate = d.HostRate, d.UnverifiedHostRate
	h := newHarness(t, harnessOpt{cfg: &cfg})
	key := h.Key(t, "spec")
	rc := newSpecReceiver(t)
	w := h.Create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}})
	rc.trust(w.Secret)
	insertEvents(t, h.env.Store, 3, agentA, "ToolCall")
	h.startWorker(t, cfg, "w1")
	insertEvents(t, h.env.Store, 2, agentA, "ToolCall")
	if r := h.Do(t, http.MethodPost, "/webhooks/"+w.ID+"/test", key, nil); r.Status != http.StatusAccepted {
		t.Fatalf("send test: %d %s", r.Status, r.Body)
	}
	testenv.WaitFor(t, "every event and the test event at the receiver", 60*time.Second, func() bool {
		created, _ := split(t, rc.requests(), "attestation.created")
		tests, _ := split(t, rc.requests(), "webhook.test")
		return len(created) == 5 && len(tests) == 1
	})
	if n := rc.refusals(); n != 0 {
		t.Fatalf("%d requests were refused by the receiver (bad signature)", n)
	}
	for _, d := range rc.requests() {
		checkSignatures(t, w.Secret, d)
	}
	v := h.waitVerification(t, key, w.ID, "unverified")
	if v.Attempts != 1 || v.Error == nil || v.NextAttemptAt != nil || v.HostRateLimit == nil || *v.HostRateLimit != d.UnverifiedHostRate ||
		v.VerifiedHostRateLimit == nil || *v.VerifiedHostRateLimit != d.HostRate {
		t.Fatalf("verification of a receiver that answers 200 without the challenge: %+v (error %s)", v, deref(v.Error))
	}
	if _, n := split(t, rc.requests(), ""); n != 1 {
		t.Errorf("%d verification requests, want 1 (the receiver answered the first)", n)
	}
	testenv.WaitFor(t, "every delivery succeeded", 30*time.Second, func() bool {
		c := deliveryCounts(t, h, []string{w.ID})
		return c["succeeded"] == 6 && len(c) == 1
	})
}

// counter sums a counter's series over registries.
func counter(t *testing.T, name string, regs ...*prometheus.Registry) float64 {
	t.Helper()
	sum := 0.0
	for _, r := range regs {
		mfs, err := r.Gather()
		if err != nil {
			t.Fatalf("gather: %v", err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// mostWithin is the most times of at (sorted) that fall in any window of
// length d.
func mostWithin(at []time.Time, d time.Duration) int {
	most, j := 0, 0
	for i := range at {
		for at[i].Sub(at[j]) >= d {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// TestFarmStaysUnderUnverifiedCap is the farm: 3 accounts x 8 webhooks at
// one receiver host that never echoes the challenge (it verifies
// signatures and answers 200), served by two workers. Every event reaches
// it, and what arrives there (deliveries and verification requests) stays
// under the unverified cap: over the whole run and in any second, at most
// the cap's rate times the time plus what the design allows (a burst, and
// requests sent late on their turn: at most turnLate). The jobs over the
// cap wait their turn once each: the deferrals stay about one per
// delivery (no hot loop over held events).
func TestFarmStaysUnderUnverifiedCap(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.UnverifiedHostRate, cfg.HostRate = 10, 1000
	h := newHarness(t, harnessOpt{cfg: &cfg})
	rc := newSpecReceiver(t)
	const accounts, perAccount, before, during = 3, 8, 3, 2
	var ids []string
	for a := range accounts {
		key := h.Key(t, fmt.Sprintf("farm%d", a))
		for range perAccount {
			w := h.Create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}})
			rc.trust(w.Secret)
			ids = append(ids, w.ID)
		}
	}
	insertEvents(t, h.env.Store, before, agentA, "ToolCall")
	r1, r2 := prometheus.NewRegistry(), prometheus.NewRegistry()
	start := time.Now()
	startWorkerReg(t, h.env, h.rdb, cfg, "w1", r1)
	startWorkerReg(t, h.env, h.rdb, cfg, "w2", r2)
	insertEvents(t, h.env.Store, during, agentA, "ToolCall")
	want := len(ids) * (before + during)
	testenv.WaitFor(t, "every event at the receiver", 180*time.Second, func() bool {
		got, _ := split(t, rc.requests(), "attestation.created")
		return len(got) == want
	})
	reqs := rc.requests()
	at := make([]time.Time, len(reqs))
	for i, d := range reqs {
		at[i] = d.At
	}
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	span := at[len(at)-1].Sub(at[0])
	burst := max(1, cfg.UnverifiedHostRate/10)
	allowed := func(d time.Duration) int {
		return int(float64(cfg.UnverifiedHostRate)*(d+2*time.Second+100*time.Millisecond).Seconds()) + burst
	}
	got, verifies := split(t, reqs, "attestation.created")
	t.Logf("%d deliveries and %d verification requests in %s (%.1f/s; the cap is %d/s), at most %d in a second; all there %s after the workers started",
		want, verifies, span.Round(time.Millisecond), float64(len(at)-1)/span.Seconds(), cfg.UnverifiedHostRate,
		mostWithin(at, time.Second), time.Since(start).Round(time.Second))
	if len(at) > allowed(span) {
		t.Errorf("%d requests reached the receiver in %s; the unverified cap of %d/s allows at most %d", len(at), span, cfg.UnverifiedHostRate, allowed(span))
	}
	if most := mostWithin(at, time.Second); most > allowed(time.Second) {
		t.Errorf("%d requests reached the receiver within one second; the unverified cap of %d/s allows at most %d", most, cfg.UnverifiedHostRate, allowed(time.Second))
	}
	if verifies != len(ids) {
		t.Errorf("%d verification requests for %d webhooks, want one each (the receiver answered)", verifies, len(ids))
	}
	for id, n := range got {
		if n > 1 {
			t.Logf("delivery %s arrived %d times (at least once: receivers deduplicate on webhook-id)", id, n)
		}
	}
	deferred := counter(t, "attestd_webhook_deferrals_total", r1, r2)
	t.Logf("%.0f deferrals for %d deliveries", deferred, want)
	if deferred > float64(2*want) {
		t.Errorf("%.0f deferrals for %d deliveries: held jobs were looked at again and again (a hot loop), not once per turn", deferred, want)
	}
	if n := rc.refusals(); n != 0 {
		t.Errorf("%d requests refused by the receiver (bad signature)", n)
	}
	key := h.Key(t, "farm0")
	for _, id := range ids[:perAccount] {
		if v := h.verification(t, key, id); v.Status != "unverified" || v.Attempts != 1 || v.HostRateLimit == nil ||
			*v.HostRateLimit != cfg.UnverifiedHostRate || v.VerifiedHostRateLimit == nil || *v.VerifiedHostRateLimit != cfg.HostRate {
			t.Errorf("%s: verification %+v", id, v)
		}
	}
}

// TestAnsweringTheChallengeLiftsTheCap: two webhooks at one host, one
// whose receiver answers the challenge and one written to SPEC.md only.
// The verified one gets its events at the verified cap while the other is
// still getting its own at the unverified cap; both get them all.
func TestAnsweringTheChallengeLiftsTheCap(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.UnverifiedHostRate, cfg.HostRate = 2, 1000
	h := newHarness(t, harnessOpt{cfg: &cfg})
	key := h.Key(t, "lift")
	echo := newReceiver(t, nil)
	spec := newSpecReceiver(t)
	ve := h.Create(t, key, map[string]any{"url": echo.URL(), "events": []string{"attestation.created"}})
	vs := h.Create(t, key, map[string]any{"url": spec.URL(), "events": []string{"attestation.created"}})
	spec.trust(vs.Secret)
	h.startWorker(t, cfg, "w1")
	if v := h.waitVerification(t, key, ve.ID, "verified"); v.HostRateLimit == nil || *v.HostRateLimit != cfg.HostRate {
		t.Fatalf("verified: %+v", v)
	}
	if v := h.waitVerification(t, key, vs.ID, "unverified"); v.HostRateLimit == nil || *v.HostRateLimit != cfg.UnverifiedHostRate {
		t.Fatalf("unverified: %+v", v)
	}
	const events = 20
	insertEvents(t, h.env.Store, events, agentA, "ToolCall")
	start := time.Now()
	testenv.WaitFor(t, "every event at the verified receiver", 60*time.Second, func() bool { return len(echo.eventIDs(t)) == events })
	took := time.Since(start)
	got, _ := split(t, spec.requests(), "attestation.created")
	bound := int(float64(cfg.UnverifiedHostRate)*(took+2*time.Second+100*time.Millisecond).Seconds()) + 1
	t.Logf("the verified receiver had all %d events after %s; the unverified one %d of them", events, took.Round(time.Millisecond), len(got))
	if len(got) > bound || len(got) == events {
		t.Fatalf("the unverified receiver had %d events when the verified one had all %d after %s (its cap allows %d)", len(got), events, took, bound)
	}
	testenv.WaitFor(t, "every event at the unverified receiver", 60*time.Second, func() bool {
		got, _ := split(t, spec.requests(), "attestation.created")
		return len(got) == events
	})
}

// TestOwnRateHoldsEachDeliveryOnce: a webhook limited to rate deliveries
// a second (rateLimitPerSecond), events queued far faster than that, two
// workers. The receiver gets every event, never sooner than the
// webhook's schedule allows, fleet-wide: a delivery goes no earlier than
// its turn, so over the run at most rate a second (plus the first) and in
// any second at most what the turns allow (rate, a burst, and what is
// sent late on its turn). A delivery over the rate waits for its
// webhook's turn once, in the retry set: the deferrals stay about one per
// held delivery, not a loop that puts the same jobs off again and again.
func TestOwnRateHoldsEachDeliveryOnce(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.HostRate = 1000 // a host cap that does not bind: the turns are taken with it
	h := newHarness(t, harnessOpt{cfg: &cfg})
	key := h.Key(t, "ownrate")
	rc := newReceiver(t, nil)
	r1, r2 := prometheus.NewRegistry(), prometheus.NewRegistry()
	startWorkerReg(t, h.env, h.rdb, cfg, "w1", r1)
	startWorkerReg(t, h.env, h.rdb, cfg, "w2", r2)
	c := h.verifiedHook(t, key, rc)
	const rate, events = 10, 60
	if v := h.Patch(t, key, c.ID, map[string]any{"rateLimitPerSecond": rate}); v.RateLimitPerSecond == nil || *v.RateLimitPerSecond != rate {
		t.Fatalf("after PATCH: %+v", v)
	}
	// No turn can be before the events exist.
	inserted := time.Now()
	insertEvents(t, h.env.Store, events, agentA, "ToolCall")
	testenv.WaitFor(t, "every event at the receiver", 60*time.Second, func() bool { return len(rc.eventIDs(t)) == events })
	ds := rc.deliveries()
	at := make([]time.Time, len(ds))
	for i, d := range ds {
		at[i] = d.At
	}
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	span := at[len(at)-1].Sub(at[0])
	most := mostWithin(at, time.Second)
	deferred := counter(t, "attestd_webhook_deferrals_total", r1, r2)
	t.Logf("%d deliveries of %d events in %s (%.2f/s after the first; the limit is %d/s), at most %d in a second; %.0f deferrals",
		len(at), events, span.Round(time.Millisecond), float64(len(at)-1)/span.Seconds(), rate, most, deferred)
	// The turns are 1/rate apart (a burst of one at 10/s) and none is
	// sent before its turn: the k-th delivery arrives at least k/rate
	// after the first turn, which is no earlier than the events' insert
	// (a bound a loaded machine cannot break: it only makes them later),
	// so in the first d seconds at most rate*d + 1.
	for k := range at {
		if turn := time.Duration(k) * time.Second / rate; at[k].Sub(inserted) < turn-5*time.Millisecond {
			t.Errorf("delivery %d arrived %s after the events were inserted; at %d/s its turn is at least %s after it",
				k, at[k].Sub(inserted), rate, turn)
			break
		}
	}
	burst := max(1, rate/10)
	if allowed := int(float64(rate)*(time.Second+2*time.Second+100*time.Millisecond).Seconds()) + burst; most > allowed {
		t.Errorf("%d deliveries within one second; %d/s allows at most %d (turns sent up to 2 s late)", most, rate, allowed)
	}
	// Every delivery but the first few (sent at once, or after a wait of
	// at most a quarter of a second in place) is held once.
	if deferred > events+events/10 {
		t.Errorf("%.0f deferrals for %d deliveries: held jobs were put off again and again (a hot loop), not once per turn", deferred, events)
	}
	if deferred < events/2 {
		t.Errorf("%.0f deferrals for %d deliveries at %d/s: the held ones did not wait in the retry set", deferred, events, rate)
	}
}
