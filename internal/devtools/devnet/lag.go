package devnet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gagliardetto/solana-go"
)

// Hide describes how long getTransaction answers null for a transaction
// that is on the chain, as a lagging node behind a load balancer does:
// for the next Calls calls, or for For from when the rule starts (one of
// the two). With Statuses, getSignatureStatuses does not know it either
// while it is hidden.
type Hide struct {
	Calls    int
	For      time.Duration
	Statuses bool
}

func (h Hide) valid() error {
	if (h.Calls > 0) == (h.For > 0) || h.Calls < 0 || h.For < 0 {
		return errors.New("devnet: hide a transaction for a number of calls or for a duration (one of the two, positive)")
	}
	return nil
}

// hideState is a Hide in force for one transaction.
type hideState struct {
	calls    int       // getTransaction calls still answered null (0: by time)
	until    time.Time // hidden until then (zero: by calls)
	statuses bool
}

func (h Hide) start() *hideState {
	s := &hideState{calls: h.Calls, statuses: h.Statuses}
	if h.For > 0 {
		s.until = time.Now().Add(h.For)
	}
	return s
}

// hiddenLocked reports whether sig is hidden now; a getTransaction call
// (consume) uses one of its calls. The caller holds c.mu for writing when
// consume is set, for reading otherwise.
func (c *Chain) hiddenLocked(sig solana.Signature, consume, statuses bool) bool {
	h := c.hidden[sig]
	if h == nil || (statuses && !h.statuses) {
		return false
	}
	if !h.until.IsZero() {
		if time.Now().Before(h.until) {
			return true
		}
		if consume {
			delete(c.hidden, sig)
		}
		return false
	}
	if h.calls <= 0 {
		if consume {
			delete(c.hidden, sig)
		}
		return false
	}
	if consume {
		h.calls--
	}
	return true
}

// HideTransaction makes getTransaction answer null for a transaction on
// the chain, as Hide says (it stays listed by getSignaturesForAddress).
func (c *Chain) HideTransaction(sig solana.Signature, h Hide) error {
	if err := h.valid(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.txs[sig]; !ok {
		return fmt.Errorf("devnet: transaction %s not found", sig)
	}
	c.hidden[sig] = h.start()
	return nil
}

// HideNextTransactions hides each of the next n transactions to land, as
// Hide says, from the moment it lands (so no client can have fetched it
// before).
func (c *Chain) HideNextTransactions(n int, h Hide) error {
	if err := h.valid(); err != nil {
		return err
	}
	if n < 1 {
		return errors.New("devnet: hide at least one transaction")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hideNext, c.hideNextRule = n, h
	return nil
}

// InsertTransaction simulates a fork, at confirmed level, that adds a
// record_attestations of n attestations by agent i to an earlier slot: the
// transaction lands in slot (after the current slot's finalized depth and
// at most the current slot), is listed there by getSignaturesForAddress
// (below anything that landed later in higher slots) and is notified to
// logs subscribers as it lands.
func (c *Chain) InsertTransaction(ctx context.Context, i, n int, slot uint64) (solana.Signature, error) {
	if n < 1 || n > 100 {
		return solana.Signature{}, errors.New("devnet: insert 1..100 attestations")
	}
	c.genMu.Lock()
	defer c.genMu.Unlock()
	a, err := c.agentLocked(i)
	if err != nil {
		return solana.Signature{}, err
	}
	atts := c.attestationsLocked(a, n)
	tx, err := c.recordTx(a, atts, atts)
	if err != nil {
		return solana.Signature{}, err
	}
	raw, err := tx.MarshalBinary()
	if err != nil {
		return solana.Signature{}, fmt.Errorf("devnet: encode transaction: %w", err)
	}
	p, serr := prepare(raw, true)
	if serr != nil {
		return solana.Signature{}, serr
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if slot <= c.finalizedSlotLocked() || slot > c.slot || c.blocks[slot] == nil {
		return solana.Signature{}, fmt.Errorf("devnet: slot %d is not a confirmed, unfinalized slot (finalized %d, current %d)",
			slot, c.finalizedSlotLocked(), c.slot)
	}
	if x, txErr := c.executeLocked(p, false); txErr != nil {
		return solana.Signature{}, fmt.Errorf("devnet: inserted transaction would fail: %v (%v)", txErr, x.logs)
	}
	r := c.landAtLocked(p, slot)
	c.log.Info("devnet fork added a transaction to an earlier slot", "signature", r.sig.String(), "slot", slot, "current", c.slot)
	return r.sig, nil
}
