package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/excerpt"
)

// MaxDepth is the deepest nesting of objects and arrays a body may have
// (the bodies of this API nest three levels at most).
const MaxDepth = 32

// ErrSyntax is the cause of every error for a body that is not exactly one
// JSON value.
var ErrSyntax = errors.New("not one JSON value")

// DuplicateKeyError is a body with a key twice in one object. Keys are
// compared as encoding/json matches them to struct fields: after
// unescaping, with invalid UTF-8 read as U+FFFD, and without regard to
// case (Unicode simple folding), so "role", "Role" and "\u0072ole" are
// the same key.
type DuplicateKeyError struct {
	Key  string // as written the second time, unescaped
	Path string // where the object is: "" for the top level, else "filter", "ids[2]", ...
}

func (e *DuplicateKeyError) Error() string {
	if e.Path == "" {
		return "the key " + strconv.Quote(excerpt.Of(e.Key, 64)) + " appears twice"
	}
	return "the key " + strconv.Quote(excerpt.Of(e.Key, 64)) + " appears twice in " + excerpt.Of(e.Path, 64)
}

// TooDeepError is a body nested deeper than MaxDepth.
type TooDeepError struct{}

func (TooDeepError) Error() string {
	return fmt.Sprintf("objects and arrays nest deeper than %d levels", MaxDepth)
}

// Decode reads body, which must be exactly one JSON value (whitespace
// around it allowed), into v as json.Unmarshal would, after checking that
// no object in it has a key twice and that it nests at most MaxDepth
// levels. A struct v refuses members it has no field for. The errors are a
// *DuplicateKeyError, a TooDeepError, or one wrapping ErrSyntax or
// encoding/json's error for a value of the wrong type.
func Decode(body []byte, v any) error {
	if err := Check(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode body: %w", err)
	}
	return nil
}

// Check is Decode without the decoding: it refuses what Decode refuses
// before encoding/json sees the body.
func Check(body []byte) error {
	if !json.Valid(body) {
		return fmt.Errorf("check body: %w", ErrSyntax)
	}
	w := walker{b: body}
	return w.value(0)
}

// Refusal is the API error for a failed Decode (or a decode that gave no
// value: err nil): the decoder's own words for a duplicate key or excess
// depth, which name what to change; otherwise a 400 with the caller's
// description of the body it expects.
func Refusal(err error, format string, args ...any) *apierror.Error {
	var dup *DuplicateKeyError
	var deep TooDeepError
	switch {
	case errors.As(err, &dup):
		return apierror.Invalid("the body is ambiguous: %s; send each key once", dup.Error())
	case errors.As(err, &deep):
		return apierror.Invalid("in the body, %s", deep.Error())
	}
	return apierror.Invalid(format, args...)
}

// walker walks a body json.Valid accepted, so it checks nothing of the
// syntax: it only finds the objects, their keys and the depth.
type walker struct {
	b []byte
	i int
}

func (w *walker) ws() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\r', '\n':
			w.i++
		default:
			return
		}
	}
}

// value walks the value at w.i, depth levels down.
func (w *walker) value(depth int) error {
	w.ws()
	switch w.b[w.i] {
	case '{':
		return w.object(depth + 1)
	case '[':
		return w.array(depth + 1)
	case '"':
		w.str()
	default: // a number, true, false or null: up to the next delimiter
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case ',', ']', '}', ' ', '\t', '\r', '\n':
				return nil
			}
			w.i++
		}
	}
	return nil
}

// str skips the string at w.i and returns it as written, quotes included.
func (w *walker) str() []byte {
	start := w.i
	w.i++
	for {
		switch w.b[w.i] {
		case '\\':
			w.i += 2
		case '"':
			w.i++
			return w.b[start:w.i]
		default:
			w.i++
		}
	}
}

func (w *walker) object(depth int) error {
	if depth > MaxDepth {
		return TooDeepError{}
	}
	w.i++ // {
	var keys keySet
	for {
		w.ws()
		if w.b[w.i] == '}' {
			w.i++
			return nil
		}
		raw := w.str()
		key := unquote(raw)
		if !keys.add(fold(key)) {
			return &DuplicateKeyError{Key: key}
		}
		w.ws()
		w.i++ // :
		if err := w.value(depth); err != nil {
			return within(err, memberPath(key))
		}
		w.ws()
		if w.b[w.i] == ',' {
			w.i++
		}
	}
}

func (w *walker) array(depth int) error {
	if depth > MaxDepth {
		return TooDeepError{}
	}
	w.i++ // [
	for n := 0; ; n++ {
		w.ws()
		if w.b[w.i] == ']' {
			w.i++
			return nil
		}
		if err := w.value(depth); err != nil {
			return within(err, "["+strconv.Itoa(n)+"]")
		}
		w.ws()
		if w.b[w.i] == ',' {
			w.i++
		}
	}
}

// within prefixes the path of a duplicate key found inside a member or
// an element (paths are built only on the way out of a refusal).
func within(err error, step string) error {
	var dup *DuplicateKeyError
	if !errors.As(err, &dup) {
		return err
	}
	switch {
	case dup.Path == "":
		dup.Path = step
	case dup.Path[0] == '[':
		dup.Path = step + dup.Path
	default:
		dup.Path = step + "." + dup.Path
	}
	if dup.Path[0] == '.' {
		dup.Path = dup.Path[1:]
	}
	return dup
}

// memberPath is a key as a path step: ".key", or `["k.y"]` when the key
// would not read back as one step.
func memberPath(key string) string {
	for _, r := range key {
		if !(r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return "[" + strconv.Quote(key) + "]"
		}
	}
	if key == "" {
		return `[""]`
	}
	return "." + key
}

// unquote is a key as encoding/json reads it: escapes resolved, invalid
// UTF-8 replaced by U+FFFD.
func unquote(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	plain := true
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(inner)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(inner) // unreachable: the body is valid
	}
	return string(bytes.ToValidUTF8([]byte(s), []byte(string(utf8.RuneError))))
}

// fold maps a key to the same string as every key encoding/json would
// match to the same struct field: each rune to the smallest of its simple
// case folding orbit.
func fold(key string) string {
	ascii := true
	for i := 0; i < len(key) && ascii; i++ {
		ascii = key[i] < utf8.RuneSelf
	}
	if ascii { // the smallest of an ASCII letter's orbit is its upper case
		return strings.ToUpper(key)
	}
	out := make([]rune, 0, len(key))
	for _, r := range key {
		low := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			low = min(low, f)
		}
		out = append(out, low)
	}
	return string(out)
}

// keySet is the keys of one object: a short list, a map past that.
type keySet struct {
	list []string
	m    map[string]struct{}
}

const keyListMax = 16

// add records k and reports whether it was new.
func (s *keySet) add(k string) bool {
	if s.m != nil {
		if _, ok := s.m[k]; ok {
			return false
		}
		s.m[k] = struct{}{}
		return true
	}
	for _, have := range s.list {
		if have == k {
			return false
		}
	}
	s.list = append(s.list, k)
	if len(s.list) > keyListMax {
		s.m = make(map[string]struct{}, 2*keyListMax)
		for _, have := range s.list {
			s.m[have] = struct{}{}
		}
		s.list = nil
	}
	return true
}
