package httpapi

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gofiber/fiber/v2"
)

func zl(b []byte) []byte {
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

func rawDeflate(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestCompression)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

// bodyApp answers the decoded body, or the error's status and code.
func bodyApp(limit int) *fiber.App {
	a := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error {
		if e, ok := apierror.As(err); ok {
			return c.Status(e.Status).SendString(e.Code)
		}
		return c.Status(500).SendString(err.Error())
	}})
	a.Post("/", func(c *fiber.Ctx) error {
		b, err := Body(c, limit)
		if err != nil {
			return err
		}
		return c.Send(b)
	})
	return a
}

func post(t *testing.T, a *fiber.App, body []byte, encodings ...string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	for _, e := range encodings {
		req.Header.Add("Content-Encoding", e)
	}
	res, err := a.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestBodyDecodesOneBoundedLayer(t *testing.T) {
	a := bodyApp(1024)
	msg := []byte(`{"ids":["a","b"]}`)
	bomb := testenv.Gzip(make([]byte, 64<<20)) // 64 MiB of zeros in ~64 KB
	for _, tc := range []struct {
		name      string
		body      []byte
		encodings []string
		status    int
		want      string
	}{
		{"plain", msg, nil, 200, string(msg)},
		{"identity", msg, []string{"identity"}, 200, string(msg)},
		{"gzip", testenv.Gzip(msg), []string{"gzip"}, 200, string(msg)},
		{"x-gzip upper case", testenv.Gzip(msg), []string{"X-GZIP"}, 200, string(msg)},
		{"deflate (zlib)", zl(msg), []string{"deflate"}, 200, string(msg)},
		{"deflate (raw)", rawDeflate(msg), []string{"deflate"}, 200, string(msg)},
		{"identity then gzip", testenv.Gzip(msg), []string{"identity, gzip"}, 200, string(msg)},
		{"two layers in one line", testenv.Gzip(testenv.Gzip(msg)), []string{"gzip, gzip"}, 415, apierror.CodeUnsupportedMedia},
		{"two layers in two lines", testenv.Gzip(testenv.Gzip(msg)), []string{"gzip", "gzip"}, 415, apierror.CodeUnsupportedMedia},
		{"brotli", msg, []string{"br"}, 415, apierror.CodeUnsupportedMedia},
		{"zstd", msg, []string{"zstd"}, 415, apierror.CodeUnsupportedMedia},
		{"unknown", msg, []string{"snappy"}, 415, apierror.CodeUnsupportedMedia},
		{"huge header", msg, []string{strings.Repeat("identity,", 100)}, 415, apierror.CodeUnsupportedMedia},
		{"not gzip", msg, []string{"gzip"}, 400, apierror.CodeInvalidParam},
		{"truncated gzip", testenv.Gzip(msg)[:10], []string{"gzip"}, 400, apierror.CodeInvalidParam},
		{"plain over the limit", make([]byte, 1025), nil, 413, apierror.CodePayloadTooLarge},
		{"plain at the limit", bytes.Repeat([]byte{'x'}, 1024), nil, 200, strings.Repeat("x", 1024)},
		{"gzip decoding past the limit", testenv.Gzip(make([]byte, 1025)), []string{"gzip"}, 413, apierror.CodePayloadTooLarge},
		{"gzip bomb", bomb[:min(len(bomb), 1024)], []string{"gzip"}, 413, apierror.CodePayloadTooLarge},
	} {
		status, got := post(t, a, tc.body, tc.encodings...)
		if status != tc.status || (tc.want != "" && got != tc.want) {
			t.Errorf("%s: %d %.60q, want %d %.60q", tc.name, status, got, tc.status, tc.want)
		}
	}
}

// TestBodyBombCostsNoMemory: a compressed body that expands a
// thousandfold is refused after reading just past the limit.
func TestBodyBombCostsNoMemory(t *testing.T) {
	const limit = 256 << 10
	a := bodyApp(limit)
	bomb := testenv.Gzip(make([]byte, 256<<20)) // 256 MiB of zeros, ~250 KB compressed
	if len(bomb) > limit {
		bomb = testenv.Gzip(make([]byte, 200<<20))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	status, _ := post(t, a, bomb, "gzip")
	runtime.ReadMemStats(&after)
	if status != 413 {
		t.Fatalf("bomb: %d", status)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Fatalf("refusing a %d-byte bomb allocated %d MB", len(bomb), alloc>>20)
	}
}

func FuzzBody(f *testing.F) {
	f.Add([]byte(`{"ids":[]}`), "")
	f.Add(testenv.Gzip([]byte(`{"ids":[]}`)), "gzip")
	f.Add(zl([]byte("x")), "deflate")
	f.Add(testenv.Gzip(testenv.Gzip([]byte("x"))), "gzip, gzip")
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}, "x-gzip")
	const limit = 4096
	a := bodyApp(limit)
	f.Fuzz(func(t *testing.T, body []byte, enc string) {
		if strings.ContainsAny(enc, "\r\n\x00") {
			return
		}
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.Header.Set("Content-Encoding", enc)
		res, err := a.Test(req, -1)
		if err != nil {
			return // not a request net/http will send
		}
		b, _ := io.ReadAll(res.Body)
		switch res.StatusCode {
		case 200:
			if len(b) > limit {
				t.Fatalf("answered %d decoded bytes over a limit of %d", len(b), limit)
			}
		case 400, 413, 415:
		default:
			t.Fatalf("status %d: %s", res.StatusCode, b)
		}
	})
}
