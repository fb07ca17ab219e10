package ratelimit

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Config
		wantErr []string // substrings of the error; nil: no error
	}{
		{
			name: "defaults",
			env:  nil,
			want: Config{Limit: 100, Window: time.Minute, ProxyHeader: "X-Forwarded-For", KeyPrefix: "attestd:ratelimit:"},
		},
		{
			name: "everything set",
			env: map[string]string{
				"ATTESTD_RATE_LIMIT":         " 250 ",
				"ATTESTD_RATE_WINDOW":        "90s",
				"ATTESTD_RATE_ALLOWLIST":     "10.1.0.0/16, 2001:db8::1",
				"ATTESTD_TRUSTED_PROXIES":    "192.0.2.1,::ffff:10.0.0.0/104,",
				"ATTESTD_PROXY_HEADER":       "x-real-ip",
				"ATTESTD_REDIS_PREFIX":       "prod:",
				"ATTESTD_RATE_REDIS_TIMEOUT": "250ms",
			},
			want: Config{
				Limit: 250, Window: 90 * time.Second, ProxyHeader: "X-Real-IP", KeyPrefix: "prod:ratelimit:", Timeout: 250 * time.Millisecond,
				Allowlist:      []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("2001:db8::1/128")},
				TrustedProxies: []netip.Prefix{netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("10.0.0.0/8")},
			},
		},
		{
			name: "zero disables",
			env:  map[string]string{"ATTESTD_RATE_LIMIT": "0"},
			want: Config{Limit: 0, Window: time.Minute, ProxyHeader: "X-Forwarded-For", KeyPrefix: "attestd:ratelimit:"},
		},
		{name: "negative limit", env: map[string]string{"ATTESTD_RATE_LIMIT": "-1"}, wantErr: []string{"ATTESTD_RATE_LIMIT", `"-1"`}},
		{name: "limit not a number", env: map[string]string{"ATTESTD_RATE_LIMIT": "lots"}, wantErr: []string{"ATTESTD_RATE_LIMIT"}},
		{name: "window without unit", env: map[string]string{"ATTESTD_RATE_WINDOW": "60"}, wantErr: []string{"ATTESTD_RATE_WINDOW", "Go duration"}},
		{name: "window too small", env: map[string]string{"ATTESTD_RATE_WINDOW": "10us"}, wantErr: []string{"ATTESTD_RATE_WINDOW"}},
		{name: "timeout without unit", env: map[string]string{"ATTESTD_RATE_REDIS_TIMEOUT": "75"}, wantErr: []string{"ATTESTD_RATE_REDIS_TIMEOUT", `"75"`}},
		{name: "timeout too long", env: map[string]string{"ATTESTD_RATE_REDIS_TIMEOUT": "2m"}, wantErr: []string{"ATTESTD_RATE_REDIS_TIMEOUT"}},
		{name: "bad allowlist", env: map[string]string{"ATTESTD_RATE_ALLOWLIST": "10.0.0.0/33"}, wantErr: []string{"ATTESTD_RATE_ALLOWLIST", "10.0.0.0/33"}},
		{name: "bad proxy", env: map[string]string{"ATTESTD_TRUSTED_PROXIES": "proxy.internal"}, wantErr: []string{"ATTESTD_TRUSTED_PROXIES", "proxy.internal"}},
		{name: "bad header", env: map[string]string{"ATTESTD_PROXY_HEADER": "Forwarded"}, wantErr: []string{"ATTESTD_PROXY_HEADER", "Forwarded"}},
		{
			name:    "all errors reported at once",
			env:     map[string]string{"ATTESTD_RATE_LIMIT": "x", "ATTESTD_RATE_WINDOW": "y"},
			wantErr: []string{"ATTESTD_RATE_LIMIT", "ATTESTD_RATE_WINDOW"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ConfigFromEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("no error, want one mentioning %v", tt.wantErr)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestConfigDefaultsAndChecks(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "zero value gets defaults", cfg: Config{}},
		{name: "negative limit", cfg: Config{Limit: -5}, wantErr: "must not be negative"},
		{name: "tiny window", cfg: Config{Limit: 1, Window: time.Microsecond}, wantErr: "at least 1ms"},
		{name: "unknown header", cfg: Config{Limit: 1, ProxyHeader: "CF-Connecting-IP"}, wantErr: "X-Forwarded-For or X-Real-IP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.cfg.withDefaults()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Window != DefaultWindow || c.ProxyHeader != DefaultProxyHeader || c.KeyPrefix != DefaultKeyPrefix ||
				c.Timeout != DefaultTimeout || c.MaxBatch != DefaultMaxBatch || c.Pipelines != DefaultPipelines || c.Now == nil {
				t.Errorf("defaults not filled: %+v", c)
			}
		})
	}
}

func TestParsePrefixes(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "", want: nil},
		{in: " , ,", want: nil},
		{in: "10.0.0.0/8", want: []string{"10.0.0.0/8"}},
		{in: "10.1.2.3/8", want: []string{"10.0.0.0/8"}}, // masked
		{in: "192.0.2.7", want: []string{"192.0.2.7/32"}},
		{in: "2001:db8::/32, fe80::1%eth0", want: []string{"2001:db8::/32", "fe80::1/128"}},
		{in: "::ffff:192.0.2.0/120", want: []string{"192.0.2.0/24"}},
		{in: "::ffff:192.0.2.9", want: []string{"192.0.2.9/32"}},
		{in: "10.0.0.0/8;10.1.0.0/16", wantErr: true},
		{in: "300.1.1.1", wantErr: true},
		{in: "10.0.0.0/", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePrefixes(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParsePrefixes(%q) = %v, want error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, p := range got {
				s = append(s, p.String())
			}
			if !reflect.DeepEqual(s, tt.want) {
				t.Errorf("ParsePrefixes(%q) = %v, want %v", tt.in, s, tt.want)
			}
		})
	}
}

func TestHumanDurationAndCeil(t *testing.T) {
	durations := map[time.Duration]string{
		time.Minute: "minute", 2 * time.Minute: "2 minutes", 90 * time.Second: "90 seconds",
		1500 * time.Millisecond: "1.5s", 2 * time.Hour: "2 hours",
	}
	for d, want := range durations {
		if got := humanDuration(d); got != want {
			t.Errorf("humanDuration(%s) = %q, want %q", d, got, want)
		}
	}
	ceils := map[time.Duration]int64{
		0: 0, -time.Second: 0, time.Microsecond: 1, time.Second: 1, time.Second + time.Microsecond: 2, 59999 * time.Millisecond: 60,
	}
	for d, want := range ceils {
		if got := ceilSeconds(d); got != want {
			t.Errorf("ceilSeconds(%s) = %d, want %d", d, got, want)
		}
	}
}
