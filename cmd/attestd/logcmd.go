package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/attestd/attestd/internal/config"
	"golang.org/x/mod/sumdb/note"
)

const logUsage = `usage:
  attestd log keygen [--name NAME]   make a transparency log key: prints the private key (ATTESTD_LOG_KEY where
                                     attestd index runs; keep it secret) and the verifier key (publish it; API
                                     nodes may hold only it). NAME is the log's origin, by default the host of
                                     ATTESTD_PUBLIC_URL followed by /log
  attestd log hold                   hold the log of DATABASE_URL after recreating or restoring the database by hand:
                                     no checkpoint is served until attestd index's appender has asked the witnesses
                                     which size they cosigned and the log regrew to it (attestd restore does this)`

func runLog(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageErrorf("log: name a subcommand: keygen, hold\n%s", logUsage)
	}
	switch args[0] {
	case "keygen":
		return logKeygen(args[1:], os.Getenv, os.Stdout)
	case "hold":
		return logHold(ctx, args[1:])
	case "help", "-h", "-help", "--help":
		writeHelp(os.Stdout, "log", nil)
		return nil
	}
	return usageErrorf("log: unknown subcommand %q (want keygen or hold)\n%s", args[0], logUsage)
}

// logKeygen prints a new Ed25519 note key pair named --name (default:
// ATTESTD_PUBLIC_URL's host + "/log").
func logKeygen(args []string, getenv func(string) string, out io.Writer) error {
	fs := newFlags("log keygen")
	name := fs.String("name", "", "the key's name, which is the log's origin (default: the host of ATTESTD_PUBLIC_URL + /log)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *name == "" {
		pub := getenv("ATTESTD_PUBLIC_URL")
		if pub == "" {
			return usageErrorf("log keygen: give --name (for example example.com/log) or set ATTESTD_PUBLIC_URL")
		}
		o, err := config.ParseOrigin(pub)
		if err != nil {
			return fmt.Errorf("log keygen: ATTESTD_PUBLIC_URL: %w", err)
		}
		*name = o.Host + "/log"
	}
	if !utf8.ValidString(*name) || strings.ContainsRune(*name, '+') || strings.IndexFunc(*name, func(r rune) bool {
		return unicode.IsSpace(r) || !unicode.IsPrint(r)
	}) >= 0 || len(*name) > 200 {
		return usageErrorf("log keygen: a key name is printable text of at most 200 bytes without spaces or +")
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, *name)
	if err != nil {
		return fmt.Errorf("log keygen: %w (a name has no spaces and no +)", err)
	}
	fmt.Fprintf(out, "# private key: ATTESTD_LOG_KEY (or in ATTESTD_LOG_KEY_FILE) where attestd index runs; keep it secret\n%s\n"+
		"# verifier key: publish it; API nodes may hold only this one as ATTESTD_LOG_KEY\n%s\n", skey, vkey)
	return nil
}
