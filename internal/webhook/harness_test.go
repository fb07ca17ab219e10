package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/testing/webhooktest"
	"github.com/attestd/attestd/internal/tracing"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/internal/webhook/queue"
	"github.com/attestd/attestd/internal/webhookapi"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { apptest.Main(m) }

// testConfig is a configuration for tests: loopback receivers allowed,
// short retries and timeouts.
func testConfig(t testing.TB) webhook.Config {
	c := webhook.DefaultConfig()
	c.Keys = webhooktest.Keys(t)
	c.AllowLoopback = true
	c.Timeout = 3 * time.Second
	c.Schedule = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}
	c.ClaimIdle = 2 * time.Second
	c.PollInterval = 20 * time.Millisecond
	c.EndpointRate = 0
	c.HostRate, c.UnverifiedHostRate = 0, 0 // the per-host caps have their own tests
	c.VerifySchedule = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}
	c.Partitions = 3
	return c
}

// harness is an API node with the key and webhook routes over one test
// database and Redis prefix.
type harness struct {
	webhooktest.Client // the account holder's requests, once the node runs
	env                *apptest.Env
	node               *apptest.Node
	keys               *apikey.Service
	cfg                webhook.Config
	rdb                redis.UniversalClient
	q                  *queue.Queue
}

type harnessOpt struct {
	cfg      *webhook.Config
	redisURL string // "" : the shared server
	env      *apptest.Env
}

func newHarness(t *testing.T, o harnessOpt) *harness {
	t.Helper()
	h := &harness{env: o.env}
	if h.env == nil {
		if o.redisURL != "" {
			h.env = apptest.NewEnvOn(t, testenv.Database(t), o.redisURL, testenv.Name("t")+":", apptest.Options{})
		} else {
			h.env = apptest.NewEnv(t, apptest.Options{})
		}
	}
	h.cfg = testConfig(t)
	if o.cfg != nil {
		h.cfg = *o.cfg
	}
	h.rdb = redisClient(t, h.env.RedisURL)
	h.q = queue.New(h.rdb, h.env.Prefix, h.cfg.Partitions)
	var deps app.Deps
	h.node = h.env.StartNode(t, apptest.NodeOptions{
		Configure: func(d *app.Deps) {
			d.Trace = tracing.Middleware() // as serve: nil unless a test turned tracing on
			deps = *d
		},
		Routes: func(api *app.API) {
			svc, err := apikey.New(context.Background(), apikey.Deps{Store: deps.Store, Logger: deps.Logger})
			testenv.Must(t, err, "key service")
			h.keys = svc
			svc.Routes(api)
			a, err := webhookapi.NewAPI(webhookapi.APIDeps{Auth: svc.Require(apikey.RequireOptions{}), Store: deps.Store, Queue: h.q, Config: h.cfg, Logger: apptest.Logger()})
			testenv.Must(t, err, "webhook api")
			a.Routes(api)
		},
	})
	t.Cleanup(h.keys.Close)
	h.Client = webhooktest.Client{Node: h.node, Keys: h.keys}
	return h
}

// redisClient is a client with timeouts that tolerate a loaded machine.
func redisClient(t testing.TB, url string) *redis.Client {
	opt, err := redis.ParseURL(url)
	testenv.Must(t, err, "redis url")
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 2*time.Second, 3*time.Second, 3*time.Second
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// verificationView is a webhook's verification as GET /webhooks/:id shows it.
type verificationView struct {
	Status                string  `json:"status"`
	At                    *string `json:"at"`
	Attempts              int     `json:"attempts"`
	NextAttemptAt         *string `json:"nextAttemptAt"`
	Error                 *string `json:"error"`
	HostRateLimit         *int    `json:"hostRateLimit"`
	VerifiedHostRateLimit *int    `json:"verifiedHostRateLimit"`
}

// verification reads the webhook's verification.
func (h *harness) verification(t *testing.T, key, id string) verificationView {
	t.Helper()
	r := h.Do(t, http.MethodGet, "/webhooks/"+id, key, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("get webhook: %d %s", r.Status, r.Body)
	}
	var out struct {
		Data struct{ Verification verificationView }
	}
	r.JSON(t, &out)
	return out.Data.Verification
}

// waitVerification waits until the webhook's verification status is want.
func (h *harness) waitVerification(t *testing.T, key, id, want string) verificationView {
	t.Helper()
	var v verificationView
	testenv.WaitForState(t, fmt.Sprintf("verification of %s %s", id, want), testenv.Patience, func() (bool, string) {
		v = h.verification(t, key, id)
		return v.Status == want, fmt.Sprintf("%+v (error %v)", v, deref(v.Error))
	})
	return v
}

// attemptView is one delivery-log entry.
type attemptView struct {
	DeliveryID     string  `json:"deliveryId"`
	EventID        string  `json:"eventId"`
	EventType      string  `json:"eventType"`
	DeliveryStatus string  `json:"deliveryStatus"`
	Attempt        int     `json:"attempt"`
	Manual         bool    `json:"manual"`
	Succeeded      bool    `json:"succeeded"`
	StatusCode     *int    `json:"statusCode"`
	Error          *string `json:"error"`
	Response       string  `json:"response"`
	NextAttemptAt  *string `json:"nextAttemptAt"`
}

func (h *harness) log(t *testing.T, key, id, query string) ([]attemptView, int) {
	t.Helper()
	r := h.Do(t, http.MethodGet, "/webhooks/"+id+"/deliveries"+query, key, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("deliveries: %d %s", r.Status, r.Body)
	}
	var out struct {
		Data       []attemptView
		Pagination struct{ Total int }
	}
	r.JSON(t, &out)
	return out.Data, out.Pagination.Total
}

// startWorker runs a worker until the test ends (or stop is called).
func (h *harness) startWorker(t *testing.T, cfg webhook.Config, name string) (stop func()) {
	t.Helper()
	return startWorkerOn(t, h.env, h.rdb, cfg, name)
}

func startWorkerOn(t *testing.T, env *apptest.Env, rdb redis.UniversalClient, cfg webhook.Config, name string) (stop func()) {
	t.Helper()
	return startWorkerReg(t, env, rdb, cfg, name, nil)
}

// startWorkerReg is startWorkerOn whose metrics go to reg (nil: none).
func startWorkerReg(t *testing.T, env *apptest.Env, rdb redis.UniversalClient, cfg webhook.Config, name string,
	reg prometheus.Registerer) (stop func()) {
	t.Helper()
	w, err := webhook.NewWorker(webhook.WorkerDeps{Store: env.Store, Queue: queue.New(rdb, env.Prefix, cfg.Partitions),
		Config: cfg, Logger: apptest.Logger().With("test", t.Name()), Name: name, ReconcileEvery: time.Second,
		BreakerCooldown: 200 * time.Millisecond, Registerer: reg})
	testenv.Must(t, err, "worker")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Run(ctx); err != nil {
			t.Errorf("worker: %v", err)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Errorf("worker %s did not stop within 30 s", name)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// delivery is one request a receiver got.
type delivery struct {
	Header http.Header
	Body   []byte
	At     time.Time
}

func (d delivery) event(t testing.TB) (id, typ string) {
	var e struct{ ID, Type string }
	if err := json.Unmarshal(d.Body, &e); err != nil {
		t.Fatalf("delivery body %q: %v", d.Body, err)
	}
	return e.ID, e.Type
}

// receiver is an HTTP server on 127.0.0.1 that records every request and
// answers with respond (default 204). Endpoint verification requests are
// recorded apart (verifies) and answered by the challenge function
// (default: the right answer, as webhook.ChallengeAnswer makes it).
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	got      []delivery
	verifies []delivery
	respond  func(n int, r *http.Request) int // n: 1 for the first request
	// headers, when set, adds headers to the answer to request n.
	headers func(n int, h http.Header)
	arrived chan struct{}
}

// challengeFunc answers a verification request's body: status and body.
type challengeFunc func(body []byte) (int, []byte)

// echoChallenge is the right answer.
func echoChallenge(body []byte) (int, []byte) {
	if a, ok := webhook.ChallengeAnswer(body); ok {
		return http.StatusOK, a
	}
	return http.StatusBadRequest, nil
}

func newReceiver(t *testing.T, respond func(n int, r *http.Request) int) *receiver {
	return newReceiverWith(t, respond, echoChallenge)
}

// newReceiverWith is newReceiver whose verification answers are challenge's.
func newReceiverWith(t *testing.T, respond func(n int, r *http.Request) int, challenge challengeFunc) *receiver {
	rc := &receiver{respond: respond, arrived: make(chan struct{}, 1)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if isVerification(body) {
			rc.mu.Lock()
			rc.verifies = append(rc.verifies, delivery{Header: r.Header.Clone(), Body: body, At: time.Now()})
			rc.mu.Unlock()
			status, answer := challenge(body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			w.Write(answer)
			return
		}
		rc.mu.Lock()
		rc.got = append(rc.got, delivery{Header: r.Header.Clone(), Body: body, At: time.Now()})
		n := len(rc.got)
		rc.mu.Unlock()
		select {
		case rc.arrived <- struct{}{}:
		default:
		}
		status := http.StatusNoContent
		if rc.respond != nil {
			status = rc.respond(n, r)
		}
		if rc.headers != nil {
			rc.headers(n, w.Header())
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, "answer %d", n)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) URL() string { return rc.srv.URL + "/hook" }

// isVerification reports whether a request body is a verification request.
func isVerification(body []byte) bool {
	var e struct{ Type string }
	return json.Unmarshal(body, &e) == nil && e.Type == webhook.VerifyEvent
}

// verifications is the verification requests received.
func (rc *receiver) verifications() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.verifies...)
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

// eventIDs is the set of event ids received (each counted once).
func (rc *receiver) eventIDs(t testing.TB) map[string]int {
	out := map[string]int{}
	for _, d := range rc.deliveries() {
		id, _ := d.event(t)
		out[id]++
	}
	return out
}

// checkSignatures verifies a delivery's signatures by computing them here,
// independently of the signature package.
func checkSignatures(t testing.TB, secret string, d delivery) {
	t.Helper()
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(d.Body)
	if got, want := d.Header.Get("x-service-signature"), "sha256="+hex.EncodeToString(m.Sum(nil)); got != want {
		t.Errorf("x-service-signature %q, want %q", got, want)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatalf("secret: %v", err)
	}
	id, ts := d.Header.Get("webhook-id"), d.Header.Get("webhook-timestamp")
	m = hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(d.Body)
	if got, want := d.Header.Get("webhook-signature"), "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)); got != want {
		t.Errorf("webhook-signature %q, want %q", got, want)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > time.Minute {
		t.Errorf("webhook-timestamp %q is not now", ts)
	}
	if !strings.HasPrefix(id, "msg_") {
		t.Errorf("webhook-id %q", id)
	}
}

// insertEvents writes n attestation.created outbox rows for agent with
// action type typ, as the write path does, and returns their ids.
func insertEvents(t testing.TB, st *store.Store, n int, agent, typ string) []int64 {
	t.Helper()
	rows, err := st.Pool().Query(context.Background(), `INSERT INTO outbox (event_type, payload)
		SELECT 'attestation.created', jsonb_build_object('pda', left($2, 38) || translate(lpad(i::text, 6, '1'), '0', 'z'), 'agentPda', $2::text,
			'actionType', $3::text, 'slot', i, 'commitment', 'finalized')
		FROM generate_series(1, $1) i RETURNING id`, n, agent, typ)
	testenv.Must(t, err, "insert events")
	var ids []int64
	for rows.Next() {
		var id int64
		testenv.Must(t, rows.Scan(&id), "scan")
		ids = append(ids, id)
	}
	testenv.Must(t, rows.Err(), "insert events")
	return ids
}

// Agents for filters (valid base58 addresses).
const (
	agentA = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"
	agentB = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
)

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// created and webhookView are the shapes webhooktest reads answers into.
type (
	created     = webhooktest.Created
	webhookView = webhooktest.View
)
