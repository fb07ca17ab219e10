package inprocess_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/inprocess"
	"github.com/valyala/fasthttp"
)

// echo answers with what it saw of the request.
func echo(rctx *fasthttp.RequestCtx) {
	switch string(rctx.Path()) {
	case "/slow":
		time.Sleep(2 * time.Second)
	case "/panic":
		panic("boom")
	case "/stream":
		rctx.SetBodyStream(strings.NewReader("streamed body"), -1)
		return
	}
	rctx.Response.Header.Set("X-Peer", rctx.RemoteIP().String())
	rctx.Response.Header.Set("X-Inner", map[bool]string{true: "yes", false: "no"}[inprocess.Is(rctx)])
	if ctx := inprocess.Context(rctx); ctx != nil && ctx.Value(markKey{}) != nil {
		rctx.Response.Header.Set("X-Context", ctx.Value(markKey{}).(string))
	}
	rctx.Response.Header.Add("X-Multi", "a")
	rctx.Response.Header.Add("X-Multi", "b")
	rctx.SetStatusCode(http.StatusTeapot)
	rctx.SetBodyString(string(rctx.Method()) + " " + string(rctx.RequestURI()) + " host=" + string(rctx.Host()) +
		" key=" + string(rctx.Request.Header.Peek("X-API-Key")) + " body=" + string(rctx.PostBody()))
}

type markKey struct{}

func TestRoundTrip(t *testing.T) {
	c := &http.Client{Transport: &inprocess.Transport{Handler: echo}}
	peer := netip.MustParseAddr("203.0.113.7")
	ctx := inprocess.WithPeer(context.WithValue(context.Background(), markKey{}, "tool call"), peer)
	tests := []struct {
		name, method, url, body string
		want                    string
	}{
		{"get with query", http.MethodGet, "https://api.example.org/api/v1/stats?x=1&y=%20", "", "GET /api/v1/stats?x=1&y=%20 host=api.example.org key=k1 body="},
		{"post with body", http.MethodPost, "https://api.example.org/api/v1/bulk", `{"ids":["a"]}`, `POST /api/v1/bulk host=api.example.org key=k1 body={"ids":["a"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rd io.Reader
			if tt.body != "" {
				rd = strings.NewReader(tt.body)
			}
			req, _ := http.NewRequestWithContext(ctx, tt.method, tt.url, rd)
			req.Header.Set("X-API-Key", "k1")
			res, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusTeapot || string(b) != tt.want {
				t.Fatalf("got %d %q, want 418 %q", res.StatusCode, b, tt.want)
			}
			if got := res.Header.Get("X-Peer"); got != peer.String() {
				t.Errorf("peer %q, want %s", got, peer)
			}
			if res.Header.Get("X-Inner") != "yes" || res.Header.Get("X-Context") != "tool call" {
				t.Errorf("inner %q context %q", res.Header.Get("X-Inner"), res.Header.Get("X-Context"))
			}
			if got := res.Header.Values("X-Multi"); len(got) != 2 {
				t.Errorf("X-Multi %q", got)
			}
		})
	}
}

func TestRoundTripRefusals(t *testing.T) {
	c := &http.Client{Transport: &inprocess.Transport{Handler: echo}}
	peer := inprocess.WithPeer(context.Background(), netip.MustParseAddr("127.0.0.1"))
	short, cancel := context.WithTimeout(peer, 50*time.Millisecond)
	defer cancel()
	tests := []struct {
		name string
		ctx  context.Context
		path string
		body string
		want error
		text string
	}{
		{"no peer", context.Background(), "/x", "", inprocess.ErrNoPeer, ""},
		{"deadline before the handler answers", short, "/slow", "", context.DeadlineExceeded, ""},
		{"a panicking handler is an error", peer, "/panic", "", nil, "panicked"},
		{"a body over the bound", peer, "/x", strings.Repeat("a", inprocess.MaxRequestBody+1), nil, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rd io.Reader
			if tt.body != "" {
				rd = strings.NewReader(tt.body)
			}
			req, _ := http.NewRequestWithContext(tt.ctx, http.MethodPost, "http://node"+tt.path, rd)
			res, err := c.Do(req)
			if err == nil {
				res.Body.Close()
				t.Fatal("no error")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
			if tt.text != "" && !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("err %v, want it to say %q", err, tt.text)
			}
		})
	}
}

func TestStreamedBody(t *testing.T) {
	c := &http.Client{Transport: &inprocess.Transport{Handler: echo}}
	req, _ := http.NewRequestWithContext(inprocess.WithPeer(context.Background(), netip.MustParseAddr("::1")), http.MethodGet, "http://node/stream", nil)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if b, _ := io.ReadAll(res.Body); string(b) != "streamed body" {
		t.Fatalf("body %q", b)
	}
}

func TestIsFalseOffAConnection(t *testing.T) {
	var rctx fasthttp.RequestCtx
	if inprocess.Is(&rctx) || inprocess.Context(&rctx) != nil {
		t.Fatal("a request read off a connection is marked in-process")
	}
}
