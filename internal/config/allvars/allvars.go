package allvars

import (
	"github.com/attestd/attestd/apikey"
	"github.com/attestd/attestd/indexer"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/purge"
	"github.com/attestd/attestd/internal/testenv"
	"github.com/attestd/attestd/internal/tracing"
	"github.com/attestd/attestd/mcp"
	"github.com/attestd/attestd/premium"
	"github.com/attestd/attestd/ratelimit"
	"github.com/attestd/attestd/store"
	"github.com/attestd/attestd/stream"
	"github.com/attestd/attestd/translog"
	"github.com/attestd/attestd/web"
	"github.com/attestd/attestd/webhook"
	"github.com/attestd/attestd/x402/verifier"
)

// Lists is every package's list of the variables it reads. A package that
// reads a new variable adds it to its own Vars; a package with a new Vars
// list adds it here.
func Lists() [][]config.Var {
	return [][]config.Var{
		config.Vars, store.Vars, httpcache.Vars, purge.Vars, ratelimit.Vars, apikey.Vars, premium.Vars, indexer.Vars,
		mcp.Vars, testenv.Vars, verifier.Vars, verifier.ReconcileVars, webhook.Vars, web.Vars,
		translog.Vars,
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
