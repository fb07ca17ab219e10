package store

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/tracing"
	"github.com/gagliardetto/solana-go"
	"github.com/jackc/pgx/v5"
)

// Outbox event types, as webhook subscribers see them.
const (
	EventAttestationCreated = "attestation.created"
	EventAgentRegistered    = "agent.registered"
	EventAgentRevoked       = "agent.revoked"
	EventAgentPolicyUpdated = "agent.policy_updated"
	globalCounter           = "" // attestation_counts row for all agents
)

// OutboxChannel is the PostgreSQL notification channel on which every
// transaction that writes outbox rows announces them at commit.
const OutboxChannel = "attestd_outbox"

// TxRef names a transaction and the slot it landed in.
type TxRef struct {
	Signature string
	Slot      uint64
}

// Apply writes a batch in one transaction. Records already stored (same
// transaction signature and event index, or same pda) are skipped, so a
// batch can be applied any number of times. After commit, when anything new
// was stored, the notifier bumps the cache epoch.
func (s *Store) Apply(ctx context.Context, b *Batch) (Applied, error) {
	var res Applied
	ctx, cancel := context.WithTimeout(ctx, s.timeout+time.Duration(len(b.Attestations))*time.Millisecond)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Batches vary in size, and so may the best plans of their bulk
		// statements: writes keep PostgreSQL's default planning (custom
		// plans first), and only reads are planned once per connection
		// (see tune).
		if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = auto`); err != nil {
			return fmt.Errorf("plan per execution: %w", err)
		}
		var err error
		if res.Agents, err = applyRegistrations(ctx, tx, b.Registrations); err != nil {
			return err
		}
		n, err := applyPolicyUpdates(ctx, tx, b.PolicyUpdates)
		if err != nil {
			return err
		}
		res.AgentChanges += n
		if n, err = applyRevocations(ctx, tx, b.Revocations); err != nil {
			return err
		}
		res.AgentChanges += n
		if res.Attestations, err = applyAttestations(ctx, tx, b.Attestations); err != nil {
			return err
		}
		if b.Checkpoint != nil {
			if err := saveCheckpoint(ctx, tx, *b.Checkpoint); err != nil {
				return err
			}
		}
		if res.Changed() { // new outbox rows: wake the webhook relays at commit
			if _, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, OutboxChannel); err != nil {
				return fmt.Errorf("notify outbox: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return Applied{}, fmt.Errorf("apply batch: %w", err)
	}
	if res.Changed() {
		s.notify(ctx)
	}
	return res, nil
}

func finalized(c attestation.Commitment) bool { return c == attestation.Finalized }

func applyRegistrations(ctx context.Context, tx pgx.Tx, regs []AgentRegistration) (int, error) {
	n := 0
	for _, r := range regs {
		var pda string
		err := tx.QueryRow(ctx, `INSERT INTO agents (pda, operator, agent_id, policy_root, initial_policy_root, registered_at, updated_at,
				tx_signature, event_index, slot, finalized)
			VALUES ($1, $2, $3, $4, $4, $5, $5, $6, $7, $8, $9)
			ON CONFLICT DO NOTHING RETURNING pda`,
			r.PDA, r.Operator, r.AgentID[:], r.PolicyRoot[:], r.At.UTC(), r.TxSignature, r.EventIndex, int64(r.Slot), finalized(r.Commitment),
		).Scan(&pda)
		if err == pgx.ErrNoRows {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("insert agent %s: %w", r.PDA, err)
		}
		n++
		payload := map[string]any{
			"pda": r.PDA, "operator": r.Operator, "agentId": solana.PublicKeyFromBytes(r.AgentID[:]).String(),
			"policyRoot": fmt.Sprintf("%x", r.PolicyRoot), "registeredAt": attestation.At(r.At),
			"txSignature": r.TxSignature, "slot": r.Slot,
		}
		if err := outbox(ctx, tx, EventAgentRegistered, payload, chainKey(r.PDA, r.TxSignature, r.EventIndex, r.Slot)); err != nil {
			return n, err
		}
	}
	return n, nil
}

func applyPolicyUpdates(ctx context.Context, tx pgx.Tx, ups []PolicyUpdate) (int, error) {
	n := 0
	for _, u := range ups {
		tag, err := tx.Exec(ctx, `INSERT INTO agent_events (tx_signature, event_index, agent_pda, kind, policy_root, at, slot, finalized)
			VALUES ($1, $2, $3, 'policy_updated', $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
			u.TxSignature, u.EventIndex, u.PDA, u.PolicyRoot[:], u.At.UTC(), int64(u.Slot), finalized(u.Commitment))
		if err != nil {
			return n, fmt.Errorf("insert policy update of %s: %w", u.PDA, err)
		}
		if tag.RowsAffected() == 0 {
			continue
		}
		n++
		if _, err := tx.Exec(ctx, `UPDATE agents SET policy_root = $2, updated_at = $3
			WHERE pda = $1 AND updated_at <= $3`, u.PDA, u.PolicyRoot[:], u.At.UTC()); err != nil {
			return n, fmt.Errorf("update policy root of %s: %w", u.PDA, err)
		}
		payload := map[string]any{"pda": u.PDA, "policyRoot": fmt.Sprintf("%x", u.PolicyRoot),
			"updatedAt": attestation.At(u.At), "txSignature": u.TxSignature, "slot": u.Slot}
		if err := outbox(ctx, tx, EventAgentPolicyUpdated, payload, chainKey(u.PDA, u.TxSignature, u.EventIndex, u.Slot)); err != nil {
			return n, err
		}
	}
	return n, nil
}

func applyRevocations(ctx context.Context, tx pgx.Tx, revs []AgentRevocation) (int, error) {
	n := 0
	for _, r := range revs {
		tag, err := tx.Exec(ctx, `INSERT INTO agent_events (tx_signature, event_index, agent_pda, kind, at, slot, finalized)
			VALUES ($1, $2, $3, 'revoked', $4, $5, $6) ON CONFLICT DO NOTHING`,
			r.TxSignature, r.EventIndex, r.PDA, r.At.UTC(), int64(r.Slot), finalized(r.Commitment))
		if err != nil {
			return n, fmt.Errorf("insert revocation of %s: %w", r.PDA, err)
		}
		if tag.RowsAffected() == 0 {
			continue
		}
		n++
		if _, err := tx.Exec(ctx, `UPDATE agents SET revoked = true, revoked_at = $2,
			updated_at = GREATEST(updated_at, $2) WHERE pda = $1`, r.PDA, r.At.UTC()); err != nil {
			return n, fmt.Errorf("revoke %s: %w", r.PDA, err)
		}
		payload := map[string]any{"pda": r.PDA, "revokedAt": attestation.At(r.At), "txSignature": r.TxSignature, "slot": r.Slot}
		if err := outbox(ctx, tx, EventAgentRevoked, payload, chainKey(r.PDA, r.TxSignature, r.EventIndex, r.Slot)); err != nil {
			return n, err
		}
	}
	return n, nil
}

type counterKey struct {
	agent string
	typ   attestation.ActionType
}

// allTypes is the action_type of attestation_hours rows that count every type.
const allTypes = -1

// hourKey names one attestation_hours row.
type hourKey struct {
	agent string
	typ   int16 // allTypes for all
	hour  time.Time
}

// hourCount is the change to one attestation_hours row: attestations, and
// how many of them are in privacy mode.
type hourCount struct{ n, privacy int64 }

// counters are the changes one transaction makes to the maintained
// counters: totals per (agent, type) and per hour.
type counters struct {
	totals map[counterKey]int64
	hours  map[hourKey]hourCount
}

func newCounters() counters {
	return counters{totals: map[counterKey]int64{}, hours: map[hourKey]hourCount{}}
}

// add counts d attestations of agent and type at ts in every counter that
// covers them: the agent's and the global total of the type, and the four
// hourly rows (agent or all agents, type or all types).
func (c counters) add(agent string, typ attestation.ActionType, ts time.Time, privacy bool, d int64) {
	c.totals[counterKey{agent, typ}] += d
	c.totals[counterKey{globalCounter, typ}] += d
	h := ts.UTC().Truncate(time.Hour)
	var p int64
	if privacy {
		p = d
	}
	for _, a := range [2]string{agent, globalCounter} {
		for _, t := range [2]int16{int16(typ), allTypes} {
			k := hourKey{a, t, h}
			v := c.hours[k]
			c.hours[k] = hourCount{v.n + d, v.privacy + p}
		}
	}
}

// applyAttestations inserts the attestations not yet stored and, for
// those inserted, counts them, adds their outbox rows and appends them to
// the stream; it returns how many were inserted.
func applyAttestations(ctx context.Context, tx pgx.Tx, recs []AttestationRecord) (int, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	cols, err := newAttestationRows(recs)
	if err != nil {
		return 0, err
	}
	if err := recordRepeats(ctx, tx, recs); err != nil {
		return 0, err
	}
	inserted, err := cols.insert(ctx, tx)
	if err != nil {
		return 0, err
	}
	if len(inserted) == 0 {
		return 0, nil
	}
	byPDA := make(map[string]*AttestationRecord, len(recs))
	for i := range recs {
		byPDA[recs[i].PDA] = &recs[i]
	}
	if err := announceAttestations(ctx, tx, inserted, byPDA); err != nil {
		return 0, err
	}
	return len(inserted), nil
}

// attestationRows are attestation records as the columns the insert
// unnests, one row per record.
type attestationRows struct {
	pda, agent, txSig          []string
	agentID, hash, sig, digest [][]byte
	typ                        []int16
	privacy, valid, final      []bool
	ts                         []time.Time
	eventIndex                 []int32
	slot                       []int64
}

// newAttestationRows lays recs out as columns, refusing an invalid
// action type.
func newAttestationRows(recs []AttestationRecord) (*attestationRows, error) {
	cols := &attestationRows{}
	for i := range recs {
		r := &recs[i]
		if !r.ActionType.Valid() {
			return nil, fmt.Errorf("attestation %s: invalid action type %d", r.PDA, r.ActionType)
		}
		cols.pda = append(cols.pda, r.PDA)
		cols.agent = append(cols.agent, r.AgentPDA)
		cols.txSig = append(cols.txSig, r.TxSignature)
		cols.agentID = append(cols.agentID, r.AgentID[:])
		cols.hash = append(cols.hash, r.ActionHash[:])
		cols.sig = append(cols.sig, r.Signature[:])
		cols.digest = append(cols.digest, verifiedDigest(r))
		cols.typ = append(cols.typ, int16(r.ActionType))
		cols.privacy = append(cols.privacy, r.PrivacyMode)
		cols.valid = append(cols.valid, r.SignatureValid)
		cols.final = append(cols.final, finalized(r.Commitment))
		cols.ts = append(cols.ts, r.Timestamp.UTC())
		cols.eventIndex = append(cols.eventIndex, int32(r.EventIndex))
		cols.slot = append(cols.slot, int64(r.Slot))
	}
	return cols, nil
}

// insert inserts the attestations not stored yet and returns their PDAs.
func (cols *attestationRows) insert(ctx context.Context, tx pgx.Tx) ([]string, error) {
	rows, err := tx.Query(ctx, `INSERT INTO attestations (pda, agent_pda, agent_id, action_type, action_hash, privacy_mode,
			ts, agent_signature, signature_valid, tx_signature, event_index, slot, finalized, verified_digest)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::smallint[], $5::bytea[], $6::boolean[],
			$7::timestamptz[], $8::bytea[], $9::boolean[], $10::text[], $11::integer[], $12::bigint[], $13::boolean[], $14::bytea[])
		ON CONFLICT DO NOTHING RETURNING pda`,
		cols.pda, cols.agent, cols.agentID, cols.typ, cols.hash, cols.privacy,
		cols.ts, cols.sig, cols.valid, cols.txSig, cols.eventIndex, cols.slot, cols.final, cols.digest)
	if err != nil {
		return nil, fmt.Errorf("insert attestations: %w", err)
	}
	inserted, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("insert attestations: %w", err)
	}
	return inserted, nil
}

// announceAttestations counts the inserted attestations (by PDA, in
// byPDA), adds their outbox rows and appends them to the stream.
func announceAttestations(ctx context.Context, tx pgx.Tx, inserted []string, byPDA map[string]*AttestationRecord) error {
	counts := newCounters()
	types, payloads, keys := make([]string, 0, len(inserted)), make([][]byte, 0, len(inserted)), make([]string, 0, len(inserted))
	evs := make([]StreamEvent, 0, len(inserted))
	for _, pda := range inserted {
		r := byPDA[pda]
		counts.add(r.AgentPDA, r.ActionType, r.Timestamp, r.PrivacyMode, 1)
		b, err := json.Marshal(r.API())
		if err != nil {
			return fmt.Errorf("encode outbox payload: %w", err)
		}
		types = append(types, EventAttestationCreated)
		payloads = append(payloads, b)
		keys = append(keys, chainKey(r.PDA, r.TxSignature, r.EventIndex, r.Slot))
		evs = append(evs, StreamEvent{Kind: StreamAttestation, PDA: r.PDA, AgentPDA: r.AgentPDA, ActionType: r.ActionType,
			ActionHash: r.ActionHash[:], TxSignature: r.TxSignature, Timestamp: r.Timestamp, Slot: r.Slot})
	}
	if err := addCounts(ctx, tx, counts); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO outbox (event_type, payload, chain_key, traceparent)
		SELECT t, p, k, $4::text FROM unnest($1::text[], $2::jsonb[], $3::text[]) AS u(t, p, k)`,
		types, payloads, keys, outboxTrace(ctx)); err != nil {
		return fmt.Errorf("insert outbox rows: %w", err)
	}
	sortStream(evs)
	return appendStream(ctx, tx, evs)
}

// addCounts applies counter changes. Rows are upserted in key order, so
// concurrent writers cannot deadlock on them.
func addCounts(ctx context.Context, tx pgx.Tx, c counters) error {
	if len(c.totals) == 0 {
		return nil
	}
	agents, types, ns := make([]string, 0, len(c.totals)), make([]int16, 0, len(c.totals)), make([]int64, 0, len(c.totals))
	for k, n := range c.totals {
		agents, types, ns = append(agents, k.agent), append(types, int16(k.typ)), append(ns, n)
	}
	_, err := tx.Exec(ctx, `INSERT INTO attestation_counts (agent_pda, action_type, n)
		SELECT * FROM unnest($1::text[], $2::smallint[], $3::bigint[]) ORDER BY 1, 2
		ON CONFLICT (agent_pda, action_type) DO UPDATE SET n = attestation_counts.n + EXCLUDED.n`, agents, types, ns)
	if err != nil {
		return fmt.Errorf("update attestation counts: %w", err)
	}
	agents, types, ns = agents[:0], types[:0], ns[:0]
	hours, privacy := make([]time.Time, 0, len(c.hours)), make([]int64, 0, len(c.hours))
	for k, v := range c.hours {
		agents, types, hours = append(agents, k.agent), append(types, k.typ), append(hours, k.hour)
		ns, privacy = append(ns, v.n), append(privacy, v.privacy)
	}
	_, err = tx.Exec(ctx, `INSERT INTO attestation_hours (agent_pda, action_type, hour, n, privacy)
		SELECT * FROM unnest($1::text[], $2::smallint[], $3::timestamptz[], $4::bigint[], $5::bigint[]) ORDER BY 1, 2, 3
		ON CONFLICT (agent_pda, action_type, hour) DO UPDATE
		SET n = attestation_hours.n + EXCLUDED.n, privacy = attestation_hours.privacy + EXCLUDED.privacy`,
		agents, types, hours, ns, privacy)
	if err != nil {
		return fmt.Errorf("update hourly attestation counts: %w", err)
	}
	return nil
}

// repeatsLock is the transaction-scoped advisory lock under which a write
// looks for earlier attestations of the hashes it stored.
const repeatsLock = 0x61747465 // "atte"

// recordRepeatsSQL records the (agent, hash) pairs of rows about to be
// written ($1 pdas, $2 agents, $3 hashes) that a stored attestation has
// too. It runs before the rows are inserted, so a new hash is one probe of
// the action hash's index that finds nothing (after the insert, every probe
// would find the row itself and read it from the table). OFFSET 0 keeps the
// agent condition out of the scan: the planner may otherwise combine the
// action hash's index with the agent's index and read all of the agent's rows for
// every new row (it did, on a table not analyzed yet: 6 s for a batch of
// 5,000 rows of one agent at 40,000).
const recordRepeatsSQL = `INSERT INTO attestation_repeats (agent_pda, action_hash)
	SELECT DISTINCT n.agent_pda, n.action_hash FROM unnest($1::text[], $2::text[], $3::bytea[]) AS n(pda, agent_pda, action_hash)
	WHERE EXISTS (SELECT 1 FROM (SELECT agent_pda, pda FROM attestations a WHERE a.action_hash = n.action_hash OFFSET 0) same
		WHERE same.agent_pda = n.agent_pda AND same.pda <> n.pda)
	ORDER BY 1, 2
	ON CONFLICT DO NOTHING`

// repeatKey is an (agent, action hash) pair.
type repeatKey struct {
	agent string
	hash  [32]byte
}

// recordRepeats adds to attestation_repeats every (agent, action hash) pair
// of recs that a stored attestation or another record of recs has too,
// before recs are inserted. Records already stored (a batch applied again)
// only ever add pairs that are true repeats. The lock makes concurrent
// writers take turns until they commit: each looks only after the one
// before has committed, so two transactions storing the same pair at once
// still find each other.
func recordRepeats(ctx context.Context, tx pgx.Tx, recs []AttestationRecord) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(repeatsLock)); err != nil {
		return fmt.Errorf("lock repeated hashes: %w", err)
	}
	pdas, agents, hashes := make([]string, len(recs)), make([]string, len(recs)), make([][]byte, len(recs))
	first := make(map[repeatKey]string, len(recs)) // pair → first pda in recs
	var batchAgents []string
	var batchHashes [][]byte
	for i := range recs {
		r := &recs[i]
		pdas[i], agents[i], hashes[i] = r.PDA, r.AgentPDA, r.ActionHash[:]
		k := repeatKey{r.AgentPDA, r.ActionHash}
		if pda, seen := first[k]; !seen {
			first[k] = r.PDA
		} else if pda != r.PDA {
			batchAgents, batchHashes = append(batchAgents, r.AgentPDA), append(batchHashes, r.ActionHash[:])
		}
	}
	if _, err := tx.Exec(ctx, recordRepeatsSQL, pdas, agents, hashes); err != nil {
		return fmt.Errorf("record repeated hashes: %w", err)
	}
	if len(batchAgents) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO attestation_repeats (agent_pda, action_hash)
			SELECT DISTINCT * FROM unnest($1::text[], $2::bytea[]) ORDER BY 1, 2 ON CONFLICT DO NOTHING`, batchAgents, batchHashes); err != nil {
			return fmt.Errorf("record hashes repeated in the batch: %w", err)
		}
	}
	return nil
}

// chainKey names a chain event in chain terms (outbox.chain_key): its
// account, transaction, event index and slot. A fork that re-includes
// the transaction at another slot makes another event.
func chainKey(pda, txSignature string, eventIndex int, slot uint64) string {
	return pda + "/" + txSignature + "/" + strconv.Itoa(eventIndex) + "/" + strconv.FormatUint(slot, 10)
}

// outboxTrace is the traceparent an outbox row records of the span that
// writes it (ctx's: the indexer's batch, an API request), for the webhook
// fan-out and delivery spans to link to: nil (NULL) when tracing is off or
// ctx has no span. Only a well-formed traceparent is stored (at most
// tracing.TraceparentLen characters, as outbox.traceparent holds).
func outboxTrace(ctx context.Context) *string {
	if !tracing.Enabled() {
		return nil
	}
	tp := tracing.CleanTraceparent(tracing.Traceparent(ctx))
	if tp == "" {
		return nil
	}
	return &tp
}

func outbox(ctx context.Context, tx pgx.Tx, eventType string, payload any, key string) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("encode outbox payload: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO outbox (event_type, payload, chain_key, traceparent) VALUES ($1, $2, $3, $4)`,
		eventType, b, key, outboxTrace(ctx)); err != nil {
		return fmt.Errorf("insert outbox row: %w", err)
	}
	return nil
}

func saveCheckpoint(ctx context.Context, tx pgx.Tx, c Checkpoint) error {
	_, err := tx.Exec(ctx, `INSERT INTO checkpoints (name, slot, signature, updated_at) VALUES ($1, $2, $3, now())
		ON CONFLICT (name) DO UPDATE SET slot = EXCLUDED.slot, signature = EXCLUDED.signature, updated_at = now()`,
		c.Name, int64(c.Slot), c.Signature)
	if err != nil {
		return fmt.Errorf("save checkpoint %s: %w", c.Name, err)
	}
	return nil
}

// SaveCheckpoint records a checkpoint outside of a batch.
func (s *Store) SaveCheckpoint(ctx context.Context, c Checkpoint) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return saveCheckpoint(ctx, tx, c) })
}

// Checkpoint reads a named checkpoint; ok is false when there is none.
func (s *Store) Checkpoint(ctx context.Context, name string) (c Checkpoint, ok bool, err error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var slot int64
	err = s.pool.QueryRow(ctx, `SELECT name, slot, signature, updated_at FROM checkpoints WHERE name = $1`, name).
		Scan(&c.Name, &slot, &c.Signature, &c.UpdatedAt)
	if err == pgx.ErrNoRows {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("read checkpoint %s: %w", name, err)
	}
	c.Slot = uint64(slot)
	return c, true, nil
}

// ConfirmedTransactions lists up to limit transactions that still have
// unfinalized rows, oldest slot first.
func (s *Store) ConfirmedTransactions(ctx context.Context, limit int) ([]TxRef, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT tx_signature, min(slot) FROM (
			SELECT tx_signature, slot FROM attestations WHERE NOT finalized
			UNION ALL SELECT tx_signature, slot FROM agents WHERE NOT finalized
			UNION ALL SELECT tx_signature, slot FROM agent_events WHERE NOT finalized
		) t GROUP BY tx_signature ORDER BY 2, 1 LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list confirmed transactions: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (TxRef, error) {
		var t TxRef
		var slot int64
		err := r.Scan(&t.Signature, &slot)
		t.Slot = uint64(slot)
		return t, err
	})
}

// Finalize promotes every row of the given transactions to finalized.
func (s *Store) Finalize(ctx context.Context, txSignatures []string) (int, error) {
	if len(txSignatures) == 0 {
		return 0, nil
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var total int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE attestations SET finalized = true WHERE tx_signature = ANY($1) AND NOT finalized
			RETURNING pda, agent_pda, action_type, ts, slot, action_hash, tx_signature`, txSignatures)
		if err != nil {
			return fmt.Errorf("finalize attestations: %w", err)
		}
		evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (StreamEvent, error) {
			e := StreamEvent{Kind: StreamCommitment}
			var typ int16
			var slot int64
			err := r.Scan(&e.PDA, &e.AgentPDA, &typ, &e.Timestamp, &slot, &e.ActionHash, &e.TxSignature)
			e.ActionType, e.Slot = attestation.ActionType(typ), uint64(slot)
			return e, err
		})
		if err != nil {
			return fmt.Errorf("finalize attestations: %w", err)
		}
		total += int64(len(evs))
		sortStream(evs)
		if err := appendStream(ctx, tx, evs); err != nil {
			return err
		}
		for _, table := range []string{"agents", "agent_events"} {
			tag, err := tx.Exec(ctx, `UPDATE `+table+` SET finalized = true WHERE tx_signature = ANY($1) AND NOT finalized`, txSignatures)
			if err != nil {
				return fmt.Errorf("finalize %s: %w", table, err)
			}
			total += tag.RowsAffected()
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if total > 0 {
		s.notify(ctx)
	}
	return int(total), nil
}

// RemoveTransactions deletes the unfinalized rows of transactions that
// vanished in a fork, keeping the counters right. Finalized rows are never
// removed. It returns how many rows were deleted.
func (s *Store) RemoveTransactions(ctx context.Context, txSignatures []string) (int, error) {
	if len(txSignatures) == 0 {
		return 0, nil
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var total int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `DELETE FROM attestations WHERE tx_signature = ANY($1) AND NOT finalized
			RETURNING agent_pda, action_type, ts, privacy_mode, pda, tx_signature, slot, action_hash`, txSignatures)
		if err != nil {
			return fmt.Errorf("remove attestations: %w", err)
		}
		counts := newCounters()
		var evs []StreamEvent
		for rows.Next() {
			var agent, pda, sig string
			var typ int16
			var ts time.Time
			var privacy bool
			var slot int64
			var hash []byte
			if err := rows.Scan(&agent, &typ, &ts, &privacy, &pda, &sig, &slot, &hash); err != nil {
				rows.Close()
				return fmt.Errorf("remove attestations: %w", err)
			}
			counts.add(agent, attestation.ActionType(typ), ts, privacy, -1)
			total++
			data, err := json.Marshal(RemovedData{PDA: pda, TxSignature: sig})
			if err != nil {
				rows.Close()
				return fmt.Errorf("encode stream event: %w", err)
			}
			evs = append(evs, StreamEvent{Kind: StreamRemoved, PDA: pda, AgentPDA: agent, ActionType: attestation.ActionType(typ),
				ActionHash: hash, TxSignature: sig, Timestamp: ts, Slot: uint64(slot), Data: data})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("remove attestations: %w", err)
		}
		if err := addCounts(ctx, tx, counts); err != nil {
			return err
		}
		sortStream(evs)
		if err := appendStream(ctx, tx, evs); err != nil {
			return err
		}
		// Agent events: undo their effect by recomputing the agent's state.
		evRows, err := tx.Query(ctx, `DELETE FROM agent_events WHERE tx_signature = ANY($1) AND NOT finalized
			RETURNING agent_pda`, txSignatures)
		if err != nil {
			return fmt.Errorf("remove agent events: %w", err)
		}
		touched, err := pgx.CollectRows(evRows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("remove agent events: %w", err)
		}
		total += len(touched)
		for _, pda := range touched {
			if err := recomputeAgent(ctx, tx, pda); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, `DELETE FROM agents WHERE tx_signature = ANY($1) AND NOT finalized`, txSignatures)
		if err != nil {
			return fmt.Errorf("remove agents: %w", err)
		}
		total += int(tag.RowsAffected())
		return nil
	})
	if err != nil {
		return 0, err
	}
	if total > 0 {
		s.notify(ctx)
	}
	return total, nil
}

// recomputeAgent rebuilds an agent's policy root and revocation from its
// registration and remaining events.
func recomputeAgent(ctx context.Context, tx pgx.Tx, pda string) error {
	_, err := tx.Exec(ctx, `UPDATE agents a SET
			policy_root = COALESCE((SELECT policy_root FROM agent_events e WHERE e.agent_pda = a.pda AND kind = 'policy_updated'
				ORDER BY at DESC, slot DESC LIMIT 1), a.initial_policy_root),
			revoked = EXISTS (SELECT 1 FROM agent_events e WHERE e.agent_pda = a.pda AND kind = 'revoked'),
			revoked_at = (SELECT min(at) FROM agent_events e WHERE e.agent_pda = a.pda AND kind = 'revoked'),
			updated_at = GREATEST(a.registered_at, COALESCE((SELECT max(at) FROM agent_events e WHERE e.agent_pda = a.pda), a.registered_at))
		WHERE a.pda = $1`, pda)
	if err != nil {
		return fmt.Errorf("recompute agent %s: %w", pda, err)
	}
	return nil
}

// VerifiedDigest is the SHA-256 of the bytes an Ed25519 check covers:
// agent_id (32) || action_hash (32) || signature (64).
func VerifiedDigest(agentID [32]byte, hash [32]byte, sig [64]byte) [32]byte {
	var b [128]byte
	copy(b[:32], agentID[:])
	copy(b[32:64], hash[:])
	copy(b[64:], sig[:])
	return sha256.Sum256(b[:])
}

// verifiedDigest is the stored digest of a record whose signature passed
// the check at ingest, nil (NULL) otherwise.
func verifiedDigest(r *AttestationRecord) []byte {
	if !r.SignatureValid {
		return nil
	}
	d := VerifiedDigest(r.AgentID, r.ActionHash, r.Signature)
	return d[:]
}
