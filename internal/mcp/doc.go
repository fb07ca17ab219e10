// Package mcp provides attestd's Model Context Protocol tool server, on the
// official Go SDK: read-only tools over the REST API (through package
// client), with typed input schemas and structured output, on stdio or
// stateless streamable HTTP.
//
// API errors come back as tool errors carrying the API's message (and the
// retry delay of a 429), so a model can read and react to them; only broken
// protocol use is a protocol error. Over HTTP the premium tools speak the
// x402 MCP transport: a caller pays in _meta["x402/payment"], gets the
// settlement in _meta["x402/payment-response"], and reads what to pay from
// the payment error's content[0].text (see paymentError).
package mcp
