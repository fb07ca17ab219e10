package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       string // "" ok, "syntax", "deep", else the duplicate as key@path
	}{
		{"object", `{"a":1,"b":[1,{"c":2}],"d":{"e":null}}`, ""},
		{"scalars", ` "x" `, ""},
		{"empty object and array", `{"a":{},"b":[]}`, ""},
		{"same key in sibling objects", `[{"a":1},{"a":2}]`, ""},
		{"same key at two depths", `{"a":{"a":1}}`, ""},
		{"keys that differ", `{"ab":1,"a":1,"b":1,"":1}`, ""},
		{"top-level duplicate", `{"role":"admin","role":"read"}`, "role@"},
		{"equal values", `{"x":1,"x":1}`, "x@"},
		{"duplicate after others", `{"a":1,"b":2,"c":3,"a":4}`, "a@"},
		{"nested duplicate", `{"filter":{"agents":[],"agents":[]}}`, "agents@filter"},
		{"duplicate in an array element", `{"ids":[{},{"x":1,"x":2}]}`, "x@ids[1]"},
		{"duplicate in a nested array", `[[1],[{"k":[{"y":1,"y":2}]}]]`, "y@[1][0].k[0]"},
		{"escaped duplicate", `{"role":1,"\u0072ole":2}`, "role@"},
		{"escaped slash", `{"a/b":1,"a\/b":2}`, "a/b@"},
		{"case-folded duplicate", `{"message":"a","Message":"b"}`, "Message@"},
		{"long s folds to s", `{"message":"a","me\u017f\u017fage":"b"}`, "meſſage@"},
		{"kelvin sign folds to k", `{"k":1,"\u212a":2}`, "\u212a@"},
		{"invalid UTF-8 reads as U+FFFD", "{\"\xff\":1,\"\xfe\":2}", "\ufffd@"},
		{"odd key in a path", `{"a.b":{"x":1,"x":2}}`, `x@["a.b"]`},
		{"many keys, then a duplicate", `{` + manyKeys(40) + `,"k7":0}`, "k7@"},
		{"many keys", `{` + manyKeys(40) + `}`, ""},
		{"at the depth bound", strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), ""},
		{"past the depth bound", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "deep"},
		{"deep objects", strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1), "deep"},
		// Past encoding/json's own bound (10,000) the body is not valid JSON to it.
		{"very deep", strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000), "syntax"},
		{"empty", ``, "syntax"},
		{"two values", `{} {}`, "syntax"},
		{"trailing garbage", `{"a":1}x`, "syntax"},
		{"unterminated", `{"a":`, "syntax"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(Check([]byte(tc.body))); got != tc.want {
				t.Errorf("Check(%.80q) = %q, want %q", tc.body, got, tc.want)
			}
		})
	}
}

func manyKeys(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + string(rune('0'+i%10)) + strings.Repeat("x", i/10) + `":0`)
	}
	return b.String()
}

func describe(err error) string {
	var dup *DuplicateKeyError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &dup):
		return dup.Key + "@" + dup.Path
	case errors.As(err, new(TooDeepError)):
		return "deep"
	case errors.Is(err, ErrSyntax):
		return "syntax"
	}
	return "other: " + err.Error()
}

func TestDecode(t *testing.T) {
	type req struct {
		Message   *string `json:"message"`
		Signature *string `json:"signature"`
	}
	var r req
	if err := Decode([]byte(`{"message":"m","signature":"s"}`), &r); err != nil || *r.Message != "m" || *r.Signature != "s" {
		t.Fatalf("plain body: %v %+v", err, r)
	}
	for body, want := range map[string]string{
		`{"message":"a","signature":"s","message":"b"}`: `the body is ambiguous: the key "message" appears twice; send each key once`,
		`{"message":"a","MESSAGE":"b"}`:                 `the body is ambiguous: the key "MESSAGE" appears twice; send each key once`,
		`{"message":"a","extra":1}`:                     "shape",
		`{"message":1}`:                                 "shape",
		`[]`:                                            "shape",
		`{"message":"a"} {}`:                            "shape",
		strings.Repeat("[", 40) + strings.Repeat("]", 40): "in the body, objects and arrays nest deeper than 32 levels",
	} {
		err := Decode([]byte(body), &req{})
		if err == nil {
			t.Errorf("%.60q: accepted", body)
			continue
		}
		if got := Refusal(err, "shape").Message; got != want {
			t.Errorf("%.60q: %q, want %q", body, got, want)
		}
		if got := Refusal(err, "shape").Status; got != 400 {
			t.Errorf("%.60q: status %d", body, got)
		}
	}
	if e := Refusal(nil, "the body must be %s", "x"); e.Status != 400 || e.Message != "the body must be x" {
		t.Errorf("Refusal(nil): %+v", e)
	}
	var m map[string]json.RawMessage
	if err := Decode([]byte(`{"a":{"b":1,"b":2}}`), &m); describe(err) != "b@a" {
		t.Errorf("nested duplicate into a map: %v", err)
	}
}

// reference finds the first duplicate key or excess depth with
// encoding/json's tokenizer and bytes.EqualFold, independently of the
// walker: "" when there is neither, "deep", or the duplicate's key.
func reference(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	type frame struct {
		obj     bool
		keys    []string
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return ""
		}
		if err != nil {
			return "syntax"
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.wantKey {
			if d, ok := tok.(json.Delim); !ok || d != '}' {
				k := tok.(string)
				for _, have := range top.keys {
					if bytes.EqualFold([]byte(have), []byte(k)) {
						return "dup:" + k
					}
				}
				top.keys = append(top.keys, k)
				top.wantKey = false
				continue
			}
		}
		if top != nil && top.obj {
			top.wantKey = true
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if len(stack) == MaxDepth {
					return "deep"
				}
				stack = append(stack, &frame{obj: d == '{', wantKey: d == '{'})
			case '}', ']':
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].obj {
					stack[len(stack)-1].wantKey = true
				}
			}
		}
	}
}

// FuzzCheck holds the walker to the tokenizer's reading of any input: the
// same first refusal (a duplicate key, whatever its spelling, or excess
// depth), and a body it passes decodes.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[{"c":1,"C":2}]}}`, `[[[[]]]]`, `{"\u0061":1,"a":2}`,
		"{\"\xff\":1,\"\xfe\":2}", `{"k":1,"\u212a":2}`, `{"s":1,"\u017f":2}`, `"x"`, `1e5`, `{} `, `{"a":"\\\"","b":"}"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		err := Check(body)
		if !json.Valid(body) {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("invalid JSON %q: %v", body, err)
			}
			return
		}
		want := reference(body)
		got := describe(err)
		if strings.HasPrefix(got, "x") || (want == "deep") != (got == "deep") {
			t.Fatalf("%q: walker %q, tokenizer %q", body, got, want)
		}
		if strings.HasPrefix(want, "dup:") {
			var dup *DuplicateKeyError
			if !errors.As(err, &dup) || !bytes.EqualFold([]byte(dup.Key), []byte(strings.TrimPrefix(want, "dup:"))) {
				t.Fatalf("%q: walker %q, tokenizer %q", body, got, want)
			}
		} else if want == "" && err != nil {
			t.Fatalf("%q: walker %q, tokenizer finds nothing", body, got)
		}
		if err == nil {
			// UseNumber: a number out of float64's range (1E700) is
			// valid JSON that Check rightly passes.
			var v any
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			if uerr := dec.Decode(&v); uerr != nil {
				t.Fatalf("%q passed but does not decode: %v", body, uerr)
			}
		}
	})
}
