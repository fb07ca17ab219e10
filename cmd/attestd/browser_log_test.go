package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/apptest"
	"github.com/attestd/attestd/internal/logfixture"
	"github.com/attestd/attestd/internal/seed"
	"github.com/attestd/attestd/internal/testenv"
	"github.com/attestd/attestd/store"
	"github.com/chromedp/chromedp"
)

// TestBrowserLogProof opens the attestation page of an `attestd serve`
// process serving the real log in headless Chromium: the page checks the
// proof and the checkpoint's signature itself (WebCrypto) and says "in the
// log at index N, verified"; through a proxy that tampers with the proof,
// the checkpoint or the attestation it says why it is not verified; a
// confirmed attestation is "not in the log yet".
func TestBrowserLogProof(t *testing.T) {
	b := startBrowser(t)
	bin := testenv.BuildAttestd(t)
	e := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 50})
	lg := logfixture.NewServed(t, e, "attestd.test/log")
	lg.AppendAll(t)
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"DATABASE_URL=" + e.DatabaseURL, "REDIS_URL=" + e.RedisURL, "ATTESTD_REDIS_PREFIX=" + e.Prefix,
		"ATTESTD_METRICS_ADDR=", "ATTESTD_LOG_LEVEL=warn", "ATTESTD_RATE_LIMIT=100000"}, lg.ProcessEnv()...)
	api, _ := serveProcess(t, bin, env)
	root := strings.TrimSuffix(api, "/api/v1")
	var list struct{ Data []attestation.Attestation }
	get(t, api+"/attestations?limit=10", "198.18.201.1", "", &list)
	a := list.Data[3]
	var proof struct {
		Data struct {
			LeafIndex, TreeSize int64
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for get(t, api+"/attestations/"+a.PDA+"/proof", "198.18.201.2", "", &proof) != 200 {
		if time.Now().After(deadline) {
			t.Fatal("no proof within 15 s")
		}
		time.Sleep(100 * time.Millisecond)
	}

	open := func(base, pda, what string) (result, text string) {
		t.Helper()
		b.do(t, "open "+what, chromedp.Navigate(base+"/#/attestation/"+pda))
		b.waitFor(t, what+": the verdict", `(() => { const s = document.getElementById("log-proof");
			return s && ["verified", "failed", "pending", "off", "error"].includes(s.dataset.result); })()`, 20*time.Second)
		result = eval[string](t, b, `document.getElementById("log-proof").dataset.result`)
		text = eval[string](t, b, `document.getElementById("log-proof").innerText`)
		return result, text
	}

	result, text := open(root, a.PDA, "a logged attestation")
	want := fmt.Sprintf("In the log at index %d, verified", proof.Data.LeafIndex)
	if result != "verified" || !strings.Contains(text, want) || !strings.Contains(text, "tree of 50 leaves") ||
		!strings.Contains(text, "signed by attestd.test/log") || !strings.Contains(text, a.TxSignature) {
		t.Fatalf("logged attestation: %s\n%s", result, text)
	}
	b.checkPage(t, "attestation log proof verified")

	for _, tc := range []struct {
		name, path, want string
		edit             func(d map[string]any)
	}{
		{"tampered inclusion proof", "/proof", "Not verified: the inclusion proof does not lead to the checkpoint's root hash", func(d map[string]any) {
			p := d["inclusionProof"].([]any)
			h, _ := base64.StdEncoding.DecodeString(p[0].(string))
			h[5] ^= 1
			p[0] = base64.StdEncoding.EncodeToString(h)
		}},
		{"tampered checkpoint", "/proof", "Not verified: the checkpoint's signature by key attestd.test/log does not verify", func(d map[string]any) {
			d["checkpoint"] = strings.Replace(d["checkpoint"].(string), "\n50\n", "\n51\n", 1)
		}},
		{"tampered leaf", "/proof", "Not verified: the proof's leaf is not the canonical JSON", func(d map[string]any) {
			leaf, _ := base64.StdEncoding.DecodeString(d["leaf"].(string))
			d["leaf"] = base64.StdEncoding.EncodeToString(append(leaf, ' '))
		}},
		{"tampered attestation", "/attestations/" + a.PDA, "Not verified: the proof's leaf is not the canonical JSON", func(d map[string]any) {
			d["timestamp"] = "2020-01-01T00:00:00Z"
		}},
	} {
		proxy := tamperProxy(t, root, func(path string, body []byte) []byte {
			if !strings.HasSuffix(path, tc.path) {
				return body
			}
			return editData(t, body, tc.edit)
		})
		result, text := open(proxy, a.PDA, tc.name)
		if result != "failed" || !strings.Contains(text, tc.want) || strings.Contains(text, "verified") && !strings.Contains(text, "Not verified") {
			t.Errorf("%s: %s\n%s", tc.name, result, text)
		}
		if tc.name == "tampered inclusion proof" {
			b.checkPage(t, "attestation log proof failed")
		}
	}

	// A confirmed attestation is not in the log yet.
	recs := seed.NewAttestations(e.Seeded.Agents, 1, time.Now(), 1_000_000, 77)
	recs[0].Commitment = attestation.Confirmed
	_, err := e.Store.Apply(context.Background(), &store.Batch{Attestations: recs})
	testenv.Must(t, err, "apply")
	if result, text := open(root, recs[0].PDA, "a confirmed attestation"); result != "pending" || !strings.Contains(text, "Not in the log yet") {
		t.Errorf("confirmed attestation: %s\n%s", result, text)
	}
}
