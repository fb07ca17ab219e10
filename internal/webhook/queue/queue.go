package queue

import (
	"github.com/attestd/attestd/internal/tracing"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Consumer groups.
const (
	FanOutGroup = "fanout"
	SenderGroup = "senders"
)

// Job is one delivery to make: an event's body to one webhook.
type Job struct {
	ID       string `json:"-"` // the record's field: the delivery id, plus a suffix for a manual retry
	Delivery string `json:"d"`
	Webhook  string `json:"w"`
	Event    int64  `json:"e"`
	Type     string `json:"t"`
	Created  int64  `json:"c"` // the event's creation, Unix ms
	Queued   int64  `json:"q"` // first queued, Unix ms
	Attempts int    `json:"n"` // attempts made so far
	// Base is the attempts made before the delivery's current run (a
	// recovery starts a new run with the whole retry schedule).
	Base   int  `json:"r,omitempty"`
	Manual bool `json:"m,omitempty"`
	// Recovery marks a job a recovery (POST /webhooks/:id/recover) queued
	// again: workers send it on their small recovery pool, behind live
	// jobs.
	Recovery bool `json:"v,omitempty"`
	// Turn is the job's turn at its destination host's cap (Unix ms; 0:
	// none): a job over the cap waits in the retry set until then and is
	// sent on it without asking the cap again.
	Turn int64 `json:"h,omitempty"`
	// Own is the job's turn at its webhook's own rate (Unix ms; 0: none),
	// taken at OwnRate deliveries per second: a job over that rate waits
	// in the retry set until then, and on it takes its turn at its host's
	// cap (Turn is then 0).
	Own     int64  `json:"o,omitempty"`
	OwnRate int    `json:"or,omitempty"`
	Body    string `json:"b"` // the exact bytes sent
	// Trace is the W3C traceparent of the span that queued the job (when
	// tracing was on): the worker's delivery span is its child, and the
	// receiver gets its traceparent. Retries keep it.
	Trace string `json:"tp,omitempty"`
	// Origin is the W3C traceparent of the span that wrote the job's event
	// to the outbox (Event.Trace; "": none): the delivery span links to
	// it. Retries keep it.
	Origin string `json:"ot,omitempty"`
}

// Event is one outbox event on the event stream.
type Event struct {
	ID      int64
	Type    string
	Created int64 // Unix ms
	Body    string
	// Trace is the W3C traceparent of the span that wrote the event to the
	// outbox ("": none). A message without it (one a worker published
	// before it was carried) or with a malformed one reads as "".
	Trace string
}

// EventMsg is an event read from the stream.
type EventMsg struct {
	StreamID string
	Event    Event
	Err      error // the message was malformed (it is acknowledged and dropped)
}

// Msg is a job message read from a partition; Job is nil when its record
// is gone (the delivery was settled by a duplicate of the job).
type Msg struct {
	Part     int
	StreamID string
	JobID    string
	Job      *Job
}

// Queue is safe for concurrent use.
type Queue struct {
	rdb    redis.UniversalClient
	prefix string
	parts  int
}

// New returns a queue over rdb whose keys start with prefix, with the
// given number of partitions (every process of a deployment must use the
// same number).
func New(rdb redis.UniversalClient, prefix string, partitions int) *Queue {
	if partitions < 1 {
		partitions = 1
	}
	return &Queue{rdb: rdb, prefix: prefix, parts: partitions}
}

// Partitions is the number of partitions.
func (q *Queue) Partitions() int { return q.parts }

// Prefix is the key prefix.
func (q *Queue) Prefix() string { return q.prefix }

// Redis is the client (for the throttle, which shares it).
func (q *Queue) Redis() redis.UniversalClient { return q.rdb }

// Partition is the partition of a webhook's jobs.
func (q *Queue) Partition(webhookID string) int {
	h := fnv.New32a()
	h.Write([]byte(webhookID))
	return int(h.Sum32() % uint32(q.parts))
}

// Keys of the event stream and of partition p. The hash tag is the part
// in braces: one slot per partition on a Redis Cluster.
func (q *Queue) eventsKey() string      { return q.prefix + "{wh:events}:stream" }
func (q *Queue) streamKey(p int) string { return q.prefix + "{wh:" + strconv.Itoa(p) + "}:jobs" }
func (q *Queue) recordsKey(p int) string {
	return q.prefix + "{wh:" + strconv.Itoa(p) + "}:records"
}
func (q *Queue) retryKey(p int) string { return q.prefix + "{wh:" + strconv.Itoa(p) + "}:retry" }

// LockKey is a key for a short lease named name (one holder at a time
// among workers).
func (q *Queue) LockKey(name string) string { return q.prefix + "wh:lock:" + name }

// IsNoGroup reports whether err says a stream or its consumer group does
// not exist: Redis lost its data.
func IsNoGroup(err error) bool { return err != nil && strings.Contains(err.Error(), "NOGROUP ") }

// EnsureGroups creates the streams and their consumer groups where they
// are missing, reading from the start. created says whether the event
// stream's group had to be made: on a Redis that served this deployment
// before, that means its data was lost.
func (q *Queue) EnsureGroups(ctx context.Context) (created bool, err error) {
	created, err = q.ensure(ctx, q.eventsKey(), FanOutGroup)
	if err != nil {
		return false, err
	}
	for p := range q.parts {
		if _, err := q.ensure(ctx, q.streamKey(p), SenderGroup); err != nil {
			return created, err
		}
	}
	return created, nil
}

func (q *Queue) ensure(ctx context.Context, stream, group string) (bool, error) {
	err := q.rdb.XGroupCreateMkStream(ctx, stream, group, "0").Err()
	if err != nil && strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("create consumer group %s on %s: %w", group, stream, err)
	}
	return true, nil
}

// Publish appends events to the event stream.
func (q *Queue) Publish(ctx context.Context, evs []Event) error {
	if len(evs) == 0 {
		return nil
	}
	_, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, e := range evs {
			vals := []any{"id", e.ID, "t", e.Type, "c", e.Created, "b", e.Body}
			if e.Trace != "" {
				vals = append(vals, "tp", e.Trace)
			}
			p.XAdd(ctx, &redis.XAddArgs{Stream: q.eventsKey(), Values: vals})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("publish %d events: %w", len(evs), err)
	}
	return nil
}

// ReadEvents reads up to count new events for consumer, waiting up to
// block for some (none: nil, nil; block <= 0: not waiting).
func (q *Queue) ReadEvents(ctx context.Context, consumer string, count int, block time.Duration) ([]EventMsg, error) {
	res, err := q.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: FanOutGroup, Consumer: consumer,
		Streams: []string{q.eventsKey(), ">"}, Count: int64(count), Block: blockArg(block)}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	var out []EventMsg
	for _, s := range res {
		for _, m := range s.Messages {
			out = append(out, decodeEvent(m))
		}
	}
	return out, nil
}

// ClaimEvents takes over up to count events that another consumer read
// more than minIdle ago and never acknowledged (it crashed).
func (q *Queue) ClaimEvents(ctx context.Context, consumer string, minIdle time.Duration, count int) ([]EventMsg, error) {
	msgs, _, err := q.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: q.eventsKey(), Group: FanOutGroup,
		Consumer: consumer, MinIdle: minIdle, Start: "0-0", Count: int64(count)}).Result()
	if err != nil {
		return nil, fmt.Errorf("claim events: %w", err)
	}
	out := make([]EventMsg, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, decodeEvent(m))
	}
	return out, nil
}

// blockArg is a BLOCK duration for go-redis, where 0 means forever and a
// negative value no BLOCK at all: a non-positive block means do not wait.
func blockArg(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

func decodeEvent(m redis.XMessage) EventMsg {
	em := EventMsg{StreamID: m.ID}
	str := func(k string) string { s, _ := m.Values[k].(string); return s }
	id, err1 := strconv.ParseInt(str("id"), 10, 64)
	created, err2 := strconv.ParseInt(str("c"), 10, 64)
	em.Event = Event{ID: id, Type: str("t"), Created: created, Body: str("b"), Trace: tracing.CleanTraceparent(str("tp"))}
	if err1 != nil || err2 != nil || em.Event.Type == "" || em.Event.Body == "" {
		em.Err = fmt.Errorf("malformed event message %s", m.ID)
	}
	return em
}

// AckEvents acknowledges and deletes events the fan-out finished.
func (q *Queue) AckEvents(ctx context.Context, streamIDs []string) error {
	if len(streamIDs) == 0 {
		return nil
	}
	_, err := q.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAck(ctx, q.eventsKey(), FanOutGroup, streamIDs...)
		p.XDel(ctx, q.eventsKey(), streamIDs...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("acknowledge %d events: %w", len(streamIDs), err)
	}
	return nil
}

func encodeJob(j Job) (string, error) {
	b, err := json.Marshal(j)
	return string(b), err
}

func decodeJob(id, s string) (*Job, error) {
	var j Job
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return nil, err
	}
	j.ID = id
	return &j, nil
}

// Enqueue queues jobs to be sent now: each job's record, then a message
// on its partition's stream.
func (q *Queue) Enqueue(ctx context.Context, jobs []Job) error {
	return q.put(ctx, jobs, nil)
}

// Schedule queues jobs to be sent at the given times (retries restored
// after a loss).
func (q *Queue) Schedule(ctx context.Context, jobs []Job, at []time.Time) error {
	if len(at) != len(jobs) {
		return fmt.Errorf("schedule: %d jobs, %d times", len(jobs), len(at))
	}
	return q.put(ctx, jobs, at)
}

// enqueueScript writes jobs of one partition: each job's record and its
// stream message (score "") or retry entry, all or nothing.
var enqueueScript = redis.NewScript(`
for i = 1, #ARGV, 3 do
  local id, data, score = ARGV[i], ARGV[i+1], ARGV[i+2]
  redis.call('HSET', KEYS[2], id, data)
  if score == '' then
    redis.call('XADD', KEYS[1], '*', 'j', id)
  else
    redis.call('ZADD', KEYS[3], score, id)
  end
end
return 1`)

func (q *Queue) put(ctx context.Context, jobs []Job, at []time.Time) error {
	if len(jobs) == 0 {
		return nil
	}
	byPart := map[int][]any{}
	tp := ""
	if tracing.Enabled() {
		tp = tracing.Traceparent(ctx)
	}
	for i, j := range jobs {
		if j.Trace == "" {
			j.Trace = tp
		}
		data, err := encodeJob(j)
		if err != nil {
			return err
		}
		score := ""
		if at != nil {
			score = strconv.FormatInt(at[i].UnixMilli(), 10)
		}
		p := q.Partition(j.Webhook)
		byPart[p] = append(byPart[p], j.ID, data, score)
	}
	for p, args := range byPart {
		keys := []string{q.streamKey(p), q.recordsKey(p), q.retryKey(p)}
		if err := enqueueScript.Run(ctx, q.rdb, keys, args...).Err(); err != nil {
			return fmt.Errorf("queue %d jobs on partition %d: %w", len(args)/3, p, err)
		}
	}
	return nil
}

// Read reads up to count new job messages of partition p for consumer,
// waiting up to block for some (block <= 0: not waiting).
func (q *Queue) Read(ctx context.Context, p int, consumer string, count int, block time.Duration) ([]Msg, error) {
	res, err := q.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: SenderGroup, Consumer: consumer,
		Streams: []string{q.streamKey(p), ">"}, Count: int64(count), Block: blockArg(block)}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read jobs of partition %d: %w", p, err)
	}
	var msgs []redis.XMessage
	for _, s := range res {
		msgs = append(msgs, s.Messages...)
	}
	return q.records(ctx, p, msgs)
}

// Claim takes over up to count job messages of partition p that were read
// more than minIdle ago and not settled (their worker died).
func (q *Queue) Claim(ctx context.Context, p int, consumer string, minIdle time.Duration, count int) ([]Msg, error) {
	msgs, _, err := q.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: q.streamKey(p), Group: SenderGroup,
		Consumer: consumer, MinIdle: minIdle, Start: "0-0", Count: int64(count)}).Result()
	if err != nil {
		return nil, fmt.Errorf("claim jobs of partition %d: %w", p, err)
	}
	return q.records(ctx, p, msgs)
}

// records loads the job records the messages name.
func (q *Queue) records(ctx context.Context, p int, msgs []redis.XMessage) ([]Msg, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	out := make([]Msg, len(msgs))
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		id, _ := m.Values["j"].(string)
		out[i] = Msg{Part: p, StreamID: m.ID, JobID: id}
		ids[i] = id
	}
	vals, err := q.rdb.HMGet(ctx, q.recordsKey(p), ids...).Result()
	if err != nil {
		return nil, fmt.Errorf("read job records of partition %d: %w", p, err)
	}
	for i, v := range vals {
		s, ok := v.(string)
		if !ok || ids[i] == "" {
			continue
		}
		if j, err := decodeJob(ids[i], s); err == nil {
			out[i].Job = j
		}
	}
	return out, nil
}

// Touch resets the idle time of messages this consumer still holds, so
// other workers do not take them over while they wait in this process.
func (q *Queue) Touch(ctx context.Context, p int, consumer string, streamIDs []string) error {
	if len(streamIDs) == 0 {
		return nil
	}
	err := q.rdb.XClaimJustID(ctx, &redis.XClaimArgs{Stream: q.streamKey(p), Group: SenderGroup,
		Consumer: consumer, MinIdle: 0, Messages: streamIDs}).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("touch %d jobs of partition %d: %w", len(streamIDs), p, err)
	}
	return nil
}

// Settlement is what becomes of one job message: Done removes the job;
// Park puts it aside with the other jobs of its webhook (whose receiver
// is failing) until a probe succeeds; otherwise it waits in the retry set
// until At, with Record replacing its record when not nil.
type Settlement struct {
	StreamID string // "" when the job was not read from the stream
	JobID    string
	Done     bool
	Park     string    // a webhook id: park the job with that webhook's
	ProbeAt  time.Time // when Park: first probe, unless one is set already
	At       time.Time
	Record   *Job
}

// settleScript acknowledges and deletes each message, then removes the
// job's record (d), parks the job (p) or puts it in the retry set (r), in
// one step. KEYS: stream, records, retry, parked-webhooks registry, then
// the park sets that ARGV names by index.
var settleScript = redis.NewScript(`
local g = ARGV[1]
for i = 2, #ARGV, 6 do
  local sid, jid, op, score, data, park = ARGV[i], ARGV[i+1], ARGV[i+2], ARGV[i+3], ARGV[i+4], ARGV[i+5]
  if sid ~= '' then
    redis.call('XACK', KEYS[1], g, sid)
    redis.call('XDEL', KEYS[1], sid)
  end
  if op == 'd' then
    redis.call('HDEL', KEYS[2], jid)
    redis.call('ZREM', KEYS[3], jid)
  elseif op == 'p' then
    redis.call('ZADD', KEYS[tonumber(park)], score, jid)
    redis.call('ZADD', KEYS[4], 'NX', score, data)
  else
    if data ~= '' then redis.call('HSET', KEYS[2], jid, data) end
    redis.call('ZADD', KEYS[3], score, jid)
  end
end
return 1`)

// Settle applies settlements of partition p's jobs atomically.
func (q *Queue) Settle(ctx context.Context, p int, ss []Settlement) error {
	if len(ss) == 0 {
		return nil
	}
	keys := []string{q.streamKey(p), q.recordsKey(p), q.retryKey(p), q.parkedKey(p)}
	parkIndex := map[string]int{}
	args := make([]any, 1, 1+6*len(ss))
	args[0] = SenderGroup
	for _, s := range ss {
		op, score, data, park := "d", "0", "", ""
		switch {
		case s.Done:
		case s.Park != "":
			k, ok := parkIndex[s.Park]
			if !ok {
				keys = append(keys, q.parkKey(p, s.Park))
				k = len(keys)
				parkIndex[s.Park] = k
			}
			op, score, data, park = "p", strconv.FormatInt(s.ProbeAt.UnixMilli(), 10), s.Park, strconv.Itoa(k)
		default:
			op, score = "r", strconv.FormatInt(s.At.UnixMilli(), 10)
			if s.Record != nil {
				var err error
				if data, err = encodeJob(*s.Record); err != nil {
					return err
				}
			}
		}
		args = append(args, s.StreamID, s.JobID, op, score, data, park)
	}
	if err := settleScript.Run(ctx, q.rdb, keys, args...).Err(); err != nil {
		return fmt.Errorf("settle %d jobs of partition %d: %w", len(ss), p, err)
	}
	return nil
}

func (q *Queue) parkedKey(p int) string { return q.prefix + "{wh:" + strconv.Itoa(p) + "}:parked" }

// parkKeyPrefix + webhook id is the set of the webhook's parked jobs.
func (q *Queue) parkKeyPrefix(p int) string { return q.prefix + "{wh:" + strconv.Itoa(p) + "}:park:" }

func (q *Queue) parkKey(p int, webhookID string) string { return q.parkKeyPrefix(p) + webhookID }

// probeScript sends one parked job of each webhook whose probe is due
// onto the stream and sets its next probe ARGV[2] ms later; a webhook
// with no parked job left leaves the registry. Park sets are named from
// ARGV[3] and the webhook id: they share the partition's hash tag, so
// they live on the script's slot.
var probeScript = redis.NewScript(`
local ws = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 100)
for _, w in ipairs(ws) do
  local pk = ARGV[3] .. w
  local j = redis.call('ZRANGE', pk, 0, 0)
  if #j == 0 then
    redis.call('ZREM', KEYS[1], w)
  else
    redis.call('ZREM', pk, j[1])
    redis.call('XADD', KEYS[2], '*', 'j', j[1])
    redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]), w)
  end
end
return #ws`)

// Probe sends one parked job of every webhook of partition p whose probe
// is due at now, and schedules its next probe every later.
func (q *Queue) Probe(ctx context.Context, p int, now time.Time, every time.Duration) (int, error) {
	n, err := probeScript.Run(ctx, q.rdb, []string{q.parkedKey(p), q.streamKey(p)}, now.UnixMilli(), every.Milliseconds(),
		q.parkKeyPrefix(p)).Int()
	if err != nil {
		return 0, fmt.Errorf("probe parked webhooks of partition %d: %w", p, err)
	}
	return n, nil
}

// unparkScript moves up to ARGV[1] parked jobs of each webhook named in
// ARGV[2..] back onto the stream (their receiver answered again); a
// webhook with none left leaves the registry.
var unparkScript = redis.NewScript(`
local moved = 0
for i = 2, #ARGV do
  local w = ARGV[i]
  if redis.call('ZSCORE', KEYS[1], w) then
    local pk = KEYS[i + 1]
    local js = redis.call('ZRANGE', pk, 0, tonumber(ARGV[1]) - 1)
    for _, j in ipairs(js) do
      redis.call('XADD', KEYS[2], '*', 'j', j)
      moved = moved + 1
    end
    if #js > 0 then redis.call('ZREM', pk, unpack(js)) end
    if redis.call('ZCARD', pk) == 0 then redis.call('ZREM', KEYS[1], w) end
  end
end
return moved`)

// Unpark moves up to max parked jobs of each webhook (of partition p)
// back onto the stream, and returns how many it moved. Each success of a
// webhook calls it again, so a recovered receiver gets its backlog in
// steps, not all at once.
func (q *Queue) Unpark(ctx context.Context, p int, webhookIDs []string, max int) (int, error) {
	if len(webhookIDs) == 0 {
		return 0, nil
	}
	keys := []string{q.parkedKey(p), q.streamKey(p)}
	args := []any{max}
	for _, w := range webhookIDs {
		keys = append(keys, q.parkKey(p, w))
		args = append(args, w)
	}
	n, err := unparkScript.Run(ctx, q.rdb, keys, args...).Int()
	if err != nil {
		return 0, fmt.Errorf("unpark jobs of partition %d: %w", p, err)
	}
	return n, nil
}

// moveScript moves up to ARGV[2] jobs due by ARGV[1] from the retry set
// to the stream.
var moveScript = redis.NewScript(`
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  redis.call('XADD', KEYS[2], '*', 'j', id)
  redis.call('ZREM', KEYS[1], id)
end
return #ids`)

// MoveDue moves up to max jobs of partition p whose retry is due at now
// onto the stream, and returns how many it moved.
func (q *Queue) MoveDue(ctx context.Context, p int, now time.Time, max int) (int, error) {
	n, err := moveScript.Run(ctx, q.rdb, []string{q.retryKey(p), q.streamKey(p)}, now.UnixMilli(), max).Int()
	if err != nil {
		return 0, fmt.Errorf("move due retries of partition %d: %w", p, err)
	}
	return n, nil
}

// Has reports, for each job id of partition p, whether its record exists.
func (q *Queue) Has(ctx context.Context, p int, jobIDs []string) ([]bool, error) {
	out := make([]bool, len(jobIDs))
	if len(jobIDs) == 0 {
		return out, nil
	}
	cmds, err := q.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for _, id := range jobIDs {
			pl.HExists(ctx, q.recordsKey(p), id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("check job records of partition %d: %w", p, err)
	}
	for i, c := range cmds {
		out[i] = c.(*redis.BoolCmd).Val()
	}
	return out, nil
}

// Depth is the state of one partition.
type Depth struct {
	Stream    int64 // messages waiting or being sent
	Due       int64 // retries due now
	Scheduled int64 // retries waiting, due or not
	Parked    int64 // webhooks whose jobs are parked (their receiver keeps failing)
}

// Depth reads partition p's queue lengths.
func (q *Queue) Depth(ctx context.Context, p int, now time.Time) (Depth, error) {
	var d Depth
	cmds, err := q.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		pl.XLen(ctx, q.streamKey(p))
		pl.ZCount(ctx, q.retryKey(p), "-inf", strconv.FormatInt(now.UnixMilli(), 10))
		pl.ZCard(ctx, q.retryKey(p))
		pl.ZCard(ctx, q.parkedKey(p))
		return nil
	})
	if err != nil {
		return d, fmt.Errorf("depth of partition %d: %w", p, err)
	}
	d.Stream, d.Due, d.Scheduled = cmds[0].(*redis.IntCmd).Val(), cmds[1].(*redis.IntCmd).Val(), cmds[2].(*redis.IntCmd).Val()
	d.Parked = cmds[3].(*redis.IntCmd).Val()
	return d, nil
}

// changedChannel is the Pub/Sub channel on which API nodes name webhooks
// they changed (secrets, scheme, URL, state), so workers read them again
// at once instead of after their cache's few seconds.
func (q *Queue) changedChannel() string { return q.prefix + "wh:changed" }

// NotifyChanged tells the workers that webhook id changed (best effort:
// their cache expires within seconds anyway).
func (q *Queue) NotifyChanged(ctx context.Context, id string) error {
	if err := q.rdb.Publish(ctx, q.changedChannel(), id).Err(); err != nil {
		return fmt.Errorf("notify change of %s: %w", id, err)
	}
	return nil
}

// WatchChanged calls changed with each webhook id NotifyChanged names
// until ctx ends, resubscribing after errors; every (re)subscription
// first calls changed with "" (anything may have changed meanwhile).
func (q *Queue) WatchChanged(ctx context.Context, changed func(id string)) {
	for ctx.Err() == nil {
		sub := q.rdb.Subscribe(ctx, q.changedChannel())
		if _, err := sub.Receive(ctx); err == nil {
			changed("")
			ch := sub.Channel(redis.WithChannelHealthCheckInterval(10 * time.Second))
		loop:
			for {
				select {
				case <-ctx.Done():
					break loop
				case m, ok := <-ch:
					if !ok {
						break loop
					}
					changed(m.Payload)
				}
			}
		}
		sub.Close()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// StreamLen is how many messages partition p's stream holds (waiting or
// being sent).
func (q *Queue) StreamLen(ctx context.Context, p int) (int64, error) {
	n, err := q.rdb.XLen(ctx, q.streamKey(p)).Result()
	if err != nil {
		return 0, fmt.Errorf("length of partition %d: %w", p, err)
	}
	return n, nil
}

// EventBacklog is how many events wait on the event stream (read or not).
func (q *Queue) EventBacklog(ctx context.Context) (int64, error) {
	return q.rdb.XLen(ctx, q.eventsKey()).Result()
}

// DropIdleConsumers removes consumers of every group that hold no message
// and were idle longer than idle (workers that stopped).
func (q *Queue) DropIdleConsumers(ctx context.Context, idle time.Duration) (int, error) {
	n := 0
	drop := func(stream, group string) error {
		cs, err := q.rdb.XInfoConsumers(ctx, stream, group).Result()
		if err != nil {
			return err
		}
		for _, c := range cs {
			if c.Pending == 0 && c.Idle > idle {
				if err := q.rdb.XGroupDelConsumer(ctx, stream, group, c.Name).Err(); err != nil {
					return err
				}
				n++
			}
		}
		return nil
	}
	if err := drop(q.eventsKey(), FanOutGroup); err != nil {
		return n, fmt.Errorf("drop idle consumers: %w", err)
	}
	for p := range q.parts {
		if err := drop(q.streamKey(p), SenderGroup); err != nil {
			return n, fmt.Errorf("drop idle consumers: %w", err)
		}
	}
	return n, nil
}
