package devnet

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gagliardetto/solana-go"
	"github.com/mr-tron/base58"
)

// txMeta is a transaction's status meta.
type txMeta struct {
	Err               txError
	Fee               uint64
	PreBalances       []uint64
	PostBalances      []uint64
	PreTokenBalances  []tokenBalance
	PostTokenBalances []tokenBalance
	Logs              []string
	Inner             []innerInstructions
	Units             uint64
}

func (m *txMeta) json() map[string]any {
	status := map[string]any{"Ok": nil}
	if m.Err != nil {
		status = map[string]any{"Err": m.Err}
	}
	return map[string]any{
		"err": m.Err, "status": status, "fee": m.Fee,
		"preBalances": m.PreBalances, "postBalances": m.PostBalances,
		"innerInstructions": m.Inner, "logMessages": m.Logs,
		"preTokenBalances": m.PreTokenBalances, "postTokenBalances": m.PostTokenBalances,
		"rewards": []any{}, "loadedAddresses": map[string]any{"writable": []string{}, "readonly": []string{}},
		"computeUnitsConsumed": m.Units,
	}
}

type rpcRequest struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id"`
	Method  string            `json:"method"`
	Params  []json.RawMessage `json:"params"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return e.Message }

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	Result  any             `json:"result"`
	Error   *rpcError       `json:"error,omitempty"`
	ID      json.RawMessage `json:"id"`
}

// MarshalJSON writes either result or error, as JSON-RPC 2.0 requires.
func (r rpcResponse) MarshalJSON() ([]byte, error) {
	id := r.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	if r.Error != nil {
		return json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			Error   *rpcError       `json:"error"`
			ID      json.RawMessage `json:"id"`
		}{"2.0", r.Error, id})
	}
	return json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  any             `json:"result"`
		ID      json.RawMessage `json:"id"`
	}{"2.0", r.Result, id})
}

func invalidParams(format string, args ...any) *rpcError {
	return &rpcError{Code: codeInvalidParams, Message: "Invalid params: " + fmt.Sprintf(format, args...)}
}

const maxRequestBody = 50 << 20

// serveRPC answers JSON-RPC 2.0 over HTTP POST, single or batch.
func (c *Chain) serveRPC(w http.ResponseWriter, r *http.Request) {
	if c.down.Load() {
		http.Error(w, "rpc unavailable", http.StatusServiceUnavailable)
		return
	}
	if r.Method == http.MethodGet && (r.URL.Path == "/health") {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok")
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "Used HTTP Method is not allowed. POST or OPTIONS is required", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	var out any
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var reqs []json.RawMessage
		if err := json.Unmarshal(trimmed, &reqs); err != nil {
			out = rpcResponse{Error: &rpcError{Code: codeParse, Message: "Parse error"}}
		} else if len(reqs) == 0 {
			out = rpcResponse{Error: &rpcError{Code: codeInvalidRequest, Message: "Invalid request"}}
		} else {
			resps := make([]rpcResponse, len(reqs))
			for i, raw := range reqs {
				resps[i] = c.handleOne(raw)
			}
			out = resps
		}
	} else {
		out = c.handleOne(trimmed)
	}
	enc := json.NewEncoder(w)
	_ = enc.Encode(out)
}

func (c *Chain) handleOne(raw []byte) rpcResponse {
	var req rpcRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return rpcResponse{Error: &rpcError{Code: codeParse, Message: "Parse error"}}
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		return rpcResponse{ID: req.ID, Error: &rpcError{Code: codeInvalidRequest, Message: "Invalid request"}}
	}
	h, ok := solanaMethods[req.Method]
	if !ok {
		h, ok = adminMethods[req.Method]
	}
	if !ok {
		return rpcResponse{ID: req.ID, Error: &rpcError{Code: codeMethodNotFound, Message: "Method not found"}}
	}
	res, rerr := h(c, req.Params)
	if rerr != nil {
		return rpcResponse{ID: req.ID, Error: rerr}
	}
	return rpcResponse{ID: req.ID, Result: res}
}

type handler func(c *Chain, params []json.RawMessage) (any, *rpcError)

// solanaMethods are the Solana JSON-RPC methods the simulator answers.
var solanaMethods = map[string]handler{
	"getSlot":                 rpcGetSlot,
	"getBlockHeight":          rpcGetSlot,
	"getLatestBlockhash":      rpcGetLatestBlockhash,
	"isBlockhashValid":        rpcIsBlockhashValid,
	"getSignaturesForAddress": rpcGetSignaturesForAddress,
	"getTransaction":          rpcGetTransaction,
	"getAccountInfo":          rpcGetAccountInfo,
	"getMultipleAccounts":     rpcGetMultipleAccounts,
	"getProgramAccounts":      rpcGetProgramAccounts,
	"getBalance":              rpcGetBalance,
	"getTokenAccountBalance":  rpcGetTokenAccountBalance,
	"getSignatureStatuses":    rpcGetSignatureStatuses,
	"simulateTransaction":     rpcSimulateTransaction,
	"sendTransaction":         rpcSendTransaction,
	"requestAirdrop":          rpcRequestAirdrop,
	"getHealth":               func(*Chain, []json.RawMessage) (any, *rpcError) { return "ok", nil },
	"getVersion": func(*Chain, []json.RawMessage) (any, *rpcError) {
		return map[string]any{"solana-core": "2.2.20", "feature-set": 3294202862}, nil
	},
	"getGenesisHash": func(c *Chain, _ []json.RawMessage) (any, *rpcError) {
		return solana.Hash(hashOf([]byte(fmt.Sprintf("devnet genesis %d", c.cfg.Seed)))).String(), nil
	},
	"getMinimumBalanceForRentExemption": rpcGetMinimumBalanceForRentExemption,
	"getFeeForMessage":                  rpcGetFeeForMessage,
	"getEpochInfo":                      rpcGetEpochInfo,
	"getFirstAvailableBlock":            func(*Chain, []json.RawMessage) (any, *rpcError) { return 1, nil },
	"minimumLedgerSlot":                 func(*Chain, []json.RawMessage) (any, *rpcError) { return 1, nil },
}

// config is the union of the configuration objects the methods accept.
type config struct {
	Commitment                     string          `json:"commitment"`
	Encoding                       string          `json:"encoding"`
	MaxSupportedTransactionVersion *int            `json:"maxSupportedTransactionVersion"`
	Limit                          *int            `json:"limit"`
	Before                         string          `json:"before"`
	Until                          string          `json:"until"`
	MinContextSlot                 *uint64         `json:"minContextSlot"`
	SearchTransactionHistory       bool            `json:"searchTransactionHistory"`
	SkipPreflight                  bool            `json:"skipPreflight"`
	PreflightCommitment            string          `json:"preflightCommitment"`
	SigVerify                      bool            `json:"sigVerify"`
	ReplaceRecentBlockhash         bool            `json:"replaceRecentBlockhash"`
	Filters                        []filter        `json:"filters"`
	WithContext                    bool            `json:"withContext"`
	DataSlice                      *dataSlice      `json:"dataSlice"`
	Accounts                       json.RawMessage `json:"accounts"`
}

type filter struct {
	DataSize *uint64 `json:"dataSize"`
	Memcmp   *struct {
		Offset   uint64 `json:"offset"`
		Bytes    string `json:"bytes"`
		Encoding string `json:"encoding"`
	} `json:"memcmp"`
}

type dataSlice struct {
	Offset uint64 `json:"offset"`
	Length uint64 `json:"length"`
}

// parseConfig reads the optional config object at params[i].
func parseConfig(params []json.RawMessage, i int) (config, *rpcError) {
	var cfg config
	if len(params) <= i || string(params[i]) == "null" {
		return cfg, nil
	}
	if err := json.Unmarshal(params[i], &cfg); err != nil {
		return cfg, invalidParams("%v", err)
	}
	switch cfg.Commitment {
	case "", "processed", "confirmed", "finalized", "recent", "single", "singleGossip", "root", "max":
	default:
		return cfg, invalidParams("unknown commitment %q", cfg.Commitment)
	}
	return cfg, nil
}

func paramString(params []json.RawMessage, i int, what string) (string, *rpcError) {
	if len(params) <= i {
		return "", invalidParams("missing %s", what)
	}
	var s string
	if err := json.Unmarshal(params[i], &s); err != nil {
		return "", invalidParams("%s: %v", what, err)
	}
	return s, nil
}

func paramPubkey(params []json.RawMessage, i int) (solana.PublicKey, *rpcError) {
	s, err := paramString(params, i, "pubkey")
	if err != nil {
		return solana.PublicKey{}, err
	}
	pk, perr := solana.PublicKeyFromBase58(s)
	if perr != nil {
		return solana.PublicKey{}, &rpcError{Code: codeInvalidParams, Message: "Invalid param: Invalid"}
	}
	return pk, nil
}

func parseSignature(s string) (solana.Signature, *rpcError) {
	sig, err := solana.SignatureFromBase58(s)
	if err != nil {
		return solana.Signature{}, &rpcError{Code: codeInvalidParams, Message: "Invalid param: Invalid"}
	}
	return sig, nil
}

func (c *Chain) contextLocked() map[string]any {
	return map[string]any{"slot": c.slot, "apiVersion": "2.2.20"}
}

func (c *Chain) checkMinContext(cfg config, slot uint64) *rpcError {
	if cfg.MinContextSlot != nil && *cfg.MinContextSlot > slot {
		return &rpcError{Code: codeMinContextSlot, Message: "Minimum context slot has not been reached",
			Data: map[string]any{"contextSlot": slot}}
	}
	return nil
}

func rpcGetSlot(c *Chain, params []json.RawMessage) (any, *rpcError) {
	cfg, err := parseConfig(params, 0)
	if err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := c.commitmentSlotLocked(cfg.Commitment)
	if err := c.checkMinContext(cfg, s); err != nil {
		return nil, err
	}
	return s, nil
}

func rpcGetLatestBlockhash(c *Chain, params []json.RawMessage) (any, *rpcError) {
	cfg, err := parseConfig(params, 0)
	if err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := c.commitmentSlotLocked(cfg.Commitment)
	b := c.blocks[s]
	if b == nil {
		b = c.blocks[c.slot]
		s = c.slot
	}
	return map[string]any{"context": c.contextLocked(), "value": map[string]any{
		"blockhash": b.blockhash.String(), "lastValidBlockHeight": s + blockhashValidity}}, nil
}

func rpcIsBlockhashValid(c *Chain, params []json.RawMessage) (any, *rpcError) {
	s, err := paramString(params, 0, "blockhash")
	if err != nil {
		return nil, err
	}
	h, herr := solana.HashFromBase58(s)
	if herr != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: "Invalid param: Invalid"}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.blockhashes[h]
	return map[string]any{"context": c.contextLocked(), "value": ok}, nil
}

func confirmationStatus(c *Chain, slot uint64) string {
	if slot <= c.finalizedSlotLocked() {
		return "finalized"
	}
	return "confirmed"
}

func rpcGetSignaturesForAddress(c *Chain, params []json.RawMessage) (any, *rpcError) {
	addr, err := paramPubkey(params, 0)
	if err != nil {
		return nil, err
	}
	cfg, err := parseConfig(params, 1)
	if err != nil {
		return nil, err
	}
	if cfg.Commitment == "processed" {
		return nil, invalidParams("Method does not support commitment below `confirmed`")
	}
	limit := 1000
	if cfg.Limit != nil {
		limit = *cfg.Limit
		if limit < 1 || limit > 1000 {
			return nil, invalidParams("Invalid limit; max 1000")
		}
	}
	var before, until *solana.Signature
	if cfg.Before != "" {
		s, err := parseSignature(cfg.Before)
		if err != nil {
			return nil, err
		}
		before = &s
	}
	if cfg.Until != "" {
		s, err := parseSignature(cfg.Until)
		if err != nil {
			return nil, err
		}
		until = &s
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	maxSlot := c.commitmentSlotLocked(cfg.Commitment)
	if err := c.checkMinContext(cfg, maxSlot); err != nil {
		return nil, err
	}
	recs, lerr := c.signaturesForLocked(addr, before, until, limit, maxSlot)
	if lerr != nil {
		// A real node answers an empty page for an unknown `before`.
		return []any{}, nil
	}
	out := make([]map[string]any, len(recs))
	for i, r := range recs {
		out[i] = map[string]any{
			"signature": r.sig.String(), "slot": r.slot, "err": r.meta.Err, "memo": nil,
			"blockTime": r.blockTime, "confirmationStatus": confirmationStatus(c, r.slot),
		}
	}
	return out, nil
}

func rpcGetTransaction(c *Chain, params []json.RawMessage) (any, *rpcError) {
	s, err := paramString(params, 0, "signature")
	if err != nil {
		return nil, err
	}
	sig, err := parseSignature(s)
	if err != nil {
		return nil, err
	}
	cfg, err := parseConfig(params, 1)
	if err != nil {
		return nil, err
	}
	if cfg.Commitment == "processed" {
		return nil, invalidParams("Method does not support commitment below `confirmed`")
	}
	c.mu.Lock()
	r, ok := c.txs[sig]
	visible := ok && r.slot <= c.commitmentSlotLocked(cfg.Commitment) && !c.hiddenLocked(sig, true, false)
	c.mu.Unlock()
	if !visible {
		return nil, nil
	}
	if r.versioned && cfg.MaxSupportedTransactionVersion == nil {
		return nil, &rpcError{Code: codeUnsupportedTxVer, Message: "Transaction version (0) is not supported by the requesting client. " +
			"Please try the request again with the following configuration parameter: \"maxSupportedTransactionVersion\": 0"}
	}
	var txv any
	switch cfg.Encoding {
	case "", "json", "jsonParsed":
		txv = txJSON(r.tx)
	case "base64":
		txv = []string{base64.StdEncoding.EncodeToString(r.raw), "base64"}
	case "base58":
		txv = []string{base58.Encode(r.raw), "base58"}
	default:
		return nil, invalidParams("unsupported encoding %q", cfg.Encoding)
	}
	out := map[string]any{"slot": r.slot, "blockTime": r.blockTime, "transaction": txv, "meta": r.meta.json()}
	if cfg.MaxSupportedTransactionVersion != nil {
		if r.versioned {
			out["version"] = 0
		} else {
			out["version"] = "legacy"
		}
	}
	return out, nil
}

// txJSON renders a transaction in the "json" encoding.
func txJSON(tx *solana.Transaction) map[string]any {
	m := &tx.Message
	keys := make([]string, len(m.AccountKeys))
	for i, k := range m.AccountKeys {
		keys[i] = k.String()
	}
	ixs := make([]map[string]any, len(m.Instructions))
	for i, ci := range m.Instructions {
		accts := make([]int, len(ci.Accounts))
		for j, a := range ci.Accounts {
			accts[j] = int(a)
		}
		ixs[i] = map[string]any{"programIdIndex": ci.ProgramIDIndex, "accounts": accts,
			"data": base58.Encode(ci.Data), "stackHeight": nil}
	}
	sigs := make([]string, len(tx.Signatures))
	for i, s := range tx.Signatures {
		sigs[i] = s.String()
	}
	msg := map[string]any{"accountKeys": keys, "header": m.Header, "recentBlockhash": m.RecentBlockhash.String(), "instructions": ixs}
	if m.IsVersioned() {
		msg["addressTableLookups"] = []any{}
	}
	return map[string]any{"signatures": sigs, "message": msg}
}

// accountJSON renders an account in the requested encoding.
func accountJSON(a *Account, encoding string, slice *dataSlice) (any, *rpcError) {
	if a == nil {
		return nil, nil
	}
	data := a.Data
	if slice != nil {
		start := min(slice.Offset, uint64(len(data)))
		end := min(start+slice.Length, uint64(len(data)))
		data = data[start:end]
	}
	var d any
	switch encoding {
	case "", "binary", "base58":
		if encoding == "" || encoding == "binary" {
			d = base58.Encode(data)
		} else {
			d = []string{base58.Encode(data), "base58"}
		}
	case "base64", "jsonParsed":
		d = []string{base64.StdEncoding.EncodeToString(data), "base64"}
	default:
		return nil, invalidParams("unsupported encoding %q", encoding)
	}
	return map[string]any{"data": d, "executable": a.Executable, "lamports": a.Lamports, "owner": a.Owner.String(),
		"rentEpoch": uint64(18446744073709551615), "space": len(a.Data)}, nil
}

func rpcGetAccountInfo(c *Chain, params []json.RawMessage) (any, *rpcError) {
	key, err := paramPubkey(params, 0)
	if err != nil {
		return nil, err
	}
	cfg, err := parseConfig(params, 1)
	if err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, err := accountJSON(c.accounts[key], cfg.Encoding, cfg.DataSlice)
	if err != nil {
		return nil, err
	}
	return map[string]any{"context": c.contextLocked(), "value": v}, nil
}

func rpcGetMultipleAccounts(c *Chain, params []json.RawMessage) (any, *rpcError) {
	if len(params) == 0 {
		return nil, invalidParams("missing pubkeys")
	}
	var strs []string
	if err := json.Unmarshal(params[0], &strs); err != nil {
		return nil, invalidParams("pubkeys: %v", err)
	}
	if len(strs) > 100 {
		return nil, invalidParams("Too many inputs provided; max 100")
	}
	cfg, err := parseConfig(params, 1)
	if err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	vals := make([]any, len(strs))
	for i, s := range strs {
		k, perr := solana.PublicKeyFromBase58(s)
		if perr != nil {
			return nil, &rpcError{Code: codeInvalidParams, Message: "Invalid param: Invalid"}
		}
		if vals[i], err = accountJSON(c.accounts[k], cfg.Encoding, cfg.DataSlice); err != nil {
			return nil, err
		}
	}
	return map[string]any{"context": c.contextLocked(), "value": vals}, nil
}

func rpcGetProgramAccounts(c *Chain, params []json.RawMessage) (any, *rpcError) {
	program, err := paramPubkey(params, 0)
	if err != nil {
		return nil, err
	}
	cfg, err := parseConfig(params, 1)
	if err != nil {
		return nil, err
	}
	type memcmp struct {
		off   uint64
		bytes []byte
	}
	var cmps []memcmp
	var sizes []uint64
	for _, f := range cfg.Filters {
		switch {
		case f.DataSize != nil:
			sizes = append(sizes, *f.DataSize)
		case f.Memcmp != nil:
			var b []byte
			var derr error
			switch f.Memcmp.Encoding {
			case "", "base58":
				b, derr = base58.Decode(f.Memcmp.Bytes)
			case "base64":
				b, derr = base64.StdEncoding.DecodeString(f.Memcmp.Bytes)
			default:
				return nil, invalidParams("unsupported memcmp encoding %q", f.Memcmp.Encoding)
			}
			if derr != nil || len(b) > 128 {
				return nil, invalidParams("invalid memcmp bytes")
			}
			cmps = append(cmps, memcmp{f.Memcmp.Offset, b})
		default:
			return nil, invalidParams("unknown filter")
		}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := []map[string]any{}
	for k, a := range c.accounts {
		if a.Owner != program {
			continue
		}
		ok := true
		for _, s := range sizes {
			ok = ok && uint64(len(a.Data)) == s
		}
		for _, m := range cmps {
			ok = ok && m.off+uint64(len(m.bytes)) <= uint64(len(a.Data)) && bytes.Equal(a.Data[m.off:m.off+uint64(len(m.bytes))], m.bytes)
		}
		if !ok {
			continue
		}
		v, err := accountJSON(a, cfg.Encoding, cfg.DataSlice)
		if err != nil {
			return nil, err
		}
		out = append(out, map[string]any{"pubkey": k.String(), "account": v})
	}
	if cfg.WithContext {
		return map[string]any{"context": c.contextLocked(), "value": out}, nil
	}
	return out, nil
}

func rpcGetBalance(c *Chain, params []json.RawMessage) (any, *rpcError) {
	key, err := paramPubkey(params, 0)
	if err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return map[string]any{"context": c.contextLocked(), "value": lamportsOf(c.accounts[key])}, nil
}

func rpcGetTokenAccountBalance(c *Chain, params []json.RawMessage) (any, *rpcError) {
	key, err := paramPubkey(params, 0)
	if err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	a := c.accounts[key]
	if a == nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: "Invalid param: could not find account"}
	}
	t, terr := DecodeTokenAccount(a.Data)
	if a.Owner != solana.TokenProgramID || terr != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: "Invalid param: not a Token account"}
	}
	var dec uint8
	if ma := c.accounts[t.Mint]; ma != nil {
		if m, err := DecodeMint(ma.Data); err == nil {
			dec = m.Decimals
		}
	}
	return map[string]any{"context": c.contextLocked(), "value": makeUIAmount(t.Amount, dec)}, nil
}

func rpcGetSignatureStatuses(c *Chain, params []json.RawMessage) (any, *rpcError) {
	if len(params) == 0 {
		return nil, invalidParams("missing signatures")
	}
	var strs []string
	if err := json.Unmarshal(params[0], &strs); err != nil {
		return nil, invalidParams("signatures: %v", err)
	}
	if len(strs) > 256 {
		return nil, invalidParams("Too many inputs provided; max 256")
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	vals := make([]any, len(strs))
	for i, s := range strs {
		sig, err := parseSignature(s)
		if err != nil {
			return nil, err
		}
		r, ok := c.txs[sig]
		if !ok || c.hiddenLocked(sig, false, true) {
			continue
		}
		status := map[string]any{"Ok": nil}
		if r.meta.Err != nil {
			status = map[string]any{"Err": r.meta.Err}
		}
		var confirmations any
		cs := confirmationStatus(c, r.slot)
		if cs != "finalized" {
			confirmations = c.slot - r.slot
		}
		vals[i] = map[string]any{"slot": r.slot, "confirmations": confirmations, "err": r.meta.Err,
			"status": status, "confirmationStatus": cs}
	}
	return map[string]any{"context": c.contextLocked(), "value": vals}, nil
}

// decodeWireTx reads an encoded transaction parameter.
func decodeWireTx(params []json.RawMessage, encoding string) ([]byte, *rpcError) {
	s, err := paramString(params, 0, "transaction")
	if err != nil {
		return nil, err
	}
	var raw []byte
	var derr error
	switch encoding {
	case "", "base58":
		raw, derr = base58.Decode(s)
	case "base64":
		raw, derr = base64.StdEncoding.DecodeString(s)
	default:
		return nil, invalidParams("unsupported encoding: %s. Supported encodings: base58, base64", encoding)
	}
	if derr != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: "invalid transaction: failed to decode " + strings.ToLower(encoding) + " string"}
	}
	return raw, nil
}

func rpcSendTransaction(c *Chain, params []json.RawMessage) (any, *rpcError) {
	cfg, err := parseConfig(params, 1)
	if err != nil {
		return nil, err
	}
	raw, err := decodeWireTx(params, cfg.Encoding)
	if err != nil {
		return nil, err
	}
	sig, serr := c.submit(raw, !cfg.SkipPreflight)
	if serr != nil {
		return nil, &rpcError{Code: serr.Code, Message: serr.Message, Data: serr.Data}
	}
	return sig.String(), nil
}

func rpcSimulateTransaction(c *Chain, params []json.RawMessage) (any, *rpcError) {
	cfg, err := parseConfig(params, 1)
	if err != nil {
		return nil, err
	}
	raw, err := decodeWireTx(params, cfg.Encoding)
	if err != nil {
		return nil, err
	}
	if cfg.SigVerify && cfg.ReplaceRecentBlockhash {
		return nil, invalidParams("sigVerify may not be used with replaceRecentBlockhash")
	}
	p, serr := prepare(raw, cfg.SigVerify)
	if serr != nil {
		return nil, &rpcError{Code: serr.Code, Message: serr.Message, Data: serr.Data}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	ctx := c.contextLocked()
	value := map[string]any{"err": nil, "logs": []string{}, "accounts": nil, "unitsConsumed": 0, "returnData": nil,
		"innerInstructions": nil}
	if cfg.ReplaceRecentBlockhash {
		p.tx.Message.RecentBlockhash = c.blocks[c.slot].blockhash
		value["replacementBlockhash"] = map[string]any{"blockhash": c.blocks[c.slot].blockhash.String(),
			"lastValidBlockHeight": c.slot + blockhashValidity}
	} else if _, ok := c.blockhashes[p.tx.Message.RecentBlockhash]; !ok {
		value["err"] = "BlockhashNotFound"
		return map[string]any{"context": ctx, "value": value}, nil
	}
	x, txErr := c.executeLocked(p, false)
	value["err"], value["logs"], value["unitsConsumed"] = txErr, x.logs, x.units
	if x.logs == nil {
		value["logs"] = []string{}
	}
	return map[string]any{"context": ctx, "value": value}, nil
}

func rpcGetMinimumBalanceForRentExemption(c *Chain, params []json.RawMessage) (any, *rpcError) {
	var size uint64
	if len(params) < 1 || json.Unmarshal(params[0], &size) != nil {
		return nil, invalidParams("data length")
	}
	return (128 + size) * 3480 * 2, nil
}

func rpcGetFeeForMessage(c *Chain, params []json.RawMessage) (any, *rpcError) {
	s, err := paramString(params, 0, "message")
	if err != nil {
		return nil, err
	}
	raw, derr := base64.StdEncoding.DecodeString(s)
	if derr != nil || len(raw) == 0 {
		return nil, invalidParams("message")
	}
	n := raw[0]
	if n&0x80 != 0 && len(raw) > 1 { // versioned prefix
		n = raw[1]
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return map[string]any{"context": c.contextLocked(), "value": uint64(n) * LamportsPerSignature}, nil
}

func rpcGetEpochInfo(c *Chain, _ []json.RawMessage) (any, *rpcError) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	const slotsPerEpoch = 432000
	return map[string]any{"absoluteSlot": c.slot, "blockHeight": c.slot, "epoch": c.slot / slotsPerEpoch,
		"slotIndex": c.slot % slotsPerEpoch, "slotsInEpoch": slotsPerEpoch, "transactionCount": c.seq}, nil
}
