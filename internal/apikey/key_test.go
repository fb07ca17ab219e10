package apikey

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mr-tron/base58"
)

func TestGenerateParsesBack(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		k, err := Generate()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(k.Secret, KeyPrefix) || len(k.Secret) < minKeyLen || len(k.Secret) > maxKeyLen {
			t.Fatalf("key %q has the wrong shape", k.Secret)
		}
		prefix, hash, ok := Parse(k.Secret)
		if !ok || prefix != k.Prefix || hash != k.Hash || hash != Hash(k.Secret) {
			t.Fatalf("%q: parse %q %x %v, generated %q %x", k.Secret, prefix, hash, ok, k.Prefix, k.Hash)
		}
		if !ValidPrefix(k.Prefix) || k.Prefix != k.Secret[5:13] {
			t.Fatalf("prefix %q of %q", k.Prefix, k.Secret)
		}
		if seen[k.Secret] {
			t.Fatal("duplicate key")
		}
		seen[k.Secret] = true
	}
}

func TestParseRejectsMalformedKeys(t *testing.T) {
	good, _ := Generate()
	body := good.Secret[len(KeyPrefix):]
	b31 := base58.Encode(bytes.Repeat([]byte{0xff}, 31)) // long enough text, too few bytes
	b33 := base58.Encode(append([]byte{1}, make([]byte, 32)...))
	for _, tc := range []struct{ name, key string }{
		{"empty", ""},
		{"text prefix only", "atst_"},
		{"no text prefix", body},
		{"upper-case text prefix", "ATST_" + body},
		{"dash", "atst-" + body},
		{"leading space", " " + good.Secret},
		{"trailing space", good.Secret + " "},
		{"trailing newline", good.Secret + "\n"},
		{"zero is not base58", "atst_0" + body[1:]},
		{"O is not base58", "atst_O" + body[1:]},
		{"I is not base58", "atst_I" + body[1:]},
		{"l is not base58", "atst_l" + body[1:]},
		{"plus", "atst_+" + body[1:]},
		{"too short", good.Secret[:minKeyLen-1]},
		{"too long", good.Secret + strings.Repeat("z", maxKeyLen)},
		{"31 bytes", "atst_" + b31},
		{"33 bytes", "atst_" + b33},
		{"unicode", "atst_é" + body[2:]},
		{"bearer", "Bearer " + good.Secret},
	} {
		if _, _, ok := Parse(tc.key); ok {
			t.Errorf("%s: %q accepted", tc.name, tc.key)
		}
	}
	// 32 zero bytes are 32 '1's: well-formed (though never generated).
	if _, _, ok := Parse("atst_" + strings.Repeat("1", 32)); !ok {
		t.Error("32 zero bytes rejected")
	}
}

func TestValidPrefix(t *testing.T) {
	for p, want := range map[string]bool{
		"Bsnh5PZw": true, "11111111": true, "zzzzzzzz": true,
		"": false, "Bsnh5PZ": false, "Bsnh5PZwx": false, "Bsnh5PZ0": false, "Bsnh5PZ/": false, "../../..": false,
	} {
		if ValidPrefix(p) != want {
			t.Errorf("%q: got %v", p, !want)
		}
	}
}

func TestValidateLabel(t *testing.T) {
	for label, ok := range map[string]bool{
		"": true, "ci": true, "production key — ü": true, strings.Repeat("é", 100): true,
		strings.Repeat("a", 101): false, "tab\there": false, "new\nline": false, "\x00": false, string([]byte{0xff}): false,
	} {
		if err := ValidateLabel(label); (err == nil) != ok {
			t.Errorf("%q: %v", label, err)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want Config
		bad  bool
	}{
		{env: nil, want: Config{}},
		{env: map[string]string{"ATTESTD_KEY_CACHE_TTL": "2s", "ATTESTD_KEY_TOUCH_INTERVAL": "1s", "ATTESTD_KEY_MAX_ACTIVE": "7"},
			want: Config{CacheTTL: 2 * time.Second, TouchInterval: time.Second, MaxActiveKeys: 7}},
		{env: map[string]string{"ATTESTD_KEY_CACHE_TTL": "5s"}, want: Config{CacheTTL: 5 * time.Second}},
		{env: map[string]string{"ATTESTD_KEY_CACHE_TTL": "6s"}, bad: true},
		{env: map[string]string{"ATTESTD_KEY_CACHE_TTL": "0s"}, bad: true},
		{env: map[string]string{"ATTESTD_KEY_CACHE_TTL": "soon"}, bad: true},
		{env: map[string]string{"ATTESTD_KEY_TOUCH_INTERVAL": "1ms"}, bad: true},
		{env: map[string]string{"ATTESTD_KEY_MAX_ACTIVE": "0"}, bad: true},
		{env: map[string]string{"ATTESTD_KEY_MAX_ACTIVE": "many"}, bad: true},
	} {
		got, err := ConfigFromEnv(func(k string) string { return tc.env[k] })
		if (err != nil) != tc.bad {
			t.Errorf("%v: err %v", tc.env, err)
			continue
		}
		if !tc.bad && (got.CacheTTL != tc.want.CacheTTL || got.TouchInterval != tc.want.TouchInterval || got.MaxActiveKeys != tc.want.MaxActiveKeys) {
			t.Errorf("%v: got %+v", tc.env, got)
		}
	}
}

func TestCreateBodyParsing(t *testing.T) {
	const js = "application/json"
	for _, tc := range []struct {
		name, ct, body, label string
		role                  Role
		status                int
	}{
		{"no body", "", "", "", RoleRead, 0},
		{"blank body", "", "  \n", "", RoleRead, 0},
		{"label", js, `{"label":"ci"}`, "ci", RoleRead, 0},
		{"charset", js + "; charset=utf-8", `{"label":"ci"}`, "ci", RoleRead, 0},
		{"empty object", js, `{}`, "", RoleRead, 0},
		{"role read", js, `{"label":"ci","role":"read"}`, "ci", RoleRead, 0},
		{"role admin", js, `{"role":"admin"}`, "", RoleAdmin, 0},
		{"unknown role", js, `{"role":"root"}`, "", "", 400},
		{"role case", js, `{"role":"Admin"}`, "", "", 400},
		{"role empty", js, `{"role":""}`, "", "", 400},
		{"role null", js, `{"role":null}`, "", "", 400},
		{"role bool", js, `{"role":true}`, "", "", 400},
		{"wrong type", "text/plain", `{"label":"ci"}`, "", "", 415},
		{"no type", "", `{"label":"ci"}`, "", "", 415},
		{"bad json", js, `{"label":`, "", "", 400},
		{"array", js, `["ci"]`, "", "", 400},
		{"null", js, `null`, "", "", 400},
		{"unknown field", js, `{"label":"ci","admin":true}`, "", "", 400},
		{"label number", js, `{"label":5}`, "", "", 400},
		{"label null", js, `{"label":null}`, "", "", 400},
		{"label too long", js, `{"label":"` + strings.Repeat("a", 101) + `"}`, "", "", 400},
		{"control char", js, `{"label":"a\u0007"}`, "", "", 400},
		{"too large", js, `{"label":"` + strings.Repeat(" ", maxCreateBody) + `"}`, "", "", 413},
	} {
		req, err := parseCreateBody(tc.ct, []byte(tc.body))
		status := 0
		if err != nil {
			e, ok := apiErr(err)
			if !ok {
				t.Errorf("%s: not an API error: %v", tc.name, err)
				continue
			}
			status = e
		}
		if status != tc.status || (status == 0 && (req.label != tc.label || req.role != tc.role)) {
			t.Errorf("%s: got %q/%q status %d (%v), want %q/%q status %d", tc.name, req.label, req.role, status, err, tc.label, tc.role, tc.status)
		}
	}
}

func TestRoles(t *testing.T) {
	for _, tc := range []struct {
		have, need Role
		ok         bool
	}{
		{RoleAdmin, RoleAdmin, true}, {RoleAdmin, RoleRead, true},
		{RoleRead, RoleRead, true}, {RoleRead, RoleAdmin, false},
		{"", RoleRead, false}, {"root", RoleRead, false}, {RoleAdmin, "", false},
	} {
		if got := tc.have.Allows(tc.need); got != tc.ok {
			t.Errorf("%q allows %q: %v", tc.have, tc.need, got)
		}
	}
	if got := strings.Join(RoleAdmin.atMost(), ","); got != "read,admin" {
		t.Errorf("admin acts on %s", got)
	}
	if got := strings.Join(RoleRead.atMost(), ","); got != "read" {
		t.Errorf("read acts on %s", got)
	}
	for _, s := range []string{"read", "admin"} {
		if r, err := ParseRole(s); err != nil || string(r) != s {
			t.Errorf("parse %q: %q %v", s, r, err)
		}
	}
	for _, s := range []string{"", "ADMIN", "owner", "read "} {
		if _, err := ParseRole(s); err == nil {
			t.Errorf("parse %q accepted", s)
		}
	}
}
