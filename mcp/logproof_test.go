package mcp_test

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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/apptest"
	"github.com/attestd/attestd/internal/logfixture"
	"github.com/attestd/attestd/internal/seed"
	"github.com/attestd/attestd/internal/testenv"
	"github.com/attestd/attestd/mcp"
	"github.com/attestd/attestd/store"
)

// attestationWithLog is get_attestation's structured answer.
type attestationWithLog struct {
	attestation.Attestation
	Log struct {
		Status, KeyName, KeySource, Reason string
		LeafIndex, TreeSize                *int64
	}
}

// proofTamperer forwards to target, flipping a bit of the first hash of
// every inclusion proof.
func proofTamperer(t *testing.T, target string) string {
	u, err := url.Parse(target)
	testenv.Must(t, err, "parse")
	p := httputil.NewSingleHostReverseProxy(u)
	dir := p.Director
	p.Director = func(r *http.Request) { dir(r); r.Header.Del("Accept-Encoding") }
	p.ModifyResponse = func(res *http.Response) error {
		if !strings.HasSuffix(res.Request.URL.Path, "/proof") || res.StatusCode != 200 {
			return nil
		}
		var env struct{ Data map[string]any }
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if err := json.Unmarshal(b, &env); err != nil {
			return err
		}
		pr := env.Data["inclusionProof"].([]any)
		h, _ := base64.StdEncoding.DecodeString(pr[0].(string))
		h[0] ^= 1
		pr[0] = base64.StdEncoding.EncodeToString(h)
		b, _ = json.Marshal(env)
		res.Body = io.NopCloser(bytes.NewReader(b))
		res.ContentLength = int64(len(b))
		res.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestGetAttestationLogProof: get_attestation reports the log proof's
// verification: verified at its index (with the pinned key or the
// service's), not_logged for a confirmed attestation, failed with the
// reason for a tampered proof or the wrong key, unavailable without a log.
func TestGetAttestationLogProof(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 20})
	lg := logfixture.NewServed(t, env, "attestd.test/log")
	lg.AppendAll(t)
	node := env.StartNode(t, lg.NodeOptions(t, nil))
	bare := env.StartNode(t, apptest.NodeOptions{}) // no log routes
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	api, err := client.New(node.Root)
	testenv.Must(t, err, "client")
	page, err := api.ListAttestations(ctx, client.ListParams{Limit: 5})
	testenv.Must(t, err, "list")
	pda := page.Data[1].PDA
	// confirmed, not logged
	recs := seed.NewAttestations(env.Seeded.Agents, 1, time.Now(), 1_000_000, 8)
	recs[0].Commitment = attestation.Confirmed
	_, err = env.Store.Apply(ctx, &store.Batch{Attestations: recs})
	testenv.Must(t, err, "apply")
	other, err := logfixture.New("attestd.test/log")
	testenv.Must(t, err, "other key")

	get := func(cfg mcp.Config, pda string) (attestationWithLog, string) {
		t.Helper()
		cs := connect(t, cfg)
		res := call(t, cs, mcp.ToolGetAttestation, map[string]any{"pda": pda})
		var out attestationWithLog
		structured(t, res, &out)
		if out.PDA != pda {
			t.Fatalf("answer for %s, asked %s", out.PDA, pda)
		}
		return out, text(res)
	}
	out, txt := get(mcp.Config{APIURL: node.Root, LogKey: lg.VerifierKey}, pda)
	idx, _ := lg.Env.Store.LogIndexes(ctx, []string{pda})
	if out.Log.Status != "verified" || out.Log.LeafIndex == nil || *out.Log.LeafIndex != idx[pda] || *out.Log.TreeSize != 20 ||
		out.Log.KeyName != "attestd.test/log" || out.Log.KeySource != "pinned" {
		t.Fatalf("pinned key: %+v", out.Log)
	}
	if want := "transparency log: in the log at index " + strconv.FormatInt(idx[pda], 10) + " of 20, verified"; !strings.Contains(txt, want) {
		t.Fatalf("text lacks %q:\n%s", want, txt)
	}
	if out, _ := get(mcp.Config{APIURL: node.Root}, pda); out.Log.Status != "verified" || out.Log.KeySource != "service" {
		t.Fatalf("service key: %+v", out.Log)
	}
	if out, txt := get(mcp.Config{APIURL: node.Root, LogKey: other.VerifierKey}, pda); out.Log.Status != "failed" ||
		!strings.Contains(out.Log.Reason, "checkpoint signature invalid") || !strings.Contains(txt, "VERIFICATION FAILED") {
		t.Fatalf("wrong key: %+v\n%s", out.Log, txt)
	}
	if out, _ := get(mcp.Config{APIURL: proofTamperer(t, node.Root), LogKey: lg.VerifierKey}, pda); out.Log.Status != "failed" ||
		!strings.Contains(out.Log.Reason, "inclusion proof invalid") {
		t.Fatalf("tampered proof: %+v", out.Log)
	}
	if out, txt := get(mcp.Config{APIURL: node.Root, LogKey: lg.VerifierKey}, recs[0].PDA); out.Log.Status != "not_logged" ||
		out.Log.LeafIndex != nil || !strings.Contains(txt, "not yet logged") {
		t.Fatalf("confirmed: %+v\n%s", out.Log, txt)
	}
	if out, _ := get(mcp.Config{APIURL: bare.Root, LogKey: lg.VerifierKey}, pda); out.Log.Status != "unavailable" {
		t.Fatalf("no log: %+v", out.Log)
	}
	// A malformed pinned key is refused at start.
	if _, err := mcp.ConfigFromEnv(func(k string) string {
		if k == mcp.EnvLogKey {
			return "nonsense"
		}
		return ""
	}); err == nil || !strings.Contains(err.Error(), mcp.EnvLogKey) {
		t.Fatalf("malformed %s: %v", mcp.EnvLogKey, err)
	}
}
