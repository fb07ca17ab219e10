package settings

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/attestd/attestd/indexer"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/purge"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/stream"
	"github.com/attestd/attestd/internal/tracing"
	"github.com/attestd/attestd/internal/translog"
	"github.com/attestd/attestd/internal/web"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/ratelimit"
	"github.com/attestd/attestd/x402/verifier"
)

// Role is what a process runs.
type Role string

// The roles of the binary. Local runs serve, index, worker and dataset
// in one process (make run), so it reads what all four do.
const (
	Serve   Role = "serve"
	Index   Role = "index"
	Worker  Role = "worker"
	Dataset Role = "dataset"
	MCP     Role = "mcp"
	Local   Role = "local"
)

// Settings is one process's configuration, read once. Only the parts its
// role uses are filled.
type Settings struct {
	Role Role
	// Getenv is where they were read from (the process environment, or
	// make run's values layered over it).
	Getenv func(string) string

	Common config.Config

	// serve
	HTTPCache httpcache.Config
	RateLimit ratelimit.Config
	Replicas  store.ReplicaOptions
	// ChainRPC is the chain's JSON-RPC endpoint an API node probes for
	// /health (ATTESTD_SOLANA_RPC_URL); the indexer's other settings are
	// not the node's business.
	ChainRPC string
	APIKeys  apikey.Config
	Web      web.Config
	Premium  premium.Config
	Stream   stream.Config
	Verifier verifier.Config // pay per request: its config and key files

	// serve, index and dataset
	Log translog.Config

	// serve and dataset: where the daily files are (the dataset role
	// writes them, API nodes serve them)
	Dataset dataset.Config

	// index
	Indexer           indexer.Config
	ReconcileInterval time.Duration
	// PaymentsRPC is where the reconciler settles (ATTESTD_X402_RPC_URL,
	// default the indexer's RPC).
	PaymentsRPC string
	// PaymentsRecover: whose settlements the reconciler recovers from the
	// chain after a restore (ATTESTD_X402_PAY_TO and its asset; zero: none).
	PaymentsRecover    verifier.RecoverTerms
	PaymentsRecoverErr error // why the recovery is off although ATTESTD_X402_PAY_TO is set
	Purge              purge.Config

	// serve and worker
	Webhook webhook.Config

	// mcp
	MCP mcp.Config
}

// Load reads role's settings from getenv (nil: the process environment),
// running every parser the role needs even after one fails, and returns
// every bad variable in one error. It connects to nothing.
func Load(role Role, getenv func(string) string) (Settings, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	s := Settings{Role: role, Getenv: getenv}
	var errs []error
	check := func(area string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", area, err))
		}
	}
	var err error
	s.Common, err = config.FromEnv(getenv)
	check("settings", err)
	serve, index, worker := role == Serve || role == Local, role == Index || role == Local, role == Worker || role == Local
	switch role {
	case Serve, Index, Worker, Dataset, MCP, Local:
	default:
		return s, fmt.Errorf("settings: unknown role %q", role)
	}
	if role != MCP {
		check("tracing", tracing.Validate(getenv))
	}
	if serve {
		s.HTTPCache, err = httpcache.ConfigFromEnv(getenv)
		check("http caching", err)
		s.RateLimit, err = ratelimit.ConfigFromEnv(getenv)
		check("rate limit", err)
		s.Replicas, err = store.ReplicasFromEnv(getenv)
		check("read replicas", err)
		s.ChainRPC, err = indexer.RPCFromEnv(getenv)
		check("chain", err)
		s.APIKeys, err = apikey.ConfigFromEnv(getenv)
		check("api keys", err)
		s.Web, err = web.ConfigFromEnv(getenv)
		check("web application", err)
		s.Premium, err = premium.ConfigFromEnv(getenv)
		check("premium", err)
		s.Stream, err = stream.ConfigFromEnv(getenv)
		check("live stream", err)
		s.Verifier, err = verifier.ConfigFromEnv(getenv)
		check("pay per request", err)
	}
	if serve || index || role == Dataset {
		s.Log, err = translog.ConfigFromEnv(getenv)
		check("transparency log", err)
	}
	if serve || role == Dataset {
		s.Dataset, err = dataset.ConfigFromEnv(getenv)
		check("dataset", err)
	}
	if index {
		s.Indexer, err = indexer.ConfigFromEnv(getenv)
		check("indexer", err)
		s.ReconcileInterval, err = verifier.ReconcileInterval(getenv)
		check("payments reconciler", err)
		// The API's pay-per-request settings never stop the indexer: a
		// payTo it cannot read turns the recovery off, loudly (Index).
		s.PaymentsRecover, s.PaymentsRecoverErr = verifier.RecoverTermsFromEnv(getenv)
		s.PaymentsRPC = getenv("ATTESTD_X402_RPC_URL")
		if s.PaymentsRPC == "" {
			s.PaymentsRPC = s.Indexer.RPCURL
		}
		s.Purge, err = purge.ConfigFromEnv(getenv)
		check("purge hook", err)
	}
	if serve || worker {
		s.Webhook, err = webhook.ConfigFromEnv(getenv)
		check("webhooks", err)
	}
	if role == MCP {
		s.MCP, err = mcp.ConfigFromEnv(getenv)
		check("mcp", err)
	}
	return s, errors.Join(errs...)
}

// Overlay is getenv with values set over it: how make run hands the
// stores, keys and chain it started to the roles it runs, without
// writing the process environment.
type Overlay struct {
	base func(string) string
	set  map[string]string
}

// NewOverlay layers over base (nil: the process environment).
func NewOverlay(base func(string) string) *Overlay {
	if base == nil {
		base = os.Getenv
	}
	return &Overlay{base: base, set: map[string]string{}}
}

// Set gives name a value over the base.
func (o *Overlay) Set(name, value string) { o.set[name] = value }

// Getenv is name's value: the one set over the base, else the base's.
func (o *Overlay) Getenv(name string) string {
	if v, ok := o.set[name]; ok {
		return v
	}
	return o.base(name)
}
