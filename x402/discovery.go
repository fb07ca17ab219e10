package x402

import "encoding/json"

// ExtensionBazaar names the bazaar discovery extension: a 402's
// extensions["bazaar"] describes how to call the resource (input) and
// what it answers (output), with a JSON Schema of that description.
const ExtensionBazaar = "bazaar"

// Bazaar is the bazaar extension of a 402 (x402 specs/extensions/bazaar.md).
type Bazaar struct {
	Info   BazaarInfo      `json:"info"`
	Schema json.RawMessage `json:"schema"`
	// RouteTemplate is the route with its path parameters as :name, the
	// catalog key of a dynamic route ("" for a static one).
	RouteTemplate string `json:"routeTemplate,omitempty"`
}

// BazaarInfo is the discovery data: how to call, what comes back.
type BazaarInfo struct {
	Input  BazaarInput   `json:"input"`
	Output *BazaarOutput `json:"output,omitempty"`
}

// BazaarInput describes an HTTP call (type "http"): query methods carry
// queryParams, body methods bodyType and body; pathParams are the dynamic
// route's values.
type BazaarInput struct {
	Type        string            `json:"type"`
	Method      string            `json:"method"`
	QueryParams map[string]string `json:"queryParams,omitempty"`
	PathParams  map[string]string `json:"pathParams,omitempty"`
	BodyType    string            `json:"bodyType,omitempty"`
	Body        json.RawMessage   `json:"body,omitempty"`
}

// BazaarOutput describes the answer: its type and an example.
type BazaarOutput struct {
	Type    string          `json:"type"`
	Example json.RawMessage `json:"example,omitempty"`
}

// DiscoveredResource is one payable resource as facilitators' discovery
// (GET /discovery/resources) and the origin's /.well-known/x402 list it.
type DiscoveredResource struct {
	Resource    string         `json:"resource"`
	Type        string         `json:"type"`
	X402Version int            `json:"x402Version"`
	Accepts     []Requirements `json:"accepts"`
	// LastUpdated is an RFC 3339 (ISO 8601) UTC time: the official
	// types' string (the v2 specification's text says a Unix number).
	LastUpdated string                     `json:"lastUpdated"`
	Metadata    map[string]any             `json:"metadata,omitempty"`
	Extensions  map[string]json.RawMessage `json:"extensions,omitempty"`
}

// DiscoveryPagination is the page a discovery list holds (x402 v2
// GET /discovery/resources).
type DiscoveryPagination struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
	Total  int `json:"total"`
}
