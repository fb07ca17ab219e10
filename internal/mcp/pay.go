package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/x402"
)

// budget is the spending cap of one session of the tool server (the
// process, for stdio; every client together, for streamable HTTP). A
// payment reserves its price before it is made and gets it back when it
// was not charged.
type budget struct {
	mu    sync.Mutex
	cap   uint64 // atomic units of USDC
	spent uint64
}

type reservationsKey struct{}

// reservations are the amounts one tool call reserved.
type reservations struct {
	mu  sync.Mutex
	sum uint64
}

// approve is the client's Payer.Approve: USDC only, within the cap.
func (b *budget) approve(ctx context.Context, q x402.Requirements) error {
	n, ok := x402.NetworkByName(q.Network)
	if !ok || q.Asset != n.USDC.String() {
		return fmt.Errorf("this tool server pays in USDC only, and the service asks for %s", q.Asset)
	}
	amount, err := q.AmountUnits()
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.spent+amount > b.cap {
		return fmt.Errorf("the spending cap of this session is reached: %s of %s USDC spent, and this call costs %s USDC (raise %s and restart to spend more)",
			usdc(b.spent), usdc(b.cap), usdc(amount), EnvSpendCap)
	}
	b.spent += amount
	if r, ok := ctx.Value(reservationsKey{}).(*reservations); ok {
		r.mu.Lock()
		r.sum += amount
		r.mu.Unlock()
	}
	return nil
}

// settle gives back what a call reserved but did not pay.
func (b *budget) settle(r *reservations, paid uint64) (spent uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r.mu.Lock()
	if r.sum > paid {
		b.spent -= r.sum - paid
	}
	r.sum = 0
	r.mu.Unlock()
	return b.spent
}

func usdc(n uint64) string { return x402.FormatAmount(n, x402.USDCDecimals) }

// paying runs a premium call with payments recorded, and returns the
// sentence that says what it cost ("" when it cost nothing).
func (s *Server) paying(ctx context.Context, call func(ctx context.Context) error) (string, error) {
	if s.budget == nil {
		return "", call(ctx)
	}
	rec := &client.Receipts{}
	res := &reservations{}
	ctx = client.RecordPayments(context.WithValue(ctx, reservationsKey{}, res), rec)
	err := call(ctx)
	var paid uint64
	var parts []string
	for _, r := range rec.All() {
		paid += r.Amount
		parts = append(parts, fmt.Sprintf("%s (transaction %s)", r.Display(), r.Transaction))
	}
	spent := s.budget.settle(res, paid)
	if len(parts) == 0 {
		return "", err
	}
	s.log.Info("paid", "amount_usdc", usdc(paid), "spent_usdc", usdc(spent), "cap_usdc", usdc(s.budget.cap))
	return fmt.Sprintf("Paid %s. Spent this session: %s of %s USDC.", strings.Join(parts, ", "), usdc(spent), usdc(s.budget.cap)), err
}
