package translog

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/translog/logformat"
	"github.com/gofiber/fiber/v2"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Cache-Control of the log's answers.
const (
	// ControlImmutable: full tiles and consistency proofs between two
	// sizes never change.
	ControlImmutable = "public, max-age=31536000, immutable"
	// ControlShort: the checkpoint, partial tiles and inclusion proofs
	// (against the newest checkpoint) move on as the log grows.
	ControlShort = "public, max-age=2"
	// ControlKey: the verifier key changes only when the operator rotates.
	ControlKey = "public, max-age=300"
)

// ServerDeps configure a Server.
type ServerDeps struct {
	Store  *store.Store
	Cache  *cache.Cache // tiles and proofs are kept there (immutable)
	Config              // the tunables, from settings; the zero Key: every route answers 503
	Logger *slog.Logger
	// Refresh is how often the newest checkpoint is read from PostgreSQL
	// (default 1 s).
	Refresh time.Duration
	// ClientIP resolves a request's client for the tiles' own limit
	// (Config.TileRate); nil: the peer address.
	ClientIP func(*fiber.Ctx) netip.Addr
}

// Server answers the log's public routes.
type Server struct {
	opt    ServerDeps
	log    *slog.Logger
	path   string // where the checkpoint and tiles are: the origin's path ("/log")
	guard  *guard
	keys   []byte // the verifier keys, one per line
	latest atomic.Pointer[served]
	// failed is the last refresh's error while PostgreSQL does not answer
	// (nil after a success): requests do not ask again within Refresh.
	failed atomic.Pointer[failure]
	mu     sync.Mutex                    // one refresh at a time
	reads  atomic.Int64                  // checkpoint reads from PostgreSQL (for tests)
	newest atomic.Int64                  // the newest checkpoint's size, witnessed or not
	behind atomic.Int64                  // since when (unix ns) the newest is not the one served; 0: it is
	hold   atomic.Pointer[store.LogHold] // the last refresh's, while the log is held (regrow.go); nil: not held
}

type failure struct {
	err error
	at  time.Time
}

// served is the newest checkpoint with its answer's entity tag.
type served struct {
	store.LogCheckpoint // Note: with the witnesses' cosignatures
	etag                []byte
	at                  time.Time
	witnessed           int // cosignatures in Note that verify
}

// NewServer builds the log's routes' handlers.
func NewServer(opt ServerDeps) *Server {
	if opt.Refresh <= 0 {
		opt.Refresh = time.Second
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	s := &Server{opt: opt, log: opt.Logger, guard: newGuard(opt.Config.TileRate, opt.ClientIP), path: "/log"}
	if opt.Config.Enabled() {
		if p, err := OriginPath(opt.Config.Origin()); err == nil {
			s.path = p // ParseKeys checked it; a Config built by hand may not have been
		}
		for _, k := range opt.Config.Keys() {
			s.keys = append(s.keys, k.VerifierKey+"\n"...)
		}
	}
	return s
}

// Path is where the checkpoint and tiles are served: the path of the
// log's origin ("/log" for example.com/log), outside the API's prefix.
func (s *Server) Path() string { return s.path }

// Start refreshes the newest checkpoint every Refresh until ctx ends.
func (s *Server) Start(ctx context.Context) {
	if !s.opt.Config.Enabled() {
		return
	}
	go func() {
		t := time.NewTicker(s.opt.Refresh)
		defer t.Stop()
		for {
			if _, err := s.refresh(ctx); err != nil && ctx.Err() == nil {
				s.log.Debug("log checkpoint refresh failed", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// refresh reads the newest checkpoint; a smaller one than held is ignored
// (a read replica or a slow query never takes a node back).
func (s *Server) refresh(ctx context.Context) (*served, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refreshLocked(ctx)
}

func (s *Server) refreshLocked(ctx context.Context) (*served, error) {
	s.reads.Add(1)
	cfg := s.opt.Config
	keys := make([]string, len(cfg.Witnesses))
	for i, w := range cfg.Witnesses {
		keys[i] = w.VerifierKey
	}
	c, lines, newest, ok, err := s.opt.Store.LatestWitnessedCheckpoint(ctx, cfg.Origin(), cfg.Quorum, keys)
	if err != nil {
		s.failed.Store(&failure{err: err, at: time.Now()})
		return s.latest.Load(), err
	}
	hold, err := s.opt.Store.ReadLogHold(ctx)
	if err != nil {
		s.failed.Store(&failure{err: err, at: time.Now()})
		return s.latest.Load(), err
	}
	s.failed.Store(nil)
	s.newest.Store(newest)
	if hold.Regrowing() || (ok && c.Size < hold.WitnessedSize) {
		// Restored from a backup: what the database holds may be older
		// than what the witnesses cosigned and clients hold. Nothing
		// below the witnessed size is served (a checkpoint this node
		// served before is not older: it stays).
		s.hold.Store(&hold)
		ok = false
		if cur := s.latest.Load(); cur != nil && cur.Size < hold.WitnessedSize {
			s.latest.Store(nil)
		}
	} else {
		s.hold.Store(nil)
	}
	defer func() {
		if l := s.latest.Load(); l != nil && l.Size >= newest {
			s.behind.Store(0)
		} else if s.behind.Load() == 0 {
			s.behind.Store(time.Now().UnixNano())
		}
	}()
	cur := s.latest.Load()
	if !ok || (cur != nil && cur.Size >= c.Size && len(lines) <= cur.witnessed) {
		if cur != nil {
			now := *cur
			now.at = time.Now()
			s.latest.Store(&now)
			return &now, nil
		}
		return nil, nil
	}
	if cur != nil && cur.Size > c.Size {
		return cur, nil // never back
	}
	// The served note: the log's signatures, then the witnesses'
	// cosignatures (C2SP tlog-cosignature lines), each checked here too:
	// a line that does not verify is left out and not counted.
	note, witnessed := Cosigned(c, lines, cfg.Witnesses)
	if witnessed < cfg.Quorum {
		s.log.Warn("log checkpoint's cosignatures do not verify with this node's witness keys; serving the last one that did",
			"size", c.Size, "verified", witnessed, "quorum", cfg.Quorum)
		if cur != nil {
			return cur, nil
		}
		return nil, nil
	}
	c.Note = note
	next := &served{LogCheckpoint: c, etag: cache.ETagOf([]byte(c.Note)), at: time.Now(), witnessed: witnessed}
	s.latest.Store(next)
	return next, nil
}

// checkCosignature reports whether line is a cosignature, by one of
// witnesses, of the checkpoint with this text.
func checkCosignature(text, line string, witnesses []Witness) bool {
	for _, w := range witnesses {
		if strings.HasPrefix(line, "— "+w.Name+" ") {
			n, err := note.Open([]byte(text+"\n\n"+line), note.VerifierList(w.Verifier))
			return err == nil && len(n.Sigs) == 1
		}
	}
	return false
}

// checkpoint is the newest checkpoint this node knows (nil: none yet).
// While PostgreSQL does not answer, requests do not queue behind one
// another's reads: one read per Refresh is tried, the others answer with
// what the node holds (or the last error) at once.
func (s *Server) checkpoint(ctx context.Context) (*served, error) {
	if cur, ok, err := s.recent(); ok {
		return cur, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok, err := s.recent(); ok {
		return cur, err // read (or failed) while this request waited
	}
	return s.refreshLocked(ctx)
}

// recent is what the node holds when it is recent enough to answer
// without a read: a checkpoint refreshed within 4 Refresh, or a read that
// failed within one Refresh (with the checkpoint held, if any).
func (s *Server) recent() (*served, bool, error) {
	cur := s.latest.Load()
	if cur != nil && time.Since(cur.at) < 4*s.opt.Refresh {
		return cur, true, nil
	}
	if f := s.failed.Load(); f != nil && time.Since(f.at) < s.opt.Refresh {
		return cur, true, f.err
	}
	return nil, false, nil
}

// Routes adds the log's API routes to r: the verifier key, inclusion
// proofs and consistency proofs (the checkpoint and tiles are
// OriginRoutes).
func (s *Server) Routes(r httpapi.Router) {
	// GET and HEAD, as the API's other public reads.
	for _, m := range []string{fiber.MethodGet, fiber.MethodHead} {
		r.Route(m, "/log/key", s.getKey)
		r.Route(m, "/log/consistency", s.getConsistency)
		r.Route(m, "/attestations/:id/proof", s.getProof)
	}
}

// OriginRoutes are the checkpoint and the tiles, at the origin's path
// (C2SP tlog-tiles: <prefix>/checkpoint, <prefix>/tile/...), for
// app.Deps.Unlimited: outside the API's per-IP limit, behind the log's own
// (Config.TileRate). Caches and mirrors check tiles with HEAD too.
func (s *Server) OriginRoutes() []httpapi.Route {
	var out []httpapi.Route
	for _, m := range []string{fiber.MethodGet, fiber.MethodHead} {
		out = append(out,
			httpapi.Route{Method: m, Path: s.path + "/checkpoint", Handlers: []fiber.Handler{s.guard.handler, s.getCheckpoint}},
			httpapi.Route{Method: m, Path: s.path + "/tile/*", Handlers: []fiber.Handler{s.guard.handler, s.getTile}})
	}
	return out
}

// current answers the checkpoint every route builds on, or the error
// that explains why there is none.
func (s *Server) current(c *fiber.Ctx) (*served, error) {
	if !s.opt.Config.Enabled() {
		return nil, apierror.Unavailable("%s", ErrOff.Error())
	}
	cp, err := s.checkpoint(c.UserContext())
	if cp != nil {
		return cp, nil // a stale one rather than none while Postgres is away
	}
	if err != nil {
		return nil, httpapi.StoreError(err)
	}
	if h := s.hold.Load(); h != nil {
		if !h.HeldSince.IsZero() {
			return nil, apierror.Unavailable("log %s was restored from a backup at %s: no checkpoint is served until the log's appender has asked its witnesses which size they cosigned", s.opt.Config.Origin(), h.HeldSince.UTC().Format(time.RFC3339))
		}
		return nil, apierror.Unavailable("%s", regrowReason(s.opt.Config.Origin(), *h))
	}
	if q := s.opt.Config.Quorum; q > 0 && s.newest.Load() > 0 {
		return nil, apierror.Unavailable("no checkpoint of log %s is cosigned by %d of its %d witnesses yet (ATTESTD_LOG_WITNESSES): the log serves only witnessed checkpoints", s.opt.Config.Origin(), q, len(s.opt.Config.Witnesses))
	}
	return nil, apierror.Unavailable("no checkpoint of log %s is signed yet: the appender runs with attestd index and ATTESTD_LOG_KEY set to the log's private key", s.opt.Config.Key.Name)
}

func (s *Server) getCheckpoint(c *fiber.Ctx) error {
	if _, err := httpapi.QueryParams(c); err != nil {
		return err
	}
	if c.Path() != s.path+"/checkpoint" {
		// Fiber's routing ignores a trailing slash and the path's case.
		return apierror.NotFound(apierror.CodeNotFound, "no route %s %s: the checkpoint is at %s/checkpoint", c.Method(), excerpt.Of(c.Path(), 128), s.path)
	}
	cp, err := s.current(c)
	if err != nil {
		return err
	}
	return sendBytes(c, []byte(cp.Note), cp.etag, ControlShort, fiber.MIMETextPlainCharsetUTF8)
}

func (s *Server) getKey(c *fiber.Ctx) error {
	if _, err := httpapi.QueryParams(c); err != nil {
		return err
	}
	if !s.opt.Config.Enabled() {
		return apierror.Unavailable("%s", ErrOff.Error())
	}
	return sendBytes(c, s.keys, cache.ETagOf(s.keys), ControlKey, fiber.MIMETextPlainCharsetUTF8)
}

// sendBytes sends b with its tag and caching, or 304 when If-None-Match
// names the tag.
func sendBytes(c *fiber.Ctx, b, etag []byte, control, contentType string) error {
	h := &c.Response().Header
	h.Set(fiber.HeaderCacheControl, control)
	h.SetBytesV(fiber.HeaderETag, etag)
	if httpcache.NoneMatch(c.Request().Header.PeekAll(fiber.HeaderIfNoneMatch), etag) {
		c.Status(http.StatusNotModified)
		return nil
	}
	c.Set(fiber.HeaderContentType, contentType)
	return c.Send(b)
}

func (s *Server) getTile(c *fiber.Ctx) error {
	if _, err := httpapi.QueryParams(c); err != nil {
		return err
	}
	raw := c.Params("*") // Fiber's buffer: parsed, never kept
	t, err := logformat.ParseTilePath(raw)
	if err == nil && c.Path() != s.path+"/tile/"+raw {
		// Fiber's routing ignores a trailing slash and the path's case
		// (/LOG/TILE/...); the tile's one path has neither.
		err = logformat.ErrTilePath
	}
	if err != nil {
		return apierror.Invalid("%v", err)
	}
	cp, err := s.current(c)
	if err != nil {
		return err
	}
	if !t.Within(cp.Size) {
		return apierror.NotFound(apierror.CodeNotFound, "tile %s is not in the tree of size %d", t.Path(), cp.Size)
	}
	// What is cached is bounded by the tree: each full tile (immutable,
	// one key per tile), and the right edge of each level at the newest
	// checkpoint (one key per level, kept until the next checkpoint at
	// most). Any other partial tile is a prefix of one of those, cut per
	// request: a client cannot make the cache hold more by asking for
	// widths (C2SP tlog-tiles lets a log answer 404 once the full tile
	// exists; a slice serves clients that do not fall back).
	whole := t
	var v cache.Value
	if edge := cp.edge(t); t.W < logformat.TileWidth && edge > 0 {
		whole.W = edge
		v, _, err = s.opt.Cache.GetValueFor(c.UserContext(), cache.NewKey("logedge").String(whole.Path()).Key(), edgeTTL,
			func(ctx context.Context) ([]byte, bool, error) {
				b, err := s.readTile(ctx, whole)
				return b, false, httpapi.StoreError(err)
			})
	} else {
		whole.W = logformat.TileWidth
		v, _, err = s.opt.Cache.GetValue(c.UserContext(), cache.NewKey("logtile").String(whole.Path()).Key(),
			func(ctx context.Context) ([]byte, bool, error) {
				b, err := s.readTile(ctx, whole)
				return b, true, httpapi.StoreError(err)
			})
	}
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "application/octet-stream")
	if t.W != whole.W {
		b, err := cut(v.JSON, t)
		if err != nil {
			return httpapi.StoreError(err)
		}
		v = cache.Value{JSON: b, ETag: cache.ETagOf(b)}
		if t.Level < 0 && httpapi.AcceptsGzip(c) {
			v.Gzip = gzipOf(b)
			v.GzipETag = cache.ETagOf(v.Gzip)
		}
	}
	if t.Level >= 0 {
		// Hashes do not compress: identity only (Vary as for entries:
		// caches key every tile the same way).
		c.Response().Header.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
		return sendBytes(c, v.JSON, v.ETag, ControlImmutable, "application/octet-stream")
	}
	// Entry bundles are JSON leaves: gzip when the client takes it (C2SP
	// tlog-tiles: they SHOULD be compressed).
	return sendEncoded(c, v, ControlImmutable, "application/octet-stream")
}

// edgeTTL bounds how long the right edge of a level is kept: it is
// replaced when the next checkpoint widens it.
const edgeTTL = 10 * time.Second

// edge is the width of the right-edge (partial) tile at t's level and
// index in the tree of this checkpoint, or 0 when that tile is full (or
// not the edge).
func (cp *served) edge(t logformat.Tile) int {
	var n int64
	if t.Level < 0 {
		n = cp.Size
	} else {
		n = cp.Size >> uint(logformat.TileHeight*t.Level)
	}
	if t.N != n/logformat.TileWidth {
		return 0
	}
	return int(n % logformat.TileWidth)
}

// cut is the first t.W hashes or entries of a wider tile's bytes.
func cut(b []byte, t logformat.Tile) ([]byte, error) {
	if t.Level >= 0 {
		if len(b) < t.W*tlog.HashSize {
			return nil, fmt.Errorf("tile %s: %d bytes stored", t.Path(), len(b))
		}
		return b[:t.W*tlog.HashSize], nil
	}
	leaves, err := logformat.ParseEntryBundle(b)
	if err != nil || len(leaves) < t.W {
		return nil, fmt.Errorf("entry bundle %s: %d leaves stored (%v)", t.Path(), len(leaves), err)
	}
	return logformat.EntryBundle(leaves[:t.W])
}

var fastGzip = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed); return w }}

// gzipOf compresses b fast (a partial entry bundle cut per request).
func gzipOf(b []byte) []byte {
	var buf bytes.Buffer
	zw := fastGzip.Get().(*gzip.Writer)
	zw.Reset(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	fastGzip.Put(zw)
	return buf.Bytes()
}

// readTile reads a tile's bytes: its hashes, or its entry bundle (each
// leaf as a big-endian uint16 length and the leaf).
func (s *Server) readTile(ctx context.Context, t logformat.Tile) ([]byte, error) {
	if t.Level >= 0 {
		return tlog.ReadTileData(tlog.Tile{H: logformat.TileHeight, L: t.Level, N: t.N, W: t.W}, s.opt.Store.LogHashReader(ctx))
	}
	leaves, err := s.opt.Store.LogLeaves(ctx, t.N*logformat.TileWidth, t.W)
	if err != nil {
		return nil, err
	}
	if len(leaves) != t.W {
		return nil, fmt.Errorf("entry tile %s: %d leaves stored, want %d", t.Path(), len(leaves), t.W)
	}
	return logformat.EntryBundle(leaves)
}

// ProofBody is the answer of GET /api/v1/attestations/{id}/proof.
type ProofBody struct {
	Data Proof `json:"data"`
}

// Proof is an attestation's inclusion proof against a signed checkpoint.
type Proof struct {
	LeafIndex      int64    `json:"leafIndex"`
	TreeSize       int64    `json:"treeSize"`       // the checkpoint's size
	Leaf           []byte   `json:"leaf"`           // base64 (standard)
	InclusionProof [][]byte `json:"inclusionProof"` // base64 hashes, leaf to root
	Checkpoint     string   `json:"checkpoint"`     // the signed note
	TxSignature    string   `json:"txSignature"`
	Slot           uint64   `json:"slot"`
}

func (s *Server) getProof(c *fiber.Ctx) error {
	q, err := httpapi.QueryParams(c, "format")
	if err != nil {
		return err
	}
	// The proof as a C2SP tlog-proof (text/x-tlog-proof: a file to keep
	// and check offline) when asked for by ?format=tlog-proof or by
	// Accept; JSON otherwise.
	text := false
	switch f, ok := q["format"]; {
	case ok && f == "tlog-proof":
		text = true
	case ok && f != "json":
		return apierror.Invalid("format must be json or tlog-proof")
	case !ok:
		text = httpapi.PrefersType(c, logformat.ProofMediaType, fiber.MIMEApplicationJSON)
	}
	c.Response().Header.Set(fiber.HeaderVary, "Accept, Accept-Encoding")
	cp, err := s.current(c)
	if err != nil {
		return err
	}
	kind := "logproof"
	if text {
		kind = "logproof-tlog"
	}
	raw := c.Params("id") // Fiber's buffer: used within this request only
	if len(raw) <= attestation.MaxAddressLen && !text {
		// Only answers about valid addresses are cached, and base58 spells
		// each address one way: holding the key vouches for the text.
		if v, ok := s.opt.Cache.Peek(cache.NewKey(kind).String(raw).Int(cp.Size).Bytes()); ok {
			return sendJSON(c, v, ControlShort)
		}
	}
	pda, err := httpapi.ParseAddress("id", raw)
	if err != nil {
		return err
	}
	// One key per logged attestation and checkpoint, kept no longer than
	// the checkpoint is the newest: the size is the server's, not the
	// client's, and unknown ids are not kept (their 404 is an error).
	key := cache.NewKey(kind).String(pda).Int(cp.Size).Key()
	v, _, err := s.opt.Cache.GetValueFor(c.UserContext(), key, proofTTL, func(ctx context.Context) ([]byte, bool, error) {
		p, err := s.prove(ctx, pda, cp)
		if err != nil {
			return nil, false, err
		}
		if text {
			return p.TlogProof().Marshal(), false, nil
		}
		b, err := jsonOf(ProofBody{Data: p})
		return b, true, err
	})
	if err != nil {
		return err
	}
	if text {
		c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+pda+`.tlog-proof"`)
		return sendEncoded(c, v, ControlShort, logformat.ProofMediaType)
	}
	return sendJSON(c, v, ControlShort)
}

// TlogProof is the proof as a C2SP tlog-proof, its extra data the leaf
// (the attestation's RFC 8785 JSON, which names it): checked offline with
// the log's key and the witnesses' (attestd verify --proof).
func (p Proof) TlogProof() logformat.Proof {
	hashes := make([]tlog.Hash, len(p.InclusionProof))
	for i, h := range p.InclusionProof {
		copy(hashes[i][:], h)
	}
	return logformat.Proof{Extra: p.Leaf, Index: p.LeafIndex, Hashes: hashes, Checkpoint: p.Checkpoint}
}

// prove builds pda's inclusion proof against cp: one query for the leaf,
// one for the proof's hashes.
func (s *Server) prove(ctx context.Context, pda string, cp *served) (Proof, error) {
	e, err := s.opt.Store.LogEntryOf(ctx, pda)
	if errors.Is(err, store.ErrNotFound) {
		return Proof{}, apierror.NotFound(apierror.CodeAttestationNotFound, "no attestation with pda %s", pda)
	}
	if err != nil {
		return Proof{}, httpapi.StoreError(err)
	}
	switch {
	case !e.Finalized:
		return Proof{}, apierror.New(http.StatusConflict, apierror.CodeNotFinalized,
			"attestation %s is confirmed, not finalized: a fork can still drop it, so it enters the log once finalized", pda)
	case !e.Logged:
		return Proof{}, apierror.New(http.StatusConflict, apierror.CodeNotLogged,
			"attestation %s is finalized and waits for its leaf in the log; try again in a few seconds", pda)
	case e.Index >= cp.Size:
		return Proof{}, apierror.New(http.StatusConflict, apierror.CodeNotLogged,
			"attestation %s is leaf %d, beyond the newest checkpoint (size %d); the next checkpoint covers it", pda, e.Index, cp.Size)
	}
	rp, err := tlog.ProveRecord(cp.Size, e.Index, s.opt.Store.LogHashReader(ctx))
	if err != nil {
		return Proof{}, httpapi.StoreError(fmt.Errorf("inclusion proof of leaf %d in size %d: %w", e.Index, cp.Size, err))
	}
	hashes := make([][]byte, len(rp))
	for i := range rp {
		hashes[i] = rp[i][:]
	}
	return Proof{LeafIndex: e.Index, TreeSize: cp.Size, Leaf: e.Leaf, InclusionProof: hashes, Checkpoint: cp.Note,
		TxSignature: e.TxSignature, Slot: e.Slot}, nil
}

// ConsistencyBody is the answer of GET /api/v1/log/consistency.
type ConsistencyBody struct {
	Data Consistency `json:"data"`
}

// Consistency proves the tree of size To extends the tree of size From.
type Consistency struct {
	From  int64    `json:"from"`
	To    int64    `json:"to"`
	Proof [][]byte `json:"proof"` // base64 hashes
}

func (s *Server) getConsistency(c *fiber.Ctx) error {
	q, err := httpapi.QueryParams(c, "from", "to")
	if err != nil {
		return err
	}
	from, ok := logformat.Decimal(q["from"], 1<<62)
	if !ok || from < 1 {
		return apierror.Invalid("from must be a tree size: a decimal number, at least 1")
	}
	to, ok := logformat.Decimal(q["to"], 1<<62)
	if !ok || to < from {
		return apierror.Invalid("to must be a tree size: a decimal number, at least from")
	}
	cp, err := s.current(c)
	if err != nil {
		return err
	}
	if to > cp.Size {
		return apierror.Invalid("to (%d) is beyond the newest checkpoint (size %d)", to, cp.Size)
	}
	load := func(ctx context.Context) ([]byte, bool, error) {
		tp, err := tlog.ProveTree(to, from, s.opt.Store.LogHashReader(ctx))
		if err != nil {
			return nil, false, httpapi.StoreError(fmt.Errorf("consistency proof %d to %d: %w", from, to, err))
		}
		hashes := make([][]byte, len(tp))
		for i := range tp {
			hashes[i] = tp[i][:]
		}
		b, err := jsonOf(ConsistencyBody{Data: Consistency{From: from, To: to, Proof: hashes}})
		return b, false, err
	}
	var v cache.Value
	if to == cp.Size {
		// What monitors ask (from the size they hold to the newest): kept
		// while that checkpoint is the newest. Other pairs are computed
		// per request (one query; CDNs keep them, they never change): a
		// client cannot fill the cache with pairs of its choosing.
		v, _, err = s.opt.Cache.GetValueFor(c.UserContext(), cache.NewKey("logconsistency").Int(from).Int(to).Key(), proofTTL, load)
	} else {
		var b []byte
		if b, _, err = load(c.UserContext()); err == nil {
			v = cache.MakeValue(b, true)
		}
	}
	if err != nil {
		return err
	}
	return sendJSON(c, v, ControlImmutable)
}

// proofTTL bounds how long a proof against the newest checkpoint is
// kept: about the checkpoint's life (ATTESTD_LOG_CHECKPOINT_INTERVAL, and
// a node's refresh).
const proofTTL = 10 * time.Second

// sendJSON sends a cached JSON value (gzip when accepted and kept).
func sendJSON(c *fiber.Ctx, v cache.Value, control string) error {
	return sendEncoded(c, v, control, fiber.MIMEApplicationJSONCharsetUTF8)
}

// sendEncoded sends a value's gzip form when the client accepts it and
// the value has one, its identity form otherwise.
func sendEncoded(c *fiber.Ctx, v cache.Value, control, contentType string) error {
	h := &c.Response().Header
	if len(h.Peek(fiber.HeaderVary)) == 0 {
		h.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	}
	if v.Gzip != nil && httpapi.AcceptsGzip(c) {
		if err := sendBytes(c, v.Gzip, v.GzipETag, control, contentType); err != nil {
			return err
		}
		if c.Response().StatusCode() != http.StatusNotModified {
			c.Set(fiber.HeaderContentEncoding, "gzip")
		}
		return nil
	}
	return sendBytes(c, v.JSON, v.ETag, control, contentType)
}
