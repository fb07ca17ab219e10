package app_test

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// threadCPU is the CPU time the calling thread has used, in ns (0 where
// the clock is missing).
func threadCPU() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

// reportCPU runs f (which serves b.N requests on this goroutine) locked to
// its thread and reports the thread's CPU time per request as cpu-ns/op:
// on a machine shared with other work, wall time per request swings with
// the load, while the CPU a request costs does not (much).
func reportCPU(b *testing.B, f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	f()
	if start > 0 {
		b.ReportMetric(float64(threadCPU()-start)/float64(b.N), "cpu-ns/op")
	}
}
