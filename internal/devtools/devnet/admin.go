package devnet

import (
	"encoding/json"
	"time"

	"github.com/gagliardetto/solana-go"
)

// adminMethods script faults and traffic for tests and local runs; they
// are not part of Solana's API and all start with devnet_.
var adminMethods = map[string]handler{
	"devnet_generate":          adminGenerate,
	"devnet_failTransaction":   adminFail,
	"devnet_foreignEvent":      adminForeign,
	"devnet_dropTransaction":   adminDrop,
	"devnet_dropConnections":   adminDropConnections,
	"devnet_duplicateDelivery": adminDuplicate,
	"devnet_revokeAgent":       adminRevoke,
	"devnet_advanceSlots":      adminAdvance,
	"devnet_hideTransaction":   adminHide,
	"devnet_insertTransaction": adminInsert,
	"devnet_fund":              adminFund,
}

// adminHide: [{"signature": "<base58>" | "next": n, "calls": n | "ms": n,
// "statuses": bool}]. getTransaction answers null for that transaction (or
// for each of the next n to land) for the next `calls` calls or for `ms`
// milliseconds; with statuses, getSignatureStatuses does not know it
// either. It stays listed by getSignaturesForAddress.
func adminHide(c *Chain, params []json.RawMessage) (any, *rpcError) {
	var p struct {
		Signature string
		Next      int
		Calls     int
		Ms        int64
		Statuses  bool
	}
	if len(params) == 0 || json.Unmarshal(params[0], &p) != nil {
		return nil, invalidParams(`want [{"signature": "..." or "next": n, "calls": n or "ms": n, "statuses": bool}]`)
	}
	h := Hide{Calls: p.Calls, For: time.Duration(p.Ms) * time.Millisecond, Statuses: p.Statuses}
	var err error
	switch {
	case (p.Signature != "") == (p.Next > 0):
		return nil, invalidParams("name one signature or a count of next transactions")
	case p.Signature != "":
		sig, rerr := parseSignature(p.Signature)
		if rerr != nil {
			return nil, rerr
		}
		err = c.HideTransaction(sig, h)
	default:
		err = c.HideNextTransactions(p.Next, h)
	}
	if err != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: err.Error()}
	}
	return true, nil
}

// adminInsert: [{"agent": i, "slot": s, "attestations": n}]. A fork adds a
// record_attestations of n (default 1) attestations by agent i to the
// earlier, unfinalized slot s; answers its signature.
func adminInsert(c *Chain, params []json.RawMessage) (any, *rpcError) {
	var p struct {
		Agent        int
		Slot         uint64
		Attestations int
	}
	if len(params) == 0 || json.Unmarshal(params[0], &p) != nil {
		return nil, invalidParams(`want [{"agent": i, "slot": s, "attestations": n}]`)
	}
	if p.Attestations == 0 {
		p.Attestations = 1
	}
	sig, err := c.InsertTransaction(contextBackground(), p.Agent, p.Attestations, p.Slot)
	if err != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: err.Error()}
	}
	return sig.String(), nil
}

func adminGenerate(c *Chain, params []json.RawMessage) (any, *rpcError) {
	var p struct{ Agents, Attestations, Batch int }
	if len(params) > 0 {
		if err := json.Unmarshal(params[0], &p); err != nil {
			return nil, invalidParams("%v", err)
		}
	}
	g, err := c.Generate(contextBackground(), p.Agents, p.Attestations, p.Batch)
	if err != nil {
		return nil, &rpcError{Code: codeInternal, Message: err.Error()}
	}
	return map[string]any{"attestations": g.Attestations, "transactions": len(g.Records) + len(g.Registrations)}, nil
}

func agentParam(params []json.RawMessage) int {
	var i int
	if len(params) > 0 {
		_ = json.Unmarshal(params[0], &i)
	}
	return i
}

func sigResult(sig solana.Signature, err error) (any, *rpcError) {
	if err != nil {
		return nil, &rpcError{Code: codeInternal, Message: err.Error()}
	}
	return sig.String(), nil
}

func adminFail(c *Chain, params []json.RawMessage) (any, *rpcError) {
	return sigResult(c.FailTransaction(contextBackground(), agentParam(params)))
}

func adminForeign(c *Chain, params []json.RawMessage) (any, *rpcError) {
	return sigResult(c.ForeignEvent(contextBackground(), agentParam(params)))
}

func adminRevoke(c *Chain, params []json.RawMessage) (any, *rpcError) {
	return sigResult(c.RevokeAgent(contextBackground(), agentParam(params)))
}

func adminDrop(c *Chain, params []json.RawMessage) (any, *rpcError) {
	s, err := paramString(params, 0, "signature")
	if err != nil {
		return nil, err
	}
	sig, err := parseSignature(s)
	if err != nil {
		return nil, err
	}
	if derr := c.DropTransaction(sig); derr != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: derr.Error()}
	}
	return true, nil
}

func adminDropConnections(c *Chain, _ []json.RawMessage) (any, *rpcError) {
	return c.DropConnections(), nil
}

func adminDuplicate(c *Chain, params []json.RawMessage) (any, *rpcError) {
	var on bool
	if len(params) > 0 {
		_ = json.Unmarshal(params[0], &on)
	}
	c.DuplicateDelivery(on)
	return on, nil
}

func adminAdvance(c *Chain, params []json.RawMessage) (any, *rpcError) {
	n := agentParam(params)
	if n < 1 || n > 10000 {
		return nil, invalidParams("slots must be 1..10000")
	}
	c.AdvanceSlots(n)
	return c.Slot(), nil
}
