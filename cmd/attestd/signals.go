package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// secondSignalKey carries the channel closed on a second SIGTERM or SIGINT.
type secondSignalKey struct{}

// signalContext is a context that ends on the first SIGTERM or SIGINT;
// secondSignal(ctx) closes on the next one (it ends a drain early). stop
// releases the signals.
func signalContext() (context.Context, context.CancelFunc) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	second := make(chan struct{})
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), secondSignalKey{}, (<-chan struct{})(second)))
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			cancel()
		case <-done:
			return
		}
		select {
		case <-ch:
			close(second)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}

// secondSignal is closed on a second SIGTERM or SIGINT (nil, never
// closed, when ctx is not from signalContext).
func secondSignal(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(secondSignalKey{}).(<-chan struct{})
	return ch
}
