package app

import (
	"strings"
	"testing"
)

func TestFramingMessage(t *testing.T) {
	for _, tc := range []struct{ headers, want string }{
		{"Host: x\r\nContent-Length: 2\r\n\r\n", ""},
		{"Host: x\r\nTransfer-Encoding: chunked\r\n\r\n", ""},
		{"", ""},
		{"Host: x\r\nX-Host: y\r\nContent-Lengths: 1\r\nX-Content-Length: 1\r\nContent-Length: 1\r\n\r\n", ""},
		{"Host: x\r\nContent-Length: 2\r\nCONTENT-LENGTH: 2\r\n\r\n", "Content-Length"},
		{"Host: x\nContent-Length: 2\ncontent-length: 3\n\n", "Content-Length"},
		{"Host: x\r\nhOST: y\r\n\r\n", "Host"},
		{"Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n", "Transfer-Encoding"},
		{"Content-Length: 2\r\ntransfer-encoding: identity\r\n\r\n", "Transfer-Encoding"},
		// A coding other than chunked alone, or the header twice: fasthttp
		// reads all of them as chunked, a proxy in front may not.
		{"Transfer-Encoding: chunked, identity\r\n\r\n", "Transfer-Encoding"},
		{"Transfer-Encoding: IDENTITY\r\n\r\n", "Transfer-Encoding"},
		{"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", "Transfer-Encoding"},
		{"Transfer-Encoding: Chunked \r\n\r\n", ""},
	} {
		got := framingMessage([]byte(tc.headers))
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%q: %q, want one naming %q", tc.headers, got, tc.want)
		}
	}
}

// benchHeaders is a browser-sized header block.
var benchHeaders = []byte("Host: api.example.com\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/120.0\r\n" +
	"Accept: application/json\r\nAccept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate, br\r\n" +
	"If-None-Match: \"0123456789abcdef\"\r\nConnection: keep-alive\r\nX-Request-ID: abc\r\n\r\n")

func TestFramingMessageAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = framingMessage(benchHeaders) }); n != 0 {
		t.Errorf("%.0f allocations", n)
	}
}

// BenchmarkFramingMessage: the check's cost per request, for a browser's
// header block and for BenchmarkServe's conditional GET.
func BenchmarkFramingMessage(b *testing.B) {
	for _, bc := range []struct {
		name    string
		headers []byte
	}{
		{"browser", benchHeaders},
		{"conditional-get", []byte("Host: 127.0.0.1\r\nUser-Agent: wrk\r\nIf-None-Match: \"0123456789abcdef\"\r\nAccept-Encoding: gzip\r\n\r\n")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if framingMessage(bc.headers) != "" {
					b.Fatal("refused")
				}
			}
		})
	}
}
