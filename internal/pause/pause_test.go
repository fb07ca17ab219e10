package pause

import (
	"context"
	"testing"
	"time"
)

func TestFor(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want bool
		// the most it may take (a waited pause takes at least d)
		atMost time.Duration
	}{
		{"waits d", context.Background(), 20 * time.Millisecond, true, 10 * time.Second},
		{"nothing to wait", context.Background(), 0, true, time.Second},
		{"negative", context.Background(), -time.Second, true, time.Second},
		{"ended before", ended, time.Hour, false, time.Second},
		{"ended before, nothing to wait", ended, 0, false, time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			if got := For(c.ctx, c.d); got != c.want {
				t.Errorf("For(%s) = %v, want %v", c.d, got, c.want)
			}
			took := time.Since(start)
			if c.want && c.d > 0 && took < c.d {
				t.Errorf("returned after %s, before the %s it was to wait", took, c.d)
			}
			if took > c.atMost {
				t.Errorf("took %s", took)
			}
		})
	}
	t.Run("ends with its context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan bool)
		go func() { done <- For(ctx, time.Hour) }()
		cancel()
		select {
		case ok := <-done:
			if ok {
				t.Error("For reported its context alive after it ended")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("For kept waiting after its context ended")
		}
	})
}
