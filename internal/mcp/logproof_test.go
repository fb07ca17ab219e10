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
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/logfixture"
	"github.com/attestd/attestd/internal/testing/testenv"
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
	p := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Header.Del("Accept-Encoding")
	}}
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

// TestGetAttestationWitnessPolicy: with ATTESTD_MCP_LOG_WITNESSES,
// get_attestation verifies only a checkpoint that quorum of those
// witnesses cosigned (each cosignature checked with its key), names them
// ("witnessed by k of n"), and fails naming the policy otherwise, with the
// pinned key or the service's.
func TestGetAttestationWitnessPolicy(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 12})
	lg := logfixture.NewServed(t, env, "attestd.test/log")
	keys := lg.AddWitnesses(t, "w1.test/w", "w2.test/w")
	lg.AppendAll(t)
	node := env.StartNode(t, lg.NodeOptions(t, nil))
	stranger := logfixture.NewServed(t, env, "attestd.test/log").AddWitnesses(t, "w3.test/w")[0] // cosigned nothing
	impostor := logfixture.NewServed(t, env, "attestd.test/log").AddWitnesses(t, "w1.test/w")[0] // w1's name, another key
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	api, err := client.New(node.Root)
	testenv.Must(t, err, "client")
	var pda string
	testenv.WaitForState(t, "a proof served", testenv.Patience, testenv.Every(50*time.Millisecond, func() (bool, string) {
		page, err := api.ListAttestations(ctx, client.ListParams{Limit: 1})
		testenv.Must(t, err, "list")
		pda = page.Data[0].PDA
		if _, err := api.LogProof(ctx, pda); err != nil {
			return false, err.Error()
		}
		return true, ""
	}))
	type policy struct {
		keys   []string
		quorum int
	}
	for _, c := range []struct {
		name    string
		pinned  bool
		p       policy
		status  string
		by      []string
		text    string // in the tool's text
		failing string // in the reason
	}{
		{"both of both", true, policy{keys, 2}, "verified", []string{"w1.test/w", "w2.test/w"}, "witnessed by 2 of 2 (w1.test/w, w2.test/w), 2 required", ""},
		{"quorum 0 means all", true, policy{keys, 0}, "verified", []string{"w1.test/w", "w2.test/w"}, "witnessed by 2 of 2", ""},
		{"service key, both", false, policy{keys, 2}, "verified", []string{"w1.test/w", "w2.test/w"}, "witnessed by 2 of 2", ""},
		{"one of a stranger and w2", true, policy{[]string{stranger, keys[1]}, 1}, "verified", []string{"w2.test/w"}, "witnessed by 1 of 2 (w2.test/w), 1 required", ""},
		{"two of a stranger and w2", true, policy{[]string{stranger, keys[1]}, 2}, "failed", nil, "VERIFICATION FAILED", "cosigned by 1 of the 2 trusted witnesses"},
		{"stranger alone", false, policy{[]string{stranger}, 1}, "failed", nil, "VERIFICATION FAILED", "checkpoint not witnessed"},
		{"w1's name with another key", true, policy{[]string{impostor}, 1}, "failed", nil, "VERIFICATION FAILED", "checkpoint not witnessed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := mcp.Config{APIURL: node.Root, LogWitnesses: c.p.keys, LogQuorum: c.p.quorum}
			if c.pinned {
				cfg.LogKey = lg.VerifierKey
			}
			cs := connect(t, cfg)
			res := call(t, cs, mcp.ToolGetAttestation, map[string]any{"pda": pda})
			var out struct {
				Log struct {
					Status, Reason      string
					Witnesses, Quorum   int
					WitnessedBy         []string
					LeafIndex, TreeSize *int64
				}
			}
			structured(t, res, &out)
			if out.Log.Status != c.status || strings.Join(out.Log.WitnessedBy, ",") != strings.Join(c.by, ",") ||
				out.Log.Witnesses != len(c.p.keys) || !strings.Contains(text(res), c.text) || !strings.Contains(out.Log.Reason, c.failing) {
				t.Fatalf("%+v\n%s", out.Log, text(res))
			}
		})
	}
	// Policies refused at start, naming the variable.
	for name, vars := range map[string]map[string]string{
		"malformed key":       {mcp.EnvWitnesses: "nonsense"},
		"a log key":           {mcp.EnvWitnesses: lg.VerifierKey + "x"},
		"quorum 0":            {mcp.EnvWitnesses: keys[0], mcp.EnvQuorum: "0"},
		"quorum over n":       {mcp.EnvWitnesses: keys[0] + "," + keys[1], mcp.EnvQuorum: "3"},
		"quorum not a number": {mcp.EnvWitnesses: keys[0], mcp.EnvQuorum: "all"},
		"quorum alone":        {mcp.EnvQuorum: "1"},
		"duplicate":           {mcp.EnvWitnesses: keys[0] + "," + keys[0], mcp.EnvLogKey: lg.VerifierKey},
		"NUL in a key":        {mcp.EnvWitnesses: keys[0][:10] + "\x00" + keys[0][10:], mcp.EnvLogKey: lg.VerifierKey},
		"oversized":           {mcp.EnvWitnesses: strings.Repeat(keys[0]+"x,", 2000), mcp.EnvLogKey: lg.VerifierKey},
	} {
		cfg, err := mcp.ConfigFromEnv(func(k string) string { return vars[k] })
		if err == nil {
			_, err = mcp.New(cfg)
		}
		if err == nil || (!strings.Contains(err.Error(), mcp.EnvWitnesses) && !strings.Contains(err.Error(), mcp.EnvQuorum)) {
			t.Errorf("%s: %v, want a refusal naming the variable", name, err)
		}
	}
}
