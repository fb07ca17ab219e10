// Package pubsub carries small announcements between attestd nodes over
// Redis pub/sub (the cache's index epoch, API-key revocations). Pub/sub
// drops messages while a subscriber is disconnected, so a Listener calls
// its owner's resync function on every (re)subscription.
package pubsub
