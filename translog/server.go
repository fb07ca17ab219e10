package translog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/store"
	"github.com/attestd/attestd/translog/logformat"
	"github.com/gofiber/fiber/v2"
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

// ServerOptions configure a Server.
type ServerOptions struct {
	Store  *store.Store
	Cache  *cache.Cache // tiles and proofs are kept there (immutable)
	Config Config       // the zero Key: every route answers 503
	Logger *slog.Logger
	// Refresh is how often the newest checkpoint is read from PostgreSQL
	// (default 1 s).
	Refresh time.Duration
}

// Server answers the log's public routes.
type Server struct {
	opt    ServerOptions
	log    *slog.Logger
	latest atomic.Pointer[served]
	// failed is the last refresh's error while PostgreSQL does not answer
	// (nil after a success): requests do not ask again within Refresh.
	failed atomic.Pointer[failure]
	mu     sync.Mutex   // one refresh at a time
	reads  atomic.Int64 // checkpoint reads from PostgreSQL (for tests)
}

type failure struct {
	err error
	at  time.Time
}

// served is the newest checkpoint with its answer's entity tag.
type served struct {
	store.LogCheckpoint
	etag []byte
	at   time.Time
}

// NewServer builds the log's routes' handlers.
func NewServer(opt ServerOptions) *Server {
	if opt.Refresh <= 0 {
		opt.Refresh = time.Second
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	return &Server{opt: opt, log: opt.Logger}
}

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
	c, ok, err := s.opt.Store.LatestLogCheckpoint(ctx, s.opt.Config.Key.Name)
	if err != nil {
		s.failed.Store(&failure{err: err, at: time.Now()})
		return s.latest.Load(), err
	}
	s.failed.Store(nil)
	cur := s.latest.Load()
	if !ok || (cur != nil && cur.Size >= c.Size) {
		if cur != nil {
			now := *cur
			now.at = time.Now()
			s.latest.Store(&now)
			return &now, nil
		}
		return nil, nil
	}
	next := &served{LogCheckpoint: c, etag: cache.ETagOf([]byte(c.Note)), at: time.Now()}
	s.latest.Store(next)
	return next, nil
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

// Routes adds the log's routes to api.
func (s *Server) Routes(api *app.API) {
	// GET and HEAD, as the API's other public reads (caches and mirrors
	// check tiles with HEAD).
	for _, m := range []string{fiber.MethodGet, fiber.MethodHead} {
		api.Route(m, "/log/checkpoint", s.getCheckpoint)
		api.Route(m, "/log/key", s.getKey)
		api.Route(m, "/log/consistency", s.getConsistency)
		api.Route(m, "/log/tile/*", s.getTile)
		api.Route(m, "/attestations/:id/proof", s.getProof)
	}
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
		return nil, app.StoreError(err)
	}
	return nil, apierror.Unavailable("no checkpoint of log %s is signed yet: the appender runs with attestd index and ATTESTD_LOG_KEY set to the log's private key", s.opt.Config.Key.Name)
}

func (s *Server) getCheckpoint(c *fiber.Ctx) error {
	if _, err := app.QueryParams(c); err != nil {
		return err
	}
	cp, err := s.current(c)
	if err != nil {
		return err
	}
	return sendBytes(c, []byte(cp.Note), cp.etag, ControlShort, fiber.MIMETextPlainCharsetUTF8)
}

func (s *Server) getKey(c *fiber.Ctx) error {
	if _, err := app.QueryParams(c); err != nil {
		return err
	}
	if !s.opt.Config.Enabled() {
		return apierror.Unavailable("%s", ErrOff.Error())
	}
	b := []byte(s.opt.Config.Key.VerifierKey + "\n")
	return sendBytes(c, b, cache.ETagOf(b), ControlKey, fiber.MIMETextPlainCharsetUTF8)
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
	if _, err := app.QueryParams(c); err != nil {
		return err
	}
	raw := c.Params("*") // Fiber's buffer: parsed, never kept
	t, err := logformat.ParseTilePath(raw)
	if err == nil && !strings.HasSuffix(c.Path(), "/log/tile/"+raw) {
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
	key := cache.NewKey("logtile").String(t.Path()).Key()
	v, _, err := s.opt.Cache.GetValue(c.UserContext(), key, func(ctx context.Context) ([]byte, bool, error) {
		b, err := s.readTile(ctx, t)
		return b, true, app.StoreError(err)
	})
	if err != nil {
		return err
	}
	control := ControlImmutable
	if t.W < logformat.TileWidth {
		control = ControlShort
	}
	return sendBytes(c, v.JSON, v.ETag, control, "application/octet-stream")
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
	if _, err := app.QueryParams(c); err != nil {
		return err
	}
	cp, err := s.current(c)
	if err != nil {
		return err
	}
	raw := c.Params("id") // Fiber's buffer: used within this request only
	if len(raw) <= attestation.MaxAddressLen {
		// Only answers about valid addresses are cached, and base58 spells
		// each address one way: holding the key vouches for the text.
		if v, ok := s.opt.Cache.Peek(cache.NewKey("logproof").String(raw).Int(cp.Size).Bytes()); ok {
			return sendJSON(c, v, ControlShort)
		}
	}
	pda, err := app.ParseAddress("id", raw)
	if err != nil {
		return err
	}
	key := cache.NewKey("logproof").String(pda).Int(cp.Size).Key()
	v, _, err := s.opt.Cache.GetValue(c.UserContext(), key, func(ctx context.Context) ([]byte, bool, error) {
		p, err := s.prove(ctx, pda, cp)
		if err != nil {
			return nil, false, err
		}
		b, err := jsonOf(ProofBody{Data: p})
		return b, true, err
	})
	if err != nil {
		return err
	}
	return sendJSON(c, v, ControlShort)
}

// prove builds pda's inclusion proof against cp: one query for the leaf,
// one for the proof's hashes.
func (s *Server) prove(ctx context.Context, pda string, cp *served) (Proof, error) {
	e, err := s.opt.Store.LogEntryOf(ctx, pda)
	if errors.Is(err, store.ErrNotFound) {
		return Proof{}, apierror.NotFound(apierror.CodeAttestationNotFound, "no attestation with pda %s", pda)
	}
	if err != nil {
		return Proof{}, app.StoreError(err)
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
		return Proof{}, app.StoreError(fmt.Errorf("inclusion proof of leaf %d in size %d: %w", e.Index, cp.Size, err))
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
	q, err := app.QueryParams(c, "from", "to")
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
	key := cache.NewKey("logconsistency").Int(from).Int(to).Key()
	v, _, err := s.opt.Cache.GetValue(c.UserContext(), key, func(ctx context.Context) ([]byte, bool, error) {
		tp, err := tlog.ProveTree(to, from, s.opt.Store.LogHashReader(ctx))
		if err != nil {
			return nil, false, app.StoreError(fmt.Errorf("consistency proof %d to %d: %w", from, to, err))
		}
		hashes := make([][]byte, len(tp))
		for i := range tp {
			hashes[i] = tp[i][:]
		}
		b, err := jsonOf(ConsistencyBody{Data: Consistency{From: from, To: to, Proof: hashes}})
		return b, true, err
	})
	if err != nil {
		return err
	}
	return sendJSON(c, v, ControlImmutable)
}

// sendJSON sends a cached JSON value (gzip when accepted and kept).
func sendJSON(c *fiber.Ctx, v cache.Value, control string) error {
	h := &c.Response().Header
	h.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	if v.Gzip != nil && app.AcceptsGzip(c) {
		if err := sendBytes(c, v.Gzip, v.GzipETag, control, fiber.MIMEApplicationJSONCharsetUTF8); err != nil {
			return err
		}
		if c.Response().StatusCode() != http.StatusNotModified {
			c.Set(fiber.HeaderContentEncoding, "gzip")
		}
		return nil
	}
	return sendBytes(c, v.JSON, v.ETag, control, fiber.MIMEApplicationJSONCharsetUTF8)
}
