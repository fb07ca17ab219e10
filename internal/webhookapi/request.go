package webhookapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/jsonbody"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/webhook"
)

// Limits of the request bodies.
const (
	maxBody        = 16 << 10
	maxAgents      = 100
	maxDescription = 200
)

// Filter narrows the events a webhook receives: only these agents' events
// (empty: every agent), only attestations of these action types (empty:
// every type; agent events have no action type and are not narrowed).
type Filter struct {
	Agents      []string `json:"agents"`
	ActionTypes []string `json:"actionTypes"`
}

// request is a parsed POST or PATCH body; nil fields were absent.
type request struct {
	URL         *string
	Events      *[]string
	Filter      *Filter
	Description *string
	Active      *bool
	// SignatureScheme is v1, v1a or both.
	SignatureScheme *string
	// RateLimitSet: rateLimitPerSecond was given, RateLimit its value
	// (nil: null, the server's limit).
	RateLimitSet bool
	RateLimit    *int32
}

// parseBody reads a JSON object with the allowed fields into a request.
// Every field is checked for its type and value; the URL is only checked
// to be a string here (its policy checks need the configuration).
func parseBody(contentType string, body []byte, allowed ...string) (request, error) {
	var r request
	if len(body) > maxBody {
		return r, apierror.New(http.StatusRequestEntityTooLarge, apierror.CodePayloadTooLarge, "the body must be at most %d bytes", maxBody)
	}
	if err := httpapi.RequireJSON(contentType, ""); err != nil {
		return r, err
	}
	// One JSON object and nothing after it, each key once at any depth:
	// the values read below are parts of a body checked whole here.
	var fields map[string]json.RawMessage
	if err := jsonbody.Decode(body, &fields); err != nil || fields == nil {
		return r, jsonbody.Refusal(err, `the body must be a JSON object such as {"url": "https://example.com/hooks", "events": ["attestation.created"]}`)
	}
	for name, raw := range fields {
		ok := false
		for _, a := range allowed {
			ok = ok || a == name
		}
		if !ok {
			return r, apierror.Invalid("unknown field %q; allowed: %s", name, strings.Join(allowed, ", "))
		}
		var err error
		switch name {
		case "url":
			r.URL, err = str(name, raw)
		case "description":
			if r.Description, err = str(name, raw); err == nil {
				err = checkDescription(*r.Description)
			}
		case "events":
			var ev []string
			if ev, err = strs(name, raw, len(webhook.Events)); err == nil {
				err = checkEvents(ev)
				r.Events = &ev
			}
		case "filter":
			r.Filter, err = parseFilter(raw)
		case "signatureScheme":
			if r.SignatureScheme, err = str(name, raw); err == nil {
				switch *r.SignatureScheme {
				case store.SchemeV1, store.SchemeV1a, store.SchemeBoth:
				default:
					err = apierror.Invalid("signatureScheme must be v1 (HMAC-SHA256), v1a (Ed25519) or both, got %q", excerpt.Of(*r.SignatureScheme, 32))
				}
			}
		case "rateLimitPerSecond":
			r.RateLimitSet = true
			if string(raw) != "null" {
				var n int32
				n, err = boundedInt(name, raw, 1, MaxRateLimit)
				r.RateLimit = &n
			}
		case "active":
			var b bool
			if len(raw) == 0 || (raw[0] != 't' && raw[0] != 'f') || json.Unmarshal(raw, &b) != nil {
				err = apierror.Invalid("active must be true or false")
			}
			r.Active = &b
		}
		if err != nil {
			return request{}, err
		}
	}
	return r, nil
}

// MaxRateLimit bounds rateLimitPerSecond.
const MaxRateLimit = 100_000

// boundedInt reads a JSON integer within [lo, hi] (no fraction, no
// exponent, no string).
func boundedInt(name string, raw json.RawMessage, lo, hi int64) (int32, error) {
	t := string(raw)
	bad := apierror.Invalid("%s must be an integer from %d to %d", name, lo, hi)
	if len(t) == 0 || len(t) > 12 || strings.ContainsAny(t, ".eE+") {
		return 0, bad
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, bad
	}
	return int32(n), nil
}

func str(name string, raw json.RawMessage) (*string, error) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return nil, apierror.Invalid("%s must be a string", name)
	}
	return &s, nil
}

func strs(name string, raw json.RawMessage, max int) ([]string, error) {
	var s []string
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &s) != nil {
		return nil, apierror.Invalid("%s must be an array of strings", name)
	}
	if len(s) > max {
		return nil, apierror.Invalid("%s may list at most %d values", name, max)
	}
	seen := map[string]bool{}
	for _, v := range s {
		if seen[v] {
			return nil, apierror.Invalid("%s lists %q twice", name, v)
		}
		seen[v] = true
	}
	return s, nil
}

// knownEvent reports whether name is in webhook.Events.
func knownEvent(name string) bool {
	for _, e := range webhook.Events {
		if e == name {
			return true
		}
	}
	return false
}

func checkEvents(ev []string) error {
	if len(ev) == 0 {
		return apierror.Invalid("events must name at least one of %s", strings.Join(webhook.Events, ", "))
	}
	for _, e := range ev {
		if !knownEvent(e) {
			return apierror.Invalid("unknown event %q; known events: %s", e, strings.Join(webhook.Events, ", "))
		}
	}
	return nil
}

func checkDescription(d string) error {
	if n := len([]rune(d)); n > maxDescription {
		return apierror.Invalid("description must be at most %d characters, got %d", maxDescription, n)
	}
	for _, c := range d {
		if unicode.IsControl(c) || c == unicode.ReplacementChar {
			return apierror.Invalid("description must not contain control characters or invalid UTF-8")
		}
	}
	return nil
}

func parseFilter(raw json.RawMessage) (*Filter, error) {
	var fields map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return nil, apierror.Invalid(`filter must be an object such as {"agents": ["<agentPda>"], "actionTypes": ["ToolCall"]}`)
	}
	f := &Filter{Agents: []string{}, ActionTypes: []string{}}
	for name, v := range fields {
		switch name {
		case "agents":
			agents, err := strs("filter.agents", v, maxAgents)
			if err != nil {
				return nil, err
			}
			seen := map[string]bool{}
			for _, a := range agents {
				pk, err := attestation.ParseAddress(a)
				if err != nil {
					return nil, apierror.Invalid("filter.agents: %q is not a base58 Solana address (32 bytes)", a)
				}
				canon := pk.String()
				if seen[canon] {
					return nil, apierror.Invalid("filter.agents lists %s twice", canon)
				}
				seen[canon] = true
				f.Agents = append(f.Agents, canon)
			}
		case "actionTypes":
			types, err := strs("filter.actionTypes", v, len(attestation.ActionTypeNames()))
			if err != nil {
				return nil, err
			}
			for _, t := range types {
				at, err := attestation.ParseActionType(t)
				if err != nil {
					return nil, apierror.Invalid("filter.actionTypes: unknown action type %q; known: %s", t,
						strings.Join(attestation.ActionTypeNames(), ", "))
				}
				f.ActionTypes = append(f.ActionTypes, at.String())
			}
		default:
			return nil, apierror.Invalid("unknown field filter.%s; allowed: agents, actionTypes", name)
		}
	}
	return f, nil
}

// describe names the parts of a webhook for a log line.
func describe(events []string, f Filter) string {
	return fmt.Sprintf("events=%s agents=%d actionTypes=%s", strings.Join(events, ","), len(f.Agents), strings.Join(f.ActionTypes, ","))
}
