package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/attestd/attestd/internal/buildinfo"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/tracing"
	"github.com/attestd/attestd/internal/webhook/egress"
	"github.com/attestd/attestd/internal/webhook/queue"
	"github.com/attestd/attestd/webhook/signature"
	"github.com/hashicorp/go-retryablehttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// signing is what PrepareRetry needs to sign a retried request afresh.
type signing struct {
	signer *signature.Signer
	id     string
	body   []byte
}

type signingKey struct{}

// newRetryClient wraps the guarded client in go-retryablehttp: one quick
// retry of a request whose connection broke before an answer (a stale
// keep-alive connection), signed with a fresh timestamp; every other
// outcome, answer or not, is the attempt's and the schedule decides.
func newRetryClient(c *egress.Client) *retryablehttp.Client {
	rc := retryablehttp.NewClient()
	rc.HTTPClient = c.HTTP
	rc.Logger = nil
	rc.RetryMax = 1
	rc.RetryWaitMin, rc.RetryWaitMax = 50*time.Millisecond, 250*time.Millisecond
	rc.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err == nil {
			return false, nil
		}
		return brokenConnection(err), err
	}
	rc.Backoff = func(min, max time.Duration, attempt int, _ *http.Response) time.Duration {
		return retryablehttp.LinearJitterBackoff(min, max, attempt, nil) // never a receiver's Retry-After here
	}
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	rc.PrepareRetry = func(req *http.Request) error {
		if s, ok := req.Context().Value(signingKey{}).(signing); ok {
			s.signer.Set(req.Header, s.id, time.Now(), s.body)
		}
		return nil
	}
	return rc
}

// brokenConnection: the connection was reset or closed under the request.
func brokenConnection(err error) bool {
	if errors.Is(err, egress.ErrBlocked) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}

var userAgent = "attestd-webhooks/" + buildinfo.Version

// send makes the attempt: POST the body, signed, within the timeout;
// read at most a snippet of the answer.
func (w *Worker) send(ctx context.Context, h *hook, job *queue.Job) result {
	if tracing.Enabled() {
		return w.sendTraced(ctx, h, job)
	}
	return w.sendAttempt(ctx, h, job)
}

// sendTraced is send in a "webhook deliver" span, the child of the span
// that queued the job when the job carries one (Job.Trace), linked to the
// span that wrote its event to the outbox (Job.Origin: the indexer's
// batch; a link, as the fan-out's, since the parent is the queuing span);
// the request carries the span's traceparent to the receiver (see post).
func (w *Worker) sendTraced(ctx context.Context, h *hook, job *queue.Job) result {
	ctx = tracing.WithTraceparent(ctx, job.Trace)
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
		attribute.String("attestd.webhook.id", job.Webhook), attribute.String("attestd.webhook.delivery", job.Delivery),
		attribute.String("attestd.webhook.event_type", job.Type), attribute.Int("attestd.webhook.attempt", job.Attempts+1))}
	if l, ok := tracing.Link(job.Origin); ok {
		opts = append(opts, trace.WithLinks(l))
	}
	ctx, span := tracing.Tracer().Start(ctx, "webhook deliver", opts...)
	r := w.sendAttempt(ctx, h, job)
	if r.status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", r.status))
	}
	if !r.ok() {
		span.SetStatus(codes.Error, r.err)
	}
	span.End()
	return r
}

func (w *Worker) sendAttempt(ctx context.Context, h *hook, job *queue.Job) result {
	r := result{at: w.now()}
	ctx, cancel := context.WithTimeout(ctx, 2*w.cfg.Timeout+time.Second) // the client bounds each try
	defer cancel()
	start := time.Now()
	resp, why := w.post(ctx, h.url, signing{signer: h.signer, id: job.Delivery, body: []byte(job.Body)})
	if resp == nil {
		r.latency, r.err = time.Since(start), why
		return r
	}
	r.status = resp.StatusCode
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, snippetBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainBytes)) // reuse the connection when the rest is short
	resp.Body.Close()
	r.latency = time.Since(start)
	r.snippet = cleanSnippet(snippet)
	if !r.ok() {
		r.err = fmt.Sprintf("the receiver answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		if throttling(resp.StatusCode) {
			r.retryAfter = httpapi.ParseRetryAfter(resp.Header.Get("Retry-After"), r.at, maxRetryAfter)
		}
	}
	return r
}

// post sends s.body to url, signed as s (again on the client's retry);
// without an answer, why says why (the caller closes an answer's body).
func (w *Worker) post(ctx context.Context, url string, s signing) (resp *http.Response, why string) {
	// Connect where the host's cap turn was taken (dests).
	ctx = egress.WithAddr(ctx, w.dests.of(ctx, hostOf(url)).addr)
	req, err := retryablehttp.NewRequestWithContext(context.WithValue(ctx, signingKey{}, s), http.MethodPost, url, s.body)
	if err != nil {
		return nil, "invalid request: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	s.signer.Set(req.Header, s.id, time.Now(), s.body)
	if tracing.Enabled() {
		tracing.Inject(ctx, req.Header) // traceparent: the delivery's span
	}
	resp, err = w.client.Do(req)
	if err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		return nil, describeError(err, w.cfg.Timeout)
	}
	return resp, ""
}

// describeError says why an attempt got no answer, without the URL (the
// log already names the webhook).
func describeError(err error, timeout time.Duration) string {
	var be *egress.BlockedError
	var ne net.Error
	var ue *url.Error
	switch {
	case errors.As(err, &be):
		// Not the address: the log must not map names to private addresses.
		return cleanText("refused to connect: the host resolved to "+be.Reason+", which deliveries may not reach", maxErrorLen)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer within %s", timeout)
	case errors.As(err, &ue):
		err = ue.Err
	}
	return cleanText(err.Error(), maxErrorLen)
}

// throttling reports whether a status asks the sender to slow down
// (Standard Webhooks: 429, 502, 504; and 503): its Retry-After is honoured.
func throttling(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}
