package devnet

import (
	"errors"
	"fmt"
	"sort"

	bin "github.com/gagliardetto/binary"
	"github.com/gagliardetto/solana-go"
)

// SendError is why a transaction was refused, in JSON-RPC terms.
type SendError struct {
	Code    int
	Message string
	Data    any
}

func (e *SendError) Error() string { return e.Message }

// JSON-RPC error codes of a Solana node.
const (
	codeInvalidRequest   = -32600
	codeMethodNotFound   = -32601
	codeInvalidParams    = -32602
	codeInternal         = -32603
	codeParse            = -32700
	codeSimulationFailed = -32002
	codeSigVerifyFailed  = -32003
	codeUnsupportedTxVer = -32015
	codeMinContextSlot   = -32016
)

// decodeTx parses a wire transaction without ever panicking.
func decodeTx(raw []byte) (tx *solana.Transaction, err error) {
	defer func() {
		if r := recover(); r != nil {
			tx, err = nil, fmt.Errorf("malformed transaction: %v", r)
		}
	}()
	tx = new(solana.Transaction)
	dec := bin.NewBinDecoder(raw)
	if err := tx.UnmarshalWithDecoder(dec); err != nil {
		return nil, fmt.Errorf("malformed transaction: %w", err)
	}
	if dec.Remaining() != 0 {
		return nil, fmt.Errorf("malformed transaction: %d trailing bytes", dec.Remaining())
	}
	return tx, nil
}

// prepared is a decoded, checked transaction ready to execute.
type prepared struct {
	raw      []byte
	tx       *solana.Transaction
	keys     []solana.PublicKey
	signer   []bool
	writable []bool
}

// prepare decodes and validates the message layout and, when sigVerify is
// set, every signature.
func prepare(raw []byte, sigVerify bool) (*prepared, *SendError) {
	tx, err := decodeTx(raw)
	if err != nil {
		return nil, &SendError{Code: codeInvalidParams, Message: "invalid transaction: " + err.Error()}
	}
	m := &tx.Message
	if m.IsVersioned() && len(m.AddressTableLookups) > 0 {
		return nil, &SendError{Code: codeSimulationFailed, Message: "Transaction simulation failed: Transaction loads an address table account that doesn't exist",
			Data: simulationData("AddressLookupTableNotFound", nil, 0)}
	}
	h := m.Header
	n := len(m.AccountKeys)
	if int(h.NumRequiredSignatures) > n || int(h.NumRequiredSignatures)+int(h.NumReadonlyUnsignedAccounts) > n ||
		h.NumReadonlySignedAccounts >= h.NumRequiredSignatures || len(tx.Signatures) != int(h.NumRequiredSignatures) {
		return nil, &SendError{Code: codeInvalidParams, Message: "invalid transaction: Transaction failed to sanitize accounts offsets correctly"}
	}
	seen := map[solana.PublicKey]bool{}
	for _, k := range m.AccountKeys {
		if seen[k] {
			return nil, &SendError{Code: codeInvalidParams, Message: "invalid transaction: Transaction loads the same account more than once"}
		}
		seen[k] = true
	}
	if sigVerify {
		if err := tx.VerifySignatures(); err != nil {
			return nil, &SendError{Code: codeSigVerifyFailed, Message: "Transaction signature verification failure"}
		}
	}
	p := &prepared{raw: raw, tx: tx, keys: m.AccountKeys, signer: make([]bool, n), writable: make([]bool, n)}
	signers := int(h.NumRequiredSignatures)
	for i := range n {
		p.signer[i] = i < signers
		if i < signers {
			p.writable[i] = i < signers-int(h.NumReadonlySignedAccounts)
		} else {
			p.writable[i] = i-signers < n-signers-int(h.NumReadonlyUnsignedAccounts)
		}
	}
	return p, nil
}

// execute runs p against the current state; commit applies the changes,
// charges the fee and records the transaction in the current slot. The
// caller holds c.mu (write lock when commit).
func (c *Chain) executeLocked(p *prepared, commit bool) (*exec, txError) {
	x := &exec{c: c, msg: &p.tx.Message, keys: p.keys, signer: p.signer, writable: p.writable,
		overlay: map[solana.PublicKey]*Account{}, now: c.blocks[c.slot].time}
	fee := uint64(LamportsPerSignature * len(p.tx.Signatures))
	payer := x.get(p.keys[0])
	if payer == nil {
		return x, "AccountNotFound"
	}
	if payer.Lamports < fee {
		return x, "InsufficientFundsForFee"
	}
	err := x.run()
	if !commit {
		return x, err
	}
	if err == nil {
		for k, a := range x.overlay {
			if a == nil {
				delete(c.accounts, k)
			} else {
				c.accounts[k] = a
			}
		}
	} else {
		x.undo = nil
	}
	if acc := c.accounts[p.keys[0]]; acc != nil {
		acc.Lamports -= min(fee, acc.Lamports)
	}
	payerKey := p.keys[0]
	x.undo = append(x.undo, func(st map[solana.PublicKey]*Account) {
		if a := st[payerKey]; a != nil {
			a.Lamports += fee
		}
	})
	return x, err
}

// land executes and records a prepared transaction in the current slot.
// The caller holds c.mu for writing.
func (c *Chain) landLocked(p *prepared) *txRecord { return c.landAtLocked(p, c.slot) }

// landAtLocked executes p against the current state and records it in
// slot, which may be an earlier, not yet finalized slot (a fork that adds a
// transaction there). The caller holds c.mu for writing.
func (c *Chain) landAtLocked(p *prepared, slot uint64) *txRecord {
	pre := c.balancesLocked(p.keys)
	preTok := c.tokenBalancesLocked(p.keys)
	x, txErr := c.executeLocked(p, true)
	b := c.blocks[slot]
	c.seq++
	r := &txRecord{
		seq: c.seq, sig: signatureOf(p.tx), slot: slot, blockTime: b.time, raw: p.raw, tx: p.tx,
		versioned: p.tx.Message.IsVersioned(), keys: p.keys, undo: x.undo,
		meta: txMeta{
			Err: txErr, Fee: uint64(LamportsPerSignature * len(p.tx.Signatures)), PreBalances: pre,
			PostBalances: c.balancesLocked(p.keys), PreTokenBalances: preTok, PostTokenBalances: c.tokenBalancesLocked(p.keys),
			Logs: x.logs, Inner: x.inner, Units: x.units,
		},
	}
	if txErr == nil {
		r.events = x.events
	} else {
		r.meta.Inner = nil
	}
	if r.meta.Inner == nil {
		r.meta.Inner = []innerInstructions{}
	}
	c.txs[r.sig] = r
	b.txs = append(b.txs, r)
	for _, k := range p.keys {
		c.byAddr[k] = insertOrdered(c.byAddr[k], r)
	}
	if n := c.hideNext; n > 0 {
		c.hideNext--
		c.hidden[r.sig] = c.hideNextRule.start()
	}
	c.ps.enqueue(note{kind: noteTx, rec: r, slot: r.slot})
	return r
}

// ledgerOrder is the order of a node's ledger: by slot, then by landing.
func ledgerOrder(a, b *txRecord) bool {
	if a.slot != b.slot {
		return a.slot < b.slot
	}
	return a.seq < b.seq
}

// insertOrdered adds r to a list kept in ledgerOrder (r is usually last).
func insertOrdered(list []*txRecord, r *txRecord) []*txRecord {
	i := sort.Search(len(list), func(i int) bool { return ledgerOrder(r, list[i]) })
	list = append(list, nil)
	copy(list[i+1:], list[i:])
	list[i] = r
	return list
}

// submit checks, executes and lands a wire transaction, as sendTransaction
// does. With preflight, a transaction that would fail is refused with the
// simulation's error and logs; without, it lands as a failed transaction.
func (c *Chain) submit(raw []byte, preflight bool) (solana.Signature, *SendError) {
	p, serr := prepare(raw, true)
	if serr != nil {
		return solana.Signature{}, serr
	}
	sig := signatureOf(p.tx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.txs[sig]; dup {
		return sig, &SendError{Code: codeSimulationFailed, Message: "Transaction simulation failed: This transaction has already been processed",
			Data: simulationData("AlreadyProcessed", []string{}, 0)}
	}
	if _, ok := c.blockhashes[p.tx.Message.RecentBlockhash]; !ok {
		if !preflight {
			return sig, nil // a real node drops it silently
		}
		return sig, &SendError{Code: codeSimulationFailed, Message: "Transaction simulation failed: Blockhash not found",
			Data: simulationData("BlockhashNotFound", []string{}, 0)}
	}
	if preflight {
		x, txErr := c.executeLocked(p, false)
		if txErr != nil {
			return sig, &SendError{Code: codeSimulationFailed, Message: "Transaction simulation failed: " + describeTxError(txErr),
				Data: simulationData(txErr, x.logs, x.units)}
		}
	} else {
		// Fee-payer problems stop a transaction before it lands.
		payer := c.accounts[p.keys[0]]
		if payer == nil || payer.Lamports < uint64(LamportsPerSignature*len(p.tx.Signatures)) {
			return sig, nil
		}
	}
	if c.holdLocked(p, sig) {
		return sig, nil
	}
	c.landLocked(p)
	return sig, nil
}

func simulationData(err txError, logs []string, units uint64) map[string]any {
	if logs == nil {
		logs = []string{}
	}
	return map[string]any{"err": err, "logs": logs, "accounts": nil, "unitsConsumed": units, "returnData": nil,
		"innerInstructions": nil}
}

// describeTxError renders a transaction error as agave's Display does.
func describeTxError(e txError) string {
	switch v := e.(type) {
	case string:
		switch v {
		case "AccountNotFound":
			return "Attempt to debit an account but found no record of a prior credit."
		case "InsufficientFundsForFee":
			return "Insufficient funds for fee"
		}
		return v
	case map[string]any:
		if ie, ok := v["InstructionError"].([]any); ok && len(ie) == 2 {
			detail := fmt.Sprint(ie[1])
			if m, ok := ie[1].(map[string]any); ok {
				if code, ok := m["Custom"].(int); ok {
					detail = fmt.Sprintf("custom program error: 0x%x", code)
				}
			}
			return fmt.Sprintf("Error processing Instruction %v: %s", ie[0], detail)
		}
	}
	return fmt.Sprint(e)
}

// balancesLocked returns the lamports of each key.
func (c *Chain) balancesLocked(keys []solana.PublicKey) []uint64 {
	out := make([]uint64, len(keys))
	for i, k := range keys {
		out[i] = lamportsOf(c.accounts[k])
	}
	return out
}

// signaturesFor lists an address's transactions newest first (by slot,
// then landing order), as getSignaturesForAddress does, visible at the
// commitment's slot.
func (c *Chain) signaturesForLocked(addr solana.PublicKey, before, until *solana.Signature, limit int, maxSlot uint64) ([]*txRecord, error) {
	list := c.byAddr[addr]
	end := len(list) // exclusive upper bound (newest side)
	if before != nil {
		r, ok := c.txs[*before]
		if !ok {
			return nil, errors.New("before signature not found")
		}
		end = sort.Search(len(list), func(i int) bool { return !ledgerOrder(list[i], r) })
	}
	var stop *txRecord
	if until != nil {
		stop = c.txs[*until]
	}
	out := make([]*txRecord, 0, min(limit, end))
	for i := end - 1; i >= 0 && len(out) < limit; i-- {
		r := list[i]
		if stop != nil && !ledgerOrder(stop, r) {
			break
		}
		if r.slot > maxSlot {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// dropLocked removes a transaction from the ledger and undoes its effects.
func (c *Chain) dropLocked(r *txRecord) {
	r.dropped = true
	delete(c.txs, r.sig)
	if b := c.blocks[r.slot]; b != nil {
		for i, t := range b.txs {
			if t == r {
				b.txs = append(b.txs[:i:i], b.txs[i+1:]...)
				break
			}
		}
	}
	for _, k := range r.keys {
		list := c.byAddr[k]
		for i, t := range list {
			if t == r {
				c.byAddr[k] = append(list[:i:i], list[i+1:]...)
				break
			}
		}
	}
	for i := len(r.undo) - 1; i >= 0; i-- {
		r.undo[i](c.accounts)
	}
}
