package app

import (
	"strings"
	"testing"
)

func TestFramingMessage(t *testing.T) {
	for _, tc := range []struct {
		headers string
		http10  bool // the request line said HTTP/1.0
		want    string
	}{
		{headers: "Host: x\r\nContent-Length: 2\r\n\r\n"},
		{headers: "Host: x\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{headers: "", http10: true},
		{headers: "\r\n", http10: true},
		{headers: "Host: x\r\nX-Host: y\r\nContent-Lengths: 1\r\nX-Content-Length: 1\r\nContent-Length: 1\r\n\r\n"},
		{headers: "Host: x\r\nContent-Length: 2\r\nCONTENT-LENGTH: 2\r\n\r\n", want: "Content-Length"},
		{headers: "Host: x\nContent-Length: 2\ncontent-length: 3\n\n", want: "Content-Length"},
		{headers: "Host: x\r\nhOST: y\r\n\r\n", want: "Host"},
		{headers: "Host: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n", want: "Transfer-Encoding"},
		{headers: "Host: x\r\nContent-Length: 2\r\ntransfer-encoding: identity\r\n\r\n", want: "Transfer-Encoding"},
		// A coding other than chunked alone, or the header twice: fasthttp
		// reads all of them as chunked, a proxy in front may not.
		{headers: "Host: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n", want: "Transfer-Encoding"},
		{headers: "Host: x\r\nTransfer-Encoding: IDENTITY\r\n\r\n", want: "Transfer-Encoding"},
		{headers: "Host: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", want: "Transfer-Encoding"},
		{headers: "Host: x\r\nTransfer-Encoding: Chunked \r\n\r\n"},
		// Host: required of HTTP/1.1 only; an empty one is a Host.
		{headers: "Content-Length: 0\r\n\r\n", want: "Host"},
		{headers: "\r\n", want: "Host"},
		{headers: "", want: "Host"},
		{headers: "X-Host: x\r\n\r\n", want: "Host"},
		{headers: "Content-Length: 0\r\n\r\n", http10: true},
		{headers: "Host:\r\n\r\n"},
		// NUL anywhere, CR anywhere but before a line's LF.
		{headers: "Host: x\r\nX-A: a\x00b\r\n\r\n", want: "NUL"},
		{headers: "Host: x\r\nX\x00A: a\r\n\r\n", want: "NUL"},
		{headers: "Host: x\x00\r\n\r\n", http10: true, want: "NUL"},
		{headers: "Host: x\r\nX-A: a\rb\r\n\r\n", want: "CR"},
		{headers: "Host: x\r\nX-A: a\r\r\n\r\n", want: "CR"},
		{headers: "Host: x\r\nX-A: a\r\n\r\r\n", want: "CR"},
		{headers: "Host: x\rX-A: a\r\n\r\n", want: "CR"},
		{headers: "Host: x\r\n\r", want: "CR"},
		{headers: "Host: x\r\nX-A: \r\n\r\n"},
		{headers: "Host: x\r\nX-A: a\nX-B: b\r\n\n"}, // bare LF ends a line (RFC 9112 section 2.2)
		// Obsolete line folding.
		{headers: "Host: x\r\nX-A: a\r\n b\r\n\r\n", want: "folding"},
		{headers: "Host: x\r\nX-A: a\r\n\tb\r\n\r\n", want: "folding"},
		{headers: " Host: x\r\n\r\n", want: "folding"},
		{headers: "Host: x\r\n)X: a\r\n\r\n"}, // ')' shares the folding branch, not its verdict
		// Unicode and other bytes are the handlers' business.
		{headers: "Host: x\r\nX-A: é\xff\x01\x7f\r\n\r\n"},
	} {
		got := framingMessage([]byte(tc.headers), !tc.http10)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%q (HTTP/1.0 %v): %q, want one naming %q", tc.headers, tc.http10, got, tc.want)
		}
	}
}

// benchHeaders is a browser-sized header block.
var benchHeaders = []byte("Host: api.example.com\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/120.0\r\n" +
	"Accept: application/json\r\nAccept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate, br\r\n" +
	"If-None-Match: \"0123456789abcdef\"\r\nConnection: keep-alive\r\nX-Request-ID: abc\r\n\r\n")

func TestFramingMessageAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = framingMessage(benchHeaders, true) }); n != 0 {
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
				if framingMessage(bc.headers, true) != "" {
					b.Fatal("refused")
				}
			}
		})
	}
}

// framingReference is framingMessage written plainly (lines split and
// read one by one, no shortcuts), for FuzzFramingMessage to compare with:
// the category of its verdict, or "".
func framingReference(raw []byte, http11 bool) string {
	s := string(raw)
	if strings.ContainsRune(s, 0) {
		return "NUL"
	}
	lines := strings.Split(s, "\n")
	var hosts, lengths, codings int
	other, folded := false, false
	for i, line := range lines {
		if i < len(lines)-1 { // ended by LF: one CR before it is its end
			line = strings.TrimSuffix(line, "\r")
		}
		if strings.Contains(line, "\r") {
			return "CR"
		}
		if line == "" {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			folded = true
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(name) {
		case "host":
			hosts++
		case "content-length":
			lengths++
		case "transfer-encoding":
			codings++
			if !strings.EqualFold(strings.Trim(value, " \t"), "chunked") {
				other = true
			}
		}
	}
	switch {
	case folded:
		return "folding"
	case lengths > 1:
		return "more than one Content-Length"
	case lengths > 0 && codings > 0:
		return "both Content-Length and Transfer-Encoding"
	case codings > 1 || other:
		return "not exactly chunked"
	case hosts > 1:
		return "more than one Host"
	case hosts == 0 && http11:
		return "needs a Host"
	}
	return ""
}

// FuzzFramingMessage: framingMessage never panics, and refuses exactly
// what the plain reference refuses, for the same reason.
func FuzzFramingMessage(f *testing.F) {
	for _, s := range []string{
		"Host: x\r\nContent-Length: 2\r\n\r\n", "Host: x\r\nContent-Length: 2\r\ncontent-length: 3\r\n\r\n",
		"Host: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n", "Host: x\r\nX-A: a\x00\r\n\r\n",
		"Host: x\r\nX-A: a\rb\r\n\r\n", "Host: x\r\nX-A: a\r\n b\r\n\r\n", "Accept: */*\r\n\r\n", "Host: x\r\n\r",
		"Host: x\nTransfer-Encoding: chunked, identity\n\n", string(benchHeaders),
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, raw []byte, http11 bool) {
		got, want := framingMessage(raw, http11), framingReference(raw, http11)
		if (got == "") != (want == "") || !strings.Contains(got, want) {
			t.Fatalf("%q (HTTP/1.1 %v): %q, the reference says %q", raw, http11, got, want)
		}
	})
}
