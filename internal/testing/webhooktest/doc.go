// Package webhooktest drives the /webhooks routes of a test node as an
// account holder does (keys, requests, webhooks created, read and
// patched), and holds the one keyring a test binary seals webhook secrets
// with. The delivery engine's tests and the routes' tests share it.
package webhooktest
