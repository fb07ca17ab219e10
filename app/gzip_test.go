package app_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"testing"
)

func TestGzipWhenAccepted(t *testing.T) {
	t.Parallel()
	_, node := seeded(t)
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	get := func(enc string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", node.URL+"/attestations?limit=50", nil)
		if enc != "" {
			req.Header.Set("Accept-Encoding", enc)
		}
		res, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	plainRes, plain := get("")
	if plainRes.Header.Get("Content-Encoding") != "" || plainRes.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("plain answer headers %v", plainRes.Header)
	}
	for range 2 { // the load, then the cached value
		zres, zb := get("gzip, deflate")
		if zres.Header.Get("Content-Encoding") != "gzip" || len(zb) >= len(plain)/2 {
			t.Fatalf("gzip answer: encoding %q, %d bytes for %d plain", zres.Header.Get("Content-Encoding"), len(zb), len(plain))
		}
		zr, err := gzip.NewReader(bytes.NewReader(zb))
		if err != nil {
			t.Fatal(err)
		}
		un, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(un, plain) {
			t.Fatalf("decompressed answer differs from the plain one: %v", err)
		}
	}
	if res, _ := get("gzip;q=0"); res.Header.Get("Content-Encoding") != "" {
		t.Fatal("gzip sent to a client that refused it")
	}
}
