// Package node builds and runs attestd's production processes from their
// settings (internal/settings, read once and checked before anything
// connects): Serve an API node, Index the chain (with the payments
// reconciler and the transparency log's appender), Worker deliver
// webhooks. serve.go constructs every feature an API node runs, in the
// order a request meets it; nothing joins by registration.
//
// The attestd command parses flags and loads settings, then calls these;
// make run calls the three in one process. node imports none of the dev
// tools the binary also carries (the throwaway stores, the chain
// simulator, the fleet), and a test builds a whole node from a settings
// literal.
package node
