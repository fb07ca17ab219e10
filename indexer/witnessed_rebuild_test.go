package indexer

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/devtools/litewitness"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/translog"
	"github.com/gofiber/fiber/v2"
	"golang.org/x/mod/sumdb/note"
)

var (
	lwOnce sync.Once
	lwBin  string
	lwErr  error
)

// witnessedConfig starts two real litewitness processes (torchwood's)
// that know the log of key, and returns a log configuration that needs
// both to cosign a checkpoint before it is served.
func witnessedConfig(t *testing.T, key translog.Key) translog.Config {
	t.Helper()
	lwOnce.Do(func() { lwBin, lwErr = litewitness.Binary(context.Background(), ".") })
	testenv.Must(t, lwErr, "build litewitness")
	var opts []litewitness.Options
	for i := range 2 {
		opts = append(opts, litewitness.Options{Binary: lwBin, Dir: testenv.TempDir(t, "attestd-witness-"), Name: fmt.Sprintf("witness%d.test/w", i+1)})
	}
	ws, items, err := litewitness.ForLog(context.Background(), key.Name, key.VerifierKey, opts...)
	testenv.Must(t, err, "start the witnesses")
	for _, w := range ws {
		t.Cleanup(w.Stop)
	}
	witnesses, err := translog.ParseWitnesses(items)
	testenv.Must(t, err, "witness config")
	return translog.Config{Key: key, Batch: 7, CheckpointInterval: 30 * time.Millisecond, Poll: 10 * time.Millisecond,
		Witnesses: witnesses, Quorum: 2}
}

// checkpointServer serves the log's checkpoint from l's database as an API
// node does: what GET /log/checkpoint answers (status, body).
func checkpointServer(t *testing.T, l *loggedStore, cfg translog.Config) func() (int, string) {
	t.Helper()
	srv := translog.NewServer(translog.ServerDeps{Store: l.st, Config: cfg, Logger: quietLogger(), Refresh: 20 * time.Millisecond})
	srv.Start(t.Context())
	app := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error {
		if e, ok := errors.AsType[*apierror.Error](err); ok {
			return c.Status(e.Status).SendString(e.Message)
		}
		return c.Status(500).SendString(err.Error())
	}})
	for _, r := range srv.OriginRoutes() {
		app.Add(r.Method, r.Path, r.Handlers...)
	}
	return func() (int, string) {
		res, err := app.Test(httptest.NewRequest("GET", srv.Path()+"/checkpoint", nil), -1)
		testenv.Must(t, err, "GET checkpoint")
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
}

// cosignedAt waits until both witnesses cosigned the checkpoint of size n
// in l's database and the node serves it.
func cosignedAt(t *testing.T, l *loggedStore, get func() (int, string), n int64) string {
	t.Helper()
	var body string
	testenv.WaitForState(t, fmt.Sprintf("the checkpoint of size %d cosigned by both witnesses and served", n), testenv.Patience, func() (bool, string) {
		code, b := get()
		body = b
		lines := strings.Split(b, "\n")
		return code == 200 && len(lines) > 1 && lines[1] == fmt.Sprint(n) && strings.Contains(b, "\n— witness1.test/w ") && strings.Contains(b, "\n— witness2.test/w "),
			fmt.Sprintf("%d %q", code, excerptOf(b))
	})
	return body
}

func excerptOf(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// TestWitnessedLogRebuiltFromTheChain: a chain is indexed with a log that
// two real litewitnesses cosign; the database is lost; an empty one is
// made, held (attestd log hold), and the same chain indexed into it. No
// checkpoint is served while the log regrows (503 with the reason), the
// rebuilt log holds the same leaf at every index and the same root at
// every signed size, the witnesses cosign it again at the size they held,
// and they cosign its next checkpoint once the chain moves on.
func TestWitnessedLogRebuiltFromTheChain(t *testing.T) {
	c := startChain(t, devnet.Config{Agents: 3, Attestations: 40, Batch: 10})
	skey, _, err := note.GenerateKey(rand.Reader, "witnessed.test/log")
	testenv.Must(t, err, "key")
	key, err := translog.ParseKey(skey)
	testenv.Must(t, err, "parse key")
	cfg := witnessedConfig(t, key)

	firstSt, _ := openEmpty(t)
	_, err = firstSt.Migrate(context.Background())
	testenv.Must(t, err, "migrate")
	first := startLoggedOn(t, firstSt, c, cfg)
	gen(t, c, 2, 30, 10)
	first.waitLogged(t, c)
	n := first.count(t, `SELECT size FROM log_size`)
	cosignedAt(t, first, checkpointServer(t, first, cfg), n)
	first.ix.stop(t) // the first database is lost

	ctx := testenv.Context(t, testenv.Patience)
	secondSt, _ := openEmpty(t)
	_, err = secondSt.Migrate(ctx)
	testenv.Must(t, err, "migrate")
	testenv.Must(t, secondSt.HoldLog(ctx), "hold")
	second := &loggedStore{st: secondSt}
	get := checkpointServer(t, second, cfg)
	testenv.WaitForState(t, "the held log answers 503 with its reason", testenv.Patience, func() (bool, string) {
		code, body := get()
		return code == 503 && strings.Contains(body, "restored from a backup"), fmt.Sprintf("%d %q", code, body)
	})
	second = startLoggedOn(t, secondSt, c, cfg)
	regrowing := false
	testenv.WaitForState(t, "the rebuilt log regrown, cosigned and served", testenv.Patience, func() (bool, string) {
		code, body := get()
		if code == 503 && strings.Contains(body, "regrowing") {
			regrowing = true
		}
		if code == 200 && !strings.Contains(body, "\n"+fmt.Sprint(n)+"\n") {
			t.Fatalf("a checkpoint other than the witnessed size %d was served while the log regrew:\n%s", n, body)
		}
		return code == 200, fmt.Sprintf("%d %q", code, excerptOf(body))
	})
	cosignedAt(t, second, get, n)
	signed := sameLog(t, first, second, key.Name, n)

	// The chain moves on: the witnesses cosign the rebuilt log's next
	// checkpoint, from the size they held.
	gen(t, c, 1, 20, 10)
	second.waitLogged(t, c)
	m := second.count(t, `SELECT size FROM log_size`)
	if m <= n {
		t.Fatalf("the rebuilt log did not grow: %d", m)
	}
	cosignedAt(t, second, get, m)
	t.Logf("%d leaves rebuilt the same (roots of %d signed sizes); 503 while regrowing seen: %v; next checkpoint %d cosigned by both witnesses",
		n, signed, regrowing, m)
}
