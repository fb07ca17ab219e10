// Package webhookapi provides the /webhooks routes through which an
// account manages its webhooks: create, list, read, change and delete
// them, read their delivery log, retry a delivery, send a test event,
// restart the endpoint verification, recover the deliveries of a time
// window and rotate the signing secret. It also serves the public event
// catalog (GET /webhooks/event-types): each event type's data type, JSON
// Schema and example delivery.
//
// Only admin keys manage webhooks. The routes write to PostgreSQL and
// queue manual retries on the delivery queue; the delivery itself is
// package webhook's (its Worker), which this package builds on for the
// configuration, the delivery bodies and the sealing of signing keys.
package webhookapi
