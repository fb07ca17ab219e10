package fleet

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/prova"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/webhook/signature"
	"github.com/attestd/attestd/x402"
	"github.com/gagliardetto/solana-go"
	"golang.org/x/mod/sumdb/tlog"
)

// hookReceiver is a webhook receiver as SPEC.md's: it verifies each
// delivery's Standard Webhooks signature (and x-service-signature) on
// the raw body before reading it, answers 200, and deduplicates on
// webhook-id; it counts how many times each id arrived. It also answers
// the endpoint verification challenge, so its deliveries share the
// verified per-host cap.
type hookReceiver struct {
	srv    *httptest.Server
	ready  chan struct{} // closed once the secret is known
	secret string

	mu         sync.Mutex
	arrived    map[string]int       // webhook-id -> arrivals of an attestation.created delivery
	events     map[string]hookEvent // webhook-id -> the event, as first delivered
	refused    []string             // deliveries refused: signature, or body
	challenges int
}

// hookEvent is what a delivery says of its chain event.
type hookEvent struct {
	PDA, Tx string
	Slot    uint64
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{ready: make(chan struct{}), arrived: map[string]int{}, events: map[string]hookEvent{}}
	h.srv = httptest.NewServer(h) // 127.0.0.1
	t.Cleanup(h.srv.Close)
	return h
}

// know sets the webhook's signing secret (shown once, when it is made).
func (h *hookReceiver) know(secret string) { h.secret = secret; close(h.ready) }

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case <-h.ready:
	case <-time.After(30 * time.Second):
		http.Error(w, "no secret yet", http.StatusServiceUnavailable)
		return
	}
	id := r.Header.Get(signature.HeaderID)
	if err := errors.Join(signature.Verify(h.secret, r.Header, body, time.Now(), 0),
		signature.VerifyService(h.secret, r.Header.Get("x-service-signature"), body)); err != nil {
		h.refuse(fmt.Sprintf("%s: %v", id, err))
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	if answer, ok := webhook.ChallengeAnswer(body); ok {
		h.mu.Lock()
		h.challenges++
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
		return
	}
	var e struct {
		Type string
		Data struct {
			PDA         string `json:"pda"`
			TxSignature string `json:"txSignature"`
			Slot        uint64 `json:"slot"`
		}
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Type != store.EventAttestationCreated {
		h.refuse(fmt.Sprintf("%s: unexpected delivery %.200s", id, body))
		w.WriteHeader(http.StatusOK) // not retried: the test fails on it
		return
	}
	h.mu.Lock()
	if h.arrived[id]++; h.arrived[id] == 1 {
		h.events[id] = hookEvent{PDA: e.Data.PDA, Tx: e.Data.TxSignature, Slot: e.Data.Slot}
	}
	h.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (h *hookReceiver) refuse(why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refused = append(h.refused, why)
}

// seen is a copy of the events the receiver kept (once per webhook-id)
// and of how many times each id arrived.
func (h *hookReceiver) seen() (events map[string]hookEvent, arrived map[string]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	events, arrived = make(map[string]hookEvent, len(h.events)), make(map[string]int, len(h.arrived))
	for k, v := range h.events {
		events[k] = v
	}
	for k, v := range h.arrived {
		arrived[k] = v
	}
	return events, arrived
}

// chainEvent is one attestation the chain recorded, with the webhook-id
// its attestation.created delivery to a webhook carries.
type chainEvent struct {
	hookEvent
	WebhookID string
}

// chainAttestationEvents is the ground truth: every attestation on the
// chain by pda, and, for webhook wh (when not ""), the webhook-id of its
// delivery (store.DeliveryID of the chain event).
func chainAttestationEvents(t *testing.T, c *devnet.Chain, wh string) map[string]chainEvent {
	t.Helper()
	out := map[string]chainEvent{}
	for _, e := range c.Events() {
		switch e.Event.(type) {
		case prova.AttestationIssued, *prova.AttestationIssued:
		default:
			continue
		}
		pda, err := attestation.DerivePDA(c.ProgramID(), e.TxSignature, e.Index)
		testenv.Must(t, err, "pda of %s/%d", e.TxSignature, e.Index)
		ev := chainEvent{hookEvent: hookEvent{PDA: pda.String(), Tx: e.TxSignature.String(), Slot: e.Slot}}
		if wh != "" {
			ev.WebhookID = store.DeliveryID(wh, store.EventAttestationCreated,
				fmt.Sprintf("%s/%s/%d/%d", ev.PDA, ev.Tx, e.Index, e.Slot))
		}
		out[ev.PDA] = ev
	}
	return out
}

// servedAttestations walks /attestations on one API node by cursor, 100
// a page, and returns every pda it lists with how many times.
func servedAttestations(ctx context.Context, node string) (map[string]int, error) {
	out := map[string]int{}
	cursor := ""
	for range 10000 {
		var page struct {
			Data       []struct{ PDA string }
			Pagination struct{ NextCursor string }
		}
		u := "http://" + node + "/api/v1/attestations?limit=100"
		if cursor != "" {
			u += "&cursor=" + cursor
		}
		if err := getJSON(ctx, u, &page); err != nil {
			return out, err
		}
		for _, a := range page.Data {
			out[a.PDA]++
		}
		if page.Pagination.NextCursor == "" || len(page.Data) == 0 {
			return out, nil
		}
		cursor = page.Pagination.NextCursor
	}
	return out, errors.New("more than 10,000 pages")
}

// compareSets says what want has that got lacks and what got has that
// want lacks ("" when they are equal), a few of each.
func compareSets[V, W any](want map[string]V, got map[string]W) string {
	var missing, extra []string
	for k := range want {
		if _, ok := got[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra) == 0 {
		return ""
	}
	sort.Strings(missing)
	sort.Strings(extra)
	return fmt.Sprintf("%d missing %v, %d unexpected %v", len(missing), missing[:min(5, len(missing))], len(extra), extra[:min(5, len(extra))])
}

// checkpoint is one answer of GET <node>/log/checkpoint.
type checkpoint struct {
	Status   int
	Size     int64
	Root     tlog.Hash
	Cosigned bool   // by the fleet's witness
	Text     string // the body (the reason, when not 200)
}

// readCheckpoint fetches a node's checkpoint and reads its size, root
// and whether the witness named witness cosigned it.
func readCheckpoint(ctx context.Context, node, witness string) (checkpoint, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+node+"/log/checkpoint", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return checkpoint{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return checkpoint{}, err
	}
	c := checkpoint{Status: res.StatusCode, Text: string(b)}
	if res.StatusCode != http.StatusOK {
		return c, nil
	}
	lines := strings.Split(c.Text, "\n")
	if len(lines) < 4 {
		return c, fmt.Errorf("not a checkpoint: %q", c.Text)
	}
	if c.Size, err = strconv.ParseInt(lines[1], 10, 64); err != nil {
		return c, fmt.Errorf("checkpoint size %q: %w", lines[1], err)
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize {
		return c, fmt.Errorf("checkpoint root %q: %v", lines[2], err)
	}
	copy(c.Root[:], root)
	for _, l := range lines[3:] {
		c.Cosigned = c.Cosigned || strings.HasPrefix(l, "— "+witness+" ")
	}
	return c, nil
}

// checkConsistency proves through node's /log/consistency that the tree
// of newer extends the tree of older.
func checkConsistency(ctx context.Context, node string, older, newer checkpoint) error {
	if older.Size == newer.Size {
		if older.Root != newer.Root {
			return fmt.Errorf("two roots for size %d: %x and %x", older.Size, older.Root, newer.Root)
		}
		return nil
	}
	var out struct{ Data struct{ Proof []string } }
	if err := getJSON(ctx, fmt.Sprintf("http://%s/api/v1/log/consistency?from=%d&to=%d", node, older.Size, newer.Size), &out); err != nil {
		return err
	}
	proof := make(tlog.TreeProof, len(out.Data.Proof))
	for i, p := range out.Data.Proof {
		b, err := base64.StdEncoding.DecodeString(p)
		if err != nil || len(b) != tlog.HashSize {
			return fmt.Errorf("consistency proof hash %q: %v", p, err)
		}
		copy(proof[i][:], b)
	}
	return tlog.CheckTree(proof, newer.Size, newer.Root, older.Size, older.Root)
}

// checkpointWatch polls every API node's checkpoint and keeps what each
// 200 served: a node must never serve a checkpoint below floor.
type checkpointWatch struct {
	mu     sync.Mutex
	served int
	held   int    // answers other than 200
	reason string // the last of those
	below  []string
	cancel context.CancelFunc
	done   chan struct{}
}

func watchCheckpoints(f *Fleet, floor int64) *checkpointWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &checkpointWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			for _, p := range f.Serve {
				c, err := readCheckpoint(ctx, p.Addr, f.Witness.Name)
				if err != nil {
					continue
				}
				w.mu.Lock()
				if c.Status != http.StatusOK {
					w.held++
					w.reason = fmt.Sprintf("%s: %d %s", p.Name, c.Status, c.Text)
					w.mu.Unlock()
					continue
				}
				w.served++
				if c.Size < floor {
					w.below = append(w.below, fmt.Sprintf("%s served size %d", p.Name, c.Size))
				}
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *checkpointWatch) stop() (served, held int, below []string, reason string) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.served, w.held, w.below, w.reason
}

// traffic records attestations on the chain in the background: perTick
// every tick, over the chain's first agents, until stopped.
type traffic struct {
	cancel context.CancelFunc
	done   chan error
}

func startTraffic(c *devnet.Chain, agents, perTick int, tick time.Duration) *traffic {
	ctx, cancel := context.WithCancel(context.Background())
	tr := &traffic{cancel: cancel, done: make(chan error, 1)}
	go func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				tr.done <- nil
				return
			case <-t.C:
			}
			if _, err := c.Generate(ctx, agents, perTick, perTick); err != nil && ctx.Err() == nil {
				tr.done <- err
				return
			}
		}
	}()
	return tr
}

func (tr *traffic) stop() error { tr.cancel(); return <-tr.done }

// payer pays for requests with x402 on the chain simulator, as an agent
// does: the 402's requirements, a transfer it signs, PAYMENT-SIGNATURE.
type payer struct {
	base  string // the API base URL (through nginx)
	chain *devnet.Chain
	key   solana.PrivateKey
}

// answer is a paid route's answer.
type answer struct {
	Status  int
	Header  http.Header
	Body    []byte
	Code    string // error.code
	Reason  string // error.reason
	Settled string // PAYMENT-RESPONSE's transaction
}

func (p *payer) post(t *testing.T, path, body, payment string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.base+path, bytes.NewReader([]byte(body)))
	testenv.Must(t, err, "request")
	req.Header.Set("Content-Type", "application/json")
	if payment != "" {
		req.Header.Set(x402.HeaderPaymentSignature, payment)
	}
	res, err := (&http.Client{Timeout: time.Minute}).Do(req)
	testenv.Must(t, err, "POST %s", path)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	testenv.Must(t, err, "read the answer")
	a := answer{Status: res.StatusCode, Header: res.Header, Body: b}
	var e struct{ Error struct{ Code, Reason string } }
	if json.Unmarshal(b, &e) == nil {
		a.Code, a.Reason = e.Error.Code, e.Error.Reason
	}
	if sr, err := x402.DecodeSettleResponse(res.Header.Get(x402.HeaderPaymentResponse)); err == nil {
		a.Settled = sr.Transaction
	}
	return a
}

// sign answers path's 402 with a payment: the PAYMENT-SIGNATURE value.
func (p *payer) sign(t *testing.T, path, body string) string {
	t.Helper()
	a := p.post(t, path, body, "")
	if a.Status != http.StatusPaymentRequired {
		t.Fatalf("unpaid POST %s: %d %s", path, a.Status, a.Body)
	}
	pr, err := x402.DecodePaymentRequired(a.Header.Get(x402.HeaderPaymentRequired))
	testenv.Must(t, err, "PAYMENT-REQUIRED")
	wire, err := x402.BuildExact(pr.Accepts[0], x402.Payment{Payer: p.key, Blockhash: p.chain.LatestBlockhash(), Decimals: 6})
	testenv.Must(t, err, "build the payment")
	h, err := x402.EncodeHeader(x402.NewPaymentPayload(pr.Resource, pr.Accepts[0], wire))
	testenv.Must(t, err, "encode the payment")
	return h
}

// alertWatch keeps every alert Prometheus showed, pending or firing, by
// name and job, polled every half second.
type alertWatch struct {
	mu     sync.Mutex
	seen   map[string]string // "name{job}" -> firing, or pending if it never fired
	cancel context.CancelFunc
	done   chan struct{}
}

func watchAlerts(f *Fleet) *alertWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &alertWatch{seen: map[string]string{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			if as, err := f.Prometheus.Alerts(ctx); err == nil {
				w.mu.Lock()
				for _, a := range as {
					k := a.Labels["alertname"] + "{" + a.Labels["job"] + "}"
					if w.seen[k] != "firing" {
						w.seen[k] = a.State
					}
				}
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *alertWatch) stop() map[string]string {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

// alerts counts Prometheus's alerts named name in state ("" any), and
// lists them.
func alerts(ctx context.Context, f *Fleet, name, state string) (int, string) {
	as, err := f.Prometheus.Alerts(ctx)
	if err != nil {
		return -1, err.Error()
	}
	n, list := 0, []string{}
	for _, a := range as {
		list = append(list, fmt.Sprintf("%s{job=%s,name=%s}=%s", a.Labels["alertname"], a.Labels["job"], a.Labels["name"], a.State))
		if a.Labels["alertname"] == name && (state == "" || a.State == state) {
			n++
		}
	}
	return n, strings.Join(list, " ")
}
