package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/internal/translog"
	"github.com/attestd/attestd/translog/logformat"
	"golang.org/x/mod/sumdb/tlog"
)

const verifyUsage = `usage:
  attestd verify PDA --log-key KEY [--url URL] [--origin ORIGIN]
      check that the attestation PDA, as the service serves it, is in its transparency log: fetch it and its
      proof, recompute the leaf, check the checkpoint's signature with KEY (the operator's verifier key,
      name+hash+base64, got out of band) and the inclusion proof. Exits 1 on any mismatch.
  attestd verify --monitor --log-key KEY [--url URL] [--state FILE] [--watch INTERVAL]
      fetch the latest checkpoint and prove it extends the one seen before (kept in FILE), once or every
      INTERVAL. Exits 3 on a fork or a rollback (both signed checkpoints are printed: the evidence).
  attestd verify --dataset FILE [--manifest M] --log-key KEY [--witness KEY]... [--quorum N] [--url URL]
      check a day's dataset file (DAY.parquet, from URL/dataset/): its manifest's checkpoint is signed with KEY
      and cosigned by the witnesses, the file is the one the manifest describes (SHA-256), and its rows, in
      log order, rebuild the checkpoint's root by the manifest's range proof. The manifest is M, or fetched
      from URL/dataset/DAY.json (DAY: the file's own). With a URL (given, or the manifest fetched), a row
      that does not give the log's leaf is named from the log's tiles. Exits 1 on any mismatch.`

// exitFork is the status of a monitor that saw a fork or a rollback.
const exitFork = 3

// forkExit is a fork or rollback seen by verify --monitor: main exits
// with exitFork, without printing it again (the FORK lines said it).
type forkExit struct{ err error }

func (e forkExit) Error() string  { return e.err.Error() }
func (e forkExit) Unwrap() error  { return e.err }
func (e forkExit) ExitCode() int  { return exitFork }
func (e forkExit) Reported() bool { return true }

// reportedFailure is a check that failed and that its FAIL line on the
// command's output already told: main exits 1 without printing it again.
type reportedFailure struct{ err error }

func (e reportedFailure) Error() string  { return e.err.Error() }
func (e reportedFailure) Unwrap() error  { return e.err }
func (e reportedFailure) Reported() bool { return true }

func runVerify(ctx context.Context, args []string) error {
	fs := newFlags("verify")
	key := fs.String("log-key", "", "the log's verifier key (name+hash+base64), as the operator published it (required)")
	base := fs.String("url", client.DefaultBaseURL, "the service's root URL (or its /api/v1 base)")
	origin := fs.String("origin", "", "the checkpoint origin to expect (default: the key's name)")
	monitor := fs.Bool("monitor", false, "monitor the log: prove the latest checkpoint extends the last one seen")
	state := fs.String("state", "", "with --monitor: the file keeping the last checkpoint seen (default: ~/.attestd/log-<key name>-<key hash>.checkpoint)")
	watch := fs.Duration("watch", 0, "with --monitor: check again every INTERVAL (e.g. 30s) until interrupted")
	timeout := fs.Duration("timeout", 30*time.Second, "bound on each request")
	proofFile := fs.String("proof", "", "check a C2SP tlog-proof file offline (GET /api/v1/attestations/PDA/proof?format=tlog-proof): no network; '-' reads standard input")
	datasetFile := fs.String("dataset", "", "check a day's dataset file (DAY.parquet) against its manifest and the log")
	manifestFile := fs.String("manifest", "", "with --dataset: the file's manifest (default: fetched from URL/dataset/DAY.json)")
	var witnesses stringList
	fs.Var(&witnesses, "witness", "a witness's cosignature verifier key (name+keyid+base64) the checkpoint must carry (of a proof, a PDA's, the monitor's or a dataset manifest's); repeat for each")
	quorum := fs.Int("quorum", -1, "how many of the --witness keys must have cosigned (default: all of them)")
	// The PDA may come before the flags (attestd verify PDA --log-key K).
	var pdas []string
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		pdas, args = append(pdas, args[0]), args[1:]
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	pdas = append(pdas, fs.Args()...)
	if err := required("verify", "log-key", *key); err != nil {
		return err
	}
	if *proofFile != "" {
		if *monitor || len(pdas) > 0 || *datasetFile != "" {
			return usageErrorf("verify: --proof checks the file alone: no PDA, no --monitor, no --dataset")
		}
		return verifyProofFile(safeWriter{os.Stdout}, *proofFile, *key, witnesses, *quorum)
	}
	if *quorum >= 0 && len(witnesses) == 0 {
		return usageErrorf("verify: --quorum goes with --witness")
	}
	v, err := logVerifier(*key, *origin, witnesses, *quorum)
	if err != nil {
		return err
	}
	if *datasetFile != "" {
		if *monitor || len(pdas) > 0 || *state != "" || *watch != 0 {
			return usageErrorf("verify: --dataset checks the file alone: no PDA, no --monitor")
		}
		urlSet := false
		fs.Visit(func(f *flag.Flag) { urlSet = urlSet || f.Name == "url" })
		return verifyDataset(ctx, safeWriter{os.Stdout}, datasetCheck{file: *datasetFile, manifest: *manifestFile, url: *base,
			online: urlSet || *manifestFile == "", timeout: *timeout, v: v, witnesses: len(witnesses)})
	}
	if *manifestFile != "" {
		return usageErrorf("verify: --manifest goes with --dataset")
	}
	c, err := client.New(*base, client.WithTimeout(*timeout))
	if err != nil {
		return usageErrorf("verify: --url: %v", err)
	}
	if *monitor {
		if len(pdas) > 0 {
			return usageErrorf("verify: --monitor takes no PDA")
		}
		if *watch < 0 {
			return usageErrorf("verify: --watch must be positive")
		}
		file := *state
		if file == "" {
			if file, err = defaultMonitorState(*key); err != nil {
				return err
			}
		}
		return runMonitor(ctx, safeWriter{os.Stdout}, &client.Monitor{Client: c, Verifier: v, Store: client.FileStore{Path: file}}, file, *watch)
	}
	if *state != "" || *watch != 0 {
		return usageErrorf("verify: --state and --watch go with --monitor")
	}
	if len(pdas) != 1 {
		return usageErrorf("verify: name one attestation PDA (or give --monitor)")
	}
	return verifyAttestation(ctx, safeWriter{os.Stdout}, c, v, pdas[0])
}

// logVerifier is the verifier of --log-key (expecting --origin) with the
// client's own witness policy: the checkpoint (of a proof, the monitor's
// or a dataset manifest's) must carry quorum (default: all) of the
// --witness keys' cosignatures.
func logVerifier(key, origin string, witnesses []string, quorum int) (*client.LogVerifier, error) {
	v, err := client.NewLogVerifier(key)
	if err != nil {
		return nil, usageErrorf("verify: --log-key: %v", err)
	}
	if origin != "" {
		v = v.WithOrigin(origin)
	}
	if len(witnesses) > 0 {
		q := quorum
		if q < 0 {
			q = len(witnesses)
		}
		if v, err = v.WithWitnesses(q, witnesses...); err != nil {
			return nil, usageErrorf("verify: %v", err)
		}
	}
	return v, nil
}

// safeWriter writes what a service sent (ids, messages, notes) with every
// control character but the newline, and every bidirectional override,
// replaced by '?': a hostile service cannot drive the terminal or
// disguise a line.
type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, cleanText(string(p), true)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// cleanText replaces control characters (but '\n' when keepNewline) and
// bidirectional formatting characters with '?'.
func cleanText(s string, keepNewline bool) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' && keepNewline:
			return r
		case unicode.IsControl(r), r == utf8.RuneError, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
			return '?'
		}
		return r
	}, s)
}

// cleanError is err with a message safe for a terminal.
type cleanError struct{ err error }

func (e cleanError) Error() string { return cleanText(e.err.Error(), false) }
func (e cleanError) Unwrap() error { return e.err }

// failf prints a FAIL line and returns the error: one main does not
// print again.
func failf(w io.Writer, err error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(w, "FAIL  %s: %v\n", msg, err)
	return reportedFailure{cleanError{fmt.Errorf("%s: %w", msg, err)}}
}

// verifyAttestation prints each step of checking pda's inclusion.
func verifyAttestation(ctx context.Context, w io.Writer, c *client.Client, v *client.LogVerifier, pda string) error {
	a, err := c.GetAttestation(ctx, pda)
	if err != nil {
		return failf(w, err, "fetch attestation %s", pda)
	}
	if a.PDA != pda {
		return failf(w, client.ErrLeafMismatch, "asked for attestation %s, the service served %s", pda, a.PDA)
	}
	fmt.Fprintf(w, "ok    fetched attestation %s from %s (%s by agent %s, slot %d, %s)\n",
		a.PDA, c.BaseURL(), a.ActionType, a.AgentPDA, a.Slot, a.Commitment)
	p, err := c.LogProof(ctx, pda)
	if err != nil {
		if errors.Is(err, client.ErrNotLogged) {
			return failf(w, err, "not in the log yet (an attestation is logged once finalized)")
		}
		return failf(w, err, "fetch the inclusion proof")
	}
	leaf, err := client.LeafBytes(a)
	if err != nil {
		return failf(w, err, "recompute the leaf")
	}
	if !bytes.Equal(leaf, p.Leaf) {
		return failf(w, client.ErrLeafMismatch, "the proof's leaf %q is not the canonical JSON of the attestation served, %q", p.Leaf, leaf)
	}
	fmt.Fprintf(w, "ok    leaf bytes match the attestation as served (RFC 8785 JSON, %d bytes)\n", len(leaf))
	cp, err := v.OpenCheckpoint([]byte(p.Checkpoint))
	if err != nil {
		return failf(w, err, "checkpoint")
	}
	fmt.Fprintf(w, "ok    checkpoint signature OK by key %s (origin %s, tree size %d, root %s)\n", cp.KeyName, cp.Origin, cp.Size, cp.Hash)
	if len(cp.Witnesses) > 0 {
		fmt.Fprintf(w, "ok    witnessed by %s\n", strings.Join(cp.Witnesses, ", "))
	}
	in, err := client.VerifyInclusion(v, a, p)
	if err != nil {
		return failf(w, err, "inclusion proof")
	}
	fmt.Fprintf(w, "ok    inclusion proof OK: leaf at index %d of a tree of size %d (%d hashes)\n", in.LeafIndex, in.TreeSize, len(p.InclusionProof))
	fmt.Fprintf(w, "note  the log proves what this service served, not that the chain holds it: ask any Solana RPC for\n"+
		"      transaction %s at slot %d (getTransaction)\n", in.TxSignature, in.Slot)
	fmt.Fprintf(w, "verified: %s is in the log at index %d of %d\n", a.PDA, in.LeafIndex, in.TreeSize)
	return nil
}

// defaultMonitorState is ~/.attestd/log-<name>-<hash>.checkpoint for key.
func defaultMonitorState(key string) (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", usageErrorf("verify: give --state FILE (no home directory: %v)", err)
	}
	parts := strings.SplitN(key, "+", 3)
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, parts[0]+"-"+parts[1])
	dir := filepath.Join(home, ".attestd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("monitor state: %w", err)
	}
	return filepath.Join(dir, "log-"+name+".checkpoint"), nil
}

// runMonitor runs the monitor once, or every interval until ctx ends.
func runMonitor(ctx context.Context, w io.Writer, m *client.Monitor, file string, interval time.Duration) error {
	report := func(res *client.MonitorResult, err error) error {
		var fe *client.ForkError
		switch {
		case errors.As(err, &fe):
			fmt.Fprintf(w, "FORK  %v\n", err)
			fmt.Fprintf(w, "      checkpoint seen before (kept in %s):\n%s\n      checkpoint served now:\n%s", file,
				indent(fe.Previous.Note), indent(fe.Current.Note))
			return forkExit{cleanError{err}}
		case err != nil:
			fmt.Fprintf(w, "FAIL  %v\n", err)
			return reportedFailure{cleanError{err}}
		case res.Previous == nil:
			fmt.Fprintf(w, "ok    first checkpoint: tree size %d, root %s, signed by %s; saved to %s\n",
				res.Current.Size, res.Current.Hash, res.Current.KeyName, file)
		case res.Current.Size == res.Previous.Size:
			fmt.Fprintf(w, "ok    unchanged: tree size %d, root %s\n", res.Current.Size, res.Current.Hash)
		default:
			fmt.Fprintf(w, "ok    tree size %d extends %d seen before (consistency proof OK), root %s, signed by %s\n",
				res.Current.Size, res.Previous.Size, res.Current.Hash, res.Current.KeyName)
		}
		return nil
	}
	if interval == 0 {
		return report(m.Check(ctx))
	}
	var stop error
	err := m.Watch(ctx, interval, func(res *client.MonitorResult, err error) bool {
		if ctx.Err() != nil {
			return false
		}
		if r := report(res, err); errors.As(r, new(forkExit)) {
			stop = r
			return false
		}
		return true
	})
	if stop != nil {
		return stop
	}
	if errors.Is(err, context.Canceled) {
		return nil // interrupted
	}
	return err
}

// indent prefixes every line of a note with six spaces.
func indent(b []byte) string {
	lines := strings.SplitAfter(string(b), "\n")
	var sb strings.Builder
	for _, l := range lines {
		if l != "" {
			sb.WriteString("      " + l)
		}
	}
	return sb.String()
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// verifyProofFile checks a tlog-proof offline, printing each step: the
// log's signature (any of the keys, comma-separated during a rotation),
// the witnesses' cosignatures against the quorum, and the inclusion of
// the leaf the proof carries, which it then names.
func verifyProofFile(w io.Writer, file, keys string, witnesses []string, quorum int) error {
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(io.LimitReader(os.Stdin, logformat.MaxProofSize+1))
	} else {
		var f *os.File
		if f, err = os.Open(file); err == nil {
			b, err = io.ReadAll(io.LimitReader(f, logformat.MaxProofSize+1))
			f.Close()
		}
	}
	if err != nil {
		return failf(w, err, "read %s", file)
	}
	var policy logformat.ProofPolicy
	lk, err := translog.ParseKeys(keys)
	if err != nil {
		return usageErrorf("verify: --log-key: %v", err)
	}
	for _, k := range lk {
		policy.Log = append(policy.Log, k.Verifier)
	}
	for _, k := range witnesses {
		v, err := logformat.ParseCosignatureKey(k)
		if err != nil {
			return usageErrorf("verify: --witness %s: %v", cleanText(k, false), err)
		}
		policy.Witnesses = append(policy.Witnesses, v)
	}
	policy.Quorum = quorum
	if quorum < 0 {
		policy.Quorum = len(witnesses)
	}
	if policy.Quorum > len(witnesses) {
		return usageErrorf("verify: --quorum %d with %d --witness keys", quorum, len(witnesses))
	}
	p, err := logformat.ParseProof(b)
	if err != nil {
		return failf(w, err, "parse %s", file)
	}
	fmt.Fprintf(w, "ok    read a tlog-proof (index %d, %d hashes, %d bytes of leaf)\n", p.Index, len(p.Hashes), len(p.Extra))
	v, err := logformat.VerifyProof(p, nil, policy)
	switch {
	case errors.Is(err, logformat.ErrProofSignature):
		return failf(w, err, "checkpoint")
	case errors.Is(err, logformat.ErrProofWitnesses):
		return failf(w, err, "witnesses")
	case err != nil:
		return failf(w, err, "proof")
	}
	fmt.Fprintf(w, "ok    checkpoint signature OK by key %s (origin %s, tree size %d, root %s)\n",
		v.LogKey, v.Checkpoint.Origin, v.Checkpoint.Size, base64.StdEncoding.EncodeToString(v.Checkpoint.Root[:]))
	fmt.Fprintf(w, "ok    witnessed by %d of %d (%s), the policy wants %d\n", len(v.Witnesses), len(witnesses), strings.Join(v.Witnesses, ", "), policy.Quorum)
	fmt.Fprintf(w, "ok    inclusion proof OK: the leaf is at index %d of a tree of size %d\n", v.Index, v.Checkpoint.Size)
	var leaf struct {
		PDA         string `json:"pda"`
		AgentPDA    string `json:"agentPda"`
		ActionType  string `json:"actionType"`
		ActionHash  string `json:"actionHash"`
		TxSignature string `json:"txSignature"`
		Slot        uint64 `json:"slot"`
		Timestamp   string `json:"timestamp"`
	}
	if err := json.Unmarshal(v.Leaf, &leaf); err != nil || leaf.PDA == "" {
		return failf(w, errors.New("not an attestation leaf"), "the proof's leaf")
	}
	fmt.Fprintf(w, "ok    the leaf is attestation %s: %s by agent %s, action hash %s, %s\n", leaf.PDA, leaf.ActionType, leaf.AgentPDA, leaf.ActionHash, leaf.Timestamp)
	fmt.Fprintf(w, "note  checked offline; the log proves what the service served, not that the chain holds it: ask any\n"+
		"      Solana RPC for transaction %s at slot %d (getTransaction)\n", leaf.TxSignature, leaf.Slot)
	fmt.Fprintf(w, "verified: %s is in the log at index %d of %d\n", leaf.PDA, v.Index, v.Checkpoint.Size)
	return nil
}

// datasetCheck is what verify --dataset checks.
type datasetCheck struct {
	file, manifest string
	url            string // --url
	// online: read the log's tiles to name a row that differs (--url
	// given, or the manifest fetched).
	online    bool
	timeout   time.Duration
	v         *client.LogVerifier
	witnesses int // --witness keys given
}

// maxManifest bounds a fetched or read manifest.
const maxManifest = 1 << 20

// verifyDataset checks a day's file with dataset.VerifyFile and prints
// the outcome: one line, naming the row when one is wrong.
func verifyDataset(ctx context.Context, w io.Writer, c datasetCheck) error {
	root, site, err := datasetURLs(c.url)
	if err != nil {
		return usageErrorf("verify: --url: %v", err)
	}
	if c.timeout <= 0 {
		return usageErrorf("verify: --timeout must be positive")
	}
	f, err := os.Open(c.file)
	if err != nil {
		return failf(w, err, "open the dataset file")
	}
	defer f.Close()
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return failf(w, err, "read %s", c.file)
	}
	m, err := c.readManifest(ctx, w, f, size, root)
	if err != nil {
		return err
	}
	opt := dataset.VerifyOptions{Verifier: c.v, Manifest: m, FileSHA256: hex.EncodeToString(h.Sum(nil))}
	if c.online {
		opt.Tiles = &datasetTiles{site: site, origin: c.v.Origin(), timeout: c.timeout}
	}
	rep, err := dataset.VerifyFile(ctx, f, size, opt)
	if err != nil {
		return failf(w, err, "%s", c.file)
	}
	by := "signed by the log's key (no --witness given: no cosignature required)"
	if c.witnesses > 0 {
		by = fmt.Sprintf("cosigned by %d of %d witnesses", rep.Witnessed, c.witnesses)
	}
	fmt.Fprintf(w, "verified: %s: %s rows, leaves %s to %s, match the checkpoint of %s leaves %s\n", rep.Day, thousands(rep.Rows),
		thousands(rep.FirstIndex), thousands(rep.LastIndex), thousands(rep.CheckpointSize), by)
	return nil
}

// readManifest reads --manifest, or fetches the manifest of the file's
// day (its own metadata says which) from the node.
func (c datasetCheck) readManifest(ctx context.Context, w io.Writer, f *os.File, size int64, root string) (dataset.Manifest, error) {
	var m dataset.Manifest
	var b []byte
	from := c.manifest
	if from != "" {
		mf, err := os.Open(from)
		if err != nil {
			return m, failf(w, err, "open the manifest")
		}
		b, err = io.ReadAll(io.LimitReader(mf, maxManifest+1))
		mf.Close()
		if err != nil {
			return m, failf(w, err, "read the manifest %s", from)
		}
	} else {
		meta, err := dataset.ReadMeta(f, size)
		if err != nil {
			return m, failf(w, err, "%s: find its day to fetch its manifest (or give --manifest)", c.file)
		}
		from = root + "/dataset/" + dataset.ManifestName(meta.Day)
		if b, err = fetchManifest(ctx, from, c.timeout); err != nil {
			return m, failf(w, err, "fetch the manifest")
		}
		fmt.Fprintf(w, "ok    fetched the manifest %s\n", from)
	}
	if len(b) > maxManifest {
		return m, failf(w, fmt.Errorf("more than %d bytes", maxManifest), "read the manifest %s", from)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, failf(w, err, "read the manifest %s", from)
	}
	return m, nil
}

// fetchManifest GETs a manifest, bounded in time and size.
func fetchManifest(ctx context.Context, u string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, res.Status)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxManifest+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	return b, nil
}

// datasetURLs are, for --url, where the node serves /dataset/ (the URL
// without its /api/v1 base) and its site (scheme://host, where the log's
// tiles are at the origin's path).
func datasetURLs(raw string) (root, site string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("%q is not an absolute http or https URL without a query", raw)
	}
	site = u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(strings.TrimRight(u.Path, "/"), client.APIPrefix)
	return site + strings.TrimRight(path, "/"), site, nil
}

// thousands writes n with a comma between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	start := 0
	if n < 0 {
		start = 1
	}
	var b strings.Builder
	for i := range len(s) {
		if i > start && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// maxDatasetTile is the most bytes of one level-0 tile: 256 hashes.
const maxDatasetTile = logformat.TileWidth * tlog.HashSize

// datasetTiles reads the log's leaf hashes (dataset.TileReader) from a
// node's level-0 tiles (C2SP tlog-tiles, height 8) at the log's origin
// path: GET {site}{origin path}/tile/0/{N}[.p/{W}], each answer bounded
// to a tile's size and each request to timeout. It keeps the last tile
// read (windows that meet inside a tile read it once).
type datasetTiles struct {
	site    string // scheme://host[:port]
	origin  string // the log's origin: translog.OriginPath says where its tiles are
	timeout time.Duration

	last struct {
		n    int64
		data []byte // the tile's hashes (nil: none)
	}
}

// LeafHashes reads the leaf hashes of [first, end) in the tree of
// treeSize from the level-0 tiles that hold them.
func (t *datasetTiles) LeafHashes(ctx context.Context, first, end, treeSize int64) ([]tlog.Hash, error) {
	if first < 0 || end <= first || end > treeSize {
		return nil, fmt.Errorf("log tiles: leaves [%d, %d) are not a range of a tree of %d", first, end, treeSize)
	}
	out := make([]tlog.Hash, 0, end-first)
	for n := first / logformat.TileWidth; n <= (end-1)/logformat.TileWidth; n++ {
		data, err := t.tile(ctx, n, treeSize)
		if err != nil {
			return nil, err
		}
		from, to := max(first, n*logformat.TileWidth), min(end, (n+1)*logformat.TileWidth)
		for i := from; i < to; i++ {
			off := (i - n*logformat.TileWidth) * tlog.HashSize
			out = append(out, tlog.Hash(data[off:off+tlog.HashSize]))
		}
	}
	return out, nil
}

// tile reads level-0 tile n of the tree of treeSize: the partial tile at
// the tree's edge, or, if the node no longer serves it, the full one.
func (t *datasetTiles) tile(ctx context.Context, n, treeSize int64) ([]byte, error) {
	if t.last.data != nil && t.last.n == n {
		return t.last.data, nil
	}
	w := int(min(logformat.TileWidth, treeSize-n*logformat.TileWidth))
	data, status, err := t.get(ctx, logformat.Tile{Level: 0, N: n, W: w})
	if status == http.StatusNotFound && w < logformat.TileWidth {
		data, _, err = t.get(ctx, logformat.Tile{Level: 0, N: n, W: logformat.TileWidth})
	}
	if err != nil {
		return nil, err
	}
	if len(data) < w*tlog.HashSize {
		return nil, fmt.Errorf("log tile 0/%d: %d bytes, want %d", n, len(data), w*tlog.HashSize)
	}
	t.last.n, t.last.data = n, data
	return data, nil
}

// get fetches one tile, which must be exactly its width of hashes.
func (t *datasetTiles) get(ctx context.Context, tile logformat.Tile) ([]byte, int, error) {
	path, err := translog.OriginPath(t.origin)
	if err != nil {
		return nil, 0, fmt.Errorf("log tiles: %w", err)
	}
	u := t.site + path + "/tile/" + tile.Path()
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("log tile %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/octet-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("log tile: GET %s: %w", u, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxDatasetTile))
		return nil, res.StatusCode, fmt.Errorf("log tile: GET %s: %s", u, res.Status)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxDatasetTile+1))
	if err != nil {
		return nil, res.StatusCode, fmt.Errorf("log tile: GET %s: %w", u, err)
	}
	if len(b) != tile.W*tlog.HashSize {
		return nil, res.StatusCode, fmt.Errorf("log tile: GET %s: %d bytes, want %d", u, len(b), tile.W*tlog.HashSize)
	}
	return b, res.StatusCode, nil
}
