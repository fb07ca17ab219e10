package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/indexer"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/buildinfo"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/settings"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/stream"
	"github.com/attestd/attestd/internal/tracing"
	"github.com/attestd/attestd/internal/translog"
	"github.com/attestd/attestd/internal/web"
	"github.com/attestd/attestd/internal/webhook/queue"
	"github.com/attestd/attestd/internal/webhookapi"
	"github.com/attestd/attestd/ratelimit"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/receipt"
	"github.com/attestd/attestd/x402/verifier"
	"github.com/attestd/attestd/x402/x402fiber"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"gocloud.dev/blob"
)

// ServeOptions is what the command running a node adds to its settings.
type ServeOptions struct {
	// SkipDrain, when closed, ends the drain early (a second SIGTERM);
	// nil: never.
	SkipDrain <-chan struct{}
	// Listening is called once the API's address is bound (nil: nothing).
	Listening func(net.Addr)
	// Listener is the API's address already bound by the command, which
	// then holds it from its first step (nil: the node binds
	// ATTESTD_HTTP_ADDR itself). The node serves on it and closes it.
	Listener net.Listener
}

// listener is the API's listener: the one the command bound, or addr
// bound now.
func (opt ServeOptions) listener(addr string, reusePort bool) (net.Listener, error) {
	if opt.Listener != nil {
		return opt.Listener, nil
	}
	return BindHTTP(addr, reusePort)
}

// Serve runs one API node from its settings (read once, checked) until
// ctx ends, then drains. Every feature a node runs is constructed here, in
// the order a request meets it: first what app.New takes (appDeps: steps 1
// to 3), then the features that add routes to the API (Routes, steps 4 to
// 10). No feature joins after the node is wired.
func Serve(ctx context.Context, s settings.Settings, log *slog.Logger, opt ServeOptions) error {
	cfg := s.Common
	// The API's address is bound first, so a taken port is said before
	// anything starts; with ATTESTD_REUSE_PORT a replacement binds it beside
	// a node that drains.
	ln, err := opt.listener(cfg.HTTPAddr, cfg.ReusePort)
	if err != nil {
		return err
	}
	defer ln.Close()
	n, err := open(ctx, s, log)
	if err != nil {
		return err
	}
	defer n.close()
	// 1 to 3: the connection cap and the rate limit, the log's origin
	// routes, /health's contributors, the public read API and its live
	// stream.
	deps, logSrv, err := n.appDeps(ctx)
	if err != nil {
		return err
	}
	api := app.New(deps)
	// 4. The web application at / (explorer, console) and its Sign-In-With-
	//    Solana sessions, which act as admins of their account on the
	//    /keys and /webhooks routes.
	site, err := n.web()
	if err != nil {
		return fmt.Errorf("web application: %w", err)
	}
	site.Routes(api)
	// 5. API keys: account holders manage theirs at /keys (with a key, or
	//    signed in to the console).
	keys, err := n.apiKeys(ctx, site)
	if err != nil {
		return fmt.Errorf("api keys: %w", err)
	}
	keys.Routes(api)
	// 6. Pay per request for the premium routes (x402): on when
	//    ATTESTD_X402_PAY_TO is set; otherwise a premium request without a
	//    key is 401. With it, discovery for paying agents at the origin's
	//    root (/.well-known/x402, /llms.txt) and, with a receipt key, the
	//    key that signs receipts (/.well-known/jwks.json, did.json).
	payPerRequest, err := n.payPerRequest(ctx, api)
	if err != nil {
		return fmt.Errorf("pay per request: %w", err)
	}
	// 7. The premium routes, behind a key (or a payment).
	if err := n.premium(api, keys, payPerRequest); err != nil {
		return fmt.Errorf("premium: %w", err)
	}
	// 8. Webhooks: account holders manage theirs at /webhooks (workers
	//    deliver them: attestd worker).
	if err := n.webhooks(api, keys); err != nil {
		return fmt.Errorf("webhooks: %w", err)
	}
	// 9. The transparency log's API routes: its verifier key, inclusion
	//    and consistency proofs (503 until ATTESTD_LOG_KEY is set; the
	//    appender runs with attestd index).
	logSrv.Routes(api)
	// 10. The MCP tools at /mcp (stateless streamable HTTP), answered from
	//     this node's own API in process, each call as its caller: its
	//     address's limit, its API key, its payments.
	if err := n.remoteMCP(api); err != nil {
		return fmt.Errorf("remote MCP: %w", err)
	}

	ServeInternal(ctx, cfg.MetricsAddr, n.reg, log, cfg.Pprof, nil)
	// On SIGTERM: /health says draining for ATTESTD_DRAIN_TIMEOUT while
	// requests are still served (a second signal ends it), then the
	// graceful shutdown within ATTESTD_SHUTDOWN_TIMEOUT.
	return api.ListenWith(ctx, cfg.HTTPAddr, app.ListenOptions{Drain: cfg.DrainTimeout, SkipDrain: opt.SkipDrain,
		Grace: cfg.ShutdownTimeout, Listener: ln, Listening: func(addr net.Addr) {
			log.Info("serving", "addr", addr.String(), "version", buildinfo.Version)
			if opt.Listening != nil {
				opt.Listening(addr)
			}
		}})
}

// appDeps builds what app.New takes, in the order a request meets it;
// the log's server is returned for its API routes (step 9).
func (n *node) appDeps(ctx context.Context) (app.Deps, *translog.Server, error) {
	s, cfg := n.s, n.cfg
	// What public answers say to browsers, CDNs and the edge.
	deps := app.Deps{Store: n.store, Cache: n.cache, Logger: n.log, Registerer: n.reg, AccessLogAll: cfg.AccessLogAll,
		HTTPCache: s.HTTPCache}
	deps.Trace = tracing.Middleware() // each request's server span (nil when tracing is off)
	// 1. A cap on the connections one client IP holds open (trusted
	//    proxies exempt), then the per-IP sliding-window request limit in
	//    front of every public route.
	deps.ConnLimit = app.ConnLimit{PerIP: cfg.MaxConnsPerIP, Exempt: ratelimit.Contains(s.RateLimit.TrustedProxies)}
	if err := n.rateLimit(s.RateLimit, &deps); err != nil {
		return deps, nil, fmt.Errorf("rate limit: %w", err)
	}
	// 1b. The transparency log's checkpoint and tiles, at the log's origin
	//     (/log/...), outside that limit: their own per-IP guard. /health
	//     reports the log, the overview its newest checkpoint.
	logSrv, err := n.transparencyLog(ctx, &deps)
	if err != nil {
		return deps, nil, fmt.Errorf("transparency log: %w", err)
	}
	// 1c. The daily dataset (/dataset/: the index, manifests and Parquet
	//     files, from the bucket, never local disk), outside that limit
	//     too: its own per-IP guard in requests and bytes.
	if err := n.dataset(ctx, &deps); err != nil {
		return deps, nil, fmt.Errorf("dataset: %w", err)
	}
	// 2. /health reports the indexer's progress and the chain's reachability.
	if err := n.indexerHealth(&deps); err != nil {
		return deps, nil, fmt.Errorf("indexer health: %w", err)
	}
	// 3. The public read API; with payments on, its OpenAPI document
	//    prices each payable operation (x-x402) from the same catalog as
	//    the 402s.
	if s.Verifier.Enabled() {
		deps.OpenAPIPatch = s.Verifier.PatchOpenAPI
	}
	// 3b. Its live stream (GET /attestations/stream): one subscription per
	//     node, streams capped per client IP as the rate limiter resolves
	//     it; they end as soon as the node starts draining.
	if deps.Stream, err = n.stream(ctx); err != nil {
		return deps, nil, fmt.Errorf("live stream: %w", err)
	}
	return deps, logSrv, nil
}

// node is what every feature of a serving process shares.
type node struct {
	s   settings.Settings
	cfg config.Config
	log *slog.Logger
	// resolver finds a request's client IP as the rate limiter does (the
	// trusted proxies): the web app, the log's guard and the stream use it.
	resolver *ratelimit.IPResolver
	store    *store.Store
	redis    redis.UniversalClient
	cache    *cache.Cache
	reg      *prometheus.Registry
	// datasets serves the daily dataset (the web page and MCP read its index).
	datasets *dataset.Server
	// closers run at shutdown, last added first.
	closers []func()
}

// open connects to Postgres (lazily: a node serves cached reads while
// Postgres is down), Redis and the cache.
func open(ctx context.Context, s settings.Settings, log *slog.Logger) (*node, error) {
	cfg := s.Common
	resolver, err := ratelimit.NewIPResolver(s.RateLimit.TrustedProxies, s.RateLimit.ProxyHeader)
	if err != nil {
		return nil, err
	}
	n := &node{s: s, cfg: cfg, log: log, reg: NewRegistry(), resolver: resolver}
	// Reads that carry a cache epoch may use read replicas (see store.AtLeast).
	replicas := s.Replicas
	replicas.Registerer, replicas.Logger = n.reg, log
	st, err := OpenStore(ctx, cfg, true, replicas)
	if err != nil {
		return nil, err
	}
	if len(replicas.URLs) > 0 {
		log.Info("read replicas", "count", len(replicas.URLs), "max_lag", replicas.MaxLag.String(), "wait", replicas.Wait.String())
	}
	n.store = st
	n.closers = append(n.closers, st.Close)
	if err := st.Ping(ctx); err != nil {
		log.Warn("postgres does not answer yet; serving cached reads only until it does", "err", err)
	}
	if n.redis, err = OpenRedis(ctx, cfg); err != nil {
		n.close()
		return nil, err
	}
	n.closers = append(n.closers, func() { n.redis.Close() })
	if n.cache, err = openCache(ctx, cfg, n.redis, st, n.reg, log, cacheRole{reads: true}); err != nil {
		n.close()
		return nil, err
	}
	n.closers = append(n.closers, n.cache.Close)
	return n, nil
}

func (n *node) close() {
	for i := len(n.closers) - 1; i >= 0; i-- {
		n.closers[i]()
	}
}

// rateLimit puts the limiter in front of every route of the public
// listener (the metrics listener is separate and not limited).
func (n *node) rateLimit(cfg ratelimit.Config, deps *app.Deps) error {
	if cfg.Limit == 0 {
		n.log.Warn("rate limiting disabled (ATTESTD_RATE_LIMIT=0)")
		return nil
	}
	cfg.Resolver = n.resolver // made once, in open
	l, err := ratelimit.New(n.redis, cfg, n.reg, n.log)
	if err != nil {
		return err
	}
	n.closers = append(n.closers, l.Close)
	deps.Middleware = append(deps.Middleware, l.Middleware())
	deps.Degradations = append(deps.Degradations, app.Degradation{Active: l.Degraded,
		Reason: "rate limit: Redis does not answer in time, so each node limits its clients on its own"})
	n.log.Info("rate limiting", "limit", cfg.Limit, "window", cfg.Window.String(), "resolver", l.Resolver().String())
	return nil
}

// indexerHealth reads the indexer's progress from the checkpoints it
// writes in Postgres, and probes the chain RPC.
func (n *node) indexerHealth(deps *app.Deps) error {
	sr := indexer.NewStatusReader(n.store, n.s.ChainRPC)
	probe := indexer.NewChainProbe(n.s.ChainRPC)
	deps.Indexer = func(ctx context.Context) (app.IndexerStatus, error) {
		s, err := sr.Read(ctx)
		return app.IndexerStatus(s), err
	}
	deps.Chain = func(ctx context.Context) app.ChainStatus {
		return app.ChainStatus{RPC: probe.RPC(), Reachable: probe.Reachable(ctx)}
	}
	return nil
}

// apiKeys starts the key service: lookups cached per node, revocations
// heard over Redis pub/sub.
func (n *node) apiKeys(ctx context.Context, sessions apikey.Sessions) (*apikey.Service, error) {
	svc, err := apikey.New(ctx, apikey.Deps{Config: n.s.APIKeys, Store: n.store, Redis: n.redis, Logger: n.log, Registerer: n.reg,
		Sessions: sessions, Channel: n.cfg.RedisPrefix + apikey.ChannelSuffix})
	if err != nil {
		return nil, err
	}
	n.closers = append(n.closers, svc.Close)
	return svc, nil
}

// web builds the web application: embedded pages and assets, sign-in
// nonces and sessions in Redis, for the node's public origin and network;
// new accounts bounded per client IP as the rate limiter resolves it.
func (n *node) web() (*web.Web, error) {
	cfg := n.s.Web
	var err error
	if cfg.Origin, err = n.cfg.PublicOrigin(); err != nil {
		n.log.Warn("web console off (its routes answer 503)", "reason", err.Error())
	}
	if n.s.Verifier.Enabled() {
		cfg.ChainID = web.ChainFor(n.s.Verifier.Network)
	}
	w, err := web.New(web.Deps{Store: n.store, Redis: n.redis, Prefix: n.cfg.RedisPrefix + "web:", Config: cfg, Resolver: n.resolver, Logger: n.log})
	if err != nil {
		return nil, err
	}
	if !w.Off() {
		n.log.Info("web application at /", "origin", cfg.Origin.String(), "chain", w.ChainID(), "session_ttl", cfg.SessionTTL.String(),
			"new_accounts_per_hour", cfg.NewAccountsPerHour)
	}
	return w, nil
}

// payPerRequest builds the x402 verifier and its middleware when payments
// are configured (nil otherwise): replay claims in Redis, the ledger in
// Postgres, metrics on the node's registry.
func (n *node) payPerRequest(ctx context.Context, r httpapi.Router) (fiber.Handler, error) {
	cfg := n.s.Verifier
	if !cfg.Enabled() {
		n.log.Info("pay per request off (set ATTESTD_X402_PAY_TO to turn it on)")
		return nil, nil
	}
	origin, err := n.cfg.PublicOrigin()
	if err != nil {
		// A 402 must describe the resource at the node's public origin,
		// never one a request header names.
		n.log.Warn("pay per request off (premium requests without a key answer 503)", "reason", err.Error())
		return x402fiber.Unavailable, nil
	}
	var signer *receipt.Signer
	if cfg.ReceiptKey != nil {
		if signer, err = receipt.NewSigner(cfg.ReceiptKey, origin); err != nil {
			return nil, err
		}
		n.log.Info("x402 receipts on", "kid", signer.KeyID(), "jwks", origin.URL(x402fiber.PathJWKS))
	} else {
		n.log.Info("x402 receipts off (set " + receipt.EnvKey + " to sign one for every paid answer)")
	}
	v, err := verifier.New(ctx, verifier.Deps{Config: cfg, Redis: n.redis, KeyPrefix: n.cfg.RedisPrefix + "x402:",
		Ledger: n.store, Logger: n.log, Registerer: n.reg, Receipts: signer})
	if err != nil {
		return nil, err
	}
	// The discovery documents list the MCP endpoint's paid tools too (it
	// is served whenever payments are: both need the public origin).
	tools, err := mcp.Endpoint()
	if err != nil {
		v.Close()
		return nil, err
	}
	disc, err := x402fiber.NewDiscovery(v, origin, x402fiber.WithMCP(tools))
	if err != nil {
		v.Close()
		return nil, err
	}
	disc.Routes(r)
	n.closers = append(n.closers, v.Close)
	v.Preflight(ctx)
	settler := "facilitator " + cfg.FacilitatorURL
	if cfg.SelfSettling() {
		settler = "self (fee payer " + cfg.FeePayer.PublicKey().String() + ", rpc " + cfg.RPCURL + ")"
	}
	var prices []string // "path=amount", readable in text and JSON logs alike
	for path, units := range cfg.Prices {
		prices = append(prices, path+"="+x402.FormatAmount(units, cfg.Decimals))
	}
	sort.Strings(prices)
	n.log.Info("pay per request on", "network", cfg.Network.CAIP2, "pay_to", cfg.PayTo.String(), "asset", cfg.Asset.String(),
		"settler", settler, "prices", strings.Join(prices, " "), "origin", origin.String())
	return x402fiber.New(v, origin), nil
}

// premium adds the premium routes behind keys; payPerRequest (nil: none)
// answers premium requests that carry no key.
func (n *node) premium(r httpapi.Router, keys *apikey.Service, payPerRequest fiber.Handler) error {
	h, err := premium.New(premium.Deps{Config: n.s.Premium, Store: n.store, Cache: n.cache, Logger: n.log,
		Auth: keys.Require(apikey.RequireOptions{OnMissingKey: payPerRequest})})
	if err != nil {
		return err
	}
	h.Routes(r)
	rules := h.Rules()
	n.log.Info("api keys and premium routes enabled", "key_cache_ttl", keys.CacheTTL().String(),
		"pay_per_request", payPerRequest != nil, slog.Group("report_rules", "burst_per_minute", rules.BurstPerMinute,
			"long_gap_seconds", rules.LongGapSeconds, "max_anomalies_per_kind", rules.MaxAnomaliesPerKind, "recheck_newest", rules.RecheckNewest))
	return nil
}

// webhooks adds the /webhooks routes behind keys.
func (n *node) webhooks(r httpapi.Router, keys *apikey.Service) error {
	wcfg := n.s.Webhook
	h, err := webhookapi.NewAPI(webhookapi.APIDeps{Store: n.store, Queue: queue.New(n.redis, n.cfg.RedisPrefix, wcfg.Partitions),
		Config: wcfg, Logger: n.log, Origin: deliveryOrigin(n.cfg), Auth: keys.Require(apikey.RequireOptions{AllowSession: true})})
	if err != nil {
		return err
	}
	h.Routes(r)
	if !wcfg.Enabled() {
		n.log.Warn("webhooks disabled: set ATTESTD_WEBHOOK_SECRET_KEYS (the /webhooks routes answer 503)")
		return nil
	}
	n.log.Info("webhook routes enabled", "max_per_account", wcfg.MaxPerAccount, "allow_loopback", wcfg.AllowLoopback,
		"secret_keys", fmt.Sprint(wcfg.Keys.IDs()))
	return nil
}

// transparencyLog builds the log's server (it serves what the appender
// stored, for the key's origin) and puts its checkpoint and tiles among
// deps' unlimited routes, guarded per client IP as the limiter resolves it.
func (n *node) transparencyLog(ctx context.Context, deps *app.Deps) (*translog.Server, error) {
	lcfg := n.s.Log
	srv := translog.NewServer(translog.ServerDeps{Store: n.store, Cache: n.cache, Config: lcfg, Logger: n.log, ClientIP: n.resolver.ClientIP})
	srv.Start(ctx)
	deps.Unlimited = append(deps.Unlimited, srv.OriginRoutes()...)
	deps.Log = srv.Health       // /health: what is served, and who witnessed it
	deps.LogStatus = srv.Status // the overview's log size and checkpoint age
	if !lcfg.Enabled() {
		n.log.Info("transparency log off (its routes answer 503): set ATTESTD_LOG_KEY")
		return srv, nil
	}
	n.log.Info("transparency log routes on", "origin", lcfg.Origin(), "checkpoint", srv.Path()+"/checkpoint", "keys", len(lcfg.Keys()),
		"verifier_key", lcfg.Key.VerifierKey, "tile_rate", lcfg.TileRate, "witnesses", len(lcfg.Witnesses), "quorum", lcfg.Quorum)
	return srv, nil
}

// stream starts the node's stream hub and returns the live stream's
// handler, which serves from it.
func (n *node) stream(ctx context.Context) (fiber.Handler, error) {
	scfg := n.s.Stream
	hub := stream.NewHub(stream.HubDeps{Store: n.store, Redis: n.redis, Prefix: n.cfg.RedisPrefix, Config: scfg, Logger: n.log})
	n.closers = append(n.closers, hub.Close)
	go func() { // SIGTERM: streams end now (clients resume on another node), not at the drain's end
		<-ctx.Done()
		hub.Drain()
	}()
	h := stream.New(stream.Deps{Hub: hub, ClientIP: n.resolver.ClientIP, Registerer: n.reg})
	n.log.Info("live stream", "max_per_ip", scfg.MaxPerIP, "max", scfg.MaxStreams, "heartbeat", scfg.Heartbeat.String(),
		"lifetime", scfg.Lifetime.String(), "retention", scfg.Retention.String())
	return h.Serve, nil
}

// dataset opens the dataset's bucket and puts its routes among deps'
// unlimited routes (503 when no bucket is configured).
func (n *node) dataset(ctx context.Context, deps *app.Deps) error {
	cfg := n.s.Dataset
	var bucket *blob.Bucket
	if cfg.Enabled() {
		var err error
		if bucket, err = cfg.OpenBucket(ctx); err != nil {
			return err
		}
		n.closers = append(n.closers, func() { bucket.Close() })
		n.log.Info("dataset routes on", "path", "/dataset/", "prefix", cfg.Prefix, "rate", cfg.Rate, "mib_rate", cfg.MiBRate)
	} else {
		n.log.Info("dataset off (/dataset/ answers 503): set ATTESTD_DATASET_BUCKET")
	}
	srv := dataset.NewServer(dataset.ServerDeps{Bucket: bucket, Config: cfg, ClientIP: n.resolver.ClientIP, Logger: n.log, Registerer: n.reg,
		WriteTimeout: deps.Timeouts.Write})
	n.datasets = srv
	deps.Unlimited = append(deps.Unlimited, srv.Routes()...)
	return nil
}
