package translog_test

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/mr-tron/base58"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/batchsize"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/translog"
	"golang.org/x/mod/sumdb/note"
)

func TestMain(m *testing.M) {
	if db := os.Getenv(childDBEnv); db != "" {
		os.Exit(runChildAppender(db, os.Getenv(childKeyEnv)))
	}
	testenv.Main(m)
}

// testKey makes a log key named name and returns it with its verifier
// key text as note.GenerateKey wrote it.
func testKey(t testing.TB, name string) (translog.Key, string) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	testenv.Must(t, err, "generate key")
	k, err := translog.ParseKey(skey)
	testenv.Must(t, err, "parse key")
	if k.VerifierKey != vkey {
		t.Fatalf("derived verifier key %q, note.GenerateKey said %q", k.VerifierKey, vkey)
	}
	return k, vkey
}

// logEnv is a database with agents, a log key, an appender (driven by
// the test) and an API node serving the log.
type logEnv struct {
	env    *apptest.Env
	st     *store.Store
	key    translog.Key
	skey   string // the private key's text
	cfg    translog.Config
	app    *translog.Appender
	node   *apptest.Node
	agents []seed.Agent
	slot   uint64
}

func newLogEnv(t *testing.T, agents int) *logEnv {
	t.Helper()
	env := apptest.NewEnv(t, apptest.Options{Agents: agents, Attestations: 0})
	skey, _, err := note.GenerateKey(rand.Reader, "attestd.test/log")
	testenv.Must(t, err, "generate key")
	key, err := translog.ParseKey(skey)
	testenv.Must(t, err, "parse key")
	cfg := translog.Config{Key: key, CheckpointInterval: time.Millisecond, Batch: 5000, Poll: 10 * time.Millisecond}
	a, err := translog.NewAppender(translog.AppenderDeps{Store: env.Store, Config: cfg, Logger: apptest.Logger()})
	testenv.Must(t, err, "appender")
	le := &logEnv{env: env, st: env.Store, key: key, skey: skey, cfg: cfg, app: a, agents: env.Seeded.Agents, slot: 1000}
	le.node = le.startNode(t, cfg)
	return le
}

// startNode starts an API node serving the log with cfg.
func (le *logEnv) startNode(t *testing.T, cfg translog.Config) *apptest.Node {
	var srv *translog.Server
	return le.env.StartNode(t, apptest.NodeOptions{
		Configure: func(d *app.Deps) {
			srv = translog.NewServer(translog.ServerDeps{Store: le.st, Cache: d.Cache, Config: cfg, Logger: apptest.Logger(),
				Refresh: 20 * time.Millisecond})
			srv.Start(t.Context())
			d.Unlimited = append(d.Unlimited, srv.OriginRoutes()...)
			d.Log = srv.Health
		},
		Routes: func(api *app.API) { srv.Routes(api) }})
}

// add stores n new attestations at commitment c, in transactions of
// perTx events, and returns them.
func (le *logEnv) add(t testing.TB, n int, c attestation.Commitment) []store.AttestationRecord {
	t.Helper()
	recs := seed.NewAttestations(le.agents, n, time.Now(), le.slot, le.slot)
	for i := range recs {
		recs[i].Commitment = c
		le.slot = max(le.slot, recs[i].Slot)
	}
	_, err := le.st.Apply(context.Background(), &store.Batch{Attestations: recs})
	testenv.Must(t, err, "apply")
	le.settle(t)
	return recs
}

// settle moves the log's frontier as the indexer does once it has checked
// the chain (this environment's writes are the whole chain).
func (le *logEnv) settle(t testing.TB) {
	t.Helper()
	testenv.Must(t, le.st.SettleLogFrontier(context.Background()), "settle the log's frontier")
}

// appendAll appends every queued attestation and signs a checkpoint.
func (le *logEnv) appendAll(t testing.TB) store.LogCheckpoint {
	t.Helper()
	ctx := context.Background()
	le.settle(t)
	// As the appender does: an append that outlives its deadline (a
	// loaded machine, tens of thousands of leaves) is tried smaller.
	size := batchsize.New(le.cfg.Batch)
	for timeouts := 0; ; {
		most := size.Now()
		res, err := le.st.LogAppend(ctx, most)
		if batchsize.IsTimeout(err) && timeouts < 8 {
			timeouts++
			size.TimedOut(most)
			continue
		}
		testenv.Must(t, err, "append")
		size.Applied()
		if res.Leaves+res.Dropped == 0 {
			break
		}
	}
	c, _, err := le.app.SignCheckpoint(ctx)
	testenv.Must(t, err, "sign checkpoint")
	return c
}

// count runs a counting query.
func (le *logEnv) count(t testing.TB, sql string) int64 {
	t.Helper()
	var n int64
	testenv.Must(t, le.st.Pool().QueryRow(context.Background(), sql).Scan(&n), "count: %s", sql)
	return n
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// bulk stores n finalized attestations fast (unsigned: random bytes, a
// transaction each), in batches of 5000, and returns them.
func (le *logEnv) bulk(t testing.TB, n int, c attestation.Commitment) []store.AttestationRecord {
	t.Helper()
	rng := mrand.New(mrand.NewPCG(uint64(n), le.slot))
	var all []store.AttestationRecord
	for done := 0; done < n; {
		k := min(5000, n-done)
		recs := make([]store.AttestationRecord, k)
		for i := range recs {
			var pda [32]byte
			var sig [64]byte
			for j := range pda {
				pda[j] = byte(rng.Uint32())
			}
			for j := range sig {
				sig[j] = byte(rng.Uint32())
			}
			le.slot++
			r := &recs[i]
			r.Event = store.Event{TxSignature: base58.Encode(sig[:]), Slot: le.slot, Commitment: c}
			r.PDA = base58.Encode(pda[:])
			r.AgentPDA = le.agents[i%len(le.agents)].PDA.String()
			r.ActionType = attestation.ActionType(rng.IntN(int(attestation.NumActionTypes)))
			r.ActionHash = pda
			r.Timestamp = time.Unix(1_790_000_000+int64(le.slot), 0)
			r.Signature = sig
		}
		_, err := le.st.Apply(context.Background(), &store.Batch{Attestations: recs})
		testenv.Must(t, err, "apply")
		done += k
		all = append(all, recs...)
	}
	le.settle(t)
	return all
}
