package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/internal/webhook/keyring"
	"github.com/attestd/attestd/webhook/signature"
)

// workerProc is a running `attestd worker`.
type workerProc struct {
	cmd  *exec.Cmd
	out  *testenv.Output
	done chan struct{}
}

func startWorkerProc(t *testing.T, bin string, env []string) *workerProc {
	t.Helper()
	p := &workerProc{cmd: exec.Command(bin, "worker"), out: &testenv.Output{}, done: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	testenv.Must(t, p.cmd.Start(), "start attestd worker")
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// TestWorkerKilledMidBatchLosesNothing runs two `attestd worker`
// processes, kills one with SIGKILL while it holds jobs in flight, and
// checks that every event still reaches the receiver, the jobs of the
// dead worker being taken over by the other.
func TestWorkerKilledMidBatchLosesNothing(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	dbURL := testenv.Database(t)
	redisURL, prefix := testenv.Redis(t)
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL, store.Options{MaxConns: 4})
	testenv.Must(t, err, "open store")
	defer st.Close()
	_, err = st.Migrate(ctx)
	testenv.Must(t, err, "migrate")

	// The receiver is deliberately slow, so the workers hold a backlog.
	var mu sync.Mutex
	got := map[string]int{}
	total := 0
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if answer, ok := webhook.ChallengeAnswer(body); ok { // the endpoint verification
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(answer)
			return
		}
		var e struct{ ID string }
		_ = json.Unmarshal(body, &e)
		time.Sleep(10 * time.Millisecond)
		mu.Lock()
		got[e.ID]++
		total++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rc.Close()
	received := func() (distinct, all int) {
		mu.Lock()
		defer mu.Unlock()
		return len(got), total
	}

	spec, err := keyring.Generate("k1")
	testenv.Must(t, err, "key")
	keys, err := keyring.Parse(spec)
	testenv.Must(t, err, "keyring")
	acc, _, err := st.EnsureAccount(ctx, "acme")
	testenv.Must(t, err, "account")
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := "wh_" + hex.EncodeToString(b[:])
	secret, _ := signature.NewSecret()
	sealed, keyID, err := keys.Seal([]byte(secret), []byte(id))
	testenv.Must(t, err, "seal")
	_, err = st.InsertWebhook(ctx, store.Webhook{ID: id, AccountID: acc.ID, URL: rc.URL + "/hook", Events: []string{"attestation.created"},
		SecretSealed: sealed, SecretKeyID: keyID}, 0)
	testenv.Must(t, err, "webhook")

	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "DATABASE_URL=" + dbURL, "REDIS_URL=" + redisURL,
		"ATTESTD_REDIS_PREFIX=" + prefix, "ATTESTD_WEBHOOK_SECRET_KEYS=" + spec, "ATTESTD_WEBHOOK_ALLOW_LOOPBACK=1",
		"ATTESTD_WEBHOOK_CLAIM_IDLE=2s", "ATTESTD_WEBHOOK_RETRY_SCHEDULE=1s,1s,1s", "ATTESTD_WEBHOOK_POLL_INTERVAL=20ms",
		"ATTESTD_WEBHOOK_ENDPOINT_CONCURRENCY=4", "ATTESTD_WORKER_METRICS_ADDR=", "ATTESTD_LOG_LEVEL=info",
	}
	victim := startWorkerProc(t, bin, env)
	survivor := startWorkerProc(t, bin, env)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the workers' output:\n%s\n%s", victim.out, survivor.out)
		}
	})

	const n = 600
	_, err = st.Pool().Exec(ctx, `INSERT INTO outbox (event_type, payload)
		SELECT 'attestation.created', jsonb_build_object('pda', 'p' || i, 'agentPda', 'a', 'actionType', 'ToolCall')
		FROM generate_series(1, $1) i`, n)
	testenv.Must(t, err, "insert events")

	testenv.WaitForState(t, "deliveries under way", testenv.Patience, func() (bool, string) {
		d, _ := received()
		return d >= n/6, fmt.Sprintf("%d of %d events delivered", d, n)
	})
	testenv.Must(t, victim.cmd.Process.Signal(syscall.SIGKILL), "kill -9")
	<-victim.done
	atKill, _ := received()

	testenv.WaitForState(t, "every event delivered after the kill", testenv.Patience, func() (bool, string) {
		d, _ := received()
		return d == n, fmt.Sprintf("%d of %d events delivered after the kill", d, n)
	})
	_, all := received()
	t.Logf("killed one of two workers after %d of %d events; every event arrived (%d requests: at least once)", atKill, n, all)
	if survivor.out.Count("took over jobs a stopped worker held") == 0 {
		t.Errorf("the surviving worker never took over the dead one's jobs:\n%s", survivor.out)
	}
}
