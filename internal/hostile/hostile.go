package hostile

import (
	"bufio"
	"bytes"
	"context"
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
}

// Case is one request of the matrix.
type Case struct {
	Name   string
	Method string
	Path   string // under Base, with its query
	Header map[string]string
	Body   []byte
	Raw    string // when set, sent as it is on a fresh connection instead
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

// Run sends every case of Matrix(t) with the given concurrency.
func Run(ctx context.Context, t Target, concurrency int) Result {
	cases := Matrix(t)
	res := Result{Statuses: map[int]int{}}
	var mu sync.Mutex
	work := make(chan Case)
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: concurrency, DisableCompression: true}}
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
						res.Failures = append(res.Failures, Failure{Case: c.Name, Status: status, Why: why, Body: clip(string(body), 300)})
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
	return res
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// judge says what is wrong with an answer, or "".
func judge(c Case, status int, header http.Header, body []byte) string {
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

func send(ctx context.Context, client *http.Client, base string, c Case) (int, http.Header, []byte, error) {
	if c.Raw != "" {
		return sendRaw(ctx, base, c.Raw)
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

func sendRaw(ctx context.Context, base, raw string) (int, http.Header, []byte, error) {
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
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	return res.StatusCode, res.Header, b, err
}
