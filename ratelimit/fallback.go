package ratelimit

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// noteFailure degrades the limiter when err means Redis is unavailable,
// and otherwise logs it (at most every 10 s).
func (l *Limiter) noteFailure(err error) {
	if unavailable(err) {
		l.markDegraded(err)
		return
	}
	if now := time.Now().UnixNano(); now-l.lastItemLog.Load() > int64(10*time.Second) {
		l.lastItemLog.Store(now)
		l.log.Error("rate-limit script failed; local window decided", "err", err)
	}
}

// crossSlot tells errors of a server that cannot run a script over keys of
// different shards.
func crossSlot(err error) bool {
	return redis.HasErrorPrefix(err, "CROSSSLOT") || redis.HasErrorPrefix(err, "MOVED") ||
		redis.HasErrorPrefix(err, "ASK") || strings.Contains(strings.ToLower(err.Error()), "non local key")
}

// unavailable tells errors that mean "Redis cannot serve us now" (network,
// timeouts, loading, failover, out of memory) from errors of one command.
func unavailable(err error) bool {
	if errors.Is(err, errKeyFailed) {
		return false
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return true // network, pool, context
	}
	return redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsClusterDownError(err) ||
		redis.IsTryAgainError(err) || redis.IsMasterDownError(err) ||
		redis.HasErrorPrefix(err, "OOM") || redis.HasErrorPrefix(err, "BUSY") || redis.HasErrorPrefix(err, "NOAUTH")
}

// markDegraded switches to the local window, once per outage.
func (l *Limiter) markDegraded(cause error) {
	if !l.degraded.CompareAndSwap(false, true) {
		return
	}
	l.m.fallbackActive.Set(1)
	l.m.fallbacks.Inc()
	l.log.Warn("Redis unavailable: rate limiting with this node's in-memory window until it is back", "err", cause)
	select {
	case l.wakeProbe <- struct{}{}:
	default:
	}
}

// prober checks a degraded limiter's Redis every ProbeEvery and switches
// back when it answers (loading the script, which a restarted Redis lost).
func (l *Limiter) prober() {
	defer l.wg.Done()
	tick := time.NewTicker(l.cfg.ProbeEvery)
	defer tick.Stop()
	for {
		select {
		case <-l.closing:
			return
		case <-l.wakeProbe:
		case <-tick.C:
		}
		if !l.degraded.Load() {
			continue
		}
		if err := l.loadScript(); err != nil {
			continue
		}
		l.recoveredUntil.Store(l.local.clock() + int64(l.cfg.Window))
		l.degraded.Store(false)
		l.m.fallbackActive.Set(0)
		l.log.Info("Redis is back: rate limiting with the shared window again")
	}
}

// loadScript loads the script into Redis within Config.Timeout.
func (l *Limiter) loadScript() error {
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		err := keyScript.Load(ctx, l.rdb).Err()
		if err == nil {
			err = batchScript.Load(ctx, l.rdb).Err()
		}
		done <- err
	}()
	timer := time.NewTimer(l.cfg.Timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return errTimeout
	}
}

// janitor forgets idle keys of the local window.
func (l *Limiter) janitor() {
	defer l.wg.Done()
	every := max(l.cfg.Window, time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-l.closing:
			return
		case <-tick.C:
			l.local.sweep()
		}
	}
}
