package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/store"
	"github.com/attestd/attestd/x402"
)

const paymentsUsage = `usage:
  attestd payments list [--status pending|settled|failed|released] [--since 24h] [--limit 100]
        the payments ledger, newest first, with totals per status: what to reconcile with the chain`

func runPayments(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "list" {
		if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			writeHelp(os.Stdout, "payments", nil)
			return nil
		}
		return usageErrorf("payments: name a subcommand: list\n%s", paymentsUsage)
	}
	fs := newFlags("payments list")
	status := fs.String("status", "", "only this status: pending, settled, failed or released")
	since := fs.Duration("since", 0, "only payments made within this long (0: all)")
	limit := fs.Int("limit", 100, "rows to list (1..10000)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	switch *status {
	case "", store.PaymentPending, store.PaymentSettled, store.PaymentFailed, store.PaymentReleased:
	default:
		return usageErrorf("payments list: --status: want pending, settled, failed or released, got %q", *status)
	}
	if *limit < 1 || *limit > 10_000 || *since < 0 || fs.NArg() > 0 {
		return usageErrorf("payments list: --limit must be 1..10000, --since not negative, and no arguments\n%s", paymentsUsage)
	}
	_, _, st, err := commandStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	var from time.Time
	if *since > 0 {
		from = time.Now().Add(-*since)
	}
	return listPayments(ctx, st, store.PaymentFilter{Status: *status, Since: from, Limit: *limit}, os.Stdout)
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
	for _, s := range []string{store.PaymentSettled, store.PaymentPending, store.PaymentFailed, store.PaymentReleased} {
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
