package logfixture

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/translog"
	"github.com/attestd/attestd/translog/logformat"
	"golang.org/x/mod/sumdb/note"
)

// Served is the real log (package translog over PostgreSQL) of an apptest
// environment, appended by the test: the end-to-end counterpart of Log.
type Served struct {
	Env *apptest.Env
	// Key holds the private key; VerifierKey is what clients pin.
	Key         translog.Key
	VerifierKey string
	Config      translog.Config
	appender    *translog.Appender
	// witnesses cosign each checkpoint AppendAll signs (AddWitnesses).
	witnesses []*logformat.CosignatureSigner
}

// AddWitnesses makes witnesses of these names (Ed25519 keys, cosigning
// as C2SP tlog-cosignature, as litewitness does) that cosign every
// checkpoint AppendAll signs from now on; the nodes of NodeOptions then
// serve only checkpoints all of them cosigned (the service's quorum: all).
// It returns their verifier keys, what clients pin.
func (s *Served) AddWitnesses(t testing.TB, names ...string) []string {
	t.Helper()
	var keys, items []string
	for _, name := range names {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		testenv.Must(t, err, "witness key")
		s.witnesses = append(s.witnesses, logformat.NewCosignatureSigner(name, priv))
		k := logformat.NewCosignatureKey(name, priv.Public().(ed25519.PublicKey))
		keys = append(keys, k)
		items = append(items, k+" http://127.0.0.1:9/add-checkpoint") // never called: AppendAll cosigns
	}
	ws, err := translog.ParseWitnesses(strings.Join(items, ","))
	testenv.Must(t, err, "witness config")
	s.Config.Witnesses = append(s.Config.Witnesses, ws...)
	s.Config.Quorum = len(s.Config.Witnesses)
	return keys
}

// cosign stores each witness's cosignature of c, as the appender stores
// what witnesses answer.
func (s *Served) cosign(t testing.TB, ctx context.Context, c store.LogCheckpoint) {
	t.Helper()
	text, _, _ := strings.Cut(c.Note, "\n\n")
	for i, w := range s.witnesses {
		signed, err := note.Sign(&note.Note{Text: text + "\n"}, w)
		testenv.Must(t, err, "cosign")
		_, line, _ := strings.Cut(string(signed), "\n\n")
		testenv.Must(t, s.Env.Store.LogCosign(ctx, c.Origin, c.Size, s.Config.Witnesses[i].VerifierKey, line), "store cosignature")
	}
}

// NewServed makes a log key named origin and an appender over env's
// database (not running: AppendAll drives it).
func NewServed(t testing.TB, env *apptest.Env, origin string) *Served {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	testenv.Must(t, err, "generate log key")
	k, err := translog.ParseKey(skey)
	testenv.Must(t, err, "parse log key")
	cfg := translog.Config{Key: k, CheckpointInterval: time.Millisecond, Batch: 5000, Poll: 10 * time.Millisecond}
	a, err := translog.NewAppender(translog.AppenderDeps{Store: env.Store, Config: cfg, Logger: apptest.Logger()})
	testenv.Must(t, err, "log appender")
	return &Served{Env: env, Key: k, VerifierKey: vkey, Config: cfg, appender: a}
}

// AppendAll appends every queued (finalized) attestation and signs a
// checkpoint of the result.
func (s *Served) AppendAll(t testing.TB) store.LogCheckpoint {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The tests' writes are the whole chain: every stored slot up to the
	// first not final is whole.
	testenv.Must(t, s.Env.Store.SettleLogFrontier(ctx), "settle the log's frontier")
	for {
		res, err := s.Env.Store.LogAppend(ctx, s.Config.Batch)
		testenv.Must(t, err, "log append")
		if res.Leaves+res.Dropped == 0 {
			break
		}
	}
	c, _, err := s.appender.SignCheckpoint(ctx)
	testenv.Must(t, err, "sign checkpoint")
	s.cosign(t, ctx, c)
	return c
}

// NodeOptions serve the log's routes on an apptest node (with a verifier
// key only, as an API node holds it), reading the newest checkpoint every
// 20 ms; configure, when not nil, runs too.
func (s *Served) NodeOptions(t testing.TB, configure func(*app.Deps)) apptest.NodeOptions {
	var srv *translog.Server
	cfg := s.Config
	vk, err := translog.ParseKey(s.VerifierKey)
	testenv.Must(t, err, "parse verifier key")
	cfg.Key = vk
	return apptest.NodeOptions{
		Configure: func(d *app.Deps) {
			srv = translog.NewServer(translog.ServerDeps{Store: s.Env.Store, Cache: d.Cache, Config: cfg, Logger: apptest.Logger(),
				Refresh: 20 * time.Millisecond})
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			srv.Start(ctx)
			d.Unlimited = append(d.Unlimited, srv.OriginRoutes()...)
			d.Log = srv.Health
			if configure != nil {
				configure(d)
			}
		},
		Routes: func(api *app.API) { srv.Routes(api) }}
}

// ProcessEnv is the environment of an `attestd serve` process serving
// this log (the verifier key only).
func (s *Served) ProcessEnv() []string {
	return []string{"ATTESTD_LOG_KEY=" + s.VerifierKey}
}
