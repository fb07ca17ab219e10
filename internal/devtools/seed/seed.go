package seed

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/store"
	"github.com/gagliardetto/solana-go"
)

// Options say how much to generate.
type Options struct {
	Agents       int
	Attestations int
	Seed         uint64        // same seed, same data
	Span         time.Duration // default 90 days, ending at Now
	Now          time.Time     // default time.Now()
	ProgramID    solana.PublicKey
	BatchSize    int // attestations per write, default 2000
	Logger       *slog.Logger
	// Progress, when set, is called after every write with how far the
	// run has come; when nil, progress is logged every 10 s.
	Progress func(Progress)
}

// Progress is how far a run has come.
type Progress struct {
	Done, Total int           // attestations written, and to write
	Elapsed     time.Duration // since the run started
	Rate        float64       // attestations per second so far
	ETA         time.Duration // at that rate, until the last is written
}

func progressAt(done, total int, elapsed time.Duration) Progress {
	p := Progress{Done: done, Total: total, Elapsed: elapsed}
	if s := elapsed.Seconds(); s > 0 {
		p.Rate = float64(done) / s
	}
	if p.Rate > 0 {
		p.ETA = time.Duration(float64(total-done) / p.Rate * float64(time.Second)).Round(time.Second)
	}
	return p
}

// Agent is a generated agent and its signing key.
type Agent struct {
	PDA      solana.PublicKey
	Operator solana.PublicKey
	Key      ed25519.PrivateKey
	Revoked  bool
}

// Result says what was written.
type Result struct {
	Agents       []Agent
	Attestations int
	Duration     time.Duration
	// Samples are the newest attestations, whose payloads the run
	// published (store.PublishSamples): the demo data's "try the sample
	// payload".
	Samples []Sample
	// LastSlot is the newest slot the run wrote an event at (its slots
	// start at 1): a chain simulated beside the data starts after it, so
	// seeded and live data share one slot space.
	LastSlot uint64
}

// Sample is an attestation whose payload is published.
type Sample struct {
	PDA, ActionHash, Payload string
}

// SampleCount is how many of the newest attestations get their payload
// published.
const SampleCount = 5

// Run generates the data and applies it with st.Apply.
func Run(ctx context.Context, st *store.Store, opt Options) (Result, error) {
	if err := opt.complete(); err != nil {
		return Result{}, err
	}
	start := time.Now()
	g := &generator{opt: opt, rng: rand.New(rand.NewPCG(opt.Seed, opt.Seed^0x9e3779b97f4a7c15))}
	agents, agentBatch := g.agents()
	if _, err := st.Apply(ctx, agentBatch); err != nil {
		return Result{}, fmt.Errorf("seed agents: %w", err)
	}
	written, err := g.writeAttestations(ctx, st, agents, start)
	if err != nil {
		return Result{}, err
	}
	payloads := make([]string, len(g.samples))
	for i, x := range g.samples {
		payloads[i] = x.Payload
	}
	if err := st.PublishSamples(ctx, payloads); err != nil {
		return Result{}, fmt.Errorf("seed sample payloads: %w", err)
	}
	// Revocations and policy updates last, so they come after the agents' activity.
	if _, err := st.Apply(ctx, g.agentChanges(agents)); err != nil {
		return Result{}, fmt.Errorf("seed agent changes: %w", err)
	}
	// Seed made every slot it used whole and final: the log may take them.
	if err := st.SettleLogFrontier(ctx); err != nil {
		return Result{}, err
	}
	return Result{Agents: agents, Attestations: written, Duration: time.Since(start), Samples: g.samples, LastSlot: g.slot}, nil
}

// complete checks the options and fills in their defaults (not the
// logger's: Run's progress log falls back to slog.Default itself).
func (opt *Options) complete() error {
	if opt.Agents < 1 {
		return fmt.Errorf("seed needs at least one agent")
	}
	if opt.Attestations < 0 {
		return fmt.Errorf("attestations must not be negative")
	}
	if opt.Span <= 0 {
		opt.Span = 90 * 24 * time.Hour
	}
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	if opt.ProgramID.IsZero() {
		opt.ProgramID = solana.MustPublicKeyFromBase58(attestation.DefaultProgramID)
	}
	if opt.BatchSize <= 0 {
		opt.BatchSize = 2000
	}
	return nil
}

// writeAttestations generates the run's attestations by agents in
// batches and applies them, reporting progress since start; it returns
// how many it wrote. One goroutine generates (signing and pda derivation
// on every core) while this one writes the previous batch: the database
// and the signing overlap. Batches come in order, so the same seed still
// gives the same data.
func (g *generator) writeAttestations(ctx context.Context, st *store.Store, agents []Agent, start time.Time) (int, error) {
	opt := g.opt
	log := opt.Logger
	if log == nil {
		log = slog.Default()
	}
	gctx, stopGen := context.WithCancel(ctx)
	defer stopGen()
	batches := make(chan []store.AttestationRecord, 2)
	go func() {
		defer close(batches)
		for made := 0; made < opt.Attestations; {
			n := min(opt.BatchSize, opt.Attestations-made)
			recs := g.attestations(agents, n)
			made += n
			select {
			case batches <- recs:
			case <-gctx.Done():
				return
			}
		}
	}()
	written := 0
	lastLog := start
	for recs := range batches {
		if _, err := st.Apply(ctx, &store.Batch{Attestations: recs}); err != nil {
			return 0, fmt.Errorf("seed attestations: %w", err)
		}
		written += len(recs)
		p := progressAt(written, opt.Attestations, time.Since(start))
		switch {
		case opt.Progress != nil:
			opt.Progress(p)
		case time.Since(lastLog) >= 10*time.Second || written == opt.Attestations:
			lastLog = time.Now()
			log.Info("seeding", "attestations", written, "of", opt.Attestations,
				"rate_per_s", int(p.Rate), "eta", p.ETA.String())
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("seed attestations: %w", err)
	}
	return written, nil
}

type generator struct {
	opt  Options
	rng  *rand.Rand
	slot uint64
	done int // attestations generated so far
	txs  int // transactions generated so far
	// weights of the agents (pickAgent), and their sum.
	weights     []float64
	totalWeight float64
	// samples: the last SampleCount attestations of the run, with their
	// payloads.
	samples []Sample
}

func (g *generator) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
	return b
}

func (g *generator) txSignature() solana.Signature {
	var s solana.Signature
	copy(s[:], g.bytes(64))
	return s
}

func (g *generator) agents() ([]Agent, *store.Batch) {
	b := &store.Batch{}
	agents := make([]Agent, g.opt.Agents)
	regAt := g.opt.Now.Add(-g.opt.Span - time.Hour)
	for i := range agents {
		var op solana.PublicKey
		copy(op[:], g.bytes(32))
		key := ed25519.NewKeyFromSeed(g.bytes(32))
		pda, _, err := attestation.DeriveAgentPDA(g.opt.ProgramID, op)
		if err != nil {
			panic(err) // FindProgramAddress fails with probability ~2^-255
		}
		agents[i] = Agent{PDA: pda, Operator: op, Key: key, Revoked: i%10 == 9}
		var id, root [32]byte
		copy(id[:], key.Public().(ed25519.PublicKey))
		copy(root[:], g.bytes(32))
		g.slot++
		b.Registrations = append(b.Registrations, store.AgentRegistration{
			Event: store.Event{TxSignature: g.txSignature().String(), EventIndex: 0, Slot: g.slot, Commitment: attestation.Finalized},
			PDA:   pda.String(), Operator: op.String(), AgentID: id, PolicyRoot: root, At: regAt.Add(time.Duration(i) * time.Second),
		})
	}
	return agents, b
}

func (g *generator) agentChanges(agents []Agent) *store.Batch {
	b := &store.Batch{}
	at := g.opt.Now.Add(-time.Minute)
	for i, a := range agents {
		if i%7 == 3 {
			var root [32]byte
			copy(root[:], g.bytes(32))
			g.slot++
			b.PolicyUpdates = append(b.PolicyUpdates, store.PolicyUpdate{
				Event: store.Event{TxSignature: g.txSignature().String(), Slot: g.slot, Commitment: attestation.Finalized},
				PDA:   a.PDA.String(), PolicyRoot: root, At: at.Add(-time.Duration(i) * time.Second),
			})
		}
		if a.Revoked {
			g.slot++
			b.Revocations = append(b.Revocations, store.AgentRevocation{
				Event: store.Event{TxSignature: g.txSignature().String(), Slot: g.slot, Commitment: attestation.Finalized},
				PDA:   a.PDA.String(), At: at.Add(-time.Duration(i) * time.Second),
			})
		}
	}
	return b
}

var payloadKinds = [attestation.NumActionTypes]string{"transfer", "decide", "infer", "tool", "read", "policy", "custom"}

// txSize draws how many events a transaction records, as agents batch
// them: mostly one, sometimes a few, rarely many (at most 100).
func (g *generator) txSize() int {
	switch r := g.rng.IntN(100); {
	case r < 70:
		return 1
	case r < 90:
		return 2 + g.rng.IntN(9) // 2..10
	case r < 99:
		return 11 + g.rng.IntN(20) // 11..30
	default:
		return 31 + g.rng.IntN(70) // 31..100
	}
}

// pickAgent draws a transaction's agent as real traffic spreads: agent i
// with weight 1/(i+1)^1.1, so a few agents are busy and most are quiet.
// The first transactions go to each agent in turn, so every agent has
// attestations.
func (g *generator) pickAgent(agents []Agent) *Agent {
	if g.txs < len(agents) {
		g.txs++
		return &agents[g.txs-1]
	}
	g.txs++
	if len(g.weights) != len(agents) {
		g.weights, g.totalWeight = make([]float64, len(agents)), 0
		for i := range agents {
			g.weights[i] = math.Pow(float64(i+1), -1.1)
			g.totalWeight += g.weights[i]
		}
	}
	r := g.rng.Float64() * g.totalWeight
	for i, w := range g.weights {
		if r -= w; r < 0 {
			return &agents[i]
		}
	}
	return &agents[len(agents)-1]
}

// timeAt is where a run's fraction f of attestations falls in its span
// (0: the start, 1: now): traffic grows through the span, three times as
// dense at its end as at its start (density 1+2u, so f = (u+u²)/2).
func timeAt(f float64) float64 {
	return (math.Sqrt(1+8*f) - 1) / 2
}

// attestations makes n records in transactions of 1..100 events (txSize),
// of agents drawn by pickAgent, timestamps increasing with the slot.
// Signing and pda derivation run on every core.
func (g *generator) attestations(agents []Agent, n int) []store.AttestationRecord {
	recs := make([]store.AttestationRecord, n)
	type job struct {
		i     int
		agent *Agent
		tx    solana.Signature
		event int
		nonce uint64
	}
	jobs := make([]job, n)
	payloads := make([]string, n)
	span := g.opt.Span.Seconds()
	for i := 0; i < n; {
		size := min(g.txSize(), n-i)
		agent := g.pickAgent(agents)
		tx := g.txSignature()
		g.slot += 1 + uint64(g.rng.IntN(3))
		// Time grows with progress through the whole run.
		frac := float64(g.done+i) / float64(max(g.opt.Attestations, 1))
		ts := g.opt.Now.Add(-time.Duration(span*(1-timeAt(frac))) * time.Second).Truncate(time.Second)
		for e := 0; e < size; e++ {
			typ := attestation.ActionType(g.rng.IntN(attestation.NumActionTypes))
			recs[i+e] = store.AttestationRecord{
				Event:       store.Event{TxSignature: tx.String(), EventIndex: e, Slot: g.slot, Commitment: attestation.Finalized},
				AgentPDA:    agent.PDA.String(),
				ActionType:  typ,
				PrivacyMode: g.rng.IntN(5) == 0,
				Timestamp:   ts,
			}
			copy(recs[i+e].AgentID[:], agent.Key.Public().(ed25519.PublicKey))
			jobs[i+e] = job{i: i + e, agent: agent, tx: tx, event: e, nonce: g.rng.Uint64()}
		}
		i += size
	}
	g.done += n
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for k := w; k < len(jobs); k += workers {
				j := jobs[k]
				r := &recs[j.i]
				// The nonce stays below 2^53, a number JavaScript reads exactly,
				// so the RFC 8785 form of a payload is its bytes (keys sorted,
				// no spaces) and both checks of the explorer match.
				payload, _ := json.Marshal(map[string]any{"kind": payloadKinds[r.ActionType], "agent": j.agent.PDA.String(),
					"nonce": j.nonce >> 11, "at": r.Timestamp.Unix()})
				r.ActionHash = sha256.Sum256(payload)
				payloads[j.i] = string(payload)
				copy(r.Signature[:], ed25519.Sign(j.agent.Key, r.ActionHash[:]))
				// Valid by construction: signed just now with the agent's key
				// (the tests verify every seeded signature).
				r.SignatureValid = true
				pda, err := attestation.DerivePDA(g.opt.ProgramID, j.tx, j.event)
				if err != nil {
					panic(err)
				}
				r.PDA = pda.String()
			}
		}(w)
	}
	wg.Wait()
	for i := range recs {
		if g.done-n+i >= g.opt.Attestations-SampleCount {
			g.samples = append(g.samples, Sample{PDA: recs[i].PDA, ActionHash: fmt.Sprintf("%x", recs[i].ActionHash), Payload: payloads[i]})
		}
	}
	sort.SliceStable(recs, func(a, b int) bool { return recs[a].Slot < recs[b].Slot })
	return recs
}

// NewAttestations makes n more correctly signed, finalized records for the
// given agents, all timestamped at, in transactions after every slot the
// store has seen (slot > afterSlot). Tests use it to simulate arrivals.
func NewAttestations(agents []Agent, n int, at time.Time, afterSlot uint64, seed uint64) []store.AttestationRecord {
	g := &generator{
		opt: Options{Attestations: n, Span: time.Second, Now: at,
			ProgramID: solana.MustPublicKeyFromBase58(attestation.DefaultProgramID)},
		rng:  rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d)),
		slot: afterSlot,
	}
	recs := g.attestations(agents, n)
	for i := range recs {
		recs[i].Timestamp = at.UTC().Truncate(time.Second)
	}
	return recs
}

// NewAgent makes a new agent (random keys from seed) and the batch that
// registers it at at, in a slot after afterSlot. Tests use it for an agent
// that appears later than the seeded ones.
func NewAgent(at time.Time, afterSlot uint64, seed uint64) (Agent, *store.Batch) {
	g := &generator{
		opt: Options{Agents: 1, Span: time.Second, Now: at, ProgramID: solana.MustPublicKeyFromBase58(attestation.DefaultProgramID)},
		rng: rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d)),
	}
	g.slot = afterSlot
	agents, b := g.agents()
	b.Registrations[0].At = at.UTC().Truncate(time.Second)
	return agents[0], b
}
