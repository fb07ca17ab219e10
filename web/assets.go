package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"strings"

	"github.com/attestd/attestd/internal/httpcache"
	"github.com/gofiber/fiber/v2"
)

//go:embed assets
var assetFS embed.FS

// asset is one embedded file, ready to send: its bytes, their gzip form
// (nil when it does not pay) and a strong ETag of the content.
type asset struct {
	body, gz    []byte
	contentType string
	etag        string
}

// loadAssets reads every embedded file once, at start.
func loadAssets() (map[string]*asset, error) {
	out := map[string]*asset{}
	err := fs.WalkDir(assetFS, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assetFS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		a := &asset{body: b, contentType: contentType(p), etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
		if len(b) > 512 {
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
			_, _ = zw.Write(b)
			if err := zw.Close(); err != nil {
				return fmt.Errorf("gzip %s: %w", p, err)
			}
			if buf.Len() < len(b) {
				a.gz = buf.Bytes()
			}
		}
		out[strings.TrimPrefix(p, "assets/")] = a
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("embedded assets: %w", err)
	}
	if out["index.html"] == nil {
		return nil, fmt.Errorf("embedded assets: no index.html")
	}
	return out, nil
}

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

// AssetCacheControl is what browsers and shared caches may do with a page
// or asset: keep it, but ask again (a 304 when its ETag is unchanged)
// after a minute, so a release reaches everyone within a minute.
const AssetCacheControl = "public, max-age=60, s-maxage=60"

// send answers a GET or HEAD with the asset: 304 when If-None-Match names
// it, its gzip form when the client accepts gzip.
func (a *asset) send(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, AssetCacheControl)
	c.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	etag := a.etag
	body := a.body
	gz := a.gz != nil && acceptsGzip(c)
	if gz {
		etag = strings.TrimSuffix(a.etag, `"`) + `-gz"`
		body = a.gz
	}
	c.Set(fiber.HeaderETag, etag)
	if httpcache.NoneMatch(c.Request().Header.PeekAll(fiber.HeaderIfNoneMatch), []byte(etag)) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, a.contentType)
	if gz {
		c.Set(fiber.HeaderContentEncoding, "gzip")
	}
	return c.Send(body)
}

// acceptsGzip reports whether Accept-Encoding lists gzip (or x-gzip) with
// a non-zero weight.
func acceptsGzip(c *fiber.Ctx) bool {
	for _, part := range strings.Split(c.Get(fiber.HeaderAcceptEncoding), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if n := strings.TrimSpace(name); strings.EqualFold(n, "gzip") || strings.EqualFold(n, "x-gzip") {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
