package settings

import (
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
	"github.com/attestd/attestd/internal/translog"
	"github.com/attestd/attestd/internal/web"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/ratelimit"
	"github.com/attestd/attestd/x402/verifier"
)

// The variables each role reads, in the order Load reads them: the one
// list, which attestd help prints (cmd/attestd/cli.go).
var (
	// ServeVars is every variable an API node reads.
	ServeVars = Join(config.Vars, store.Vars, httpcache.Vars, ratelimit.Vars, apikey.Vars, premium.Vars,
		Pick(indexer.Vars, "ATTESTD_SOLANA_RPC_URL", "ATTESTD_PROGRAM_ID"), verifier.Vars, webhook.Vars, web.Vars, stream.Vars,
		Pick(translog.Vars, "ATTESTD_LOG_KEY", "ATTESTD_LOG_KEY_FILE"),
		Pick(dataset.Vars, "ATTESTD_DATASET_BUCKET", "ATTESTD_DATASET_PREFIX", "ATTESTD_DATASET_RATE", "ATTESTD_DATASET_MIB_RATE"))
	// IndexVars is every variable an indexer reads.
	IndexVars = Join(config.Vars, indexer.Vars, purge.Vars, verifier.ReconcileVars, translog.Vars,
		Pick(verifier.Vars, "ATTESTD_X402_PAY_TO", "ATTESTD_X402_NETWORK", "ATTESTD_X402_ASSET", "ATTESTD_X402_ASSET_DECIMALS", "ATTESTD_X402_RPC_URL"))
	// WorkerVars is every variable a webhook worker reads.
	WorkerVars = Join(config.Vars, webhook.Vars)
	// DatasetVars is every variable the dataset producer reads.
	DatasetVars = Join(config.Vars, dataset.Vars, Pick(translog.Vars, "ATTESTD_LOG_KEY", "ATTESTD_LOG_KEY_FILE", "ATTESTD_LOG_WITNESSES",
		"ATTESTD_LOG_WITNESS_QUORUM"))
	// MCPVars is every variable the MCP server reads.
	MCPVars = Join(mcp.Vars, Pick(config.Vars, "ATTESTD_LOG_LEVEL", "ATTESTD_LOG_FORMAT"))
	// LocalVars is every variable make run's one process reads: serve's,
	// index's, worker's and dataset's.
	LocalVars = Join(ServeVars, IndexVars, WorkerVars, DatasetVars)
)

// Vars returns the variables role reads (nil for an unknown role).
func Vars(role Role) []config.Var {
	switch role {
	case Serve:
		return ServeVars
	case Index:
		return IndexVars
	case Worker:
		return WorkerVars
	case Dataset:
		return DatasetVars
	case MCP:
		return MCPVars
	case Local:
		return LocalVars
	}
	return nil
}

// Pick keeps the variables of vars named in names, in vars' order.
func Pick(vars []config.Var, names ...string) []config.Var {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []config.Var
	for _, v := range vars {
		if want[v.Name] {
			out = append(out, v)
		}
	}
	return out
}

// Join concatenates lists, each variable once.
func Join(lists ...[]config.Var) []config.Var {
	seen := map[string]bool{}
	var out []config.Var
	for _, l := range lists {
		for _, v := range l {
			if !seen[v.Name] {
				seen[v.Name] = true
				out = append(out, v)
			}
		}
	}
	return out
}
