package dataset_test

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/internal/devtools/seaweed"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/logfixture"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/mr-tron/base58"
	"gocloud.dev/blob"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// world is a database whose log holds attestations of several days,
// witnessed, and a real S3-compatible server (SeaweedFS) to write to.
type world struct {
	env    *apptest.Env
	served *logfixture.Served
	s3     *seaweed.Server
	bucket *blob.Bucket // the whole bucket; producers take a prefix of it
	slot   uint64
	rng    *mrand.Rand
}

// fixtureDays are the days the fixture writes, in order.
var fixtureDays = []string{"2026-11-20", "2026-11-21", "2026-11-23"}

var (
	s3Once sync.Once
	s3Srv  *seaweed.Server
	s3Err  error
)

// sharedS3 starts one SeaweedFS for the package's tests (each test writes
// under its own prefix); it stops when the test binary ends.
func sharedS3(t *testing.T) *seaweed.Server {
	t.Helper()
	s3Once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
		defer cancel()
		wd, _ := os.Getwd()
		bin, err := seaweed.Binary(ctx, wd)
		if err != nil {
			s3Err = err
			return
		}
		dir, err := os.MkdirTemp("", "dataset-s3-")
		if err != nil {
			s3Err = err
			return
		}
		s3Srv, s3Err = seaweed.Start(ctx, seaweed.Options{Binary: bin, Dir: filepath.Join(dir, "s3")})
	})
	testenv.Must(t, s3Err, "start SeaweedFS")
	return s3Srv
}

func newWorld(t *testing.T) *world {
	t.Helper()
	env := apptest.NewEnv(t, apptest.Options{Agents: 4})
	served := logfixture.NewServed(t, env, "attestd.test/log")
	served.AddWitnesses(t, "witness.test/w1")
	s3 := sharedS3(t)
	b, err := s3.Open(context.Background())
	testenv.Must(t, err, "open the bucket")
	t.Cleanup(func() { b.Close() })
	return &world{env: env, served: served, s3: s3, bucket: b, slot: 5000, rng: mrand.New(mrand.NewPCG(1, 2))}
}

// add stores n finalized attestations stamped on day (spread over its
// hours), at increasing slots, and returns them.
func (w *world) add(t *testing.T, day string, n int) []store.AttestationRecord {
	t.Helper()
	d, err := dataset.ParseDay(day)
	testenv.Must(t, err, "day")
	recs := make([]store.AttestationRecord, n)
	agents := w.env.Seeded.Agents
	for i := range recs {
		var pda, hash, id [32]byte
		var sig [64]byte
		for _, b := range [][]byte{pda[:], hash[:], id[:], sig[:]} {
			for j := range b {
				b[j] = byte(w.rng.Uint32())
			}
		}
		w.slot++
		r := &recs[i]
		r.Event = store.Event{TxSignature: base58.Encode(sig[:]), Slot: w.slot, Commitment: attestation.Finalized}
		r.PDA = base58.Encode(pda[:])
		r.AgentPDA = agents[i%len(agents)].PDA.String()
		r.AgentID = id
		r.ActionType = attestation.ActionType(w.rng.IntN(attestation.NumActionTypes))
		r.ActionHash = hash
		r.PrivacyMode = i%5 == 0
		r.Timestamp = d.Add(time.Duration(i) * (24 * time.Hour / time.Duration(n+1)))
		r.Signature = sig
	}
	for done := 0; done < n; done += 5000 {
		_, err := w.env.Store.Apply(context.Background(), &store.Batch{Attestations: recs[done:min(n, done+5000)]})
		testenv.Must(t, err, "apply")
	}
	return recs
}

// fill writes the fixture: perDay attestations on each of fixtureDays and
// one on the day after the last (which closes it), all in the log, with a
// witnessed checkpoint.
func (w *world) fill(t *testing.T, perDay int) {
	t.Helper()
	for _, d := range fixtureDays {
		w.add(t, d, perDay)
	}
	w.add(t, "2026-11-24", 1)
	w.served.AppendAll(t)
}

// producer makes a producer writing under prefix.
func (w *world) producer(t *testing.T, prefix string) *dataset.Producer {
	t.Helper()
	p, err := dataset.NewProducer(dataset.ProducerDeps{Store: w.env.Store, Bucket: blob.PrefixedBucket(w.bucket, prefix),
		Config: dataset.Config{Prefix: prefix, Interval: time.Second}, Log: w.served.Config, Logger: apptest.Logger(),
		Now: func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }})
	testenv.Must(t, err, "producer")
	return p
}

// leavesOfDay counts the log's leaves whose attestation is stamped on day.
func (w *world) leavesOfDay(t *testing.T, day string) int64 {
	t.Helper()
	d, err := dataset.ParseDay(day)
	testenv.Must(t, err, "day")
	var n int64
	testenv.Must(t, w.env.Store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM log_leaves l JOIN attestations a ON a.pda = l.pda
		WHERE a.ts >= $1 AND a.ts < $2`, d.Time, d.Next()).Scan(&n), "count leaves")
	return n
}

func prefixFor(t *testing.T) string { return fmt.Sprintf("%s/%d/", t.Name(), time.Now().UnixNano()) }
