package web

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/ratelimit"
	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
)

// newAccountScript counts one account made by a client, unless the
// client's window already holds ARGV[2]: the count (ARGV[2]+1 when
// refused) and the window's milliseconds left. The window starts with the
// first account and lasts ARGV[1] ms. A refusal leaves the count as it is,
// so nothing has to be given back for it.
var newAccountScript = redis.NewScript(`
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n < tonumber(ARGV[2]) then
  n = redis.call('INCR', KEYS[1])
else
  n = n + 1
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}`)

// giveBackScript gives one account back to a window that still exists: a
// DECR on a window that expired meanwhile would make a key without expiry
// and a negative count (an extra account in the next window).
var giveBackScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('DECR', KEYS[1])
end
return 0`)

func (w *Web) newAccountKey(client string) string { return w.opt.Prefix + "new-accounts:" + client }

// accountOf is the account of a wallet that signed in: its own when it has
// one; otherwise a new one, within the client's allowance of new accounts
// (NewAccountsPerHour).
func (w *Web) accountOf(c *fiber.Ctx, ctx context.Context, wallet string) (store.Account, error) {
	acct, err := w.opt.Store.WalletAccount(ctx, wallet)
	switch {
	case err == nil:
		return acct, nil
	case !errors.Is(err, store.ErrNotFound):
		return acct, httpapi.StoreError(err)
	}
	release, err := w.reserveNewAccount(c, ctx)
	if err != nil {
		return acct, err
	}
	acct, created, err := w.opt.Store.EnsureWalletAccount(ctx, wallet)
	if !created {
		release() // it existed after all (a concurrent sign-in), or failed
	}
	if errors.Is(err, store.ErrWalletTaken) {
		return acct, apierror.New(http.StatusConflict, "WALLET_CONFLICT", "%s", err.Error())
	}
	if err != nil {
		return acct, httpapi.StoreError(err)
	}
	if created {
		w.log.Info("account created for a wallet", "account", acct.Name, "client", ratelimit.ClientKey(w.clientIP(c)))
	}
	return acct, nil
}

// reserveNewAccount counts one new account against the request's client
// (the client IP as the rate limiter resolves it; IPv6 by /64) in Redis,
// so the bound holds across the fleet. Beyond the bound: 429 with
// Retry-After. release gives the reservation back.
func (w *Web) reserveNewAccount(c *fiber.Ctx, ctx context.Context) (release func(), err error) {
	limit := w.opt.Config.NewAccountsPerHour
	if limit <= 0 {
		return func() {}, nil
	}
	key := w.newAccountKey(ratelimit.ClientKey(w.clientIP(c)))
	res, err := newAccountScript.Run(ctx, w.opt.Redis, []string{key}, NewAccountWindow.Milliseconds(), limit).Int64Slice()
	if err != nil || len(res) != 2 {
		w.log.Warn("new-account count", "err", err)
		return nil, apierror.Unavailable("cannot create an account now; try again shortly")
	}
	if res[0] > int64(limit) {
		retry := (time.Duration(res[1])*time.Millisecond + time.Second - 1) / time.Second
		c.Set(ratelimit.HeaderRetryAfter, strconv.FormatInt(int64(retry), 10))
		return nil, apierror.New(http.StatusTooManyRequests, apierror.CodeRateLimited,
			"this network has made %d accounts in the last hour, the most allowed; sign in with an existing wallet, or try again in %d s", limit, retry)
	}
	return func() {
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := giveBackScript.Run(rctx, w.opt.Redis, []string{key}).Err(); err != nil {
			w.log.Warn("new-account count: give back", "err", err)
		}
	}, nil
}

// clientIP is the client of the request, as the rate limiter sees it.
func (w *Web) clientIP(c *fiber.Ctx) netip.Addr {
	return w.opt.Resolver.ClientIP(c)
}
