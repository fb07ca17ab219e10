package httpapi

import (
	"encoding/base64"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/store"
	"github.com/gagliardetto/solana-go"
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

func TestParseLimitOffset(t *testing.T) {
	for _, tc := range []struct {
		in      string
		present bool
		want    int
		ok      bool
	}{
		{"", false, 20, true}, {"1", true, 1, true}, {"100", true, 100, true}, {"101", true, 100, true},
		{"0", true, 0, false}, {"-1", true, 0, false}, {"abc", true, 0, false}, {"", true, 0, false},
		{"1e3", true, 0, false}, {" 5", true, 0, false}, {"+5", true, 5, true},
	} {
		got, err := ParseLimit(tc.in, tc.present, DefaultLimit, MaxLimit)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("limit %q: %d %v", tc.in, got, err)
		}
	}
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{{"0", 0, true}, {"100000", 100000, true}, {"100001", 0, false}, {"-1", 0, false}, {"x", 0, false}} {
		got, err := ParseOffset(tc.in, true, MaxOffset)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("offset %q: %d %v", tc.in, got, err)
		}
	}
}

func TestLimitOffset(t *testing.T) {
	for _, tc := range []struct {
		q             map[string]string
		limit, offset int
		ok            bool
	}{
		{nil, 10, 0, true},
		{map[string]string{"limit": "5"}, 5, 0, true},
		{map[string]string{"limit": "500", "offset": "30"}, 50, 30, true},
		{map[string]string{"offset": "1000"}, 10, 1000, true},
		{map[string]string{"offset": "1001"}, 0, 0, false},
		{map[string]string{"limit": "0", "offset": "3"}, 0, 0, false},
		{map[string]string{"limit": "7", "offset": "-1"}, 0, 0, false},
		{map[string]string{"limit": ""}, 0, 0, false},
	} {
		limit, offset, err := LimitOffset(tc.q, 10, 50, 1000)
		if (err == nil) != tc.ok || limit != tc.limit || offset != tc.offset {
			t.Errorf("%v: limit %d offset %d err %v; want %d %d ok=%v", tc.q, limit, offset, err, tc.limit, tc.offset, tc.ok)
		}
	}
}

func TestParseTime(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2026-11-21":                time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC),
		"2026-11-21T10:00:00Z":      time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC),
		"2026-11-21T12:00:00+02:00": time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC),
		"2026-11-21T10:00:00.5Z":    time.Date(2026, 11, 21, 10, 0, 0, 5e8, time.UTC),
	} {
		got, err := ParseTime("from", in)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, in := range []string{"", "today", "2026-11-21T10:00:00", "21/11/2026", "2026-02-30", "1700000000"} {
		if _, err := ParseTime("from", in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestCursorRoundTrip(t *testing.T) {
	c := &store.Cursor{Timestamp: time.Unix(1_700_000_000, 0).UTC(), Slot: 42, PDA: "11111111111111111111111111111111"}
	back, err := DecodeCursor(EncodeCursor(c))
	if err != nil || *back != *c {
		t.Fatalf("%+v %v", back, err)
	}
}

// The longest cursor a pda allows is accepted; a longer input is refused
// before it is decoded, however well-formed its base64.
func TestCursorLengthBound(t *testing.T) {
	var pk solana.PublicKey
	for i := range pk {
		pk[i] = 0xff
	}
	longest := &store.Cursor{Timestamp: time.Unix(1<<40, 0).UTC(), Slot: 1<<63 - 1, PDA: pk.String()}
	if _, err := DecodeCursor(EncodeCursor(longest)); err != nil {
		t.Fatalf("the longest cursor refused: %v", err)
	}
	for _, n := range []int{maxCursorRaw + 1, 1 << 20} {
		s := base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("1", n)))
		if _, err := DecodeCursor(s); err == nil {
			t.Errorf("a cursor of %d decoded bytes accepted", n)
		}
	}
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add(EncodeCursor(&store.Cursor{Timestamp: time.Unix(1, 0), Slot: 1, PDA: "11111111111111111111111111111111"}))
	f.Add("")
	f.Add("LjEu")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := DecodeCursor(s)
		if err != nil {
			return
		}
		// Anything accepted re-encodes to an equivalent cursor.
		again, err := DecodeCursor(EncodeCursor(c))
		if err != nil || *again != *c {
			t.Fatalf("%q: %+v then %+v %v", s, c, again, err)
		}
	})
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-11-21", "2026-11-21T10:00:00Z", "2026-11-21T10:00:00+14:00", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := ParseTime("from", s)
		if err == nil && tm.Location() != time.UTC {
			t.Fatalf("%q parsed to non-UTC %v", s, tm)
		}
		if err != nil && !strings.Contains(err.Error(), "from must be") {
			t.Fatalf("unclear error %v", err)
		}
	})
}

func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"": false, "gzip": true, "GZIP": true, "gzip, deflate, br": true, "br, gzip;q=0.5": true,
		"deflate": false, "gzip;q=0": false, "gzip; q=0": false, "*": true, "identity": false, "x-gzip2": false,
		// Found in the hostile review: the parameter name is case-insensitive.
		"gzip;Q=0": false, "gzip; Q = 0.000": false, "gzip;q=0.001": true, "gzip;q=1.000": true,
		"*;q=0": false, "*, gzip;q=0": false, "gzip;q=0, *": false, "br, *;q=0.2": true,
		"gzip;q=2": false, "gzip;q=0.0001": false, "gzip;q=x": false, "gzip;level=1": true, "x-gzip": true,
	} {
		if got := gzipAcceptable(h); got != want {
			t.Errorf("%q: %v", h, got)
		}
	}
}

// FuzzAcceptsGzip holds the allocation-free Accept-Encoding reading to
// the straightforward one it replaced, on one line and split over two.
func FuzzAcceptsGzip(f *testing.F) {
	for _, s := range []string{"", "gzip", "gzip;q=0", "*;q=0.5, gzip;q=0", "br, x-gzip;Q=1.000", "gzip;level=1;q=0.001", ",,;=,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		want := referenceGzipAcceptable(h)
		if got := gzipAcceptable(h); got != want {
			t.Fatalf("%q: %v, reference %v", h, got, want)
		}
		if i := strings.IndexByte(h, ','); i >= 0 {
			if got := gzipAcceptableLines([][]byte{[]byte(h[:i]), []byte(h[i+1:])}); got != want {
				t.Fatalf("%q over two lines: %v, reference %v", h, got, want)
			}
		}
	})
}

func referenceGzipAcceptable(h string) bool {
	gzipQ, starQ := -1, -1
	for _, part := range strings.Split(h, ",") {
		name, params, _ := strings.Cut(part, ";")
		q := 1000
		for _, p := range strings.Split(params, ";") {
			if k, v, ok := strings.Cut(p, "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				q = referenceQValue(strings.TrimSpace(v))
			}
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "gzip", "x-gzip":
			gzipQ = max(gzipQ, q)
		case "*":
			starQ = max(starQ, q)
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return starQ > 0
}

func referenceQValue(v string) int {
	whole, frac, _ := strings.Cut(v, ".")
	if (whole != "0" && whole != "1") || len(frac) > 3 {
		return 0
	}
	n := int(whole[0]-'0') * 1000
	for i, scale := 0, 100; i < len(frac); i, scale = i+1, scale/10 {
		if frac[i] < '0' || frac[i] > '9' {
			return 0
		}
		n += int(frac[i]-'0') * scale
	}
	if n > 1000 {
		return 0
	}
	return n
}

// FuzzParseAddressIsCanonical: ParseAddress answers the input itself, not
// a re-encoding, so every string it accepts must be the one canonical
// base58 spelling of its 32 bytes, and a 32-byte key's spelling must be
// accepted as it is.
func FuzzParseAddressIsCanonical(f *testing.F) {
	for _, s := range []string{"11111111111111111111111111111111", "1111111111111111111111111111111z",
		"4NkNZ9GyvKikuG6Bk67npuC8rfAFhNSZyomvUqgzveo9", "JEKNVnkbo3jma5nREBBJCDoXFVeKkD56V3xKrvRmWxFG", "0OIl"} {
		f.Add(s, []byte(s))
	}
	f.Fuzz(func(t *testing.T, s string, key []byte) {
		if got, err := ParseAddress("id", s); err == nil {
			pk, perr := solana.PublicKeyFromBase58(s)
			if perr != nil || got != s || pk.String() != s {
				t.Fatalf("accepted %q as %q; its bytes spell %q (%v)", s, got, pk.String(), perr)
			}
		}
		var k solana.PublicKey
		copy(k[:], key)
		if got, err := ParseAddress("id", k.String()); err != nil || got != k.String() {
			t.Fatalf("key %x spelled %q: %q, %v", k[:], k.String(), got, err)
		}
	})
}

// FuzzQueryParamsRules holds the allocation-free query checking
// (CheckQuery, under QueryParams and the list route) to the map-building
// one it replaced: the same values, and an error for the same queries
// (unknown names, repeated names). ParseLimit and ParseOffset read the
// request's bytes as they read strings.
func FuzzQueryParamsRules(f *testing.F) {
	for _, s := range []string{"", "limit=5", "limit=1&limit=2", "nope=1", "limit", "limit=&offset=", "a=b&a=c",
		"%ZZ&&&=&;=", "limit=%31%30", "offset=-1&cursor=x&from=2026-01-01", "to=1&to"} {
		f.Add(s)
	}
	app := fiber.New()
	// The names of GET /attestations (package app), the longest list.
	listParams := []string{"limit", "offset", "cursor", "agentPda", "actionType", "from", "to", "actionHash", "txSignature"}
	routes := [][]string{nil, {"limit", "offset"}, listParams}
	f.Fuzz(func(t *testing.T, query string) {
		var rc fasthttp.RequestCtx
		rc.Request.SetRequestURI("/x?" + query)
		c := app.AcquireCtx(&rc)
		defer app.ReleaseCtx(c)
		for _, allowed := range routes {
			want, wantErr := referenceQueryParams(c, allowed...)
			got, err := QueryParams(c, allowed...)
			if (err != nil) != (wantErr != nil) || (err != nil && err.Error() != wantErr.Error()) {
				t.Fatalf("%q with %v: error %v, reference %v", query, allowed, err, wantErr)
			}
			if err == nil && !maps.Equal(got, want) {
				t.Fatalf("%q with %v: %v, reference %v", query, allowed, got, want)
			}
			if err != nil {
				continue
			}
			q, _ := CheckQuery(c, allowed)
			for i, name := range allowed {
				v, ok := q.Get(i)
				s, sok := want[name]
				if ok != sok || string(v) != s {
					t.Fatalf("%q: %s = %q %v, reference %q %v", query, name, v, ok, s, sok)
				}
				l1, e1 := ParseLimit(v, ok, DefaultLimit, MaxLimit)
				l2, e2 := ParseLimit(s, sok, DefaultLimit, MaxLimit)
				o1, e3 := ParseOffset(v, ok, MaxOffset)
				o2, e4 := ParseOffset(s, sok, MaxOffset)
				if l1 != l2 || fmt.Sprint(e1) != fmt.Sprint(e2) || o1 != o2 || fmt.Sprint(e3) != fmt.Sprint(e4) {
					t.Fatalf("%q: bytes and string parse differently: %d %v / %d %v, %d %v / %d %v", v, l1, e1, l2, e2, o1, e3, o2, e4)
				}
			}
		}
	})
}

// referenceQueryParams is QueryParams as it was written before CheckQuery.
func referenceQueryParams(c *fiber.Ctx, allowed ...string) (map[string]string, error) {
	args := c.Context().QueryArgs()
	if args.Len() == 0 {
		return nil, nil
	}
	out := make(map[string]string, args.Len())
	var err error
	args.VisitAll(func(k, v []byte) {
		if err != nil {
			return
		}
		key := ""
		for _, a := range allowed {
			if a == string(k) {
				key = a
				break
			}
		}
		switch {
		case key == "" && len(allowed) == 0:
			err = apierror.Invalid("unknown query parameter %q; this route takes none", k)
			return
		case key == "":
			err = apierror.Invalid("unknown query parameter %q; allowed: %s", k, strings.Join(allowed, ", "))
			return
		}
		if _, dup := out[key]; dup {
			err = apierror.Invalid("query parameter %q given more than once", key)
			return
		}
		out[key] = string(v)
	})
	return out, err
}
