package httpcache

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

func TestPolicyFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	p, err := ConfigFromEnv(env(nil))
	if err != nil || p != DefaultPolicy() {
		t.Fatalf("defaults: %+v %v", p, err)
	}
	h := p.Headers()
	if h.Index != "public, max-age=0, s-maxage=5, stale-while-revalidate=5" ||
		h.Confirmed != "public, max-age=0, s-maxage=5" || h.Finalized != "public, max-age=31536000, immutable" {
		t.Fatalf("default headers %+v", h)
	}
	if (Config{}).Headers() != h || p.StaleBound() != 10*time.Second {
		t.Fatalf("zero policy must render the defaults; bound %s", p.StaleBound())
	}
	p, err = ConfigFromEnv(env(map[string]string{"ATTESTD_HTTP_MAX_AGE": "2s", "ATTESTD_HTTP_S_MAXAGE": "1m",
		"ATTESTD_HTTP_STALE_WHILE_REVALIDATE": "0s", "ATTESTD_HTTP_FINALIZED_MAX_AGE": "24h"}))
	if err != nil {
		t.Fatal(err)
	}
	if h := p.Headers(); h.Index != "public, max-age=2, s-maxage=60" || h.Finalized != "public, max-age=86400, immutable" {
		t.Fatalf("headers %+v", h)
	}
	for _, bad := range []map[string]string{
		{"ATTESTD_HTTP_MAX_AGE": "1.5s"}, {"ATTESTD_HTTP_MAX_AGE": "-1s"}, {"ATTESTD_HTTP_MAX_AGE": "2h"},
		{"ATTESTD_HTTP_S_MAXAGE": "soon"}, {"ATTESTD_HTTP_STALE_WHILE_REVALIDATE": "25h"},
		{"ATTESTD_HTTP_FINALIZED_MAX_AGE": "0s"}, {"ATTESTD_HTTP_FINALIZED_MAX_AGE": "9000h"}, {"ATTESTD_HTTP_S_MAXAGE": "500ms"},
	} {
		if _, err := ConfigFromEnv(env(bad)); err == nil {
			t.Errorf("%v: want an error", bad)
		}
	}
}

func TestNoneMatch(t *testing.T) {
	const tag = `"abcDEF-_0123456789xyzw"`
	for _, tc := range []struct {
		field string
		want  bool
	}{
		{"", false},
		{tag, true},
		{"W/" + tag, true}, // weak comparison
		{`"other"`, false},
		{`"other", ` + tag, true},
		{`"other",` + tag + `,"third"`, true},
		{` ,, ` + tag + ` , `, true}, // empty list elements are ignored
		{"*", true},
		{" * ", true},
		{`*, "x"`, false},                         // "*" among tags: malformed
		{`"x", *`, false},                         // likewise
		{strings.Trim(tag, `"`), false},           // unquoted
		{`"abcDEF-_0123456789xyzw`, false},        // unterminated
		{`W/` + tag[:len(tag)-1] + `-gz"`, false}, // another representation's tag
		{`w/` + tag, false},                       // "W/" is case-sensitive
		{tag + ` junk`, false},                    // junk after an element
		{tag + `"`, false},
		{`"a b"`, false}, // no spaces inside a tag
		{`"x` + "\x7f" + `"`, false},
		{"\"\xe9t\xc3\xa9\", " + tag, true}, // obs-text inside another tag is allowed
		{`""`, false},
		{"W/", false},
		{",", false},
	} {
		if got := NoneMatch([][]byte{[]byte(tc.field)}, []byte(tag)); got != tc.want {
			t.Errorf("If-None-Match %q: %v, want %v", tc.field, got, tc.want)
		}
	}
	// Several lines form one list.
	if !NoneMatch([][]byte{[]byte(`"a"`), []byte(tag)}, []byte(tag)) {
		t.Error("a tag on the second line was not seen")
	}
	if NoneMatch([][]byte{[]byte(`*`), []byte(`"a"`)}, []byte(tag)) {
		t.Error(`"*" with a tag on another line must be malformed`)
	}
	// Bounded: a match beyond MaxIfNoneMatch bytes is ignored.
	long := strings.Repeat(`"x",`, MaxIfNoneMatch/4) + tag
	if NoneMatch([][]byte{[]byte(long)}, []byte(tag)) {
		t.Error("a field beyond the bound was read")
	}
	within := strings.Repeat(`"x",`, (MaxIfNoneMatch-len(tag))/4) + tag
	if len(within) > MaxIfNoneMatch || !NoneMatch([][]byte{[]byte(within)}, []byte(tag)) {
		t.Errorf("a field of %d bytes within the bound was not read", len(within))
	}
	if n := testing.AllocsPerRun(100, func() { NoneMatch([][]byte{[]byte(within)}, []byte(tag)) }); n > 0 {
		t.Errorf("%v allocations per evaluation", n)
	}
}

// FuzzNoneMatch: any field is evaluated without panicking, within the
// bound, and a field that reports a match names the tag or is "*".
func FuzzNoneMatch(f *testing.F) {
	const tag = `"abcDEF-_0123456789xyzw"`
	for _, s := range []string{"", "*", tag, "W/" + tag, `"a", ` + tag, `*, "a"`, `"`, `W/"`, "\xff\xfe", ", ,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, field string) {
		got := NoneMatch([][]byte{[]byte(field)}, []byte(tag))
		if got && !strings.Contains(field, tag) && strings.TrimSpace(strings.Trim(field, " ,\t")) != "*" {
			t.Fatalf("%q matched %s", field, tag)
		}
	})
}

func TestSetKeys(t *testing.T) {
	app := fiber.New()
	addr := "7Np41oeYqPefeNQEHSv1UDhYrehxin3NStELsSKCT4K2"
	app.Get("/k", func(c *fiber.Ctx) error {
		switch c.Query("case") {
		case "general":
			SetKeys(c, KeyStats, "", "")
		case "id":
			SetKeys(c, KeyAgents, PrefixAgent, addr)
		case "idonly":
			SetKeys(c, "", PrefixAttestation, addr)
		case "long":
			SetKeys(c, KeyLists, PrefixAgent, strings.Repeat("z", 200))
		}
		return nil
	})
	for q, want := range map[string][2]string{
		"general": {"stats", "stats"},
		"id":      {"agents agent-" + addr, "agents,agent-" + addr},
		"long":    {"lists", "lists"},
		"idonly":  {"attestation-" + addr, "attestation-" + addr},
	} {
		res, err := app.Test(httptest.NewRequest("GET", "/k?case="+q, nil))
		if err != nil {
			t.Fatal(err)
		}
		if sk, ct := res.Header.Get(HeaderSurrogateKey), res.Header.Get(HeaderCacheTag); sk != want[0] || ct != want[1] {
			t.Errorf("%s: Surrogate-Key %q Cache-Tag %q, want %q %q", q, sk, ct, want[0], want[1])
		}
	}
	if !bytes.Equal([]byte(strings.Join(EpochKeys, " ")), []byte("lists stats agents confirmed")) {
		t.Errorf("epoch keys %v", EpochKeys)
	}
}

func TestKeyHeaderNamesAreCanonical(t *testing.T) {
	for _, name := range [][]byte{surrogateKey, cacheTag} {
		if want := fasthttp.AppendNormalizedHeaderKey(nil, string(name)); !bytes.Equal(name, want) {
			t.Errorf("%q is not canonical: fasthttp keeps it as %q", name, want)
		}
	}
}
