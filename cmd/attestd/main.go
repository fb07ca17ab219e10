// Command attestd is the attestation index service: one binary whose
// subcommands serve the API, migrate and seed the database, index the chain,
// run the local chain simulator and more. Run `attestd help` for the list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// command is one subcommand; each has its own file.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) error
}

// commands is every subcommand, in the order `attestd help` lists them
// (set in init: help texts refer back to it).
var commands []command

func init() {
	commands = []command{
		{"serve", "serve the public API (and /metrics on the internal listener)", runServe},
		{"index", "index the Prova program from Solana into Postgres (one writer among any number of index processes)", runIndex},
		{"worker", "deliver webhooks: relay the outbox to Redis, fan out, send, retry (any number of workers); -reseal re-seals secrets and exits", runWorker},
		{"dataset", "cut the daily Parquet dataset of the log's leaves into object storage (the backfill first; one writer among any number); --once runs one round", runDataset},
		{"log", "the transparency log: log keygen [--name NAME] prints a new log key pair", runLog},
		{"verify", "check an attestation is in the transparency log (verify PDA --log-key KEY), a day of the dataset (verify --dataset FILE) or monitor the log (verify --monitor)", runVerify},
		{"migrate", "apply database migrations (idempotent)", runMigrate},
		{"backup", "dump the database with pg_dump and record the backup (its age is a metric)", runBackup},
		{"restore", "restore a backup into an empty database, migrate it and hold the log until it regrows to its witnessed size", runRestore},
		{"seed", "write realistic demo data through the write path", runSeed},
		{"keys", "manage API keys: keys create --account NAME [--label L] | keys list --account NAME | keys revoke PREFIX", runKeys},
		{"accounts", "manage accounts: accounts link-wallet --account NAME --wallet ADDRESS (sign in to the web console with that wallet)", runAccounts},
		{"payments", "the x402 payments ledger: payments list [--status S] [--since 24h] [--limit N]", runPayments},
		{"mcp", "serve the MCP tool server over the API (stdio; --http ADDR for streamable HTTP)", runMCP},
		{"local", "run everything locally (make run): throwaway Postgres and Redis under .run/, demo data, the API", runLocal},
		{"cluster", "run the whole fleet here (make cluster): nginx, 3 serve, 2 index, 2 worker, 1 dataset, the chain simulator, an S3 store (SeaweedFS), Redis, Postgres and a read replica", runCluster},
		{"devnet", "run the local Solana chain simulator (JSON-RPC on --addr, websocket on port+1)", runDevnet},
		{"stores", "run a command with throwaway Postgres and Redis for tests (make test)", runStores},
		{"healthcheck", "GET a process's health (-role serve|index|worker, -addr, -url): exit 0 on 200 within -timeout (a container's health check)", runHealthcheck},
		{"version", "print the version", runVersion},
	}
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usage lists the commands, wrapped to helpWidth's columns.
func usage(w io.Writer) {
	width := helpWidth()
	fmt.Fprintf(w, "usage: attestd <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, strings.TrimLeft(wrapWords(c.summary, width, 14, 14), " "))
	}
	fmt.Fprintf(w, "\n%s\n", wrapWords("`attestd help COMMAND` (or `attestd COMMAND --help`) shows a command's flags, environment and an example. "+
		"Configuration comes from the environment; see docs/configuration.md.", width, 0, 0))
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// run dispatches args (the command line after the program name) and
// returns the exit status: 0, 1 when the command failed, exitUsage for a
// command line it cannot act on.
func run(args []string) int {
	if len(args) == 0 {
		usage(os.Stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(os.Stdout)
		return 0
	case "-version", "--version":
		args = []string{"version"}
	case "help":
		if len(args) == 1 {
			usage(os.Stdout)
			return 0
		}
		// attestd help CMD is attestd CMD --help.
		args = []string{args[1], "--help"}
	}
	cmd, ok := lookup(args[0])
	if !ok {
		msg := fmt.Sprintf("attestd: unknown command %q", args[0])
		if s := suggest(args[0]); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		fmt.Fprintf(os.Stderr, "%s\nRun `attestd help` for the list of commands.\n", msg)
		return exitUsage
	}
	ctx, stop := signalContext()
	defer stop()
	err := cmd.run(ctx, args[1:])
	var ue usageError
	var ec interface{ ExitCode() int }
	var rep interface{ Reported() bool }
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &rep) && rep.Reported(): // the command's output said why already
		if errors.As(err, &ec) {
			return ec.ExitCode()
		}
		return 1
	case errors.As(err, &ue):
		msg := err.Error()
		if !strings.HasPrefix(msg, cmd.name+" ") && !strings.HasPrefix(msg, cmd.name+":") {
			msg = cmd.name + ": " + msg
		}
		fmt.Fprintf(os.Stderr, "attestd %s\nRun `attestd help %s` for its flags and an example.\n", msg, cmd.name)
		return exitUsage
	case errors.As(err, &ec):
		fmt.Fprintf(os.Stderr, "attestd %s: %v\n", cmd.name, err)
		return ec.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "attestd %s: %v\n", cmd.name, err)
	return 1
}
