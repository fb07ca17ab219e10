package devnet

import (
	"context"
	"crypto/ed25519"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/prova"
	"github.com/gagliardetto/solana-go"
)

// stateFile is the file under Config.StateDir that holds the chain.
const stateFile = "chain.json"

// savedState is what a chain keeps under Config.StateDir to continue after
// a restart: its seed (hence its genesis hash), slot, accounts, agents,
// mints and the transactions not finalized yet (so rows an indexer stored
// as confirmed are still known, and finalized, after the restart). Older
// transactions are not kept: getTransaction answers null for them.
type savedState struct {
	Version  int                   `json:"version"`
	Seed     int64                 `json:"seed"`
	Slot     uint64                `json:"slot"`
	Seq      uint64                `json:"seq"`
	SavedAt  time.Time             `json:"savedAt"`
	Faucet   []byte                `json:"faucet"`
	Accounts map[string]savedAcct  `json:"accounts"`
	Mints    map[string][]byte     `json:"mints"` // mint -> authority key
	Agents   []savedAgent          `json:"agents"`
	Recent   []savedTx             `json:"recent"`
	Blocks   map[uint64]savedBlock `json:"blocks"`
}

type savedAcct struct {
	Lamports   uint64 `json:"lamports"`
	Owner      string `json:"owner"`
	Data       []byte `json:"data"`
	Executable bool   `json:"executable,omitempty"`
}

type savedAgent struct {
	Index      int      `json:"index"`
	Operator   []byte   `json:"operator"`
	Key        []byte   `json:"key"`
	PolicyRoot [32]byte `json:"policyRoot"`
	Revoked    bool     `json:"revoked,omitempty"`
	Seq        int      `json:"seq"`
}

type savedTx struct {
	Seq       uint64 `json:"seq"`
	Slot      uint64 `json:"slot"`
	BlockTime int64  `json:"blockTime"`
	Raw       []byte `json:"raw"`
	Meta      txMeta `json:"meta"`
}

type savedBlock struct {
	Time int64 `json:"time"`
}

// newSeed is a random seed for a fresh state directory: each one is
// another chain (another genesis hash).
func newSeed() int64 {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return time.Now().UnixNano()
	}
	return int64(binary.LittleEndian.Uint64(b[:])&(1<<62-1)) + 1
}

// loadState reads dir's saved chain; ok is false when there is none.
func loadState(dir string) (savedState, bool, error) {
	var s savedState
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return s, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("devnet: read saved chain: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, false, fmt.Errorf("devnet: saved chain %s: %w (delete it to start a new chain)", filepath.Join(dir, stateFile), err)
	}
	if s.Version != 1 || s.Seed == 0 {
		return s, false, fmt.Errorf("devnet: saved chain %s: unknown version %d (delete it to start a new chain)", filepath.Join(dir, stateFile), s.Version)
	}
	if err := s.check(); err != nil {
		return s, false, fmt.Errorf("devnet: saved chain %s: %w (delete it to start a new chain)", filepath.Join(dir, stateFile), err)
	}
	return s, true, nil
}

// check refuses what restore cannot take: keys of another length (they
// would panic when used) and a slot with no next one.
func (s savedState) check() error {
	if s.Slot == math.MaxUint64 {
		return fmt.Errorf("slot %d has no next slot", s.Slot)
	}
	if len(s.Faucet) != ed25519.PrivateKeySize {
		return fmt.Errorf("faucet key of %d bytes", len(s.Faucet))
	}
	for k, auth := range s.Mints {
		if len(auth) != ed25519.PrivateKeySize {
			return fmt.Errorf("mint %s: authority key of %d bytes", k, len(auth))
		}
	}
	for _, a := range s.Agents {
		if len(a.Operator) != ed25519.PrivateKeySize || len(a.Key) != ed25519.PrivateKeySize {
			return fmt.Errorf("agent %d: keys of %d and %d bytes", a.Index, len(a.Operator), len(a.Key))
		}
	}
	return nil
}

// snapshot captures the chain for saving.
func (c *Chain) snapshot() savedState {
	c.genMu.Lock()
	defer c.genMu.Unlock()
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := savedState{Version: 1, Seed: c.cfg.Seed, Slot: c.slot, Seq: c.seq, SavedAt: time.Now().UTC(), Faucet: c.faucet,
		Accounts: map[string]savedAcct{}, Mints: map[string][]byte{}, Blocks: map[uint64]savedBlock{}}
	for k, a := range c.accounts {
		s.Accounts[k.String()] = savedAcct{Lamports: a.Lamports, Owner: a.Owner.String(), Data: a.Data, Executable: a.Executable}
	}
	for k, m := range c.mints {
		s.Mints[k.String()] = m.authority
	}
	for _, a := range c.agents {
		s.Agents = append(s.Agents, savedAgent{Index: a.Index, Operator: a.Operator, Key: a.Key, PolicyRoot: a.PolicyRoot, Revoked: a.Revoked, Seq: a.seq})
	}
	final := c.finalizedSlotLocked()
	for slot := final + 1; slot <= c.slot; slot++ {
		b := c.blocks[slot]
		if b == nil {
			continue
		}
		s.Blocks[slot] = savedBlock{Time: b.time}
		for _, r := range b.txs {
			if !r.dropped {
				s.Recent = append(s.Recent, savedTx{Seq: r.seq, Slot: r.slot, BlockTime: r.blockTime, Raw: r.raw, Meta: r.meta})
			}
		}
	}
	return s
}

// save writes the chain to Config.StateDir (atomically: a temporary file
// renamed over the last one).
func (c *Chain) save() error {
	if c.cfg.StateDir == "" {
		return nil
	}
	b, err := json.Marshal(c.snapshot())
	if err != nil {
		return fmt.Errorf("devnet: encode chain: %w", err)
	}
	path := filepath.Join(c.cfg.StateDir, stateFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("devnet: save chain: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("devnet: save chain: %w", err)
	}
	return nil
}

// restore continues a saved chain: the slot after the saved one, the same
// accounts, agents and mints, and the saved transactions not finalized
// then. The key generator is re-seeded from the seed and slot so new keys
// differ from those made before.
func (c *Chain) restore(s savedState) error {
	c.genMu.Lock()
	defer c.genMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rng = rand.New(rand.NewSource(s.Seed ^ int64(s.Slot)<<20 ^ 0x5eed))
	c.faucet = solana.PrivateKey(s.Faucet)
	for k, a := range s.Accounts {
		key, err := solana.PublicKeyFromBase58(k)
		if err != nil {
			return fmt.Errorf("devnet: saved account %q: %w", k, err)
		}
		owner, err := solana.PublicKeyFromBase58(a.Owner)
		if err != nil {
			return fmt.Errorf("devnet: saved account %q owner: %w", k, err)
		}
		data := a.Data
		if data == nil {
			data = []byte{}
		}
		c.accounts[key] = &Account{Lamports: a.Lamports, Owner: owner, Data: data, Executable: a.Executable}
	}
	for k, auth := range s.Mints {
		key, err := solana.PublicKeyFromBase58(k)
		if err != nil {
			return fmt.Errorf("devnet: saved mint %q: %w", k, err)
		}
		c.mints[key] = &mintInfo{authority: solana.PrivateKey(auth)}
	}
	for _, sa := range s.Agents {
		a := &Agent{Index: sa.Index, Operator: solana.PrivateKey(sa.Operator), Key: ed25519.PrivateKey(sa.Key),
			PolicyRoot: sa.PolicyRoot, Revoked: sa.Revoked, seq: sa.Seq}
		copy(a.AgentID[:], a.Key.Public().(ed25519.PublicKey))
		pda, _, err := attestation.DeriveAgentPDA(c.cfg.ProgramID, a.Operator.PublicKey())
		if err != nil {
			return err
		}
		a.PDA = pda
		c.agents = append(c.agents, a)
	}
	for slot, b := range s.Blocks {
		c.newSlotLocked(slot)
		c.blocks[slot].time = b.Time
	}
	for _, st := range s.Recent {
		p, serr := prepare(st.Raw, false)
		if serr != nil {
			return fmt.Errorf("devnet: saved transaction: %s", serr.Message)
		}
		b := c.blocks[st.Slot]
		if b == nil {
			continue
		}
		r := &txRecord{seq: st.Seq, sig: signatureOf(p.tx), slot: st.Slot, blockTime: st.BlockTime, raw: st.Raw, tx: p.tx,
			versioned: p.tx.Message.IsVersioned(), keys: p.keys, meta: st.Meta}
		if r.meta.Inner == nil {
			r.meta.Inner = []innerInstructions{}
		}
		if r.meta.Err == nil {
			r.events, _ = prova.ParseLogs(r.meta.Logs, c.cfg.ProgramID)
		}
		c.txs[r.sig] = r
		b.txs = append(b.txs, r)
		for _, k := range p.keys {
			c.byAddr[k] = insertOrdered(c.byAddr[k], r)
		}
	}
	c.seq = s.Seq
	c.newSlotLocked(s.Slot + 1)
	return nil
}

// saveLoop saves the chain every second while it runs (Close saves once
// more), so a process stopped without Close loses at most a second.
func (c *Chain) saveLoop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := c.save(); err != nil {
			c.log.Warn("devnet cannot save its chain", "dir", c.cfg.StateDir, "err", err)
		}
	}
}
