package web

import (
	"embed"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"strings"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/gofiber/fiber/v2"
)

//go:embed assets
var assetFS embed.FS

// asset is one embedded file, ready to send: its bytes with their gzip
// form and the strong tags of both, made as the cache makes them
// (cache.MakeValue), and its content type.
type asset struct {
	v           cache.Value
	contentType string
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
		out[strings.TrimPrefix(p, "assets/")] = &asset{v: cache.MakeValue(b, false), contentType: contentType(p)}
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
	etag, body := a.v.ETag, a.v.JSON
	gz := a.v.Gzip != nil && app.AcceptsGzip(c)
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
