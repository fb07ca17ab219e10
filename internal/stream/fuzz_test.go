package stream

import (
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/httpapi"
)

// FuzzParseCursor: any Last-Event-ID or after value is a cursor or a
// refusal, never a panic; an accepted one names a valid address and
// encodes back to a cursor that parses to the same position.
func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "MTcwMDAwMDAwMC41LjExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTI", "***",
		strings.Repeat("A", 300), "LTEuNS5h", "MS45OTk5OTk5OTk5OTk5OTk5OTk5OS4x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCursor(s)
		if err != nil {
			if len(s) <= MaxCursorLen {
				if _, ok := apierror.As(err); !ok {
					t.Fatalf("%q: refused without the envelope: %v", s, err)
				}
			}
			return
		}
		if len(s) > MaxCursorLen {
			t.Fatalf("%q: accepted over the bound", s)
		}
		again, err := ParseCursor(httpapi.EncodeCursor(c))
		if err != nil || *again != *c {
			t.Fatalf("%q: %+v does not survive encoding: %+v %v", s, c, again, err)
		}
	})
}

// FuzzAppendData: whatever the data, a frame's data lines never carry a
// line break, and the frame ends the event.
func FuzzAppendData(f *testing.F) {
	for _, s := range []string{"", "{}", "a\nb", "a\r\nb\rc", "\n\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := string(appendData(nil, []byte(s)))
		if !strings.HasSuffix(out, "\n\n") {
			t.Fatalf("%q: frame %q does not end the event", s, out)
		}
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n\n"), "\n") {
			if !strings.HasPrefix(line, "data: ") || strings.ContainsRune(line, '\r') {
				t.Fatalf("%q: line %q of frame %q", s, line, out)
			}
		}
	})
}
