package translog

import (
	"errors"
	"strconv"
	"strings"
)

// TileHeight is the tiles' height: 8 levels, 256 hashes (or entries) in a
// full tile, as C2SP tlog-tiles fixes it.
const TileHeight = 8

// TileWidth is the number of hashes (or entries) of a full tile.
const TileWidth = 1 << TileHeight

// Tile names one tile of C2SP tlog-tiles: a level of hashes, or the
// entries (Level -1), its index N and its width W (TileWidth: full).
type Tile struct {
	Level int // 0..maxLevel, or -1 for an entry bundle
	N     int64
	W     int // 1..TileWidth
}

// maxLevel is the highest tile level served: level 7 starts at 2^56
// leaves, far beyond any tree here.
const maxLevel = 7

// maxN bounds a tile index: 2^63 / 256.
const maxN = int64(1) << 55

var errTilePath = errors.New("not a tile path: want <L>/<N>[.p/<W>] or entries/<N>[.p/<W>] (C2SP tlog-tiles)")

// ParseTilePath parses the part of a tile's path after "tile/": <L>/<N>
// or entries/<N>, each optionally followed by .p/<W>. N is written in
// groups of three digits, all but the last prefixed with x
// (x001/x234/067). Only the canonical spelling of a tile is accepted, so
// each tile has exactly one path: Path(ParseTilePath(p)) == p.
func ParseTilePath(p string) (Tile, error) {
	if len(p) > 64 {
		return Tile{}, errTilePath
	}
	parts := strings.Split(p, "/")
	if len(parts) < 2 {
		return Tile{}, errTilePath
	}
	var t Tile
	if parts[0] == "entries" {
		t.Level = -1
	} else {
		l, ok := decimal(parts[0], maxLevel)
		if !ok {
			return Tile{}, errTilePath
		}
		t.Level = int(l)
	}
	groups := parts[1:]
	t.W = TileWidth
	if n := len(groups); n >= 2 && strings.HasSuffix(groups[n-2], ".p") {
		w, ok := decimal(groups[n-1], TileWidth-1)
		if !ok || w == 0 {
			return Tile{}, errTilePath
		}
		t.W = int(w)
		groups = groups[:n-1]
		groups[n-2] = strings.TrimSuffix(groups[n-2], ".p")
	}
	if len(groups) > 6 {
		return Tile{}, errTilePath
	}
	for i, g := range groups {
		last := i == len(groups)-1
		if !last {
			if !strings.HasPrefix(g, "x") {
				return Tile{}, errTilePath
			}
			g = g[1:]
		}
		if len(g) != 3 || !allDigits(g) || (i == 0 && len(groups) > 1 && g == "000") {
			return Tile{}, errTilePath
		}
		d, _ := strconv.Atoi(g)
		if t.N > (maxN-1-int64(d))/1000 {
			return Tile{}, errTilePath
		}
		t.N = t.N*1000 + int64(d)
	}
	return t, nil
}

// Path is the tile's path after "tile/", as ParseTilePath reads it.
func (t Tile) Path() string {
	var b strings.Builder
	if t.Level < 0 {
		b.WriteString("entries/")
	} else {
		b.WriteString(strconv.Itoa(t.Level))
		b.WriteByte('/')
	}
	n := strconv.FormatInt(t.N, 10)
	for len(n)%3 != 0 {
		n = "0" + n
	}
	for i := 0; i < len(n); i += 3 {
		if i+3 < len(n) {
			b.WriteByte('x')
		}
		b.WriteString(n[i : i+3])
		if i+3 < len(n) {
			b.WriteByte('/')
		}
	}
	if t.W != TileWidth {
		b.WriteString(".p/")
		b.WriteString(strconv.Itoa(t.W))
	}
	return b.String()
}

// decimal parses a decimal without sign or leading zeros, at most max.
func decimal(s string, max int64) (int64, bool) {
	if s == "" || len(s) > 19 || !allDigits(s) || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v > max {
		return 0, false
	}
	return v, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
