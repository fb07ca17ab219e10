package indexer

import (
	"github.com/attestd/attestd/internal/batchsize"
	"github.com/attestd/attestd/internal/pause"
	"github.com/attestd/attestd/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"context"
	"errors"
	"fmt"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/prova"
	"github.com/attestd/attestd/internal/store"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"golang.org/x/sync/errgroup"
)

// sigEntry is one listed transaction of the program.
type sigEntry struct {
	sig    solana.Signature
	slot   uint64
	failed bool
}

// txRecords is what one transaction contributes to a batch.
type txRecords struct {
	entry   sigEntry
	regs    []store.AgentRegistration
	updates []store.PolicyUpdate
	revokes []store.AgentRevocation
	atts    []store.AttestationRecord
	skipped string // reason when nothing is indexed (a metric label)
	// pending: getTransaction did not return it (yet); it is retried.
	pending bool
	// pred is the checkpoint just before it in the sync's listing (nil:
	// before everything); a pending transaction of the sync holds the
	// checkpoint there.
	pred *store.Checkpoint
}

// settledEmpty reports whether the transaction is decided and leaves no
// rows (failed, undecodable, nothing of the program's to index).
func (t *txRecords) settledEmpty() bool { return !t.pending && t.size() == 0 }

func (t *txRecords) size() int { return len(t.regs) + len(t.updates) + len(t.revokes) + len(t.atts) }

// listedPos is where the sync's next listing stops: the newest
// transaction it stored.
func (ix *Indexer) listedPos() (store.Checkpoint, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.listed, ix.hasListed
}

func (ix *Indexer) getSlot(ctx context.Context, c rpc.CommitmentType) (uint64, error) {
	cctx, cancel := ix.rpcCtx(ctx)
	defer cancel()
	s, err := ix.rpc.GetSlot(cctx, c)
	if err != nil {
		return 0, fmt.Errorf("getSlot %s: %w", c, err)
	}
	return s, nil
}

// syncOnce indexes every program transaction newer than the checkpoint.
func (ix *Indexer) syncOnce(ctx context.Context) error {
	start := time.Now()
	chainSlot, err := ix.getSlot(ctx, rpc.CommitmentConfirmed)
	if err != nil {
		return err
	}
	finalSlot, err := ix.getSlot(ctx, rpc.CommitmentFinalized)
	if err != nil {
		return err
	}
	if err := ix.sameChain(ctx); err != nil {
		return err
	}
	ix.lastChain.Store(chainSlot)
	ix.m.chainSlot.Set(float64(chainSlot))
	ix.clock.chainAt(chainSlot, time.Now())
	from, has := ix.listedPos()
	if done := max(from.Slot, ix.headSlot.Load()); chainIsBehind(chainSlot, done, ix.cfg.SyncedLagSlots) {
		ix.waitForChain(chainSlot, done)
		return nil
	}
	sigs, err := ix.listNew(ctx, from, has)
	if err != nil {
		return err
	}
	if len(sigs) > 0 {
		if err := ix.process(ctx, sigs, from, has, chainSlot, finalSlot, start); err != nil {
			return err
		}
	}
	// Pending transactions resolved since the last batch let the
	// checkpoint move on; one still pending holds it, and the index is
	// complete only up to the slot before it.
	cp, err := ix.saveDurable(ctx)
	if err != nil {
		return err
	}
	indexed := chainSlot
	ix.mu.Lock()
	if p := ix.oldestHoldingLocked(); p != nil && p.entry.slot > 0 {
		indexed = min(indexed, p.entry.slot-1)
	}
	ix.mu.Unlock()
	head := store.Checkpoint{Name: ix.headName(), Slot: indexed, Signature: cp.Signature}
	if err := ix.st.SaveCheckpoint(ctx, head); err != nil {
		return fmt.Errorf("save head checkpoint: %w", err)
	}
	ix.headSlot.Store(indexed)
	now := time.Now()
	ix.caughtUp.Store(true)
	ix.chainOK.Store(true)
	ix.m.indexedSlot.Set(float64(indexed))
	ix.m.lag.Set(float64(chainSlot - indexed))
	ix.clock.indexedTo(indexed)
	ix.mu.Lock()
	t := attestation.At(now)
	ix.status = Status{LastIndexedSlot: indexed, ChainSlot: chainSlot, LastIndexedAt: &t, Synced: true}
	ix.lastChain.Store(chainSlot)
	ix.waiting.Store(false)
	ix.mu.Unlock()
	ix.m.syncDuration.Observe(time.Since(start).Seconds())
	return nil
}

// listNew pages getSignaturesForAddress backwards from the newest
// signature to the checkpoint and returns the entries oldest first. When
// the checkpoint's own transaction vanished in a fork, `until` matches
// nothing, so paging also stops below the checkpoint's slot (re-applying a
// few transactions of that slot is harmless).
func (ix *Indexer) listNew(ctx context.Context, cp store.Checkpoint, has bool) ([]sigEntry, error) {
	var until solana.Signature
	if has && cp.Signature != "" {
		s, err := solana.SignatureFromBase58(cp.Signature)
		if err != nil {
			return nil, fmt.Errorf("checkpoint signature %q: %w", cp.Signature, err)
		}
		until = s
	}
	var out []sigEntry
	var before solana.Signature
	limit := ix.cfg.PageSize
	for {
		cctx, cancel := ix.rpcCtx(ctx)
		page, err := ix.rpc.GetSignaturesForAddressWithOpts(cctx, ix.cfg.ProgramID, &rpc.GetSignaturesForAddressOpts{
			Limit: &limit, Before: before, Until: until, Commitment: rpc.CommitmentConfirmed})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("getSignaturesForAddress: %w", err)
		}
		stop := false
		for _, s := range page {
			if has && (s.Slot < cp.Slot || s.Signature == until) {
				stop = true
				break
			}
			out = append(out, sigEntry{sig: s.Signature, slot: s.Slot, failed: s.Err != nil})
		}
		if stop || len(page) < limit {
			break
		}
		before = page[len(page)-1].Signature
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// built is one batch ready to apply.
type built struct {
	batch   *store.Batch
	last    sigEntry
	txs     int
	atts    int
	records int          // what batchsize.Size counts: every record of its transactions
	pending []*txRecords // transactions getTransaction did not return
	settled []*txRecords // transactions decided to leave no rows
}

// process fetches and applies the listed transactions in order: a
// producer fetches chunks concurrently while the consumer applies the
// previous one. Each batch carries the checkpoint of its newest
// transaction, or, while a transaction the sync listed is pending, of the
// one just before the oldest such (from is where this listing started).
func (ix *Indexer) process(ctx context.Context, sigs []sigEntry, from store.Checkpoint, hasFrom bool, chainSlot, finalSlot uint64, started time.Time) error {
	if !tracing.Enabled() {
		return ix.processBatches(ctx, sigs, from, hasFrom, chainSlot, finalSlot, started)
	}
	// One trace per round that found transactions: its fetches (chain
	// RPC) and each batch applied (PostgreSQL) are children.
	ctx, span := tracing.Start(ctx, "indexer sync", trace.SpanKindInternal,
		attribute.Int("attestd.indexer.transactions", len(sigs)), attribute.Int64("attestd.indexer.chain_slot", int64(chainSlot)))
	err := ix.processBatches(ctx, sigs, from, hasFrom, chainSlot, finalSlot, started)
	tracing.End(span, err)
	return err
}

// processBatches runs process's producer (fetching, in chunks) and
// consumer (applying batches) until both are done or one fails.
func (ix *Indexer) processBatches(ctx context.Context, sigs []sigEntry, from store.Checkpoint, hasFrom bool, chainSlot, finalSlot uint64, started time.Time) error {
	g, gctx := errgroup.WithContext(ctx)
	ch := make(chan built, 2)
	g.Go(func() error {
		defer close(ch)
		return ix.fetchBatches(gctx, sigs, from, hasFrom, finalSlot, ch)
	})
	g.Go(func() error {
		p := progress{ix: ix, start: started, total: len(sigs), firstSlot: sigs[0].slot, chainSlot: chainSlot, last: time.Now()}
		for b := range ch {
			if err := ix.applyBuilt(gctx, b, chainSlot); err != nil {
				return err
			}
			p.step(b)
		}
		return nil
	})
	return g.Wait()
}

// fetchBatches fetches sigs chunk by chunk and sends their batches to ch
// in order. A pending transaction holds the checkpoint just before it in
// the listing (from, unless hasFrom is false: before everything).
func (ix *Indexer) fetchBatches(ctx context.Context, sigs []sigEntry, from store.Checkpoint, hasFrom bool, finalSlot uint64, ch chan<- built) error {
	pred := func(i int) *store.Checkpoint {
		if i == 0 {
			if !hasFrom {
				return nil
			}
			return &from
		}
		return &store.Checkpoint{Name: ix.cfg.Checkpoint, Slot: sigs[i-1].slot, Signature: sigs[i-1].sig.String()}
	}
	for lo := 0; lo < len(sigs); lo += ix.cfg.ChunkTxs {
		chunk := sigs[lo:min(lo+ix.cfg.ChunkTxs, len(sigs))]
		recs, err := ix.fetchChunkTraced(ctx, chunk, finalSlot)
		if err != nil {
			return err
		}
		for i, r := range recs {
			if r.pending {
				r.pred = pred(lo + i)
			}
		}
		for _, b := range ix.batches(recs) {
			select {
			case ch <- b:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// fetchChunkTraced is fetchChunk with quick tries, in a span of its own
// when tracing is on.
func (ix *Indexer) fetchChunkTraced(ctx context.Context, chunk []sigEntry, finalSlot uint64) ([]*txRecords, error) {
	if !tracing.Enabled() {
		return ix.fetchChunk(ctx, chunk, finalSlot, quickTries)
	}
	fctx, fspan := tracing.Start(ctx, "indexer fetch", trace.SpanKindInternal, attribute.Int("attestd.indexer.transactions", len(chunk)))
	recs, err := ix.fetchChunk(fctx, chunk, finalSlot, quickTries)
	tracing.End(fspan, err)
	return recs, err
}

// applyBuilt applies one batch with the durable checkpoint it may carry,
// then records what it moved: the metrics, the listed and durable
// checkpoints, the transactions settled empty.
func (ix *Indexer) applyBuilt(ctx context.Context, b built, chainSlot uint64) error {
	listed := store.Checkpoint{Name: ix.cfg.Checkpoint, Slot: b.last.slot, Signature: b.last.sig.String()}
	ix.mu.Lock()
	for _, r := range b.pending {
		ix.addPendingLocked(r, true)
	}
	cp, ok := ix.durableLocked(&listed)
	ix.mu.Unlock()
	if ok {
		b.batch.Checkpoint = &cp
	}
	t0 := time.Now()
	applied, err := ix.applyTraced(ctx, b)
	if err != nil {
		if ctx.Err() == nil && batchsize.IsTimeout(err) {
			if n, changed := ix.size.TimedOut(b.records); changed {
				ix.m.batchRecords.Set(float64(n))
				ix.log.Warn("indexer batch timed out: PostgreSQL applies it slower than its deadline; retrying with smaller batches",
					"transactions", b.txs, "attestations", b.atts, "batch_records", n)
			}
		}
		return fmt.Errorf("apply batch ending at %s: %w", b.last.sig, err)
	}
	if n, changed := ix.size.Applied(); changed {
		ix.m.batchRecords.Set(float64(n))
		ix.log.Info("indexer batches grow again", "batch_records", n)
	}
	ix.m.batchDuration.Observe(time.Since(t0).Seconds())
	ix.m.attestations.Add(float64(applied.Attestations))
	ix.m.transactions.Add(float64(b.txs))
	ix.ingested.Add(int64(applied.Attestations))
	ix.mu.Lock()
	ix.listed, ix.hasListed = listed, true
	if ok {
		ix.cp, ix.hasCP = cp, true
	}
	ix.rememberSettledLocked(b.settled)
	ix.mu.Unlock()
	lag := uint64(0)
	if chainSlot > b.last.slot {
		lag = chainSlot - b.last.slot
	}
	ix.m.lag.Set(float64(lag))
	ix.m.indexedSlot.Set(float64(b.last.slot))
	ix.clock.indexedTo(b.last.slot)
	return nil
}

// applyTraced applies b's batch, in a span of its own when tracing is on.
func (ix *Indexer) applyTraced(ctx context.Context, b built) (store.Applied, error) {
	if !tracing.Enabled() {
		return ix.st.Apply(ctx, b.batch)
	}
	actx, bspan := tracing.Start(ctx, "indexer batch", trace.SpanKindInternal,
		attribute.Int("attestd.indexer.transactions", b.txs), attribute.Int64("attestd.indexer.last_slot", int64(b.last.slot)))
	applied, err := ix.st.Apply(actx, b.batch)
	bspan.SetAttributes(attribute.Int("attestd.indexer.attestations", applied.Attestations))
	tracing.End(bspan, err)
	return applied, err
}

// batches groups per-transaction records into batches of at most
// ChunkRecords records (fewer while batches time out: see package
// batchsize), cutting only between transactions. They carry no
// checkpoint: only the sync sets it.
func (ix *Indexer) batches(recs []*txRecords) []built {
	var out []built
	cur := built{batch: &store.Batch{}}
	n, limit := 0, ix.size.Now()
	flush := func() {
		if cur.txs == 0 {
			return
		}
		out = append(out, cur)
		cur, n = built{batch: &store.Batch{}}, 0
	}
	for _, r := range recs {
		if n > 0 && n+r.size() > limit {
			flush()
		}
		b := cur.batch
		b.Registrations = append(b.Registrations, r.regs...)
		b.PolicyUpdates = append(b.PolicyUpdates, r.updates...)
		b.Revocations = append(b.Revocations, r.revokes...)
		b.Attestations = append(b.Attestations, r.atts...)
		switch {
		case r.pending:
			cur.pending = append(cur.pending, r)
		case r.settledEmpty():
			cur.settled = append(cur.settled, r)
		}
		n += r.size()
		cur.records = n
		cur.txs++
		cur.atts += len(r.atts)
		cur.last = r.entry
		if r.skipped != "" {
			ix.m.skipped.WithLabelValues(r.skipped).Inc()
		}
	}
	flush()
	return out
}

// quickTries is how many times getTransaction is asked, within about
// 350 ms, before a listed transaction it does not return becomes pending.
const quickTries = 4

// fetchChunk fetches and decodes a chunk's transactions concurrently,
// keeping their order; tries bounds the quick attempts per transaction.
func (ix *Indexer) fetchChunk(ctx context.Context, chunk []sigEntry, finalSlot uint64, tries int) ([]*txRecords, error) {
	out := make([]*txRecords, len(chunk))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(ix.cfg.Concurrency)
	for i, e := range chunk {
		if e.failed {
			out[i] = &txRecords{entry: e, skipped: "failed"}
			continue
		}
		g.Go(func() error {
			r, err := ix.fetchTx(gctx, e, finalSlot, tries)
			out[i] = r
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

var maxTxVersion uint64 = 0

// fetchTx re-fetches one transaction at confirmed and turns the program's
// events into records. A listed transaction the node does not return
// within tries quick attempts is pending (a lagging node behind a load
// balancer is ordinary; the pending retries decide later whether a fork
// dropped it); one whose logs cannot be parsed is skipped loudly rather
// than blocking the index.
func (ix *Indexer) fetchTx(ctx context.Context, e sigEntry, finalSlot uint64, tries int) (*txRecords, error) {
	res, err := ix.getTransaction(ctx, e, tries)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return &txRecords{entry: e, pending: true}, nil
	}
	e.slot = res.Slot
	out := &txRecords{entry: e}
	if res.Meta.Err != nil {
		out.skipped = "failed"
		return out, nil
	}
	events, tx, ok, err := ix.txEvents(e, res)
	if err != nil {
		return nil, err
	}
	if !ok {
		out.skipped = "undecodable"
		return out, nil
	}
	if err := ix.addRecords(ctx, out, res, tx, events, finalSlot); err != nil {
		return nil, err
	}
	if out.size() == 0 {
		out.skipped = "no_events"
	}
	return out, nil
}

// getTransaction asks for one transaction at confirmed up to tries times,
// backing off between; nil (with no error) when the node does not return
// it.
func (ix *Indexer) getTransaction(ctx context.Context, e sigEntry, tries int) (*rpc.GetTransactionResult, error) {
	for attempt := 0; ; attempt++ {
		cctx, cancel := ix.rpcCtx(ctx)
		r, err := ix.rpc.GetTransaction(cctx, e.sig, &rpc.GetTransactionOpts{
			Encoding: solana.EncodingBase64, Commitment: rpc.CommitmentConfirmed, MaxSupportedTransactionVersion: &maxTxVersion})
		cancel()
		if err == nil && r != nil && r.Meta != nil {
			return r, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if attempt+1 >= tries {
			if err == nil || errors.Is(err, rpc.ErrNotFound) {
				return nil, nil
			}
			return nil, fmt.Errorf("getTransaction %s: %w", e.sig, err)
		}
		pause.For(ctx, time.Duration(50<<attempt)*time.Millisecond)
	}
}

// txEvents reads the program's events from a transaction's logs, or, when
// the logs were truncated, from its instructions (tx is then the decoded
// transaction, else nil). ok is false, and it is logged, when the events
// cannot be decoded: the transaction is skipped.
func (ix *Indexer) txEvents(e sigEntry, res *rpc.GetTransactionResult) (events []prova.LoggedEvent, tx *solana.Transaction, ok bool, err error) {
	events, err = prova.ParseLogs(res.Meta.LogMessages, ix.cfg.ProgramID)
	if errors.Is(err, prova.ErrLogsTruncated) && res.BlockTime != nil {
		if tx, err = res.Transaction.GetTransaction(); err != nil {
			return nil, nil, false, fmt.Errorf("decode tx %s: %w", e.sig, err)
		}
		events, err = eventsFromInstructions(tx, ix.cfg.ProgramID, int64(*res.BlockTime), len(res.Meta.InnerInstructions) > 0 && hasOurInner(tx, res.Meta, ix.cfg.ProgramID))
		if err == nil {
			ix.m.skipped.WithLabelValues("truncated_rebuilt").Inc()
		}
	}
	if err != nil {
		ix.log.Error("cannot decode the program's events; transaction skipped", "signature", e.sig.String(), "slot", res.Slot, "err", err)
		return nil, nil, false, nil
	}
	return events, tx, true, nil
}

// addRecords turns the program's events of one transaction into out's
// records, at confirmed or, at or below finalSlot, finalized. tx is the
// decoded transaction when the caller has it (nil: decoded here when a
// registration needs it).
func (ix *Indexer) addRecords(ctx context.Context, out *txRecords, res *rpc.GetTransactionResult, tx *solana.Transaction, events []prova.LoggedEvent, finalSlot uint64) error {
	commitment := attestation.Confirmed
	if res.Slot <= finalSlot {
		commitment = attestation.Finalized
	}
	sig := out.entry.sig
	sigStr := sig.String()
	for _, le := range events {
		pos := store.Event{TxSignature: sigStr, EventIndex: le.Index, Slot: res.Slot, Commitment: commitment}
		switch ev := le.Event.(type) {
		case prova.AttestationIssued:
			pda, err := attestation.DerivePDA(ix.cfg.ProgramID, sig, le.Index)
			if err != nil {
				return fmt.Errorf("tx %s event %d: %w", sigStr, le.Index, err)
			}
			out.atts = append(out.atts, store.AttestationRecord{
				Event: pos, PDA: pda.String(), AgentPDA: ev.Agent.String(), AgentID: ev.AgentID,
				ActionType: ev.ActionType, ActionHash: ev.ActionHash, PrivacyMode: ev.PrivacyMode,
				Timestamp: time.Unix(ev.Timestamp, 0).UTC(), Signature: ev.Signature,
				SignatureValid: attestation.VerifySignature(ev.AgentID, ev.ActionHash, ev.Signature),
			})
		case prova.AgentRegistered:
			if tx == nil {
				var err error
				if tx, err = res.Transaction.GetTransaction(); err != nil {
					return fmt.Errorf("decode tx %s: %w", sigStr, err)
				}
			}
			root, err := ix.policyRoot(ctx, tx, res.Meta, ev.Agent)
			if err != nil {
				return fmt.Errorf("tx %s: policy root of %s: %w", sigStr, ev.Agent, err)
			}
			out.regs = append(out.regs, store.AgentRegistration{Event: pos, PDA: ev.Agent.String(), Operator: ev.Operator.String(),
				AgentID: ev.AgentID, PolicyRoot: root, At: time.Unix(ev.Timestamp, 0).UTC()})
		case prova.PolicyRootUpdated:
			out.updates = append(out.updates, store.PolicyUpdate{Event: pos, PDA: ev.Agent.String(), PolicyRoot: ev.NewRoot,
				At: time.Unix(ev.Timestamp, 0).UTC()})
		case prova.AgentRevokedEvent:
			out.revokes = append(out.revokes, store.AgentRevocation{Event: pos, PDA: ev.Agent.String(), At: time.Unix(ev.Timestamp, 0).UTC()})
		}
	}
	return nil
}

// policyRoot finds the policy root an agent was registered with: from the
// register_agent instruction in the transaction (top level or CPI), which
// is exact, else from the AgentAccount (current value).
func (ix *Indexer) policyRoot(ctx context.Context, tx *solana.Transaction, meta *rpc.TransactionMeta, agent solana.PublicKey) ([32]byte, error) {
	keys := tx.Message.AccountKeys
	match := func(programIdx uint16, accts []uint16, data []byte) ([32]byte, bool) {
		if int(programIdx) >= len(keys) || keys[programIdx] != ix.cfg.ProgramID || len(accts) == 0 ||
			int(accts[0]) >= len(keys) || keys[accts[0]] != agent {
			return [32]byte{}, false
		}
		args, err := prova.DecodeInstruction(data)
		if err != nil {
			return [32]byte{}, false
		}
		reg, ok := args.(prova.RegisterAgentArgs)
		return reg.PolicyRoot, ok
	}
	for _, ci := range tx.Message.Instructions {
		if root, ok := match(ci.ProgramIDIndex, ci.Accounts, ci.Data); ok {
			return root, nil
		}
	}
	for _, inner := range meta.InnerInstructions {
		for _, ci := range inner.Instructions {
			if root, ok := match(ci.ProgramIDIndex, ci.Accounts, ci.Data); ok {
				return root, nil
			}
		}
	}
	cctx, cancel := ix.rpcCtx(ctx)
	defer cancel()
	info, err := ix.rpc.GetAccountInfoWithOpts(cctx, agent, &rpc.GetAccountInfoOpts{Encoding: solana.EncodingBase64, Commitment: rpc.CommitmentConfirmed})
	if err != nil {
		return [32]byte{}, fmt.Errorf("getAccountInfo: %w", err)
	}
	acc, err := prova.DecodeAgentAccount(info.GetBinary())
	if err != nil {
		return [32]byte{}, err
	}
	return acc.PolicyRoot, nil
}

// progress logs a line every ProgressEvery during long syncs.
type progress struct {
	ix                   *Indexer
	start, last          time.Time
	total, done, atts    int
	firstSlot, chainSlot uint64
}

func (p *progress) step(b built) {
	p.done += b.txs
	p.atts += b.atts
	if time.Since(p.last) < p.ix.cfg.ProgressEvery && p.done < p.total {
		return
	}
	if p.done == p.total && time.Since(p.start) < p.ix.cfg.ProgressEvery {
		return // short syncs stay quiet
	}
	p.last = time.Now()
	elapsed := time.Since(p.start).Seconds()
	rate := float64(p.atts) / elapsed
	txRate := float64(p.done) / elapsed
	eta := time.Duration(0)
	if txRate > 0 {
		eta = time.Duration(float64(p.total-p.done) / txRate * float64(time.Second)).Round(time.Second)
	}
	slotsDone := uint64(0)
	if b.last.slot > p.firstSlot {
		slotsDone = b.last.slot - p.firstSlot
	}
	total := uint64(0)
	if p.chainSlot > p.firstSlot {
		total = p.chainSlot - p.firstSlot
	}
	p.ix.log.Info("indexer backfill progress", "slotsDone", slotsDone, "slotsTotal", total, "slot", b.last.slot,
		"transactions", p.done, "transactionsTotal", p.total, "attestations", p.atts,
		"attestationsPerSecond", int(rate), "eta", eta.String())
}

// hasOurInner reports whether the program runs through CPI in the
// transaction (its inner instructions name it).
func hasOurInner(tx *solana.Transaction, meta *rpc.TransactionMeta, program solana.PublicKey) bool {
	keys := tx.Message.AccountKeys
	for _, inner := range meta.InnerInstructions {
		for _, ci := range inner.Instructions {
			if int(ci.ProgramIDIndex) < len(keys) && keys[ci.ProgramIDIndex] == program {
				return true
			}
		}
	}
	return false
}
