package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/node"
)

// localBanner is what `attestd local` tells a person once the API
// answers: where to point the browser and curl, where the demo payer
// is, how one-shot commands find the stores, how to stop and reset.
type localBanner struct {
	addr   string      // ATTESTD_HTTP_ADDR
	dir    string      // the run directory (.run)
	pgData string      // the PostgreSQL data directory, when local started it
	rpc    string      // the chain's JSON-RPC URL (the simulator's moves when 8899 is taken)
	parts  []localPart // the servers started as processes of their own, watched
	logKey string      // the transparency log's verifier key
	// getenv reads the settings the roles run with (the stores'), for
	// finding an attestation in the log.
	getenv func(string) string
	// verifyWait bounds the wait for an attestation in the log before
	// the banner shows (default 30 s).
	verifyWait time.Duration
}

// printWhenReady waits until the API answers on b.addr and an
// attestation is provably in the transparency log (at most b.verifyWait),
// then writes the banner to w, and logs its verify command on log; it
// gives up when ctx ends.
func (b localBanner) printWhenReady(ctx context.Context, w io.Writer, log *slog.Logger) {
	base := "http://" + browsable(b.addr)
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/health", nil)
		if err != nil {
			return
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	verify, ok := b.verifyCommand(ctx, base)
	if ctx.Err() != nil {
		return
	}
	fmt.Fprint(w, b.text(base, verify, ok))
	if b.logKey != "" {
		log.Info("check that an attestation is in the transparency log (from this directory)", "try", verify)
	}
}

// text is the banner for the API at base; verify is the command that
// checks an attestation's inclusion in the log (ok: it names one that is
// there, else a placeholder).
func (b localBanner) text(base, verify string, ok bool) string {
	rel := relToCwd(b.dir)
	prog := programPath()
	var s strings.Builder
	fmt.Fprintf(&s, "\n  attestd is running (make run)\n\n")
	fmt.Fprintf(&s, "  explorer     %s/\n", base)
	fmt.Fprintf(&s, "  console      %s/#/console   (no Solana wallet in this browser? the page offers a local test wallet:\n", base)
	fmt.Fprintf(&s, "               a throwaway key kept in the browser, enough to sign in and make keys and webhooks)\n")
	fmt.Fprintf(&s, "  API          %s/api/v1/   try: curl -s %s/api/v1/stats\n", base, base)
	fmt.Fprintf(&s, "  API key      %s keys create --account demo   (another terminal, this directory: it finds\n", prog)
	fmt.Fprintf(&s, "               the stores in %s)\n", filepath.Join(rel, storesFileName))
	if b.logKey != "" {
		fmt.Fprintf(&s, "  verify       %s\n", verify)
		if ok {
			fmt.Fprintf(&s, "               (proves that attestation is in the transparency log, signed with its key: docs/log.md)\n")
		} else {
			fmt.Fprintf(&s, "               (PDA: any finalized attestation, once the log holds it: docs/log.md)\n")
		}
	}
	if b.rpc != "" {
		fmt.Fprintf(&s, "  chain RPC    %s   (Solana JSON-RPC; fund a wallet with devnet_fund, docs/payments.md)\n", b.rpc)
	}
	if payer := filepath.Join(b.dir, "x402", "payer.json"); exists(payer) {
		fmt.Fprintf(&s, "  demo payer   %s (a keypair with devnet USDC for pay per request, docs/payments.md)\n", filepath.Join(rel, "x402", "payer.json"))
	}
	data := rel + "/"
	if b.pgData != "" && !strings.HasPrefix(b.pgData, b.dir+string(filepath.Separator)) {
		data += " and " + b.pgData
	}
	fmt.Fprintf(&s, "  demo data    %s   (make reset deletes it)\n", data)
	fmt.Fprintf(&s, "  stop         Ctrl-C\n\n")
	return s.String()
}

// verifyCommand is the command that checks an attestation's inclusion
// in the transparency log, as it runs from this directory against the API
// at base: the program as this one is found from here, an attestation of
// the log, the log's key and --url. It waits (at most b.verifyWait) until
// the log holds an attestation whose proof checks as attestd verify checks
// it (ok); else the attestation is a placeholder, PDA.
func (b localBanner) verifyCommand(ctx context.Context, base string) (cmd string, ok bool) {
	pda := "PDA"
	defer func() {
		cmd = strings.Join([]string{programPath(), "verify", shellQuote(pda), "--log-key", shellQuote(b.logKey), "--url", shellQuote(base)}, " ")
	}()
	if b.logKey == "" || b.getenv == nil {
		return "", false
	}
	wait := cmp.Or(b.verifyWait, 30*time.Second)
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	cfg, err := config.FromEnv(b.getenv)
	if err != nil {
		return "", false
	}
	st, err := node.OpenStore(ctx, cfg, true)
	if err != nil {
		return "", false
	}
	defer st.Close()
	v, err := client.NewLogVerifier(b.logKey)
	if err != nil {
		return "", false
	}
	c, err := client.New(base, client.WithTimeout(5*time.Second))
	if err != nil {
		return "", false
	}
	tick := time.NewTicker(time.Second) // the API's requests count against this address's rate limit
	defer tick.Stop()
	for {
		if leaves, err := st.LogLeaves(ctx, 0, 1); err == nil && len(leaves) == 1 {
			var leaf struct{ PDA string }
			if json.Unmarshal(leaves[0], &leaf) == nil && leaf.PDA != "" {
				if _, _, err := c.VerifyAttestation(ctx, v, leaf.PDA); err == nil {
					pda = leaf.PDA
					return "", true
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", false
		case <-tick.C:
		}
	}
}

// programPath is this program as a shell in the current directory runs
// it: ./bin/attestd from the checkout make run runs in, else its absolute
// path.
func programPath() string {
	exe, err := os.Executable()
	if err != nil {
		return "attestd"
	}
	rel := relToCwd(exe)
	if !filepath.IsAbs(rel) {
		rel = "." + string(filepath.Separator) + rel
	}
	return shellQuote(rel)
}

// shellQuote is s as one word of a POSIX shell command line: as it is
// when it holds only characters no shell treats specially, else in single
// quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// browsable is addr as a browser on this machine reaches it: a wildcard
// or empty host becomes 127.0.0.1.
func browsable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// relToCwd is path relative to the current directory when it lies below
// it (".run"), else path.
func relToCwd(path string) string {
	cwd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(cwd, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// resetLocal deletes the demo data of the run directory dir: dir itself
// and the PostgreSQL data kept outside it (see devstack.RelocatedDataDirs),
// saying what it deleted on w. It refuses while an attestd local runs
// there, and refuses a dir that holds the current directory or is the
// home directory (--dir . would otherwise delete the checkout).
func resetLocal(dir string, w io.Writer) error {
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	if rel, err := filepath.Rel(dir, cwd); (err == nil && !strings.HasPrefix(rel, "..")) || dir == home || dir == filepath.Dir(dir) {
		return usageErrorf("local --reset: refusing to delete %s: it holds the current directory (or is the home or root directory); name the run directory with --dir", dir)
	}
	if !looksLikeRunDir(dir) {
		return usageErrorf("local --reset: refusing to delete %s: it holds files but none that attestd local or cluster makes (%s); name the run directory with --dir",
			dir, strings.Join(runDirMarkers, ", "))
	}
	if exists(dir) {
		// Held while deleting: a local starting meanwhile waits for nothing
		// and is refused, rather than running on a directory going away.
		release, err := lockRunDir(dir)
		if errors.Is(err, errLocalRunning) {
			return fmt.Errorf("refusing to reset %s: %w there; stop it first (Ctrl-C in its terminal)", dir, errLocalRunning)
		}
		if err != nil {
			return err
		}
		defer release()
	}
	relocated, err := devstack.RelocatedDataDirs(filepath.Join(dir, "pg"))
	if err != nil {
		return err
	}
	var deleted []string
	for _, p := range append([]string{dir}, relocated...) {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		size := diskUsage(p)
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("reset: %w", err)
		}
		deleted = append(deleted, fmt.Sprintf("%s (%s)", p, humanBytes(size)))
	}
	// The relocated data's origin files, now naming a directory gone.
	_, _ = devstack.RemoveOrphans()
	if len(deleted) == 0 {
		fmt.Fprintf(w, "nothing to delete: no demo data in %s\n", dir)
		return nil
	}
	fmt.Fprintf(w, "deleted the demo data: %s; the next make run starts afresh\n", strings.Join(deleted, ", "))
	return nil
}

// runDirMarkers are entries attestd local (make run) or cluster makes in
// its run directory; a non-empty directory with none of them is not one.
var runDirMarkers = []string{lockFileName, storesFileName, "pg", "redis", "chain", "x402", "webhook-keys", "log-key", "cluster"}

// looksLikeRunDir reports whether dir is missing, an empty directory, or holds one of
// runDirMarkers: what --reset may delete (--dir ~/src may not).
func looksLikeRunDir(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) // missing: nothing to delete; a file or unreadable: not one
	}
	if len(entries) == 0 {
		return true
	}
	for _, m := range runDirMarkers {
		if _, err := os.Lstat(filepath.Join(dir, m)); err == nil {
			return true
		}
	}
	return false
}

// diskUsage is the total size of the regular files under path.
func diskUsage(path string) int64 {
	var n int64
	_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// humanBytes writes n as 12 KB, 3.4 MB, 1.2 GB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "KMGTPE"[exp])
}
