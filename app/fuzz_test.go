package app_test

import (
	"io"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/apptest"
	"github.com/attestd/attestd/store"
)

// FuzzPublicRoutes sends arbitrary query strings and ids to a real node:
// every answer must be 2xx or 4xx in the envelope, never a 5xx.
func FuzzPublicRoutes(f *testing.F) {
	for _, s := range []string{"limit=5", "limit=abc&offset=-1", "from=2026-11-21&to=2026-11-20", "actionType=ToolCall",
		"cursor=%ff%fe", "agentPda=11111111111111111111111111111111", "%", "a=b&a=c", "limit=1&limit=2",
		"bucket=day&from=0001-01-01", "bucket=hour&to=9999-12-31T23:59:59Z", "actionHash=" + strings.Repeat("0", 64),
		"cursor=YS4wLjExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTEx"} {
		f.Add(s, "11111111111111111111111111111111")
	}
	env := apptest.NewEnv(f, apptest.Options{Agents: 2, Attestations: 50})
	node := env.StartNode(f, apptest.NodeOptions{})
	f.Fuzz(func(t *testing.T, query, id string) {
		for _, target := range []string{
			"/api/v1/attestations?" + query,
			"/api/v1/attestations/" + url.PathEscape(id) + "?" + query,
			"/api/v1/agents/" + url.PathEscape(id),
			"/api/v1/agents/" + url.PathEscape(id) + "/stats",
			"/api/v1/stats?" + query,
			"/api/v1/agents?" + query,
			"/api/v1/stats/activity?" + query,
			"/api/v1/agents/" + url.PathEscape(id) + "/activity?" + query,
			"/api/v1/samples?" + query,
		} {
			req := httptest.NewRequest("GET", "http://x/", nil)
			req.URL.RawPath, req.URL.RawQuery = "", ""
			// A control character cannot be in a request line (url.Parse
			// lets one through in a fragment: the seed 947363815ac6d089);
			// malformed request lines are the hostile matrix's, on the wire.
			if strings.ContainsFunc(target, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				continue
			}
			u, err := url.Parse("http://x" + target)
			if err != nil {
				continue
			}
			req.URL = u
			req.RequestURI = target
			res, err := node.Fiber().Test(req, -1)
			if err != nil {
				t.Fatalf("%s: %v", target, err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode >= 500 {
				t.Fatalf("%s: %d %s", target, res.StatusCode, body)
			}
		}
	})
}

// FuzzAgentCursor: decoding never panics, and a cursor it accepts encodes
// back to one that decodes to the same position.
func FuzzAgentCursor(f *testing.F) {
	f.Add(app.EncodeAgentCursor(&store.AgentCursor{ActivityAt: time.Unix(1_800_000_000, 123_456_000), PDA: "11111111111111111111111111111111"}))
	f.Add("YS4tMS4x")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := app.DecodeAgentCursor(s)
		if err != nil {
			return
		}
		again, err := app.DecodeAgentCursor(app.EncodeAgentCursor(c))
		if err != nil || !again.ActivityAt.Equal(c.ActivityAt) || again.PDA != c.PDA {
			t.Fatalf("%q: %+v, then %+v %v", s, c, again, err)
		}
	})
}
