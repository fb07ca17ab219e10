package verifier

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/receipt"
)

// One payment, one answer: the answer a payment bought is kept, compressed,
// in PostgreSQL beside its ledger row, before the payment is settled; the
// same payment presented again (the same transaction, or the same
// payment-identifier, for the same request) gets those bytes and headers
// again on any node until the answer's retention ends, and 409 after.
// Never is a new answer made for a payment that bought one.

// Bounds of one kept answer: its stored (compressed) bytes, and its
// decoded body. A premium answer is far below both (a full history of
// 1000 records is about 0.7 MB plain); one above is not sold (503,
// nothing charged).
const (
	MaxAnswerBytes = 8 << 20
	MaxAnswerPlain = 64 << 20
)

// pruneEvery is how often a node deletes the kept answers past their
// retention (and resyncs the size the kept answers hold).
const pruneEvery = time.Minute

// pruneBatch bounds the answers one prune statement deletes.
const pruneBatch = 500

// inflightWait is how long a payment presented while its first request is
// still being answered (on any node) waits for that answer before it is
// refused with 409 and Retry-After; inflightPoll how often it looks.
const (
	inflightWait = 3 * time.Second
	inflightPoll = 200 * time.Millisecond
)

// Answer is a paid answer as the middleware is about to send it.
type Answer struct {
	Status int
	// Headers are the answer's content headers (AnswerHeaders), in order.
	Headers [][2]string
	Body    []byte // as sent
	Gzip    bool   // Body is gzip-encoded (Content-Encoding: gzip)
}

// AnswerHeaders are the response headers kept with a paid answer and
// given again with it: those that describe the content. The others are
// the request's own (rate limit, request id, date) or the settlement's
// (PAYMENT-RESPONSE, kept apart).
var AnswerHeaders = []string{"Content-Type", "Content-Encoding", "Content-Language", "Content-Disposition", "Vary", "ETag", "Last-Modified", "Link"}

// Kept is the answer a payment bought, given again.
type Kept struct {
	Status  int
	Headers [][2]string
	// ResponseHeader and PaymentResponse are the settlement header sent
	// with the answer the first time.
	ResponseHeader, PaymentResponse string
	Digest                          string // hex SHA-256 of the decoded body
	body                            []byte
	gzip                            bool
	plain                           int
}

// Body is the body to send again: the bytes first sent, unless they were
// gzip-encoded and this request does not accept gzip (then decoded: the
// same content, the receipt's responseDigest, without Content-Encoding).
func (k *Kept) Body(acceptsGzip bool) (body []byte, gzipped bool, err error) {
	if !k.gzip {
		b, err := gunzip(k.body, k.plain)
		return b, false, err
	}
	if acceptsGzip {
		return k.body, true, nil
	}
	b, err := gunzip(k.body, k.plain)
	return b, false, err
}

// gunzip decodes b, which must hold exactly plain bytes (never more than
// MaxAnswerPlain).
func gunzip(b []byte, plain int) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("kept answer: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, MaxAnswerPlain+1))
	if err != nil {
		return nil, fmt.Errorf("kept answer: %w", err)
	}
	if len(out) != plain {
		return nil, fmt.Errorf("kept answer: %d bytes decoded, %d kept", len(out), plain)
	}
	return out, nil
}

// Kept is the answer this payment bought when it was presented again
// (nil for a new payment, which the handler answers).
func (p *Payment) Kept() *Kept { return p.kept }

// Keep keeps the answer a payment buys, before it is settled: the middleware
// sends it only when Keep succeeded. A refusal (the answer too large to
// keep, the kept answers at their cap, the database down) means the answer
// must be withheld and the payment released: nothing is charged.
func (v *Verifier) Keep(ctx context.Context, p *Payment, a Answer) *Refusal {
	if p.kept != nil {
		return nil
	}
	plain, stored := a.Body, a.Body
	enc := ""
	if a.Gzip {
		enc = "gzip"
		var err error
		if plain, err = gunzipBounded(a.Body); err != nil {
			return v.notKept("answer_not_kept", fmt.Sprintf("the answer could not be kept (%v); nothing was charged", err))
		}
	} else {
		stored = gzipBytes(a.Body)
	}
	p.answer = receipt.Digest(plain)
	if len(stored) > MaxAnswerBytes {
		return v.notKept("answer_not_kept", fmt.Sprintf("this answer is too large to keep for its payment (%d bytes compressed, at most %d); nothing was charged: ask for a smaller page, or use an API key", len(stored), MaxAnswerBytes))
	}
	row := store.Answer{PaymentID: p.ledgerID, Status: a.Status, Headers: a.Headers, Body: stored, Encoding: enc,
		PlainSize: len(plain), Digest: p.answer}
	err := v.ledger.KeepAnswer(ctx, row, v.now().Add(v.retention), v.storeBytes)
	if errors.Is(err, store.ErrAnswerStoreFull) {
		// Answers past their retention may be waiting for the next pass.
		if _, perr := v.PruneAnswers(ctx); perr == nil {
			err = v.ledger.KeepAnswer(ctx, row, v.now().Add(v.retention), v.storeBytes)
		}
	}
	switch {
	case errors.Is(err, store.ErrAnswerStoreFull):
		v.log.Warn("kept answers at their cap: paid answers are refused until older ones expire (raise ATTESTD_X402_ANSWER_STORE_MB)",
			"cap_bytes", v.storeBytes, "retention", v.retention.String())
		return v.notKept("answer_store_full", "the service cannot keep more paid answers right now (its store of answers is full); nothing was charged; use an API key or try again later")
	case err != nil:
		v.log.Error("ledger: keep answer", "id", p.ledgerID, "err", err)
		return v.notKept(ReasonLedgerDown, "cannot keep the answer now (the database is unavailable); nothing was charged; try again shortly")
	}
	v.m.kept.Inc()
	return nil
}

func (v *Verifier) notKept(reason, msg string) *Refusal {
	r := unavailable(reason, msg)
	v.count(r)
	return r
}

// Delivered records the settlement header sent with a settled payment's
// answer (header and value, as the middleware encoded them) and returns
// the pair to send: the first recorded, so every re-presentation gets the
// same bytes as the first answer.
func (v *Verifier) Delivered(ctx context.Context, p *Payment, header, value string) (string, string) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	h, val, err := v.ledger.SetAnswerResponse(sctx, p.ledgerID, header, value)
	if err != nil {
		// The answer, paid for, still leaves; a re-presentation rebuilds
		// the same settlement header from the ledger and the receipt.
		v.log.Warn("ledger: keep settlement header", "id", p.ledgerID, "err", err)
		return header, value
	}
	return h, val
}

// PruneAnswers deletes the kept answers past their retention (in batches)
// and sets the metrics of what is kept. Every node runs it every minute;
// a payment presented after its answer's retention is refused whether or
// not the bytes are gone yet.
func (v *Verifier) PruneAnswers(ctx context.Context) (store.Pruned, error) {
	var total store.Pruned
	for {
		p, err := v.ledger.PruneAnswers(ctx, v.now(), pruneBatch)
		if err != nil {
			return total, err
		}
		total.Answers += p.Answers
		total.Bytes += p.Bytes
		total.Kept = p.Kept
		v.m.pruned.Add(float64(p.Answers))
		v.m.prunedBytes.Add(float64(p.Bytes))
		v.m.storeBytes.Set(float64(p.Kept))
		if p.Answers < pruneBatch {
			return total, nil
		}
	}
}

func (v *Verifier) pruneLoop(ctx context.Context) {
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if p, err := v.PruneAnswers(pctx); err != nil && ctx.Err() == nil {
			v.log.Warn("prune kept answers", "err", err)
		} else if p.Answers > 0 {
			v.log.Info("pruned kept answers past their retention", "answers", p.Answers, "bytes", p.Bytes, "kept_bytes", p.Kept,
				"retention", v.retention.String())
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// keptAnswer is the answer a settled payment bought, for the request it
// bought (done: the payment with it, or a refusal: pruned, expired, the
// database down).
func (v *Verifier) keptAnswer(ctx context.Context, row store.Payment, p *Payment) outcome {
	a, err := v.ledger.PaymentAnswer(ctx, row.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return v.ledgerDown(err)
	}
	now := v.now()
	if errors.Is(err, store.ErrNotFound) || !a.ExpiresAt.After(now) {
		window, until := v.retention, time.Time{}
		if err == nil {
			window, until = a.ExpiresAt.Sub(a.StoredAt).Round(time.Second), a.ExpiresAt
		} else if row.SettledAt != nil {
			until = row.SettledAt.Add(window)
		}
		msg := fmt.Sprintf("this payment was settled and its answer given; answers are kept for %s (ATTESTD_X402_ANSWER_RETENTION) for the same payment presented again", fmtWindow(window))
		if !until.IsZero() {
			msg += ", and this one's ended at " + until.UTC().Format(time.RFC3339)
		}
		msg += "; one payment buys one answer, never a new one: sign a new payment for this request"
		return outcome{ref: &Refusal{Status: http.StatusConflict, Code: apierror.CodePaymentReplayed, Reason: ReasonAnswerExpired,
			Challenge: true, Message: msg}}
	}
	p.ledgerID, p.txSig, p.receipt, p.answer = row.ID, row.TxSignature, row.Receipt, a.Digest
	// What it paid, as the ledger holds it: the price, payTo or fee payer
	// may have changed since (another node's configuration, a rotation).
	p.Amount = row.Amount
	p.Requirements = x402.Requirements{Scheme: x402.SchemeExact, Network: row.Network, Amount: strconv.FormatUint(row.Amount, 10),
		Asset: row.Asset, PayTo: row.PayTo}
	k := &Kept{Status: a.Status, Headers: a.Headers, ResponseHeader: a.ResponseHeader, PaymentResponse: a.PaymentResponse,
		Digest: a.Digest, body: a.Body, gzip: a.Encoding == "gzip", plain: a.PlainSize}
	if k.PaymentResponse == "" {
		// Settled, but its settlement header was never recorded (the node
		// stopped after the chain confirmed, or another node or the
		// reconciler saw it land): made now from the ledger, with the
		// payment's receipt, and kept (the first kept wins).
		resp := x402.SettleResponse{Success: true, Transaction: row.TxSignature, Network: v.cfg.Network.CAIP2, Payer: row.Payer,
			Amount: p.Requirements.Amount}
		hdr := x402.HeaderPaymentResponse
		if p.V1 {
			resp.Network, hdr = v.cfg.Network.Name, x402.HeaderPaymentResponseV1
		}
		v.attachReceipt(ctx, p, &resp)
		enc, err := x402.EncodeHeader(resp)
		if err != nil {
			return outcome{ref: unavailable(ReasonLedgerDown, "cannot give the answer again now; try again shortly")}
		}
		k.ResponseHeader, k.PaymentResponse = v.Delivered(ctx, p, hdr, enc)
	}
	p.kept, p.done = k, true
	return outcome{p: p}
}

// fmtWindow writes a retention as people read it (24h, 90m, 1h30m).
func fmtWindow(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0 && d < time.Hour:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(b)/3 + 64)
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	_, _ = zw.Write(b) // writing to memory does not fail
	_ = zw.Close()
	return buf.Bytes()
}

// gunzipBounded decodes a gzip body the handler made, at most
// MaxAnswerPlain bytes.
func gunzipBounded(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(zr, MaxAnswerPlain+1))
	if err != nil {
		return nil, err
	}
	if len(out) > MaxAnswerPlain {
		return nil, fmt.Errorf("its body decodes to more than %d bytes", MaxAnswerPlain)
	}
	return out, nil
}
