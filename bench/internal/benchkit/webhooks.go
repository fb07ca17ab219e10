package benchkit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/internal/webhook/keyring"
	"github.com/attestd/attestd/internal/webhook/queue"
	"github.com/attestd/attestd/webhook/signature"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Receiver is a webhook receiver for the benchmarks, on loopback: it
// answers endpoint verification, records when each event (by its evt_<n>
// id) first arrived, and counts requests and duplicates. With Secret set,
// it checks the signatures of one request in 100 (BadSigs). It answers 204
// and decodes nothing else: a receiver must not spend the CPU the worker
// is measured with.
type Receiver struct {
	URL    string // http://127.0.0.1:port/hook
	Secret string

	Requests, Dups, BadSigs atomic.Int64

	mu    sync.Mutex
	first map[int64]time.Time
	srv   *http.Server
}

// StartReceiver starts a receiver; Close stops it.
func StartReceiver() (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("receiver: %w", err)
	}
	r := &Receiver{URL: "http://" + ln.Addr().String() + "/hook", first: map[int64]time.Time{}}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// Close stops the receiver.
func (r *Receiver) Close() { _ = r.srv.Close() }

// ServeHTTP receives one delivery.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 64<<10))
	i := bytes.Index(body, []byte(`"evt_`))
	if i < 0 { // only a verification request is decoded
		if answer, ok := webhook.ChallengeAnswer(body); ok {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(answer)
			return
		}
	}
	n := r.Requests.Add(1)
	now := time.Now()
	if r.Secret != "" && n%100 == 0 && (signature.Verify(r.Secret, req.Header, body, now, 0) != nil ||
		signature.VerifyService(r.Secret, req.Header.Get(signature.HeaderService), body) != nil) {
		r.BadSigs.Add(1)
	}
	if i >= 0 {
		rest := body[i+5:]
		if j := bytes.IndexByte(rest, '"'); j > 0 {
			if id, err := strconv.ParseInt(string(rest[:j]), 10, 64); err == nil {
				r.mu.Lock()
				if _, ok := r.first[id]; ok {
					r.Dups.Add(1)
				} else {
					r.first[id] = now
				}
				r.mu.Unlock()
			}
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// Count is how many distinct events arrived.
func (r *Receiver) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.first)
}

// First is when event id first arrived (ok false: it did not).
func (r *Receiver) First(id int64) (at time.Time, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok = r.first[id]
	return at, ok
}

// Last is when the last distinct event arrived (zero: none did).
func (r *Receiver) Last() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last time.Time
	for _, at := range r.first {
		if at.After(last) {
			last = at
		}
	}
	return last
}

// WebhookRig is what a webhook benchmark sets up: its stores, a Redis
// client sized for a worker, secret keys made for the run and an account
// owning the webhooks.
type WebhookRig struct {
	*Stores
	Redis   *redis.Client
	Keys    *keyring.Keyring
	Account store.Account
}

// OpenWebhookRig opens the bench's stores (database name) and the rest.
func OpenWebhookRig(ctx context.Context, name string) (_ *WebhookRig, err error) {
	bs, err := OpenStores(ctx, name, store.Options{MaxConns: 16})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			bs.Close()
		}
	}()
	ropt, err := redis.ParseURL(bs.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("bench redis: %w", err)
	}
	ropt.PoolSize, ropt.ReadTimeout, ropt.WriteTimeout = 128, 2*time.Second, 2*time.Second
	rig := &WebhookRig{Stores: bs, Redis: redis.NewClient(ropt)}
	spec, err := keyring.Generate("bench")
	if err != nil {
		return nil, err
	}
	if rig.Keys, err = keyring.Parse(spec); err != nil {
		return nil, err
	}
	acc, _, err := bs.Store.EnsureAccount(ctx, "bench")
	if err != nil {
		return nil, fmt.Errorf("bench account: %w", err)
	}
	rig.Account = acc
	return rig, nil
}

// Close closes the Redis client and the stores.
func (rig *WebhookRig) Close() {
	rig.Redis.Close()
	rig.Stores.Close()
}

// AddWebhook inserts a webhook of the rig's account to url for events,
// with a new secret (sealed under the rig's keys); it returns its id and
// secret.
func (rig *WebhookRig) AddWebhook(ctx context.Context, url string, events []string) (id, secret string, err error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	id = "wh_" + hex.EncodeToString(b[:])
	secret, err = signature.NewSecret()
	if err != nil {
		return "", "", err
	}
	sealed, keyID, err := rig.Keys.Seal([]byte(secret), []byte(id))
	if err != nil {
		return "", "", err
	}
	_, err = rig.Store.InsertWebhook(ctx, store.Webhook{ID: id, AccountID: rig.Account.ID, URL: url, Events: events,
		SecretSealed: sealed, SecretKeyID: keyID}, 0)
	return id, secret, err
}

// StartWorker runs one webhook worker with cfg (its Keys, AllowLoopback
// and MetricsAddr set for the rig) until stop is called.
func (rig *WebhookRig) StartWorker(ctx context.Context, cfg webhook.Config, log *slog.Logger, reg prometheus.Registerer) (stop func(), err error) {
	cfg.Keys, cfg.AllowLoopback, cfg.MetricsAddr = rig.Keys, true, ""
	w, err := webhook.NewWorker(webhook.WorkerDeps{Store: rig.Store, Queue: queue.New(rig.Redis, "bench:", cfg.Partitions),
		Config: cfg, Logger: log, Registerer: reg})
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	return func() { cancel(); <-done }, nil
}
