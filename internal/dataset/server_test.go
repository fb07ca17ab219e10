package dataset

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/gofiber/fiber/v2"
	"github.com/parquet-go/parquet-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
)

// srvDay is the day of the fixture's file.
const srvDay = "2026-03-14"

// srvFixture is a bucket holding one day's file, its manifest and an
// index, and a server over it mounted on a Fiber app.
type srvFixture struct {
	dir      string
	bucket   *blob.Bucket // under the prefix
	file     []byte
	rows     []Row
	manifest Manifest
	mbody    []byte // the manifest's bytes
	ibody    []byte // the index's bytes
	srv      *Server
	app      *fiber.App
	reg      *prometheus.Registry
}

// srvErrorHandler answers as the API's does (app.handleError): the
// envelope, no-store, no ETag.
func srvErrorHandler(c *fiber.Ctx, err error) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Response().Header.Del(fiber.HeaderETag)
	if e, ok := apierror.As(err); ok {
		return apierror.Write(c, e.Status, e.Code, e.Message)
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		switch fe.Code {
		case http.StatusNotFound:
			return apierror.Write(c, fe.Code, apierror.CodeNotFound, "no route")
		case http.StatusMethodNotAllowed:
			return apierror.Write(c, fe.Code, apierror.CodeMethodNotAllowed, "method not allowed")
		}
		if fe.Code >= 400 && fe.Code < 500 {
			return apierror.Write(c, http.StatusBadRequest, apierror.CodeInvalidParam, "malformed HTTP request")
		}
	}
	return apierror.Write(c, http.StatusInternalServerError, apierror.CodeInternal, "internal error: "+err.Error())
}

// srvRows are n rows of the log from leaf first.
func srvRows(first int64, n int) []Row {
	rows := make([]Row, n)
	at := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		idx := first + int64(i)
		rows[i] = Row{LogIndex: idx, PDA: fmt.Sprintf("pda-%08d-%x", idx, sha256.Sum256([]byte{byte(i), byte(i >> 8)})),
			AgentPDA: "agent-" + strconv.Itoa(i%7), ActionType: "transfer", ActionHash: hex.EncodeToString([]byte(strconv.Itoa(i * 7919))),
			TxSignature: fmt.Sprintf("sig-%d-%d", idx, i*i), Slot: 1000 + idx, Timestamp: at.Add(time.Duration(i) * time.Second),
			AgentID: "a" + strconv.Itoa(i%3), PrivacyMode: i%5 == 0, AgentSignature: fmt.Sprintf("as-%d", i*31)}
	}
	return rows
}

// newSrvFixture writes the fixture's objects and starts a server on them;
// cfg's Rate and MiBRate configure the guard (0: none).
func newSrvFixture(t *testing.T, cfg Config) *srvFixture {
	t.Helper()
	ctx := context.Background()
	f := &srvFixture{dir: t.TempDir()}
	raw, err := fileblob.OpenBucket(f.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.bucket = blob.PrefixedBucket(raw, "dataset/v1/")
	t.Cleanup(func() { _ = f.bucket.Close() })
	d, err := ParseDay(srvDay)
	if err != nil {
		t.Fatal(err)
	}
	f.rows = srvRows(1000, 600)
	var buf bytes.Buffer
	fw := NewFileWriter(&buf, FileMeta{Day: d, Origin: "attestd.test/log", First: 1000, End: 1600})
	if err := fw.Write(f.rows); err != nil {
		t.Fatal(err)
	}
	w, err := fw.Close()
	if err != nil {
		t.Fatal(err)
	}
	f.file = buf.Bytes()
	f.manifest = Manifest{Format: Format, Day: srvDay, File: FileName(d), Rows: w.Rows, FirstIndex: 1000, LastIndex: 1599,
		Bytes: w.Bytes, SHA256: hexOf(w.SHA256[:]), Schema: Schema(), Checkpoint: "attestd.test/log\n1700\nroot\n",
		Witnessed: Witnessed{By: 2, Of: 3, Quorum: 2}, Proof: Proof{TreeSize: 1700, Left: [][]byte{}, Right: [][]byte{}},
		CutAt: attestation.At(time.Date(2026, 3, 15, 0, 10, 0, 0, time.UTC))}
	f.mbody = srvJSON(t, f.manifest)
	idx := Index{Format: Format, Origin: "attestd.test/log", UpdatedAt: attestation.At(time.Date(2026, 3, 15, 0, 11, 0, 0, time.UTC)),
		Days: []IndexDay{dayOf(f.manifest, d)}, NextIndex: 1600,
		Pending: []Pending{{Day: "2026-03-15", Code: PendingDayOpen, Reason: "the day is open"}}}
	f.ibody = srvJSON(t, idx)
	for key, b := range map[string][]byte{FileName(d): f.file, ManifestName(d): f.mbody, IndexName: f.ibody} {
		if err := f.bucket.WriteAll(ctx, key, b, nil); err != nil {
			t.Fatal(err)
		}
	}
	f.reg = prometheus.NewRegistry()
	f.start(ServerDeps{Bucket: f.bucket, Config: cfg, Registerer: f.reg, ClientIP: srvClientIP, Logger: srvLogger})
	return f
}

// srvLogger keeps the server's expected warnings out of the test's output.
var srvLogger = slog.New(slog.DiscardHandler)

// srvClientIP is the address the test names in X-Test-IP (192.0.2.1
// without one).
func srvClientIP(c *fiber.Ctx) netip.Addr {
	if a, err := netip.ParseAddr(c.Get("X-Test-IP")); err == nil {
		return a
	}
	return netip.MustParseAddr("192.0.2.1")
}

// start (re)starts the server with d, mounted on a new app.
func (f *srvFixture) start(d ServerDeps) {
	f.srv = NewServer(d)
	f.app = srvApp(f.srv)
}

func srvApp(s *Server) *fiber.App {
	app := fiber.New(fiber.Config{ErrorHandler: srvErrorHandler, ReadBufferSize: 16 << 10})
	for _, r := range s.Routes() {
		app.Add(r.Method, r.Path, r.Handlers...)
	}
	return app
}

func srvJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// srvAnswer is a response read whole.
type srvAnswer struct {
	status int
	header http.Header
	body   []byte
}

// do sends method target with headers (name, value pairs).
func (f *srvFixture) do(t *testing.T, method, target string, headers ...string) srvAnswer {
	t.Helper()
	return srvDo(t, f.app, method, target, headers...)
}

func srvDo(t *testing.T, app *fiber.App, method, target string, headers ...string) srvAnswer {
	t.Helper()
	req := httptest.NewRequest(method, "http://attestd.test/", nil)
	req.RequestURI = target // sent as is (httputil.DumpRequest): no cleaning, no escaping
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	res, err := app.Test(req, 20000)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, target, err)
	}
	return srvAnswer{status: res.StatusCode, header: res.Header, body: b}
}

// envelope is the error's code, failing when the body is not one.
func (a srvAnswer) envelope(t *testing.T) (code, message string) {
	t.Helper()
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(a.body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("%d answer is not an error envelope: %q", a.status, a.body)
	}
	return e.Error.Code, e.Error.Message
}

func quoted(sum string) string { return `"` + sum + `"` }

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestServeIndex(t *testing.T) {
	f := newSrvFixture(t, Config{})
	a := f.do(t, "GET", "/dataset/index.json")
	if a.status != 200 || !bytes.Equal(a.body, f.ibody) {
		t.Fatalf("index: %d %q", a.status, a.body)
	}
	etag := quoted(sha256Hex(f.ibody))
	for name, want := range map[string]string{"ETag": etag, "Cache-Control": "public, max-age=60", "Content-Type": "application/json",
		"Last-Modified": "Sun, 15 Mar 2026 00:11:00 GMT"} {
		if got := a.header.Get(name); got != want {
			t.Errorf("index %s: %q, want %q", name, got, want)
		}
	}
	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		if a := f.do(t, "GET", "/dataset/index.json", "If-None-Match", inm); a.status != 304 || len(a.body) != 0 || a.header.Get("ETag") != etag {
			t.Errorf("If-None-Match %s: %d %q", inm, a.status, a.body)
		}
	}
	if a := f.do(t, "GET", "/dataset/index.json", "If-None-Match", `"other"`); a.status != 200 {
		t.Errorf("If-None-Match other: %d", a.status)
	}
	if a := f.do(t, "GET", "/dataset/index.json", "If-Modified-Since", "Sun, 15 Mar 2026 00:11:00 GMT"); a.status != 304 {
		t.Errorf("If-Modified-Since: %d", a.status)
	}
	if a := f.do(t, "HEAD", "/dataset/index.json"); a.status != 200 || len(a.body) != 0 || a.header.Get("Content-Length") != strconv.Itoa(len(f.ibody)) {
		t.Errorf("HEAD index: %d %q %v", a.status, a.body, a.header)
	}
	idx, err := f.srv.Index(context.Background())
	if err != nil || len(idx.Days) != 1 || idx.Days[0].Day != srvDay || idx.NextIndex != 1600 {
		t.Fatalf("Index: %+v %v", idx, err)
	}
}

// TestIndexCached: the index is read once per 10 s however many ask at
// once, and read again after.
func TestIndexCached(t *testing.T) {
	f := newSrvFixture(t, Config{})
	now := time.Now()
	var mu sync.Mutex
	f.srv.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			if a := f.do(t, "GET", "/dataset/index.json"); a.status != 200 {
				t.Errorf("index: %d", a.status)
			}
		})
	}
	wg.Wait()
	if n := f.srv.reads.Load(); n != 1 {
		t.Fatalf("32 requests read the index %d times", n)
	}
	changed := bytes.Replace(f.ibody, []byte(`"nextIndex": 1600`), []byte(`"nextIndex": 1601`), 1)
	if err := f.bucket.WriteAll(context.Background(), IndexName, changed, nil); err != nil {
		t.Fatal(err)
	}
	if a := f.do(t, "GET", "/dataset/index.json"); !bytes.Equal(a.body, f.ibody) {
		t.Fatalf("within 10 s: %q", a.body)
	}
	mu.Lock()
	now = now.Add(11 * time.Second)
	mu.Unlock()
	if a := f.do(t, "GET", "/dataset/index.json"); !bytes.Equal(a.body, changed) || a.header.Get("ETag") != quoted(sha256Hex(changed)) {
		t.Fatalf("after 10 s: %q", a.body)
	}
}

// TestIndexNotStarted: before the producer ran, the index is an empty one
// that says so, 200.
func TestIndexNotStarted(t *testing.T) {
	f := newSrvFixture(t, Config{})
	if err := f.bucket.Delete(context.Background(), IndexName); err != nil {
		t.Fatal(err)
	}
	a := f.do(t, "GET", "/dataset/index.json")
	var idx Index
	if err := json.Unmarshal(a.body, &idx); a.status != 200 || err != nil {
		t.Fatalf("absent index: %d %q %v", a.status, a.body, err)
	}
	if idx.Format != Format || idx.Days == nil || len(idx.Days) != 0 || len(idx.Pending) != 1 || idx.Pending[0].Code != PendingNotStarted ||
		idx.Pending[0].Reason == "" || a.header.Get("Last-Modified") != "" || a.header.Get("ETag") != quoted(sha256Hex(a.body)) {
		t.Fatalf("absent index: %s %v", a.body, a.header)
	}
	// The day's file is still served: the manifest is the truth.
	if a := f.do(t, "GET", "/dataset/"+srvDay+".parquet"); a.status != 200 {
		t.Fatalf("file without an index: %d", a.status)
	}
}

func TestServeManifest(t *testing.T) {
	f := newSrvFixture(t, Config{})
	a := f.do(t, "GET", "/dataset/"+srvDay+".json")
	if a.status != 200 || !bytes.Equal(a.body, f.mbody) {
		t.Fatalf("manifest: %d %q", a.status, a.body)
	}
	etag := quoted(sha256Hex(f.mbody))
	for name, want := range map[string]string{"ETag": etag, "Cache-Control": "public, max-age=31536000, immutable",
		"Content-Type": "application/json", "Last-Modified": "Sun, 15 Mar 2026 00:10:00 GMT"} {
		if got := a.header.Get(name); got != want {
			t.Errorf("manifest %s: %q, want %q", name, got, want)
		}
	}
	if a := f.do(t, "GET", "/dataset/"+srvDay+".json", "If-None-Match", etag); a.status != 304 || len(a.body) != 0 {
		t.Errorf("manifest 304: %d %q", a.status, a.body)
	}
	// Held: the bucket is not read again.
	reads := f.srv.reads.Load()
	for range 5 {
		f.do(t, "GET", "/dataset/"+srvDay+".json")
	}
	if n := f.srv.reads.Load(); n != reads {
		t.Fatalf("a held manifest read %d more times", n-reads)
	}
}

func TestServeFile(t *testing.T) {
	f := newSrvFixture(t, Config{})
	size := int64(len(f.file))
	path := "/dataset/" + srvDay + ".parquet"
	a := f.do(t, "GET", path)
	if a.status != 200 || !bytes.Equal(a.body, f.file) {
		t.Fatalf("file: %d, %d bytes of %d", a.status, len(a.body), size)
	}
	etag := quoted(f.manifest.SHA256)
	for name, want := range map[string]string{"ETag": etag, "Cache-Control": "public, max-age=31536000, immutable",
		"Content-Type": "application/vnd.apache.parquet", "Accept-Ranges": "bytes", "Content-Length": strconv.FormatInt(size, 10),
		"Last-Modified": "Sun, 15 Mar 2026 00:10:00 GMT"} {
		if got := a.header.Get(name); got != want {
			t.Errorf("file %s: %q, want %q", name, got, want)
		}
	}
	// The bytes are the day's file: its digest, its rows.
	if sha256Hex(a.body) != f.manifest.SHA256 {
		t.Fatal("file's digest is not the manifest's")
	}
	rows, err := parquet.Read[Row](bytes.NewReader(a.body), int64(len(a.body)))
	if err != nil || len(rows) != len(f.rows) {
		t.Fatalf("read back: %d rows, %v", len(rows), err)
	}
	for i := range rows {
		if rows[i] != f.rows[i] {
			t.Fatalf("row %d: %+v, wrote %+v", i, rows[i], f.rows[i])
		}
	}
	// Every reader of the bucket is closed once sent (fileblob holds a
	// descriptor per reader).
	fds := func() int { e, _ := os.ReadDir("/proc/self/fd"); return len(e) }
	before := fds()
	for i := range 200 {
		if a := f.do(t, "GET", path, "Range", "bytes="+strconv.Itoa(i)+"-"); a.status != 206 {
			t.Fatalf("range %d: %d", i, a.status)
		}
	}
	if after := fds(); before > 0 && after > before+20 {
		t.Errorf("200 ranges left %d descriptors open", after-before)
	}
	if a := f.do(t, "GET", path, "If-None-Match", etag, "Range", "bytes=0-10"); a.status != 304 || len(a.body) != 0 {
		t.Errorf("If-None-Match with Range: %d", a.status)
	}
	h := f.do(t, "HEAD", path)
	if h.status != 200 || len(h.body) != 0 || h.header.Get("Content-Length") != strconv.FormatInt(size, 10) || h.header.Get("ETag") != etag {
		t.Errorf("HEAD: %d %q %v", h.status, h.body, h.header)
	}
	if got := testutil.ToFloat64(f.srv.m.requests.WithLabelValues(routeFile, "200")); got != 2 {
		t.Errorf("requests{file,200} = %v", got)
	}
	if got, want := testutil.ToFloat64(f.srv.m.bytes), float64(size*201-199*200/2); got != want {
		t.Errorf("bytes sent = %v, want %v", got, want)
	}
}

func TestServeRanges(t *testing.T) {
	f := newSrvFixture(t, Config{})
	size := int64(len(f.file))
	path := "/dataset/" + srvDay + ".parquet"
	etag := quoted(f.manifest.SHA256)
	for _, tc := range []struct {
		name, rng   string
		headers     []string
		first, last int64 // -1: 200 whole
	}{
		{name: "a-b", rng: "bytes=10-99", first: 10, last: 99},
		{name: "one byte", rng: "bytes=0-0", first: 0, last: 0},
		{name: "last byte", rng: fmt.Sprintf("bytes=%d-%d", size-1, size-1), first: size - 1, last: size - 1},
		{name: "a-", rng: "bytes=100-", first: 100, last: size - 1},
		{name: "-n", rng: "bytes=-8", first: size - 8, last: size - 1},
		{name: "-n beyond the size", rng: fmt.Sprintf("bytes=-%d", size+100), first: 0, last: size - 1},
		{name: "a-b beyond the end, clipped", rng: fmt.Sprintf("bytes=%d-%d", size-5, size+1000), first: size - 5, last: size - 1},
		{name: "unit in capitals, spaces", rng: " BYTES = 3-4 ", first: 3, last: 4},
		{name: "If-Range the ETag", rng: "bytes=5-9", headers: []string{"If-Range", etag}, first: 5, last: 9},
		{name: "If-Range the date", rng: "bytes=5-9", headers: []string{"If-Range", "Sun, 15 Mar 2026 00:10:00 GMT"}, first: 5, last: 9},
		{name: "If-Range another ETag", rng: "bytes=5-9", headers: []string{"If-Range", `"other"`}, first: -1},
		{name: "If-Range weak", rng: "bytes=5-9", headers: []string{"If-Range", "W/" + etag}, first: -1},
		{name: "If-Range another date", rng: "bytes=5-9", headers: []string{"If-Range", "Sun, 15 Mar 2026 00:10:01 GMT"}, first: -1},
		{name: "If-Range junk", rng: "bytes=5-9", headers: []string{"If-Range", "junk"}, first: -1},
		{name: "If-Range with junk Range", rng: "bytes=junk", headers: []string{"If-Range", `"other"`}, first: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := f.do(t, "GET", path, append([]string{"Range", tc.rng}, tc.headers...)...)
			if tc.first < 0 {
				if a.status != 200 || !bytes.Equal(a.body, f.file) || a.header.Get("Content-Range") != "" {
					t.Fatalf("want the whole file: %d, %d bytes, %q", a.status, len(a.body), a.header.Get("Content-Range"))
				}
				return
			}
			want := f.file[tc.first : tc.last+1]
			cr := fmt.Sprintf("bytes %d-%d/%d", tc.first, tc.last, size)
			if a.status != 206 || !bytes.Equal(a.body, want) || a.header.Get("Content-Range") != cr ||
				a.header.Get("Content-Length") != strconv.Itoa(len(want)) || a.header.Get("ETag") != etag {
				t.Fatalf("%d, %d bytes, %v; want 206 %s", a.status, len(a.body), a.header, cr)
			}
		})
	}
	// HEAD ignores Range (RFC 9110 14.2: ranges are defined for GET).
	if a := f.do(t, "HEAD", path, "Range", "bytes=0-9"); a.status != 200 || a.header.Get("Content-Length") != strconv.FormatInt(size, 10) {
		t.Errorf("HEAD with Range: %d %v", a.status, a.header)
	}
	// The JSON documents answer whole.
	if a := f.do(t, "GET", "/dataset/"+srvDay+".json", "Range", "bytes=0-9"); a.status != 200 || !bytes.Equal(a.body, f.mbody) {
		t.Errorf("manifest with Range: %d", a.status)
	}
}

func TestRangeRefused(t *testing.T) {
	f := newSrvFixture(t, Config{})
	size := int64(len(f.file))
	for _, rng := range []string{
		fmt.Sprintf("bytes=%d-", size), fmt.Sprintf("bytes=%d-%d", size, size+10), "bytes=9223372036854775807-",
		"bytes=0-1,5-6", "bytes=0-0,0-0", "bytes=junk", "items=0-1", "bytes=5-1", "bytes=-0", "bytes=", "bytes=-",
		"bytes=99999999999999999999-", "bytes=-1-2", "bytes=+1-2", "0-1", "bytes=0-" + strings.Repeat("9", 300),
	} {
		a := f.do(t, "GET", "/dataset/"+srvDay+".parquet", "Range", rng)
		if a.status != 416 || a.header.Get("Content-Range") != "bytes */"+strconv.FormatInt(size, 10) {
			t.Errorf("Range %.40q: %d %q, want 416", rng, a.status, a.header.Get("Content-Range"))
			continue
		}
		if code, msg := a.envelope(t); code != CodeRangeNotSatisfiable || (strings.Contains(rng, ",") && !strings.Contains(msg, "one range per request")) {
			t.Errorf("Range %.40q: %s %s", rng, code, msg)
		}
		if a.header.Get("ETag") != "" || a.header.Get("Cache-Control") != "no-store" {
			t.Errorf("Range %.40q: a 416 with validators: %v", rng, a.header)
		}
	}
}

func TestServeNotFound(t *testing.T) {
	f := newSrvFixture(t, Config{})
	for _, path := range []string{
		"/dataset/2026-03-13.parquet", "/dataset/2026-03-13.json", "/dataset/2026-03-15.json", // pending in the index
		"/dataset/2026-03-16.parquet", "/dataset/9999-12-31.json", "/dataset/2020-01-01.json",
	} {
		a := f.do(t, "GET", path)
		code, msg := a.envelope(t)
		if a.status != 404 || code != apierror.CodeNotFound || !strings.Contains(msg, "see /dataset/index.json") {
			t.Errorf("%s: %d %s %s", path, a.status, code, msg)
		}
	}
	for _, path := range []string{
		"/dataset/2026-03-14.PARQUET", "/dataset/2026-3-14.json", "/dataset/..%2Findex.json", "/dataset/2026-03-14.csv",
		"/dataset/2026-03-14", "/dataset/index.json/", "/DATASET/2026-03-14.json", "/dataset/2026-03-14.json/",
	} {
		a := f.do(t, "GET", path)
		if code, _ := a.envelope(t); a.status != 404 || code != apierror.CodeNotFound {
			t.Errorf("%s: %d %s", path, a.status, code)
		}
	}
}

// TestDatasetOff: without a bucket every route answers 503 with ErrOff.
func TestDatasetOff(t *testing.T) {
	srv := NewServer(ServerDeps{})
	app := srvApp(srv)
	for _, path := range []string{"/dataset/index.json", "/dataset/" + srvDay + ".json", "/dataset/" + srvDay + ".parquet", "/dataset/junk"} {
		for _, m := range []string{"GET", "HEAD"} {
			a := srvDo(t, app, m, path)
			if a.status != 503 {
				t.Errorf("%s %s: %d", m, path, a.status)
			} else if m == "GET" {
				if code, msg := a.envelope(t); code != apierror.CodeUnavailable || msg != ErrOff.Error() {
					t.Errorf("%s: %s %s", path, code, msg)
				}
			}
		}
	}
	if _, err := srv.Index(context.Background()); !errors.Is(err, ErrOff) {
		t.Fatalf("Index off: %v", err)
	}
}

// TestStoreFailures: a bucket that fails answers 503 without a word of it;
// a file that is not its manifest's size, or missing, is 503 too.
func TestStoreFailures(t *testing.T) {
	f := newSrvFixture(t, Config{})
	file := "/dataset/" + srvDay + ".parquet"
	if a := f.do(t, "GET", "/dataset/"+srvDay+".json"); a.status != 200 { // held from now on
		t.Fatal(a.status)
	}
	ctx := context.Background()
	if err := f.bucket.WriteAll(ctx, srvDay+".parquet", f.file[:len(f.file)-1], nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"GET", "HEAD"} {
		if a := f.do(t, m, file); a.status != 503 {
			t.Errorf("%s of a truncated file: %d", m, a.status)
		}
	}
	if a := f.do(t, "GET", file, "Range", "bytes=0-3"); a.status != 503 {
		t.Errorf("range of a truncated file: %d", a.status)
	}
	if err := f.bucket.Delete(ctx, srvDay+".parquet"); err != nil {
		t.Fatal(err)
	}
	if a := f.do(t, "GET", file); a.status != 503 {
		t.Errorf("missing file: %d", a.status)
	}
	// A bucket that does not answer.
	broken := NewServer(ServerDeps{Bucket: f.bucket, Logger: srvLogger})
	app := srvApp(broken)
	if err := f.bucket.Close(); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dataset/index.json", "/dataset/" + srvDay + ".json", file} {
		a := srvDo(t, app, "GET", path)
		code, msg := a.envelope(t)
		if a.status != 503 || code != apierror.CodeUnavailable || strings.Contains(msg, f.dir) || strings.Contains(msg, "dataset/v1") ||
			strings.Contains(msg, "blob") {
			t.Errorf("%s: %d %s %s", path, a.status, code, msg)
		}
	}
	if _, err := broken.Index(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Index of a broken bucket: %v", err)
	}
}

// TestStaleIndexServed: while the bucket fails, the index read last is
// served.
func TestStaleIndexServed(t *testing.T) {
	f := newSrvFixture(t, Config{})
	now := time.Now()
	f.srv.now = func() time.Time { return now }
	if a := f.do(t, "GET", "/dataset/index.json"); a.status != 200 {
		t.Fatal(a.status)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "dataset", "v1", IndexName), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	if a := f.do(t, "GET", "/dataset/index.json"); a.status != 200 || !bytes.Equal(a.body, f.ibody) {
		t.Fatalf("stale index: %d %q", a.status, a.body)
	}
	fresh := NewServer(ServerDeps{Bucket: f.bucket, Logger: srvLogger})
	if a := srvDo(t, srvApp(fresh), "GET", "/dataset/index.json"); a.status != 503 {
		t.Fatalf("junk index, none held: %d", a.status)
	}
}

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		v           string
		size        int64
		first, last int64 // -1: refused
	}{
		{"bytes=0-9", 100, 0, 9}, {"bytes=90-", 100, 90, 99}, {"bytes=-10", 100, 90, 99}, {"bytes=-1000", 100, 0, 99},
		{"bytes=0-9223372036854775807", 100, 0, 99}, {"bytes=99-99", 100, 99, 99}, {"bytes=100-", 100, -1, -1},
		{"bytes=9223372036854775808-", 100, -1, -1}, {"bytes=0-9223372036854775808", 100, -1, -1}, {"bytes=0-1,2-3", 100, -1, -1},
		{"bytes=3-2", 100, -1, -1}, {"bytes=-0", 100, -1, -1}, {"bytes=a-b", 100, -1, -1}, {"bytes 0-1", 100, -1, -1},
		{"bytes=0-0", 1, 0, 0}, {"bytes=-1", 1, 0, 0}, {"bytes=1-", 1, -1, -1}, {"bytes=\t7-8\t", 100, 7, 8},
	} {
		r, msg := parseRange([]byte(tc.v), tc.size)
		if tc.first < 0 {
			if msg == "" {
				t.Errorf("%q of %d: %+v, want refused", tc.v, tc.size, r)
			}
		} else if msg != "" || r != (byteRange{tc.first, tc.last}) {
			t.Errorf("%q of %d: %+v %q, want %d-%d", tc.v, tc.size, r, msg, tc.first, tc.last)
		}
	}
}

func TestParseName(t *testing.T) {
	for name, want := range map[string]string{
		"2026-03-14.parquet": "file", "2026-03-14.json": "manifest", "0001-01-01.json": "manifest",
		"+026-03-14.json": "", "2026-03-14.Json": "", "2026-02-30.json": "", "2026-03-14.parquet.json": "", "2026-03-14..json": "",
		"2026-03-14.jso": "", "index.json": "", "": "", "2026-03-14": "", "2026-03-1٤.json": "", " 2026-03-14.json": "",
	} {
		_, file, ok := parseName(name)
		got := ""
		if ok && file {
			got = "file"
		} else if ok {
			got = "manifest"
		}
		if got != want {
			t.Errorf("parseName(%q) = %q, want %q", name, got, want)
		}
	}
}
