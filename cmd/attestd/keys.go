package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/node"
	"github.com/attestd/attestd/internal/store"
	"github.com/jackc/pgx/v5/pgconn"
)

const keysUsage = `usage:
  attestd keys create --account NAME [--label LABEL] [--role admin|read]
                                                       make a key (the account is created if new); prints the key once.
                                                       admin (the default) also manages the account's keys and webhooks;
                                                       read only calls the premium routes
  attestd keys list --account NAME                     list the account's keys and their roles (never the secrets)
  attestd keys revoke PREFIX                           revoke the key whose prefix (8 characters after atst_) is PREFIX`

func runKeys(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageErrorf("keys: name a subcommand: create, list or revoke\n%s", keysUsage)
	}
	switch args[0] {
	case "create":
		return keysCreate(ctx, args[1:], os.Stdout, os.Stderr)
	case "list":
		return keysList(ctx, args[1:], os.Stdout)
	case "revoke":
		return keysRevoke(ctx, args[1:], os.Stdout)
	case "help", "-h", "-help", "--help":
		writeHelp(os.Stdout, "keys", nil)
		return nil
	}
	return usageErrorf("keys: unknown subcommand %q (want create, list or revoke)\n%s", args[0], keysUsage)
}

// keyService opens the store (and Redis when configured, to announce
// changes to serving nodes) and a passive key service over them.
func keyService(ctx context.Context) (*apikey.Service, func(), error) {
	cfg, log, st, err := commandStore(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	closers := []func(){st.Close}
	kopt, err := apikey.ConfigFromEnv(os.Getenv)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	opt := apikey.Deps{Store: st, Passive: true, Logger: log, Channel: cfg.RedisPrefix + apikey.ChannelSuffix,
		Config: apikey.Config{MaxActiveKeys: kopt.MaxActiveKeys}}
	if cfg.RedisURL != "" {
		rdb, err := node.OpenRedis(ctx, cfg)
		if err != nil {
			st.Close()
			return nil, nil, err
		}
		opt.Redis = rdb
		closers = append(closers, func() { rdb.Close() })
	} else {
		log.Warn("REDIS_URL not set: serving nodes learn of key changes only when their lookup expires (within 5 s)")
	}
	svc, err := apikey.New(ctx, opt)
	if err != nil {
		for _, c := range closers {
			c()
		}
		return nil, nil, err
	}
	return svc, func() {
		svc.Close()
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}, nil
}

// schemaHint explains a missing table: the keys migration was not applied.
func schemaHint(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return fmt.Errorf("%w (the database schema is not current: run `attestd migrate`)", err)
	}
	return err
}

func keysCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("keys create")
	account := fs.String("account", "", "account that owns the key (created if it does not exist)")
	label := fs.String("label", "", "label to recognise the key by (up to 100 characters)")
	roleName := fs.String("role", string(apikey.RoleAdmin), "admin (manages the account's keys and webhooks) or read (premium routes only)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required("keys create", "account", *account); err != nil {
		return err
	}
	role, err := apikey.ParseRole(*roleName)
	if err != nil {
		return fmt.Errorf("--role: %w", err)
	}
	if fs.NArg() > 0 {
		return usageErrorf("keys create: unexpected arguments %q", fs.Args())
	}
	if !store.ValidAccountName(*account) {
		return fmt.Errorf("--account: want 1-64 letters, digits, '.', '_', '@' or '-', got %q", *account)
	}
	if err := apikey.ValidateLabel(*label); err != nil {
		return fmt.Errorf("--label: %w", err)
	}
	svc, done, err := keyService(ctx)
	if err != nil {
		return err
	}
	defer done()
	acc, created, err := svc.Store().EnsureAccount(ctx, *account)
	if err != nil {
		return schemaHint(err)
	}
	if created {
		fmt.Fprintf(stderr, "created account %s\n", acc.Name)
	}
	k, err := svc.CreateWithRole(ctx, acc.ID, *label, role)
	if errors.Is(err, store.ErrKeyLimit) {
		return fmt.Errorf("account %s already has the maximum number of active keys; revoke one first", acc.Name)
	}
	if err != nil {
		return schemaHint(err)
	}
	fmt.Fprintf(stderr, "%s key %s for account %s; it is shown only now, store it safely:\n", role, k.Key.Prefix, acc.Name)
	fmt.Fprintln(stdout, k.Secret)
	return nil
}

func keysList(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("keys list")
	account := fs.String("account", "", "account whose keys to list")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required("keys list", "account", *account); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("keys list: unexpected arguments %q", fs.Args())
	}
	svc, done, err := keyService(ctx)
	if err != nil {
		return err
	}
	defer done()
	acc, err := svc.Store().AccountByName(ctx, *account)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no account named %q", *account)
	}
	if err != nil {
		return schemaHint(err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PREFIX\tROLE\tLABEL\tCREATED\tLAST USED\tREVOKED")
	for offset := 0; ; offset += 100 {
		keys, total, err := svc.List(ctx, acc.ID, 100, offset)
		if err != nil {
			return err
		}
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.Prefix, k.Role, printable(k.Label), attestation.At(k.CreatedAt),
				orDash(k.LastUsedAt), orDash(k.RevokedAt))
		}
		if len(keys) == 0 || int64(offset+len(keys)) >= total {
			break
		}
	}
	return tw.Flush()
}

func keysRevoke(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 1 || !apikey.ValidPrefix(args[0]) {
		if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			writeHelp(os.Stdout, "keys", nil)
			return nil
		}
		return usageErrorf("keys revoke: want one key prefix (the 8 characters after atst_)\n%s", keysUsage)
	}
	svc, done, err := keyService(ctx)
	if err != nil {
		return err
	}
	defer done()
	k, err := svc.Revoke(ctx, args[0], 0)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no key with prefix %s", args[0])
	}
	if err != nil {
		return schemaHint(err)
	}
	fmt.Fprintf(stdout, "revoked %s (account %s) at %s\n", k.Prefix, k.AccountName, orDash(k.RevokedAt))
	return nil
}

func orDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return attestation.At(*t).String()
}

// printable keeps a label on one table cell.
func printable(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Join(strings.Fields(s), " ")
}
