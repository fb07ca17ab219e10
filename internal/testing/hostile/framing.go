package hostile

import (
	"fmt"
	"net/http"
	"strings"
)

// doubled is, per route that reads a JSON body, a body of the right shape
// with one member written twice: read with the last value (as
// encoding/json does), it would be served.
var doubled = map[string]string{
	"/auth/signin":         `{"message":"a","signature":"b","signature":"c"}`,
	"/keys":                `{"label":"x","role":"admin","role":"read"}`,
	"/webhooks":            `{"url":"https://93.184.216.34/a","events":["attestation.created"],"url":"https://93.184.216.34/b"}`,
	"/webhooks/{webhook}":  `{"active":true,"active":true}`,
	"/premium/bulk-verify": `{"ids":["11111111111111111111111111111111"],"ids":[]}`,
}

// duplicateKeyCases send JSON bodies with a key twice (at the top, nested,
// escaped, in another case, as invalid UTF-8 that reads as U+FFFD) or
// nested past the bound: each is 400.
func duplicateKeyCases(method, route, path string, key map[string]string) []Case {
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range key {
		h[k] = v
	}
	bodies := []string{
		`{"x":1,"x":2}`, `{"x":1,"x":1}`, `{"a":{"b":1,"b":2}}`, `{"a":[{},{"b":1,"b":2}]}`, `{"\u0078":1,"x":2}`, `{"X":1,"x":2}`,
		`{"k":1,"\u212a":2}`, "{\"\xff\":1,\"\xfe\":2}",
		strings.Repeat("[", 33) + strings.Repeat("]", 33), strings.Repeat(`{"a":`, 33) + "1" + strings.Repeat("}", 33),
	}
	if b, ok := doubled[route]; ok {
		bodies = append(bodies, b)
	}
	var cs []Case
	for i, b := range bodies {
		cs = append(cs, Case{Name: fmt.Sprintf("%s %s duplicate key#%d", method, route, i), Method: method, Path: path,
			Header: h, Body: []byte(b), Expect: http.StatusBadRequest})
	}
	return cs
}

// framingCases send, raw, requests to a route whose framing or target is
// ambiguous (two Content-Length, equal or not; two Host; Content-Length
// beside Transfer-Encoding, either first), each followed by the request a
// smuggler would hide: the answer is 400, and the connection is closed
// after it. page: path is outside the API prefix.
func framingCases(method, route, path string, page bool) []Case {
	const next = "GET {prefix}/health HTTP/1.1\r\nHost: x\r\n\r\n"
	target := "{prefix}" + path
	if page {
		target = path
	}
	head := method + " " + target + " HTTP/1.1\r\n"
	var cs []Case
	for i, raw := range []string{
		head + "Host: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}" + next,
		head + "Host: x\r\nContent-Type: application/json\r\nContent-Length: 0\r\nContent-Length: 2\r\n\r\n{}" + next,
		head + "Host: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\ncontent-length: 0\r\n\r\n{}" + next,
		head + "Host: x\r\nhost: evil.example\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}" + next,
		head + "Host: x\r\nContent-Type: application/json\r\nContent-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + next,
		head + "Host: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n0\r\n\r\n" + next,
		head + "Host: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\n{}\r\n0\r\n\r\n" + next,
	} {
		cs = append(cs, Case{Name: fmt.Sprintf("%s %s framing#%d", method, route, i), Method: "RAW", Raw: raw,
			Expect: http.StatusBadRequest, Closes: true})
	}
	return cs
}
