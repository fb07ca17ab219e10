package x402fiber_test

import (
	"net/http"
	"testing"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/x402"
)

// testOrigin is the public origin of the test nodes.
var testOrigin = func() config.Origin {
	o, err := config.ParseOrigin("https://attestd.test")
	if err != nil {
		panic(err)
	}
	return o
}()

// TestResourceURLIsTheOrigin: the 402's resource.url is the public origin
// and the path, whatever Host, X-Forwarded-Host or X-Forwarded-Proto the
// client sends.
func TestResourceURLIsTheOrigin(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	path := "/premium/full-history/" + f.agent
	want := "https://attestd.test/api/v1" + path
	for _, hdr := range []map[string]string{
		nil,
		{"Host": "evil.example"},
		{"X-Forwarded-Host": "evil.example"},
		{"X-Forwarded-Proto": "http"},
		{"Host": "evil.example:8443", "X-Forwarded-Host": "other.example", "X-Forwarded-Proto": "ftp"},
	} {
		r := n.Do(t, http.MethodGet, path+"?limit=5", nil, hdr)
		if r.Status != http.StatusPaymentRequired {
			t.Fatalf("%v: %d %s", hdr, r.Status, r.Body)
		}
		pr, err := x402.DecodePaymentRequired(r.Header.Get(x402.HeaderPaymentRequired))
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Resource x402.ResourceInfo `json:"resource"`
		}
		r.JSON(t, &body)
		if pr.Resource.URL != want || body.Resource.URL != want {
			t.Errorf("%v: resource.url %q (header) %q (body), want %q", hdr, pr.Resource.URL, body.Resource.URL, want)
		}
	}
}
