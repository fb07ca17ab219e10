package indexer

import (
	"context"
	"fmt"
	"time"

	"github.com/attestd/attestd/internal/pause"

	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/ws"
)

// liveLoop keeps a logsSubscribe (mentions the program, confirmed) open.
// Each notification of a successful transaction triggers a sync, which
// re-fetches the transaction before indexing it; each (re)connection
// triggers one too, to backfill the gap. While it is down, the sync loop
// polls on the fallback interval.
func (ix *Indexer) liveLoop(ctx context.Context) {
	backoff := 250 * time.Millisecond
	for ctx.Err() == nil {
		connected, err := ix.subscribe(ctx)
		ix.wsUp.Store(false)
		ix.m.wsConnected.Set(0)
		if ctx.Err() != nil {
			return
		}
		ix.Trigger()
		if connected {
			backoff = 250 * time.Millisecond
		}
		ix.log.Warn("indexer websocket down; polling until it is back", "err", err, "retryIn", backoff.String())
		if !pause.For(ctx, backoff) {
			return
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// subscribe runs one websocket session; connected reports whether the
// subscription was established.
func (ix *Indexer) subscribe(ctx context.Context) (connected bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	client, err := ws.ConnectWithOptions(cctx, ix.cfg.WSURL, &ws.Options{HandshakeTimeout: 5 * time.Second})
	cancel()
	if err != nil {
		return false, fmt.Errorf("connect %s: %w", ix.cfg.WSURL, err)
	}
	defer client.Close()
	sub, err := client.LogsSubscribeMentions(ix.cfg.ProgramID, rpc.CommitmentConfirmed)
	if err != nil {
		return false, fmt.Errorf("logsSubscribe: %w", err)
	}
	ix.wsUp.Store(true)
	ix.m.wsConnected.Set(1)
	ix.log.Info("indexer websocket subscribed", "ws", ix.cfg.WSURL)
	// Backfill whatever landed while we were not subscribed; once more
	// shortly after, for transactions between that sync and the moment the
	// node registered the subscription.
	ix.Trigger()
	go func() {
		if pause.For(ctx, 300*time.Millisecond) {
			ix.Trigger()
		}
	}()
	for {
		res, err := sub.Recv(ctx)
		if err != nil {
			return true, fmt.Errorf("logs subscription: %w", err)
		}
		if res != nil && res.Value.Err == nil {
			ix.Trigger()
		}
	}
}
