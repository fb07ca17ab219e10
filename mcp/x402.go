package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/x402"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The x402 MCP transport (x402 specs/transports-v2/mcp.md): a payment in
// a tools/call's _meta, the settlement in the result's _meta, and a tool
// error whose structuredContent is the PaymentRequired when a premium tool
// must be paid.
const (
	MetaPayment         = "x402/payment"
	MetaPaymentResponse = "x402/payment-response"
)

// maxPaymentMeta bounds a payment in _meta, as JSON: what the API accepts
// as a PAYMENT-SIGNATURE header once base64-encoded.
const maxPaymentMeta = x402.MaxHeaderSize / 4 * 3

// x402Middleware speaks the x402 MCP transport for the premium tools: a
// call carrying _meta["x402/payment"] is forwarded to the API with that
// payment as PAYMENT-SIGNATURE (the API verifies and settles it; this
// server neither checks nor keeps it) and answered with the settlement in
// _meta["x402/payment-response"]; a call without payment, on a server
// with neither an API key nor a payer of its own, asks the API and
// answers its payment requirements as the tool error the transport
// defines (over HTTP only: on stdio, such a call is refused before any
// request, as it always was). Other calls pass through unchanged.
func (s *Server) x402Middleware(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		call, ok := req.(*mcpsdk.CallToolRequest)
		if method != "tools/call" || !ok || call.Params == nil || !slices.Contains(PremiumTools, call.Params.Name) {
			return next(ctx, method, req)
		}
		raw, paid := call.Params.Meta[MetaPayment]
		if !paid && (s.api.HasAPIKey() || s.api.CanPay() || !s.askPrice.Load()) {
			return next(ctx, method, req)
		}
		fwd := &client.Forward{}
		if paid {
			hdr, err := paymentHeader(raw)
			if err != nil {
				return toolError(fmt.Sprintf("%s: %v; nothing was sent to the API and nothing was charged", MetaPayment, err)), nil
			}
			fwd.Payment = hdr
		}
		res, err := next(client.ForwardPayment(ctx, fwd), method, req)
		if err != nil {
			return res, err
		}
		out, _ := res.(*mcpsdk.CallToolResult)
		if out == nil {
			return res, nil
		}
		if fwd.PaymentRequired != "" && (fwd.Status < 200 || fwd.Status > 299) {
			pr, derr := x402.DecodePaymentRequired(fwd.PaymentRequired)
			if derr != nil {
				return toolError("the attestd API asked for a payment this server cannot read: " + derr.Error()), nil
			}
			return paymentRequired(pr), nil
		}
		// A settled payment is reported even if the tool then failed (say,
		// a report whose hash did not check out): the caller was charged.
		if fwd.PaymentResponse != "" {
			if sr, derr := x402.DecodeSettleResponse(fwd.PaymentResponse); derr == nil {
				if out.Meta == nil {
					out.Meta = mcpsdk.Meta{}
				}
				out.Meta[MetaPaymentResponse] = sr
				s.log.Info("paid call forwarded", "tool", call.Params.Name, "transaction", sr.Transaction, "payer", sr.Payer, "amount", sr.Amount)
			}
		}
		return out, nil
	}
}

// paymentHeader turns a _meta payment (a PaymentPayload object) into the
// PAYMENT-SIGNATURE header, bounded and checked for shape only.
func paymentHeader(v any) (string, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return "", fmt.Errorf("want a PaymentPayload object, got %T", v)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("not JSON: %v", err)
	}
	if len(b) > maxPaymentMeta {
		return "", fmt.Errorf("%d bytes; at most %d are accepted", len(b), maxPaymentMeta)
	}
	h := base64.StdEncoding.EncodeToString(b)
	if _, _, err := x402.DecodePaymentV2(h); err != nil {
		return "", err
	}
	return h, nil
}

// paymentRequired is the transport's payment-required tool error: the
// PaymentRequired as structuredContent and, the same, as JSON text.
func paymentRequired(pr *x402.PaymentRequired) *mcpsdk.CallToolResult {
	b, _ := json.Marshal(pr)
	return &mcpsdk.CallToolResult{IsError: true, StructuredContent: json.RawMessage(b),
		Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: string(b)}}}
}

func toolError(msg string) *mcpsdk.CallToolResult {
	return &mcpsdk.CallToolResult{IsError: true, Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: msg}}}
}

// forwarding reports whether ctx carries an MCP caller's payment (or asks
// for its requirements): the premium tools then call the API without
// this server's key.
func forwarding(ctx context.Context) bool { return client.Forwarding(ctx) }
