package x402fiber_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
)

// tsClient installs the official x402 TypeScript client (testdata/tsclient:
// package.json and its lock file) with npm ci into a cache directory keyed
// by the lock file's hash, once per machine, and returns that directory.
func tsClient(t *testing.T) string {
	t.Helper()
	tsMu.Lock()
	defer tsMu.Unlock()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: the interoperability test needs Node.js and npm (apt-get install nodejs npm)", tool)
		}
	}
	lock, err := os.ReadFile("testdata/tsclient/package-lock.json")
	testenv.Must(t, err, "read lock file")
	pkg, err := os.ReadFile("testdata/tsclient/package.json")
	testenv.Must(t, err, "read package.json")
	sum := sha256.Sum256(append(append([]byte(nil), pkg...), lock...))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "attestd", "x402-tsclient-"+hex.EncodeToString(sum[:6]))
	marker := filepath.Join(dir, ".installed")
	if _, err := os.Stat(marker); err != nil {
		testenv.Must(t, os.MkdirAll(dir, 0o755), "cache dir")
		testenv.Must(t, os.WriteFile(filepath.Join(dir, "package.json"), pkg, 0o644), "package.json")
		testenv.Must(t, os.WriteFile(filepath.Join(dir, "package-lock.json"), lock, 0o644), "lock file")
		var out []byte
		for attempt := 1; attempt <= 2; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
			cmd.Dir = dir
			out, err = cmd.CombinedOutput()
			cancel()
			if err == nil {
				break
			}
			t.Logf("npm ci (attempt %d): %v\n%s", attempt, err, out)
		}
		testenv.Must(t, err, "npm ci in %s: %s", dir, out)
		testenv.Must(t, os.WriteFile(marker, []byte(time.Now().UTC().Format(time.RFC3339)), 0o644), "marker")
	}
	for _, name := range []string{"pay.mjs", "discover.mjs", "mcp.mjs", "idem.mjs"} {
		script, err := os.ReadFile("testdata/tsclient/" + name)
		testenv.Must(t, err, "read %s", name)
		testenv.Must(t, os.WriteFile(filepath.Join(dir, name), script, 0o644), "%s", name)
	}
	return dir
}

// tsMu: one npm install at a time.
var tsMu sync.Mutex

type tsResult struct {
	Status          int                  `json:"status"`
	PaymentResponse *x402.SettleResponse `json:"paymentResponse"`
	HasData         bool                 `json:"hasData"`
	Body            string               `json:"body"`
}

// The official x402 TypeScript client (@x402/fetch with @x402/svm's exact
// scheme) pays attestd on the simulator: whatever it builds from our 402
// verifies and settles.
func TestOfficialTypeScriptClientPays(t *testing.T) {
	t.Parallel()
	dir := tsClient(t)
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	keyFile := f.keyFile(t)
	run := func(method, path, body string) tsResult {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		args := []string{"pay.mjs", n.URL + path, f.chain.RPCURL(), keyFile, method}
		if body != "" {
			args = append(args, body)
		}
		cmd := exec.CommandContext(ctx, "node", args...)
		cmd.Dir = dir
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		testenv.Must(t, err, "node pay.mjs: %s", stderr.String())
		var r tsResult
		testenv.Must(t, json.Unmarshal(out, &r), "decode %s", out)
		return r
	}
	before := f.balance(t)
	r := run(http.MethodGet, "/premium/full-history/"+f.agent, "")
	if r.Status != http.StatusOK || !r.HasData || r.PaymentResponse == nil || !r.PaymentResponse.Success || r.PaymentResponse.Transaction == "" {
		t.Fatalf("TypeScript client, full history: %+v", r)
	}
	r = run(http.MethodPost, "/premium/bulk-verify", `{"ids":["`+f.agent+`"]}`)
	if r.Status != http.StatusOK || !r.HasData || r.PaymentResponse == nil || !r.PaymentResponse.Success {
		t.Fatalf("TypeScript client, bulk verify: %+v", r)
	}
	if got := f.balance(t); got != before+3*price {
		t.Fatalf("payTo %d -> %d, want +%d", before, got, 3*price)
	}
	if rows := ledger(t, n.Store, store.PaymentSettled); len(rows) != 2 || rows[0].Payer != f.Payer.PublicKey().String() {
		t.Fatalf("ledger %+v", rows)
	}
}

// The official payment-identifier helper (appendPaymentIdentifierToExtensions)
// adds an id to what our 402 declares; the official client pays with it;
// the ledger keeps the id; and the exact PAYMENT-SIGNATURE the client
// sent, presented again after new data was indexed, gets the bytes it
// bought (their digest the receipt's responseDigest), not the new data.
func TestOfficialPaymentIdentifierHelper(t *testing.T) {
	t.Parallel()
	dir := tsClient(t)
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	path := "/premium/full-history/" + f.agent
	var r struct {
		Status           int             `json:"status"`
		Declared         json.RawMessage `json:"declared"`
		SentID           *string         `json:"sentId"`
		PaymentSignature string          `json:"paymentSignature"`
		PaymentResponse  string          `json:"paymentResponse"`
		BodyDigest       string          `json:"bodyDigest"`
	}
	runNode(t, dir, &r, "idem.mjs", n.URL+path, f.chain.RPCURL(), f.keyFile(t))
	if r.Status != http.StatusOK || r.SentID == nil || len(*r.SentID) < x402.PaymentIDMinLength {
		t.Fatalf("the official helper attached no id (the 402 declared %s): status %d, id %v", r.Declared, r.Status, r.SentID)
	}
	rows := ledger(t, n.Store, store.PaymentSettled)
	if len(rows) != 1 || rows[0].PaymentID != *r.SentID {
		t.Fatalf("ledger %+v, want payment id %s", rows, *r.SentID)
	}
	if got := responseDigest(t, n, r.PaymentResponse); got != r.BodyDigest {
		t.Fatalf("receipt digest %s, body %s", got, r.BodyDigest)
	}
	f.index(t, 5, 3)
	st, h, body := raw(t, n.URL, http.MethodGet, path, nil, map[string]string{x402.HeaderPaymentSignature: r.PaymentSignature, "Accept-Encoding": "identity"})
	if st != http.StatusOK || sha(body) != r.BodyDigest || h.Get(x402.HeaderPaymentResponse) != r.PaymentResponse {
		t.Fatalf("the client's payment presented again: %d, digest %s, bought %s", st, sha(body), r.BodyDigest)
	}
}
