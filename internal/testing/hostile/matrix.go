package hostile

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/attestd/attestd/internal/testing/testenv"
)

// route is one route of the API as the matrix attacks it.
type route struct {
	method string
	path   string // {agent}, {pda}, {prefix}, {webhook} and {delivery} are replaced
	query  []string
	keyed  bool
	body   bool
	// cacheable: a public GET whose answers carry ETags (304 on a match).
	cacheable bool
	// private: answers per caller without a key (the sign-in routes).
	private bool
	// page: a route of the web application, outside the API prefix.
	page bool
	// session: the route reads the web console's session cookie.
	session bool
}

func routes(t Target) []route {
	var webhooks []route
	if t.Webhook != "" {
		webhooks = []route{
			{method: "POST", path: "/webhooks", keyed: true, body: true},
			{method: "GET", path: "/webhooks", query: []string{"limit", "offset"}, keyed: true},
			{method: "GET", path: "/webhooks/{webhook}", keyed: true},
			{method: "PATCH", path: "/webhooks/{webhook}", keyed: true, body: true},
			{method: "GET", path: "/webhooks/{webhook}/deliveries", query: []string{"limit", "offset", "deliveryId"}, keyed: true},
			{method: "POST", path: "/webhooks/{webhook}/deliveries/{delivery}/retry", keyed: true},
			{method: "POST", path: "/webhooks/{webhook}/test", keyed: true},
			{method: "POST", path: "/webhooks/{webhook}/verify", keyed: true},
			{method: "DELETE", path: "/webhooks/{webhook}", keyed: true}, // last: it deletes the webhook
		}
	}
	return append([]route{
		{method: "GET", path: "/", query: []string{"agent", "type"}, cacheable: true, page: true},
		{method: "GET", path: "/assets/{asset}", cacheable: true, page: true},
		{method: "GET", path: "/auth/nonce", private: true},
		{method: "POST", path: "/auth/signin", private: true, body: true},
		{method: "GET", path: "/auth/session", private: true, session: true},
		{method: "POST", path: "/auth/signout", private: true, session: true},
		{method: "GET", path: "/auth/payments", query: []string{"limit"}, private: true, session: true},
		{method: "GET", path: "/health"},
		{method: "GET", path: "/stats", cacheable: true},
		{method: "GET", path: "/attestations", query: []string{"limit", "offset", "cursor", "agentPda", "actionType", "from", "to", "actionHash", "txSignature"}, cacheable: true},
		{method: "GET", path: "/agents", query: []string{"limit", "offset", "cursor", "operator"}, cacheable: true},
		{method: "GET", path: "/stats/overview", cacheable: true},
		{method: "GET", path: "/attestations/{pda}", cacheable: true},
		{method: "GET", path: "/agents/{agent}", cacheable: true},
		{method: "GET", path: "/agents/{agent}/stats", cacheable: true},
		{method: "GET", path: "/openapi.json", cacheable: true},
		{method: "GET", path: "/keys", query: []string{"limit", "offset"}, keyed: true, session: true},
		{method: "POST", path: "/keys", keyed: true, body: true, session: true},
		{method: "DELETE", path: "/keys/{prefix}", keyed: true, session: true},
		{method: "GET", path: "/premium/full-history/{agent}", query: []string{"limit", "offset", "cursor", "from", "to"}, keyed: true},
		{method: "GET", path: "/premium/forensic-report/{agent}", query: []string{"from", "to"}, keyed: true},
		{method: "POST", path: "/premium/bulk-verify", keyed: true, body: true},
	}, webhooks...)
}

// hostileValues are tried for every query parameter and path parameter.
var hostileValues = []string{
	"", " ", "\x00", "-1", "0", "1", "100", "101", "100001", "99999999999999999999999999", "-99999999999999999999",
	"1e3", "0x10", "1.5", "NaN", "Infinity", "true", "null", "[]", "{}", "'; DROP TABLE attestations; --",
	"../../etc/passwd", "/", "%", "%ZZ", "\u202e", "é", "\xff\xfe", strings.Repeat("a", 8<<10),
	"0001-01-01", "0000-01-01", "10000-01-01", "9999-12-31T23:59:59Z", "9999-12-31T23:59:59.999999999Z",
	"1970-01-01T00:00:00Z", "2026-02-30", "2026-11-21T10:00:00+24:00", "2026-11-21T10:00:00+23:60",
	"2026-11-21T23:59:60Z", "1677-09-21T00:12:43Z", "2262-04-11T23:47:16.854775808Z",
	"2026-11-21T10:00:00.1234567891234Z", "2026-11-21t10:00:00z", "11111111111111111111111111111111",
	"0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "Decision", "decision",
	"TRANSACTION", "Custom ", "7", "LjEu", "MTcwMDAwMDAwMC4xLjExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMQ",
	// The lookups: hashes of the wrong length or alphabet, and base58 of
	// other lengths than a signature's 64 bytes.
	strings.Repeat("ab", 32), strings.Repeat("AB", 32), "0x" + strings.Repeat("ab", 32), strings.Repeat("ab", 31) + "a",
	strings.Repeat("ab", 32) + "0", strings.Repeat("g", 64), strings.Repeat("ab", 31) + "a\x00", strings.Repeat("1", 64),
	strings.Repeat("z", 88), strings.Repeat("z", 89), strings.Repeat("2", 87) + "\u00e9",
}

// Matrix is every case, for the target's agent, attestation and key.
func Matrix(t Target) []Case {
	var cs []Case
	key := map[string]string{"x-api-key": t.APIKey}
	// A method that is a route of its own on the same path (DELETE on
	// /webhooks/{webhook}) is left to that route's cases: sent from another
	// route's method cases it would act for real, mid-matrix.
	own := map[string]bool{}
	for _, r := range routes(t) {
		own[r.method+" "+r.path] = true
	}
	for _, r := range routes(t) {
		rc := routeCases(t, r, key, own)
		for i := range rc {
			rc[i].Private = r.keyed || r.private
			rc[i].Page = r.page
		}
		cs = append(cs, rc...)
	}
	return append(cs, rawCases()...)
}

// caseList collects cases in the order they are sent.
type caseList []Case

func (cs *caseList) add(name, method, path string, header map[string]string, body []byte) {
	*cs = append(*cs, Case{Name: name, Method: method, Path: path, Header: header, Body: body})
}

// fillPath puts the target's agent, attestation, webhook and harmless
// stand-ins into a route's path parameters.
func fillPath(t Target, p string) string {
	return strings.NewReplacer("{asset}", "app.js", "{agent}", t.Agent, "{pda}", t.PDA, "{prefix}", "zzzzzzzz", "{webhook}", t.Webhook,
		"{delivery}", "msg_00000000000000000000000000000000").Replace(p)
}

// routeCases is every case of one route: key is the target's key header,
// own the method and path of every route.
func routeCases(t Target, r route, key map[string]string, own map[string]bool) caseList {
	var cs caseList
	var h map[string]string
	if r.keyed {
		h = key
	}
	base := fillPath(t, r.path)
	if r.method == http.MethodGet {
		cs = append(cs, cachingCases(r, base, h, t.ETags[r.path], t.GzipETags[r.path])...)
	}
	cs.parameters(r, base, h)
	cs.pathValues(r, base, h)
	cs.methods(r, base, h, own)
	if r.keyed {
		cs.keys(r, base, t.APIKey)
	}
	if r.session {
		cs.cookies(r, base)
	}
	cs.headers(r, base, h)
	if r.body {
		cs = append(cs, bodyCases(r.method, r.path, base, key)...)
		cs = append(cs, duplicateKeyCases(r.method, r.path, base, key)...)
	}
	if r.body || r.path == "/stats" { // the body routes, and one public GET
		cs = append(cs, framingCases(r.method, r.path, base, r.page)...)
	}
	return cs
}

// parameters sends every query parameter one hostile value at a time,
// and their abuse.
func (cs *caseList) parameters(r route, base string, h map[string]string) {
	for _, q := range r.query {
		for i, v := range hostileValues {
			cs.add(fmt.Sprintf("%s %s ?%s=value#%d", r.method, r.path, q, i), r.method, base+"?"+q+"="+url.QueryEscape(v), h, nil)
		}
		cs.add(r.method+" "+r.path+" repeated "+q, r.method, base+"?"+q+"=1&"+q+"=2", h, nil)
	}
	cs.add(r.method+" "+r.path+" unknown parameter", r.method, base+"?nope=1", h, nil)
	cs.add(r.method+" "+r.path+" 500 parameters", r.method, base+"?"+strings.Repeat("a=1&", 500), h, nil)
	cs.add(r.method+" "+r.path+" raw query junk", r.method, base+"?%ZZ&&&=&;=", h, nil)
}

// pathValues sends every hostile value as each path parameter, and odd
// suffixes.
func (cs *caseList) pathValues(r route, base string, h map[string]string) {
	if !strings.Contains(r.path, "{") {
		return
	}
	for i, v := range hostileValues {
		p := strings.NewReplacer("{asset}", url.PathEscape(v), "{agent}", url.PathEscape(v), "{pda}", url.PathEscape(v), "{prefix}", url.PathEscape(v),
			"{webhook}", url.PathEscape(v), "{delivery}", url.PathEscape(v)).Replace(r.path)
		cs.add(fmt.Sprintf("%s %s path value#%d", r.method, r.path, i), r.method, p, h, nil)
	}
	for _, suffix := range []string{"/", "//", "/..", "/%2e%2e", "%2F..%2F..", "/extra", "?", "#frag"} {
		cs.add(r.method+" "+r.path+" suffix "+suffix, r.method, base+suffix, h, nil)
	}
}

// methods sends the route's path with other methods, real and not,
// leaving out those that are routes of their own there.
func (cs *caseList) methods(r route, base string, h map[string]string, own map[string]bool) {
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "FOO", "get", "M-SEARCH"} {
		if m != r.method && own[m+" "+r.path] {
			continue
		}
		cs.add(m+" on "+r.path, m, base, h, nil)
	}
}

// keys sends a keyed route malformed and near-miss keys.
func (cs *caseList) keys(r route, base, apiKey string) {
	for i, k := range []string{"", "atst_", "atst_" + strings.Repeat("z", 43), "atst_" + strings.Repeat("1", 44),
		"atst_" + strings.Repeat("z", 4000), "Bearer x", "atst_\u00e9\u00e9\u00e9", apiKey + " ", " " + apiKey, strings.ToUpper(apiKey)} {
		cs.add(fmt.Sprintf("%s %s key#%d", r.method, r.path, i), r.method, base, map[string]string{"x-api-key": k}, nil)
	}
}

// cookies sends a session route malformed session cookies (no key: the
// session decides).
func (cs *caseList) cookies(r route, base string) {
	for i, c := range []string{"attestd_session=", "attestd_session=" + strings.Repeat("A", 43), "attestd_session=" + strings.Repeat("A", 44),
		"attestd_session=" + strings.Repeat("/", 43), "attestd_session=a; attestd_session=b",
		"attestd_session=" + strings.Repeat("z", 6000), "attestd_session=%41%41"} {
		cs.add(fmt.Sprintf("%s %s cookie#%d", r.method, r.path, i), r.method, base, map[string]string{"Cookie": c, "X-CSRF-Token": "x"}, nil)
	}
}

// headers sends the route with hostile headers, one set at a time, over
// h.
func (cs *caseList) headers(r route, base string, h map[string]string) {
	for i, hv := range []map[string]string{
		{"X-Request-ID": strings.Repeat("r", 4000)}, {"X-Request-ID": "a b"},
		{"Accept-Encoding": "gzip;q=2"}, {"Accept-Encoding": "*;q=0"}, {"Accept-Encoding": strings.Repeat("gzip, ", 500)},
		{"X-Forwarded-For": "garbage"}, {"X-Forwarded-For": strings.Repeat("1.2.3.4, ", 800)}, {"X-Real-IP": "::ffff:1.2.3.4%eth0"},
		{"If-None-Match": strings.Repeat("\"x\",", 500)}, {"Range": "bytes=0-0,1-1,2-2"}, {"Cookie": strings.Repeat("c=1; ", 1000)},
		{"Content-Type": "application/json; charset=utf-7"}, {"Host": "evil.example"}, {"Expect": "100-continue"},
		{"Big": strings.Repeat("b", 20<<10)},
	} {
		hh := map[string]string{}
		for k, v := range h {
			hh[k] = v
		}
		for k, v := range hv {
			hh[k] = v
		}
		cs.add(fmt.Sprintf("%s %s header#%d", r.method, r.path, i), r.method, base, hh, nil)
	}
}

// cachingCases attack conditional requests and caching headers on a GET
// route. etag and gzipETag are the route's current tags (plain and gzip
// answers), when known.
func cachingCases(r route, path string, key map[string]string, etag, gzipETag string) []Case {
	with := func(extra map[string]string) map[string]string {
		h := map[string]string{}
		for k, v := range key {
			h[k] = v
		}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	var cs []Case
	add := func(name string, expect int, extra map[string]string) {
		cs = append(cs, Case{Name: "GET " + r.path + " caching: " + name, Method: http.MethodGet, Path: path, Header: with(extra), Expect: expect})
	}
	// What must be a 304 on a cacheable route, and never on another.
	notModified := 0
	if r.cacheable {
		notModified = http.StatusNotModified
	} else if r.keyed {
		notModified = http.StatusOK // a keyed answer is never validated
	}
	add("If-None-Match *", notModified, map[string]string{"If-None-Match": "*"})
	add("If-None-Match * with Accept-Encoding", notModified, map[string]string{"If-None-Match": " * ", "Accept-Encoding": "gzip;q=0.5, identity;q=0"})
	if etag != "" {
		add("If-None-Match its ETag", http.StatusNotModified, map[string]string{"If-None-Match": etag})
		add("If-None-Match its weak ETag in a list", http.StatusNotModified, map[string]string{"If-None-Match": `"a", W/` + etag + `, "b"`})
		add("If-None-Match its ETag past the bound", http.StatusOK, map[string]string{"If-None-Match": strings.Repeat(`"pad",`, 1400) + etag})
		add("If-None-Match its ETag beside *", http.StatusOK, map[string]string{"If-None-Match": "*, " + etag})
		add("If-None-Match its ETag unquoted", http.StatusOK, map[string]string{"If-None-Match": strings.Trim(etag, `"`)})
	}
	if gzipETag != "" && gzipETag != etag { // two representations
		add("If-None-Match its gzip ETag, gzip", http.StatusNotModified, map[string]string{"If-None-Match": gzipETag, "Accept-Encoding": "gzip"})
		add("If-None-Match its gzip ETag, plain", http.StatusOK, map[string]string{"If-None-Match": gzipETag})
		add("If-None-Match its plain ETag, gzip", http.StatusOK, map[string]string{"If-None-Match": etag, "Accept-Encoding": "x-gzip, br"})
	}
	for i, v := range []string{
		`W/"x"`, `"unterminated`, `W/`, `"x" "y"`, `"x",,,,,"y"`, strings.Repeat(",", 8000), `*, "x"`, `"` + strings.Repeat("é", 3000) + `"`,
		strings.Repeat(`W/"`+strings.Repeat("t", 60)+`", `, 130), `"` + strings.Repeat(`\`, 100) + `"`,
	} {
		add(fmt.Sprintf("If-None-Match hostile#%d", i), 0, map[string]string{"If-None-Match": v})
	}
	for i, extra := range []map[string]string{
		{"If-Match": `"x"`}, {"If-Match": "*"}, {"If-Modified-Since": "garbage"}, {"If-Modified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"},
		{"If-Unmodified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"}, {"If-Range": `"x"`, "Range": "bytes=0-10"},
		{"Cache-Control": "no-cache"}, {"Cache-Control": "only-if-cached"}, {"Cache-Control": "max-age=0, no-store, private"},
		{"Pragma": "no-cache"}, {"Cache-Control": strings.Repeat("max-age=1, ", 700)},
	} {
		add(fmt.Sprintf("request caching header#%d", i), 0, extra)
	}
	return cs
}

// bodyCases attack a route that reads a JSON body.
func bodyCases(method, route, path string, key map[string]string) []Case {
	var cs []Case
	name := method + " " + route
	with := func(extra map[string]string) map[string]string {
		h := map[string]string{"Content-Type": "application/json"}
		for k, v := range key {
			h[k] = v
		}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	ids := func(n int, id string) []byte {
		var b strings.Builder
		b.WriteString(`{"ids":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + id + `"`)
		}
		b.WriteString(`]}`)
		return []byte(b.String())
	}
	bodies := [][]byte{
		nil, []byte(""), []byte("null"), []byte("[]"), []byte("{}"), []byte(`{"ids":null}`), []byte(`{"ids":[]}`),
		[]byte(`{"ids":[1,2]}`), []byte(`{"ids":"x"}`), []byte(`{"ids":[],"ids":[]}`), []byte(`{"label":"x","role":"admin"}`),
		[]byte(`{"label":` + `"` + strings.Repeat("l", 10<<10) + `"}`), []byte(`{"label":"\u0000\u001b[31m"}`),
		[]byte(`{"label":1}`), []byte("{\"ids\":[\"\xff\"]}"), ids(1001, "x"), ids(1000, "11111111111111111111111111111111"),
		[]byte(strings.Repeat("[", 100_000)), []byte(`{"ids":["` + strings.Repeat("a", 200<<10) + `"]}`),
		[]byte(strings.Repeat(" ", 300<<10)),
		[]byte(`{"url":"https://169.254.169.254/latest/meta-data","events":["attestation.created"]}`),
		[]byte(`{"url":"http://[::ffff:127.0.0.1]:8080/","events":["attestation.created"]}`),
		[]byte(`{"url":"https://2130706433/","events":["attestation.created"]}`),
		[]byte(`{"url":"https://user:pw@93.184.216.34/","events":["attestation.created"]}`),
		[]byte(`{"url":"https://93.184.216.34/","events":["attestation.created","attestation.created"]}`),
		[]byte(`{"url":"https://93.184.216.34/","events":["attestation.created"],"filter":{"agents":["x"]}}`),
		[]byte(`{"url":"https://93.184.216.34/","events":["attestation.created"],"secret":"whsec_mine"}`),
		[]byte(`{"url":"` + strings.Repeat("h", 4000) + `","events":["attestation.created"]}`),
		[]byte(`{"active":"yes"}`), []byte(`{"events":[]}`),
		[]byte(`{"message":"x wants you to sign in with your Solana account:\n11111111111111111111111111111111\n\nURI: http://x\nVersion: 1\nChain ID: mainnet\nNonce: 00000000000000000000000000000000\nIssued At: 2026-01-01T00:00:00Z\nExpiration Time: 2026-01-01T00:05:00Z","signature":"` + strings.Repeat("A", 86) + `=="}`),
		[]byte(`{"message":"` + strings.Repeat(`\n`, 3000) + `","signature":""}`), []byte(`{"message":"\u0000","signature":"\u0000"}`),
		[]byte("{\"message\":\"\xff\xfe\",\"signature\":\"AAAA\"}"), []byte(`{"message":null,"signature":null}`),
		[]byte(`{"message":"a","signature":"a","message":"b"}`),
	}
	for i, b := range bodies {
		cs = append(cs, Case{Name: fmt.Sprintf("%s body#%d", name, i), Method: method, Path: path, Header: with(nil), Body: b})
	}
	bombsOnce.Do(makeBombs)
	for i, c := range []struct {
		enc  string
		body []byte
	}{
		{"gzip, gzip", doubleBomb}, {"gzip", singleBomb}, {"gzip", testenv.Gzip(testenv.Gzip([]byte("{}")))}, {"br", []byte("{}")},
		{"deflate", []byte("not deflate")}, {"gzip", []byte("not gzip")}, {"identity, identity", []byte(`{"ids":["x"]}`)},
		{"compress", []byte("{}")}, {strings.Repeat("gzip,", 100), []byte("{}")},
	} {
		cs = append(cs, Case{Name: fmt.Sprintf("%s encoding#%d", name, i), Method: method, Path: path,
			Header: with(map[string]string{"Content-Encoding": c.enc}), Body: c.body})
	}
	for i, ct := range []string{"", "text/plain", "application/json;;", "multipart/form-data; boundary=x", "application/x-www-form-urlencoded", "application/jsonx"} {
		cs = append(cs, Case{Name: fmt.Sprintf("%s content-type#%d", name, i), Method: method, Path: path,
			Header: with(map[string]string{"Content-Type": ct}), Body: []byte(`{"ids":["x"]}`)})
	}
	return cs
}

var (
	bombsOnce              sync.Once
	singleBomb, doubleBomb []byte
)

// makeBombs compresses 64 MiB of zeros once (~64 KB), and 256 MiB twice
// (~1.2 KB that a decoder of stacked layers expands to 256 MiB).
func makeBombs() {
	singleBomb = testenv.Gzip(make([]byte, 64<<20))
	doubleBomb = testenv.Gzip(testenv.Gzip(make([]byte, 256<<20)))
}

// rawCases are malformed HTTP, sent byte for byte ({prefix} is the API
// prefix).
func rawCases() []Case {
	var cs []Case
	for i, raw := range []string{
		"POST {prefix}/keys HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
		"POST {prefix}/keys HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
		"POST {prefix}/keys HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n",
		"POST {prefix}/premium/bulk-verify HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"POST {prefix}/premium/bulk-verify HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
		"GET {prefix}/stats HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n",
		"GET {prefix}/stats HTTP/1.1\r\nHost: x\r\nno-colon-here\r\n\r\n",
		"GET {prefix}/stats HTTP/9.9\r\nHost: x\r\n\r\n",
		"GET  {prefix}/stats  HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT {prefix}/stats HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET {prefix}/stats?" + strings.Repeat("q", 32<<10) + " HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET {prefix}/stats HTTP/1.1\r\nHost: x\r\nX-Request-ID: a\x01b\r\n\r\n",
		"GET {prefix}/stats HTTP/1.1\r\n" + strings.Repeat("H: v\r\n", 3000) + "\r\n",
		// If-None-Match over several lines: "*" beside a tag is malformed,
		// lines add up past the bound, control characters inside a tag.
		"GET {prefix}/stats HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"a\"\r\nIf-None-Match: *\r\n\r\n",
		"GET {prefix}/stats HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("If-None-Match: \"abcdefghijklmnopqrstuvwxyz\"\r\n", 300) + "\r\n",
		"GET {prefix}/attestations HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"a\x01b\", *\r\n\r\n",
		"GET {prefix}/attestations HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"a\xffb\"\r\nAccept-Encoding: gzip\r\nAccept-Encoding: identity;q=0\r\n\r\n",
		// Bodies over the node's limit (1 MiB), announced and partly sent:
		// the node must answer without reading them.
		"POST {prefix}/keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2097152\r\n\r\n{\"label\":\"",
		"POST {prefix}/premium/bulk-verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n{",
	} {
		cs = append(cs, Case{Name: fmt.Sprintf("raw#%d", i), Method: "RAW", Raw: raw})
	}
	// Header blocks refused as they arrive, body or none: bytes RFC 9110
	// calls dangerous, folded lines, HTTP/1.1 without Host, and framing
	// whose body is withheld (answered at once, not at the read timeout).
	for i, raw := range []string{
		"GET {prefix}/stats HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
		"GET {prefix}/stats HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n",
		"GET {prefix}/stats HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n",
		"GET {prefix}/stats HTTP/1.1\r\nAccept: */*\r\n\r\n",
		"POST {prefix}/keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 0\r\nContent-Length: 9\r\n\r\n",
		"POST {prefix}/keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST {prefix}/keys HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 9\r\nContent-Length: 9\r\n\r\n",
	} {
		cs = append(cs, Case{Name: fmt.Sprintf("raw header block#%d", i), Method: "RAW", Raw: raw, Expect: http.StatusBadRequest, Closes: true})
	}
	return cs
}
