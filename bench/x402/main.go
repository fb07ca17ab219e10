// Command x402-bench measures pay per request on loopback:
//
//  1. local verification per payment: decoding the PAYMENT-SIGNATURE
//     header, decoding the transaction and CheckExact (what runs before any
//     network call), p50 and p99 over -n distinct wallet-built payments;
//
//  2. paid premium requests per second end to end against the chain
//     simulator (verify, simulate, claim in Redis and Postgres, handler,
//     send, confirm, ledger), as a ratio of keyed requests per second on
//     the same route in the same run.
//
//     go run ./bench/x402 [-n 5000] [-duration 5s] [-c 16]
//
// It starts a throwaway Postgres and Redis (devstack) unless DATABASE_URL
// (an admin URL) and REDIS_URL are set, a simulator with 400 ms slots, and
// one in-process API node on 127.0.0.1. Every paid request carries a new
// payment, built by the worker as a wallet would (that cost is included).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"github.com/attestd/attestd/internal/config"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/bench/internal/benchkit"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/verifier"
	"github.com/attestd/attestd/x402/x402fiber"
	"github.com/gagliardetto/solana-go"
	"github.com/redis/go-redis/v9"
)

func main() {
	n := flag.Int("n", 5000, "payments verified locally")
	dur := flag.Duration("duration", 5*time.Second, "length of each end-to-end scenario")
	conc := flag.Int("c", 16, "concurrent clients end to end")
	flag.Parse()
	if *dur > time.Minute || *conc > 256 || *n > 100_000 {
		fmt.Fprintln(os.Stderr, "x402-bench: bounded runs only (duration <= 1m, c <= 256, n <= 100000)")
		os.Exit(2)
	}
	if err := run(context.Background(), *n, *dur, *conc); err != nil {
		fmt.Fprintln(os.Stderr, "x402-bench:", err)
		os.Exit(1)
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func run(ctx context.Context, n int, dur time.Duration, conc int) error {
	cache.RouteRedisLogs(quiet)
	fmt.Printf("x402 bench: GOMAXPROCS %d, %s\n\n", runtime.GOMAXPROCS(0), time.Now().UTC().Format(time.RFC3339))
	local(n)
	return endToEnd(ctx, dur, conc)
}

// local times the in-process checks of n distinct payments.
func local(n int) {
	payer, fee, payTo := solana.NewWallet().PrivateKey, solana.NewWallet().PublicKey(), solana.NewWallet().PublicKey()
	q := x402.Requirements{Scheme: x402.SchemeExact, Network: x402.Devnet.CAIP2, Amount: "10000", Asset: x402.Devnet.USDC.String(),
		PayTo: payTo.String(), MaxTimeoutSeconds: 60, Extra: &x402.Extra{FeePayer: fee.String()}}
	terms := x402.ExactTerms{FeePayer: fee, PayTo: payTo, Asset: x402.Devnet.USDC, Amount: 10000, Decimals: 6}
	if err := terms.Prepare(); err != nil {
		panic(err)
	}
	headers := make([]string, n)
	for i := range headers {
		wire, err := x402.BuildExact(q, x402.Payment{Payer: payer, Blockhash: solana.Hash{byte(i)}, Decimals: 6})
		if err != nil {
			panic(err)
		}
		headers[i], _ = x402.EncodeHeader(x402.NewPaymentPayload(x402.ResourceInfo{URL: "http://127.0.0.1/x"}, q, wire))
	}
	ds := make([]time.Duration, n)
	for i, h := range headers {
		start := time.Now()
		p, raw, err := x402.DecodePaymentV2(h)
		if err != nil || !q.Match(p.Accepted) {
			panic(err)
		}
		tx, err := x402.DecodeTransaction(raw)
		if err != nil {
			panic(err)
		}
		if _, cerr := x402.CheckExact(tx, &terms); cerr != nil {
			panic(cerr)
		}
		ds[i] = time.Since(start)
	}
	slices.Sort(ds)
	fmt.Printf("local verification of %d payments (header %d bytes): p50 %.1f µs, p99 %.1f µs, max %.1f µs\n\n",
		n, len(headers[0]), us(ds[n/2]), us(ds[n*99/100]), us(ds[n-1]))
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }

func endToEnd(ctx context.Context, dur time.Duration, conc int) error {
	bs, err := benchkit.OpenStores(ctx, "bench_x402", store.Options{MaxConns: 16})
	if err != nil {
		return err
	}
	defer bs.Close()
	st := bs.Store
	seeded, err := seed.Run(ctx, st, seed.Options{Agents: 1, Attestations: 200, Seed: 3, Logger: quiet})
	if err != nil {
		return err
	}
	agent := seeded.Agents[0].PDA.String()
	opt, err := redis.ParseURL(bs.RedisURL)
	if err != nil {
		return err
	}
	opt.PoolSize = 64
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	var pfx [4]byte
	_, _ = rand.Read(pfx[:])
	prefix := "x402bench" + hex.EncodeToString(pfx[:]) + ":"
	c, err := cache.New(ctx, rdb, cache.Options{Prefix: prefix, Logger: quiet})
	if err != nil {
		return err
	}
	defer c.Close()
	st.SetNotifier(c)

	chain, err := devnet.Start(ctx, devnet.Config{Logger: quiet})
	if err != nil {
		return err
	}
	defer chain.Close()
	accounts, err := chain.NewPayment(1000*solana.LAMPORTS_PER_SOL, 1_000_000_000_000)
	if err != nil {
		return err
	}
	feePayer, payTo, payer := accounts.FeePayer, accounts.PayTo, accounts.Payer
	cfg := verifier.Config{PayTo: payTo, Network: x402.Devnet, Asset: devnet.DevnetUSDCMint, Decimals: 6,
		Prices: map[string]uint64{"/premium/full-history/:agentId": 10_000}, FeePayer: feePayer, RPCURL: chain.RPCURL(),
		SettleTimeout: 10 * time.Second, FacilitatorTimeout: 5 * time.Second}
	v, err := verifier.New(ctx, verifier.Deps{Config: cfg, Redis: rdb, KeyPrefix: prefix + "x402:", Ledger: st, Logger: quiet})
	if err != nil {
		return err
	}
	defer v.Close()
	keys, err := apikey.New(ctx, apikey.Deps{Store: st, Redis: rdb, Channel: prefix + apikey.ChannelSuffix, Logger: quiet})
	if err != nil {
		return err
	}
	defer keys.Close()
	acc, _, err := st.EnsureAccount(ctx, "bench")
	if err != nil {
		return err
	}
	key, err := keys.Create(ctx, acc.ID, "bench")
	if err != nil {
		return err
	}
	api := app.New(app.Deps{Store: st, Cache: c, Logger: quiet})
	keys.Routes(api)
	origin, err := config.ParseOrigin("http://bench.invalid")
	if err != nil {
		return err
	}
	h, err := premium.New(premium.Deps{Auth: keys.Require(apikey.RequireOptions{OnMissingKey: x402fiber.New(v, origin)}), Store: st, Cache: c, Logger: quiet})
	if err != nil {
		return err
	}
	h.Routes(api)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = api.Fiber().Listener(ln) }()
	defer api.Fiber().ShutdownWithTimeout(5 * time.Second)
	url := "http://" + ln.Addr().String() + "/api/v1/premium/full-history/" + agent + "?limit=20"
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: conc}}

	// The 402's requirements, once: every paid request builds its own
	// transaction against them.
	res, err := hc.Get(url)
	if err != nil {
		return err
	}
	res.Body.Close()
	pr, err := x402.DecodePaymentRequired(res.Header.Get(x402.HeaderPaymentRequired))
	if err != nil {
		return fmt.Errorf("402: %w", err)
	}
	q := pr.Accepts[0]

	keyed := load(hc, url, dur, conc, func() (string, string) { return "x-api-key", key.Secret })
	fmt.Printf("keyed   GET full-history (limit 20, cached): %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  errors %d\n",
		keyed.rps, ms(keyed.p50), ms(keyed.p99), keyed.errors)
	before, _ := chain.TokenBalance(mustATA(payTo))
	paid := load(hc, url, dur, conc, func() (string, string) {
		wire, err := x402.BuildExact(q, x402.Payment{Payer: payer, Blockhash: chain.LatestBlockhash(), Decimals: 6})
		if err != nil {
			panic(err)
		}
		hdr, _ := x402.EncodeHeader(x402.NewPaymentPayload(pr.Resource, q, wire))
		return x402.HeaderPaymentSignature, hdr
	})
	after, _ := chain.TokenBalance(mustATA(payTo))
	fmt.Printf("paid    GET full-history (new payment each):    %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  errors %d\n",
		paid.rps, ms(paid.p50), ms(paid.p99), paid.errors)
	fmt.Printf("paid / keyed: %.2f%%   (settled %d payments, payTo +%s USDC)\n", 100*paid.rps/keyed.rps, paid.ok,
		x402.FormatAmount(after-before, 6))
	if uint64(paid.ok)*10_000 != after-before {
		return fmt.Errorf("payTo rose by %d atomic units for %d paid answers", after-before, paid.ok)
	}
	return nil
}

func mustATA(owner solana.PublicKey) solana.PublicKey {
	a, _ := x402.AssociatedTokenAccount(owner, devnet.DevnetUSDCMint, solana.TokenProgramID)
	return a
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

type result struct {
	rps      float64
	p50, p99 time.Duration
	ok       int64
	errors   int64
}

// load runs conc workers for dur, each sending GETs with the header hdr()
// returns, and counts 200s.
func load(hc *http.Client, url string, dur time.Duration, conc int, hdr func() (string, string)) result {
	var mu sync.Mutex
	var lat []time.Duration
	var ok, bad atomic.Int64
	deadline := time.Now().Add(dur)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(deadline) {
				k, v := hdr()
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set(k, v)
				t0 := time.Now()
				res, err := hc.Do(req)
				if err != nil {
					bad.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					ok.Add(1)
					mine = append(mine, time.Since(t0))
				} else {
					bad.Add(1)
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	el := time.Since(start)
	slices.Sort(lat)
	r := result{rps: float64(ok.Load()) / el.Seconds(), ok: ok.Load(), errors: bad.Load()}
	if len(lat) > 0 {
		r.p50, r.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return r
}
