// Package purge is the edge purge hook: when the process that writes the
// index (the indexer's elected writer, or seed) moves the index to a new
// epoch, it POSTs the surrogate keys of every answer an epoch can change
// to a configured URL (a CDN's purge-by-key API), so edges drop them
// before their s-maxage runs out. Off unless ATTESTD_PURGE_URL is set.
//
// Invariants: Epoch never blocks the write path; calls are serial, at most
// one per MinInterval, each for the newest epoch heard (a burst of epochs
// costs one call), bounded by Timeout and Retries; a pending purge is sent
// once more when the process stops.
package purge
