// Package strict judges attestd's answers against openapi.yaml the way
// the strict validators behind generated clients do. It is for tests: it
// lives apart from package openapi so that the server, which imports
// openapi for the document, does not link a JSON Schema validator.
package strict

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/attestd/attestd/openapi"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The strict validator judges a response body the way the strict JSON
// Schema validators behind generated clients do (ajv, as used by
// openapi-response-validator; the decoders openapi-typescript and
// oapi-codegen types imply), not the way kin-openapi does. kin-openapi
// is lenient where those are not: a null for a schema with `nullable:
// true` is accepted before its allOf and enum are looked at, so a
// nullable `allOf: [$ref]` or an enum without null passes there and fails
// in every client. Here the document is translated to JSON Schema 2020-12
// with ajv's reading of OpenAPI 3.0.3:
//
//   - `nullable: true` adds "null" to the `type` of the same schema object
//     and to nothing else: not into allOf, not into a $ref, not into enum
//     (a nullable enum lists null among its values);
//   - `nullable` without `type` in the same object is a defect of the
//     document (ajv refuses to compile it);
//   - formats are asserted (date-time: RFC 3339; date: full-date), an
//     unknown format is a defect;
//   - additionalProperties, required, enum, pattern and bounds apply as
//     written.

// StrictDocument returns the document translated to JSON Schema 2020-12
// (see above), as a JSON value; component schemas are at
// #/components/schemas/<name> as in the original.
func StrictDocument() (map[string]any, error) {
	strictOnce.Do(loadStrict)
	return strictDoc, strictErr
}

var (
	strictOnce sync.Once
	strictDoc  map[string]any
	strictComp *jsonschema.Compiler
	strictErr  error
	// strictDefects are what a strict validator refuses in the document
	// itself; answers are still judged (each defect shows as the answers
	// it makes invalid), and TestDocumentIsStrict lists them.
	strictDefects []string
	strictMu      sync.Mutex
	compiled      = map[string]*jsonschema.Schema{}
)

const strictURL = "https://attestd.invalid/openapi.json"

var knownFormats = map[string]bool{"date-time": true, "date": true, "int32": true, "int64": true, "float": true, "double": true,
	"byte": true, "binary": true}

func loadStrict() {
	raw, err := openapi.JSON()
	if err != nil {
		strictErr = err
		return
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		strictErr = fmt.Errorf("decode openapi document: %w", err)
		return
	}
	var defects []string
	translate(doc, "#", &defects)
	sort.Strings(defects)
	strictDefects = defects
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	// OpenAPI's numeric formats name a width; JSON numbers in range pass.
	for _, f := range []string{"int32", "int64", "float", "double"} {
		c.RegisterFormat(&jsonschema.Format{Name: f, Validate: func(any) error { return nil }})
	}
	// byte is standard base64 (OpenAPI 3.0.3 data types); binary is any octets.
	c.RegisterFormat(&jsonschema.Format{Name: "byte", Validate: func(v any) error {
		if s, ok := v.(string); ok {
			if _, err := base64.StdEncoding.DecodeString(s); err != nil {
				return fmt.Errorf("not standard base64: %w", err)
			}
		}
		return nil
	}})
	c.RegisterFormat(&jsonschema.Format{Name: "binary", Validate: func(any) error { return nil }})
	if err := c.AddResource(strictURL, doc); err != nil {
		strictErr = fmt.Errorf("strict openapi document: %w", err)
		return
	}
	strictDoc, strictComp = doc, c
}

// translate rewrites the schema objects under v in place (see the comment
// above) and appends what a strict validator refuses to defects.
func translate(v any, at string, defects *[]string) {
	switch v := v.(type) {
	case map[string]any:
		// Only the keyword: a property or example key named "nullable"
		// (an object value) is left alone.
		if n, ok := v["nullable"].(bool); ok {
			delete(v, "nullable")
			if n {
				t, ok := v["type"].(string)
				if !ok {
					*defects = append(*defects, at+": nullable without type in the same schema (strict validators ignore it)")
				} else {
					v["type"] = []any{t, "null"}
				}
				if e, ok := v["enum"].([]any); ok && !containsNull(e) {
					*defects = append(*defects, at+": nullable enum without null among its values (null is refused)")
				}
				if _, ok := v["allOf"]; ok {
					*defects = append(*defects, at+": nullable with allOf (nullable does not reach into allOf: null is refused)")
				}
			}
		}
		if f, ok := v["format"].(string); ok && !knownFormats[f] {
			if _, isSchema := v["type"]; isSchema {
				*defects = append(*defects, at+": unknown format "+strconv.Quote(f))
			}
		}
		if v["type"] == "object" {
			_, props := v["properties"]
			_, more := v["additionalProperties"]
			if !props && !more {
				*defects = append(*defects, at+": an object with neither properties nor additionalProperties (generated clients type it as empty)")
			}
		}
		if _, ok := v["$ref"].(string); ok && len(v) > 1 {
			for k := range v {
				if k != "$ref" && k != "description" && k != "summary" {
					*defects = append(*defects, at+": $ref with sibling "+strconv.Quote(k)+" (OpenAPI 3.0 ignores it)")
				}
			}
		}
		for k, e := range v {
			translate(e, at+"/"+escape(k), defects)
		}
	case []any:
		for i, e := range v {
			translate(e, at+"/"+strconv.Itoa(i), defects)
		}
	}
}

func containsNull(e []any) bool {
	for _, x := range e {
		if x == nil {
			return true
		}
	}
	return false
}

func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// StrictDefects lists what strict validators refuse in the document itself
// (nullable beside allOf, a nullable enum without null, nullable without
// type, an unknown format, a $ref with constraining siblings), one line
// each with its JSON pointer; empty when there is none.
func StrictDefects() ([]string, error) {
	strictOnce.Do(loadStrict)
	return strictDefects, strictErr
}

// ResponseSchemaPointer returns the JSON pointer (in the document, after
// following a response $ref) of the application/json schema of an
// operation's answer with status, or "" when that answer declares no JSON
// body. pathTemplate is the document's path ("/agents/{agentId}"). An
// undocumented status is an error.
func ResponseSchemaPointer(method, pathTemplate string, status int) (string, error) {
	ptr, _, err := responseSchema(method, pathTemplate, status)
	return ptr, err
}

// responseSchema is ResponseSchemaPointer, also saying whether the answer
// declares content of another type (text/event-stream, ...).
func responseSchema(method, pathTemplate string, status int) (ptr string, other bool, err error) {
	doc, err := StrictDocument()
	if err != nil {
		return "", false, err
	}
	paths, _ := doc["paths"].(map[string]any)
	item, _ := paths[pathTemplate].(map[string]any)
	op, _ := item[strings.ToLower(method)].(map[string]any)
	if op == nil {
		return "", false, fmt.Errorf("%s %s is not in the document", method, pathTemplate)
	}
	responses, _ := op["responses"].(map[string]any)
	ptr = "#/paths/" + escape(pathTemplate) + "/" + strings.ToLower(method) + "/responses/"
	key := strconv.Itoa(status)
	res, ok := responses[key].(map[string]any)
	if !ok {
		key = key[:1] + "XX"
		if res, ok = responses[key].(map[string]any); !ok {
			key = "default"
			if res, ok = responses[key].(map[string]any); !ok {
				return "", false, fmt.Errorf("%s %s: status %d is not documented", method, pathTemplate, status)
			}
		}
	}
	ptr += escape(key)
	if ref, ok := res["$ref"].(string); ok {
		ptr = ref
		res = lookup(doc, ref)
		if res == nil {
			return "", false, fmt.Errorf("%s: unresolved response %s", ptr, ref)
		}
	}
	content, _ := res["content"].(map[string]any)
	media, ok := content["application/json"].(map[string]any)
	if !ok {
		return "", len(content) > 0, nil
	}
	if _, ok := media["schema"]; !ok {
		return "", false, nil
	}
	return ptr + "/content/application~1json/schema", false, nil
}

func lookup(doc map[string]any, ref string) map[string]any {
	var cur any = doc
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
	}
	m, _ := cur.(map[string]any)
	return m
}

// ValidateStrict checks a response body against the schema at pointer (from
// ResponseSchemaPointer) under the strict reading. A body that is not JSON
// is an error.
func ValidateStrict(pointer string, body []byte) error {
	if _, err := StrictDocument(); err != nil {
		return err
	}
	strictMu.Lock()
	sch, ok := compiled[pointer]
	if !ok {
		var err error
		if sch, err = strictComp.Compile(strictURL + pointer); err != nil {
			strictMu.Unlock()
			return fmt.Errorf("compile %s: %w", pointer, err)
		}
		compiled[pointer] = sch
	}
	strictMu.Unlock()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	if err := sch.Validate(v); err != nil {
		return err
	}
	return nil
}

// ValidateAnswer is ResponseSchemaPointer then ValidateStrict: the body of
// an answer with a documented JSON body must match it strictly; an answer
// documented without a body must have none.
func ValidateAnswer(method, pathTemplate string, status int, body []byte) error {
	ptr, other, err := responseSchema(method, pathTemplate, status)
	if err != nil {
		return err
	}
	if ptr == "" {
		// Content of another type (an event stream) is for its own test.
		if len(body) != 0 && !other {
			return fmt.Errorf("%d declares no JSON body, got %d bytes", status, len(body))
		}
		return nil
	}
	return ValidateStrict(ptr, body)
}
