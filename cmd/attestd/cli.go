package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/attestd/attestd/indexer"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/purge"
	"github.com/attestd/attestd/internal/settings"
	"github.com/attestd/attestd/internal/webhook"
)

// exitUsage is the status of a command line attestd cannot act on (an
// unknown command or flag, a missing argument), as the flag package and
// most tools use.
const exitUsage = 2

// usageError is a mistake in the command line: main prints it with a hint
// to `attestd help CMD` and exits with exitUsage.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// usageErrorf makes a usageError.
func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

// required names the first of flags (name, value pairs in order) left
// empty: "keys list: --account is required".
func required(cmd string, flags ...string) error {
	for i := 0; i+1 < len(flags); i += 2 {
		if flags[i+1] == "" {
			return usageErrorf("%s: --%s is required", cmd, flags[i])
		}
	}
	return nil
}

// newFlags is a flag set for command name ("serve", "keys create") whose
// parse errors are usage errors and whose -h prints the command's help
// (see parseFlags).
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parseFlags reports; the flag package stays quiet
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs: -h/--help prints the command's help on
// stdout (and returns flag.ErrHelp, which main treats as success); any
// other problem is a usageError.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		writeHelp(os.Stdout, fs.Name(), fs)
		return err
	}
	return usageError{err.Error()}
}

// helpInfo is what `attestd help CMD` says beyond the flags.
type helpInfo struct {
	usage   string       // the synopsis (default: attestd NAME [flags])
	vars    []config.Var // the environment variables the command reads
	example string
}

// one-shot commands reading the database (and Redis to announce changes)
// need few of the common variables.
var storeVars = settings.Pick(config.Vars, "DATABASE_URL", "REDIS_URL", "ATTESTD_REDIS_PREFIX", "ATTESTD_LOG_LEVEL", "ATTESTD_LOG_FORMAT")

// help is each command's help beyond its flags.
var help = map[string]helpInfo{
	"serve":   {vars: settings.ServeVars, example: "DATABASE_URL=postgres://... REDIS_URL=redis://... attestd serve"},
	"index":   {vars: settings.IndexVars, example: "ATTESTD_SOLANA_RPC_URL=https://api.devnet.solana.com DATABASE_URL=postgres://... attestd index"},
	"dataset": {vars: settings.DatasetVars, example: "ATTESTD_DATASET_BUCKET='s3://attestd-data?region=eu-west-1' ATTESTD_LOG_KEY=... DATABASE_URL=... attestd dataset"},
	"worker":  {vars: settings.WorkerVars, example: "ATTESTD_WEBHOOK_SECRET_KEYS=... DATABASE_URL=... REDIS_URL=... attestd worker"},
	"migrate": {vars: storeVars, example: "DATABASE_URL=postgres://... attestd migrate\n" +
		"attestd migrate        # while make run runs: uses its stores (.run/stores.env)"},
	"backup":  {usage: backupUsage, vars: storeVars, example: "attestd backup --dir /var/backups/attestd   # daily, from cron or a systemd timer"},
	"restore": {usage: restoreUsage, vars: storeVars, example: "createdb attestd_restored && DATABASE_URL=postgres://.../attestd_restored attestd restore attestd-20261129T030000Z.dump"},
	"seed":    {vars: settings.Join(storeVars, purge.Vars), example: "attestd seed --agents 10 --attestations 1000"},
	"keys": {usage: keysUsage, vars: settings.Join(storeVars, apikey.Vars),
		example: "attestd keys create --account demo --label laptop   # while make run runs, in a second terminal"},
	"accounts": {usage: accountsUsage, vars: storeVars,
		example: "attestd accounts link-wallet --account demo --wallet 7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU"},
	"verify": {usage: verifyUsage, example: "attestd verify 7Hq...PDA --log-key 'attestd.example/log+1a2b3c4d+AV...' --url https://attestd.example\n" +
		"attestd verify --monitor --log-key 'attestd.example/log+1a2b3c4d+AV...' --url https://attestd.example --watch 1m"},
	"log": {usage: logUsage, vars: settings.Join(settings.Pick(config.Vars, "ATTESTD_PUBLIC_URL"), storeVars),
		example: "attestd log keygen --name attestd.example.com/log"},
	"payments": {usage: paymentsUsage, vars: storeVars, example: "attestd payments list --status pending --since 24h"},
	"mcp": {usage: "usage: attestd mcp [--http ADDR]", vars: settings.MCPVars,
		example: "ATTESTD_API_URL=http://127.0.0.1:8080 attestd mcp"},
	"local": {vars: settings.LocalVars,
		example: "attestd local            # what make run does\nattestd local --reset    # delete the demo data (make reset)"},
	"cluster": {vars: settings.Pick(config.Vars, "ATTESTD_LOG_FORMAT"), example: "attestd cluster -redis-cluster   # what make cluster CLUSTER=redis-cluster does"},
	"devnet":  {vars: settings.Pick(indexer.Vars, "ATTESTD_PROGRAM_ID"), example: "attestd devnet --addr 127.0.0.1:8899 --rate 5"},
	"stores":  {usage: storesUsage, example: "attestd stores -- go test -count=1 ./internal/store/..."},
	"healthcheck": {vars: append(append(settings.Pick(config.Vars, "ATTESTD_HTTP_ADDR"), settings.Pick(indexer.Vars, "ATTESTD_INDEXER_METRICS_ADDR")...),
		settings.Pick(webhook.Vars, "ATTESTD_WORKER_METRICS_ADDR")...), example: "attestd healthcheck -addr 127.0.0.1:8080 -q; attestd healthcheck -role index"},
	"version": {example: "attestd version     # or attestd --version"},
}

// writeHelp prints the help of command name (its first word names the
// top-level command) with the flags of fs (nil: none).
func writeHelp(w io.Writer, name string, fs *flag.FlagSet) {
	top, _, _ := strings.Cut(name, " ")
	c, _ := lookup(top)
	h := help[top]
	usage := h.usage
	if usage == "" || (name != top && fs != nil) {
		usage = "usage: attestd " + name + " [flags]"
	}
	fmt.Fprintf(w, "%s\n\n%s\n", strings.TrimSpace(usage), c.summary)
	if fs != nil && hasFlags(fs) {
		fmt.Fprintln(w, "\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if len(h.vars) > 0 {
		fmt.Fprintln(w, "\nenvironment (docs/configuration.md):")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, v := range h.vars {
			def := v.Default
			if def == "" {
				def = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", v.Name, def, v.Help)
		}
		tw.Flush()
	}
	if h.example != "" {
		fmt.Fprintf(w, "\nexample:\n  %s\n", strings.ReplaceAll(h.example, "\n", "\n  "))
	}
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// suggest is the command nearest to name by edit distance, when one is
// near enough to be a typo ("" otherwise).
func suggest(name string) string {
	// A command the name starts (3 letters or more) is what was meant,
	// before any nearer by edits ("loc": local, not log).
	if len(name) >= 3 {
		for _, c := range commands {
			if strings.HasPrefix(c.name, strings.ToLower(name)) {
				return c.name
			}
		}
	}
	best, bestD := "", 1<<30
	for _, c := range commands {
		if d := editDistance(strings.ToLower(name), c.name); d < bestD {
			best, bestD = c.name, d
		}
	}
	// Two edits (a swapped pair of letters) from a name of 3 letters or
	// more, a third of a long name's letters, or its start.
	if (bestD <= max(2, len(best)/3) && bestD < len(name)) || (len(name) >= 3 && strings.HasPrefix(best, strings.ToLower(name))) {
		return best
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
