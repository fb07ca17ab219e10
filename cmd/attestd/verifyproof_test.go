package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/torchwood"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/logfixture"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/translog/logformat"
	"golang.org/x/mod/sumdb/note"
)

// TestVerifyProofFileOffline: a tlog-proof from a real `attestd serve`
// (its checkpoint cosigned by two witnesses with torchwood's cosignature
// signer, the code litewitness signs with) verifies with `attestd verify
// --proof` and nothing else (no URL, no network), and with torchwood's own
// proof checker (cmd/spicy, fed the proof's lines); every tampered variant
// fails with the step named, and a policy the proof does not meet fails.
func TestVerifyProofFileOffline(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	e := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 30})
	lg := logfixture.NewServed(t, e, "attestd.test/log")
	cp := lg.AppendAll(t)
	// Two witnesses cosign the checkpoint (their lines stored as the
	// appender stores what witnesses answer).
	var witnessKeys []string
	var signers []*torchwood.CosignatureSigner
	for _, name := range []string{"w1.test/w", "w2.test/w"} {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		s, err := torchwood.NewCosignatureSigner(name, priv)
		testenv.Must(t, err, "cosigner")
		signers = append(signers, s)
		witnessKeys = append(witnessKeys, s.Verifier().String())
		text, _, _ := strings.Cut(cp.Note, "\n\n")
		signed, err := note.Sign(&note.Note{Text: text + "\n"}, s)
		testenv.Must(t, err, "cosign")
		_, line, _ := strings.Cut(string(signed), "\n\n")
		testenv.Must(t, e.Store.LogCosign(context.Background(), cp.Origin, cp.Size, s.Verifier().String(), line), "store cosignature")
	}
	witnessEnv := "ATTESTD_LOG_WITNESSES=" + witnessKeys[0] + " http://127.0.0.1:9/add-checkpoint," + witnessKeys[1] + " http://127.0.0.1:9/add-checkpoint"
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"DATABASE_URL=" + e.DatabaseURL, "REDIS_URL=" + e.RedisURL, "ATTESTD_REDIS_PREFIX=" + e.Prefix,
		"ATTESTD_METRICS_ADDR=", "ATTESTD_LOG_LEVEL=warn", "ATTESTD_RATE_LIMIT=100000", witnessEnv, "ATTESTD_LOG_WITNESS_QUORUM=2"}, lg.ProcessEnv()...)
	api, _ := serveProcess(t, bin, env)
	var pda string
	testenv.Must(t, e.Store.Pool().QueryRow(context.Background(), `SELECT pda FROM log_leaves WHERE idx = 7`).Scan(&pda), "pda")
	var proof []byte
	testenv.WaitForState(t, "a tlog-proof", testenv.Patience, testenv.Every(100*time.Millisecond, func() (bool, string) {
		req, _ := http.NewRequest(http.MethodGet, api+"/attestations/"+pda+"/proof", nil)
		req.Header.Set("Accept", "text/x-tlog-proof")
		req.Header.Set("X-Forwarded-For", "198.18.201.1")
		res, err := http.DefaultClient.Do(req)
		testenv.Must(t, err, "GET proof")
		proof, _ = io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			if ct := res.Header.Get("Content-Type"); ct != "text/x-tlog-proof" || !strings.Contains(res.Header.Get("Content-Disposition"), pda+".tlog-proof") {
				t.Fatalf("tlog-proof answer: Content-Type %q, Content-Disposition %q", ct, res.Header.Get("Content-Disposition"))
			}
			return true, ""
		}
		return false, fmt.Sprintf("%d %s", res.StatusCode, proof)
	}))
	if !bytes.HasPrefix(proof, []byte("c2sp.org/tlog-proof@v1\nextra ")) || bytes.Count(proof, []byte("\n— ")) != 3 {
		t.Fatalf("not a tlog-proof with the log's signature and two cosignatures:\n%s", proof)
	}
	// ?format=tlog-proof answers the same bytes.
	var same []byte
	{
		req, _ := http.NewRequest(http.MethodGet, api+"/attestations/"+pda+"/proof?format=tlog-proof", nil)
		req.Header.Set("X-Forwarded-For", "198.18.201.1")
		res, err := http.DefaultClient.Do(req)
		testenv.Must(t, err, "GET proof")
		same, _ = io.ReadAll(res.Body)
		res.Body.Close()
	}
	if !bytes.Equal(same, proof) {
		t.Fatalf("?format=tlog-proof and Accept answer differently")
	}
	// Accept is read as RFC 9110 says: names case-insensitively, q-values
	// weighed against JSON, wildcards leaving the JSON default.
	for accept, wantProof := range map[string]bool{
		"TEXT/X-TLOG-PROOF": true, "text/x-tlog-proof;q=0": false, "application/json, text/x-tlog-proof;q=0.5": false,
		"application/json;q=0.4, text/x-tlog-proof;q=0.5": true, "*/*": false, "text/x-tlog-proofs": false,
	} {
		req, _ := http.NewRequest(http.MethodGet, api+"/attestations/"+pda+"/proof", nil)
		req.Header.Set("Accept", accept)
		req.Header.Set("X-Forwarded-For", "198.18.201.1")
		res, err := http.DefaultClient.Do(req)
		testenv.Must(t, err, "GET proof")
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if got := bytes.Equal(b, proof); res.StatusCode != http.StatusOK || got != wantProof ||
			(!wantProof && !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json")) {
			t.Errorf("Accept %q: %d %s, tlog-proof %v, want %v", accept, res.StatusCode, res.Header.Get("Content-Type"), got, wantProof)
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, pda+".tlog-proof")
	testenv.Must(t, os.WriteFile(file, proof, 0o600), "write")
	key := "--log-key=" + lg.VerifierKey
	w1, w2 := "--witness="+witnessKeys[0], "--witness="+witnessKeys[1]
	// Offline: no URL, and an environment without any store.
	out, errOut, code := runCLI(t, bin, dir, nil, "verify", "--proof", file, key, w1, w2)
	if code != 0 || !strings.Contains(out, "verified: "+pda+" is in the log at index 7 of 30") || !strings.Contains(out, "witnessed by 2 of 2") {
		t.Fatalf("verify --proof: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("attestd verify --proof:\n%s", out)

	// torchwood's own checker: spicy verifies a file against "index, the
	// proof lines, a blank line, the checkpoint"; the file is the leaf.
	spicy := filepath.Join(dir, "spicy")
	build := exec.Command("go", "build", "-o", spicy, "filippo.io/torchwood/cmd/spicy")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build torchwood's spicy: %v\n%s", err, b)
	}
	p, err := logformat.ParseProof(proof)
	testenv.Must(t, err, "parse")
	leafFile := filepath.Join(dir, "leaf")
	testenv.Must(t, os.WriteFile(leafFile, p.Extra, 0o600), "leaf")
	_, rest, _ := bytes.Cut(proof, []byte("\nindex "))
	testenv.Must(t, os.WriteFile(leafFile+".spicy", append([]byte("index "), rest...), 0o600), "spicy proof")
	if b, err := exec.Command(spicy, "-verify", lg.VerifierKey, leafFile).CombinedOutput(); err != nil {
		t.Fatalf("torchwood's spicy refuses the proof: %v\n%s", err, b)
	}
	testenv.Must(t, os.WriteFile(leafFile, append(append([]byte(nil), p.Extra...), ' '), 0o600), "tampered leaf")
	if b, err := exec.Command(spicy, "-verify", lg.VerifierKey, leafFile).CombinedOutput(); err == nil {
		t.Fatalf("torchwood's spicy accepts another leaf:\n%s", b)
	}

	// Tampered proofs and unmet policies: exit 1, the step named.
	_, otherKey, _ := note.GenerateKey(rand.Reader, "attestd.test/log")
	hashLine := strings.Split(string(proof), "\n")[3]
	flipped := "A" + hashLine[1:]
	if hashLine[0] == 'A' {
		flipped = "B" + hashLine[1:]
	}
	cases := []struct {
		name string
		body string
		args []string
		want string
	}{
		{"a proof hash changed", strings.Replace(string(proof), hashLine, flipped, 1), nil, "FAIL  proof: inclusion proof"},
		{"another index", strings.Replace(string(proof), "\nindex 7\n", "\nindex 8\n", 1), nil, "FAIL  proof: inclusion proof"},
		{"another leaf", strings.Replace(string(proof), "extra ", "extra AAAA", 1), nil, "FAIL"},
		{"the root changed", strings.Replace(string(proof), "\n30\n", "\n31\n", 1), nil, "FAIL  checkpoint"},
		{"a cosignature removed", removeLine(string(proof), "— w2.test/w "), nil, "FAIL  witnesses"},
		{"a cosignature altered", alterSig(string(proof), "— w1.test/w "), nil, "FAIL  checkpoint"},
		{"another log key", string(proof), []string{"--log-key=" + otherKey, w1, w2}, "FAIL  checkpoint"},
		{"a witness the proof lacks", string(proof), []string{key, w1, "--witness=" + func() string {
			_, priv, _ := ed25519.GenerateKey(rand.Reader)
			s, _ := torchwood.NewCosignatureSigner("w3.test/w", priv)
			return s.Verifier().String()
		}()}, "FAIL  witnesses"},
		{"truncated", string(proof[:len(proof)/2]), nil, "FAIL"},
		{"not a proof", "hello\n\nworld", nil, "FAIL  parse"},
		{"empty", "", nil, "FAIL  parse"},
		{"nul bytes", strings.Replace(string(proof), "index 7", "index 7\x00", 1), nil, "FAIL"},
		{"leading zero index", strings.Replace(string(proof), "\nindex 7\n", "\nindex 07\n", 1), nil, "FAIL  parse"},
		{"64 proof lines", strings.Replace(string(proof), "\n\n", strings.Repeat("\n"+hashLine, 64)+"\n\n", 1), nil, "FAIL  parse"},
	}
	for _, c := range cases {
		f := filepath.Join(dir, "case.tlog-proof")
		testenv.Must(t, os.WriteFile(f, []byte(c.body), 0o600), "write")
		args := c.args
		if args == nil {
			args = []string{key, w1, w2}
		}
		out, errOut, code := runCLI(t, bin, dir, nil, append([]string{"verify", "--proof", f}, args...)...)
		if code != 1 || !strings.Contains(out, c.want) {
			t.Errorf("%s: exit %d, want 1 and %q\n%s%s", c.name, code, c.want, out, errOut)
		}
	}
	// The policy may ask for fewer: one of two witnesses.
	if out, _, code := runCLI(t, bin, dir, nil, "verify", "--proof", file, key, w1, w2, "--quorum", "1"); code != 0 {
		t.Fatalf("--quorum 1: exit %d\n%s", code, out)
	}
	// Usage mistakes: exit 2.
	for _, args := range [][]string{{"verify", "--proof", file}, {"verify", "--proof", file, key, "--quorum", "3", w1},
		{"verify", "--proof", file, key, "--witness", "nope"}, {"verify", "--proof", file, key, pda}} {
		if _, _, code := runCLI(t, bin, dir, nil, args...); code != exitUsage {
			t.Errorf("attestd %s: exit %d, want %d", strings.Join(args, " "), code, exitUsage)
		}
	}
	t.Logf("%d tampered proofs and unmet policies refused", len(cases)+1)
	_ = signers
}

func removeLine(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func alterSig(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			b := []byte(l)
			j := len(b) - 6
			if b[j] == 'A' {
				b[j] = 'B'
			} else {
				b[j] = 'A'
			}
			lines[i] = string(b)
		}
	}
	return strings.Join(lines, "\n")
}
