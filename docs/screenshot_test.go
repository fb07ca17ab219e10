package docs

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/attestd/attestd/internal/web"
)

// TestREADMEScreenshotIsCurrent: the README's picture of the home page
// shows the current look. make screenshot stamps the picture with the
// version of the files that draw the page (web.ScreenshotVersion); when
// one of them changes, this test names the command that takes it again.
func TestREADMEScreenshotIsCurrent(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "img", "explorer.png"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := web.ScreenshotVersion()
	if err != nil {
		t.Fatal(err)
	}
	got := pngText(b, "attestd-look")
	if got != want {
		t.Errorf("docs/img/explorer.png shows the home page's look %q, the files draw %q now: run make screenshot and commit the picture", got, want)
	}
}

// pngText is the text of a PNG's tEXt chunk with keyword key ("" when none).
func pngText(b []byte, key string) string {
	if len(b) < 8 || string(b[:8]) != "\x89PNG\r\n\x1a\n" {
		return ""
	}
	for p := 8; p+12 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[p : p+4]))
		if n < 0 || p+12+n > len(b) {
			return ""
		}
		if typ, data := string(b[p+4:p+8]), b[p+8:p+8+n]; typ == "tEXt" {
			if k, v, ok := bytes.Cut(data, []byte{0}); ok && string(k) == key {
				return string(v)
			}
		}
		p += 12 + n
	}
	return ""
}
