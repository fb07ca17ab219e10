package indexer

import (
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/internal/config"

	"github.com/attestd/attestd/attestation"
	"github.com/gagliardetto/solana-go"
	"github.com/prometheus/client_golang/prometheus"
)

// CheckpointName is the checkpoint the indexer advances with every batch
// (the newest processed transaction); HeadCheckpointName records the chain
// slot through which the last sync is complete.
const (
	CheckpointName     = "indexer"
	HeadCheckpointName = "indexer:head"
)

// DefaultLockKey is the advisory lock that elects the one writer.
const DefaultLockKey int64 = 0x61747374_696e6478 // "atst" "indx"

// Config configures an Indexer. Zero fields take the defaults.
type Config struct {
	RPCURL    string           // default http://127.0.0.1:8899
	WSURL     string           // default: RPCURL's host, port+1, ws(s)://
	ProgramID solana.PublicKey // default attestation.DefaultProgramID

	Checkpoint string // checkpoint name, default CheckpointName
	LockKey    int64  // default DefaultLockKey

	Concurrency  int // getTransaction calls in flight, default 8
	PageSize     int // getSignaturesForAddress limit, default 1000
	ChunkTxs     int // transactions per applied batch, default 250
	ChunkRecords int // records per applied batch, default 5000

	PollInterval     time.Duration // safety poll while the websocket works, default 5 s
	FallbackPoll     time.Duration // poll while it does not, default 1 s
	FinalityInterval time.Duration // promotion/fork check, default 2 s
	LockRetry        time.Duration // how often a follower tries the lock, default 2 s
	RPCTimeout       time.Duration // deadline of each RPC call, default 10 s
	ProgressEvery    time.Duration // progress lines during long syncs, default 5 s
	SyncedLagSlots   uint64        // at most this far behind counts as synced, default 150

	// StartOver lets the indexer follow a chain other than the one the
	// database was indexed from (another genesis hash, or a slot behind
	// the checkpoint): it forgets the checkpoint and indexes that chain
	// from its first transaction. Without it the indexer refuses (a
	// ChainMismatchError) or, for a chain behind with the same genesis,
	// waits. Indexed rows are kept either way.
	StartOver bool

	// A listed transaction that getTransaction does not return (a lagging
	// RPC node) is recorded as pending, so the checkpoint can move past it,
	// and retried: first after PendingRetry, the delay doubling up to
	// PendingMaxBackoff. After PendingTimeout the chain is asked whether it
	// still knows the signature: if not, a fork dropped it; if so, retries
	// go on. Defaults 1 s, 1 min, 10 min.
	PendingRetry      time.Duration
	PendingMaxBackoff time.Duration
	PendingTimeout    time.Duration
	// Every ReconcileInterval the last ReconcileWindow finalized slots (up
	// to the checkpoint) are listed again and any transaction the store
	// does not know is indexed: a gap left by anything is repaired.
	// Defaults 5 min and 9,000 slots (about an hour).
	ReconcileInterval time.Duration
	ReconcileWindow   uint64

	// MetricsAddr is where `attestd index` serves /metrics ("" for none);
	// the Indexer itself only registers its metrics.
	MetricsAddr string

	Logger     *slog.Logger          // default slog.Default()
	Registerer prometheus.Registerer // default: a private registry
}

func (c *Config) defaults() error {
	if c.RPCURL == "" {
		c.RPCURL = "http://127.0.0.1:8899"
	}
	if c.WSURL == "" {
		ws, err := DefaultWSURL(c.RPCURL)
		if err != nil {
			return err
		}
		c.WSURL = ws
	}
	if c.ProgramID.IsZero() {
		c.ProgramID = solana.MustPublicKeyFromBase58(attestation.DefaultProgramID)
	}
	if c.Checkpoint == "" {
		c.Checkpoint = CheckpointName
	}
	if c.LockKey == 0 {
		c.LockKey = DefaultLockKey
	}
	setInt := func(p *int, d int) {
		if *p <= 0 {
			*p = d
		}
	}
	setInt(&c.Concurrency, 8)
	setInt(&c.PageSize, 1000)
	setInt(&c.ChunkTxs, 250)
	setInt(&c.ChunkRecords, 5000)
	c.PageSize = min(c.PageSize, 1000)
	setDur := func(p *time.Duration, d time.Duration) {
		if *p <= 0 {
			*p = d
		}
	}
	setDur(&c.PollInterval, 5*time.Second)
	setDur(&c.FallbackPoll, time.Second)
	setDur(&c.FinalityInterval, 2*time.Second)
	setDur(&c.LockRetry, 2*time.Second)
	setDur(&c.RPCTimeout, 10*time.Second)
	setDur(&c.ProgressEvery, 5*time.Second)
	setDur(&c.PendingRetry, time.Second)
	setDur(&c.PendingMaxBackoff, time.Minute)
	setDur(&c.PendingTimeout, 10*time.Minute)
	setDur(&c.ReconcileInterval, 5*time.Minute)
	c.PendingMaxBackoff = max(c.PendingMaxBackoff, c.PendingRetry)
	if c.SyncedLagSlots == 0 {
		c.SyncedLagSlots = 150
	}
	if c.ReconcileWindow == 0 {
		c.ReconcileWindow = 9000
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	return nil
}

// DefaultWSURL derives the websocket endpoint of an RPC URL by Solana's
// convention: same host, port+1 (8899 -> 8900), ws or wss. Without a port
// (hosted providers), the same host and path.
func DefaultWSURL(rpcURL string) (string, error) {
	u, err := url.Parse(rpcURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("rpc url %q: not an absolute URL", rpcURL)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	case "ws", "wss":
	default:
		return "", fmt.Errorf("rpc url %q: scheme must be http or https", rpcURL)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			return "", fmt.Errorf("rpc url %q: port: %w", rpcURL, err)
		}
		u.Host = u.Hostname() + ":" + strconv.Itoa(n+1)
		if strings.Contains(u.Hostname(), ":") {
			u.Host = "[" + u.Hostname() + "]:" + strconv.Itoa(n+1)
		}
	}
	return u.String(), nil
}

// Vars lists the environment variables ConfigFromEnv reads.
var Vars = []config.Var{
	{Name: "ATTESTD_SOLANA_RPC_URL", Default: "http://127.0.0.1:8899", Help: "Solana JSON-RPC endpoint the indexer follows (make run: the local simulator)"},
	{Name: "ATTESTD_SOLANA_WS_URL", Default: "RPC host, port+1, ws://", Help: "Solana PubSub websocket"},
	{Name: "ATTESTD_PROGRAM_ID", Default: attestation.DefaultProgramID, Help: "the Prova program to index"},
	{Name: "ATTESTD_INDEXER_CONCURRENCY", Default: "8", Help: "getTransaction calls in flight during backfill"},
	{Name: "ATTESTD_INDEXER_POLL_INTERVAL", Default: "5s", Help: "safety poll while the websocket works (1 s while it does not)"},
	{Name: "ATTESTD_INDEXER_FINALITY_INTERVAL", Default: "2s", Help: "how often confirmed rows are promoted, or removed after a fork"},
	{Name: "ATTESTD_INDEXER_METRICS_ADDR", Default: "127.0.0.1:9091", Help: "the indexer's /metrics and /health; empty disables it"},
	{Name: "ATTESTD_INDEXER_PENDING_TIMEOUT", Default: "10m", Help: "how long a listed transaction that getTransaction does not return (a lagging RPC node) is retried, with backoff, before the chain is asked whether a fork dropped it"},
	{Name: "ATTESTD_INDEXER_RECONCILE_INTERVAL", Default: "5m", Help: "how often the recent finalized range is compared with what is stored, and any gap indexed"},
	{Name: "ATTESTD_INDEXER_RECONCILE_WINDOW", Default: "9000", Help: "finalized slots (about 0.4 s each) that each reconciliation covers, up to the checkpoint"},
	{Name: "ATTESTD_INDEXER_START_OVER", Default: "0", Help: "1: as `attestd index --start-over`: on a chain other than the database's (another genesis hash, or a slot behind the checkpoint), forget the checkpoint and index it from its start (make run sets it for its own simulator)"},
}

// ConfigFromEnv reads Vars with getenv (the process environment when nil).
// Logger and Registerer are left for the caller.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	e := config.NewEnv(getenv)
	c := Config{
		RPCURL:            e.String("ATTESTD_SOLANA_RPC_URL", ""),
		WSURL:             e.String("ATTESTD_SOLANA_WS_URL", ""),
		Concurrency:       e.Int("ATTESTD_INDEXER_CONCURRENCY", 0, 1, 256),
		PollInterval:      e.Duration("ATTESTD_INDEXER_POLL_INTERVAL", 0, time.Millisecond, time.Hour),
		FinalityInterval:  e.Duration("ATTESTD_INDEXER_FINALITY_INTERVAL", 0, time.Millisecond, time.Hour),
		PendingTimeout:    e.Duration("ATTESTD_INDEXER_PENDING_TIMEOUT", 0, time.Second, 7*24*time.Hour),
		ReconcileInterval: e.Duration("ATTESTD_INDEXER_RECONCILE_INTERVAL", 0, time.Second, 24*time.Hour),
		ReconcileWindow:   uint64(e.Int("ATTESTD_INDEXER_RECONCILE_WINDOW", 0, 1, 1_000_000)),
		StartOver:         e.Switch("ATTESTD_INDEXER_START_OVER", "0", "1"),
		MetricsAddr:       "127.0.0.1:9091",
	}
	if v, set := e.Lookup("ATTESTD_INDEXER_METRICS_ADDR"); set {
		c.MetricsAddr = v
	}
	if p := e.String("ATTESTD_PROGRAM_ID", ""); p != "" {
		pk, err := solana.PublicKeyFromBase58(p)
		if err != nil {
			e.Fail("ATTESTD_PROGRAM_ID", "want a base58 public key, got %q", p)
		}
		c.ProgramID = pk
	}
	if err := e.Err(); err != nil {
		return c, err
	}
	if err := c.defaults(); err != nil {
		return c, fmt.Errorf("ATTESTD_SOLANA_RPC_URL: %w", err)
	}
	return c, nil
}

// RPCFromEnv reads only the chain's JSON-RPC endpoint
// (ATTESTD_SOLANA_RPC_URL, default http://127.0.0.1:8899): what an API node
// probes for /health, without the indexer's other settings.
func RPCFromEnv(getenv func(string) string) (string, error) {
	c := Config{RPCURL: config.NewEnv(getenv).String("ATTESTD_SOLANA_RPC_URL", "")}
	if err := c.defaults(); err != nil {
		return "", fmt.Errorf("ATTESTD_SOLANA_RPC_URL: %w", err)
	}
	return c.RPCURL, nil
}
