// Package inprocess provides an http.RoundTripper that answers requests
// with a fasthttp handler in the same process: no socket, no second
// listener, and the handler chain the node's public listener runs (its
// cache, limits, payments and receipts). The remote MCP endpoint's tools
// call the node's own API through it.
//
// A request sent through it carries the address of the client it is made
// for (WithPeer): the handler sees that address as the connection's, so
// per-address guards count it against that client. The handler can tell
// such a request from one read off a connection (Is) and find the context
// it was made under (Context).
package inprocess
