package webhook

import (
	"testing"
	"time"
)

func TestBreaker(t *testing.T) {
	b := &breaker{minCool: time.Second}
	now := time.Unix(1000, 0)
	for i := range breakerThreshold - 1 {
		if ok, _, _ := b.allow(now); !ok {
			t.Fatalf("closed circuit refused attempt %d", i)
		}
		b.record(false, now)
	}
	b.record(true, now) // a success resets the run
	for range breakerThreshold {
		b.record(false, now)
	}
	ok, until, _ := b.allow(now)
	if ok || !until.Equal(now.Add(time.Second)) {
		t.Fatalf("open circuit: ok=%v until %v", ok, until)
	}
	now = now.Add(time.Second)
	if ok, _, _ := b.allow(now); !ok {
		t.Fatal("no probe after the cooldown")
	}
	if ok, _, _ := b.allow(now); ok {
		t.Fatal("two probes at once")
	}
	b.record(false, now) // the probe failed: twice the cooldown
	if ok, until, _ := b.allow(now.Add(1500 * time.Millisecond)); ok || !until.Equal(now.Add(2*time.Second)) {
		t.Fatalf("after a failed probe: ok=%v until %v", ok, until)
	}
	now = now.Add(2 * time.Second)
	if ok, _, _ := b.allow(now); !ok {
		t.Fatal("no second probe")
	}
	b.record(true, now)
	if ok, _, _ := b.allow(now); !ok || b.open() {
		t.Fatal("a successful probe did not close the circuit")
	}
	// The cooldown doubles up to the maximum.
	b = &breaker{minCool: breakerMaxCooldown / 2}
	for range breakerThreshold {
		b.record(false, now)
	}
	for range 5 {
		now = b.openUntil
		b.allow(now)
		b.record(false, now)
	}
	if b.cooldown != breakerMaxCooldown {
		t.Fatalf("cooldown %s", b.cooldown)
	}
}
