package x402fiber_test

import (
	"net/http"
	"sync"
	"testing"
)

// The same payment sent to two nodes at once is charged exactly once:
// with the Redis guard, and with the ledger's unique key alone.
func TestSamePaymentTwoNodes(t *testing.T) {
	t.Parallel()
	for _, redisGuard := range []bool{true, false} {
		name := "redis and ledger"
		if !redisGuard {
			name = "ledger alone"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			a, b := f.nodeWith(t, f.config(), nil, redisGuard), f.nodeWith(t, f.config(), nil, redisGuard)
			path := "/premium/full-history/" + f.agent
			payment := f.wallet(t, a.challenge(t, http.MethodGet, path, nil))
			before := f.balance(t)
			const n = 8
			statuses, bodies := make([]int, n), make([]string, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					node := a
					if i%2 == 1 {
						node = b
					}
					<-start
					r := node.pay(t, http.MethodGet, path, nil, payment)
					statuses[i], bodies[i] = r.Status, string(r.Body)
				}()
			}
			close(start)
			wg.Wait()
			ok, replayed := 0, 0
			var other []string
			for i, s := range statuses {
				switch s {
				case http.StatusOK:
					ok++
				case http.StatusConflict:
					replayed++
				default:
					other = append(other, bodies[i])
				}
			}
			// One settles; the others are refused while it is in flight, or
			// (once settled) answered again for the same request at no charge.
			if ok < 1 || ok+replayed != n || len(other) != 0 {
				t.Fatalf("statuses %v: want 200s and 409s only, at least one 200; other answers: %v", statuses, other)
			}
			if got := f.balance(t); got != before+price {
				t.Fatalf("payTo %d -> %d", before, got)
			}
			if s := ledger(t, a.Store, "settled"); len(s) != 1 {
				t.Fatalf("settled rows %d", len(s))
			}
		})
	}
}
