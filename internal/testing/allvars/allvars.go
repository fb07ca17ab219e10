package allvars

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
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/tracing"
	"github.com/attestd/attestd/internal/translog"
	"github.com/attestd/attestd/internal/web"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/ratelimit"
	"github.com/attestd/attestd/x402/verifier"
)

// Lists is every package's list of the variables it reads. A package that
// reads a new variable adds it to its own Vars; a package with a new Vars
// list adds it here.
func Lists() [][]config.Var {
	return [][]config.Var{
		config.Vars, store.Vars, httpcache.Vars, purge.Vars, ratelimit.Vars, apikey.Vars, premium.Vars, indexer.Vars,
		mcp.Vars, testenv.Vars, verifier.Vars, verifier.ReconcileVars, webhook.Vars, web.Vars,
		translog.Vars, dataset.Vars,
		stream.Vars,
		tracing.Vars,
	}
}

// Names is the set of every variable some package reads.
func Names() map[string]bool {
	names := map[string]bool{}
	for _, vars := range Lists() {
		for _, v := range vars {
			names[v.Name] = true
		}
	}
	return names
}
