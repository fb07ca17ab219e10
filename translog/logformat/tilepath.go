package logformat

import (
	"encoding/binary"
	"errors"
	"fmt"
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
	Level int // 0..MaxLevel, or -1 for an entry bundle
	N     int64
	W     int // 1..TileWidth
}

// MaxLevel is the highest tile level served: level 7 starts at 2^56
// leaves, far beyond any tree here.
const MaxLevel = 7

// MaxN bounds a tile index: 2^63 / 256.
const MaxN = int64(1) << 55

// ErrTilePath is the error of a path that names no tile.
var ErrTilePath = errors.New("not a tile path: want <L>/<N>[.p/<W>] or entries/<N>[.p/<W>] (C2SP tlog-tiles)")

// ParseTilePath parses the part of a tile's path after "tile/": <L>/<N>
// or entries/<N>, each optionally followed by .p/<W>. N is written in
// groups of three digits, all but the last prefixed with x
// (x001/x234/067). Only the canonical spelling of a tile is accepted, so
// each tile has exactly one path: Path(ParseTilePath(p)) == p.
func ParseTilePath(p string) (Tile, error) {
	if len(p) > 64 {
		return Tile{}, ErrTilePath
	}
	parts := strings.Split(p, "/")
	if len(parts) < 2 {
		return Tile{}, ErrTilePath
	}
	var t Tile
	if parts[0] == "entries" {
		t.Level = -1
	} else {
		l, ok := Decimal(parts[0], MaxLevel)
		if !ok {
			return Tile{}, ErrTilePath
		}
		t.Level = int(l)
	}
	groups := parts[1:]
	t.W = TileWidth
	if n := len(groups); n >= 2 && strings.HasSuffix(groups[n-2], ".p") {
		w, ok := Decimal(groups[n-1], TileWidth-1)
		if !ok || w == 0 {
			return Tile{}, ErrTilePath
		}
		t.W = int(w)
		groups = groups[:n-1]
		groups[n-2] = strings.TrimSuffix(groups[n-2], ".p")
	}
	if len(groups) > 6 {
		return Tile{}, ErrTilePath
	}
	for i, g := range groups {
		last := i == len(groups)-1
		if !last {
			if !strings.HasPrefix(g, "x") {
				return Tile{}, ErrTilePath
			}
			g = g[1:]
		}
		if len(g) != 3 || !allDigits(g) || (i == 0 && len(groups) > 1 && g == "000") {
			return Tile{}, ErrTilePath
		}
		d, _ := strconv.Atoi(g)
		if t.N > (MaxN-1-int64(d))/1000 {
			return Tile{}, ErrTilePath
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

// Decimal parses a decimal without sign or leading zeros, at most max
// (tile levels and widths, tree sizes).
func Decimal(s string, max int64) (int64, bool) {
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

// Within reports whether the tree of the given size holds all of t.
func (t Tile) Within(size int64) bool {
	if t.Level < 0 {
		return t.N <= size/TileWidth && t.N*TileWidth+int64(t.W) <= size
	}
	shift := uint(TileHeight * t.Level)
	if shift >= 63 {
		return false
	}
	hashes := size >> shift // hashes at the tile's level
	return t.N <= hashes/TileWidth && t.N*TileWidth+int64(t.W) <= hashes
}

// EntryBundle encodes leaves as a C2SP tlog-tiles entry bundle: each
// leaf as a big-endian uint16 length and its bytes.
func EntryBundle(leaves [][]byte) ([]byte, error) {
	n := 0
	for _, l := range leaves {
		if len(l) > 0xffff {
			return nil, fmt.Errorf("leaf of %d bytes does not fit an entry bundle", len(l))
		}
		n += 2 + len(l)
	}
	out := make([]byte, 0, n)
	for _, l := range leaves {
		out = binary.BigEndian.AppendUint16(out, uint16(len(l)))
		out = append(out, l...)
	}
	return out, nil
}

// ParseEntryBundle splits an entry bundle into its leaves (sharing b).
func ParseEntryBundle(b []byte) ([][]byte, error) {
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 2 {
			return nil, errors.New("entry bundle: a truncated length")
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+n {
			return nil, fmt.Errorf("entry bundle: a leaf of %d bytes with %d left", n, len(b)-2)
		}
		out = append(out, b[2:2+n])
		b = b[2+n:]
	}
	return out, nil
}
