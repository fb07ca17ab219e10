package tracing

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"
)

// SolanaRPC is rpc.New(url), with a client span per call (named after the
// JSON-RPC method, "chain rpc getLatestBlockhash") and a traceparent on
// each request when tracing is on.
func SolanaRPC(url string) *rpc.Client {
	if !Enabled() {
		return rpc.New(url)
	}
	// As rpc.New's client: the same timeouts and connection limits.
	tr := &http.Transport{
		IdleConnTimeout: 5 * time.Minute, MaxConnsPerHost: 9, MaxIdleConnsPerHost: 9,
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Minute, KeepAlive: 180 * time.Second}).DialContext,
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	hc := &http.Client{Timeout: 5 * time.Minute, Transport: &transport{name: "chain rpc", next: tr, method: jsonRPCMethod}}
	return rpc.NewWithCustomRPCClient(jsonrpc.NewClientWithOpts(url, &jsonrpc.RPCClientOpts{HTTPClient: hc}))
}

// jsonRPCMethod is the "method" of a JSON-RPC request's body ("" when it
// cannot be read without consuming the body).
func jsonRPCMethod(req *http.Request) string {
	if req.GetBody == nil {
		return ""
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer body.Close()
	var buf [512]byte
	n, _ := io.ReadFull(body, buf[:])
	b := buf[:n]
	const key = `"method":"`
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return ""
	}
	b = b[i+len(key):]
	j := bytes.IndexByte(b, '"')
	if j <= 0 || j > 64 {
		return ""
	}
	return string(b[:j])
}
