package pubsub

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Handlers are what a Listener calls. Either may be nil.
type Handlers struct {
	// Resync runs after every (re)subscription: announcements made while
	// the node was not listening are lost.
	Resync func(ctx context.Context)
	// Message runs for every announcement, with its payload.
	Message func(payload string)
}

// Listener follows one channel until Close.
type Listener struct {
	ps        *redis.PubSub
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	ready     chan struct{}
	readyOnce sync.Once
}

// Listen subscribes to channel and calls h from one goroutine.
func Listen(rdb redis.UniversalClient, channel string, h Handlers) *Listener {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Listener{ps: rdb.Subscribe(ctx, channel), cancel: cancel, ready: make(chan struct{})}
	l.wg.Add(1)
	go l.run(ctx, h)
	return l
}

func (l *Listener) run(ctx context.Context, h Handlers) {
	defer l.wg.Done()
	for {
		msg, err := l.ps.Receive(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// go-redis reconnects on the next Receive; wait a little.
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			if h.Resync != nil {
				h.Resync(ctx)
			}
			l.readyOnce.Do(func() { close(l.ready) })
		case *redis.Message:
			if h.Message != nil {
				h.Message(m.Payload)
			}
		}
	}
}

// Subscribed is closed once the first subscription is confirmed and its
// Resync has run: from then on no announcement is missed (until a
// reconnect, which resyncs again).
func (l *Listener) Subscribed() <-chan struct{} { return l.ready }

// Close stops listening. Receive does not watch its context, so the
// subscription is closed to unblock it.
func (l *Listener) Close() {
	l.cancel()
	_ = l.ps.Close()
	l.wg.Wait()
}

// Publish sends one announcement within timeout.
func Publish(ctx context.Context, rdb redis.UniversalClient, channel, payload string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	return rdb.Publish(ctx, channel, payload).Err()
}
