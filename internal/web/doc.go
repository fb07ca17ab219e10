// Package web provides attestd's web application, served by `attestd
// serve` at / beside the API at /api/v1: a home page of what is happening,
// a search box for any address, transaction, action hash or payload file,
// a public explorer of the index (live list, filters in shareable URLs,
// attestation and agent pages, a payload check done in the browser, global
// stats), the API reference rendered from the served OpenAPI document, and
// a console where an account holder signs in with a Solana wallet
// (Sign-In-With-Solana) to manage the account's API keys and webhooks.
//
// The page's modules are joined into one script at start (bundle.go) and
// served, with the stylesheet and the icon, under content-hashed names
// with immutable caching; the page and its files are static routes,
// outside the API's per-IP request limit (httpapi.Router.Static).
//
// Invariants: every page and asset carries a strict Content-Security-Policy
// (no inline script, nothing from another origin) and cannot be framed; a
// sign-in message is accepted once (its nonce is taken from Redis with
// GETDEL), for this server's domain only, within its time bounds, and only
// with a valid Ed25519 signature of its address; a session acts as an admin
// of its own account only, and every state-changing call it makes carries
// the session's CSRF token.
package web
