package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/logfixture"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/translog/logformat"
	"golang.org/x/mod/sumdb/tlog"
)

// tamperProxy forwards to target and lets rewrite change a JSON answer
// of a path ending in suffix (or the raw body of other paths).
func tamperProxy(t *testing.T, target string, rewrite func(path string, body []byte) []byte) string {
	t.Helper()
	u, err := url.Parse(target)
	testenv.Must(t, err, "parse")
	p := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Header.Del("Accept-Encoding")
	}}
	p.ModifyResponse = func(res *http.Response) error {
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return err
		}
		b = rewrite(res.Request.URL.Path, b)
		res.Body = io.NopCloser(bytes.NewReader(b))
		res.ContentLength = int64(len(b))
		res.Header.Set("Content-Length", strconv.Itoa(len(b)))
		res.Header.Del("ETag")
		return nil
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL
}

// editData decodes {"data":{...}}, lets edit change it and encodes it.
func editData(t *testing.T, b []byte, edit func(d map[string]any)) []byte {
	var env map[string]map[string]any
	if json.Unmarshal(b, &env) != nil || env["data"] == nil {
		return b
	}
	edit(env["data"])
	out, err := json.Marshal(env)
	testenv.Must(t, err, "encode")
	return out
}

// TestVerifyCommand runs `attestd verify` against an `attestd serve`
// process serving the real log: each step printed and exit 0 for a
// logged attestation; exit 1 with the failing step named for a wrong
// key, a tampered leaf, proof or attestation, and one not yet logged; the
// monitor saves, proves growth, and exits 3 on a rollback.
func TestVerifyCommand(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	e := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 30})
	lg := logfixture.NewServed(t, e, "attestd.test/log")
	lg.AppendAll(t)
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"DATABASE_URL=" + e.DatabaseURL, "REDIS_URL=" + e.RedisURL, "ATTESTD_REDIS_PREFIX=" + e.Prefix,
		"ATTESTD_METRICS_ADDR=", "ATTESTD_LOG_LEVEL=warn", "ATTESTD_RATE_LIMIT=100000"}, lg.ProcessEnv()...)
	api, _ := serveProcess(t, bin, env)
	root := strings.TrimSuffix(api, "/api/v1")
	var list struct{ Data []attestation.Attestation }
	get(t, api+"/attestations?limit=5", "198.18.200.1", "", &list)
	if len(list.Data) == 0 {
		t.Fatal("no attestations")
	}
	a := list.Data[2]
	// The node reads the newest checkpoint every second.
	waitProof := func(pda string) {
		testenv.WaitFor(t, "a proof for "+pda, testenv.Patience, func() bool {
			return get(t, api+"/attestations/"+pda+"/proof", "198.18.200.2", "", nil) == http.StatusOK
		})
	}
	waitProof(a.PDA)
	key := "--log-key=" + lg.VerifierKey

	out, errOut, code := runCLI(t, bin, "", nil, "verify", a.PDA, key, "--url", root)
	if code != 0 {
		t.Fatalf("verify exited %d:\n%s\n%s", code, out, errOut)
	}
	t.Logf("attestd verify:\n%s", out)
	for _, want := range []string{
		"ok    fetched attestation " + a.PDA,
		"ok    leaf bytes match the attestation as served",
		"ok    checkpoint signature OK by key attestd.test/log (origin attestd.test/log, tree size 30,",
		"ok    inclusion proof OK: leaf at index ",
		"transaction " + a.TxSignature + " at slot " + strconv.FormatUint(a.Slot, 10),
		"verified: " + a.PDA + " is in the log at index ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("verify output lacks %q:\n%s", want, out)
		}
	}

	other, err := logfixture.New("attestd.test/log")
	testenv.Must(t, err, "other key")
	tamperedLeaf := tamperProxy(t, root, func(path string, b []byte) []byte {
		if !strings.HasSuffix(path, "/proof") {
			return b
		}
		return editData(t, b, func(d map[string]any) {
			leaf, _ := base64.StdEncoding.DecodeString(d["leaf"].(string))
			leaf = bytes.Replace(leaf, []byte(`"slot":`), []byte(`"slot":1`), 1)
			d["leaf"] = base64.StdEncoding.EncodeToString(leaf)
		})
	})
	tamperedProof := tamperProxy(t, root, func(path string, b []byte) []byte {
		if !strings.HasSuffix(path, "/proof") {
			return b
		}
		return editData(t, b, func(d map[string]any) {
			p := d["inclusionProof"].([]any)
			h, _ := base64.StdEncoding.DecodeString(p[0].(string))
			h[0] ^= 1
			p[0] = base64.StdEncoding.EncodeToString(h)
		})
	})
	tamperedRecord := tamperProxy(t, root, func(path string, b []byte) []byte {
		if strings.HasSuffix(path, "/proof") {
			return b
		}
		return editData(t, b, func(d map[string]any) { d["actionHash"] = strings.Repeat("ab", 32) })
	})
	tamperedSig := tamperProxy(t, root, func(path string, b []byte) []byte {
		if !strings.HasSuffix(path, "/proof") {
			return b
		}
		return editData(t, b, func(d map[string]any) {
			cp := d["checkpoint"].(string)
			d["checkpoint"] = strings.Replace(cp, "\n30\n", "\n31\n", 1)
		})
	})
	escapes := tamperProxy(t, root, func(path string, b []byte) []byte {
		if strings.HasSuffix(path, "/proof") {
			return editData(t, b, func(d map[string]any) { d["txSignature"] = "\x1b]0;owned\x07\u202e" })
		}
		return editData(t, b, func(d map[string]any) { d["agentPda"] = "\x1b[2J\x1b[31mAGENT\u202e" })
	})
	for _, tc := range []struct {
		name, url, key, want string
	}{
		{"terminal escapes from the service", escapes, key, "ok    fetched attestation"},
		{"wrong key", root, "--log-key=" + other.VerifierKey, "FAIL  checkpoint: checkpoint signature invalid: no signature by key attestd.test/log"},
		{"tampered leaf", tamperedLeaf, key, "FAIL  the proof's leaf"},
		{"tampered attestation", tamperedRecord, key, "is not the canonical JSON of the attestation served"},
		{"tampered proof", tamperedProof, key, "FAIL  inclusion proof: inclusion proof invalid"},
		{"tampered checkpoint", tamperedSig, key, "FAIL  checkpoint: checkpoint signature invalid"},
		{"origin", root, key, "FAIL  checkpoint: checkpoint origin mismatch"},
	} {
		args := []string{"verify", a.PDA, tc.key, "--url", tc.url}
		if tc.name == "origin" {
			args = append(args, "--origin", "attestd.other/log")
		}
		out, errOut, code := runCLI(t, bin, "", nil, args...)
		if strings.ContainsAny(out+errOut, "\x1b\x07\u202e") {
			t.Errorf("%s: control characters from the service reached the terminal: %q %q", tc.name, out, errOut)
		}
		if code != 1 || !strings.Contains(out, tc.want) || strings.Contains(out, "verified:") {
			t.Errorf("%s: exit %d, want 1 and %q:\n%s\n%s", tc.name, code, tc.want, out, errOut)
		}
		if strings.Count(out, "FAIL") != 1 || errOut != "" {
			t.Errorf("%s: the failure should be said once, on one FAIL line:\n%s\nstderr:\n%s", tc.name, out, errOut)
		}
	}

	// Not yet logged: confirmed only.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs := seed.NewAttestations(e.Seeded.Agents, 2, time.Now(), 1_000_000, 5)
	for i := range recs {
		recs[i].Commitment = attestation.Confirmed
	}
	_, err = e.Store.Apply(ctx, &store.Batch{Attestations: recs})
	testenv.Must(t, err, "apply")
	out, _, code = runCLI(t, bin, "", nil, "verify", recs[0].PDA, key, "--url", root)
	if code != 1 || !strings.Contains(out, "FAIL  not in the log yet") {
		t.Errorf("confirmed attestation: exit %d:\n%s", code, out)
	}

	// The monitor.
	state := filepath.Join(t.TempDir(), "cp")
	monitor := func(u string) (string, int) {
		out, errOut, code := runCLI(t, bin, "", nil, "verify", "--monitor", key, "--url", u, "--state", state)
		return out + errOut, code
	}
	if out, code := monitor(root); code != 0 || !strings.Contains(out, "ok    first checkpoint: tree size 30") {
		t.Fatalf("monitor first: %d\n%s", code, out)
	}
	saved, err := os.ReadFile(state)
	testenv.Must(t, err, "state")
	if out, code := monitor(root); code != 0 || !strings.Contains(out, "ok    unchanged: tree size 30") {
		t.Fatalf("monitor again: %d\n%s", code, out)
	}
	_, err = e.Store.Finalize(ctx, []string{recs[0].TxSignature, recs[1].TxSignature})
	testenv.Must(t, err, "finalize")
	lg.AppendAll(t)
	waitProof(recs[0].PDA)
	if out, code := monitor(root); code != 0 || !regexp.MustCompile(`ok    tree size 3[12] extends 30 seen before \(consistency proof OK\)`).MatchString(out) {
		t.Fatalf("monitor after growth: %d\n%s", code, out)
	}
	// A node that serves the old checkpoint again: a rollback, exit 3.
	rollback := tamperProxy(t, root, func(path string, b []byte) []byte {
		if strings.HasSuffix(path, "/log/checkpoint") {
			return saved
		}
		return b
	})
	out, code = monitor(rollback)
	if code != exitFork || !strings.Contains(out, "FORK  log rollback: checkpoint of 30 leaves") || !strings.Contains(out, "— attestd.test/log ") {
		t.Fatalf("monitor of a rollback: exit %d\n%s", code, out)
	}
	if out, code := monitor(root); code != 0 || !strings.Contains(out, "ok    unchanged") {
		t.Fatalf("monitor after the alarm: %d\n%s", code, out)
	}
	// Usage mistakes.
	if _, errOut, code := runCLI(t, bin, "", nil, "verify", a.PDA); code != exitUsage || !strings.Contains(errOut, "--log-key is required") {
		t.Errorf("no key: %d %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, bin, "", nil, "verify", a.PDA, "--log-key", "nonsense"); code != exitUsage || !strings.Contains(errOut, "--log-key") {
		t.Errorf("bad key: %d %s", code, errOut)
	}
	if _, _, code := runCLI(t, bin, "", nil, "verify", key); code != exitUsage {
		t.Errorf("no pda: %d", code)
	}
}

// TestDatasetTiles: the tile reader of verify --dataset reads the leaf
// hashes of a range across tiles, from partial tiles or, when a node
// serves only full ones, those; it reads each tile once however the
// windows fall; an answer too large, too short or an error fails.
func TestDatasetTiles(t *testing.T) {
	var hashes []tlog.Hash
	reader := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = hashes[x]
		}
		return out, nil
	})
	for i := range 800 {
		hs, err := tlog.StoredHashes(int64(i), []byte(strconv.Itoa(i)), reader)
		testenv.Must(t, err, "stored hashes")
		hashes = append(hashes, hs...)
	}
	var requests atomic.Int64
	serve := func(partial bool, answer func(b []byte) []byte) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			tile, err := logformat.ParseTilePath(strings.TrimPrefix(r.URL.Path, "/log/tile/"))
			if err != nil || !strings.HasPrefix(r.URL.Path, "/log/tile/") || tile.Level != 0 || !tile.Within(800) || (!partial && tile.W < logformat.TileWidth) {
				http.NotFound(w, r)
				return
			}
			b, err := tlog.ReadTileData(tlog.Tile{H: logformat.TileHeight, N: tile.N, W: tile.W}, reader)
			testenv.Must(t, err, "tile")
			if answer != nil {
				b = answer(b)
			}
			w.Write(b)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	ctx := context.Background()
	for _, partial := range []bool{true, false} {
		tiles := &datasetTiles{site: serve(partial, nil), origin: "attestd.test/log", timeout: 5 * time.Second}
		for _, r := range [][2]int64{{450, 600}, {200, 450}, {0, 1}, {255, 257}, {599, 600}} {
			got, err := tiles.LeafHashes(ctx, r[0], r[1], 600)
			if err != nil || int64(len(got)) != r[1]-r[0] {
				t.Fatalf("partial tiles served %v: leaves [%d, %d): %d hashes, %v", partial, r[0], r[1], len(got), err)
			}
			for i, h := range got {
				if h != hashes[tlog.StoredHashIndex(0, r[0]+int64(i))] {
					t.Fatalf("partial tiles served %v: leaf %d: not the log's hash", partial, r[0]+int64(i))
				}
			}
		}
	}
	requests.Store(0)
	tiles := &datasetTiles{site: serve(true, nil), origin: "attestd.test/log", timeout: 5 * time.Second}
	for _, r := range [][2]int64{{100, 300}, {300, 500}, {500, 600}} {
		if _, err := tiles.LeafHashes(ctx, r[0], r[1], 600); err != nil {
			t.Fatal(err)
		}
	}
	if n := requests.Load(); n != 3 {
		t.Fatalf("three tiles read in %d requests", n)
	}
	for name, answer := range map[string]func([]byte) []byte{
		"too large": func(b []byte) []byte { return make([]byte, 1<<20) },
		"too short": func(b []byte) []byte { return b[:len(b)-1] },
	} {
		tiles := &datasetTiles{site: serve(true, answer), origin: "attestd.test/log", timeout: 5 * time.Second}
		if _, err := tiles.LeafHashes(ctx, 0, 10, 600); err == nil || !strings.Contains(err.Error(), "bytes, want") {
			t.Errorf("a tile %s: %v", name, err)
		}
	}
	if _, err := (&datasetTiles{site: "http://127.0.0.1:9", origin: "attestd.test/log", timeout: 5 * time.Second}).LeafHashes(ctx, 0, 10, 600); err == nil {
		t.Errorf("no node: no error")
	}
}

// TestDatasetURLs: where verify --dataset finds /dataset/ and the log's
// tiles for a --url, and how it writes counts.
func TestDatasetURLs(t *testing.T) {
	for in, want := range map[string][2]string{
		"https://attestd.example":             {"https://attestd.example", "https://attestd.example"},
		"https://attestd.example/api/v1/":     {"https://attestd.example", "https://attestd.example"},
		"http://127.0.0.1:8080/mirror/":       {"http://127.0.0.1:8080/mirror", "http://127.0.0.1:8080"},
		"http://127.0.0.1:8080/mirror/api/v1": {"http://127.0.0.1:8080/mirror", "http://127.0.0.1:8080"},
	} {
		if root, site, err := datasetURLs(in); err != nil || root != want[0] || site != want[1] {
			t.Errorf("datasetURLs(%q) = %q, %q, %v; want %q", in, root, site, err, want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1233: "1,233", 1234567: "1,234,567", -12345: "-12,345"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q", n, got)
		}
	}
}

// TestVerifyFailureSaidOnce: a verify that cannot reach the service (the
// port make run does not listen on) says why once, on its FAIL line, and
// exits 1; main does not print the error again on stderr.
func TestVerifyFailureSaidOnce(t *testing.T) {
	bin := testenv.BuildAttestd(t)
	lg, err := logfixture.New("attestd.test/log")
	testenv.Must(t, err, "log key")
	out, errOut, code := runCLI(t, bin, "", nil, "verify", "4fY6gCbcxXWvBEvyM4q4yGkBtzLpYhJ6Ejk3SWqpGmvB", "--log-key", lg.VerifierKey,
		"--url", "http://127.0.0.1:1")
	if code != 1 || strings.Count(out, "FAIL") != 1 || !strings.Contains(out, "FAIL  fetch attestation") || errOut != "" {
		t.Fatalf("exit %d, want 1, one FAIL line and nothing on stderr:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
