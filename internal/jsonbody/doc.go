// Package jsonbody decodes JSON request bodies strictly: one JSON value
// and nothing after it, no key twice in any object at any depth, nesting
// bounded, unknown struct fields refused. encoding/json alone keeps the
// last of two equal keys ({"role":"admin","role":"read"} reads as read),
// so a body could mean one thing to a proxy or a log that keeps the first
// and another to the node. Every handler that reads a JSON body decodes
// it here.
package jsonbody
