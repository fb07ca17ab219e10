package hostile

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/excerpt"
)

// Target names what the matrix needs to know of the node under test.
type Target struct {
	Base   string // http://host:port/api/v1
	APIKey string // a valid key, for the keyed routes
	Agent  string // an agent pda that exists
	PDA    string // an attestation pda that exists
	// Webhook is a webhook id of the key's account ("" leaves the
	// webhook routes out: the node under test has webhooks off).
	Webhook string
	// ETags of the cacheable routes' plain and gzip answers, by route
	// pattern ("/attestations/{pda}"); Run fills them.
	ETags, GzipETags map[string]string
}

// Case is one request of the matrix.
type Case struct {
	Name   string
	Method string
	Path   string // under Base, with its query
	Header map[string]string
	Body   []byte
	Raw    string // when set, sent as it is on a fresh connection instead
	// Closes: the node must close the (Raw) connection after its answer,
	// serving nothing sent after the request.
	Closes bool
	// Private: the route answers per caller (keyed); no answer may say a
	// shared cache can keep it.
	Private bool
	// Expect is the status the case must get (0: any that keeps the
	// promises).
	Expect int
	// Page: Path is a web application page, under the server's root
	// rather than Base.
	Page bool
}

// Failure is an answer that breaks a promise.
type Failure struct {
	Case   string
	Status int
	Why    string
	Body   string
}

// Result sums up a run.
type Result struct {
	Requests int
	Statuses map[int]int
	Failures []Failure
}

func (r Result) String() string {
	codes := make([]int, 0, len(r.Statuses))
	for c := range r.Statuses {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests, %d failures; statuses:", r.Requests, len(r.Failures))
	for _, c := range codes {
		fmt.Fprintf(&b, " %d×%d", c, r.Statuses[c])
	}
	return b.String()
}

// Run sends every case of Matrix(t) with the given concurrency, after
// reading the cacheable routes' current ETags; it then checks that the
// matrix changed none of the answers others get.
func Run(ctx context.Context, t Target, concurrency int) Result {
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: concurrency, DisableCompression: true}}
	res := Result{Statuses: map[int]int{}}
	before := snapshot(ctx, client, t)
	t.ETags, t.GzipETags = map[string]string{}, map[string]string{}
	for _, r := range routes(t) {
		if r.cacheable {
			t.ETags[r.path], t.GzipETags[r.path] = before[r.path+" plain"].etag, before[r.path+" gzip"].etag
		}
	}
	cases := Matrix(t)
	var mu sync.Mutex
	work := make(chan Case)
	var wg sync.WaitGroup
	for i := 0; i < concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				status, header, body, err := send(ctx, client, t.Base, c)
				mu.Lock()
				res.Requests++
				if err != nil {
					res.Failures = append(res.Failures, Failure{Case: c.Name, Why: "no answer: " + err.Error()})
				} else {
					res.Statuses[status]++
					if why := judge(c, status, header, body); why != "" {
						res.Failures = append(res.Failures, Failure{Case: c.Name, Status: status, Why: why, Body: excerpt.Of(string(body), 300)})
					}
				}
				mu.Unlock()
			}
		}()
	}
	for _, c := range cases {
		select {
		case work <- c:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	after := snapshot(ctx, client, t)
	for k, b := range before {
		if strings.HasPrefix(k, "/stats") || strings.HasPrefix(k, "/agents/") {
			continue // their last24h moves with the clock
		}
		if a := after[k]; a != b {
			res.Failures = append(res.Failures, Failure{Case: "after the matrix: " + k, Status: a.status,
				Why: fmt.Sprintf("changed for everyone: ETag %s -> %s, body sha256 %x -> %x", b.etag, a.etag, b.sum[:6], a.sum[:6])})
		}
	}
	return res
}

// seen is what a plain client gets from a route.
type seen struct {
	status int
	etag   string
	sum    [32]byte
}

// snapshot reads the answers the matrix must not change: the cacheable
// routes whose answers do not depend on the clock, plain and gzip.
func snapshot(ctx context.Context, client *http.Client, t Target) map[string]seen {
	out := map[string]seen{}
	for _, r := range routes(t) {
		if !r.cacheable {
			continue
		}
		path := strings.NewReplacer("{asset}", "app.js", "{agent}", t.Agent, "{pda}", t.PDA).Replace(r.path)
		for _, enc := range []string{"plain", "gzip"} {
			c := Case{Method: http.MethodGet, Path: path, Header: map[string]string{}, Page: r.page}
			if enc == "gzip" {
				c.Header["Accept-Encoding"] = "gzip"
			}
			status, header, body, err := send(ctx, client, t.Base, c)
			if err != nil {
				continue
			}
			out[r.path+" "+enc] = seen{status: status, etag: header.Get("ETag"), sum: sha256.Sum256(body)}
		}
	}
	return out
}

// judge says what is wrong with an answer, or "".
func judge(c Case, status int, header http.Header, body []byte) string {
	if c.Expect != 0 && status != c.Expect {
		return fmt.Sprintf("status %d, want %d", status, c.Expect)
	}
	if c.Closes && header.Get(stayedOpen) != "" {
		return "the connection stayed open after the answer: " + header.Get(stayedOpen)
	}
	if why := judgeCaching(c, status, header, body); why != "" {
		return why
	}
	switch {
	case status >= 500:
		return "5xx"
	case status < 400 || c.Method == http.MethodHead:
		return ""
	}
	if !strings.HasPrefix(header.Get("Content-Type"), "application/json") {
		return "non-2xx with Content-Type " + header.Get("Content-Type")
	}
	var env struct {
		Error *struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || env.Error == nil || env.Error.Code == "" || env.Error.Message == "" {
		return "non-2xx outside the envelope"
	}
	if header.Get("X-Request-ID") == "" {
		return "non-2xx without X-Request-ID"
	}
	return ""
}

// judgeCaching holds an answer to what it may say to caches: an error is
// no-store without a validator; a 304 answers a conditional GET or HEAD,
// with its ETag and no body; an answer a shared cache may keep is a
// public GET answer with its ETag and Vary; a keyed route's answer is
// never kept by anyone.
func judgeCaching(c Case, status int, header http.Header, body []byte) string {
	cc := header.Get("Cache-Control")
	switch {
	case status >= 400 && (cc != "no-store" || header.Get("ETag") != "" || header.Get("Surrogate-Key") != ""):
		return fmt.Sprintf("error with Cache-Control %q, ETag %q, Surrogate-Key %q", cc, header.Get("ETag"), header.Get("Surrogate-Key"))
	case status == http.StatusNotModified && (header.Get("ETag") == "" || len(body) != 0):
		return "304 without its ETag, or with a body"
	case status == http.StatusNotModified && c.Raw == "" && (c.Header["If-None-Match"] == "" || (c.Method != http.MethodGet && c.Method != http.MethodHead)):
		return "304 to a request that was not a conditional GET or HEAD"
	case c.Private && (!strings.Contains(cc, "no-store") || header.Get("ETag") != "" || strings.Contains(cc, "public")):
		return fmt.Sprintf("a keyed route answered with Cache-Control %q, ETag %q", cc, header.Get("ETag"))
	case strings.Contains(cc, "public") && (header.Get("ETag") == "" || header.Get("Vary") != "Accept-Encoding"):
		return fmt.Sprintf("a cacheable answer without its ETag (%q) or Vary (%q)", header.Get("ETag"), header.Get("Vary"))
	}
	return ""
}

func send(ctx context.Context, client *http.Client, base string, c Case) (int, http.Header, []byte, error) {
	if c.Raw != "" {
		return sendRaw(ctx, base, c.Raw, c.Closes)
	}
	if c.Page {
		base = strings.TrimSuffix(base, "/api/v1")
	}
	req, err := http.NewRequestWithContext(ctx, c.Method, base+c.Path, bytes.NewReader(c.Body))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("build request: %w", err)
	}
	if c.Body == nil {
		req.Body, req.ContentLength = nil, 0
	}
	for k, v := range c.Header {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	return res.StatusCode, res.Header, b, err
}

// stayedOpen is set by sendRaw, in the answer's header as the matrix sees
// it, when a connection that had to close after the answer did not.
const stayedOpen = "X-Hostile-Stayed-Open"

// closeWait is how long sendRaw waits for the node to close a connection
// that had to close after the answer: generous, for a loaded machine, and
// well short of the node's idle timeout (90 s), past which it would close
// a connection kept open all the same.
const closeWait = 30 * time.Second

// sendRaw writes raw on a fresh connection and reads one answer; with
// closes, it then checks that the node closed the connection.
func sendRaw(ctx context.Context, base, raw string, closes bool) (int, http.Header, []byte, error) {
	u, err := url.Parse(base)
	if err != nil {
		return 0, nil, nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return 0, nil, nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(conn, strings.ReplaceAll(raw, "{prefix}", u.Path)); err != nil {
		return 0, nil, nil, err
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if err == nil && closes {
		_ = conn.SetReadDeadline(time.Now().Add(closeWait))
		if _, rerr := br.ReadByte(); rerr == nil {
			res.Header.Set(stayedOpen, "it answered again")
		} else if ne, ok := rerr.(net.Error); ok && ne.Timeout() {
			res.Header.Set(stayedOpen, "still open after "+closeWait.String())
		}
	}
	return res.StatusCode, res.Header, b, err
}
