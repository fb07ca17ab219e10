package mcp

import (
	"slices"
	"testing"

	"github.com/attestd/attestd/internal/config"
)

func TestAccepted(t *testing.T) {
	tests := []struct {
		origin         string
		origins, hosts []string
	}{
		{"https://api.example.com", []string{"https://api.example.com"}, []string{"api.example.com"}},
		{"https://api.example.com:8443", []string{"https://api.example.com:8443"}, []string{"api.example.com"}},
		{"http://127.0.0.1:8080", []string{"http://127.0.0.1:8080", "http://localhost:8080", "http://[::1]:8080"},
			[]string{"127.0.0.1", "localhost", "[::1]"}},
		{"http://localhost:9000", []string{"http://localhost:9000", "http://127.0.0.1:9000", "http://[::1]:9000"},
			[]string{"localhost", "127.0.0.1", "[::1]"}},
		{"http://[::1]:9000", []string{"http://[::1]:9000", "http://localhost:9000", "http://127.0.0.1:9000"},
			[]string{"[::1]", "localhost", "127.0.0.1"}},
		// A name that is not loopback's stays alone, however it resolves.
		{"http://localhost.example.com:80", []string{"http://localhost.example.com"}, []string{"localhost.example.com"}},
		{"http://10.0.0.5:8080", []string{"http://10.0.0.5:8080"}, []string{"10.0.0.5"}},
	}
	for _, tt := range tests {
		o, err := config.ParseOrigin(tt.origin)
		if err != nil {
			t.Fatal(err)
		}
		origins, hosts := accepted(o)
		if !slices.Equal(origins, tt.origins) || !slices.Equal(hosts, tt.hosts) {
			t.Errorf("%s: origins %q hosts %q, want %q %q", tt.origin, origins, hosts, tt.origins, tt.hosts)
		}
	}
}

func TestHostName(t *testing.T) {
	for h, want := range map[string]string{"api.example.com": "api.example.com", "api.example.com:443": "api.example.com",
		"[::1]:8080": "[::1]", "[::1]": "[::1]", "127.0.0.1:1": "127.0.0.1", "": ""} {
		if got := hostName(h); got != want {
			t.Errorf("hostName(%q) = %q, want %q", h, got, want)
		}
	}
}

func TestDepth(t *testing.T) {
	tests := []struct {
		json string
		want int
	}{
		{`{}`, 1},
		{`{"a":[1,{"b":2}]}`, 3},
		{`{"a":"[[[[{{{{"}`, 1},
		{`{"a":"\"[[["}`, 1},
		{`{"a":"\\","b":[[]]}`, 3},
		{`[[[[[]]]]]`, 5},
		{`"x"`, 0},
	}
	for _, tt := range tests {
		if got := depth([]byte(tt.json)); got != tt.want {
			t.Errorf("depth(%s) = %d, want %d", tt.json, got, tt.want)
		}
	}
}
