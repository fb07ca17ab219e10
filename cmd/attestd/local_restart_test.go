package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestLocalRestartForgetsNothing is make run stopped with Ctrl-C and run
// again, on a port other than 8080.
//
// The first run's banner names an attestd verify command; run as printed
// (sh -c, from the directory make run runs in), it proves an attestation
// is in the log. Its indexer never promotes (a finality check every hour),
// so every live row is still confirmed when the chain finalizes it: the
// rows a stop catches between the chain finalizing them and the indexer's
// next promotion. After SIGINT and a second start, every row of the first
// run is still there, each is promoted to finalized at its slot, new live
// rows arrive, and no line says a fork dropped anything. Seeded and live
// rows share one slot space: the chain starts after the seed's slots.
func TestLocalRestartForgetsNothing(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	run := testenv.TempDir(t, "attestd-local-restart-")
	const seeded = 20
	var pgData string // where the runs keep PostgreSQL's data: outside run as root, removed last
	t.Cleanup(func() {
		if pgData != "" && !strings.HasPrefix(pgData, run+string(filepath.Separator)) {
			os.RemoveAll(pgData)
		}
	})
	start := func(t *testing.T, extra ...string) (d *daemon, banner string) {
		port, err := devstack.FreePort()
		testenv.Must(t, err, "free port")
		env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), fmt.Sprintf("ATTESTD_HTTP_ADDR=127.0.0.1:%d", port),
			"ATTESTD_METRICS_ADDR=", "ATTESTD_INDEXER_METRICS_ADDR=", "ATTESTD_WORKER_METRICS_ADDR=", "GOFLAGS=" + os.Getenv("GOFLAGS")}, extra...)
		// From the package's directory: a checkout, so the witness runs too.
		d = startDaemon(t, bin, env, "local", "--dir", run, "--agents", "2", "--attestations", fmt.Sprint(seeded))
		d.waitFor(t, "the banner", 100*time.Millisecond, func() (bool, string) {
			out := d.output.String()
			i := strings.Index(out, "attestd is running (make run)")
			if i < 0 || !strings.Contains(out[i:], "  stop ") {
				return false, "no banner yet"
			}
			banner = out[i:]
			return true, ""
		})
		return d, banner
	}
	first, banner := start(t, "ATTESTD_INDEXER_FINALITY_INTERVAL=1h")
	pgData = dataDir(t, first.output.String())
	checkVerifyLine(t, bannerLine(t, banner, "verify"), first.output.String())
	seedTop := seededSlots(t, first.output.String())

	// Live rows the chain finalized while the indexer holds them confirmed.
	rpcURL, _, _ := strings.Cut(bannerLine(t, banner, "chain RPC"), " ")
	ctx := context.Background()
	db := openRunStore(t, run)
	first.waitFor(t, "live rows the chain finalized, still confirmed in the database", 500*time.Millisecond, func() (bool, string) {
		final, err := finalizedSlot(rpcURL)
		if err != nil {
			return false, err.Error()
		}
		var n int
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM attestations WHERE NOT finalized AND slot <= $1`, int64(final)).Scan(&n); err != nil {
			return false, err.Error()
		}
		return n >= 10, fmt.Sprintf("%d confirmed rows at or below the chain's finalized slot %d", n, final)
	})
	var before []string // what the first run stored (rows may land until it stops: those are not checked)
	testenv.Must(t, db.Pool().QueryRow(ctx, `SELECT array_agg(pda) FROM attestations`).Scan(&before), "rows")
	db.Close()
	testenv.Must(t, first.cmd.Process.Signal(syscall.SIGINT), "Ctrl-C")
	select {
	case <-first.done:
	case <-time.After(time.Minute):
		t.Fatalf("attestd local still runs a minute after SIGINT:\n%s", first.output.String())
	}
	if code := first.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("attestd local exited %d after SIGINT:\n%s", code, first.output.String())
	}
	stoppedAt := savedSlot(t, run)

	second, _ := start(t)
	db = openRunStore(t, run)
	defer db.Close()
	second.waitFor(t, "every row of the first run finalized, and new live rows", 500*time.Millisecond, func() (bool, string) {
		var kept, confirmed, newer int
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE pda = ANY($1)),
				count(*) FILTER (WHERE pda = ANY($1) AND NOT finalized), count(*) FILTER (WHERE slot > $2) FROM attestations`,
			before, int64(stoppedAt)).Scan(&kept, &confirmed, &newer); err != nil {
			return false, err.Error()
		}
		if kept != len(before) {
			t.Fatalf("%d of the first run's %d rows are gone after the restart:\n%s", len(before)-kept, len(before), second.output.String())
		}
		return confirmed == 0 && newer > 0, fmt.Sprintf("%d of the first run's %d rows still confirmed, %d rows after slot %d",
			confirmed, len(before), newer, stoppedAt)
	})
	out := second.output.String()
	for _, bad := range []string{"dropped by a fork", "no longer knows", "starts over"} {
		if strings.Contains(out, bad) {
			t.Errorf("the second run says %q:\n%s", bad, out)
		}
	}
	// One slot space: the seed's rows at its slots, every live row after.
	var atSeedSlots int
	testenv.Must(t, db.Pool().QueryRow(ctx, `SELECT count(*) FROM attestations WHERE slot <= $1`, int64(seedTop)).Scan(&atSeedSlots), "slots")
	if atSeedSlots != seeded {
		t.Errorf("%d rows at the seed's slots 1..%d, want its %d: the live chain used them too", atSeedSlots, seedTop, seeded)
	}
}

// seededSlots is the last slot the seed used, as its log line says
// ("slots":"1..N").
func seededSlots(t *testing.T, logs string) uint64 {
	t.Helper()
	for _, l := range strings.Split(logs, "\n") {
		var rec struct{ Msg, Slots string }
		var top uint64
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == "seeded" {
			if _, err := fmt.Sscanf(rec.Slots, "1..%d", &top); err == nil && top > 0 {
				return top
			}
		}
	}
	t.Fatalf("no log line says which slots the seed used:\n%s", logs)
	return 0
}

// savedSlot is the slot the stopped run's chain saved (chain/chain.json).
func savedSlot(t *testing.T, run string) uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, "chain", "chain.json"))
	testenv.Must(t, err, "the saved chain")
	var s struct{ Slot uint64 }
	testenv.Must(t, json.Unmarshal(b, &s), "the saved chain")
	return s.Slot
}

// bannerLine is the text after the banner's label (as "  verify       ").
func bannerLine(t *testing.T, banner, label string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(label) + ` +(\S.*)$`).FindStringSubmatch(banner)
	if m == nil {
		t.Fatalf("the banner has no %q line:\n%s", label, banner)
	}
	return strings.TrimSpace(m[1])
}

// checkVerifyLine runs the banner's verify command as printed, with sh -c
// from the directory attestd local runs in, and checks that it proves an
// attestation (no placeholder) and that the JSON log line says the same.
func checkVerifyLine(t *testing.T, line, logs string) {
	t.Helper()
	if !strings.Contains(line, " --url http://127.0.0.1:") || strings.Contains(line, " PDA ") {
		t.Fatalf("the banner's verify line names no attestation or no --url: %s", line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || !strings.Contains(stdout.String(), "verified: ") {
		t.Fatalf("the banner's verify line, run as printed, failed (%v):\n%s\n%s%s", err, line, stdout.String(), stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("verify wrote to stderr:\n%s", stderr.String())
	}
	for _, l := range strings.Split(logs, "\n") {
		var rec struct{ Try string }
		if json.Unmarshal([]byte(l), &rec) == nil && strings.Contains(rec.Try, " verify ") {
			if rec.Try != line {
				t.Errorf("the log line suggests %q, the banner %q", rec.Try, line)
			}
			return
		}
	}
	t.Errorf("no log line suggests the verify command:\n%s", logs)
}

// openRunStore opens the database of the attestd local running in dir
// (its stores.env); the caller closes it.
func openRunStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	vals, err := readStoresFile(filepath.Join(dir, storesFileName))
	testenv.Must(t, err, "read stores.env")
	st, err := store.Open(context.Background(), vals["DATABASE_URL"], store.Options{MaxConns: 2})
	testenv.Must(t, err, "open the run's database")
	return st
}

// finalizedSlot asks the chain at rpcURL for its finalized slot.
func finalizedSlot(rpcURL string) (uint64, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"getSlot","params":[{"commitment":"finalized"}]}`
	resp, err := http.Post(rpcURL, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct{ Result uint64 }
	return r.Result, json.NewDecoder(resp.Body).Decode(&r)
}
