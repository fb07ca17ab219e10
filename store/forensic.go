package store

import (
	"cmp"
	"context"
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
}

// Grouping-set bitmasks of forensicAggregateSQL: GROUPING(day, action_type,
// minute) has a bit set for each column not grouped on.
const (
	setDayType = 0b001
	setDay     = 0b011
	setAll     = 0b111
	setMinute  = 0b110
	rowBurst   = 100
	rowGap     = 101
)

// forensicAggregateSQL aggregates an agent's attestations in one scan:
// per (UTC minute, type) first, then grouping sets over those rows for the
// day/type timeline, the day totals, the grand total and the minutes, from
// which bursts and long gaps are found. $1 agent, $2/$3 range, $4 burst
// threshold, $5 gap threshold, $6 list limit.
const forensicAggregateSQL = `WITH m AS (
		SELECT date_bin('1 minute', ts, timestamptz '2000-01-01 00:00:00+00') AS minute, action_type,
			count(*) AS n,
			count(*) FILTER (WHERE finalized) AS nfinal,
			count(*) FILTER (WHERE privacy_mode) AS npriv,
			count(*) FILTER (WHERE NOT signature_valid) AS nbad,
			min(ts) AS first, max(ts) AS last
		FROM attestations WHERE agent_pda = $1 AND ts >= $2 AND ts < $3
		GROUP BY 1, 2
	), g AS (
		SELECT GROUPING(day, action_type, minute) AS set, day, action_type, minute,
			COALESCE(sum(n), 0)::bigint AS n, COALESCE(sum(nfinal), 0)::bigint AS nfinal,
			COALESCE(sum(npriv), 0)::bigint AS npriv, COALESCE(sum(nbad), 0)::bigint AS nbad,
			min(first) AS first, max(last) AS last
		FROM (SELECT m.*, (m.minute AT TIME ZONE 'UTC')::date AS day FROM m) x
		GROUP BY GROUPING SETS ((day, action_type), (day), (), (minute))
	), mins AS (
		SELECT minute, n, first, last, lag(last) OVER (ORDER BY minute) AS prev_last FROM g WHERE set = 6
	)
	SELECT set, day, action_type, first, last, n, nfinal, npriv, nbad, 0::bigint AS total FROM g WHERE set IN (1, 3, 7)
	UNION ALL
	SELECT * FROM (SELECT 100, NULL::date, NULL::smallint, minute, minute + interval '1 minute', n, 0::bigint, 0::bigint, 0::bigint,
			count(*) OVER ()
		FROM mins WHERE n >= $4 ORDER BY minute LIMIT $6) bursts
	UNION ALL
	SELECT * FROM (SELECT 101, NULL::date, NULL::smallint, prev_last, first, 0::bigint, 0::bigint, 0::bigint, 0::bigint,
			count(*) OVER ()
		FROM mins WHERE first - prev_last >= $5::bigint * interval '1 microsecond' ORDER BY minute LIMIT $6) gaps`

// forensicRepeatsSQL counts attestations whose action hash an earlier one of
// the period already has: zero (the usual case) means no duplicates, and a
// sort-based distinct count is cheaper than grouping every hash.
const forensicRepeatsSQL = `SELECT count(*) - count(DISTINCT action_hash) FROM attestations
	WHERE agent_pda = $1 AND ts >= $2 AND ts < $3`

// forensicDuplicatesSQL finds action hashes the agent attested more than once.
const forensicDuplicatesSQL = `SELECT action_hash, n, first, last, count(*) OVER () FROM (
		SELECT action_hash, count(*) AS n, min(ts) AS first, max(ts) AS last
		FROM attestations WHERE agent_pda = $1 AND ts >= $2 AND ts < $3
		GROUP BY action_hash HAVING count(*) > 1
	) d ORDER BY first, action_hash LIMIT $4`

// forensicDuplicatePDAsSQL lists the attestations of the given hashes.
const forensicDuplicatePDAsSQL = `SELECT action_hash, pda FROM attestations
	WHERE agent_pda = $1 AND ts >= $2 AND ts < $3 AND action_hash = ANY($4::bytea[])
	ORDER BY ts, slot, pda`

// forensicAfterRevocationSQL lists attestations later than the agent's
// revocation: at or after its time, and in a later slot when at the same time.
const forensicAfterRevocationSQL = `WITH r AS (
		SELECT g.revoked_at AS at,
			COALESCE((SELECT min(slot) FROM agent_events e WHERE e.agent_pda = g.pda AND e.kind = 'revoked'), 0) AS slot
		FROM agents g WHERE g.pda = $1 AND g.revoked_at IS NOT NULL
	)
	SELECT a.pda, a.ts, count(*) OVER () FROM attestations a, r
	WHERE a.agent_pda = $1 AND a.ts >= $2 AND a.ts < $3 AND a.ts >= r.at AND (a.ts > r.at OR a.slot > r.slot)
	ORDER BY a.ts, a.slot, a.pda LIMIT $4`

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

// heavy runs fn in a transaction tuned for one large aggregate: no JIT
// (compiling costs more than it saves at this size) and enough memory to
// hash an agent's rows without spilling.
func heavy(ctx context.Context, db *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, db, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('jit', 'off', true), set_config('work_mem', '64MB', true)`); err != nil {
			return fmt.Errorf("tune transaction: %w", err)
		}
		return fn(tx)
	})
}

// Forensic computes the aggregates of a forensic report in SQL. Its
// statements run concurrently on separate connections (the aggregate scan,
// the duplicate-hash check, the after-revocation read), so the wall time is
// about that of the slowest.
func (s *Store) Forensic(ctx context.Context, q ForensicQuery) (ForensicData, error) {
	return onReader(ctx, s, func(db *pgxpool.Pool) (ForensicData, error) { return s.forensic(ctx, db, q) })
}

func (s *Store) forensic(ctx context.Context, db *pgxpool.Pool, q ForensicQuery) (ForensicData, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	from, to := bound(q.Range.From, pgtype.NegativeInfinity), bound(q.Range.To, pgtype.Infinity)
	limit := max(q.MaxPerKind, 0)
	var d ForensicData
	var dups ForensicData // filled by its own goroutine, merged after
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return heavy(gctx, db, func(tx pgx.Tx) error { return forensicAggregates(gctx, tx, q, from, to, limit, &d) })
	})
	g.Go(func() error {
		return heavy(gctx, db, func(tx pgx.Tx) error { return forensicDuplicates(gctx, tx, q, from, to, limit, &dups) })
	})
	var after []Point
	var afterTotal int64
	g.Go(func() error {
		rows, err := db.Query(gctx, forensicAfterRevocationSQL, q.AgentPDA, from, to, limit)
		if err != nil {
			return fmt.Errorf("after-revocation attestations: %w", err)
		}
		if err := collectPoints(rows, &after, &afterTotal); err != nil {
			return fmt.Errorf("after-revocation attestations: %w", err)
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return ForensicData{}, fmt.Errorf("forensic report of %s: %w", q.AgentPDA, err)
	}
	d.Duplicates, d.TotalDuplicates = dups.Duplicates, dups.TotalDuplicates
	d.AfterRevocation, d.TotalAfterRevocation = after, afterTotal
	if d.SignatureFailed > 0 && limit > 0 {
		rows, err := db.Query(ctx, forensicInvalidSQL, q.AgentPDA, from, to, limit)
		if err != nil {
			return ForensicData{}, fmt.Errorf("forensic report of %s: invalid signatures: %w", q.AgentPDA, err)
		}
		var ignored int64
		if err := collectPoints(rows, &d.InvalidSignatures, &ignored); err != nil {
			return ForensicData{}, fmt.Errorf("forensic report of %s: invalid signatures: %w", q.AgentPDA, err)
		}
	}
	return d, nil
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

func forensicAggregates(ctx context.Context, tx pgx.Tx, q ForensicQuery, from, to pgtype.Timestamptz, limit int, d *ForensicData) error {
	gap := q.LongGap
	if gap <= 0 {
		gap = 100 * 365 * 24 * time.Hour // effectively never
	}
	burst := q.BurstPerMinute
	if burst <= 0 {
		burst = 1 << 30
	}
	rows, err := tx.Query(ctx, forensicAggregateSQL, q.AgentPDA, from, to, burst, gap.Microseconds(), limit)
	if err != nil {
		return fmt.Errorf("aggregate: %w", err)
	}
	defer rows.Close()
	d.ByType = map[attestation.ActionType]int64{}
	for rows.Next() {
		var set int32
		var day *time.Time
		var typ *int16
		var first, last *time.Time
		var n, nfinal, npriv, nbad, total int64
		if err := rows.Scan(&set, &day, &typ, &first, &last, &n, &nfinal, &npriv, &nbad, &total); err != nil {
			return fmt.Errorf("aggregate: %w", err)
		}
		switch set {
		case setDayType:
			if day == nil || typ == nil {
				return fmt.Errorf("aggregate: day/type row without day or type")
			}
			d.DayTypes = append(d.DayTypes, DayTypeCount{Day: day.UTC(), ActionType: attestation.ActionType(*typ), N: n})
			d.ByType[attestation.ActionType(*typ)] += n
		case setDay:
			if day == nil {
				return fmt.Errorf("aggregate: day row without day")
			}
			d.Days = append(d.Days, DayCount{Day: day.UTC(), N: n})
		case setAll:
			// The empty grouping set answers one row even over no rows.
			d.Total, d.Finalized, d.Privacy, d.SignatureFailed = n, nfinal, npriv, nbad
			d.First, d.Last = first, last
		case rowBurst:
			d.Bursts = append(d.Bursts, Span{At: *first, Until: *last, N: n})
			d.TotalBursts = total
		case rowGap:
			d.Gaps = append(d.Gaps, Span{At: *first, Until: *last})
			d.TotalGaps = total
		default:
			return fmt.Errorf("aggregate: unexpected grouping set %d", set)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("aggregate: %w", err)
	}
	sortDays(d)
	return nil
}

// sortDays orders the timeline oldest first (grouping sets come unordered).
func sortDays(d *ForensicData) {
	slices.SortFunc(d.Days, func(a, b DayCount) int { return a.Day.Compare(b.Day) })
	slices.SortFunc(d.DayTypes, func(a, b DayTypeCount) int {
		if c := a.Day.Compare(b.Day); c != 0 {
			return c
		}
		return cmp.Compare(a.ActionType, b.ActionType)
	})
}

func forensicDuplicates(ctx context.Context, tx pgx.Tx, q ForensicQuery, from, to pgtype.Timestamptz, limit int, d *ForensicData) error {
	var repeats int64
	if err := tx.QueryRow(ctx, forensicRepeatsSQL, q.AgentPDA, from, to).Scan(&repeats); err != nil {
		return fmt.Errorf("repeated hashes: %w", err)
	}
	if repeats == 0 {
		return nil
	}
	if limit == 0 {
		limit = 1 // still learn the total
	}
	rows, err := tx.Query(ctx, forensicDuplicatesSQL, q.AgentPDA, from, to, limit)
	if err != nil {
		return fmt.Errorf("duplicate hashes: %w", err)
	}
	index := map[[32]byte]int{}
	var hashes [][]byte
	for rows.Next() {
		var dup Duplicate
		var hash []byte
		if err := rows.Scan(&hash, &dup.N, &dup.First, &dup.Last, &d.TotalDuplicates); err != nil {
			rows.Close()
			return fmt.Errorf("duplicate hashes: %w", err)
		}
		copy(dup.Hash[:], hash)
		index[dup.Hash] = len(d.Duplicates)
		hashes = append(hashes, hash)
		d.Duplicates = append(d.Duplicates, dup)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("duplicate hashes: %w", err)
	}
	if q.MaxPerKind <= 0 {
		d.Duplicates = nil
		return nil
	}
	if len(hashes) == 0 || q.ExamplePDAs <= 0 {
		return nil
	}
	rows, err = tx.Query(ctx, forensicDuplicatePDAsSQL, q.AgentPDA, from, to, hashes)
	if err != nil {
		return fmt.Errorf("duplicate hash pdas: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var hash []byte
		var pda string
		if err := rows.Scan(&hash, &pda); err != nil {
			return fmt.Errorf("duplicate hash pdas: %w", err)
		}
		var h [32]byte
		copy(h[:], hash)
		if i, ok := index[h]; ok && len(d.Duplicates[i].PDAs) < q.ExamplePDAs {
			d.Duplicates[i].PDAs = append(d.Duplicates[i].PDAs, pda)
		}
	}
	return rows.Err()
}
