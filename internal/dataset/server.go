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
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/internal/inprocess"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/metric"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
	"golang.org/x/sync/singleflight"
)

// What /dataset/'s answers say to caches, and of themselves.
const (
	// ControlIndex: the index changes when a day is cut (about once a
	// day) and when what is pending changes.
	ControlIndex = "public, max-age=60"
	// ControlImmutable: a manifest and its file never change once written.
	ControlImmutable = "public, max-age=31536000, immutable"
	// MIMEParquet is the files' media type.
	MIMEParquet = "application/vnd.apache.parquet"
	// MIMEJSON is the index's and the manifests' media type.
	MIMEJSON = "application/json"
)

// PendingNotStarted is the pending code of the index a node serves while
// the bucket holds none (see Server).
const PendingNotStarted = "not_started"

// CodeRangeNotSatisfiable is the error code of a 416: a Range this server
// does not serve (see Server).
const CodeRangeNotSatisfiable = "RANGE_NOT_SATISFIABLE"

// ErrUnavailable is what Index returns while the dataset's store does not
// answer (the cause is logged, never returned: it names the bucket).
var ErrUnavailable = errors.New("the dataset's store does not answer")

// Bounds of what a node reads and holds.
const (
	indexTTL         = 10 * time.Second // the index is read again after this
	retryAfterFail   = time.Second      // a failed index read is not tried again sooner
	readTimeout      = 30 * time.Second // one read of the index or of a manifest
	maxManifests     = 4096             // parsed manifests held (they never change)
	maxManifestBytes = 1 << 20
	maxIndexBytes    = 64 << 20
	maxRangeHeader   = 200
	maxDateHeader    = 64 // an HTTP date is at most 29 bytes
)

// The routes, as the metrics name them.
const (
	routeIndex    = "index"
	routeManifest = "manifest"
	routeFile     = "file"
)

// Paths of the routes.
const (
	pathIndex = "/dataset/" + IndexName
	pathNamed = "/dataset/:name"
)

// ServerDeps configure a Server.
type ServerDeps struct {
	// Bucket is the dataset's bucket under its prefix (Config.OpenBucket);
	// nil: the dataset is off: every route answers 503 UNAVAILABLE with
	// ErrOff's text.
	Bucket *blob.Bucket
	// Config gives the guard's rates (Rate, MiBRate).
	Config Config
	// ClientIP resolves a request's client for the guard; nil: c.IP().
	ClientIP   func(*fiber.Ctx) netip.Addr
	Logger     *slog.Logger
	Registerer prometheus.Registerer // nil: none
	// WriteTimeout is the node's time to write an answer (app.Timeouts;
	// 0: 15 s). A file is streamed with that much time per read from
	// the bucket, not for the whole file: a download of any size goes on
	// while the client keeps taking bytes.
	WriteTimeout time.Duration
}

// Server serves the dataset from its bucket on an API node, under
// /dataset/: the index (index.json), each day's manifest (YYYY-MM-DD.json)
// and file (YYYY-MM-DD.parquet). Nothing is kept on local disk; files are
// streamed from the bucket, never held in memory.
//
// The index is read at most once per 10 s per node (one read at a time;
// while the bucket fails, the last index read is served, or 503) and
// answers with Cache-Control ControlIndex, a strong ETag (the SHA-256 of
// its bytes) and Last-Modified (its updatedAt). While the bucket holds no
// index (the producer, attestd dataset, has not run yet) the index is
// answered 200 all the same: an empty one (no day, nextIndex 0, updatedAt
// the zero time, no Last-Modified) whose one pending entry has code
// PendingNotStarted; a client sees the dataset is on but empty, not an
// error.
//
// Manifests and files never change: parsed manifests are held (up to
// maxManifests days) and both answer with ControlImmutable. A manifest's
// ETag is the SHA-256 of its bytes; a file's is the SHA-256 the manifest
// gives (strong, the same on every node); Last-Modified is the manifest's
// cutAt. A day without a manifest in the bucket is 404 NOT_FOUND (a
// pending day included); a name that is not a day's file or manifest is
// 404 too, and never reaches the bucket.
//
// Conditional requests: If-None-Match (or, without it, If-Modified-Since)
// that matches answers 304, before any Range. Ranges (RFC 9110 14) are
// served on GET of a file only (HEAD and the JSON documents answer whole):
// one range per request, bytes=a-b, bytes=a- or bytes=-n, clipped to the
// file (206 with Content-Range), honoured only when If-Range, if any,
// names the file's ETag or its exact Last-Modified (otherwise the whole
// file, 200). RFC 9110 lets a server ignore a Range it cannot read; this
// one refuses cleanly instead, so a client learns its request is not
// served as meant: several ranges, another unit, numbers that are not
// decimal or overflow, b < a, a field longer than 200 bytes, a start at or
// beyond the end and an empty suffix all answer 416
// CodeRangeNotSatisfiable with Content-Range: bytes */SIZE.
//
// Failures of the bucket answer 503 UNAVAILABLE with nothing of the
// bucket in the message (the cause is logged); so does a file whose size
// is not its manifest's. Every route is behind the node's own guard
// (guard.go), outside the API's per-IP limit.
type Server struct {
	d     ServerDeps
	log   *slog.Logger
	guard *guard
	m     serverMetrics
	now   func() time.Time

	flight      singleflight.Group // one read per object at a time
	index       atomic.Pointer[indexEntry]
	indexFailed atomic.Int64 // unix ns of the last failed index read; 0: none since a success
	notStarted  indexEntry   // the index served while the bucket holds none

	mu        sync.Mutex
	manifests map[Day]*manifestEntry
	absent    map[Day]time.Time // days the bucket had no manifest for, and when it was asked
	reads     atomic.Int64      // objects read whole (the index, manifests): for tests
}

type serverMetrics struct {
	requests *prometheus.CounterVec
	bytes    prometheus.Counter
	refused  *prometheus.CounterVec
}

// indexEntry is the index as served.
type indexEntry struct {
	idx      Index
	body     []byte
	etag     []byte
	modified time.Time // zero: none
	at       time.Time // when it was read
}

// manifestEntry is a day's manifest as served.
type manifestEntry struct {
	m        Manifest
	body     []byte
	etag     []byte // of body
	fileETag []byte // the file's SHA-256, quoted
	modified time.Time
}

// errNoDay: the bucket has no manifest for the day.
var errNoDay = errors.New("no such day")

// NewServer builds the dataset's handlers and registers their metrics.
func NewServer(d ServerDeps) *Server {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.WriteTimeout <= 0 {
		d.WriteTimeout = 15 * time.Second
	}
	s := &Server{d: d, log: d.Logger, guard: newGuard(d.Config.Rate, d.Config.MiBRate, d.ClientIP), now: time.Now,
		manifests: make(map[Day]*manifestEntry), absent: make(map[Day]time.Time)}
	s.m = serverMetrics{
		requests: metric.Register(d.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_dataset_requests_total",
			Help: "requests to /dataset/ on this node, by route (index, manifest, file) and status"}, []string{"route", "code"})),
		bytes: metric.Register(d.Registerer, prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_dataset_bytes_sent_total",
			Help: "bytes of /dataset/'s answers' bodies (the index, manifests and files) this node sent"})),
		refused: metric.Register(d.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_dataset_refused_total",
			Help: "requests to /dataset/ the node's guard refused (429), by the bucket that was empty (requests or bytes)"}, []string{"reason"})),
	}
	empty := Index{Format: Format, Days: []IndexDay{}, Pending: []Pending{{Code: PendingNotStarted,
		Reason: "the producer (attestd dataset) has not written the index yet"}}}
	body, _ := json.MarshalIndent(empty, "", "  ")
	body = append(body, '\n')
	s.notStarted = indexEntry{idx: empty, body: body, etag: etagOf(body)}
	return s
}

// Routes are GET and HEAD of /dataset/index.json and /dataset/:name, for
// app.Deps.Unlimited: outside the API's per-IP limit, each behind the
// dataset's own guard (its first handler).
func (s *Server) Routes() []httpapi.Route {
	index := func(*fiber.Ctx) string { return routeIndex }
	named := func(c *fiber.Ctx) string {
		if strings.HasSuffix(c.Path(), ".json") {
			return routeManifest
		}
		return routeFile // anything else under /dataset/ counts as a file
	}
	var out []httpapi.Route
	for _, m := range []string{fiber.MethodGet, fiber.MethodHead} {
		out = append(out,
			httpapi.Route{Method: m, Path: pathIndex, Handlers: []fiber.Handler{s.guarded(index), s.getIndex}},
			httpapi.Route{Method: m, Path: pathNamed, Handlers: []fiber.Handler{s.guarded(named), s.getNamed}})
	}
	return out
}

// Index is the index as this node serves it (read at most every 10 s; the
// empty one while the bucket holds none). It returns ErrOff without a
// bucket and ErrUnavailable while the bucket fails with no index held.
// The slices are the caller's.
func (s *Server) Index(ctx context.Context) (Index, error) {
	e, err := s.currentIndex(ctx)
	if err != nil {
		return Index{}, err
	}
	idx := e.idx
	idx.Days, idx.Pending = slices.Clone(idx.Days), slices.Clone(idx.Pending)
	return idx, nil
}

// currentIndex is the index read within indexTTL, or read now (one read
// at a time: concurrent callers share it). While reads fail, the last
// index read is served; a failure is not tried again within
// retryAfterFail.
func (s *Server) currentIndex(ctx context.Context) (*indexEntry, error) {
	if s.d.Bucket == nil {
		return nil, ErrOff
	}
	cur := s.index.Load()
	if cur != nil && s.now().Sub(cur.at) < indexTTL {
		return cur, nil
	}
	if f := s.indexFailed.Load(); f != 0 && s.now().Sub(time.Unix(0, f)) < retryAfterFail {
		if cur != nil {
			return cur, nil
		}
		return nil, ErrUnavailable
	}
	v, err, _ := s.flight.Do(IndexName, func() (any, error) {
		if cur := s.index.Load(); cur != nil && s.now().Sub(cur.at) < indexTTL {
			return cur, nil // read while this caller waited for the flight
		}
		e, err := s.readIndex(ctx)
		if err != nil {
			s.indexFailed.Store(s.now().UnixNano())
			s.log.Warn("dataset index read failed", "err", err)
			return nil, err
		}
		s.indexFailed.Store(0)
		s.index.Store(e)
		return e, nil
	})
	if err != nil {
		if cur != nil {
			return cur, nil // a stale index rather than none
		}
		return nil, ErrUnavailable
	}
	return v.(*indexEntry), nil
}

// readIndex reads index.json from the bucket.
func (s *Server) readIndex(ctx context.Context) (*indexEntry, error) {
	body, err := s.readSmall(ctx, IndexName, maxIndexBytes)
	if gcerrors.Code(err) == gcerrors.NotFound {
		e := s.notStarted
		e.at = s.now()
		return &e, nil
	}
	if err != nil {
		return nil, err
	}
	var idx Index
	if err := json.Unmarshal(body, &idx); err != nil {
		return nil, fmt.Errorf("%s is not an index: %w", IndexName, err)
	}
	if idx.Format != Format {
		return nil, fmt.Errorf("%s is of format %q, not %q", IndexName, idx.Format, Format)
	}
	e := &indexEntry{idx: idx, body: body, etag: etagOf(body), at: s.now()}
	if !idx.UpdatedAt.IsZero() {
		e.modified = idx.UpdatedAt.Time
	}
	return e, nil
}

// readSmall reads the object at key whole, at most limit bytes. The read
// is the node's, not the request's: a client that leaves does not fail
// it for the others sharing it.
func (s *Server) readSmall(ctx context.Context, key string, limit int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
	defer cancel()
	s.reads.Add(1)
	r, err := s.d.Bucket.NewReader(ctx, key, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	if r.Size() > limit {
		return nil, fmt.Errorf("%s holds %d bytes, more than the %d read", key, r.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s holds more than the %d bytes read", key, limit)
	}
	return b, nil
}

// manifest is day d's manifest: held, or read now (errNoDay when the
// bucket has none: that answer is held for indexTTL, as the index is).
func (s *Server) manifest(ctx context.Context, d Day) (*manifestEntry, error) {
	s.mu.Lock()
	e := s.manifests[d]
	asked, absent := s.absent[d]
	s.mu.Unlock()
	if e != nil {
		return e, nil
	}
	if (absent && s.now().Sub(asked) < indexTTL) || s.cannotExist(ctx, d) {
		return nil, errNoDay
	}
	v, err, _ := s.flight.Do(ManifestName(d), func() (any, error) { return s.readManifest(ctx, d) })
	s.mu.Lock()
	defer s.mu.Unlock()
	if errors.Is(err, errNoDay) {
		if len(s.absent) >= maxManifests {
			clear(s.absent)
		}
		s.absent[d] = s.now()
	}
	if err != nil {
		return nil, err
	}
	e = v.(*manifestEntry)
	delete(s.absent, d)
	if len(s.manifests) >= maxManifests {
		for k := range s.manifests { // any one: they are all cheap to read again
			delete(s.manifests, k)
			break
		}
	}
	s.manifests[d] = e
	return e, nil
}

// cannotExist reports, without reading the bucket, that day d has no
// manifest and never will: a day that has not begun, or one the index
// (written in day order, only ever appended to) has passed without
// listing. Any doubt reads the bucket.
func (s *Server) cannotExist(ctx context.Context, d Day) bool {
	if d.After(s.now().Add(24 * time.Hour)) {
		return true
	}
	e, err := s.currentIndex(ctx)
	if err != nil || len(e.idx.Days) == 0 {
		return false
	}
	day := d.String()
	if day > e.idx.Days[len(e.idx.Days)-1].Day {
		return false // may have been cut since
	}
	return !slices.ContainsFunc(e.idx.Days, func(x IndexDay) bool { return x.Day == day })
}

// readManifest reads and checks day d's manifest.
func (s *Server) readManifest(ctx context.Context, d Day) (*manifestEntry, error) {
	body, err := s.readSmall(ctx, ManifestName(d), maxManifestBytes)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, errNoDay
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%w: %s is not a manifest: %v", errInconsistent, ManifestName(d), err)
	}
	if sum, err := hex.DecodeString(m.SHA256); err != nil || len(sum) != sha256.Size || m.SHA256 != strings.ToLower(m.SHA256) ||
		m.Day != d.String() || m.File != FileName(d) || m.Bytes <= 0 || m.Format != Format {
		return nil, fmt.Errorf("%w: manifest %s does not describe day %s's file (day %q, file %q, %d bytes, sha256 %q, format %q)",
			errInconsistent, ManifestName(d), d, excerpt.Of(m.Day, 32), excerpt.Of(m.File, 32), m.Bytes, excerpt.Of(m.SHA256, 80), excerpt.Of(m.Format, 40))
	}
	return &manifestEntry{m: m, body: body, etag: etagOf(body), fileETag: []byte(`"` + m.SHA256 + `"`),
		modified: m.CutAt.Time}, nil
}

// errInconsistent: the bucket answers, with objects that do not agree.
var errInconsistent = errors.New("the dataset's store is inconsistent")

// getIndex answers GET and HEAD /dataset/index.json.
func (s *Server) getIndex(c *fiber.Ctx) error {
	if s.d.Bucket == nil {
		return apierror.Unavailable("%s", ErrOff.Error())
	}
	if c.Path() != pathIndex {
		// Fiber's routing ignores a trailing slash and the path's case.
		return notFoundName(c)
	}
	if _, err := httpapi.QueryParams(c); err != nil {
		return err
	}
	e, err := s.currentIndex(c.UserContext())
	if err != nil {
		return apierror.Unavailable("%s", err.Error()) // ErrUnavailable: the cause was logged
	}
	return s.sendDocument(c, e.body, e.etag, e.modified, ControlIndex)
}

// getNamed answers GET and HEAD /dataset/:name: a day's manifest or file.
func (s *Server) getNamed(c *fiber.Ctx) error {
	if s.d.Bucket == nil {
		return apierror.Unavailable("%s", ErrOff.Error())
	}
	name := c.Params("name") // Fiber's buffer: parsed, never kept
	d, file, ok := parseName(name)
	if !ok || len(c.Path()) != len("/dataset/")+len(name) || !strings.HasPrefix(c.Path(), "/dataset/") {
		return notFoundName(c)
	}
	if _, err := httpapi.QueryParams(c); err != nil {
		return err
	}
	e, err := s.manifest(c.UserContext(), d)
	if errors.Is(err, errNoDay) {
		return apierror.NotFound(apierror.CodeNotFound, "no file for day %s: see %s", d, pathIndex)
	}
	if err != nil {
		return s.storeFailed(c, d, err)
	}
	if !file {
		return s.sendDocument(c, e.body, e.etag, e.modified, ControlImmutable)
	}
	return s.sendFile(c, d, e)
}

func notFoundName(c *fiber.Ctx) error {
	return apierror.NotFound(apierror.CodeNotFound, "no dataset object %s: the dataset serves %s, YYYY-MM-DD.json and YYYY-MM-DD.parquet",
		excerpt.Of(c.Path(), httpapi.MaxEcho), pathIndex)
}

// parseName reads a day's manifest (YYYY-MM-DD.json) or file
// (YYYY-MM-DD.parquet) name, exactly: a day ParseDay takes, written as
// Day.String writes it, and the suffix in lower case.
func parseName(name string) (d Day, file bool, ok bool) {
	var day string
	switch {
	case len(name) == len(DayLayout)+len(".parquet") && strings.HasSuffix(name, ".parquet"):
		day, file = name[:len(DayLayout)], true
	case len(name) == len(DayLayout)+len(".json") && strings.HasSuffix(name, ".json"):
		day = name[:len(DayLayout)]
	default:
		return Day{}, false, false
	}
	d, err := ParseDay(day)
	if err != nil || d.String() != day { // time.Parse takes a signed year: +123-01-02
		return Day{}, false, false
	}
	return d, file, true
}

// storeFailed logs a failed read of day d's objects and answers 503
// without a word of the bucket.
func (s *Server) storeFailed(c *fiber.Ctx, d Day, err error) error {
	if errors.Is(err, errInconsistent) {
		s.log.Error("dataset store inconsistent", "day", d.String(), "path", strings.Clone(c.Path()), "err", err)
		return apierror.Unavailable("the dataset's store holds an inconsistent copy of day %s; try again later", d)
	}
	s.log.Warn("dataset store read failed", "day", d.String(), "path", strings.Clone(c.Path()), "err", err)
	return apierror.Unavailable("%s", ErrUnavailable.Error())
}

// sendDocument answers a JSON document (the index or a manifest) whole,
// or 304.
func (s *Server) sendDocument(c *fiber.Ctx, body, etag []byte, modified time.Time, control string) error {
	setValidators(c, etag, modified, control)
	if notModified(c, etag, modified) {
		c.Status(http.StatusNotModified)
		return nil
	}
	c.Set(fiber.HeaderContentType, MIMEJSON)
	if c.Method() == fiber.MethodHead {
		c.Response().Header.SetContentLength(len(body))
		return nil
	}
	s.owe(c, int64(len(body)))
	s.m.bytes.Add(float64(len(body)))
	return c.Send(body) // held bytes, never changed: sent without a copy
}

func setValidators(c *fiber.Ctx, etag []byte, modified time.Time, control string) {
	h := &c.Response().Header
	h.Set(fiber.HeaderCacheControl, control)
	h.SetBytesV(fiber.HeaderETag, etag)
	if !modified.IsZero() {
		h.Set(fiber.HeaderLastModified, modified.UTC().Format(http.TimeFormat))
	}
}

// notModified evaluates If-None-Match, or without it If-Modified-Since
// (RFC 9110 13.2.2), for a GET or HEAD: true means 304.
func notModified(c *fiber.Ctx, etag []byte, modified time.Time) bool {
	h := &c.Request().Header
	if inm := h.PeekAll(fiber.HeaderIfNoneMatch); len(inm) > 0 {
		return httpcache.NoneMatch(inm, etag)
	}
	ims := h.Peek(fiber.HeaderIfModifiedSince)
	if modified.IsZero() || len(ims) == 0 || len(ims) > maxDateHeader {
		return false
	}
	t, err := http.ParseTime(string(ims))
	return err == nil && !modified.Truncate(time.Second).After(t)
}

// sendFile answers day d's file: whole, a range of it, or 304.
func (s *Server) sendFile(c *fiber.Ctx, d Day, e *manifestEntry) error {
	size := e.m.Bytes
	if notModified(c, e.fileETag, e.modified) {
		setValidators(c, e.fileETag, e.modified, ControlImmutable)
		c.Status(http.StatusNotModified)
		return nil
	}
	r, partial := byteRange{first: 0, last: size - 1}, false
	if v := c.Request().Header.Peek(fiber.HeaderRange); len(v) > 0 && c.Method() == fiber.MethodGet && ifRange(c, e) {
		var msg string
		if r, msg = parseRange(v, size); msg != "" {
			c.Set(fiber.HeaderContentRange, "bytes */"+strconv.FormatInt(size, 10))
			return apierror.New(http.StatusRequestedRangeNotSatisfiable, CodeRangeNotSatisfiable, "%s", msg)
		}
		partial = true
	}
	if c.Method() == fiber.MethodHead {
		if err := s.checkFile(c, d, e); err != nil {
			return err
		}
		setFileHeaders(c, e)
		c.Response().Header.SetContentLength(int(size))
		return nil
	}
	body, err := s.openFile(c, d, e, r)
	if err != nil {
		return err
	}
	setFileHeaders(c, e)
	n := r.last - r.first + 1
	if partial {
		c.Status(http.StatusPartialContent)
		c.Set(fiber.HeaderContentRange, "bytes "+strconv.FormatInt(r.first, 10)+"-"+strconv.FormatInt(r.last, 10)+"/"+strconv.FormatInt(size, 10))
	}
	s.owe(c, n)
	c.Context().SetBodyStream(body, int(n)) // closed by fasthttp once sent (or not)
	return nil
}

func setFileHeaders(c *fiber.Ctx, e *manifestEntry) {
	setValidators(c, e.fileETag, e.modified, ControlImmutable)
	c.Set(fiber.HeaderContentType, MIMEParquet)
	c.Set(fiber.HeaderAcceptRanges, "bytes")
}

// ifRange evaluates If-Range (RFC 9110 13.1.5): true (serve the range)
// without one, or when it names the file's entity tag (strong
// comparison) or its exact Last-Modified.
func ifRange(c *fiber.Ctx, e *manifestEntry) bool {
	v := c.Request().Header.Peek(fiber.HeaderIfRange)
	switch {
	case len(v) == 0:
		return true
	case v[0] == '"':
		return bytes.Equal(v, e.fileETag)
	case len(v) > maxDateHeader || bytes.HasPrefix(v, []byte("W/")):
		return false
	}
	t, err := http.ParseTime(string(v))
	return err == nil && t.Equal(e.modified.Truncate(time.Second))
}

// checkFile checks, for a HEAD, that the bucket holds day d's file at the
// manifest's size.
func (s *Server) checkFile(c *fiber.Ctx, d Day, e *manifestEntry) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), readTimeout)
	defer cancel()
	a, err := s.d.Bucket.Attributes(ctx, FileName(d))
	if err != nil {
		return s.storeFailed(c, d, fileError(err))
	}
	if a.Size != e.m.Bytes {
		return s.storeFailed(c, d, fmt.Errorf("%w: %s holds %d bytes, its manifest says %d", errInconsistent, FileName(d), a.Size, e.m.Bytes))
	}
	return nil
}

// fileError is a failed read of a file whose manifest exists: a missing
// file is an inconsistent store, not a 404.
func fileError(err error) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("%w: the manifest's file is missing: %v", errInconsistent, err)
	}
	return err
}

// openFile opens range r of day d's file in the bucket, checking its size
// against the manifest's. The reader lives past the handler (fasthttp
// reads it as it sends): it reads under a context of its own, ended by
// its Close, not the request's.
func (s *Server) openFile(c *fiber.Ctx, d Day, e *manifestEntry, r byteRange) (*fileBody, error) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(c.UserContext()))
	br, err := s.d.Bucket.NewRangeReader(ctx, FileName(d), r.first, r.last-r.first+1, nil)
	if err != nil {
		cancel()
		return nil, s.storeFailed(c, d, fileError(err))
	}
	if br.Size() != e.m.Bytes {
		_ = br.Close()
		cancel()
		return nil, s.storeFailed(c, d, fmt.Errorf("%w: %s holds %d bytes, its manifest says %d", errInconsistent, FileName(d), br.Size(), e.m.Bytes))
	}
	b := &fileBody{r: br, cancel: cancel, sent: s.m.bytes, timeout: s.d.WriteTimeout}
	if !inprocess.Is(c.Context()) { // an in-process request has no connection
		b.conn = c.Context().Conn()
	}
	return b, nil
}

// fileBody is a file's answer as fasthttp sends it: it counts the bytes
// read, and Close releases the bucket's reader.
type fileBody struct {
	r      *blob.Reader
	cancel context.CancelFunc
	sent   prometheus.Counter
	// conn is the client's connection: fasthttp reads the body and writes
	// it on the one goroutine, under one write deadline for the whole
	// answer; each read moves it on by timeout.
	conn    net.Conn
	timeout time.Duration
}

func (b *fileBody) Read(p []byte) (int, error) {
	if b.conn != nil {
		_ = b.conn.SetWriteDeadline(time.Now().Add(b.timeout))
	}
	n, err := b.r.Read(p)
	if n > 0 {
		b.sent.Add(float64(n))
	}
	return n, err
}

func (b *fileBody) Close() error {
	err := b.r.Close()
	b.cancel()
	return err
}

// byteRange is the bytes [first, last] of a file.
type byteRange struct{ first, last int64 }

// parseRange reads a Range field for a file of size bytes: one range,
// clipped to the file; or why it is not served (a 416).
func parseRange(v []byte, size int64) (byteRange, string) {
	if len(v) > maxRangeHeader {
		return byteRange{}, fmt.Sprintf("the Range field is longer than %d bytes: ask for one range, bytes=first-last", maxRangeHeader)
	}
	unit, set, ok := bytes.Cut(v, []byte("="))
	if !ok || !strings.EqualFold(string(bytes.Trim(unit, " \t")), "bytes") {
		return byteRange{}, "only byte ranges are served: Range: bytes=first-last, bytes=first- or bytes=-suffix"
	}
	if bytes.IndexByte(set, ',') >= 0 {
		return byteRange{}, "one range per request: ask for each range on its own (Range: bytes=first-last)"
	}
	first, last, ok := bytes.Cut(bytes.Trim(set, " \t"), []byte("-"))
	if !ok {
		return byteRange{}, "a byte range is first-last, first- or -suffix, in decimal"
	}
	var r byteRange
	if len(first) == 0 {
		n, ok := decimal(last)
		switch {
		case !ok:
			return byteRange{}, "a suffix range is -n, n in decimal below 2^63"
		case n == 0:
			return byteRange{}, "an empty suffix range (bytes=-0) selects nothing"
		}
		return byteRange{first: size - min(n, size), last: size - 1}, ""
	}
	if r.first, ok = decimal(first); !ok {
		return byteRange{}, "a byte range is first-last, first- or -suffix, first and last in decimal below 2^63"
	}
	r.last = size - 1
	if len(last) > 0 {
		var end int64
		if end, ok = decimal(last); !ok {
			return byteRange{}, "a byte range is first-last, first- or -suffix, first and last in decimal below 2^63"
		}
		if end < r.first {
			return byteRange{}, "the range's last byte is before its first"
		}
		r.last = min(end, size-1)
	}
	if r.first >= size {
		return byteRange{}, fmt.Sprintf("the range starts at or beyond the file's end (the file holds %d bytes)", size)
	}
	return r, ""
}

// decimal reads a non-negative decimal number below 2^63 (ASCII digits
// only: no sign, no space).
func decimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// etagOf is the strong entity tag of b: its SHA-256 in hex, quoted.
func etagOf(b []byte) []byte {
	sum := sha256.Sum256(b)
	out := make([]byte, 0, 2+2*sha256.Size)
	out = append(out, '"')
	out = hex.AppendEncode(out, sum[:])
	return append(out, '"')
}
