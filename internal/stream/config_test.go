package stream

import (
	"strings"
	"sync"
	"testing"
)

// TestBufferBudgetsFromEnv: the two byte budgets' variables, with their
// defaults and hostile values (each refused, naming the variable).
func TestBufferBudgetsFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	c, err := ConfigFromEnv(env(nil))
	if err != nil || c.BufferPerStream != 256<<10 || c.BufferTotal != 64<<20 {
		t.Fatalf("defaults: %d %d %v", c.BufferPerStream, c.BufferTotal, err)
	}
	c, err = ConfigFromEnv(env(map[string]string{"ATTESTD_STREAM_BUFFER_KB": " 64 ", "ATTESTD_STREAM_BUFFER_TOTAL_MB": "1048576"}))
	if err != nil || c.BufferPerStream != 64<<10 || c.BufferTotal != 1<<40 {
		t.Fatalf("bounds: %d %d %v", c.BufferPerStream, c.BufferTotal, err)
	}
	for _, name := range []string{"ATTESTD_STREAM_BUFFER_KB", "ATTESTD_STREAM_BUFFER_TOTAL_MB"} {
		for _, bad := range []string{"0", "-1", "63x", "1e3", "1.5", "0x40", "256KiB", "９９", "99999999999999999999999", "1048577000", "\x00", "64\x00"} {
			if name == "ATTESTD_STREAM_BUFFER_TOTAL_MB" && bad == "63x" {
				bad = "1048577"
			}
			if _, err := ConfigFromEnv(env(map[string]string{name: bad})); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%q: %v, want a refusal naming it", name, bad, err)
			}
		}
	}
	// Below its floor a per-stream budget could not hold its write buffer.
	if _, err := ConfigFromEnv(env(map[string]string{"ATTESTD_STREAM_BUFFER_KB": "63"})); err == nil {
		t.Error("ATTESTD_STREAM_BUFFER_KB=63 accepted")
	}
	// Set in code, values out of bounds are clamped.
	if c := (Config{BufferPerStream: 1, BufferTotal: 1}).withDefaults(); c.BufferPerStream != minBufferPerStream || c.BufferTotal != minBufferTotal {
		t.Errorf("clamped: %d %d", c.BufferPerStream, c.BufferTotal)
	}
}

// TestBudgetUnderContention: takes and gives from many goroutines never
// let the budget pass its bound, and leave it at zero.
func TestBudgetUnderContention(t *testing.T) {
	b := &budget{max: 1 << 20}
	var wg sync.WaitGroup
	var over sync.Once
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20000 {
				var n int64
				if (g+i)%2 == 0 {
					n = b.takeUpTo(4<<10, 64<<10, b.max/4)
				} else if b.take(20 << 10) {
					n = 20 << 10
				}
				if h := b.Held(); h > b.max {
					over.Do(func() { t.Errorf("held %d, over %d", h, b.max) })
				}
				if n > 0 {
					b.give(n)
				}
			}
		}()
	}
	wg.Wait()
	if h := b.Held(); h != 0 {
		t.Fatalf("held %d after every take was given back", h)
	}
	// takeUpTo leaves keep free, and takes nothing below least.
	if n := b.takeUpTo(1, b.max, b.max/4); n != b.max*3/4 {
		t.Fatalf("took %d, want %d", n, b.max*3/4)
	}
	if n := b.takeUpTo(1, 1, b.max/4); n != 0 {
		t.Fatalf("took %d past keep", n)
	}
	if !b.take(b.max / 4) {
		t.Fatal("take refused the room keep left")
	}
	if b.take(1) {
		t.Fatal("take passed the budget")
	}
}
