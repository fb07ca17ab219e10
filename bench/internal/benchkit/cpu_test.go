package benchkit

import (
	"os"
	"testing"
	"time"
)

func TestProcessCPU(t *testing.T) {
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; { // spend CPU
	}
	if got := ProcessCPU(os.Getpid()); got <= 0 {
		t.Fatalf("ProcessCPU(self) = %v after spending CPU", got)
	}
	if got := ProcessCPU(-1); got != 0 {
		t.Fatalf("ProcessCPU(-1) = %v, want 0 (unknown)", got)
	}
}
