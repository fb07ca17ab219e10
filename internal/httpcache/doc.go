// Package httpcache provides what attestd's answers say to HTTP caches
// (browsers, CDNs, the nginx edge): the Cache-Control of each kind of
// answer from configuration, the private rule every keyed or paid route
// uses, surrogate keys for purging, and the RFC 9110 evaluation of
// If-None-Match.
//
// Invariants: an answer that depends on who asks is never cacheable by a
// shared cache (Private); If-None-Match is evaluated in time linear in a
// bounded prefix of the field, and a field it cannot read is ignored (the
// full answer is sent), never guessed.
package httpcache
