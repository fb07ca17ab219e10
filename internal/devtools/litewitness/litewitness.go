// Package litewitness runs a real transparency-log witness on this
// machine: litewitness from filippo.io/torchwood (unmodified, the
// project's Go tool dependency: `go tool litewitness`), with its key held
// by an ssh-agent this package starts, as litewitness expects. Tests start
// two to witness the log; make run and make cluster start one so a
// newcomer sees a witnessed log (docs/log.md).
//
// Logs are added to a witness's SQLite database with the sqlite3 command
// (the Debian package, installed when missing): the two INSERTs
// torchwood's witnessctl add-log and add-key make. (witnessctl itself
// cannot be built from the Go module proxy here: it imports
// sigsum.org/sigsum-go, which the proxy does not serve.)
package litewitness

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/translog/logformat"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// Binary builds litewitness (once; Go caches it) and returns its path:
// `go tool -n litewitness`, run in dir (any directory of the checkout).
func Binary(ctx context.Context, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute) // a first build compiles SQLite in Go
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "tool", "-n", "litewitness")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("go tool -n litewitness: %w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("go tool -n litewitness: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Options say how to start a witness.
type Options struct {
	Binary string // litewitness (Binary)
	Dir    string // its database, agent socket and log
	Name   string // the witness's name (example.test/w1)
	// Seed is the witness key's Ed25519 seed (32 bytes); nil: a new key,
	// kept in Dir/witness.key (so a restart keeps its identity).
	Seed []byte
}

// Witness is a running litewitness.
type Witness struct {
	Name        string
	VerifierKey string // name+keyid+base64, as litewitness prints it
	URL         string // its add-checkpoint URL
	Addr        string
	DB          string
	Public      ed25519.PublicKey
	agent, lw   *exec.Cmd
	exited      chan error    // litewitness's Wait
	done        chan struct{} // closed when litewitness has exited
	dir         string
	stopOnce    sync.Once
}

// Start starts an ssh-agent holding the witness key, then litewitness on
// a free loopback port using it, and waits until it answers.
func Start(ctx context.Context, opt Options) (*Witness, error) {
	if err := os.MkdirAll(opt.Dir, 0o700); err != nil {
		return nil, err
	}
	seed := opt.Seed
	if seed == nil {
		var err error
		if seed, err = keyFile(filepath.Join(opt.Dir, "witness.key")); err != nil {
			return nil, err
		}
	}
	if len(seed) != ed25519.SeedSize {
		return nil, errors.New("litewitness: the key seed must be 32 bytes")
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	w := &Witness{Name: opt.Name, VerifierKey: logformat.NewCosignatureKey(opt.Name, pub), Public: pub, dir: opt.Dir,
		DB: filepath.Join(opt.Dir, "litewitness.db")}
	sock := filepath.Join(opt.Dir, "agent.sock")
	_ = os.Remove(sock)
	logf, err := os.OpenFile(filepath.Join(opt.Dir, "litewitness.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	w.agent = exec.Command("ssh-agent", "-D", "-a", sock)
	w.agent.Stdout, w.agent.Stderr = logf, logf
	// Debian installs ssh-agent setgid, and executing a setgid program
	// clears the parent-death signal: an agent whose parent was killed
	// outright stays, and the next make run ends it (devstack.KillLeftovers).
	w.agent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := w.agent.Start(); err != nil {
		return nil, fmt.Errorf("start ssh-agent (the openssh-client package): %w", err)
	}
	if err := w.addKey(ctx, sock, priv); err != nil {
		w.Stop()
		return nil, err
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		w.Stop()
		return nil, err
	}
	port, err := devstack.FreePort()
	if err != nil {
		w.Stop()
		return nil, err
	}
	w.Addr = "127.0.0.1:" + strconv.Itoa(port)
	w.URL = "http://" + w.Addr + "/add-checkpoint"
	w.lw = exec.Command(opt.Binary, "-name", opt.Name, "-db", w.DB, "-ssh-agent", sock, "-listen", w.Addr,
		"-key", ssh.FingerprintSHA256(sshPub))
	w.lw.Stdout, w.lw.Stderr = logf, logf
	w.lw.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := w.lw.Start(); err != nil {
		w.Stop()
		return nil, fmt.Errorf("start litewitness: %w", err)
	}
	w.exited, w.done = make(chan error, 1), make(chan struct{})
	exited, done := w.exited, w.done
	go func() { err := w.lw.Wait(); close(done); exited <- err; close(exited) }()
	if err := w.waitReady(ctx, logf.Name()); err != nil {
		w.Stop()
		return nil, err
	}
	return w, nil
}

// waitReady waits (30 s at most) until litewitness answers HTTP.
func (w *Witness) waitReady(ctx context.Context, logName string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get("http://" + w.Addr + "/")
		if err == nil {
			res.Body.Close()
			return nil
		}
		select {
		case err := <-w.exited:
			return fmt.Errorf("litewitness exited at start (%v); see %s", err, logName)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("litewitness did not answer on %s within 30 s; see %s", w.Addr, logName)
		}
	}
}

// addKey waits for the agent's socket and gives it the key.
func (w *Witness) addKey(ctx context.Context, sock string, priv ed25519.PrivateKey) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.Dial("unix", sock)
		if err == nil {
			defer conn.Close()
			if err := agent.NewClient(conn).Add(agent.AddedKey{PrivateKey: priv, Comment: w.Name}); err != nil {
				return fmt.Errorf("give ssh-agent the witness key: %w", err)
			}
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("ssh-agent's socket %s: %w", sock, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// keyFile reads a seed kept in name, or makes one there.
func keyFile(name string) ([]byte, error) {
	if b, err := os.ReadFile(name); err == nil {
		seed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(seed) != ed25519.SeedSize {
			return nil, fmt.Errorf("%s: not a witness key seed", name)
		}
		return seed, nil
	}
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return nil, err
	}
	if err := os.WriteFile(name, []byte(base64.StdEncoding.EncodeToString(seed)+"\n"), 0o600); err != nil {
		return nil, err
	}
	return seed, nil
}

// AddLog tells the witness of a log: its origin (at size 0, the empty
// tree) and its verifier keys, as witnessctl add-log and add-key do. A log
// it knows already keeps its size; a key it has is not added twice.
func (w *Witness) AddLog(ctx context.Context, origin string, vkeys ...string) error {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if err := devstack.AptInstall("sqlite3"); err != nil {
			return fmt.Errorf("the sqlite3 command (Debian package sqlite3) adds logs to litewitness: %w", err)
		}
	}
	empty := sha256.Sum256(nil)
	sql := "INSERT OR IGNORE INTO log (origin, tree_size, tree_hash) VALUES (" + quote(origin) + ", 0, " +
		quote(base64.StdEncoding.EncodeToString(empty[:])) + ");\n"
	for _, k := range vkeys {
		sql += "INSERT INTO key (origin, key) SELECT " + quote(origin) + ", " + quote(k) +
			" WHERE NOT EXISTS (SELECT 1 FROM key WHERE origin = " + quote(origin) + " AND key = " + quote(k) + ");\n"
	}
	cmd := exec.CommandContext(ctx, "sqlite3", "-bail", w.DB)
	cmd.Stdin = strings.NewReader("PRAGMA busy_timeout = 5000;\n" + sql)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("add log %s to witness %s: %w: %s", origin, w.Name, err, out)
	}
	return nil
}

// quote is an SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Done is closed when litewitness has exited (stopped, or died).
func (w *Witness) Done() <-chan struct{} { return w.done }

// Stop stops litewitness and its ssh-agent.
func (w *Witness) Stop() {
	w.stopOnce.Do(func() {
		if w.lw != nil && w.lw.Process != nil {
			_ = w.lw.Process.Signal(syscall.SIGTERM)
			select {
			case <-w.exited:
			case <-time.After(5 * time.Second):
				_ = w.lw.Process.Kill()
				<-w.exited
			}
		}
		if w.agent != nil && w.agent.Process != nil {
			_ = w.agent.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = w.agent.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = w.agent.Process.Kill()
			}
		}
	})
}

// Config is the witness as ATTESTD_LOG_WITNESSES names it: its verifier
// key, a space, its add-checkpoint URL.
func (w *Witness) Config() string { return w.VerifierKey + " " + w.URL }

// ForLog starts one witness per Options, each told of the log (its origin
// and verifier key), and returns them with the ATTESTD_LOG_WITNESSES value
// naming them. When one fails, those already started are stopped.
func ForLog(ctx context.Context, origin, verifierKey string, opts ...Options) ([]*Witness, string, error) {
	var ws []*Witness
	var items []string
	stop := func() {
		for _, w := range ws {
			w.Stop()
		}
	}
	for _, opt := range opts {
		w, err := Start(ctx, opt)
		if err != nil {
			stop()
			return nil, "", fmt.Errorf("start witness %s: %w", opt.Name, err)
		}
		ws = append(ws, w)
		if err := w.AddLog(ctx, origin, verifierKey); err != nil {
			stop()
			return nil, "", err
		}
		items = append(items, w.Config())
	}
	return ws, strings.Join(items, ","), nil
}

// Local is the witness make run and make cluster start beside their log:
// litewitness built from the checkout (the first build compiles SQLite and
// takes a minute or two; Go caches it), its data and key under dir (so its
// identity and the sizes it cosigned survive a restart), told of the log.
// It returns the witness and the ATTESTD_LOG_WITNESSES value naming it.
func Local(ctx context.Context, checkout, dir, name, origin, verifierKey string, log *slog.Logger) (*Witness, string, error) {
	start := time.Now()
	log.Info("building the local witness (torchwood's litewitness, the project's tool dependency; the first build takes a minute or two)")
	bin, err := Binary(ctx, checkout)
	if err != nil {
		return nil, "", fmt.Errorf("local witness: %w", err)
	}
	ws, cfg, err := ForLog(ctx, origin, verifierKey, Options{Binary: bin, Dir: dir, Name: name})
	if err != nil {
		return nil, "", fmt.Errorf("local witness: %w", err)
	}
	log.Info("local witness up", "name", name, "url", ws[0].URL, "verifier_key", ws[0].VerifierKey,
		"dir", dir, "took", time.Since(start).Round(time.Millisecond))
	return ws[0], cfg, nil
}
