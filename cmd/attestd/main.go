// Command attestd is the attestation index service: one binary whose
// subcommands serve the API, migrate and seed the database, index the chain,
// run the local chain simulator and more. Run `attestd help` for the list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
)

// command is one subcommand; each has its own file.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) error
}

// commands is every subcommand, in the order `attestd help` lists them.
var commands = []command{
	{"serve", "serve the public API (and /metrics on the internal listener)", runServe},
	{"index", "index the Prova program from Solana into Postgres (one writer among any number of index processes)", runIndex},
	{"worker", "deliver webhooks: relay the outbox to Redis, fan out, send, retry (any number of workers); -reseal re-seals secrets and exits", runWorker},
	{"migrate", "apply database migrations (idempotent)", runMigrate},
	{"seed", "write realistic demo data through the write path", runSeed},
	{"keys", "manage API keys: keys create --account NAME [--label L] | keys list --account NAME | keys revoke PREFIX", runKeys},
	{"accounts", "manage accounts: accounts link-wallet --account NAME --wallet ADDRESS (sign in to the web console with that wallet)", runAccounts},
	{"payments", "the x402 payments ledger: payments list [--status S] [--since 24h] [--limit N]", runPayments},
	{"mcp", "serve the MCP tool server over the API (stdio; --http ADDR for streamable HTTP)", runMCP},
	{"local", "run everything locally (make run): throwaway Postgres and Redis under .run/, demo data, the API", runLocal},
	{"cluster", "run the whole fleet here (make cluster): nginx, 3 serve, 2 index, 2 worker, the chain simulator, Redis, Postgres and a read replica", runCluster},
	{"devnet", "run the local Solana chain simulator (JSON-RPC on --addr, websocket on port+1)", runDevnet},
	{"stores", "run a command with throwaway Postgres and Redis for tests (make test)", runStores},
	{"healthcheck", "GET a node's /api/v1/health (-addr, -url): exit 0 on 200 within -timeout (a container's health check)", runHealthcheck},
	{"version", "print the version", runVersion},
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: attestd <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(os.Stderr, "\nConfiguration comes from the environment; see docs/configuration.md.\n")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "help" || os.Args[1] == "-h" || os.Args[1] == "--help" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	cmd, ok := lookup(os.Args[1])
	if !ok {
		fmt.Fprintf(os.Stderr, "attestd: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	ctx, stop := signalContext()
	defer stop()
	if err := cmd.run(ctx, os.Args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintf(os.Stderr, "attestd %s: %v\n", cmd.name, err)
		os.Exit(1)
	}
}
