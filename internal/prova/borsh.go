package prova

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrShort is returned when data ends before a field.
var ErrShort = errors.New("data too short")

// reader decodes borsh fields from a byte slice without panicking.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b)-r.off < n {
		r.err = fmt.Errorf("%s at offset %d: %w", what, r.off, ErrShort)
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *reader) bytes32(dst *[32]byte, what string) {
	if p := r.take(32, what); p != nil {
		copy(dst[:], p)
	}
}

func (r *reader) bytes64(dst *[64]byte, what string) {
	if p := r.take(64, what); p != nil {
		copy(dst[:], p)
	}
}

func (r *reader) u8(what string) uint8 {
	if p := r.take(1, what); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) boolean(what string) bool {
	v := r.u8(what)
	if r.err == nil && v > 1 {
		r.err = fmt.Errorf("%s at offset %d: invalid bool %d", what, r.off-1, v)
	}
	return v == 1
}

func (r *reader) u32(what string) uint32 {
	if p := r.take(4, what); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (r *reader) u64(what string) uint64 {
	if p := r.take(8, what); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (r *reader) i64(what string) int64 { return int64(r.u64(what)) }

// done checks the whole input was consumed.
func (r *reader) done() error {
	if r.err != nil {
		return r.err
	}
	if r.off != len(r.b) {
		return fmt.Errorf("%d trailing bytes", len(r.b)-r.off)
	}
	return nil
}

// disc checks the 8-byte discriminator.
func (r *reader) disc(want Discriminator, what string) {
	p := r.take(8, what+" discriminator")
	if p != nil && Discriminator(p) != want {
		r.err = fmt.Errorf("%s: discriminator %v, want %v", what, p, want)
	}
}

// writer appends borsh fields.
type writer struct{ b []byte }

func (w *writer) raw(p []byte) { w.b = append(w.b, p...) }
func (w *writer) u8(v uint8)   { w.b = append(w.b, v) }
func (w *writer) u32(v uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, v) }
func (w *writer) u64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }
func (w *writer) i64(v int64)  { w.u64(uint64(v)) }
func (w *writer) boolean(v bool) {
	if v {
		w.u8(1)
	} else {
		w.u8(0)
	}
}
