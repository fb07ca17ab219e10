package cache

import (
	"fmt"
	"testing"
	"time"
)

func TestLocalStaysWithinBudget(t *testing.T) {
	l := newLocal(64 << 10)
	exp := monotonic() + time.Hour
	val := make([]byte, 1000)
	for i := 0; i < 1000; i++ {
		l.set(fmt.Sprint("k", i), val, exp)
		if l.size() > 64<<10 {
			t.Fatalf("after %d sets: %d bytes over the 64 KiB budget", i, l.size())
		}
	}
	if l.len() == 0 {
		t.Fatal("everything evicted")
	}
	// Replacing a key does not leak accounting.
	l2 := newLocal(64 << 10)
	for i := 0; i < 100; i++ {
		l2.set("same", val, exp)
	}
	if l2.len() != 1 || l2.size() != len("same")+len(val)+entryOverhead {
		t.Fatalf("len %d size %d", l2.len(), l2.size())
	}
	// Expired entries are misses; oversized values are not kept.
	l2.set("old", val, monotonic()-time.Second)
	if _, ok := lookup(l2, "old", monotonic()); ok {
		t.Fatal("expired entry served")
	}
	l2.set("huge", make([]byte, 20<<10), exp)
	if _, ok := lookup(l2, "huge", monotonic()); ok {
		t.Fatal("value over an eighth of the budget kept")
	}
	// A zero budget disables the layer.
	off := newLocal(0)
	off.set("k", val, exp)
	if off.len() != 0 {
		t.Fatal("disabled layer stored a value")
	}
}
