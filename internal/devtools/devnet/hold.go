package devnet

import "github.com/gagliardetto/solana-go"

// heldTx is a transaction sendTransaction accepted but did not land yet.
type heldTx struct {
	p   *prepared
	sig solana.Signature
}

// HoldNextTransactions makes sendTransaction accept the next n
// transactions (after its usual checks) without landing them, as a
// congested cluster does: they land at LandHeld if their blockhash is
// still valid then, or never (DropHeld, or an expired blockhash).
func (c *Chain) HoldNextTransactions(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holdNext = n
}

// Held lists the signatures of the transactions held now.
func (c *Chain) Held() []solana.Signature {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]solana.Signature, len(c.held))
	for i, h := range c.held {
		out[i] = h.sig
	}
	return out
}

// LandHeld lands the held transactions whose blockhash is still valid (in
// the current slot) and forgets the others; it returns those landed.
func (c *Chain) LandHeld() []solana.Signature {
	c.mu.Lock()
	defer c.mu.Unlock()
	var landed []solana.Signature
	for _, h := range c.held {
		if _, ok := c.blockhashes[h.p.tx.Message.RecentBlockhash]; !ok {
			continue
		}
		if _, dup := c.txs[h.sig]; dup {
			continue
		}
		c.landLocked(h.p)
		landed = append(landed, h.sig)
	}
	c.held = nil
	return landed
}

// DropHeld forgets the held transactions: they never land.
func (c *Chain) DropHeld() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = nil
}

// holdLocked keeps p instead of landing it when a hold is in force. The
// caller holds c.mu for writing.
func (c *Chain) holdLocked(p *prepared, sig solana.Signature) bool {
	if c.holdNext <= 0 {
		return false
	}
	for _, h := range c.held {
		if h.sig == sig {
			return true // sent again while held: still held once
		}
	}
	c.holdNext--
	c.held = append(c.held, heldTx{p: p, sig: sig})
	return true
}
