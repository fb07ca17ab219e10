package dataset

import (
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// hostileCase is one request a client should not send, and the answer it
// gets.
type hostileCase struct {
	name, method, target string
	headers              []string // name, value pairs
	want                 int
}

// The targets of the hostile requests.
const (
	hFile     = "/dataset/" + srvDay + ".parquet"
	hManifest = "/dataset/" + srvDay + ".json"
	hIndex    = "/dataset/index.json"
)

func hGet(name, target string, want int, headers ...string) hostileCase {
	return hostileCase{name: name, method: http.MethodGet, target: target, headers: headers, want: want}
}

func hRange(name, v string, want int, headers ...string) hostileCase {
	return hGet("Range "+name, hFile, want, append([]string{"Range", v}, headers...)...)
}

func hMethod(m, target string, want int) hostileCase {
	return hostileCase{name: m + " " + target, method: m, target: target, want: want}
}

// hManyRanges is thousands of ranges (8 KB).
var hManyRanges = strings.Repeat("0-0,", 2000) + "0-0"

// hostileCases are requests meant to break the dataset's routes: paths
// out of /dataset/, names that are not a day's, ranges no one needs,
// validators of junk, methods the routes do not take. want is the status;
// none is a 500, every error is an envelope, and no refused request reads
// the bucket.
func hostileCases() []hostileCase {
	return slices.Concat(hostilePaths(), hostileNames(), hostileRanges(), hostileValidators())
}

// hostilePaths leave /dataset/ or hide bytes in the name.
func hostilePaths() []hostileCase {
	return []hostileCase{
		hGet("traversal encoded", "/dataset/..%2F..%2Fetc%2Fpasswd", 404),
		hGet("traversal to the index", "/dataset/..%2Findex.json", 404),
		hGet("traversal dots encoded", "/dataset/%2e%2e%2f"+srvDay+".json", 404),
		hGet("traversal double-encoded", "/dataset/%252e%252e%252f"+srvDay+".json", 404),
		hGet("slash double-encoded", "/dataset/..%252F"+srvDay+".json", 404),
		hGet("backslash", "/dataset/..%5C"+srvDay+".json", 404),
		hGet("traversal after the day", "/dataset/"+srvDay+".parquet%2F..", 404),
		hGet("traversal in the path", "/dataset/../dataset/"+srvDay+".json", 404),
		hGet("dot segment", "/dataset/./"+srvDay+".json", 404),
		hGet("empty segment", "/dataset//"+srvDay+".json", 404),
		hGet("deeper", "/dataset/"+srvDay+"/"+srvDay+".json", 404),
		hGet("NUL after", "/dataset/"+srvDay+".json%00", 404),
		hGet("NUL inside", "/dataset/"+srvDay+"%00.json", 404),
		hGet("NUL alone", "/dataset/%00", 404),
		hGet("encoded dot", "/dataset/"+srvDay+"%2Eparquet", 404),
		hGet("semicolon", "/dataset/"+srvDay+".json;x", 404),
		hGet("newline encoded", "/dataset/"+srvDay+".json%0A", 404),
		hGet("long name", "/dataset/"+strings.Repeat("a", 5000)+".json", 404),
		hGet("long repeated days", "/dataset/"+strings.Repeat(srvDay+".", 500)+"json", 404),
		hGet("long digits", "/dataset/"+strings.Repeat("9", 4000)+"-01-01.parquet", 404),
		hGet("query on a file", hFile+"?download", 400),
		hGet("query on a manifest", hManifest+"?x=1", 400),
		hGet("query on the index", hIndex+"?callback=x", 400),
		hMethod(http.MethodPost, hIndex, 405),
		hMethod(http.MethodPut, hFile, 405),
		hMethod(http.MethodDelete, hManifest, 405),
		hMethod(http.MethodPatch, hIndex, 405),
		hMethod(http.MethodOptions, hIndex, 405),
		hMethod(http.MethodTrace, hFile, 405),
		hMethod(http.MethodPost, "/dataset/../../etc/passwd", 404),
		{name: "HEAD of a bad name", method: http.MethodHead, target: "/dataset/..%2Findex.json", want: 404},
	}
}

// hostileNames are names that are not a day's file or manifest, or a day
// without one.
func hostileNames() []hostileCase {
	return []hostileCase{
		hGet("suffix in capitals", "/dataset/"+srvDay+".PARQUET", 404),
		hGet("suffix mixed case", "/dataset/"+srvDay+".Json", 404),
		hGet("two dots", "/dataset/"+srvDay+"..json", 404),
		hGet("suffix twice", "/dataset/"+srvDay+".json.json", 404),
		hGet("two suffixes", "/dataset/"+srvDay+".parquet.json", 404),
		hGet("suffix only", "/dataset/.json", 404),
		hGet("no suffix", "/dataset/"+srvDay, 404),
		hGet("signed year", "/dataset/+026-03-14.json", 404),
		hGet("negative year", "/dataset/-026-03-14.json", 404),
		hGet("short month", "/dataset/2026-3-14.json", 404),
		hGet("no such date", "/dataset/2026-02-30.json", 404),
		hGet("month 13", "/dataset/2026-13-01.json", 404),
		hGet("fullwidth digit", "/dataset/%EF%BC%92026-03-14.json", 404),
		hGet("arabic-indic digit", "/dataset/2026-03-1%D9%A4.json", 404),
		hGet("day in capitals path", "/DATASET/"+srvDay+".json", 404),
		hGet("trailing slash", "/dataset/"+srvDay+".json/", 404),
		hGet("index in capitals", "/dataset/INDEX.json", 404),
		hGet("index suffix in capitals", "/dataset/index.JSON", 404),
		hGet("index trailing slash", "/dataset/index.json/", 404),
		hGet("far future day", "/dataset/9999-12-31.parquet", 404),
		hGet("year zero", "/dataset/0000-01-01.json", 404),
	}
}

// hostileRanges are odd, overlapping, huge and malformed ranges.
func hostileRanges() []hostileCase {
	return []hostileCase{
		hRange("thousands of ranges", "bytes="+hManyRanges, 416),
		hRange("10 KB", "bytes=0-"+strings.Repeat("9", 10<<10), 416),
		hRange("two ranges", "bytes=0-0,0-0", 416),
		hRange("overlapping", "bytes=0-10,5-15", 416),
		hRange("open twice", "bytes=0-,0-", 416),
		hRange("suffix twice", "bytes=-1,-1", 416),
		hRange("leading comma", "bytes=,0-1", 416),
		hRange("last before first", "bytes=5-1", 416),
		hRange("negative first", "bytes=-5-1", 416),
		hRange("negative suffix", "bytes=--5", 416),
		hRange("huge first", "bytes=99999999999999999999999-1", 416),
		hRange("max first", "bytes=9223372036854775807-9223372036854775807", 416),
		hRange("overflowing last", "bytes=0-18446744073709551616", 416),
		hRange("exponent", "bytes=1e3-2e3", 416),
		hRange("hex", "bytes=0x0-0xF", 416),
		hRange("arabic-indic digits", "bytes=٠-٩", 416),
		hRange("other unit", "bits=0-1", 416),
		hRange("no unit", "0-1", 416),
		hRange("no equals", "bytes 0-1", 416),
		hRange("parameters", "bytes=0-1 ; x", 416),
		hRange("empty suffix", "bytes=-0", 416),
		hRange("empty", "bytes=", 416),
		hRange("start at the end", "bytes=99999999-", 416),
		hRange("max last", "bytes=0-9223372036854775807", 206),
		hRange("huge suffix", "bytes=-9999999999", 206),
		hRange("junk If-Range", "bytes=0-", 200, "If-Range", "junk"),
		hRange("junk under a false If-Range", "bytes=junk", 200, "If-Range", `"other"`),
		hRange("10 KB If-Range", "bytes=0-1", 200, "If-Range", strings.Repeat("x", 10<<10)),
		hGet("Range on the manifest", hManifest, 200, "Range", "bytes=0-0,0-0"),
		hGet("Range on the index", hIndex, 200, "Range", "bytes="+hManyRanges),
		{name: "HEAD multi-range", method: http.MethodHead, target: hFile, headers: []string{"Range", "bytes=0-0,0-0"}, want: 200},
	}
}

// hostileValidators are conditional requests of junk.
func hostileValidators() []hostileCase {
	return []hostileCase{
		hGet("If-None-Match junk", hFile, 200, "If-None-Match", "abc"),
		hGet("If-None-Match star", hFile, 304, "If-None-Match", "*"),
		hGet("If-None-Match star and a tag", hFile, 200, "If-None-Match", `*, "x"`),
		hGet("If-None-Match 10 KB", hFile, 200, "If-None-Match", `"`+strings.Repeat("x", 10<<10)+`"`),
		hGet("If-None-Match star on the index", hIndex, 304, "If-None-Match", "*"),
		hGet("If-None-Match junk on the manifest", hManifest, 200, "If-None-Match", `W/"`),
		hGet("If-Modified-Since junk", hFile, 200, "If-Modified-Since", "yesterday"),
		hGet("If-Modified-Since far future", hManifest, 304, "If-Modified-Since", "Fri, 31 Dec 9999 23:59:59 GMT"),
	}
}

func TestHostileRequests(t *testing.T) {
	f := newSrvFixture(t, Config{})
	now := time.Now()
	// The index stays fresh and the manifest is held: a refused request
	// reads nothing.
	f.srv.now = func() time.Time { return now }
	for _, warm := range []string{"/dataset/index.json", "/dataset/" + srvDay + ".json"} {
		if a := f.do(t, "GET", warm); a.status != 200 {
			t.Fatal(warm, a.status)
		}
	}
	cases := hostileCases()
	if len(cases) < 60 {
		t.Fatalf("%d hostile cases", len(cases))
	}
	t.Logf("%d hostile requests", len(cases))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reads := f.srv.reads.Load()
			a := f.do(t, tc.method, tc.target, tc.headers...)
			if a.status != tc.want || a.status >= 500 {
				t.Fatalf("%s %.80s: %d %.200q, want %d", tc.method, tc.target, a.status, a.body, tc.want)
			}
			if a.status >= 400 {
				if n := f.srv.reads.Load() - reads; n != 0 {
					t.Errorf("a refused request read the bucket %d times", n)
				}
				if tc.method != http.MethodHead {
					a.envelope(t)
				}
			}
			if a.status == 206 && !strings.HasPrefix(a.header.Get("Content-Range"), "bytes ") {
				t.Errorf("206 without Content-Range: %v", a.header)
			}
		})
	}
}

// TestGuardRequests: an address over its requests gets 429 with
// Retry-After, another is still served.
func TestGuardRequests(t *testing.T) {
	f := newSrvFixture(t, Config{Rate: 1}) // a burst of 10
	f.srv.guard.now = func() time.Duration { return time.Hour }
	for i := range 10 {
		if a := f.do(t, "GET", "/dataset/index.json", "X-Test-IP", "198.51.100.7"); a.status != 200 {
			t.Fatalf("request %d: %d", i, a.status)
		}
	}
	for _, target := range []string{"/dataset/index.json", "/dataset/junk", "/dataset/" + srvDay + ".parquet"} {
		a := f.do(t, "GET", target, "X-Test-IP", "198.51.100.7")
		code, msg := a.envelope(t)
		if a.status != 429 || code != apierror.CodeRateLimited || a.header.Get("Retry-After") != "1" || !strings.Contains(msg, "requests per second") {
			t.Fatalf("%s over the limit: %d %s %s, Retry-After %q", target, a.status, code, msg, a.header.Get("Retry-After"))
		}
	}
	if a := f.do(t, "GET", "/dataset/index.json", "X-Test-IP", "198.51.100.8"); a.status != 200 {
		t.Fatalf("another address: %d", a.status)
	}
	if got := testutil.ToFloat64(f.srv.m.refused.WithLabelValues(refusedRequests)); got != 3 {
		t.Errorf("refused{requests} = %v", got)
	}
	if got := testutil.ToFloat64(f.srv.m.requests.WithLabelValues(routeIndex, "429")); got != 1 {
		t.Errorf("requests{index,429} = %v", got)
	}
	// A second later, one more.
	f.srv.guard.now = func() time.Duration { return time.Hour + time.Second }
	if a := f.do(t, "GET", "/dataset/index.json", "X-Test-IP", "198.51.100.7"); a.status != 200 {
		t.Fatalf("a second later: %d", a.status)
	}
}

// TestGuardBytes: an address that pulled more than its burst of bytes is
// refused until it has paid them back; 304s, HEADs and small ranges owe
// nothing or little; another address is still served.
func TestGuardBytes(t *testing.T) {
	f := newSrvFixture(t, Config{MiBRate: 1})
	g := f.srv.guard
	size := float64(len(f.file))
	g.byteRate, g.byteBurst = 1000, 2.5*size // in bytes: the file is far smaller than a MiB
	clock := time.Hour
	g.now = func() time.Duration { return clock }
	file := "/dataset/" + srvDay + ".parquet"
	for i := range 3 { // 1.5, 0.5, then -0.5 files left: the third is allowed, not in debt before it
		if a := f.do(t, "GET", file, "X-Test-IP", "203.0.113.5"); a.status != 200 || len(a.body) != len(f.file) {
			t.Fatalf("download %d: %d", i, a.status)
		}
	}
	for _, m := range []string{"GET", "HEAD"} {
		a := f.do(t, m, file, "X-Test-IP", "203.0.113.5")
		wantRetry := strconv.Itoa(int((0.5*size + 999) / 1000))
		if a.status != 429 || a.header.Get("Retry-After") != wantRetry {
			t.Fatalf("%s in debt: %d, Retry-After %q, want 429 %s", m, a.status, a.header.Get("Retry-After"), wantRetry)
		}
		if m == "GET" {
			if code, msg := a.envelope(t); code != apierror.CodeRateLimited || !strings.Contains(msg, "MiB per second") {
				t.Fatalf("in debt: %s %s", code, msg)
			}
		}
	}
	if got := testutil.ToFloat64(f.srv.m.refused.WithLabelValues(refusedBytes)); got != 2 {
		t.Errorf("refused{bytes} = %v", got)
	}
	if a := f.do(t, "GET", file, "X-Test-IP", "203.0.113.6"); a.status != 200 {
		t.Fatalf("another address: %d", a.status)
	}
	// Paid back after Retry-After.
	clock += time.Duration(0.5*size/1000*float64(time.Second)) + time.Millisecond
	if a := f.do(t, "GET", file, "X-Test-IP", "203.0.113.5", "Range", "bytes=0-9"); a.status != 206 {
		t.Fatalf("after paying back: %d", a.status)
	}
	// 304s and HEADs owe nothing; small ranges owe their length.
	etag := quoted(f.manifest.SHA256)
	for i := range 100 {
		for _, h := range [][]string{{"If-None-Match", etag}, {"Range", "bytes=0-9"}} {
			m := "GET"
			if i%2 == 1 && h[0] == "If-None-Match" {
				m, h = "HEAD", nil
			}
			if a := f.do(t, m, file, append([]string{"X-Test-IP", "203.0.113.7"}, h...)...); a.status >= 400 {
				t.Fatalf("%s %v %d: %d", m, h, i, a.status)
			}
		}
	}
}

func TestGuardKeys(t *testing.T) {
	for a, b := range map[string]string{
		"2001:db8::1":         "2001:db8::2",
		"2001:db8:0:0:ffff::": "2001:db8::",
		"::ffff:192.0.2.1":    "192.0.2.1",
		"fe80::1%eth0":        "fe80::2",
	} {
		if keyOf(netip.MustParseAddr(a)) != keyOf(netip.MustParseAddr(b)) {
			t.Errorf("%s and %s count apart", a, b)
		}
	}
	for a, b := range map[string]string{"2001:db8::1": "2001:db8:0:1::1", "192.0.2.1": "192.0.2.2"} {
		if keyOf(netip.MustParseAddr(a)) == keyOf(netip.MustParseAddr(b)) {
			t.Errorf("%s and %s count together", a, b)
		}
	}
}

// TestGuardBounded: past maxGuarded addresses the idle ones are
// forgotten, then all.
func TestGuardBounded(t *testing.T) {
	g := newGuard(1, 1, nil)
	clock := time.Duration(0)
	g.now = func() time.Duration { return clock }
	addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}) }
	for i := range maxGuarded {
		g.allow(addr(i))
	}
	if len(g.buckets) != maxGuarded {
		t.Fatalf("%d buckets", len(g.buckets))
	}
	clock += time.Minute // every one full again
	g.allow(addr(maxGuarded))
	if len(g.buckets) != 1 {
		t.Fatalf("idle addresses kept: %d", len(g.buckets))
	}
	for i := range maxGuarded {
		g.allow(addr(i)) // none idle
	}
	g.allow(addr(maxGuarded + 1))
	if len(g.buckets) > maxGuarded*3/4 {
		t.Fatalf("busy addresses not forgotten: %d", len(g.buckets))
	}
}
