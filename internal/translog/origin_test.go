package translog_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/translog"
	"github.com/attestd/attestd/ratelimit"
	"github.com/attestd/attestd/translog/logformat"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// rawGet GETs url with the given Accept-Encoding ("" sends none: Go's
// transport would otherwise ask for gzip and decode it silently).
func rawGet(t testing.TB, url, acceptEncoding string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	testenv.Must(t, err, "request")
	req.Header.Set("Accept-Encoding", acceptEncoding)
	if acceptEncoding == "" {
		req.Header.Set("Accept-Encoding", "identity")
	}
	res, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	testenv.Must(t, err, "GET %s", url)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	testenv.Must(t, err, "read %s", url)
	return res, b
}

// TestTilesAtTheOriginOutsideTheAPILimit: the checkpoint and tiles answer
// at the origin's path (attestd.test/log → /log/...), not under /api/v1;
// the API's per-IP limit never counts them, their own guard does.
func TestTilesAtTheOriginOutsideTheAPILimit(t *testing.T) {
	le := newLogEnv(t, 2)
	le.bulk(t, 700, attestation.Finalized)
	le.appendAll(t)
	rdb := apptest.NewRedis(t, le.env.RedisURL)
	lim, err := ratelimit.New(rdb, ratelimit.Config{Limit: 5, Window: time.Minute, KeyPrefix: le.env.Prefix + "rl:"}, nil, apptest.Logger())
	testenv.Must(t, err, "limiter")
	t.Cleanup(lim.Close)
	start := func(tileRate int) *apptest.Node {
		cfg := le.cfg
		cfg.TileRate = tileRate
		var srv *translog.Server
		n := le.env.StartNode(t, apptest.NodeOptions{
			Configure: func(d *app.Deps) {
				d.Middleware = append(d.Middleware, lim.Middleware())
				srv = translog.NewServer(translog.ServerDeps{Store: le.st, Cache: d.Cache, Config: cfg, Logger: apptest.Logger(), Refresh: 20 * time.Millisecond})
				srv.Start(t.Context())
				d.Unlimited = append(d.Unlimited, srv.OriginRoutes()...)
			},
			Routes: func(api *app.API) { srv.Routes(api) }})
		if srv.Path() != "/log" {
			t.Fatalf("origin attestd.test/log serves at %q", srv.Path())
		}
		return n
	}
	n := start(0)
	// 150 tile and checkpoint requests: far past the API's 5, none counted.
	paths := []string{"/log/checkpoint", "/log/tile/0/000", "/log/tile/0/001", "/log/tile/entries/002.p/188", "/log/tile/1/000.p/2"}
	for i := range 150 {
		p := paths[i%len(paths)]
		res, b := rawGet(t, n.Root+p, "gzip")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("request %d, %s: %d %s", i, p, res.StatusCode, b)
		}
		if res.Header.Get(ratelimit.HeaderLimit) != "" {
			t.Fatalf("%s carries the API limit's headers: the limiter saw it", p)
		}
	}
	r := n.Get(t, "/log/key")
	if r.Status != http.StatusOK || r.Header.Get(ratelimit.HeaderRemaining) != "4" {
		t.Fatalf("the first API request after 150 tiles: %d, RateLimit-Remaining %q (want 4: tiles not counted)", r.Status, r.Header.Get(ratelimit.HeaderRemaining))
	}
	// The old location under the API is gone.
	if r := n.Get(t, "/log/checkpoint"); r.Status != http.StatusNotFound {
		t.Fatalf("/api/v1/log/checkpoint: %d", r.Status)
	}
	// The guard (1 a second, a burst of 10): past its burst, 429 in the
	// envelope with Retry-After.
	guarded := start(1)
	limited := 0
	for range 30 {
		res, b := rawGet(t, guarded.Root+"/log/tile/0/000", "")
		if res.StatusCode == http.StatusTooManyRequests {
			limited++
			if !bytes.Contains(b, []byte("RATE_LIMITED")) || res.Header.Get("Retry-After") == "" || res.Header.Get("Cache-Control") != "no-store" {
				t.Fatalf("guard's 429: %s, Retry-After %q, Cache-Control %q", b, res.Header.Get("Retry-After"), res.Header.Get("Cache-Control"))
			}
		}
	}
	if limited == 0 {
		t.Fatal("30 tile requests: none refused by the guard (1 a second, burst 10)")
	}
}

// TestEntryBundlesGzip: entry bundles leave gzip-compressed when the
// client accepts it (C2SP tlog-tiles: they SHOULD be compressed), whole
// or cut; hash tiles never (hashes do not compress); the bytes inflate to
// the identity answer.
func TestEntryBundlesGzip(t *testing.T) {
	le := newLogEnv(t, 2)
	le.bulk(t, 600, attestation.Finalized)
	le.appendAll(t)
	waitCheckpoint(t, le.node, 600)
	for _, p := range []string{"entries/000", "entries/002.p/88", "entries/002.p/40", "entries/001.p/7"} {
		plain, pb := rawGet(t, le.node.Root+"/log/tile/"+p, "")
		zipped, zb := rawGet(t, le.node.Root+"/log/tile/"+p, "gzip, identity")
		if plain.StatusCode != 200 || zipped.StatusCode != 200 {
			t.Fatalf("%s: %d / %d", p, plain.StatusCode, zipped.StatusCode)
		}
		if plain.Header.Get("Content-Encoding") != "" || zipped.Header.Get("Content-Encoding") != "gzip" || zipped.Header.Get("Vary") != "Accept-Encoding" {
			t.Fatalf("%s: Content-Encoding %q / %q, Vary %q", p, plain.Header.Get("Content-Encoding"), zipped.Header.Get("Content-Encoding"), zipped.Header.Get("Vary"))
		}
		zr, err := gzip.NewReader(bytes.NewReader(zb))
		testenv.Must(t, err, "%s: gzip", p)
		inflated, err := io.ReadAll(zr)
		testenv.Must(t, err, "%s: inflate", p)
		if !bytes.Equal(inflated, pb) || len(zb) >= len(pb) {
			t.Fatalf("%s: %d gzip bytes inflate to %d bytes, identity %d (equal: %v)", p, len(zb), len(inflated), len(pb), bytes.Equal(inflated, pb))
		}
		if plain.Header.Get("ETag") == zipped.Header.Get("ETag") {
			t.Fatalf("%s: one ETag for two representations", p)
		}
	}
	res, _ := rawGet(t, le.node.Root+"/log/tile/0/000", "gzip")
	if res.Header.Get("Content-Encoding") != "" {
		t.Fatalf("a hash tile gzipped")
	}
}

// TestPartialTilesAreSlices: every partial width of every level answers
// the first W hashes (or leaves) of its tile, older widths included,
// whether the full tile exists already or the tile is the right edge; the
// bytes agree with x/mod's tiles of the same tree.
func TestPartialTilesAreSlices(t *testing.T) {
	le := newLogEnv(t, 2)
	le.bulk(t, 530, attestation.Finalized)
	le.appendAll(t)
	text := waitCheckpoint(t, le.node, 530)
	cp, err := logformat.ParseCheckpoint(strings.SplitN(text, "\n\n", 2)[0] + "\n")
	testenv.Must(t, err, "checkpoint")
	hashes := le.st.LogHashReader(context.Background())
	for _, tile := range []logformat.Tile{{Level: 0, N: 0, W: 1}, {Level: 0, N: 0, W: 255}, {Level: 0, N: 1, W: 17},
		{Level: 0, N: 2, W: 18}, {Level: 0, N: 2, W: 1}, {Level: 1, N: 0, W: 1}, {Level: 1, N: 0, W: 2}} {
		want, err := tlog.ReadTileData(tlog.Tile{H: 8, L: tile.Level, N: tile.N, W: tile.W}, hashes)
		testenv.Must(t, err, "x/mod tile %s", tile.Path())
		res, got := rawGet(t, le.node.Root+"/log/tile/"+tile.Path(), "")
		if res.StatusCode != 200 || !bytes.Equal(got, want) {
			t.Fatalf("tile %s (tree %d): %d, %d bytes, want x/mod's %d", tile.Path(), cp.Size, res.StatusCode, len(got), len(want))
		}
	}
	for _, w := range []int{1, 100, 255} {
		res, got := rawGet(t, le.node.Root+"/log/tile/entries/000.p/"+strconv.Itoa(w), "")
		leaves, err := logformat.ParseEntryBundle(got)
		if res.StatusCode != 200 || err != nil || len(leaves) != w {
			t.Fatalf("entries/000.p/%d: %d, %d leaves (%v)", w, res.StatusCode, len(leaves), err)
		}
		for i, l := range leaves {
			if tlog.RecordHash(l) != hashAt(t, le, int64(i)) {
				t.Fatalf("entries/000.p/%d: leaf %d does not hash to the tree's", w, i)
			}
		}
	}
}

func hashAt(t testing.TB, le *logEnv, i int64) tlog.Hash {
	h, err := le.st.ReadLogHashes(context.Background(), []int64{tlog.StoredHashIndex(0, i)})
	testenv.Must(t, err, "hash %d", i)
	return h[0]
}

// TestKeyRotationKeepsTheOrigin: a new key with the old one's name signs
// beside it: one origin, both signatures on every checkpoint, each key
// verifies it alone, and /log/key lists both (the new one first).
func TestKeyRotationKeepsTheOrigin(t *testing.T) {
	le := newLogEnv(t, 2)
	le.add(t, 3, attestation.Finalized)
	le.appendAll(t)
	newSkey, newVkey, err := note.GenerateKey(rand.Reader, "attestd.test/log")
	testenv.Must(t, err, "new key")
	keys, err := translog.ParseKeys(newSkey + "," + le.skey)
	testenv.Must(t, err, "parse the rotation's keys")
	cfg := le.cfg
	cfg.Key, cfg.Rotating = keys[0], keys[1:]
	a, err := translog.NewAppender(translog.AppenderDeps{Store: le.st, Config: cfg, Logger: apptest.Logger()})
	testenv.Must(t, err, "appender")
	le.add(t, 2, attestation.Finalized)
	for {
		res, err := le.st.LogAppend(context.Background(), 100)
		testenv.Must(t, err, "append")
		if res.Leaves+res.Dropped == 0 {
			break
		}
	}
	c, made, err := a.SignCheckpoint(context.Background())
	if err != nil || !made || c.Size != 5 || c.Origin != "attestd.test/log" {
		t.Fatalf("checkpoint across the rotation: %+v made=%v %v", c, made, err)
	}
	if got := strings.Count(c.Note, "\n— attestd.test/log "); got != 2 {
		t.Fatalf("%d signature lines, want 2 (new and old key):\n%s", got, c.Note)
	}
	for _, vk := range []string{newVkey, le.key.VerifierKey} {
		v, _ := note.NewVerifier(vk)
		if _, err := logformat.OpenCheckpoint([]byte(c.Note), v); err != nil {
			t.Fatalf("key %s alone does not verify the rotation's checkpoint: %v", vk, err)
		}
	}
	vkeys, err := translog.ParseKeys(newVkey + "\n" + le.key.VerifierKey)
	testenv.Must(t, err, "verifier keys")
	cfg = translog.Config{Key: vkeys[0], Rotating: vkeys[1:]}
	n := le.startNode(t, cfg)
	if r := n.Get(t, "/log/key"); string(r.Body) != newVkey+"\n"+le.key.VerifierKey+"\n" {
		t.Fatalf("/log/key during the rotation: %q", r.Body)
	}
	waitCheckpoint(t, n, 5)
}

// TestParseKeysHostile: what a rotation's key list refuses, never quoting
// a private key.
func TestParseKeysHostile(t *testing.T) {
	a, _, _ := note.GenerateKey(rand.Reader, "example.com/log")
	b, bv, _ := note.GenerateKey(rand.Reader, "example.com/log")
	other, _, _ := note.GenerateKey(rand.Reader, "example.com/log2")
	noPath, _, _ := note.GenerateKey(rand.Reader, "example.com")
	api, _, _ := note.GenerateKey(rand.Reader, "example.com/api/v1")
	for name, text := range map[string]string{
		"two origins":      a + "," + other,
		"twice":            a + "," + a,
		"mixed kinds":      a + "," + bv,
		"none":             " , ,\n",
		"no path":          noPath,
		"under the api":    api,
		"garbage":          a + ",PRIVATE+KEY+x",
		"nine keys":        strings.Repeat(a+",", 9),
		"nul":              a + "\x00",
		"unicode lookalik": strings.Replace(a, "example", "ехample", 1),
	} {
		if _, err := translog.ParseKeys(text); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "PRIVATE+KEY") && strings.Contains(err.Error(), a[20:40]) {
			t.Errorf("%s: the error quotes a private key: %v", name, err)
		}
	}
	if keys, err := translog.ParseKeys(a + ",\n" + b + "\n"); err != nil || len(keys) != 2 {
		t.Fatalf("a rotation's two keys: %d, %v", len(keys), err)
	}
	for origin, want := range map[string]string{"example.com/log": "/log", "example.com:8443/a/b": "/a/b", "x/log-2_~.v": "/log-2_~.v"} {
		if got, err := translog.OriginPath(origin); err != nil || got != want {
			t.Errorf("OriginPath(%q) = %q, %v", origin, got, err)
		}
	}
	for _, origin := range []string{"", "/log", "example.com", "example.com/", "example.com//log", "example.com/../log", "https://example.com/log",
		"example.com/API", "example.com/log?x", "example.com/lo g", "example.com:/log", "example.com:x/log", "exa+mple.com/log", "example.com/%2e"} {
		if got, err := translog.OriginPath(origin); err == nil {
			t.Errorf("OriginPath(%q) = %q, want an error", origin, got)
		}
	}
}

// TestLogRoutesCannotPinTheCache: what anonymous requests to the log's
// routes can make the cache hold is bounded by the tree, not by the
// requests: every width of every partial tile, hundreds of consistency
// pairs and proofs add a handful of keys, and every key but the full
// tiles' lives seconds.
func TestLogRoutesCannotPinTheCache(t *testing.T) {
	le := newLogEnv(t, 2)
	le.bulk(t, 700, attestation.Finalized)
	le.appendAll(t)
	waitCheckpoint(t, le.node, 700)
	ctx := context.Background()
	rdb := le.node.Redis
	count := func() map[string]time.Duration {
		keys, err := rdb.Keys(ctx, le.env.Prefix+"*").Result()
		testenv.Must(t, err, "keys")
		out := map[string]time.Duration{}
		for _, k := range keys {
			// The epoch, and the cache budget's counters (one per class
			// and window, whatever is asked).
			if strings.HasSuffix(k, "epoch") || strings.Contains(k, ":budget:{") {
				continue
			}
			d, err := rdb.PTTL(ctx, k).Result()
			testenv.Must(t, err, "pttl")
			out[k] = d
		}
		return out
	}
	before := len(count())
	requests := 0
	get := func(url string) {
		res, b := rawGet(t, url, "gzip")
		requests++
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", url, res.StatusCode, b)
		}
	}
	// 700 leaves: level-0 tiles 0 and 1 full, 2 the edge (188 wide);
	// level 1: the edge of 2.
	for w := 1; w <= 255; w++ {
		get(le.node.Root + "/log/tile/0/000.p/" + strconv.Itoa(w))
		get(le.node.Root + "/log/tile/entries/001.p/" + strconv.Itoa(w))
		if w <= 188 {
			get(le.node.Root + "/log/tile/0/002.p/" + strconv.Itoa(w))
			get(le.node.Root + "/log/tile/entries/002.p/" + strconv.Itoa(w))
		}
	}
	for from := int64(1); from <= 200; from++ {
		get(le.node.URL + "/log/consistency?from=" + strconv.FormatInt(from, 10) + "&to=" + strconv.FormatInt(699-from%50, 10))
		get(le.node.URL + "/log/consistency?from=" + strconv.FormatInt(from, 10) + "&to=700")
	}
	for i := int64(0); i < 50; i++ {
		get(le.node.URL + "/attestations/" + pdaAt(t, le, i) + "/proof")
	}
	after := count()
	// Kept: full tiles 0/000 and entries/001 (immutable), the two edges,
	// 200 consistency answers to the newest size and 50 proofs (seconds);
	// for each, its entry, or the marker its first miss leaves (the cache
	// stores an answer at its second), or both.
	long, longMarkers, entries, markers := 0, 0, 0, 0
	for k, ttl := range after {
		marker := strings.Contains(k, ":seen:")
		if marker {
			markers++
		} else {
			entries++
		}
		if ttl > time.Minute {
			if marker {
				longMarkers++
				continue
			}
			long++
			if !strings.Contains(k, "logtile") {
				t.Errorf("key %s kept for %s: only full tiles are kept longer than a checkpoint lives", k, ttl)
			}
		}
	}
	const kept = 2 + 2 + 200 + 50
	if long > 2 || longMarkers > 2 || entries > kept || markers > kept || len(after)-before > 2*kept {
		t.Fatalf("%d requests left %d keys (%d entries, %d markers; %d entries and %d markers kept long): the cache grows with the requests",
			requests, len(after)-before, entries, markers, long, longMarkers)
	}
	t.Logf("%d hostile log requests: %d cache keys, %d of them full tiles kept long, the rest for seconds", requests, len(after)-before, long)
}

// TestParseWitnessesHostile: what ATTESTD_LOG_WITNESSES refuses.
func TestParseWitnessesHostile(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	k1 := logformat.NewCosignatureKey("w1.test/w", priv.Public().(ed25519.PublicKey))
	_, priv2, _ := ed25519.GenerateKey(rand.Reader)
	k2 := logformat.NewCosignatureKey("w2.test/w", priv2.Public().(ed25519.PublicKey))
	_, logKey, _ := note.GenerateKey(rand.Reader, "w3.test/w")
	good := k1 + " http://127.0.0.1:7380/add-checkpoint"
	for name, text := range map[string]string{
		"no url":            k1,
		"three fields":      good + " extra",
		"ftp url":           k1 + " ftp://x/add-checkpoint",
		"relative url":      k1 + " /add-checkpoint",
		"credentials":       k1 + " https://u:p@x/add-checkpoint",
		"fragment":          k1 + " https://x/add-checkpoint#f",
		"a log key":         logKey + " https://x/add-checkpoint",
		"twice":             good + "," + good,
		"same name":         good + "," + strings.Replace(k2, "w2.test", "w1.test", 1) + " https://y/a",
		"bad key id":        strings.Replace(k1, "+", "+0", 1) + " https://x/a",
		"nul in url":        k1 + " https://x/a\x00",
		"thirty-three":      strings.Repeat(good+",", 1)[:0] + manyWitnesses(33),
		"unicode name":      logformat.NewCosignatureKey("wі.test/w", priv.Public().(ed25519.PublicKey)) + "x https://x/a",
		"space in key name": "w 1+00000000+AAAA https://x/a",
	} {
		if _, err := translog.ParseWitnesses(text); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ws, err := translog.ParseWitnesses(" " + good + " ,\n" + k2 + "   https://witness.example/w/add-checkpoint\n")
	if err != nil || len(ws) != 2 || ws[1].Name != "w2.test/w" || ws[1].URL != "https://witness.example/w/add-checkpoint" {
		t.Fatalf("two witnesses: %+v %v", ws, err)
	}
	cfg, err := translog.ConfigFromEnv(func(k string) string {
		return map[string]string{"ATTESTD_LOG_WITNESSES": good + "," + k2 + " https://x/a", "ATTESTD_LOG_WITNESS_QUORUM": "3"}[k]
	})
	if err == nil {
		t.Fatalf("a quorum of 3 with 2 witnesses accepted: %+v", cfg)
	}
	cfg, err = translog.ConfigFromEnv(func(k string) string {
		return map[string]string{"ATTESTD_LOG_WITNESSES": good + "," + k2 + " https://x/a"}[k]
	})
	if err != nil || cfg.Quorum != 2 {
		t.Fatalf("the default quorum of 2 witnesses: %d %v", cfg.Quorum, err)
	}
}

func manyWitnesses(n int) string {
	var items []string
	for i := range n {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		items = append(items, logformat.NewCosignatureKey(sprintf("w%d.test/w", i), priv.Public().(ed25519.PublicKey))+" https://x/a")
	}
	return strings.Join(items, ",")
}
