package main

import (
	"context"
	"encoding/base64"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/logfixture"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/chromedp/chromedp"
)

// TestBrowserLogProof opens the attestation page of an `attestd serve`
// process serving the real log in headless Chromium: the page checks the
// proof and the checkpoint's signature itself (WebCrypto) and says "in the
// log at index N, verified"; through a proxy that tampers with the proof,
// the checkpoint or the attestation it says why it is not verified; a
// confirmed attestation is "not in the log yet".
func TestBrowserLogProof(t *testing.T) {
	t.Parallel()
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
	testenv.WaitFor(t, "a proof", testenv.Patience, func() bool {
		return get(t, api+"/attestations/"+a.PDA+"/proof", "198.18.201.2", "", &proof) == 200
	})

	open := func(base, pda, what string) (result, text string) {
		t.Helper()
		b.do(t, "open "+what, chromedp.Navigate(base+"/#/attestation/"+pda))
		b.waitFor(t, what+": the verdict", `(() => { const s = document.getElementById("log-proof");
			return s && ["verified", "failed", "pending", "off", "error"].includes(s.dataset.result); })()`, 20*time.Second)
		result = eval[string](t, b, `document.getElementById("log-proof").dataset.result`)
		text = eval[string](t, b, `document.getElementById("log-proof").textContent`+plainText)
		return result, text
	}

	// One sentence, then the details (behind a disclosure): the index and
	// the tree's size as every figure is written, the log's key, the
	// transaction to check on chain.
	result, text := open(root, a.PDA, "a logged attestation")
	sentence := eval[string](t, b, `document.querySelector("#log-proof p.log-proof").innerText`+plainText)
	if result != "verified" || !strings.HasPrefix(sentence, "✓ Recorded in the public log; no independent witness") ||
		!strings.Contains(text, "index "+commas(proof.Data.LeafIndex)+" of a tree of 50 entries") ||
		!strings.Contains(text, "attestd.test/log+") || !strings.Contains(text, a.TxSignature) {
		t.Fatalf("logged attestation: %s\n%s\n%s", result, sentence, text)
	}
	if eval[bool](t, b, `document.getElementById("log-details").open`) {
		t.Error("the log's details are open before the reader asks")
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

// TestBrowserLogProofWitnessed: with two witnesses configured (quorum 2),
// the attestation page checks both cosignatures of the checkpoint in the
// browser against the witnesses' keys the node states (/health), says
// "Witnessed by 2 of 2", and offers "Download proof": the tlog-proof,
// which verifies offline; a checkpoint stripped of a cosignature, or with
// one tampered, is not verified, and the page says why.
func TestBrowserLogProofWitnessed(t *testing.T) {
	t.Parallel()
	b := startBrowser(t)
	bin := testenv.BuildAttestd(t)
	e := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 20})
	lg := logfixture.NewServed(t, e, "attestd.test/log")
	keys := lg.AddWitnesses(t, "w1.test/w", "w2.test/w")
	lg.AppendAll(t)
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"DATABASE_URL=" + e.DatabaseURL, "REDIS_URL=" + e.RedisURL, "ATTESTD_REDIS_PREFIX=" + e.Prefix,
		"ATTESTD_METRICS_ADDR=", "ATTESTD_LOG_LEVEL=warn", "ATTESTD_RATE_LIMIT=100000",
		"ATTESTD_LOG_WITNESSES=" + keys[0] + " http://127.0.0.1:9/add-checkpoint," + keys[1] + " http://127.0.0.1:9/add-checkpoint",
		"ATTESTD_LOG_WITNESS_QUORUM=2"}, lg.ProcessEnv()...)
	api, _ := serveProcess(t, bin, env)
	root := strings.TrimSuffix(api, "/api/v1")
	var list struct{ Data []attestation.Attestation }
	get(t, api+"/attestations?limit=10", "198.18.202.1", "", &list)
	a := list.Data[2]
	var proof struct{ Data struct{ LeafIndex int64 } }
	testenv.WaitFor(t, "a proof", testenv.Patience, func() bool {
		return get(t, api+"/attestations/"+a.PDA+"/proof", "198.18.202.2", "", &proof) == 200
	})
	open := func(base, what string) (result, text string) {
		t.Helper()
		b.do(t, "open "+what, chromedp.Navigate(base+"/#/attestation/"+a.PDA))
		b.waitFor(t, what+": the verdict", `(() => { const s = document.getElementById("log-proof");
			return s && ["verified", "failed", "pending", "off", "error"].includes(s.dataset.result); })()`, 20*time.Second)
		return eval[string](t, b, `document.getElementById("log-proof").dataset.result`),
			eval[string](t, b, `document.getElementById("log-proof").textContent`+plainText)
	}
	result, text := open(root, "a witnessed attestation")
	if result != "verified" || !strings.Contains(text, "Recorded in the public log and confirmed by 2 independent witnesses.") ||
		!strings.Contains(text, "index "+commas(proof.Data.LeafIndex)) ||
		!strings.Contains(text, "countersigned by 2 of 2 (2 required)") || !strings.Contains(text, keys[0]) || !strings.Contains(text, keys[1]) {
		t.Fatalf("witnessed attestation: %s\n%s", result, text)
	}
	if w := eval[string](t, b, `document.getElementById("log-proof").dataset.witnessed`); w != "2/2" {
		t.Errorf("data-witnessed %q", w)
	}
	// Download proof: the link's file is the tlog-proof.
	href := eval[string](t, b, `document.querySelector("#log-proof a.log-proof-download").getAttribute("href")`)
	name := eval[string](t, b, `document.querySelector("#log-proof a.log-proof-download").download`)
	if href != "/api/v1/attestations/"+a.PDA+"/proof?format=tlog-proof" || name != a.PDA+".tlog-proof" {
		t.Fatalf("Download proof: href %q, file %q", href, name)
	}
	file, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`fetch(document.querySelector("#log-proof a.log-proof-download").href).then((r) => r.text())`,
		chromedp.EvalAwaitPromise))
	testenv.Must(t, err, "fetch the downloaded proof")
	if !strings.HasPrefix(file, "c2sp.org/tlog-proof@v1\nextra ") || strings.Count(file, "\n— w") != 2 {
		t.Fatalf("the downloaded file is not a cosigned tlog-proof:\n%s", file)
	}
	pf := t.TempDir() + "/" + name
	testenv.Must(t, os.WriteFile(pf, []byte(file), 0o600), "save the proof")
	if out, errOut, code := runCLI(t, bin, "", nil, "verify", "--proof", pf, "--log-key", lg.VerifierKey, "--witness", keys[0], "--witness", keys[1]); code != 0 ||
		!strings.Contains(out, "witnessed by 2 of 2") {
		t.Fatalf("attestd verify --proof on the downloaded file: exit %d\n%s%s", code, out, errOut)
	}
	b.checkPage(t, "attestation log proof witnessed")

	for _, tc := range []struct {
		name, want string
		edit       func(cp string) string
	}{
		{"a cosignature stripped", "Not verified: witnessed by 1 of 2 trusted witnesses (w1.test/w), 2 required", func(cp string) string {
			i := strings.Index(cp, "\n— w2.test/w ")
			j := strings.Index(cp[i+1:], "\n")
			return cp[:i+1] + cp[i+1+j+1:]
		}},
		{"a cosignature tampered", "Not verified: the cosignature by witness w1.test/w does not verify", func(cp string) string {
			i := strings.Index(cp, "\n— w1.test/w ")
			j := i + len("\n— w1.test/w ")
			k := j + strings.Index(cp[j:], "\n")
			raw, _ := base64.StdEncoding.DecodeString(cp[j:k])
			raw[30] ^= 1
			return cp[:j] + base64.StdEncoding.EncodeToString(raw) + cp[k:]
		}},
	} {
		proxy := tamperProxy(t, root, func(path string, body []byte) []byte {
			if !strings.HasSuffix(path, "/proof") {
				return body
			}
			return editData(t, body, func(d map[string]any) { d["checkpoint"] = tc.edit(d["checkpoint"].(string)) })
		})
		if result, text := open(proxy, tc.name); result != "failed" || !strings.Contains(text, tc.want) {
			t.Errorf("%s: %s\n%s", tc.name, result, text)
		}
	}
}
