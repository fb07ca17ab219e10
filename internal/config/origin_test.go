package config

import (
	"errors"
	"testing"
)

func TestParseOrigin(t *testing.T) {
	good := map[string]string{
		"https://attestd.example.com":  "https://attestd.example.com",
		"https://Attestd.Example.com/": "https://attestd.example.com",
		"http://127.0.0.1:8080":        "http://127.0.0.1:8080",
		"https://console.example:443":  "https://console.example",
		"http://localhost:80":          "http://localhost",
		"https://[::1]:8443":           "https://[::1]:8443",
		"HTTPS://console.example:8443": "https://console.example:8443",
	}
	for in, want := range good {
		o, err := ParseOrigin(in)
		if err != nil || o.String() != want {
			t.Errorf("%q: %q %v, want %q", in, o.String(), err, want)
		}
	}
	for _, in := range []string{"", "attestd.example.com", "ftp://x.example", "https://", "https://x.example/api",
		"https://x.example?a=1", "https://x.example/#f", "https://u:p@x.example", "https://x.example:0",
		"https://x.example:99999", "https://x.example:", "https:x.example", "https://x.example/?", "javascript:alert(1)",
		"https://ÉX.com", "https://bücher.example"} {
		if o, err := ParseOrigin(in); err == nil {
			t.Errorf("%q: accepted as %q", in, o)
		}
	}
}

func TestPublicOrigin(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct {
		vars map[string]string
		want string
		err  error
	}{
		{nil, "http://127.0.0.1:8080", nil},
		{map[string]string{"ATTESTD_HTTP_ADDR": "localhost:9000"}, "http://localhost:9000", nil},
		{map[string]string{"ATTESTD_HTTP_ADDR": "[::1]:9000"}, "http://[::1]:9000", nil},
		{map[string]string{"ATTESTD_HTTP_ADDR": "0.0.0.0:8080"}, "", ErrNoPublicURL},
		{map[string]string{"ATTESTD_HTTP_ADDR": ":8080"}, "", ErrNoPublicURL},
		{map[string]string{"ATTESTD_HTTP_ADDR": "10.0.0.5:8080"}, "", ErrNoPublicURL},
		{map[string]string{"ATTESTD_HTTP_ADDR": "127.0.0.1:0"}, "", ErrNoPublicURL},
		{map[string]string{"ATTESTD_HTTP_ADDR": "0.0.0.0:8080", "ATTESTD_PUBLIC_URL": "https://attestd.example.com"}, "https://attestd.example.com", nil},
	} {
		cfg, err := FromEnv(env(c.vars))
		if err != nil {
			t.Fatalf("%v: %v", c.vars, err)
		}
		o, err := cfg.PublicOrigin()
		if o.String() != c.want || !errors.Is(err, c.err) {
			t.Errorf("%v: %q %v, want %q %v", c.vars, o, err, c.want, c.err)
		}
	}
	if _, err := FromEnv(env(map[string]string{"ATTESTD_PUBLIC_URL": "https://x.example/console"})); err == nil {
		t.Error("a public URL with a path: want an error")
	}
}
