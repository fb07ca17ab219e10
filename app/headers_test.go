package app

import (
	"bytes"
	"testing"

	"github.com/valyala/fasthttp"
)

func TestHeaderNamesAreCanonical(t *testing.T) {
	for _, name := range [][]byte{headerCacheControl, headerVary, headerETag, headerRequestID} {
		if want := fasthttp.AppendNormalizedHeaderKey(nil, string(name)); !bytes.Equal(name, want) {
			t.Errorf("%q is not canonical: fasthttp keeps it as %q", name, want)
		}
	}
	if !bytes.EqualFold(headerRequestID, []byte(requestIDHeader)) {
		t.Errorf("headerRequestID %q names another header than %q", headerRequestID, requestIDHeader)
	}
}
