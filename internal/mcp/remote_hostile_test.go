package mcp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
)

// hostileCase is one request of the hostile matrix over /mcp.
type hostileCase struct {
	name   string
	method string      // "" : POST
	header http.Header // over the defaults (JSON, both Accepts, revision 2025-11-25); a nil value removes one
	body   []byte      // nil: none
	// chunked sends the body without a Content-Length.
	chunked bool
	// raw, when set, is sent byte for byte on a fresh connection instead
	// ({host} is the node's host); halfClose then closes its write side.
	raw       string
	halfClose bool
	// mayClose: the node may close the connection without an answer.
	mayClose bool
	from     string // the caller's loopback address ("" : 127.0.0.1)
	// maxAlloc, when set, bounds what the process allocates while the
	// case is answered (it is then sent alone: see TestRemoteHostileBombs).
	maxAlloc uint64
	want     expect
}

// text is everything the case sends: what an answer may echo.
func (c hostileCase) text() string {
	var b strings.Builder
	b.Write(c.body)
	b.WriteString(c.raw)
	for _, vs := range c.header {
		for _, v := range vs {
			b.WriteString(v)
		}
	}
	return b.String()
}

// outcome is what the node answered to a case.
type outcome struct {
	status  int
	header  http.Header
	body    []byte
	elapsed time.Duration
	alloc   uint64
	err     error
}

// errClosed: the node closed the connection without an answer.
var errClosed = errors.New("connection closed without an answer")

// Bounds of an answer: past hangBound it is a hang; past answerTimeout
// the matrix stops waiting.
const (
	hangBound     = 12 * time.Second
	answerTimeout = 20 * time.Second
)

// hostileTarget is a node's /mcp as the matrix attacks it.
type hostileTarget struct {
	url, host string
	// secrets are host:port of the stores and the chain: never in an
	// answer.
	secrets []string
	mu      sync.Mutex
	clients map[string]*http.Client
}

func newTarget(t testing.TB, endpoint string, env *apptest.Env, more ...string) *hostileTarget {
	t.Helper()
	u, err := url.Parse(endpoint)
	testenv.Must(t, err, "endpoint")
	tg := &hostileTarget{url: endpoint, host: u.Host, clients: map[string]*http.Client{}}
	for _, s := range append([]string{env.DatabaseURL, env.RedisURL}, more...) {
		if su, err := url.Parse(s); err == nil && su.Host != "" {
			tg.secrets = append(tg.secrets, su.Host)
		}
	}
	return tg
}

// client is the HTTP client of the caller at from.
func (tg *hostileTarget) client(from string) *http.Client {
	if from == "" {
		from = "127.0.0.1"
	}
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if c := tg.clients[from]; c != nil {
		return c
	}
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c := &http.Client{Timeout: answerTimeout, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 8, DisableCompression: true}}
	tg.clients[from] = c
	return c
}

// send sends c and reads its answer.
func (tg *hostileTarget) send(c hostileCase) outcome {
	if c.raw != "" {
		return tg.sendRaw(c)
	}
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	method := c.method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequest(method, tg.url, body)
	if err != nil {
		return outcome{err: err}
	}
	if c.chunked {
		req.Body, req.ContentLength, req.GetBody = io.NopCloser(bytes.NewReader(c.body)), -1, nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	for k, vs := range c.header {
		if vs == nil {
			req.Header.Del(k)
		} else {
			req.Header[k] = vs
		}
	}
	start := time.Now()
	res, err := tg.client(c.from).Do(req)
	if err != nil {
		if c.mayClose && (errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)) {
			// Refused and closed while the body was still being sent.
			err = fmt.Errorf("%w (%v)", errClosed, err)
		}
		return outcome{err: err, elapsed: time.Since(start)}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	return outcome{status: res.StatusCode, header: res.Header, body: b, elapsed: time.Since(start), err: err}
}

// sendRaw writes c.raw on a fresh connection and reads one answer.
func (tg *hostileTarget) sendRaw(c hostileCase) outcome {
	from := c.from
	if from == "" {
		from = "127.0.0.1"
	}
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	conn, err := d.Dial("tcp", tg.host)
	if err != nil {
		return outcome{err: err}
	}
	defer conn.Close()
	start := time.Now()
	_ = conn.SetDeadline(start.Add(answerTimeout))
	if _, err := io.WriteString(conn, strings.ReplaceAll(c.raw, "{host}", tg.host)); err != nil {
		return outcome{err: err}
	}
	if c.halfClose {
		_ = conn.(*net.TCPConn).CloseWrite()
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	for err == nil && res.StatusCode < 200 { // an interim answer: 100 Continue
		res, err = http.ReadResponse(br, nil)
	}
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return outcome{err: err, elapsed: time.Since(start)}
		}
		return outcome{err: fmt.Errorf("%w (%v)", errClosed, err), elapsed: time.Since(start)}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	return outcome{status: res.StatusCode, header: res.Header, body: b, elapsed: time.Since(start), err: err}
}

// run sends every case, workers at a time.
func (tg *hostileTarget) run(cases []hostileCase, workers int) []outcome {
	out := make([]outcome, len(cases))
	work := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				out[i] = tg.send(cases[i])
			}
		}()
	}
	for i := range cases {
		work <- i
	}
	close(work)
	wg.Wait()
	return out
}

// measured sends c alone and measures what the process allocated
// meanwhile.
func (tg *hostileTarget) measured(c hostileCase) outcome {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	o := tg.send(c)
	runtime.ReadMemStats(&ms)
	o.alloc = ms.TotalAlloc - before
	return o
}

// envelope is the API's error envelope.
type envelope struct {
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rpcMessage is a JSON-RPC message as the endpoint answers it.
type rpcMessage struct {
	rpcResult
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
}

// messages are the JSON-RPC messages of an answer: its body, or the data
// of each event of an event stream.
func messages(o outcome) []rpcMessage {
	var raws [][]byte
	if strings.HasPrefix(o.header.Get("Content-Type"), "text/event-stream") {
		for _, l := range strings.Split(string(o.body), "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				raws = append(raws, []byte(d))
			}
		}
	} else {
		raws = [][]byte{o.body}
	}
	var ms []rpcMessage
	for _, r := range raws {
		var m rpcMessage
		if json.Unmarshal(r, &m) != nil || m.JSONRPC != "2.0" {
			return nil
		}
		ms = append(ms, m)
	}
	return ms
}

// reply is the answer's response (the last message), or nil.
func reply(o outcome) *rpcMessage {
	ms := messages(o)
	if len(ms) == 0 || ms[len(ms)-1].Method != "" {
		return nil
	}
	return &ms[len(ms)-1]
}

// Internal detail an answer must never carry (unless the request did).
var (
	leakPattern = regexp.MustCompile(`(?i)\.go:\d+|goroutine \d+|panic|runtime error|/(work|home|root|tmp|usr|go/pkg)/|` +
		`\b(select|insert into|delete from|update)\b[^"]{0,80}\b(from|where|set|values)\b|pq: |pgx|sqlstate|postgres(ql)?://|redis://|` +
		`dial tcp|connection refused|i/o timeout|broken pipe|connection reset|inprocess|in-process|deadline exceeded|context canceled|` +
		`fasthttp|the sdk answered`)
	hostPort = regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}:\d{1,5}\b|\[[0-9A-Fa-f:.]+\]:\d{1,5}|(?i:\blocalhost:\d{1,5}\b)`)
)

// leak is the internal detail answer b tells, or "".
func (tg *hostileTarget) leak(b []byte, request string) string {
	s := string(b)
	for _, m := range leakPattern.FindAllString(s, -1) {
		if !strings.Contains(strings.ToLower(request), strings.ToLower(m)) {
			return fmt.Sprintf("%q", m)
		}
	}
	for _, m := range hostPort.FindAllString(s, -1) {
		if !tg.own(m) && !strings.Contains(request, m) {
			return fmt.Sprintf("the address %s", m)
		}
	}
	for _, sec := range tg.secrets {
		if strings.Contains(s, sec) {
			return "the address " + sec
		}
	}
	return ""
}

// own reports whether hostPort is the node's: its host, or for a
// loopback origin its port under any loopback name.
func (tg *hostileTarget) own(hostPort string) bool {
	h, port, err := net.SplitHostPort(tg.host)
	if err != nil || !config.IsLoopbackHost(h) {
		return hostPort == tg.host
	}
	return slices.Contains([]string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port}, strings.ToLower(hostPort))
}

// broken lists the promises the answer o to c breaks: an answer in time,
// no 5xx, nothing internal told, a non-2xx in the error envelope (or,
// not strict, a JSON-RPC error), a 200 a JSON-RPC answer, a 202 empty.
// strict adds the matrix's own: the envelope alone for a non-2xx, with
// a request id and a bounded echo; JSON answers only, echoing the
// request's id; no answer a cache may keep; allocations in bounds.
func (tg *hostileTarget) broken(c hostileCase, o outcome, strict bool) []string {
	switch {
	case o.err != nil && c.mayClose && errors.Is(o.err, errClosed):
		return nil
	case o.err != nil:
		return []string{fmt.Sprintf("no answer after %v: %v", o.elapsed.Round(time.Millisecond), o.err)}
	}
	var why []string
	if o.elapsed > hangBound {
		why = append(why, fmt.Sprintf("answered after %v", o.elapsed.Round(time.Millisecond)))
	}
	if c.maxAlloc > 0 && o.alloc > c.maxAlloc {
		why = append(why, fmt.Sprintf("the node allocated %d MiB answering it (bound %d MiB)", o.alloc>>20, c.maxAlloc>>20))
	}
	if l := tg.leak(o.body, strings.ReplaceAll(c.text(), "{host}", tg.host)); l != "" {
		why = append(why, "internal detail told: "+l)
	}
	switch {
	case o.status >= 500:
		why = append(why, "5xx")
	case o.status >= 400:
		why = append(why, errorShape(c, o, strict)...)
	case o.status == http.StatusOK:
		why = append(why, answerShape(c, o, strict)...)
	case o.status == http.StatusAccepted:
		if len(o.body) != 0 {
			why = append(why, "202 with a body")
		}
	default:
		why = append(why, fmt.Sprintf("status %d", o.status))
	}
	if cc := o.header.Get("Cache-Control"); strict && cc != "no-store" {
		why = append(why, fmt.Sprintf("an answer a cache may keep (Cache-Control %q)", cc))
	}
	return why
}

// errorShape checks a non-2xx answer.
func errorShape(c hostileCase, o outcome, strict bool) []string {
	if c.method == http.MethodHead {
		return nil
	}
	var e envelope
	if json.Unmarshal(o.body, &e) != nil || e.Error == nil || e.Error.Code == "" || e.Error.Message == "" {
		// A JSON-RPC error is the protocol's own envelope: revision
		// 2026-07-28 answers misuse with one in a 400, an unknown method
		// in a 404, and MCP clients read it there.
		if m := reply(o); m != nil && m.Error != nil && (!strict || o.status == http.StatusBadRequest || o.status == http.StatusNotFound) {
			return nil
		}
		if m := reply(o); m != nil && m.Error != nil {
			return []string{fmt.Sprintf("a %d that is a JSON-RPC error (%d), not the error envelope", o.status, m.Error.Code)}
		}
		return []string{fmt.Sprintf("a %d outside the error envelope", o.status)}
	}
	var why []string
	if !strings.HasPrefix(o.header.Get("Content-Type"), "application/json") {
		why = append(why, "an error with Content-Type "+o.header.Get("Content-Type"))
	}
	if strict && o.header.Get("X-Request-Id") == "" {
		why = append(why, "an error without X-Request-ID")
	}
	if strict && len(e.Error.Message) > 1024 {
		why = append(why, fmt.Sprintf("an error message of %d bytes (the request echoed unbounded)", len(e.Error.Message)))
	}
	return why
}

// streamed reports whether body calls a method the SDK always answers as
// an event stream (subscriptions/listen, whatever the revision): refused
// (-32601), its refusal still comes framed as an event.
func streamed(body []byte) bool {
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &m) == nil && strings.HasPrefix(m.Method, "subscriptions/")
}

// answerShape checks a 200: one JSON-RPC response (strict: in JSON, not
// an event stream), with the request's id.
func answerShape(c hostileCase, o outcome, strict bool) []string {
	ct := o.header.Get("Content-Type")
	m := reply(o)
	switch {
	case m == nil:
		return []string{fmt.Sprintf("a 200 (Content-Type %q) that is not a JSON-RPC response", ct)}
	case (m.Result == nil) == (m.Error == nil):
		return []string{"a JSON-RPC response with both or neither of result and error"}
	case strict && !strings.HasPrefix(ct, "application/json") && !streamed(c.body):
		return []string{fmt.Sprintf("a 200 with Content-Type %q, not a JSON answer", ct)}
	}
	if !strict || c.raw != "" {
		return nil
	}
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(c.body, &req) != nil || len(req.ID) == 0 || (m.Error != nil && (len(m.ID) == 0 || string(m.ID) == "null")) {
		return nil
	}
	if !sameID(req.ID, m.ID) {
		return []string{fmt.Sprintf("answered with id %.40s, asked with id %.40s", m.ID, req.ID)}
	}
	return nil
}

// sameID reports whether two JSON-RPC ids are the same value.
func sameID(a, b json.RawMessage) bool {
	var x, y big.Float
	if _, ok := x.SetString(string(a)); ok {
		_, ok := y.SetString(string(b))
		return ok && x.Cmp(&y) == 0
	}
	return bytes.Equal(a, b)
}

// unmet says how the answer o is not of the class w, or "".
func (w expect) unmet(o outcome) string {
	if w.absent != "" && bytes.Contains(o.body, []byte(w.absent)) {
		return fmt.Sprintf("the answer carries %q", w.absent)
	}
	var e envelope
	_ = json.Unmarshal(o.body, &e)
	m := reply(o)
	ok := true
	switch w.kind {
	case refusal:
		head := o.header.Get("Allow") != "" && o.status == w.status && len(o.body) == 0 // a HEAD's answer has no body
		ok = head || (w.status == 0 && o.status >= 400 && o.status < 500 || o.status == w.status) && e.Error != nil &&
			(w.code == "" || e.Error.Code == w.code) && strings.Contains(e.Error.Message, w.text)
	case misuse:
		ok = o.status == 400 && e.Error != nil && e.Error.Code == "INVALID_PARAM" ||
			(o.status == 200 || o.status == 400 || o.status == 404) && m != nil && m.Error != nil
	case rpcFailure:
		// Revision 2026-07-28 answers method not found in a 404.
		ok = m != nil && m.Error != nil && (o.status == 200 || o.status == 404 && m.Error.Code == -32601) &&
			(w.rpc == 0 || m.Error.Code == w.rpc) && strings.Contains(m.Error.Message, w.text)
	case toolFailure:
		ok = o.status == 200 && m != nil && m.Result != nil && m.Result.IsError && strings.Contains(toolText(m), w.text)
	case answer:
		ok = o.status == 200 && m != nil && m.Result != nil && !m.Result.IsError
	case payFailure:
		return paymentUnmet(o, m, w.text)
	case acceptance:
		ok = o.status == http.StatusAccepted
	}
	if !ok {
		return "want " + w.String()
	}
	return ""
}

// String says what w wants.
func (w expect) String() string {
	var s string
	switch w.kind {
	case refusal:
		s = "a 4xx refusal"
		if w.status != 0 {
			s = fmt.Sprintf("a %d refusal", w.status)
		}
		if w.code != "" {
			s += " " + w.code
		}
		s += " in the error envelope"
	case misuse:
		return "400 INVALID_PARAM, or a JSON-RPC error (in a 200, or the 400/404 of revision 2026-07-28)"
	case rpcFailure:
		s = "a JSON-RPC error"
		if w.rpc != 0 {
			s += " " + strconv.Itoa(w.rpc)
		}
	case toolFailure:
		s = "a tool error"
	case answer:
		return "an answer (a result that is not an error)"
	case payFailure:
		s = "the x402 payment error"
	case acceptance:
		return "202 Accepted"
	default:
		return "any answer that keeps the promises"
	}
	if w.text != "" {
		s += fmt.Sprintf(" saying %q", w.text)
	}
	return s
}

// paymentUnmet says how m is not the x402 payment error with reason,
// or "".
func paymentUnmet(o outcome, m *rpcMessage, reason string) string {
	if o.status != 200 || m == nil || m.Result == nil || !m.Result.IsError || len(m.Result.Content) != 1 {
		return "want " + payErr(reason).String()
	}
	var p struct {
		Wrapper *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"x402/error"`
	}
	if json.Unmarshal([]byte(m.Result.Content[0].Text), &p) != nil || p.Wrapper == nil || p.Wrapper.Code != mcp.ErrorCode ||
		!strings.Contains(p.Wrapper.Message, reason) {
		return "want " + payErr(reason).String()
	}
	if m.Result.Meta[mcp.MetaPaymentResponse] != nil {
		return "a payment error with a settlement"
	}
	return ""
}

// verdicts judges every answer of the matrix: the failures, one a line,
// and the count of statuses.
func (tg *hostileTarget) verdicts(cases []hostileCase, outs []outcome, strict bool) (fails []string, statuses map[int]int) {
	statuses = map[int]int{}
	for i, c := range cases {
		o := outs[i]
		statuses[o.status]++
		why := tg.broken(c, o, strict)
		if o.err == nil {
			if u := c.want.unmet(o); u != "" {
				why = append(why, u)
			}
		}
		if len(why) > 0 {
			fails = append(fails, fmt.Sprintf("%s: %s\n\tanswer %d %q: %s", c.name, strings.Join(why, "; "), o.status,
				o.header.Get("Content-Type"), excerptOf(string(o.body), 300)))
		}
	}
	return fails, statuses
}

// TestRemoteHostileBombs sends compressed bombs to /mcp, each alone and
// with no other test running (it is not parallel), measuring what the
// process allocates meanwhile: a bomb is refused before it is decoded
// past the endpoint's bound.
func TestRemoteHostileBombs(t *testing.T) {
	f := newFixture(t, 5)
	_, endpoint := f.remoteNode(t, 0)
	tg := newTarget(t, endpoint, f.env)
	var cases []hostileCase
	var outs []outcome
	for _, c := range hostileCases(matrixEnv{host: tg.host, agent: f.agent, other: f.agent, pda: f.textPDA, ids: []string{f.textPDA}}) {
		if c.maxAlloc > 0 {
			cases, outs = append(cases, c), append(outs, tg.measured(c))
		}
	}
	fails, statuses := tg.verdicts(cases, outs, true)
	t.Logf("hostile /mcp bombs: %s", summary(len(cases), statuses))
	for _, f := range fails {
		t.Error(f)
	}
}

// TestRemoteHostile throws the hostile matrix at /mcp on a paying node
// (the chain simulator behind its payments): bodies at and past the
// bounds, malformed and deeply nested JSON, odd methods and ids, wrong
// arguments for every tool, forged payments and settlements, spoofed
// origins, hosts and credentials, odd protocol headers, media types and
// HTTP methods. Every answer keeps the endpoint's promises (see
// hostileTarget.broken) and is of the class its case expects. Then one
// genuine payment is presented by several callers at once; after all of
// it a plain caller's answers are what they were, and the ledger holds
// that one payment alone. On a node limited per address, spoofed
// forwarding headers give no caller a fresh limit, and an anonymous
// flood changes neither another caller's answer nor its remaining limit.
func TestRemoteHostile(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 20)
	w := newWallets(t)
	node := f.payingNodeWith(t, w.config(10*time.Second), func(api *app.API, o config.Origin) { mountRemote(t, api, o, nil) })
	tg := newTarget(t, node.Root+mcp.Path, f.env, w.chain.RPCURL())
	env, replayed := hostileEnv(t, f, w, tg)
	before, balance := tg.seen(t, env), w.balance(t)
	var cases []hostileCase
	for _, c := range hostileCases(env) {
		if c.maxAlloc == 0 { // TestRemoteHostileBombs sends those alone
			cases = append(cases, c)
		}
	}
	start := time.Now()
	fails, statuses := tg.verdicts(cases, tg.run(cases, 8), true)
	took := time.Since(start)
	tx, more := tg.replay(env, replayed)
	fails = append(fails, more...)
	after := tg.seen(t, env)
	for k, b := range before {
		if after[k] != b {
			fails = append(fails, fmt.Sprintf("after the matrix, a plain caller's %s changed:\n\tbefore %s\n\tafter  %s", k, excerptOf(b, 300), excerptOf(after[k], 300)))
		}
	}
	fails = append(fails, ledger(t, node, w, balance, tx)...)
	limited, more := checkLimits(t, f, env, cases)
	fails = append(fails, more...)
	t.Logf("hostile /mcp: %s in %v; then one payment from %d callers at once, %d requests on a limited node; %d broken promises",
		summary(len(cases), statuses), took.Round(time.Millisecond), replayCallers+1, limited, len(fails))
	for _, f := range fails {
		t.Error(f)
	}
}

// seen is what a plain caller, and one with the key, get from the node:
// answers that do not move with the clock; each must be an answer.
func (tg *hostileTarget) seen(t *testing.T, env matrixEnv) map[string]string {
	t.Helper()
	agent := `{"agentPda":` + jsonText(env.agent)
	calls := map[string]hostileCase{
		"tools/list":                    {body: rpcBody("tools/list", "{}")},
		"get_attestation":               {body: callTool("get_attestation", `{"pda":`+jsonText(env.pda)+`}`, "")},
		"list_attestations":             {body: callTool("list_attestations", agent+`,"limit":5}`, "")},
		"verify_action_hash":            {body: callTool("verify_action_hash", `{"payload":`+jsonText(textPayload)+`,"attestationPda":`+jsonText(env.pda)+`}`, "")},
		"get_full_history with the key": {header: withKey(env.key), body: callTool("get_full_history", agent+`,"limit":3}`, "")},
		"bulk_verify with the key":      {header: withKey(env.key), body: callTool("bulk_verify", bulk(len(env.ids), env.ids...), "")},
	}
	out := map[string]string{}
	for name, c := range calls {
		c.from = "127.0.0.30"
		o := tg.send(c)
		if m := reply(o); o.err != nil || m == nil || m.Result == nil || m.Result.IsError {
			t.Errorf("a plain caller's %s: %v %d %.300s", name, o.err, o.status, o.body)
		}
		out[name] = checkedAt.ReplaceAllString(string(o.body), `"checkedAt":"-"`)
	}
	return out
}

// replayCallers present the genuine payment at once.
const replayCallers = 6

// replay presents one genuine payment from several callers at once: each
// gets the answer it bought (with the settlement, all of one
// transaction) or a payment error, one at least the answer; presented
// again once settled, it is a payment error. It returns the transaction.
func (tg *hostileTarget) replay(env matrixEnv, payment string) (string, []string) {
	body := callTool("get_full_history", `{"agentPda":`+jsonText(env.agent)+`,"limit":3}`, `{"x402/payment":`+payment+`}`)
	outs := make([]outcome, replayCallers)
	var wg sync.WaitGroup
	for i := range replayCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = tg.send(hostileCase{body: body, from: fmt.Sprintf("127.0.0.%d", 40+i)})
		}()
	}
	wg.Wait()
	var tx string
	var fails []string
	answers := 0
	for i, o := range outs {
		c := hostileCase{name: fmt.Sprintf("the genuine payment, caller %d", i), body: body}
		why := tg.broken(c, o, true)
		m := reply(o)
		var s x402.SettleResponse
		switch {
		case len(why) > 0:
		case m != nil && m.Result != nil && !m.Result.IsError:
			answers++
			if json.Unmarshal(m.Result.Meta[mcp.MetaPaymentResponse], &s) != nil || !s.Success || tx != "" && s.Transaction != tx ||
				len(m.Result.StructuredContent) == 0 {
				why = append(why, "an answer without its settlement, or with another transaction's")
			}
			tx = s.Transaction
		default:
			if u := payErr("").unmet(o); u != "" {
				why = append(why, u)
			}
		}
		if len(why) > 0 {
			fails = append(fails, fmt.Sprintf("%s: %s\n\tanswer %d: %s", c.name, strings.Join(why, "; "), o.status, excerptOf(string(o.body), 300)))
		}
	}
	if answers == 0 {
		fails = append(fails, "no caller of the genuine payment got the answer it paid for")
	}
	// Presented again once settled, it is the answer bought (the same
	// settlement, not charged again: see ledger) or a payment error.
	again := hostileCase{name: "the genuine payment again, once settled", body: body, from: "127.0.0.49"}
	o := tg.send(again)
	why := tg.broken(again, o, true)
	if m := reply(o); m != nil && m.Result != nil && !m.Result.IsError {
		var s x402.SettleResponse
		if json.Unmarshal(m.Result.Meta[mcp.MetaPaymentResponse], &s) != nil || s.Transaction != tx {
			why = append(why, "an answer without the payment's settlement")
		}
	} else if u := payErr("").unmet(o); u != "" {
		why = append(why, u)
	}
	if len(why) > 0 {
		fails = append(fails, fmt.Sprintf("%s: %s\n\tanswer %d: %s", again.name, strings.Join(why, "; "), o.status, excerptOf(string(o.body), 300)))
	}
	return tx, fails
}

// ledger checks that the node charged the one payment really made: payTo
// received its price once, and the ledger holds that payment alone.
func ledger(t *testing.T, node *apptest.Node, w *wallets, before uint64, tx string) []string {
	t.Helper()
	var fails []string
	if got := w.balance(t); got != before+historyPrice {
		fails = append(fails, fmt.Sprintf("payTo went from %d to %d: want one charge of %d", before, got, historyPrice))
	}
	if rows := settled(t, node.Store); len(rows) != 1 || rows[0].TxSignature != tx {
		fails = append(fails, fmt.Sprintf("the ledger holds %d settled payments (%+v): want the replayed one alone (%s)", len(rows), rows, tx))
	}
	return fails
}

// checkLimits works on a node limited to limit requests a minute per
// address: forwarding headers from an untrusted peer neither give a
// caller a fresh limit nor spend another's, and an anonymous flood of the
// matrix's requests changes neither another caller's answer nor its
// remaining limit. It returns the requests it sent and the failures.
func checkLimits(t *testing.T, f *fixture, env matrixEnv, flood []hostileCase) (int, []string) {
	const limit = 8
	_, endpoint := f.remoteNode(t, limit)
	tg := newTarget(t, endpoint, f.env)
	var fails []string
	fail := func(format string, args ...any) { fails = append(fails, fmt.Sprintf(format, args...)) }
	remaining := func(o outcome) string { return o.header.Get("Ratelimit-Remaining") }
	victim := hostileCase{name: "the victim's call", from: "127.0.0.21", body: callTool("get_attestation", `{"pda":`+jsonText(env.pda)+`}`, "")}
	first := tg.send(victim)
	if first.status != 200 || remaining(first) != strconv.Itoa(limit-1) {
		fail("limited node: the victim's first call: %d, remaining %q: %s", first.status, remaining(first), excerptOf(string(first.body), 300))
	}
	spoofs := []http.Header{header("X-Forwarded-For", "10.0.0.1"), header("X-Forwarded-For", "127.0.0.21"), header("X-Real-Ip", "10.0.0.2"),
		header("Forwarded", "for=10.0.0.3"), header("X-Forwarded-For", "10.0.0.4, 10.0.0.5"), header("True-Client-Ip", "10.0.0.6"),
		header("X-Forwarded-For", "127.0.0.21", "X-Real-Ip", "127.0.0.21"), header("Cf-Connecting-Ip", "10.0.0.7"), header("X-Forwarded-For", "::1")}
	for i, h := range spoofs[:limit+1] {
		c := hostileCase{name: fmt.Sprintf("limited node: spoofed forwarding %v", h), from: "127.0.0.22", header: h, body: rpcBody("ping", "")}
		o := tg.send(c)
		switch {
		case i < limit && (o.status != 200 || remaining(o) != strconv.Itoa(limit-1-i)):
			fail("%s, call %d: %d, remaining %q (want %d): the caller moved to another address's limit", c.name, i+1, o.status, remaining(o), limit-1-i)
		case i == limit && o.status != http.StatusTooManyRequests:
			fail("%s, call %d: %d, want 429: the caller moved to another address's limit", c.name, i+1, o.status)
		}
		for _, why := range tg.broken(c, o, true) {
			fail("%s: %s", c.name, why)
		}
	}
	sent := 0
	for _, c := range flood {
		if c.raw != "" || sent == 3*limit {
			continue
		}
		c.from, sent = "127.0.0.23", sent+1
		for _, why := range tg.broken(c, tg.send(c), false) {
			fail("limited node: flood %s: %s", c.name, why)
		}
	}
	again := tg.send(victim)
	if again.status != 200 || remaining(again) != strconv.Itoa(limit-2) || string(again.body) != string(first.body) {
		fail("limited node: after a flood from another address, the victim's call: %d, remaining %q (want %d), answer changed: %v",
			again.status, remaining(again), limit-2, string(again.body) != string(first.body))
	}
	return sent + len(spoofs[:limit+1]) + 2, fails
}
