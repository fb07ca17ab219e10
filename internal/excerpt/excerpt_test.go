package excerpt

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestOf(t *testing.T) {
	for _, c := range []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"short", "abc", 5, "abc"},
		{"exactly n", "abcde", 5, "abcde"},
		{"cut", "abcdef", 5, "abcde..."},
		{"empty", "", 3, ""},
		{"n zero", "abc", 0, "..."},
		{"n negative", "abc", -1, "..."},
		{"never inside a character", "ab€cd", 4, "ab..."}, // € is 3 bytes: 2..4
		{"on a boundary", "ab€cd", 5, "ab€..."},
		{"invalid kept", "a\xffb", 5, "a?b"},
		{"invalid cut", "a\xffbcdef", 3, "a?b..."},
		{"one wide character over n", "€€", 2, "?..."},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Of(c.s, c.n)
			if got != c.want {
				t.Errorf("Of(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("Of(%q, %d) = %q: not valid UTF-8", c.s, c.n, got)
			}
		})
	}
}

func FuzzOf(f *testing.F) {
	for _, s := range []string{"", "abc", "ab€cd", "a\xffb", strings.Repeat("é", 40)} {
		f.Add(s, 7)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = n % 1000
		got := Of(s, n)
		if !utf8.ValidString(got) {
			t.Fatalf("Of(%q, %d) = %q: not valid UTF-8", s, n, got)
		}
		if limit := max(n, 0) + len("..."); len(s) > max(n, 0) && len(got) > limit {
			t.Fatalf("Of(%q, %d) = %q: %d bytes, over %d", s, n, got, len(got), limit)
		}
		if len(s) <= max(n, 0) && got != strings.ToValidUTF8(s, "?") {
			t.Fatalf("Of(%q, %d) = %q changed a value that fits", s, n, got)
		}
	})
}
