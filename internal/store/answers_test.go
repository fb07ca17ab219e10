package store

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func claimFor(t *testing.T, st *Store, n byte) int64 {
	t.Helper()
	p := Payment{Network: "solana:test", Asset: "mint", PayTo: "payto", Payer: "payer", Amount: 1, Route: "/r", Node: "n",
		RequestFingerprint: make([]byte, 32), Request: "GET /r"}
	p.MessageHash[0], p.MessageHash[1] = n, 0xa5
	id, err := st.ClaimPayment(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func answerOf(id int64, body string) Answer {
	return Answer{PaymentID: id, Status: 200, Headers: [][2]string{{"Content-Type", "application/json"}, {"Vary", "Accept-Encoding"}},
		Body: []byte(body), PlainSize: len(body), Digest: strings.Repeat("a", 64)}
}

// Kept answers: read back as kept; the settlement header's first value
// wins; the cap refuses what would pass it and is exact again after a
// prune; expired answers go, live ones stay; a released payment's answer
// is dropped; concurrent keeps never pass the cap.
func TestKeptAnswers(t *testing.T) {
	t.Parallel()
	st := open(t)
	ctx := context.Background()
	now := time.Now()
	a, b, c := claimFor(t, st, 1), claimFor(t, st, 2), claimFor(t, st, 3)
	if err := st.KeepAnswer(ctx, answerOf(a, "0123456789"), now.Add(time.Hour), 25); err != nil {
		t.Fatal(err)
	}
	got, err := st.PaymentAnswer(ctx, a)
	if err != nil || !bytes.Equal(got.Body, []byte("0123456789")) || len(got.Headers) != 2 || got.Headers[1] != [2]string{"Vary", "Accept-Encoding"} ||
		got.PaymentResponse != "" || !got.ExpiresAt.After(now) {
		t.Fatalf("kept %+v %v", got, err)
	}
	if h, v, err := st.SetAnswerResponse(ctx, a, "PAYMENT-RESPONSE", "first"); err != nil || h != "PAYMENT-RESPONSE" || v != "first" {
		t.Fatalf("set response %q %q %v", h, v, err)
	}
	if _, v, _ := st.SetAnswerResponse(ctx, a, "X-PAYMENT-RESPONSE", "second"); v != "first" {
		t.Fatalf("second response won: %q", v)
	}
	if _, _, err := st.SetAnswerResponse(ctx, c, "PAYMENT-RESPONSE", "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("response without an answer: %v", err)
	}
	// 10 kept, cap 25: 20 more do not fit, 10 do.
	if err := st.KeepAnswer(ctx, answerOf(b, strings.Repeat("b", 20)), now.Add(-time.Second), 25); !errors.Is(err, ErrAnswerStoreFull) {
		t.Fatalf("over the cap: %v", err)
	}
	if err := st.KeepAnswer(ctx, answerOf(b, strings.Repeat("b", 10)), now.Add(-time.Second), 25); err != nil {
		t.Fatal(err)
	}
	// b is expired: pruned; a stays; the usage is exact.
	p, err := st.PruneAnswers(ctx, now, 10)
	if err != nil || p.Answers != 1 || p.Bytes != 10 || p.Kept != 10 {
		t.Fatalf("prune %+v %v", p, err)
	}
	if _, err := st.PaymentAnswer(ctx, b); !errors.Is(err, ErrNotFound) {
		t.Fatalf("pruned answer read: %v", err)
	}
	// Released: the answer goes (the usage follows at the next prune).
	if err := st.KeepAnswer(ctx, answerOf(c, "cc"), now.Add(time.Hour), 0); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishPayment(ctx, c, PaymentReleased, "", "not charged"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PaymentAnswer(ctx, c); !errors.Is(err, ErrNotFound) {
		t.Fatalf("released payment's answer: %v", err)
	}
	if p, _ := st.PruneAnswers(ctx, now, 10); p.Kept != 10 {
		t.Fatalf("usage after release %+v", p)
	}
	// Kept again (a payment claimed again after a release): replaced.
	if err := st.KeepAnswer(ctx, answerOf(a, "9876543210"), now.Add(time.Hour), 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.PaymentAnswer(ctx, a); string(got.Body) != "9876543210" || got.PaymentResponse != "" {
		t.Fatalf("replaced answer %+v", got)
	}
	// Concurrent keeps of 10 bytes each under a cap of 50 (10 used): at
	// most 4 fit.
	ids := make([]int64, 12)
	for i := range ids {
		ids[i] = claimFor(t, st, byte(10+i))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	kept := 0
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := st.KeepAnswer(ctx, answerOf(id, strings.Repeat("x", 10)), now.Add(time.Hour), 50)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				kept++
			case !errors.Is(err, ErrAnswerStoreFull):
				t.Errorf("keep: %v", err)
			}
		}()
	}
	wg.Wait()
	if p, _ := st.PruneAnswers(ctx, now, 10); kept != 4 || p.Kept != 50 {
		t.Fatalf("%d kept at once, usage %d", kept, p.Kept)
	}
}
