package benchkit

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/attestd/attestd/internal/store"
)

// Start runs bin with env and argv until the returned stop (SIGTERM, then
// SIGKILL after grace), once readyURL answers 200 (within 30 s).
func Start(ctx context.Context, env []string, grace time.Duration, bin, readyURL string, argv ...string) (*exec.Cmd, func(), error) {
	return StartUntil(ctx, env, grace, bin, readyURL, func() bool {
		res, err := http.Get(readyURL)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	}, argv...)
}

// StartUntil is Start with its own readiness check, ready (asked every
// 50 ms for 30 s); what names what it waits for in the error.
func StartUntil(ctx context.Context, env []string, grace time.Duration, bin, what string, ready func() bool, argv ...string) (*exec.Cmd, func(), error) {
	cmd := exec.Command(bin, argv...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", bin, err)
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(grace):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for !ready() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			stop()
			return nil, nil, fmt.Errorf("%s not ready at %s within 30 s", bin, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cmd, stop, nil
}

// LoadAvg is the 1, 5 and 15 minute load averages ("?" when unknown).
func LoadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// Percentile is the nearest-rank p-th percentile of d (0 when empty).
func Percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// WaitVerified waits (up to 30 s) until the webhooks ids answered their
// endpoint verification.
func WaitVerified(ctx context.Context, st *store.Store, ids []string) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for {
			w, err := st.WebhookByID(ctx, id)
			if err != nil {
				return err
			}
			if w.Verification == store.VerificationVerified {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("webhook %s not verified within 30 s (%s)", id, w.Verification)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}
