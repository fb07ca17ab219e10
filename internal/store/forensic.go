package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"
)

// ForensicQuery says what a forensic report covers and its anomaly rules.
type ForensicQuery struct {
	AgentPDA       string
	Range          Range
	BurstPerMinute int           // a UTC minute with at least this many attestations is a burst
	LongGap        time.Duration // consecutive attestations at least this far apart are a long gap
	MaxPerKind     int           // anomalies listed per kind (all are counted)
	ExamplePDAs    int           // pdas listed per duplicate hash
}

// DayTypeCount is the number of attestations of one type on one UTC day.
type DayTypeCount struct {
	Day        time.Time // midnight UTC
	ActionType attestation.ActionType
	N          int64
}

// DayCount is the number of attestations on one UTC day.
type DayCount struct {
	Day time.Time
	N   int64
}

// Span is an anomaly that covers a stretch of time.
type Span struct {
	At, Until time.Time
	N         int64
}

// Duplicate is an action hash attested more than once.
type Duplicate struct {
	Hash        [32]byte
	N           int64
	First, Last time.Time
	PDAs        []string // oldest first, at most ForensicQuery.ExamplePDAs
}

// Point is one attestation an anomaly names.
type Point struct {
	PDA string
	At  time.Time
}

// ForensicData is everything a forensic report is computed from. Counts
// named Total* are complete; the lists hold at most MaxPerKind entries,
// oldest first.
type ForensicData struct {
	Total, Finalized, Privacy, SignatureFailed int64
	First, Last                                *time.Time
	ByType                                     map[attestation.ActionType]int64
	Days                                       []DayCount     // active days, oldest first
	DayTypes                                   []DayTypeCount // non-zero (day, type) pairs
	Bursts                                     []Span
	TotalBursts                                int64
	Gaps                                       []Span
	TotalGaps                                  int64
	Duplicates                                 []Duplicate
	TotalDuplicates                            int64
	AfterRevocation                            []Point
	TotalAfterRevocation                       int64
	InvalidSignatures                          []Point // stored ingest-time failures
	// LogAwaiting counts the period's finalized attestations still queued
	// for the transparency log (every other finalized one has a leaf).
	LogAwaiting int64
}

// forensicHoursSQL reads the period's counts of the agent: whole hours
// from the maintained attestation_hours ($2 <= hour < $3), the partial
// hours at the edges counted on the index ([$4, $5) and [$6, $7), under an
// hour of rows each). It answers the active hours for all types (action
// type -1, with their privacy-mode counts) and the counts per (UTC day,
// type) of the types in $8, each type an index range of its own. Hours and
// days are binned with date_bin: UTC without a time zone lookup per row.
const forensicHoursSQL = `WITH edge AS (
		SELECT date_bin('1 hour', ts, timestamptz '2000-01-01 00:00:00+00') AS hour, action_type, privacy_mode FROM attestations
		WHERE agent_pda = $1 AND ts >= $4 AND ts < $5
		UNION ALL
		SELECT date_bin('1 hour', ts, timestamptz '2000-01-01 00:00:00+00'), action_type, privacy_mode FROM attestations
		WHERE agent_pda = $1 AND ts >= $6 AND ts < $7
	)
	SELECT hour, -1::smallint, n, privacy FROM attestation_hours
	WHERE agent_pda = $1 AND action_type = -1 AND hour >= $2 AND hour < $3 AND n <> 0
	UNION ALL
	SELECT hour, -1::smallint, count(*), count(*) FILTER (WHERE privacy_mode) FROM edge GROUP BY hour
	UNION ALL
	SELECT day, action_type, sum(n)::bigint, 0::bigint FROM (
		SELECT date_bin('1 day', hour, timestamptz '2000-01-01 00:00:00+00') AS day, action_type, n FROM attestation_hours
		WHERE agent_pda = $1 AND action_type = ANY($8::smallint[]) AND hour >= $2 AND hour < $3 AND n <> 0
		UNION ALL
		SELECT date_bin('1 day', hour, timestamptz '2000-01-01 00:00:00+00'), action_type, 1 FROM edge
	) t GROUP BY day, action_type`

// forensicSideSQL counts the period's rows not finalized yet and those
// whose signature failed at ingest (each on its partial index), and finds
// the first and last timestamps (one index probe each), and the finalized
// ones still waiting for their log leaf (the log's queue is short while the
// appender keeps up).
const forensicSideSQL = `SELECT
	(SELECT count(*) FROM attestations WHERE agent_pda = $1 AND ts >= $2 AND ts < $3 AND NOT finalized),
	(SELECT count(*) FROM attestations WHERE agent_pda = $1 AND ts >= $2 AND ts < $3 AND NOT signature_valid),
	(SELECT min(ts) FROM attestations WHERE agent_pda = $1 AND ts >= $2 AND ts < $3),
	(SELECT max(ts) FROM attestations WHERE agent_pda = $1 AND ts >= $2 AND ts < $3),
	(SELECT count(*) FROM log_queue q JOIN attestations a ON a.pda = q.pda
		WHERE a.agent_pda = $1 AND a.ts >= $2 AND a.ts < $3 AND a.finalized)`

// forensicBurstsSQL counts per UTC minute the rows of the hours in $4 (the
// only hours with enough attestations to hold a burst) and answers the
// minutes with at least $5, oldest first, at most $6, with their total.
const forensicBurstsSQL = `SELECT minute, n, count(*) OVER () FROM (
		SELECT date_bin('1 minute', a.ts, timestamptz '2000-01-01 00:00:00+00') AS minute, count(*) AS n
		FROM unnest($4::timestamptz[]) AS h(hour)
		CROSS JOIN LATERAL (SELECT ts FROM attestations
			WHERE agent_pda = $1 AND ts >= greatest(h.hour, $2) AND ts < least(h.hour + interval '1 hour', $3)) a
		GROUP BY 1 HAVING count(*) >= $5
	) m ORDER BY minute LIMIT $6`

// forensicGapEndsSQL answers, for each pair of consecutive active hours
// ($4[i], $5[i]), the last attestation of the first and the first of the
// second (within the period): the ends of the only gap between them.
const forensicGapEndsSQL = `SELECT
		(SELECT max(ts) FROM attestations WHERE agent_pda = $1 AND ts >= greatest(p.h1, $2) AND ts < least(p.h1 + interval '1 hour', $3)),
		(SELECT min(ts) FROM attestations WHERE agent_pda = $1 AND ts >= greatest(p.h2, $2) AND ts < least(p.h2 + interval '1 hour', $3))
	FROM unnest($4::timestamptz[], $5::timestamptz[]) WITH ORDINALITY AS p(h1, h2, i) ORDER BY p.i`

// forensicGapsScanSQL finds gaps of at least $4 microseconds by walking
// every attestation of the period: for a threshold under an hour, which
// the hourly counts cannot narrow down.
const forensicGapsScanSQL = `SELECT prev, ts, count(*) OVER () FROM (
		SELECT ts, lag(ts) OVER (ORDER BY ts) AS prev FROM attestations WHERE agent_pda = $1 AND ts >= $2 AND ts < $3
	) x WHERE ts - prev >= $4::bigint * interval '1 microsecond' ORDER BY ts LIMIT $5`

// forensicDuplicatesSQL re-counts, in the period, the agent's attestations
// of each hash it is known to have repeated, and answers those still
// attested more than once: oldest first, at most $5, with their first $4
// pdas and the total.
const forensicDuplicatesSQL = `SELECT action_hash, n, first, last, pdas, count(*) OVER () FROM (
		SELECT r.action_hash, count(*) AS n, min(a.ts) AS first, max(a.ts) AS last,
			(array_agg(a.pda ORDER BY a.ts, a.slot, a.pda))[1:$4] AS pdas
		FROM attestation_repeats r JOIN attestations a ON a.action_hash = r.action_hash AND a.agent_pda = r.agent_pda
		WHERE r.agent_pda = $1 AND a.ts >= $2 AND a.ts < $3
		GROUP BY r.action_hash HAVING count(*) > 1
	) d ORDER BY first, action_hash LIMIT $5`

// forensicRevocationSQL reads when the agent was revoked and in which slot
// (no row when it was not).
const forensicRevocationSQL = `SELECT g.revoked_at,
		COALESCE((SELECT min(slot) FROM agent_events e WHERE e.agent_pda = g.pda AND e.kind = 'revoked'), 0)
	FROM agents g WHERE g.pda = $1 AND g.revoked_at IS NOT NULL`

// forensicAfterRevocationSQL lists attestations later than the agent's
// revocation ($4 its time, $5 its slot): at or after its time, and in a
// later slot when at the same time. The revocation time is a bound of the
// index range, so only rows after it are read. (Joined to the agent in
// one statement, the planner may read all of the agent's rows first.)
const forensicAfterRevocationSQL = `SELECT pda, ts, count(*) OVER () FROM attestations
	WHERE agent_pda = $1 AND ts >= $2 AND ts < $3 AND ts >= $4 AND (ts > $4 OR slot > $5)
	ORDER BY ts, slot, pda LIMIT $6`

// forensicInvalidSQL lists attestations whose signature failed at ingest.
const forensicInvalidSQL = `SELECT pda, ts FROM attestations
	WHERE agent_pda = $1 AND ts >= $2 AND ts < $3 AND NOT signature_valid
	ORDER BY ts, slot, pda LIMIT $4`

// forensicNewestSQL reads the newest attestations for a signature re-check.
const forensicNewestSQL = `SELECT ` + verifyColumns + ` FROM attestations
	WHERE agent_pda = $1 AND ts >= $2 AND ts < $3
	ORDER BY ts DESC, slot DESC, pda DESC LIMIT $4`

// bound turns a zero time into an infinite bound.
func bound(t *time.Time, inf pgtype.InfinityModifier) pgtype.Timestamptz {
	if t == nil {
		return pgtype.Timestamptz{InfinityModifier: inf, Valid: true}
	}
	return pgtype.Timestamptz{Time: t.UTC(), Valid: true}
}

// hourSplit divides a period into the whole UTC hours inside it and the
// partial hours at its edges. An edge that does not exist is an empty
// range.
type hourSplit struct {
	lo, hi                                 pgtype.Timestamptz // whole hours: lo <= hour < hi
	edge1From, edge1To, edge2From, edge2To pgtype.Timestamptz
}

func splitHours(r Range) hourSplit {
	at := func(t time.Time) pgtype.Timestamptz { return pgtype.Timestamptz{Time: t.UTC(), Valid: true} }
	empty := at(time.Unix(0, 0))
	s := hourSplit{edge1From: empty, edge1To: empty, edge2From: empty, edge2To: empty}
	var lo, hi *time.Time
	if r.From != nil {
		l := ceilHour(*r.From)
		lo = &l
	}
	if r.To != nil {
		h := floorHour(*r.To)
		hi = &h
	}
	s.lo, s.hi = bound(lo, pgtype.NegativeInfinity), bound(hi, pgtype.Infinity)
	if r.From != nil { // [from, the first whole hour or to)
		end := *lo
		if r.To != nil && r.To.Before(end) {
			end = *r.To
		}
		if r.From.Before(end) {
			s.edge1From, s.edge1To = at(*r.From), at(end)
		}
	}
	if r.To != nil { // [the end of the last whole hour, to), after the first edge
		start := *hi
		if r.From != nil && r.From.After(start) {
			start = *r.From
		}
		if lo != nil && lo.After(start) {
			start = *lo
		}
		if start.Before(*r.To) {
			s.edge2From, s.edge2To = at(start), at(*r.To)
		}
	}
	return s
}

// actionTypes are the action_type values of attestation_hours rows that
// count one type.
var actionTypes = func() []int16 {
	var out []int16
	for t := range attestation.NumActionTypes {
		out = append(out, int16(t))
	}
	return out
}()

// activeHour is one hour of the period with attestations of the agent.
type activeHour struct {
	hour time.Time
	n    int64
}

// Forensic computes the aggregates of a forensic report. Nothing in it
// reads every attestation of the agent: totals, types and the timeline
// come from the hourly counters; bursts are looked for only in hours with
// enough attestations to hold one, gaps only between consecutive active
// hours far enough apart; duplicates from the maintained repeats;
// unfinalized and invalid rows from their partial indexes. The work grows
// with the hours of the period and with what is found. (A long-gap
// threshold under an hour is the exception: it walks the period's rows.)
// Its statements run concurrently on separate connections.
func (s *Store) Forensic(ctx context.Context, q ForensicQuery) (ForensicData, error) {
	return onReader(ctx, s, func(db *pgxpool.Pool) (ForensicData, error) { return s.forensic(ctx, db, q) })
}

// forensicRun holds what a forensic computation shares between its steps.
type forensicRun struct {
	db       *pgxpool.Pool
	q        ForensicQuery
	from, to pgtype.Timestamptz
	limit    int // rows listed per kind; at least 1, so totals come back
}

func (s *Store) forensic(ctx context.Context, db *pgxpool.Pool, q ForensicQuery) (ForensicData, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	f := forensicRun{db: db, q: q, from: bound(q.Range.From, pgtype.NegativeInfinity), to: bound(q.Range.To, pgtype.Infinity),
		limit: max(q.MaxPerKind, 1)}
	// Each goroutine fills its own part; they are merged after.
	var counts, side, dups, after ForensicData
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		hours, err := f.hours(gctx, &counts)
		if err != nil {
			return err
		}
		if err := f.bursts(gctx, hours, &counts); err != nil {
			return err
		}
		return f.gaps(gctx, hours, &counts)
	})
	g.Go(func() error { return f.side(gctx, &side) })
	g.Go(func() error { return f.duplicates(gctx, &dups) })
	g.Go(func() error { return f.afterRevocation(gctx, &after) })
	if err := g.Wait(); err != nil {
		return ForensicData{}, fmt.Errorf("forensic report of %s: %w", q.AgentPDA, err)
	}
	d := counts
	d.Finalized = d.Total - side.Total // side.Total holds the unfinalized count
	d.SignatureFailed, d.First, d.Last, d.InvalidSignatures = side.SignatureFailed, side.First, side.Last, side.InvalidSignatures
	d.LogAwaiting = side.LogAwaiting
	d.Duplicates, d.TotalDuplicates = dups.Duplicates, dups.TotalDuplicates
	d.AfterRevocation, d.TotalAfterRevocation = after.AfterRevocation, after.TotalAfterRevocation
	if q.MaxPerKind <= 0 { // counted, none listed
		d.Bursts, d.Gaps, d.Duplicates, d.AfterRevocation, d.InvalidSignatures = nil, nil, nil, nil, nil
	}
	return d, nil
}

// hours fills the totals, types and timeline, and answers the period's
// active hours, oldest first.
func (f forensicRun) hours(ctx context.Context, d *ForensicData) ([]activeHour, error) {
	sp := splitHours(f.q.Range)
	rows, err := f.db.Query(ctx, forensicHoursSQL, f.q.AgentPDA, sp.lo, sp.hi, sp.edge1From, sp.edge1To, sp.edge2From, sp.edge2To, actionTypes)
	if err != nil {
		return nil, fmt.Errorf("hourly counts: %w", err)
	}
	defer rows.Close()
	var hours []activeHour
	d.ByType = map[attestation.ActionType]int64{}
	days := map[time.Time]int64{}
	for rows.Next() {
		var at time.Time
		var typ int16
		var n, privacy int64
		if err := rows.Scan(&at, &typ, &n, &privacy); err != nil {
			return nil, fmt.Errorf("hourly counts: %w", err)
		}
		at = at.UTC()
		if n == 0 {
			continue
		}
		if typ == allTypes {
			hours = append(hours, activeHour{at, n})
			d.Total += n
			d.Privacy += privacy
			days[at.Truncate(24*time.Hour)] += n
			continue
		}
		d.DayTypes = append(d.DayTypes, DayTypeCount{Day: at, ActionType: attestation.ActionType(typ), N: n})
		d.ByType[attestation.ActionType(typ)] += n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("hourly counts: %w", err)
	}
	// The edges are hours of their own, so no hour comes twice; merge
	// anyway rather than rely on it.
	slices.SortFunc(hours, func(a, b activeHour) int { return a.hour.Compare(b.hour) })
	hours = mergeHours(hours)
	for day, n := range days {
		d.Days = append(d.Days, DayCount{Day: day, N: n})
	}
	slices.SortFunc(d.Days, func(a, b DayCount) int { return a.Day.Compare(b.Day) })
	slices.SortFunc(d.DayTypes, func(a, b DayTypeCount) int {
		if c := a.Day.Compare(b.Day); c != 0 {
			return c
		}
		return cmp.Compare(a.ActionType, b.ActionType)
	})
	return hours, nil
}

// mergeHours adds up adjacent entries of the same hour.
func mergeHours(hours []activeHour) []activeHour {
	out := hours[:0]
	for _, h := range hours {
		if len(out) > 0 && out[len(out)-1].hour.Equal(h.hour) {
			out[len(out)-1].n += h.n
			continue
		}
		out = append(out, h)
	}
	return out
}

// bursts finds the minutes with at least BurstPerMinute attestations. Only
// an hour with that many can hold one, so only those hours are read.
func (f forensicRun) bursts(ctx context.Context, hours []activeHour, d *ForensicData) error {
	if f.q.BurstPerMinute <= 0 {
		return nil
	}
	var busy []time.Time
	for _, h := range hours {
		if h.n >= int64(f.q.BurstPerMinute) {
			busy = append(busy, h.hour)
		}
	}
	if len(busy) == 0 {
		return nil
	}
	rows, err := f.db.Query(ctx, forensicBurstsSQL, f.q.AgentPDA, f.from, f.to, busy, f.q.BurstPerMinute, f.limit)
	if err != nil {
		return fmt.Errorf("bursts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var minute time.Time
		var n int64
		if err := rows.Scan(&minute, &n, &d.TotalBursts); err != nil {
			return fmt.Errorf("bursts: %w", err)
		}
		minute = minute.UTC()
		d.Bursts = append(d.Bursts, Span{At: minute, Until: minute.Add(time.Minute), N: n})
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("bursts: %w", err)
	}
	return nil
}

// gaps finds consecutive attestations at least LongGap apart. With a
// threshold of an hour or more such a pair lies in two consecutive active
// hours, so only the ends of those hours are read, and only for pairs of
// hours far enough apart to hold such a gap.
func (f forensicRun) gaps(ctx context.Context, hours []activeHour, d *ForensicData) error {
	gap := f.q.LongGap
	if gap <= 0 {
		return nil
	}
	if gap < time.Hour {
		rows, err := f.db.Query(ctx, forensicGapsScanSQL, f.q.AgentPDA, f.from, f.to, gap.Microseconds(), f.limit)
		if err != nil {
			return fmt.Errorf("long gaps: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var sp Span
			if err := rows.Scan(&sp.At, &sp.Until, &d.TotalGaps); err != nil {
				return fmt.Errorf("long gaps: %w", err)
			}
			d.Gaps = append(d.Gaps, sp)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("long gaps: %w", err)
		}
		return nil
	}
	var h1, h2 []time.Time
	for i := 1; i < len(hours); i++ {
		// Two attestations in hours a and b are less than b-a+1h apart.
		if hours[i].hour.Sub(hours[i-1].hour)+time.Hour > gap {
			h1, h2 = append(h1, hours[i-1].hour), append(h2, hours[i].hour)
		}
	}
	if len(h1) == 0 {
		return nil
	}
	rows, err := f.db.Query(ctx, forensicGapEndsSQL, f.q.AgentPDA, f.from, f.to, h1, h2)
	if err != nil {
		return fmt.Errorf("long gaps: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var last, first *time.Time
		if err := rows.Scan(&last, &first); err != nil {
			return fmt.Errorf("long gaps: %w", err)
		}
		if last == nil || first == nil || first.Sub(*last) < gap {
			continue // removed meanwhile by a fork, or not that far apart
		}
		d.TotalGaps++
		if len(d.Gaps) < f.limit {
			d.Gaps = append(d.Gaps, Span{At: *last, Until: *first})
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("long gaps: %w", err)
	}
	return nil
}

// afterRevocation fills the attestations later than the agent's revocation.
func (f forensicRun) afterRevocation(ctx context.Context, d *ForensicData) error {
	var at time.Time
	var slot int64
	err := f.db.QueryRow(ctx, forensicRevocationSQL, f.q.AgentPDA).Scan(&at, &slot)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // not revoked
	}
	if err != nil {
		return fmt.Errorf("revocation: %w", err)
	}
	rows, err := f.db.Query(ctx, forensicAfterRevocationSQL, f.q.AgentPDA, f.from, f.to, at, slot, f.limit)
	if err != nil {
		return fmt.Errorf("after-revocation attestations: %w", err)
	}
	if err := collectPoints(rows, &d.AfterRevocation, &d.TotalAfterRevocation); err != nil {
		return fmt.Errorf("after-revocation attestations: %w", err)
	}
	return nil
}

// side fills the unfinalized count (in d.Total), the ingest-time signature
// failures with the first of them, and the first and last timestamps.
func (f forensicRun) side(ctx context.Context, d *ForensicData) error {
	if err := f.db.QueryRow(ctx, forensicSideSQL, f.q.AgentPDA, f.from, f.to).Scan(&d.Total, &d.SignatureFailed, &d.First, &d.Last, &d.LogAwaiting); err != nil {
		return fmt.Errorf("unfinalized and invalid counts: %w", err)
	}
	if d.SignatureFailed == 0 {
		return nil
	}
	rows, err := f.db.Query(ctx, forensicInvalidSQL, f.q.AgentPDA, f.from, f.to, f.limit)
	if err != nil {
		return fmt.Errorf("invalid signatures: %w", err)
	}
	var ignored int64
	if err := collectPoints(rows, &d.InvalidSignatures, &ignored); err != nil {
		return fmt.Errorf("invalid signatures: %w", err)
	}
	return nil
}

// duplicates fills the action hashes attested more than once in the period.
func (f forensicRun) duplicates(ctx context.Context, d *ForensicData) error {
	rows, err := f.db.Query(ctx, forensicDuplicatesSQL, f.q.AgentPDA, f.from, f.to, max(f.q.ExamplePDAs, 0), f.limit)
	if err != nil {
		return fmt.Errorf("duplicate hashes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var dup Duplicate
		var hash []byte
		if err := rows.Scan(&hash, &dup.N, &dup.First, &dup.Last, &dup.PDAs, &d.TotalDuplicates); err != nil {
			return fmt.Errorf("duplicate hashes: %w", err)
		}
		copy(dup.Hash[:], hash)
		if len(dup.PDAs) == 0 {
			dup.PDAs = nil
		}
		d.Duplicates = append(d.Duplicates, dup)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("duplicate hashes: %w", err)
	}
	return nil
}

// NewestForRecheck reads the newest n attestations of the agent in r,
// newest first, for a signature re-check.
func (s *Store) NewestForRecheck(ctx context.Context, agentPDA string, r Range, n int) ([]VerifyRow, error) {
	if n <= 0 {
		return nil, nil
	}
	return onReader(ctx, s, func(db *pgxpool.Pool) ([]VerifyRow, error) {
		ctx, cancel := s.ctx(ctx)
		defer cancel()
		rows, err := db.Query(ctx, forensicNewestSQL, agentPDA, bound(r.From, pgtype.NegativeInfinity), bound(r.To, pgtype.Infinity), n)
		if err != nil {
			return nil, fmt.Errorf("newest attestations of %s: %w", agentPDA, err)
		}
		out, err := pgx.CollectRows(rows, scanVerifyRow)
		if err != nil {
			return nil, fmt.Errorf("newest attestations of %s: %w", agentPDA, err)
		}
		return out, nil
	})
}

// collectPoints reads (pda, ts[, total]) rows.
func collectPoints(rows pgx.Rows, out *[]Point, total *int64) error {
	defer rows.Close()
	withTotal := len(rows.FieldDescriptions()) == 3
	for rows.Next() {
		var p Point
		var err error
		if withTotal {
			err = rows.Scan(&p.PDA, &p.At, total)
		} else {
			err = rows.Scan(&p.PDA, &p.At)
		}
		if err != nil {
			return err
		}
		*out = append(*out, p)
	}
	return rows.Err()
}
