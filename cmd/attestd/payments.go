package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/receipt"
	"github.com/gagliardetto/solana-go"
)

const paymentsUsage = `usage:
  attestd payments list [--status pending|settled|failed|released] [--since 24h] [--limit 100]
        the payments ledger, newest first, with totals per status: what to reconcile with the chain
  attestd payments receipt TX
        the signed receipt (offer-and-receipt, JWS EdDSA) of the payment settled by transaction TX, decoded
        and verified under this node's receipt key (ATTESTD_X402_RECEIPT_KEY or _FILE)`

func runPayments(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "receipt" {
		return runPaymentReceipt(ctx, args[1:])
	}
	if len(args) == 0 || args[0] != "list" {
		if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			writeHelp(os.Stdout, "payments", nil)
			return nil
		}
		return usageErrorf("payments: name a subcommand: list or receipt\n%s", paymentsUsage)
	}
	fs := newFlags("payments list")
	status := fs.String("status", "", "only this status: pending, settled, failed or released")
	since := fs.Duration("since", 0, "only payments made within this long (0: all)")
	limit := fs.Int("limit", 100, "rows to list (1..10000)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	switch store.PaymentStatus(*status) {
	case "", store.PaymentPending, store.PaymentSettled, store.PaymentFailed, store.PaymentReleased:
	default:
		return usageErrorf("payments list: --status: want pending, settled, failed or released, got %q", *status)
	}
	if *limit < 1 || *limit > 10_000 || *since < 0 || fs.NArg() > 0 {
		return usageErrorf("payments list: --limit must be 1..10000, --since not negative, and no arguments\n%s", paymentsUsage)
	}
	_, _, st, err := commandStore(ctx, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	var from time.Time
	if *since > 0 {
		from = time.Now().Add(-*since)
	}
	return listPayments(ctx, st, store.PaymentFilter{Status: store.PaymentStatus(*status), Since: from, Limit: *limit}, os.Stdout)
}

func listPayments(ctx context.Context, st *store.Store, f store.PaymentFilter, w io.Writer) error {
	ps, err := st.ListPayments(ctx, f)
	if err != nil {
		return schemaHint(err)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CREATED\tSTATUS\tAMOUNT\tREQUEST\tPAYER\tTRANSACTION\tNODE\tREASON")
	for _, p := range ps {
		bought := p.Route
		if p.Request != "" {
			bought = p.Request // method and path of what was bought
		}
		if p.Recovered {
			bought = "(unknown: recovered from the chain)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", attestation.At(p.CreatedAt), p.Status, amountOf(p), printable(bought), p.Payer,
			orNone(p.TxSignature), orNone(p.Node), orNone(printable(p.Reason)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	totals, err := st.PaymentTotals(ctx, f.Since)
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, s := range []store.PaymentStatus{store.PaymentSettled, store.PaymentPending, store.PaymentFailed, store.PaymentReleased} {
		t := totals[s]
		fmt.Fprintf(w, "%-9s %6d payments  %s atomic units\n", s, t[0], x402.FormatAmount(t[1], 0))
	}
	return nil
}

// amountOf shows USDC amounts in USDC, others in atomic units.
func amountOf(p store.Payment) string {
	if p.Asset == x402.Mainnet.USDC.String() || p.Asset == x402.Devnet.USDC.String() {
		return x402.FormatAmount(p.Amount, x402.USDCDecimals) + " USDC"
	}
	return fmt.Sprintf("%d", p.Amount)
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runPaymentReceipt(ctx context.Context, args []string) error {
	fs := newFlags("payments receipt")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("payments receipt: name one transaction signature\n%s", paymentsUsage)
	}
	tx := fs.Arg(0)
	if _, err := solana.SignatureFromBase58(tx); err != nil {
		return usageErrorf("payments receipt: %q is not a base58 transaction signature", printable(tx))
	}
	cfg, _, st, err := commandStore(ctx, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	key, err := receipt.KeyFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	var signer *receipt.Signer
	if key != nil {
		origin, err := cfg.PublicOrigin()
		if err != nil {
			return fmt.Errorf("payments receipt: the receipt key is named after ATTESTD_PUBLIC_URL: %w", err)
		}
		if signer, err = receipt.NewSigner(key, origin); err != nil {
			return err
		}
	}
	return printReceipt(ctx, st, tx, signer, os.Stdout)
}

// printReceipt prints the receipt of the payment settled by tx, decoded,
// and verifies it when signer (this node's key) is known. A receipt that
// does not verify is an error.
func printReceipt(ctx context.Context, st *store.Store, tx string, signer *receipt.Signer, w io.Writer) error {
	p, err := st.PaymentByTransaction(ctx, tx)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("payments receipt: no payment in the ledger was settled by transaction %s", tx)
	}
	if err != nil {
		return schemaHint(err)
	}
	if p.Receipt == "" {
		return fmt.Errorf("payments receipt: the payment of transaction %s (%s, %s) has no receipt: it was settled without a receipt key, "+
			"or is not settled", tx, p.Status, printable(p.Request))
	}
	kid, claims, err := receipt.Parse(p.Receipt)
	if err != nil {
		return fmt.Errorf("payments receipt: the stored receipt is unreadable: %w", err)
	}
	verdict := "not checked (set ATTESTD_X402_RECEIPT_KEY or ATTESTD_X402_RECEIPT_KEY_FILE, and ATTESTD_PUBLIC_URL, as the node has them)"
	var verr error
	if signer != nil {
		if _, verr = receipt.Verify(p.Receipt, signer.JWKS()); verr != nil {
			verdict = "DOES NOT VERIFY: " + verr.Error()
		} else {
			verdict = "verified under " + signer.KeyID()
		}
	}
	pretty, _ := json.MarshalIndent(claims, "", "  ")
	fmt.Fprintf(w, "receipt   %s\nkid       %s\nsignature %s\nissued    %s\n%s\n", p.Receipt, kid, verdict,
		claims.Time().Format(time.RFC3339), pretty)
	if verr != nil {
		return fmt.Errorf("payments receipt: %w", verr)
	}
	return nil
}
