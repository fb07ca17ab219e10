package logformat

import (
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

func TestParseTilePath(t *testing.T) {
	good := map[string]Tile{
		"0/000":                 {0, 0, 256},
		"0/001":                 {0, 1, 256},
		"0/999":                 {0, 999, 256},
		"0/x001/000":            {0, 1000, 256},
		"1/x001/x234/067":       {1, 1234067, 256},
		"0/000.p/1":             {0, 0, 1},
		"2/x001/234.p/255":      {2, 1234, 255},
		"entries/000":           {-1, 0, 256},
		"entries/x123/456.p/78": {-1, 123456, 78},
		"7/000":                 {7, 0, 256},
	}
	for p, want := range good {
		got, err := ParseTilePath(p)
		if err != nil || got != want {
			t.Errorf("ParseTilePath(%q) = %+v, %v; want %+v", p, got, err, want)
			continue
		}
		if got.Path() != p {
			t.Errorf("Path of %q is %q", p, got.Path())
		}
	}
	for _, p := range []string{
		"", "0", "0/", "/000", "0/00", "0/0000", "0/1", "00/000", "01/000", "8/000", "-1/000", "+0/000",
		"0/x000/001",   // not canonical: 1 is 001
		"0/001/002",    // groups but the last need x
		"0/x001",       // the last group has no x
		"0/000.p/0",    // width 0
		"0/000.p/256",  // a full tile is named without .p
		"0/000.p/010",  // leading zero
		"0/000.p/",     // no width
		"0/000.p",      // no width
		"0/000.p/1/2",  // trailing
		"0/x001/.p/5",  // empty group
		"entries/000/", // trailing slash
		"entry/000", "data/000", "0/abc", "0/00a", "0/0 1",
		"0/x001/x002/x003/x004/x005/x006/007", // beyond 2^55
		"0/x036/x028/x797/x018/x963/968",      // 36028797018963968 = 2^55
		"0/000.p/1.p/1", "0//000", "0/000?x", "0/٠٠٠",
		strings.Repeat("0/", 40) + "000",
	} {
		if tl, err := ParseTilePath(p); err == nil {
			t.Errorf("ParseTilePath(%q) = %+v, want an error", p, tl)
		}
	}
}

// FuzzParseTilePath: the parser never panics, accepts only canonical
// spellings (one path per tile: the cache key is injective), and agrees
// with golang.org/x/mod's tile paths (which add the height).
func FuzzParseTilePath(f *testing.F) {
	for _, s := range []string{"0/000", "1/x001/x234/067", "0/000.p/1", "entries/x123/456.p/78", "0/x000/001", "0/000.p/256",
		"7/x036/x028/x797/x018/x963/967"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		tl, err := ParseTilePath(p)
		if err != nil {
			return
		}
		if tl.Path() != p {
			t.Fatalf("%q parses to %+v, whose path is %q", p, tl, tl.Path())
		}
		if tl.W < 1 || tl.W > TileWidth || tl.N < 0 || tl.N >= MaxN || tl.Level < -1 || tl.Level > MaxLevel {
			t.Fatalf("%q parses out of range: %+v", p, tl)
		}
		if tl.Level >= 0 {
			// x/mod spells the same tile as tile/H/<L>/<N>[.p/<W>].
			mod := tlog.Tile{H: TileHeight, L: tl.Level, N: tl.N, W: tl.W}.Path()
			if want := "tile/8/" + p; mod != want {
				t.Fatalf("x/mod spells %+v %q, we %q", tl, mod, want)
			}
		}
		_ = tl.Within(1 << 62)
	})
}

func TestTileWithin(t *testing.T) {
	for _, c := range []struct {
		t    Tile
		size int64
		want bool
	}{
		{Tile{0, 0, 256}, 255, false},
		{Tile{0, 0, 256}, 256, true},
		{Tile{0, 0, 255}, 255, true},
		{Tile{0, 1, 1}, 256, false},
		{Tile{0, 1, 1}, 257, true},
		{Tile{1, 0, 1}, 255, false},
		{Tile{1, 0, 1}, 256, true},
		{Tile{1, 0, 256}, 65535, false},
		{Tile{1, 0, 256}, 65536, true},
		{Tile{2, 0, 1}, 65536, true},
		{Tile{2, 0, 2}, 65536, false},
		{Tile{-1, 0, 3}, 3, true},
		{Tile{-1, 0, 4}, 3, false},
		{Tile{-1, 1<<54 - 1, 256}, 1 << 62, true},
		{Tile{7, 0, 1}, 1<<56 - 1, false},
		{Tile{7, 0, 1}, 1 << 56, true},
		{Tile{0, MaxN - 1, 256}, 1<<62 - 1, false},
	} {
		if got := c.t.Within(c.size); got != c.want {
			t.Errorf("%+v.Within(%d) = %v", c.t, c.size, got)
		}
	}
}
