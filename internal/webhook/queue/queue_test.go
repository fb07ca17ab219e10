package queue

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func newQueue(t *testing.T, parts int) (*Queue, *redis.Client) {
	url, prefix := testenv.Redis(t)
	opt, err := redis.ParseURL(url)
	testenv.Must(t, err, "redis url")
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	q := New(rdb, prefix, parts)
	created, err := q.EnsureGroups(context.Background())
	if err != nil || !created {
		t.Fatalf("ensure groups: %v %v", created, err)
	}
	if again, err := q.EnsureGroups(context.Background()); err != nil || again {
		t.Fatalf("second ensure: %v %v", again, err)
	}
	return q, rdb
}

// TestJobLifecycle walks one job through every state: queued, read,
// retried, parked, probed, brought back, finished.
func TestJobLifecycle(t *testing.T) {
	q, _ := newQueue(t, 1)
	ctx := context.Background()
	job := Job{ID: "msg_1", Delivery: "msg_1", Webhook: "wh_a", Event: 7, Type: "attestation.created", Body: `{"id":"evt_7"}`}
	testenv.Must(t, q.Enqueue(ctx, []Job{job}), "enqueue")
	msgs, err := q.Read(ctx, 0, "c1", 10, 0)
	if err != nil || len(msgs) != 1 || msgs[0].Job == nil || msgs[0].Job.Body != job.Body || msgs[0].JobID != "msg_1" {
		t.Fatalf("read: %+v %v", msgs, err)
	}
	if more, _ := q.Read(ctx, 0, "c1", 10, 0); len(more) != 0 {
		t.Fatal("read the same job twice")
	}
	// Failed: wait in the retry set with one attempt more.
	retry := *msgs[0].Job
	retry.Attempts = 1
	at := time.Now().Add(time.Hour)
	testenv.Must(t, q.Settle(ctx, 0, []Settlement{{StreamID: msgs[0].StreamID, JobID: "msg_1", At: at, Record: &retry}}), "settle retry")
	if n, _ := q.MoveDue(ctx, 0, time.Now(), 10); n != 0 {
		t.Fatal("a retry moved before it was due")
	}
	if n, _ := q.MoveDue(ctx, 0, at, 10); n != 1 {
		t.Fatal("a due retry did not move")
	}
	msgs, _ = q.Read(ctx, 0, "c1", 10, 0)
	if len(msgs) != 1 || msgs[0].Job.Attempts != 1 {
		t.Fatalf("retried job: %+v", msgs)
	}
	// Its receiver fails: parked, then probed, then brought back.
	testenv.Must(t, q.Settle(ctx, 0, []Settlement{{StreamID: msgs[0].StreamID, JobID: "msg_1", Park: "wh_a", ProbeAt: at}}), "park")
	d, _ := q.Depth(ctx, 0, time.Now())
	if d.Parked != 1 || d.Stream != 0 {
		t.Fatalf("depth after park: %+v", d)
	}
	if n, _ := q.Probe(ctx, 0, time.Now(), time.Second); n != 0 {
		t.Fatal("probed before its time")
	}
	if n, _ := q.Probe(ctx, 0, at, time.Second); n != 1 {
		t.Fatal("no probe at its time")
	}
	msgs, _ = q.Read(ctx, 0, "c1", 10, 0)
	if len(msgs) != 1 || msgs[0].JobID != "msg_1" {
		t.Fatalf("probe: %+v", msgs)
	}
	testenv.Must(t, q.Settle(ctx, 0, []Settlement{{StreamID: msgs[0].StreamID, JobID: "msg_1", Park: "wh_a", ProbeAt: at}}), "park again")
	if n, err := q.Unpark(ctx, 0, []string{"wh_a", "wh_other"}, 10); n != 1 || err != nil {
		t.Fatalf("unpark: %d %v", n, err)
	}
	if d, _ := q.Depth(ctx, 0, time.Now()); d.Parked != 0 {
		t.Fatalf("webhook still parked: %+v", d)
	}
	msgs, _ = q.Read(ctx, 0, "c1", 10, 0)
	if has, _ := q.Has(ctx, 0, []string{"msg_1", "msg_2"}); !has[0] || has[1] {
		t.Fatalf("has: %v", has)
	}
	// Delivered: gone everywhere.
	testenv.Must(t, q.Settle(ctx, 0, []Settlement{{StreamID: msgs[0].StreamID, JobID: "msg_1", Done: true}}), "done")
	if has, _ := q.Has(ctx, 0, []string{"msg_1"}); has[0] {
		t.Fatal("record left after done")
	}
	if d, _ := q.Depth(ctx, 0, time.Now()); d != (Depth{}) {
		t.Fatalf("depth at the end: %+v", d)
	}
}

// TestClaimAndTouch: a job read by a consumer that stops is taken over by
// another after the idle time; a touched job is not.
func TestClaimAndTouch(t *testing.T) {
	q, _ := newQueue(t, 2)
	ctx := context.Background()
	jobs := []Job{{ID: "a", Delivery: "a", Webhook: "wh_x", Body: "{}"}, {ID: "b", Delivery: "b", Webhook: "wh_x", Body: "{}"}}
	testenv.Must(t, q.Enqueue(ctx, jobs), "enqueue")
	p := q.Partition("wh_x")
	msgs, err := q.Read(ctx, p, "dead", 10, 0)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("read %v %v", msgs, err)
	}
	time.Sleep(100 * time.Millisecond) // both messages are now idle at least this long
	testenv.Must(t, q.Touch(ctx, p, "dead", []string{msgs[0].StreamID}), "touch")
	pend, err := q.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: q.streamKey(p), Group: SenderGroup,
		Start: "-", End: "+", Count: 10}).Result()
	if err != nil || len(pend) != 2 || pend[0].Idle >= pend[1].Idle || pend[1].Idle < 100*time.Millisecond {
		t.Fatalf("the touched message's idle time was not reset: %+v %v", pend, err)
	}
	got, err := q.Claim(ctx, p, "alive", 100*time.Millisecond, 10)
	if err != nil || len(got) == 0 || got[len(got)-1].StreamID != msgs[1].StreamID || got[len(got)-1].Job == nil {
		t.Fatalf("claim: %+v %v", got, err)
	}
}

// TestEventTrace: an event's traceparent travels on the event stream; a
// message without one (published by a worker from before it was carried,
// during a rolling upgrade) or with a malformed one reads as an event
// without a trace, never as a malformed message. A job keeps its origin.
func TestEventTrace(t *testing.T) {
	q, rdb := newQueue(t, 1)
	ctx := context.Background()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	testenv.Must(t, q.Publish(ctx, []Event{{ID: 1, Type: "attestation.created", Created: 5, Body: "{}", Trace: tp},
		{ID: 2, Type: "attestation.created", Created: 5, Body: "{}"}}), "publish")
	for _, tr := range []string{"", "00-" + strings.Repeat("a", 4000)} {
		vals := []any{"id", 3, "t", "attestation.created", "c", 5, "b", "{}"} // as a worker before this field wrote it
		if tr != "" {
			vals = append(vals, "tp", tr)
		}
		testenv.Must(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: q.eventsKey(), Values: vals}).Err(), "xadd")
	}
	msgs, err := q.ReadEvents(ctx, "c", 10, 0)
	if err != nil || len(msgs) != 4 {
		t.Fatalf("read events: %+v %v", msgs, err)
	}
	for i, want := range []string{tp, "", "", ""} {
		if m := msgs[i]; m.Err != nil || m.Event.Trace != want {
			t.Errorf("event %d: trace %.60q, err %v; want %q", i, m.Event.Trace, m.Err, want)
		}
	}
	job := Job{ID: "msg_1", Delivery: "msg_1", Webhook: "wh_a", Event: 1, Type: "attestation.created", Body: "{}", Origin: tp}
	testenv.Must(t, q.Enqueue(ctx, []Job{job}), "enqueue")
	got, err := q.Read(ctx, 0, "c", 10, 0)
	if err != nil || len(got) != 1 || got[0].Job == nil || got[0].Job.Origin != tp {
		t.Fatalf("job origin: %+v %v", got, err)
	}
}

func TestNoGroupIsRecognised(t *testing.T) {
	q, rdb := newQueue(t, 1)
	ctx := context.Background()
	testenv.Must(t, rdb.Del(ctx, q.streamKey(0), q.eventsKey()).Err(), "del")
	_, err := q.Read(ctx, 0, "c", 1, 0)
	if !IsNoGroup(err) {
		t.Fatalf("read from a lost stream: %v", err)
	}
	_, err = q.ReadEvents(ctx, "c", 1, 0)
	if !IsNoGroup(err) || IsNoGroup(errors.New("NOGROUPS")) || IsNoGroup(nil) {
		t.Fatalf("events: %v", err)
	}
}

func TestPartitionKeysShareAHashTag(t *testing.T) {
	q := New(nil, "attestd:", 4)
	for p := range 4 {
		keys := []string{q.streamKey(p), q.recordsKey(p), q.retryKey(p), q.parkedKey(p), q.parkKey(p, "wh_a")}
		tag := ""
		for _, k := range keys {
			i, j := indexByte(k, '{'), indexByte(k, '}')
			if i < 0 || j < i || (tag != "" && k[i:j+1] != tag) {
				t.Fatalf("partition %d: key %s has another hash tag than %s", p, k, tag)
			}
			tag = k[i : j+1]
			if k[:len("attestd:")] != "attestd:" {
				t.Fatalf("key %s outside the prefix", k)
			}
		}
	}
	// Every worker of every release must agree on a webhook's partition
	// (its jobs' order depends on it): the hash is pinned, not just
	// deterministic within one process.
	for id, want := range map[string]int{"wh_a": 2, "wh_b": 3, "wh_c": 0} {
		if got, other := q.Partition(id), New(nil, "other:", 4).Partition(id); got != want || other != want {
			t.Fatalf("partition of %s: %d (another queue: %d), want %d", id, got, other, want)
		}
	}
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}
