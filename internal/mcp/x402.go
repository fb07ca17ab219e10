package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/x402"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The x402 MCP transport (x402 specs/transports-v2/mcp.md, tool-result
// binding): a payment in a tools/call's _meta, the settlement in the
// result's _meta, and a payment error as a tool error (see paymentError).
const (
	MetaPayment         = "x402/payment"
	MetaPaymentResponse = "x402/payment-response"
	// ErrorKey names the payment error in content[0].text.
	ErrorKey = "x402/error"
	// ErrorCode is the code of every payment error: required, invalid or
	// not settled (the x402 MCP transport's 402).
	ErrorCode = 402
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
// answers its payment requirements as the transport's payment error
// (over HTTP only: on stdio, such a call is refused before any request,
// as it always was). A payment the API refuses, or whose settlement
// fails, is the same payment error with the API's reason; a payment
// that is not a PaymentPayload is too, with the requirements asked of
// the API unpaid. Other calls pass through unchanged.
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
		// malformed says why the caller's payment was not sent (it is not
		// a PaymentPayload); the call then only asks for the requirements.
		var malformed string
		if paid {
			hdr, err := paymentHeader(raw)
			if err != nil {
				malformed = fmt.Sprintf("%s: %v; nothing was sent to the API and nothing was charged", MetaPayment, err)
			} else {
				fwd.Payment = hdr
			}
		}
		res, err := next(client.ForwardPayment(ctx, fwd), method, req)
		if err != nil {
			return res, err
		}
		out, _ := res.(*mcpsdk.CallToolResult)
		if out == nil {
			return res, nil
		}
		var settled *x402.SettleResponse
		if fwd.PaymentResponse != "" {
			if sr, derr := x402.DecodeSettleResponse(fwd.PaymentResponse); derr == nil {
				settled = sr
			} else {
				s.log.Warn("unreadable PAYMENT-RESPONSE from the API", "tool", call.Params.Name, "err", derr)
			}
		}
		if fwd.PaymentRequired != "" && (fwd.Status < 200 || fwd.Status > 299) {
			pr, derr := x402.DecodePaymentRequired(fwd.PaymentRequired)
			if derr != nil {
				return toolError("the attestd API asked for a payment this server cannot read: " + derr.Error()), nil
			}
			if malformed != "" {
				pr.Error = x402.ReasonInvalidPayload + ": " + malformed
			}
			if s.remote {
				// On a node's endpoint the tool is what is discovered and
				// called: its bazaar says how (the route's said how to
				// call the route). Over `attestd mcp --http` the route's
				// stays: that server is not what the origin lists.
				if err := toolBazaar(pr, call.Params.Name); err != nil {
					s.log.Warn("the route's bazaar extension kept", "tool", call.Params.Name, "err", err)
				}
			}
			level := slog.LevelDebug // an unpaid call: the price, asked
			if paid {
				level = slog.LevelInfo // a payment refused or not settled
			}
			s.log.Log(ctx, level, "payment error", "tool", call.Params.Name, "status", fwd.Status, "error", pr.Error)
			return paymentError(pr, settled), nil
		}
		if malformed != "" {
			// The API asked for no payment (or did not answer): nothing to
			// pay, and the caller's payment was not sent.
			return toolError(malformed), nil
		}
		// A settled payment is reported even if the tool then failed (say,
		// a report whose hash did not check out): the caller was charged.
		if settled != nil {
			if out.Meta == nil {
				out.Meta = mcpsdk.Meta{}
			}
			out.Meta[MetaPaymentResponse] = settled
			s.log.Info("paid call forwarded", "tool", call.Params.Name, "transaction", settled.Transaction, "payer", settled.Payer, "amount", settled.Amount)
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

// paymentError is the transport's payment error (payment required, payment
// invalid, settlement failed): a tool error whose content[0].text is one
// JSON object, {"x402/error": {"code": 402, "message", "data":
// PaymentRequired}}, that also carries the PaymentRequired's members at
// its top level, so that clients reading the wrapper and clients parsing
// content[0].text as the PaymentRequired itself both find it. There is no
// structuredContent: every premium tool declares an outputSchema (the
// answer it sells), and MCP clients check structuredContent against it
// even on an error (the official TypeScript SDK fails such a call with
// -32602), so a PaymentRequired there would hide the requirements from
// the caller. A failed settlement's SettleResponse, when the API sent
// one, is in _meta["x402/payment-response"]. The message is the
// PaymentRequired's error (the API's reason), else "Payment required".
func paymentError(pr *x402.PaymentRequired, settled *x402.SettleResponse) *mcpsdk.CallToolResult {
	msg := pr.Error
	if msg == "" {
		msg = "Payment required"
	}
	b, _ := json.Marshal(paymentErrorText{Wrapper: wrappedError{Code: ErrorCode, Message: msg, Data: pr}, PaymentRequired: pr})
	out := &mcpsdk.CallToolResult{IsError: true, Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: string(b)}}}
	if settled != nil {
		out.Meta = mcpsdk.Meta{MetaPaymentResponse: settled}
	}
	return out
}

// paymentErrorText is content[0].text of a payment error.
type paymentErrorText struct {
	Wrapper wrappedError `json:"x402/error"`
	*x402.PaymentRequired
}

type wrappedError struct {
	Code    int                   `json:"code"`
	Message string                `json:"message"`
	Data    *x402.PaymentRequired `json:"data"`
}

func toolError(msg string) *mcpsdk.CallToolResult {
	return &mcpsdk.CallToolResult{IsError: true, Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: msg}}}
}

// forwarding reports whether ctx carries an MCP caller's payment (or asks
// for its requirements): the premium tools then call the API without
// this server's key.
func forwarding(ctx context.Context) bool { return client.Forwarding(ctx) }
