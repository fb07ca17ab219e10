package egress

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestCheckURL(t *testing.T) {
	prod, dev := Policy{}, Policy{AllowLoopback: true}
	type tc struct {
		url     string
		prodOK  bool
		devOK   bool
		want    string // normalised, when accepted
		message string // part of the refusal in production
	}
	cases := []tc{
		{"https://example.com/hooks", true, true, "https://example.com/hooks", ""},
		{"HTTPS://Example.COM:8443/a?b=c", true, true, "https://example.com:8443/a?b=c", ""},
		{"https://example.com./x", true, true, "https://example.com./x", ""},
		{"https://93.184.216.34/x", true, true, "https://93.184.216.34/x", ""},
		{"https://[2606:4700::1111]/x", true, true, "https://[2606:4700::1111]/x", ""},
		{"https://[2606:4700::1111]:8443/x", true, true, "https://[2606:4700::1111]:8443/x", ""},
		{"http://example.com/x", false, true, "http://example.com/x", "must use https"},
		{"http://127.0.0.1:8080/x", false, true, "http://127.0.0.1:8080/x", "must use https"},
		{"https://127.0.0.1/x", false, true, "https://127.0.0.1/x", "loopback"},
		{"https://localhost/x", false, true, "https://localhost/x", "fully qualified"},
		{"https://[::1]/x", false, true, "https://[::1]/x", "loopback"},
		{"https://[::ffff:127.0.0.1]/x", false, true, "https://[::ffff:127.0.0.1]/x", "IPv6 form of 127.0.0.1"},
		{"https://169.254.169.254/latest/meta-data", false, false, "", "metadata"},
		{"https://[fd00:ec2::254]/", false, false, "", "metadata"},
		{"https://10.0.0.1/x", false, false, "", "private"},
		{"https://192.168.1.1/x", false, false, "", "private"},
		{"https://[fe80::1%25eth0]/x", false, false, "", "zone"},
		{"https://0.0.0.0/x", false, false, "", "unspecified"},
		{"https://2130706433/x", false, false, "", "non-standard form"},
		{"https://0177.0.0.1/x", false, false, "", "non-standard form"},
		{"https://0x7f.0.0.1/x", false, false, "", "non-standard form"},
		{"https://0x7f000001/x", false, false, "", "non-standard form"},
		{"https://127.1/x", false, false, "", "non-standard form"},
		{"https://user:pass@example.com/x", false, false, "", "credentials"},
		{"https://user@example.com/x", false, false, "", "credentials"},
		{"https://example.com/x#frag", false, false, "", "fragment"},
		{"https://example.com/x#", false, false, "", "fragment"},
		{"ftp://example.com/x", false, false, "", "https, not ftp"},
		{"javascript:alert(1)", false, false, "", "https, not javascript"},
		{"//example.com/x", false, false, "", "absolute"},
		{"/hooks", false, false, "", "absolute"},
		{"https:example.com", false, false, "", "absolute"},
		{"https:///x", false, false, "", "absolute"},
		{"https://example.com:0/x", false, false, "", "port"},
		{"https://example.com:99999/x", false, false, "", "port"},
		{"https://example.com:/x", false, false, "", "empty port"},
		{"https://exa mple.com/x", false, false, "", "spaces"},
		{"https://example.com/\x00", false, false, "", "control"},
		{"https://bücher.de/x", false, false, "", "ASCII"},
		{"https://-bad-.com/x", false, false, "", "valid DNS name"},
		{"https://a_b.com/x", false, false, "", "valid DNS name"},
		{"https://" + strings.Repeat("a", 64) + ".com/x", false, false, "", "valid DNS name"},
		{"https://example.com/" + strings.Repeat("a", MaxURLLength), false, false, "", "at most"},
		{"", false, false, "", "required"},
		{"https://[::1/x", false, false, "", "not a valid URL"},
	}
	for _, c := range cases {
		u, err := prod.CheckURL(c.url)
		if c.prodOK != (err == nil) {
			t.Errorf("prod CheckURL(%q) = %v, want ok=%v", c.url, err, c.prodOK)
		}
		if err != nil && c.message != "" && !strings.Contains(err.Error(), c.message) {
			t.Errorf("prod CheckURL(%q) = %q, want it to say %q", c.url, err, c.message)
		}
		var ue *URLError
		if err != nil && !errors.As(err, &ue) {
			t.Errorf("prod CheckURL(%q): error %T is not a *URLError", c.url, err)
		}
		if err == nil && u.String() != c.want {
			t.Errorf("prod CheckURL(%q) = %s, want %s", c.url, u, c.want)
		}
		u, err = dev.CheckURL(c.url)
		if c.devOK != (err == nil) {
			t.Errorf("dev CheckURL(%q) = %v, want ok=%v", c.url, err, c.devOK)
		}
		if err == nil && u.String() != c.want {
			t.Errorf("dev CheckURL(%q) = %s, want %s", c.url, u, c.want)
		}
	}
}

type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

func TestCheckHostResolves(t *testing.T) {
	r := fakeResolver{
		"public.example":   {netip.MustParseAddr("93.184.216.34")},
		"loop.example":     {netip.MustParseAddr("127.0.0.1")},
		"mixed.example":    {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.1.2.3")},
		"mapped.example":   {netip.MustParseAddr("::ffff:169.254.169.254")},
		"v6public.example": {netip.MustParseAddr("2606:4700::1111")},
	}
	p := Policy{}
	check := func(raw string) error {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		return p.CheckHost(context.Background(), r, u, time.Second)
	}
	for raw, want := range map[string]string{
		"https://public.example/x":   "",
		"https://v6public.example/x": "",
		"https://loop.example/x":     "resolves to a loopback address",
		"https://mixed.example/x":    "resolves to a private address",
		"https://mapped.example/x":   "cloud metadata",
		"https://nowhere.example/x":  "does not resolve",
		"https://10.0.0.1/x":         "private",
	} {
		err := check(raw)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", raw, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want %q", raw, err, want)
		case err != nil && (strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(err.Error(), "10.1.2.3")):
			t.Errorf("%s: %v shows the resolved address", raw, err)
		}
	}
	// The real resolver: localhost is loopback through /etc/hosts.
	u, _ := url.Parse("https://localhost/x")
	if err := p.CheckHost(context.Background(), nil, u, 2*time.Second); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("localhost: %v", err)
	}
	if err := (Policy{AllowLoopback: true}).CheckHost(context.Background(), nil, u, 2*time.Second); err != nil {
		t.Errorf("localhost with loopback allowed: %v", err)
	}
}

// FuzzCheckURL: no input panics, and an accepted URL is absolute https
// (or http with loopback allowed), has no credentials or fragment, its
// normalised form is accepted again unchanged, and a literal address host
// passes the policy.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://example.com/x", "https://[::ffff:127.0.0.1]/", "https://0x7f.1/", "http://localhost:1/a?b#c",
		"https://a@b.com", "https://[fe80::1%25en0]/", "https://1.2.3.4:65536/", "HTTPS://EXAMPLE.COM", "https://[::1]:80/"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, raw string, loopback bool) {
		p := Policy{AllowLoopback: loopback}
		u, err := p.CheckURL(raw)
		if err != nil {
			var ue *URLError
			if !errors.As(err, &ue) {
				t.Fatalf("error %T", err)
			}
			return
		}
		if u.Scheme != "https" && !(loopback && u.Scheme == "http") {
			t.Fatalf("scheme %q accepted", u.Scheme)
		}
		if u.User != nil || u.Fragment != "" || u.Host == "" || u.Opaque != "" {
			t.Fatalf("accepted %q as %#v", raw, u)
		}
		if a, err := netip.ParseAddr(u.Hostname()); err == nil {
			if p.Check(a) != nil {
				t.Fatalf("accepted a refused address %s", a)
			}
		}
		again, err := p.CheckURL(u.String())
		if err != nil || again.String() != u.String() {
			t.Fatalf("normalised %q not stable: %v %v", u.String(), again, err)
		}
	})
}
