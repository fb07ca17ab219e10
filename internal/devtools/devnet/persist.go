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
// mints and every transaction it landed: those of finalized slots in the
// ledger file (ledgerFile, appended as slots finalize), the later ones in
// Recent. So every row an indexer stored, confirmed or finalized, is still
// known to the chain after the restart, at the same slot: nothing it
// confirmed is taken for a fork.
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
	// Archived is the slot up to which every transaction is in the ledger
	// file, whose first LedgerSize bytes hold them (anything past them was
	// appended by a save that did not finish: ignored, then overwritten).
	// Recent holds the transactions of later slots. Both zero: a chain
	// saved before the ledger was kept (its finalized transactions are
	// gone).
	Archived   uint64 `json:"archived,omitempty"`
	LedgerSize int64  `json:"ledgerSize,omitempty"`

	ledger []savedTx // read from the ledger file by loadState
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
	if s.ledger, err = readLedger(dir, s.LedgerSize); err != nil {
		return s, false, err
	}
	return s, true, nil
}

// check refuses what restore cannot take: keys of another length (they
// would panic when used) and a slot with no next one.
func (s savedState) check() error {
	if s.Slot == math.MaxUint64 {
		return fmt.Errorf("slot %d has no next slot", s.Slot)
	}
	if s.LedgerSize < 0 {
		return fmt.Errorf("ledger size %d", s.LedgerSize)
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

// snapshot captures the chain for saving: its state, with every
// transaction of a slot after c.archived in Recent (in ledger order), and
// final, the newest finalized slot: Recent's transactions up to it are
// the ones to append to the ledger. The caller holds saveMu.
func (c *Chain) snapshot() (s savedState, final uint64) {
	c.genMu.Lock()
	defer c.genMu.Unlock()
	c.mu.RLock()
	defer c.mu.RUnlock()
	s = savedState{Version: 1, Seed: c.cfg.Seed, Slot: c.slot, Seq: c.seq, SavedAt: time.Now().UTC(), Faucet: c.faucet,
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
	final = c.finalizedSlotLocked()
	for slot := c.archived + 1; slot <= c.slot; slot++ {
		b := c.blocks[slot]
		if b == nil {
			continue
		}
		if slot > final {
			s.Blocks[slot] = savedBlock{Time: b.time}
		}
		for _, r := range b.txs {
			if !r.dropped {
				s.Recent = append(s.Recent, savedTx{Seq: r.seq, Slot: r.slot, BlockTime: r.blockTime, Raw: r.raw, Meta: r.meta})
			}
		}
	}
	return s, final
}

// save writes the chain to Config.StateDir: first the transactions of
// the slots finalized since the last save, appended to the ledger file,
// then chain.json (atomically: a temporary file renamed over the last
// one), which names how much of the ledger is whole. When the append
// fails, chain.json keeps those transactions in Recent instead.
func (c *Chain) save() error {
	if c.cfg.StateDir == "" {
		return nil
	}
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	s, final := c.snapshot()
	n := 0 // Recent's transactions of finalized slots
	for n < len(s.Recent) && s.Recent[n].Slot <= final {
		n++
	}
	size, aerr := c.appendLedger(s.Recent[:n])
	s.Archived, s.LedgerSize = c.archived, c.ledgerSize
	if aerr == nil && final > c.archived {
		s.Recent = s.Recent[n:]
		s.Archived, s.LedgerSize = final, size
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("devnet: encode chain: %w", err)
	}
	path := filepath.Join(c.cfg.StateDir, stateFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return errors.Join(aerr, fmt.Errorf("devnet: save chain: %w", err))
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(aerr, fmt.Errorf("devnet: save chain: %w", err))
	}
	c.archived, c.ledgerSize = s.Archived, s.LedgerSize
	return aerr
}

// restore continues a saved chain: the slot after the saved one (or
// after Config.AfterSlot), the same accounts, agents and mints, and every
// saved transaction at its slot: the ledger's, finalized, and Recent's.
// The key generator is re-seeded from the seed and slot so new keys differ
// from those made before.
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
	for _, txs := range [][]savedTx{s.ledger, s.Recent} {
		for _, st := range txs {
			if err := c.restoreTxLocked(st); err != nil {
				return err
			}
		}
	}
	c.seq = s.Seq
	c.archived, c.ledgerSize = s.Archived, s.LedgerSize
	c.openAfterLocked(s.Slot + 1)
	return nil
}

// restoreTxLocked puts a saved transaction back in its slot (made when
// the saved chain kept no block of it: a finalized slot), the index of
// signatures and each of its accounts' lists. A signature the chain holds
// already is left alone. The caller holds mu.
func (c *Chain) restoreTxLocked(st savedTx) error {
	p, serr := prepare(st.Raw, false)
	if serr != nil {
		return fmt.Errorf("devnet: saved transaction: %s", serr.Message)
	}
	sig := signatureOf(p.tx)
	if _, dup := c.txs[sig]; dup {
		return nil
	}
	b := c.blocks[st.Slot]
	if b == nil {
		b = &block{slot: st.Slot, time: st.BlockTime, blockhash: c.blockhashOf(st.Slot)}
		c.blocks[st.Slot] = b
	}
	r := &txRecord{seq: st.Seq, sig: sig, slot: st.Slot, blockTime: st.BlockTime, raw: st.Raw, tx: p.tx,
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
