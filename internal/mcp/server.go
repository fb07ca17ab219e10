package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/keyfile"

	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/buildinfo"
	"github.com/attestd/attestd/x402"
	"github.com/gagliardetto/solana-go"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Environment variables of the tool server.
const (
	EnvAPIURL     = "ATTESTD_API_URL"
	EnvAPIKey     = "ATTESTD_API_KEY"
	EnvAPITimeout = "ATTESTD_API_TIMEOUT"
	EnvPayer      = "ATTESTD_MCP_PAYER_KEYPAIR"
	EnvSpendCap   = "ATTESTD_MCP_SPEND_CAP"
	EnvMaxPrice   = "ATTESTD_MCP_MAX_PRICE"
	EnvPayerRPC   = "ATTESTD_MCP_SOLANA_RPC_URL"
	EnvLogKey     = "ATTESTD_MCP_LOG_KEY"
	EnvWitnesses  = "ATTESTD_MCP_LOG_WITNESSES"
	EnvQuorum     = "ATTESTD_MCP_LOG_WITNESS_QUORUM"
)

// Config configures a Server.
type Config struct {
	// APIURL is the attestd service (its root or its /api/v1 base).
	APIURL string
	// APIKey enables the premium tools.
	APIKey string
	// Timeout bounds each API call (client.DefaultTimeout when zero).
	Timeout time.Duration
	// HTTPClient replaces the client's HTTP client (nil: a default one).
	HTTPClient *http.Client
	// Payer, when set, pays premium calls per request (x402, USDC on
	// Solana) when there is no APIKey: at most MaxPrice per call and
	// SpendCap per session, in atomic units of USDC.
	Payer    solana.PrivateKey
	SpendCap uint64
	MaxPrice uint64
	// PayerRPC is a Solana RPC for blockhashes when the service sends none.
	PayerRPC string
	// LogKey is the transparency log's verifier key (name+hash+base64) as
	// the operator published it; empty: the service's own GET /log/key.
	LogKey string
	// LogWitnesses are the verifier keys (name+keyid+base64) of the
	// witnesses whose cosignatures get_attestation requires, LogQuorum of
	// them (0: all); none: the checkpoint's signature alone.
	LogWitnesses []string
	LogQuorum    int
	// Logger receives the server's logs; it must not write to stdout when
	// serving stdio. Nil discards them.
	Logger *slog.Logger

	// remote: the server is a node's own endpoint (NewRemote): callers
	// pay or present keys for themselves, and advice says so.
	remote bool
}

// Vars lists the variables ConfigFromEnv reads.
var Vars = []config.Var{
	{Name: EnvAPIURL, Default: client.DefaultBaseURL, Help: "(MCP tool server) the API it calls"},
	{Name: EnvAPIKey, Default: "(none)", Help: "(MCP tool server) enables the premium tools"},
	{Name: EnvAPITimeout, Default: "35s", Help: "(MCP tool server) deadline of each API call (the Go client's default: a paid call waits for its settlement)"},
	{Name: EnvPayer, Default: "(none)", Help: "(MCP tool server) without an API key, pay premium calls per request from this Solana CLI keypair's USDC"},
	{Name: EnvSpendCap, Default: "1", Help: "(MCP tool server) most USDC paid in one session"},
	{Name: EnvMaxPrice, Default: "0.1", Help: "(MCP tool server) most USDC paid for one call"},
	{Name: EnvPayerRPC, Default: "(none)", Help: "(MCP tool server) Solana RPC for blockhashes when the service gives none"},
	{Name: EnvLogKey, Default: "(none)", Help: "(MCP tool server) the transparency log's verifier key (name+hash+base64) get_attestation checks proofs with; unset: the service's own GET /log/key (reported as keySource service)"},
	{Name: EnvWitnesses, Default: "(none)", Help: "(MCP tool server) comma-separated verifier keys (name+keyid+base64) of the witnesses whose cosignatures get_attestation requires on the checkpoint (C2SP tlog-cosignature); unset: the log's signature alone"},
	{Name: EnvQuorum, Default: "(all of them)", Help: "(MCP tool server) how many of ATTESTD_MCP_LOG_WITNESSES must have cosigned the checkpoint"},
}

// ConfigFromEnv reads Vars with getenv.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	e := config.NewEnv(getenv)
	c := Config{
		APIURL:  e.String(EnvAPIURL, client.DefaultBaseURL),
		APIKey:  e.String(EnvAPIKey, ""),
		Timeout: e.Duration(EnvAPITimeout, 0, time.Millisecond, time.Hour),
	}
	var err error
	if c.SpendCap, err = x402.ParseAmount(e.String(EnvSpendCap, "1"), x402.USDCDecimals); err != nil {
		e.Fail(EnvSpendCap, "%v", err)
	}
	if c.MaxPrice, err = x402.ParseAmount(e.String(EnvMaxPrice, "0.1"), x402.USDCDecimals); err != nil {
		e.Fail(EnvMaxPrice, "%v", err)
	}
	c.PayerRPC = e.String(EnvPayerRPC, "")
	c.LogKey = e.String(EnvLogKey, "")
	if c.LogKey != "" {
		if _, err := client.NewLogVerifier(c.LogKey); err != nil {
			e.Fail(EnvLogKey, "not a verifier key (name+hash+base64)")
		}
	}
	for _, k := range strings.Split(e.String(EnvWitnesses, ""), ",") {
		if k = strings.TrimSpace(k); k != "" {
			c.LogWitnesses = append(c.LogWitnesses, k)
		}
	}
	if len(c.LogWitnesses) > 0 {
		c.LogQuorum = e.Int(EnvQuorum, len(c.LogWitnesses), 1, len(c.LogWitnesses))
	} else if e.String(EnvQuorum, "") != "" {
		e.Fail(EnvQuorum, "set without %s", EnvWitnesses)
	}
	if c.LogKey != "" && len(c.LogWitnesses) > 0 {
		if v, err := client.NewLogVerifier(c.LogKey); err == nil {
			if _, err := v.WithWitnesses(c.LogQuorum, c.LogWitnesses...); err != nil {
				e.Fail(EnvWitnesses, "%v", err)
			}
		}
	}
	if f := e.String(EnvPayer, ""); f != "" {
		k, err := keyfile.Keypair(f)
		if err != nil {
			e.Fail(EnvPayer, "%v", err)
		}
		c.Payer = solana.PrivateKey(k)
	}
	return c, e.Err()
}

// Server is the MCP tool server over one attestd API.
type Server struct {
	mcp    *mcpsdk.Server
	api    *client.Client
	log    *slog.Logger
	budget *budget // nil: the server does not pay
	// remote: a node's own endpoint (see Config.remote).
	remote bool
	// askPrice: a premium call without payment, key or payer asks the API
	// for its payment requirements (the x402 MCP transport); set once the
	// server is served over HTTP, where callers pay for themselves.
	askPrice atomic.Bool

	logKey logKey
}

// Instructions tell clients what the server is for.
const Instructions = `Tools over attestd, a read-only index of AI-agent attestations issued on Solana by the Prova program.
An attestation is a receipt for one agent action: the SHA-256 of the action payload (actionHash), signed with the agent's
Ed25519 key (agentId), an action type and a timestamp. Agents are identified by their pda (agentPda).
Use verify_action_hash to check that a payload is the one an attestation commits to.
For bulk work (more than a few pages of list_attestations) use list_datasets and download the daily Parquet files it lists.
Premium tools (get_full_history, get_forensic_report, bulk_verify) need ATTESTD_API_KEY in this server's environment,
or ATTESTD_MCP_PAYER_KEYPAIR to pay per call in USDC (each paid answer says what it cost, within a per-session cap).`

// RemoteInstructions tell clients of a node's /mcp endpoint what it is for.
const RemoteInstructions = `Tools over attestd, a read-only index of AI-agent attestations issued on Solana by the Prova program.
An attestation is a receipt for one agent action: the SHA-256 of the action payload (actionHash), signed with the agent's
Ed25519 key (agentId), an action type and a timestamp. Agents are identified by their pda (agentPda).
Use verify_action_hash to check that a payload is the one an attestation commits to.
For bulk work (more than a few pages of list_attestations) use list_datasets and download the daily Parquet files it lists.
Premium tools (get_full_history, get_forensic_report, bulk_verify) are paid per call by the caller: an x402 payment in
_meta["x402/payment"] (a call without one answers what to pay), or the caller's attestd API key on the MCP request
(Authorization: Bearer KEY or X-API-Key). Each MCP request counts as one request of the caller's rate limit.`

// New builds the server and registers its tools.
func New(cfg Config) (*Server, error) {
	opts := []client.Option{client.WithAPIKey(cfg.APIKey), client.WithTimeout(cfg.Timeout),
		client.WithUserAgent("attestd-mcp/" + buildinfo.Version)}
	if cfg.HTTPClient != nil {
		opts = append(opts, client.WithHTTPClient(cfg.HTTPClient))
	}
	var b *budget
	if cfg.Payer != nil && cfg.APIKey == "" {
		b = &budget{cap: cfg.SpendCap}
		opts = append(opts, client.WithPayer(client.Payer{Key: cfg.Payer, MaxAmount: cfg.MaxPrice, RPCURL: cfg.PayerRPC, Approve: b.approve}))
	}
	api, err := client.New(cfg.APIURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("mcp: %s: %w", EnvAPIURL, err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{api: api, log: log, budget: b, remote: cfg.remote}
	if len(cfg.LogWitnesses) > 0 {
		q := cfg.LogQuorum
		if q == 0 {
			q = len(cfg.LogWitnesses)
		}
		s.logKey.quorum, s.logKey.witnesses = q, cfg.LogWitnesses
		// Checked here, whatever the log key: a bad witness key is a
		// mistake at start, not a failed proof later.
		if _, err := witnessPolicy(q, cfg.LogWitnesses); err != nil {
			return nil, fmt.Errorf("mcp: %s: %w", EnvWitnesses, err)
		}
	}
	if cfg.LogKey != "" {
		v, err := client.NewLogVerifier(cfg.LogKey)
		if err != nil {
			return nil, fmt.Errorf("mcp: %s: %w", EnvLogKey, err)
		}
		if s.logKey.pinned, err = s.logKey.policy(v); err != nil {
			return nil, fmt.Errorf("mcp: %s: %w", EnvWitnesses, err)
		}
	}
	instructions := Instructions
	if s.remote {
		instructions = RemoteInstructions
	}
	s.mcp = mcpsdk.NewServer(&mcpsdk.Implementation{Name: "attestd", Title: "attestd attestation index",
		Version: buildinfo.Version}, &mcpsdk.ServerOptions{Instructions: instructions, Logger: log,
		// Tools only, and a fixed set of them: no list_changed to listen for.
		Capabilities: &mcpsdk.ServerCapabilities{Tools: &mcpsdk.ToolCapabilities{}},
		SetCacheable: func(_ context.Context, _ mcpsdk.Request, c *mcpsdk.Cacheable) {
			c.TTLMs, c.CacheScope = int(ToolListTTL/time.Millisecond), "public"
		}})
	if err := s.addTools(); err != nil {
		return nil, err
	}
	s.mcp.AddReceivingMiddleware(s.toolsOnly, s.x402Middleware)
	return s, nil
}

// MCP is the underlying SDK server (to connect it to any transport).
func (s *Server) MCP() *mcpsdk.Server { return s.mcp }

// API is the REST client the tools call.
func (s *Server) API() *client.Client { return s.api }

// ServeStdio serves one client on stdin/stdout until it disconnects or ctx ends.
func (s *Server) ServeStdio(ctx context.Context) error {
	s.log.Info("mcp serving on stdio", "api", s.api.BaseURL(), "premium", s.api.HasAPIKey() || s.api.CanPay(), "pays", s.api.CanPay())
	err := s.mcp.Run(ctx, &mcpsdk.StdioTransport{})
	if err != nil && (ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, mcpsdk.ErrConnectionClosed)) {
		return nil
	}
	return err
}

// Handler is the stateless streamable-HTTP handler (JSON responses, no
// sessions, so any number of nodes can serve it without sticky routing).
func (s *Server) Handler() http.Handler {
	s.askPrice.Store(true)
	return boundBody(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return s.mcp },
		&mcpsdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: s.log}))
}

// maxRequestBody bounds a request to the HTTP transport (a tool call with
// 1000 ids and a payment in _meta is under 100 KB).
const maxRequestBody = 1 << 20

// boundBody refuses request bodies over maxRequestBody before they are
// decoded.
func boundBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > maxRequestBody {
			http.Error(w, "request body larger than 1 MiB", http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxRequestBody)
		h.ServeHTTP(w, r)
	})
}

// ListenAddr completes addr for ServeHTTP: a missing host means 127.0.0.1,
// so the server is local unless a host is named explicitly.
func ListenAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("mcp: listen address %q: want host:port or :port: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// ServeHTTP serves the streamable-HTTP transport at /mcp (and /) on ln until
// ctx ends, then shuts down within 5 seconds. It logs the address once
// serving, so callers of `attestd mcp --http 127.0.0.1:0` can find the port.
func (s *Server) ServeHTTP(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	h := s.Handler()
	mux.Handle("/mcp", h)
	mux.Handle("/", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("mcp serving streamable HTTP", "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String()+"/mcp",
		"api", s.api.BaseURL(), "premium", s.api.HasAPIKey() || s.api.CanPay(), "pays", s.api.CanPay())
	select {
	case err := <-errc:
		return fmt.Errorf("mcp: serve HTTP: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("mcp: shut down HTTP: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("mcp: serve HTTP: %w", err)
	}
	return nil
}
