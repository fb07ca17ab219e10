package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/web"
)

const accountsUsage = `usage:
  attestd accounts link-wallet --account NAME --wallet ADDRESS
                                 let the Solana wallet ADDRESS (base58) sign in to the web console as the
                                 existing account NAME (replacing any wallet it had); a wallet names one account`

func runAccounts(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageErrorf("accounts: name a subcommand: link-wallet\n%s", accountsUsage)
	}
	switch args[0] {
	case "link-wallet":
		return accountsLinkWallet(ctx, args[1:], os.Stdout)
	case "help", "-h", "-help", "--help":
		writeHelp(os.Stdout, "accounts", nil)
		return nil
	}
	return usageErrorf("accounts: unknown subcommand %q (want link-wallet)\n%s", args[0], accountsUsage)
}

func accountsLinkWallet(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("accounts link-wallet")
	account := fs.String("account", "", "the account's name")
	wallet := fs.String("wallet", "", "the wallet's address (base58)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required("accounts link-wallet", "account", *account, "wallet", *wallet); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("accounts link-wallet: unexpected arguments %q", fs.Args())
	}
	if _, err := web.PublicKey(*wallet); err != nil {
		return fmt.Errorf("--wallet: %w", err)
	}
	_, _, st, err := commandStore(ctx, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	a, err := st.LinkWallet(ctx, *account, *wallet)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("no account named %q (attestd keys create --account %s makes one)", *account, *account)
	case errors.Is(err, store.ErrWalletTaken):
		return fmt.Errorf("wallet %s already signs in to another account", *wallet)
	case err != nil:
		return err
	}
	fmt.Fprintf(out, "wallet %s now signs in to account %s\n", *wallet, a.Name)
	return nil
}
