// Package benchkit holds what the programs under bench/ share: starting a
// server binary until it is ready, the machine's load average, latency
// percentiles, and waiting for webhooks' endpoint verification.
package benchkit
