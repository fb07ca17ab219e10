package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"regexp"
	"strings"

	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/gofiber/fiber/v2"
)

//go:embed assets
var assetFS embed.FS

// Caching of the web application's files.
const (
	// ImmutableCacheControl is what browsers and caches may do with an
	// asset under its content-hashed name (/assets/app.<hash>.js): keep it
	// for a year and never ask again. A release changes the names.
	ImmutableCacheControl = "public, max-age=31536000, immutable"
	// PageCacheControl is the page's (and the index's): keep it, but ask
	// each time (a 304 while its ETag is unchanged), so a release reaches
	// everyone at their next load.
	PageCacheControl = "no-cache"
	// AssetCacheControl is an asset under its plain name (/assets/app.js,
	// for links from elsewhere): ask again after a minute.
	AssetCacheControl = "public, max-age=60, s-maxage=60"
)

// Entry is the module the page loads; bundle joins it with every module it
// imports.
const Entry = "app.js"

// asset is one file as served: its bytes with their gzip form and the
// strong tags of both, made as the cache makes them (cache.MakeValue), its
// content type and caching.
type asset struct {
	v           cache.Value
	contentType string
	control     string
}

// assets are the files served under /assets/ and the page.
type assets struct {
	files map[string]*asset // by served name: "app.3f2a9c1d0b7e.js", "app.js", ...
	// hashed maps a plain name to its content-hashed one ("app.js" ->
	// "app.3f2a9c1d0b7e.js").
	hashed map[string]string
	index  *asset
}

// hashLen is how many hexadecimal digits of the SHA-256 a name carries.
const hashLen = 12

// hashedName matches a content-hashed name: base, hash, extension.
var hashedName = regexp.MustCompile(`^([a-z0-9-]+)\.([0-9a-f]{12})\.([a-z]+)$`)

// served are the files a page refers to: the bundle, the stylesheet and
// the icon (the modules are served inside the bundle only).
var served = []string{"favicon.svg", "style.css", Entry}

// loadAssets reads every embedded file once, at start: it bundles the
// modules, names each served file by its content's hash (a file that
// refers to another names its hashed name, so the hash covers what it
// loads), and rewrites the page to those names.
func loadAssets() (*assets, error) {
	src := map[string]string{}
	err := fs.WalkDir(assetFS, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assetFS.ReadFile(p)
		if err != nil {
			return err
		}
		src[strings.TrimPrefix(p, "assets/")] = string(b)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("embedded assets: %w", err)
	}
	if src["index.html"] == "" {
		return nil, fmt.Errorf("embedded assets: no index.html")
	}
	js, err := bundle(Entry, src)
	if err != nil {
		return nil, fmt.Errorf("embedded assets: bundle: %w", err)
	}
	a := &assets{files: map[string]*asset{}, hashed: map[string]string{}}
	contents := map[string]string{"favicon.svg": src["favicon.svg"], "style.css": src["style.css"], Entry: js}
	for _, name := range served {
		body := a.rewrite(contents[name])
		sum := sha256.Sum256([]byte(body))
		ext := path.Ext(name)
		h := strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:])[:hashLen] + ext
		a.hashed[name] = h
		ct := contentType(name)
		a.files[h] = &asset{v: cache.MakeValue([]byte(body), true), contentType: ct, control: ImmutableCacheControl}
		a.files[name] = &asset{v: cache.MakeValue([]byte(body), false), contentType: ct, control: AssetCacheControl}
	}
	a.index = &asset{v: cache.MakeValue([]byte(a.rewrite(src["index.html"])), false), contentType: contentType("index.html"), control: PageCacheControl}
	return a, nil
}

// rewrite replaces each reference "/assets/NAME" to a served file already
// hashed by its hashed name.
func (a *assets) rewrite(s string) string {
	for plain, h := range a.hashed {
		s = strings.ReplaceAll(s, "/assets/"+plain, "/assets/"+h)
	}
	return s
}

// lookup finds the file served as name. A content-hashed name whose hash
// is not the current one (a page of another release, during a rolling
// deploy) gets the current file, marked to be asked for again, rather
// than a 404 that would break that page.
func (a *assets) lookup(name string) (*asset, bool) {
	if f, ok := a.files[name]; ok {
		return f, true
	}
	g := hashedName.FindStringSubmatch(name)
	if g == nil {
		return nil, false
	}
	f, ok := a.files[g[1]+"."+g[3]]
	if !ok {
		return nil, false
	}
	other := *f
	other.control = PageCacheControl
	return &other, true
}

// HashedName is the content-hashed name of a served file ("app.js" ->
// "app.<hash>.js"), "" for another name.
func (w *Web) HashedName(plain string) string { return w.assets.hashed[plain] }

func contentType(p string) string {
	switch path.Ext(p) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".html":
		return "text/html; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// send answers a GET or HEAD with the asset: 304 when If-None-Match names
// it, its gzip form when the client accepts gzip.
func (a *asset) send(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, a.control)
	c.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	etag, body := a.v.ETag, a.v.JSON
	gz := a.v.Gzip != nil && httpapi.AcceptsGzip(c)
	if gz {
		etag, body = a.v.GzipETag, a.v.Gzip
	}
	c.Response().Header.SetBytesV(fiber.HeaderETag, etag)
	if httpcache.NoneMatch(c.Request().Header.PeekAll(fiber.HeaderIfNoneMatch), etag) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, a.contentType)
	if gz {
		c.Set(fiber.HeaderContentEncoding, "gzip")
	}
	return c.Send(body)
}

// screenshotSources are the files that draw the home page, as the README's
// screenshot shows it.
var screenshotSources = []string{"index.html", "style.css", "home.js", "chart.js", "explorer.js", "util.js"}

// ScreenshotVersion names the version of the home page's look: a hash of
// the files that draw it. make screenshot stamps the README's picture with
// it, and a test fails when the committed picture shows another version.
func ScreenshotVersion() (string, error) {
	h := sha256.New()
	for _, name := range screenshotSources {
		b, err := assetFS.ReadFile("assets/" + name)
		if err != nil {
			return "", fmt.Errorf("screenshot version: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
