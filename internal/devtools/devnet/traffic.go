package devnet

import (
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/prova"
	"github.com/gagliardetto/solana-go"
)

// Agent is an agent the simulator generated: its operator (fee payer and
// signer of its transactions) and its Ed25519 agent key.
type Agent struct {
	Index      int
	Operator   solana.PrivateKey
	Key        ed25519.PrivateKey
	AgentID    [32]byte
	PDA        solana.PublicKey
	PolicyRoot [32]byte
	Revoked    bool
	seq        int
}

// genesisState opens slot 1 (or the one after Config.AfterSlot), funds
// the faucet and creates the programs, sysvars and the devnet USDC mint.
func (c *Chain) genesisState() {
	c.mu.Lock()
	c.openAfterLocked(1)
	c.archived = c.slot - 1 // no transaction before the first slot
	exe := func(owner solana.PublicKey) *Account {
		return &Account{Lamports: 1_141_440, Owner: owner, Data: []byte{}, Executable: true}
	}
	c.accounts[c.cfg.ProgramID] = exe(solana.BPFLoaderUpgradeableProgramID)
	for _, p := range []solana.PublicKey{solana.SystemProgramID, ComputeBudgetProgramID, prova.Ed25519ProgramID} {
		c.accounts[p] = exe(nativeLoaderID)
	}
	for _, p := range []solana.PublicKey{solana.TokenProgramID, solana.SPLAssociatedTokenAccountProgramID, solana.MemoProgramID, MimicProgramID} {
		c.accounts[p] = exe(solana.BPFLoaderProgramID)
	}
	c.accounts[solana.SysVarInstructionsPubkey] = &Account{Lamports: 0, Owner: sysvarOwnerID, Data: []byte{}}
	c.mu.Unlock()

	c.genMu.Lock()
	c.faucet = c.newKeyLocked()
	usdcAuth := c.newKeyLocked()
	c.genMu.Unlock()
	c.SetAccount(c.faucet.PublicKey(), &Account{Lamports: 500_000_000 * solana.LAMPORTS_PER_SOL, Owner: solana.SystemProgramID})
	c.createMint(DevnetUSDCMint, usdcAuth, 6)
}

// newKeyLocked derives the next keypair from the seeded generator; the
// caller holds genMu.
func (c *Chain) newKeyLocked() solana.PrivateKey {
	var seed [ed25519.SeedSize]byte
	for i := 0; i < len(seed); i += 8 {
		binary.LittleEndian.PutUint64(seed[i:], c.rng.Uint64())
	}
	return solana.PrivateKey(ed25519.NewKeyFromSeed(seed[:]))
}

// NewKeypair returns a fresh keypair from the simulator's seeded generator.
func (c *Chain) NewKeypair() solana.PrivateKey {
	c.genMu.Lock()
	defer c.genMu.Unlock()
	return c.newKeyLocked()
}

// Fund credits lamports to an account directly (genesis-style).
func (c *Chain) Fund(key solana.PublicKey, lamports uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.accounts[key]
	if a == nil {
		a = &Account{Owner: solana.SystemProgramID, Data: []byte{}}
		c.accounts[key] = a
	}
	a.Lamports += lamports
}

// Agents returns a snapshot of the generated agents.
func (c *Chain) Agents() []Agent {
	c.genMu.Lock()
	defer c.genMu.Unlock()
	out := make([]Agent, len(c.agents))
	for i, a := range c.agents {
		out[i] = *a
	}
	return out
}

// Submit sends a signed transaction through the same path as
// sendTransaction (with preflight when preflight is set).
func (c *Chain) Submit(tx *solana.Transaction, preflight bool) (solana.Signature, error) {
	raw, err := tx.MarshalBinary()
	if err != nil {
		return solana.Signature{}, fmt.Errorf("devnet: encode transaction: %w", err)
	}
	sig, serr := c.submit(raw, preflight)
	if serr != nil {
		return sig, serr
	}
	return sig, nil
}

// sign builds and signs a transaction paid by payer.
func (c *Chain) sign(payer solana.PrivateKey, ixs []solana.Instruction, extra ...solana.PrivateKey) (*solana.Transaction, error) {
	tx, err := solana.NewTransaction(ixs, c.LatestBlockhash(), solana.TransactionPayer(payer.PublicKey()))
	if err != nil {
		return nil, fmt.Errorf("devnet: build transaction: %w", err)
	}
	keys := map[solana.PublicKey]solana.PrivateKey{payer.PublicKey(): payer}
	for _, k := range extra {
		keys[k.PublicKey()] = k
	}
	if _, err := tx.Sign(func(pk solana.PublicKey) *solana.PrivateKey {
		if k, ok := keys[pk]; ok {
			return &k
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("devnet: sign transaction: %w", err)
	}
	return tx, nil
}

// registerAgentLocked creates, funds and registers a new agent; the caller
// holds genMu.
func (c *Chain) registerAgentLocked() (*Agent, solana.Signature, error) {
	op := c.newKeyLocked()
	key := ed25519.PrivateKey(c.newKeyLocked())
	a := &Agent{Index: len(c.agents), Operator: op, Key: key}
	copy(a.AgentID[:], key.Public().(ed25519.PublicKey))
	a.PolicyRoot = hashOf([]byte(fmt.Sprintf(`{"policy":"default","agent":%d,"version":1}`, a.Index)))
	pda, _, err := attestation.DeriveAgentPDA(c.cfg.ProgramID, op.PublicKey())
	if err != nil {
		return nil, solana.Signature{}, err
	}
	a.PDA = pda
	c.Fund(op.PublicKey(), 1000*solana.LAMPORTS_PER_SOL)
	ix, err := prova.NewRegisterAgentInstruction(c.cfg.ProgramID, op.PublicKey(), prova.RegisterAgentArgs{AgentID: a.AgentID, PolicyRoot: a.PolicyRoot})
	if err != nil {
		return nil, solana.Signature{}, err
	}
	tx, err := c.sign(op, []solana.Instruction{ix})
	if err != nil {
		return nil, solana.Signature{}, err
	}
	sig, err := c.Submit(tx, true)
	if err != nil {
		return nil, sig, fmt.Errorf("devnet: register agent %d: %w", a.Index, err)
	}
	c.agents = append(c.agents, a)
	return a, sig, nil
}

var actionNames = []string{"transfer", "approve_loan", "call_model", "run_tool", "read_file", "check_policy", "note"}

// attestationsLocked makes n signed attestation inputs for agent a; the
// caller holds genMu.
func (c *Chain) attestationsLocked(a *Agent, n int) []prova.AttestationInput {
	out := make([]prova.AttestationInput, n)
	for i := range out {
		typ := attestation.ActionType(c.rng.Intn(attestation.NumActionTypes))
		var nonce [8]byte
		binary.LittleEndian.PutUint64(nonce[:], c.rng.Uint64())
		payload, _ := json.Marshal(map[string]any{
			"agent": a.PDA.String(), "seq": a.seq, "action": actionNames[typ], "type": typ.String(),
			"amount": c.rng.Intn(100_000), "nonce": hex.EncodeToString(nonce[:]),
		})
		a.seq++
		h := hashOf(payload)
		var sig [64]byte
		copy(sig[:], ed25519.Sign(a.Key, h[:]))
		out[i] = prova.AttestationInput{ActionType: typ, ActionHash: h, PrivacyMode: c.rng.Intn(4) == 0, Signature: sig}
	}
	return out
}

// recordTx builds the Ed25519 precompile + record_attestations transaction.
func (c *Chain) recordTx(a *Agent, atts []prova.AttestationInput, precompile []prova.AttestationInput, prefix ...solana.Instruction) (*solana.Transaction, error) {
	ed, err := prova.NewEd25519InstructionForRecord(a.AgentID, precompile)
	if err != nil {
		return nil, err
	}
	rec, err := prova.NewRecordAttestationsInstruction(c.cfg.ProgramID, a.Operator.PublicKey(), prova.RecordAttestationsArgs{Attestations: atts})
	if err != nil {
		return nil, err
	}
	return c.sign(a.Operator, append(prefix, ed, rec))
}

// Generated is what Generate produced.
type Generated struct {
	Registrations []solana.Signature
	Records       []solana.Signature
	Attestations  int
}

// Generate makes sure at least agents agents are registered, then records
// attestations attestations spread over them round-robin (skipping revoked
// agents) in transactions of up to batch entries, synchronously.
func (c *Chain) Generate(ctx context.Context, agents, attestations, batch int) (Generated, error) {
	var g Generated
	if batch <= 0 || batch > prova.MaxAttestationsPerTx {
		batch = prova.MaxAttestationsPerTx
	}
	agents = max(agents, 1)
	c.genMu.Lock()
	defer c.genMu.Unlock()
	for len(c.agents) < agents {
		if err := ctx.Err(); err != nil {
			return g, err
		}
		_, sig, err := c.registerAgentLocked()
		if err != nil {
			return g, err
		}
		g.Registrations = append(g.Registrations, sig)
	}
	next := 0
	for g.Attestations < attestations {
		if err := ctx.Err(); err != nil {
			return g, err
		}
		var a *Agent
		for tries := 0; tries < agents; tries++ {
			cand := c.agents[next%agents]
			next++
			if !cand.Revoked {
				a = cand
				break
			}
		}
		if a == nil {
			return g, errors.New("devnet: every agent is revoked")
		}
		n := min(batch, attestations-g.Attestations)
		atts := c.attestationsLocked(a, n)
		tx, err := c.recordTx(a, atts, atts)
		if err != nil {
			return g, err
		}
		sig, err := c.Submit(tx, true)
		if err != nil {
			return g, fmt.Errorf("devnet: record attestations: %w", err)
		}
		g.Records = append(g.Records, sig)
		g.Attestations += n
	}
	return g, nil
}

// rateLoop produces rate attestations per second, each tick's in one
// transaction of one agent drawn as real traffic spreads (weighted: a few
// busy agents, many quiet ones; see pickAgentLocked).
func (c *Chain) rateLoop(ctx context.Context, rate float64) {
	const tick = 100 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	owed := 0.0
	agents := max(c.cfg.Agents, 1)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		owed += rate * tick.Seconds()
		n := int(owed)
		if n == 0 {
			continue
		}
		owed -= float64(n)
		if err := c.generateWeighted(ctx, agents, n); err != nil && ctx.Err() == nil {
			c.log.Warn("devnet traffic", "err", err)
		}
	}
}

// generateWeighted records n attestations of one agent among the first
// agents (registering them when needed), drawn by pickAgentLocked.
func (c *Chain) generateWeighted(ctx context.Context, agents, n int) error {
	if _, err := c.Generate(ctx, agents, 0, 0); err != nil { // registrations only
		return err
	}
	c.genMu.Lock()
	defer c.genMu.Unlock()
	a := c.pickAgentLocked(agents)
	if a == nil {
		return errors.New("devnet: every agent is revoked")
	}
	for n > 0 {
		k := min(n, prova.MaxAttestationsPerTx)
		atts := c.attestationsLocked(a, k)
		tx, err := c.recordTx(a, atts, atts)
		if err != nil {
			return err
		}
		if _, err := c.Submit(tx, true); err != nil {
			return fmt.Errorf("devnet: record attestations: %w", err)
		}
		n -= k
	}
	return nil
}

// pickAgentLocked draws one of the first count agents that is not
// revoked, agent i with weight 1/(i+1): the first few carry most of the
// traffic, the rest a little each. The caller holds genMu.
func (c *Chain) pickAgentLocked(count int) *Agent {
	count = min(count, len(c.agents))
	total := 0.0
	for i := 0; i < count; i++ {
		if !c.agents[i].Revoked {
			total += 1 / float64(i+1)
		}
	}
	if total == 0 {
		return nil
	}
	r := c.rng.Float64() * total
	for i := 0; i < count; i++ {
		if c.agents[i].Revoked {
			continue
		}
		if r -= 1 / float64(i+1); r < 0 {
			return c.agents[i]
		}
	}
	for i := count - 1; i >= 0; i-- { // rounding: the last one standing
		if !c.agents[i].Revoked {
			return c.agents[i]
		}
	}
	return nil
}

// agentLocked returns agent i; the caller holds genMu.
func (c *Chain) agentLocked(i int) (*Agent, error) {
	if i < 0 || i >= len(c.agents) {
		return nil, fmt.Errorf("devnet: no agent %d (have %d)", i, len(c.agents))
	}
	return c.agents[i], nil
}

// RevokeAgent sends revoke_agent for agent i.
func (c *Chain) RevokeAgent(ctx context.Context, i int) (solana.Signature, error) {
	c.genMu.Lock()
	defer c.genMu.Unlock()
	a, err := c.agentLocked(i)
	if err != nil {
		return solana.Signature{}, err
	}
	ix, err := prova.NewRevokeAgentInstruction(c.cfg.ProgramID, a.Operator.PublicKey())
	if err != nil {
		return solana.Signature{}, err
	}
	tx, err := c.sign(a.Operator, []solana.Instruction{ix})
	if err != nil {
		return solana.Signature{}, err
	}
	sig, err := c.Submit(tx, true)
	if err != nil {
		return sig, fmt.Errorf("devnet: revoke agent %d: %w", i, err)
	}
	a.Revoked = true
	return sig, nil
}

// UpdatePolicyRoot sends update_policy_root for agent i.
func (c *Chain) UpdatePolicyRoot(ctx context.Context, i int, root [32]byte) (solana.Signature, error) {
	c.genMu.Lock()
	defer c.genMu.Unlock()
	a, err := c.agentLocked(i)
	if err != nil {
		return solana.Signature{}, err
	}
	ix, err := prova.NewUpdatePolicyRootInstruction(c.cfg.ProgramID, a.Operator.PublicKey(), prova.UpdatePolicyRootArgs{NewRoot: root})
	if err != nil {
		return solana.Signature{}, err
	}
	tx, err := c.sign(a.Operator, []solana.Instruction{ix})
	if err != nil {
		return solana.Signature{}, err
	}
	sig, err := c.Submit(tx, true)
	if err != nil {
		return sig, fmt.Errorf("devnet: update policy root of agent %d: %w", i, err)
	}
	a.PolicyRoot = root
	return sig, nil
}

// FailTransaction lands (without preflight, as with skipPreflight) a
// record_attestations of agent i whose precompile covers only the first
// two of its three entries: the program emits two AttestationIssued events,
// then fails with InvalidSignature; meta.err is set and nothing may be
// indexed.
func (c *Chain) FailTransaction(ctx context.Context, i int) (solana.Signature, error) {
	c.genMu.Lock()
	defer c.genMu.Unlock()
	a, err := c.agentLocked(i)
	if err != nil {
		return solana.Signature{}, err
	}
	atts := c.attestationsLocked(a, 3)
	tx, err := c.recordTx(a, atts, atts[:2])
	if err != nil {
		return solana.Signature{}, err
	}
	return c.Submit(tx, false)
}

// ForeignEvent lands a transaction in which another program (MimicProgramID,
// given the Prova program id as an account so the transaction mentions it)
// prints a well-formed AttestationIssued as "Program data:", followed by
// one genuine attestation of agent i. Only the genuine one (event index 0)
// may be indexed.
func (c *Chain) ForeignEvent(ctx context.Context, i int) (solana.Signature, error) {
	c.genMu.Lock()
	defer c.genMu.Unlock()
	a, err := c.agentLocked(i)
	if err != nil {
		return solana.Signature{}, err
	}
	fake := c.attestationsLocked(a, 1)[0]
	ev := prova.AttestationIssued{Agent: a.PDA, AgentID: a.AgentID, ActionType: fake.ActionType, ActionHash: fake.ActionHash,
		PrivacyMode: fake.PrivacyMode, Timestamp: time.Now().Unix(), Signature: fake.Signature}
	mimic := solana.NewInstruction(MimicProgramID, solana.AccountMetaSlice{solana.Meta(c.cfg.ProgramID)}, ev.Encode())
	atts := c.attestationsLocked(a, 1)
	tx, err := c.recordTx(a, atts, atts, mimic)
	if err != nil {
		return solana.Signature{}, err
	}
	return c.Submit(tx, true)
}

// DropTransaction simulates a fork that abandons a confirmed, not yet
// finalized transaction: it vanishes from every method and its effects on
// accounts are undone.
func (c *Chain) DropTransaction(sig solana.Signature) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.txs[sig]
	if !ok {
		return fmt.Errorf("devnet: transaction %s not found", sig)
	}
	if r.slot <= c.finalizedSlotLocked() {
		return fmt.Errorf("devnet: transaction %s is finalized (slot %d)", sig, r.slot)
	}
	c.dropLocked(r)
	c.log.Info("devnet fork dropped a transaction", "signature", sig.String(), "slot", r.slot)
	return nil
}

// DropConnections closes every websocket connection (clients see an error
// and must reconnect).
func (c *Chain) DropConnections() int { return c.ps.closeAll() }

// RefuseWebsockets makes the websocket endpoint answer 503 to new
// connections (true) or accept them again (false).
func (c *Chain) RefuseWebsockets(refuse bool) { c.ps.refuse.Store(refuse) }

// DuplicateDelivery makes every websocket notification go out twice.
func (c *Chain) DuplicateDelivery(on bool) { c.duplicate.Store(on) }

// Unreachable makes the chain's endpoints act as an RPC provider that is
// down (true): JSON-RPC answers 503, websockets are dropped and refused,
// while the chain itself goes on producing slots; false brings them back.
func (c *Chain) Unreachable(down bool) {
	c.down.Store(down)
	c.ps.refuse.Store(down)
	if down {
		c.ps.closeAll()
	}
}
