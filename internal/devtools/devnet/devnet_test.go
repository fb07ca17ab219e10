package devnet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/prova"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/token"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"
	"github.com/gagliardetto/solana-go/rpc/ws"
)

// start runs a simulator whose slots only advance when the test says so.
func start(t *testing.T, cfg Config) (*Chain, *rpc.Client) {
	t.Helper()
	if cfg.SlotInterval == 0 {
		cfg.SlotInterval = -1
	}
	if cfg.FinalityDepth == 0 {
		cfg.FinalityDepth = 4
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start devnet: %v", err)
	}
	t.Cleanup(c.Close)
	cl := rpc.New(c.RPCURL())
	t.Cleanup(func() { cl.Close() })
	return c, cl
}

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var zero uint64 = 0

func getTx(t *testing.T, cl *rpc.Client, sig solana.Signature, enc solana.EncodingType, commitment rpc.CommitmentType) *rpc.GetTransactionResult {
	t.Helper()
	var out *rpc.GetTransactionResult
	var err error
	if enc == solana.EncodingJSON {
		// solana-go's GetTransaction refuses "json"; ask with the raw call.
		err = cl.RPCCallForInto(tctx(t), &out, "getTransaction", []any{sig.String(),
			map[string]any{"encoding": "json", "commitment": commitment, "maxSupportedTransactionVersion": 0}})
	} else {
		out, err = cl.GetTransaction(tctx(t), sig, &rpc.GetTransactionOpts{Encoding: enc, Commitment: commitment, MaxSupportedTransactionVersion: &zero})
	}
	if err == nil && out == nil {
		err = rpc.ErrNotFound
	}
	if err != nil {
		t.Fatalf("getTransaction %s: %v", sig, err)
	}
	return out
}

func TestTransactionsAreRealAndDecode(t *testing.T) {
	c, cl := start(t, Config{Agents: 3, Attestations: 250, Batch: 100})
	ctx := tctx(t)
	program := c.ProgramID()

	// Newest first, paged with before, equal to the ledger.
	var all []*rpc.TransactionSignature
	var before solana.Signature
	for {
		limit := 2
		page, err := cl.GetSignaturesForAddressWithOpts(ctx, program, &rpc.GetSignaturesForAddressOpts{
			Limit: &limit, Before: before, Commitment: rpc.CommitmentConfirmed})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		before = page[len(page)-1].Signature
	}
	txs := c.Transactions()
	if len(all) != len(txs) || len(txs) != 3+3 { // 3 registrations, 100+100+50
		t.Fatalf("%d signatures listed, ledger has %d", len(all), len(txs))
	}
	for i, s := range all {
		if want := txs[len(txs)-1-i]; s.Signature != want.Signature || s.Slot != want.Slot || s.Err != nil ||
			s.BlockTime == nil || s.ConfirmationStatus != rpc.ConfirmationStatusConfirmed {
			t.Fatalf("signature %d: %+v, want %+v", i, s, want)
		}
	}
	// until stops before the given signature.
	page, err := cl.GetSignaturesForAddressWithOpts(ctx, program, &rpc.GetSignaturesForAddressOpts{
		Until: txs[2].Signature, Commitment: rpc.CommitmentConfirmed})
	if err != nil || len(page) != 3 || page[2].Signature != txs[3].Signature {
		t.Fatalf("until: %d entries, %v", len(page), err)
	}

	seen := 0
	events := c.Events()
	for _, info := range txs[3:] {
		for _, enc := range []solana.EncodingType{solana.EncodingBase64, solana.EncodingJSON} {
			res := getTx(t, cl, info.Signature, enc, rpc.CommitmentConfirmed)
			tx, err := res.Transaction.GetTransaction()
			if err != nil {
				t.Fatalf("%s: decode: %v", enc, err)
			}
			if err := tx.VerifySignatures(); err != nil {
				t.Fatalf("%s: signatures: %v", enc, err)
			}
			if tx.Signatures[0] != info.Signature || res.Slot != info.Slot || res.Meta.Err != nil || res.BlockTime == nil {
				t.Fatalf("%s: wrong transaction or meta", enc)
			}
			if len(tx.Message.Instructions) != 2 {
				t.Fatalf("%d instructions", len(tx.Message.Instructions))
			}
			edIx, recIx := tx.Message.Instructions[0], tx.Message.Instructions[1]
			if p, _ := tx.ResolveProgramIDIndex(edIx.ProgramIDIndex); p != prova.Ed25519ProgramID {
				t.Fatalf("first instruction runs %s", p)
			}
			if p, _ := tx.ResolveProgramIDIndex(recIx.ProgramIDIndex); p != program {
				t.Fatalf("second instruction runs %s", p)
			}
			args, err := prova.DecodeInstruction(recIx.Data)
			if err != nil {
				t.Fatal(err)
			}
			rec := args.(prova.RecordAttestationsArgs)
			checks, err := prova.VerifyEd25519(edIx.Data, 0, nil)
			if err != nil || len(checks) != len(rec.Attestations) {
				t.Fatalf("precompile: %d checks, %v", len(checks), err)
			}
			accts, _ := recIx.ResolveInstructionAccounts(&tx.Message)
			op := accts[1].PublicKey
			if !accts[1].IsSigner || accts[2].PublicKey != solana.SysVarInstructionsPubkey {
				t.Fatal("record accounts")
			}
			pda, _, _ := attestation.DeriveAgentPDA(program, op)
			if accts[0].PublicKey != pda || !accts[0].IsWritable {
				t.Fatal("agent account is not the operator's PDA")
			}
			logs := res.Meta.LogMessages
			if logs[0] != prova.LogInvoke(prova.Ed25519ProgramID, 1) || logs[2] != prova.LogInvoke(program, 1) ||
				logs[3] != "Program log: Instruction: RecordAttestations" || !strings.Contains(logs[len(logs)-2], "compute units") ||
				logs[len(logs)-1] != prova.LogSuccess(program) {
				t.Fatalf("logs do not look like Anchor's: %q", logs)
			}
			evs, err := prova.ParseLogs(logs, program)
			if err != nil || len(evs) != len(rec.Attestations) {
				t.Fatalf("parse logs: %d events, %v", len(evs), err)
			}
			for i, e := range evs {
				a := e.Event.(prova.AttestationIssued)
				if e.Index != i || a.ActionHash != rec.Attestations[i].ActionHash || a.Agent != pda ||
					!attestation.VerifySignature(a.AgentID, a.ActionHash, a.Signature) || a.Timestamp != int64(*res.BlockTime) {
					t.Fatalf("event %d does not match its input", i)
				}
				if enc == solana.EncodingBase64 {
					g := events[3+seen]
					if g.TxSignature != info.Signature || g.Index != i || g.Event != e.Event {
						t.Fatalf("ground truth %d differs", seen)
					}
					seen++
				}
			}
		}
	}
	if seen != 250 || len(events) != 253 {
		t.Fatalf("%d attestations seen, %d events", seen, len(events))
	}

	// Agent accounts: single, multiple, and by program with filters.
	agents := c.Agents()
	info, err := cl.GetAccountInfoWithOpts(ctx, agents[2].PDA, &rpc.GetAccountInfoOpts{Encoding: solana.EncodingBase64, Commitment: rpc.CommitmentConfirmed})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := prova.DecodeAgentAccount(info.Value.Data.GetBinary())
	if err != nil || acc.AttestationCount != 50 || acc.AgentID != agents[2].AgentID || acc.Operator != agents[2].Operator.PublicKey() ||
		info.Value.Owner != program {
		t.Fatalf("agent 2 account: %+v, %v", acc, err)
	}
	multi, err := cl.GetMultipleAccountsWithOpts(ctx, []solana.PublicKey{agents[0].PDA, solana.NewWallet().PublicKey()}, &rpc.GetMultipleAccountsOpts{Encoding: solana.EncodingBase64})
	if err != nil || len(multi.Value) != 2 || multi.Value[0] == nil || multi.Value[1] != nil {
		t.Fatalf("multiple accounts: %v", err)
	}
	pas, err := cl.GetProgramAccountsWithOpts(ctx, program, &rpc.GetProgramAccountsOpts{Filters: []rpc.RPCFilter{
		{Memcmp: &rpc.RPCFilterMemcmp{Offset: 0, Bytes: solana.Base58(prova.DiscAgentAccount[:])}},
		{DataSize: prova.AgentAccountSize},
	}})
	if err != nil || len(pas) != 3 {
		t.Fatalf("program accounts: %d, %v", len(pas), err)
	}
	pas, err = cl.GetProgramAccountsWithOpts(ctx, program, &rpc.GetProgramAccountsOpts{Filters: []rpc.RPCFilter{
		{Memcmp: &rpc.RPCFilterMemcmp{Offset: 8, Bytes: solana.Base58(agents[1].Operator.PublicKey().Bytes())}},
	}})
	if err != nil || len(pas) != 1 || pas[0].Pubkey != agents[1].PDA {
		t.Fatalf("program accounts by operator: %v", err)
	}
}

func TestCommitmentAndStatuses(t *testing.T) {
	c, cl := start(t, Config{Agents: 1, Attestations: 10, Batch: 10})
	ctx := tctx(t)
	txs := c.Transactions()
	sig := txs[len(txs)-1].Signature
	if _, err := cl.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{Encoding: solana.EncodingBase64, Commitment: rpc.CommitmentFinalized, MaxSupportedTransactionVersion: &zero}); !errors.Is(err, rpc.ErrNotFound) {
		t.Fatalf("finalized read of a confirmed tx: %v", err)
	}
	fin, _ := cl.GetSignaturesForAddressWithOpts(ctx, c.ProgramID(), &rpc.GetSignaturesForAddressOpts{Commitment: rpc.CommitmentFinalized})
	if len(fin) != 0 {
		t.Fatalf("%d finalized signatures before finality", len(fin))
	}
	st, err := cl.GetSignatureStatuses(ctx, true, sig, solana.Signature{1})
	if err != nil || st.Value[0] == nil || st.Value[0].ConfirmationStatus != rpc.ConfirmationStatusConfirmed || st.Value[1] != nil {
		t.Fatalf("statuses: %+v, %v", st, err)
	}
	c.AdvanceSlots(4)
	getTx(t, cl, sig, solana.EncodingBase64, rpc.CommitmentFinalized)
	st, _ = cl.GetSignatureStatuses(ctx, true, sig)
	if st.Value[0].ConfirmationStatus != rpc.ConfirmationStatusFinalized || st.Value[0].Confirmations != nil {
		t.Fatalf("status after finality: %+v", st.Value[0])
	}
	s1, _ := cl.GetSlot(ctx, rpc.CommitmentConfirmed)
	s2, _ := cl.GetSlot(ctx, rpc.CommitmentFinalized)
	if s1 != c.Slot() || s2 != s1-4 {
		t.Fatalf("slots %d %d", s1, s2)
	}
	if h, err := cl.GetHealth(ctx); err != nil || h != rpc.HealthOk {
		t.Fatalf("health %q %v", h, err)
	}
	if v, err := cl.GetVersion(ctx); err != nil || v.SolanaCore == "" {
		t.Fatalf("version %v", err)
	}
	bh, err := cl.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := cl.IsBlockhashValid(ctx, bh.Value.Blockhash, rpc.CommitmentConfirmed); err != nil || !ok.Value {
		t.Fatalf("blockhash valid: %v", err)
	}

	// Forks: a confirmed transaction can vanish, a finalized one cannot.
	g, err := c.Generate(ctx, 1, 5, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DropTransaction(sig); err == nil {
		t.Fatal("dropped a finalized transaction")
	}
	dropped := g.Records[0]
	if err := c.DropTransaction(dropped); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.GetTransaction(ctx, dropped, &rpc.GetTransactionOpts{Commitment: rpc.CommitmentConfirmed}); !errors.Is(err, rpc.ErrNotFound) {
		t.Fatalf("dropped tx still readable: %v", err)
	}
	st, _ = cl.GetSignatureStatuses(ctx, true, dropped)
	if st.Value[0] != nil {
		t.Fatal("dropped tx has a status")
	}
	info, _ := cl.GetAccountInfoWithOpts(ctx, c.Agents()[0].PDA, &rpc.GetAccountInfoOpts{Encoding: solana.EncodingBase64})
	if acc, _ := prova.DecodeAgentAccount(info.Value.Data.GetBinary()); acc.AttestationCount != 10 {
		t.Fatalf("fork did not undo the count: %d", acc.AttestationCount)
	}
	for _, e := range c.Events() {
		if e.TxSignature == dropped {
			t.Fatal("dropped tx in ground truth")
		}
	}
}

func TestFaultTransactions(t *testing.T) {
	c, cl := start(t, Config{Agents: 2})
	ctx := tctx(t)
	program := c.ProgramID()

	failed, err := c.FailTransaction(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	res := getTx(t, cl, failed, solana.EncodingBase64, rpc.CommitmentConfirmed)
	logs := strings.Join(res.Meta.LogMessages, "\n")
	if res.Meta.Err == nil || !strings.Contains(logs, "Program data: ") ||
		!strings.Contains(logs, "Error Code: InvalidSignature. Error Number: 6002") ||
		!strings.Contains(logs, prova.LogFailed(program, "custom program error: 0x1772")) {
		t.Fatalf("failed tx: err %v logs\n%s", res.Meta.Err, logs)
	}
	sigs, _ := cl.GetSignaturesForAddressWithOpts(ctx, program, &rpc.GetSignaturesForAddressOpts{Limit: ptr(1), Commitment: rpc.CommitmentConfirmed})
	if sigs[0].Signature != failed || sigs[0].Err == nil {
		t.Fatal("failed tx not listed with its error")
	}

	foreign, err := c.ForeignEvent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	res = getTx(t, cl, foreign, solana.EncodingBase64, rpc.CommitmentConfirmed)
	evs, err := prova.ParseLogs(res.Meta.LogMessages, program)
	if err != nil || len(evs) != 1 || evs[0].Index != 0 {
		t.Fatalf("foreign: %+v %v", evs, err)
	}
	n := 0
	for _, l := range res.Meta.LogMessages {
		if strings.HasPrefix(l, "Program data: ") {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d data lines, want the fake and the real one", n)
	}

	// Revocation and policy updates are events; a revoked agent cannot record.
	root := [32]byte{9}
	if _, err := c.UpdatePolicyRoot(ctx, 0, root); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RevokeAgent(ctx, 0); err != nil {
		t.Fatal(err)
	}
	a := c.Agents()[0]
	atts := []prova.AttestationInput{{ActionHash: [32]byte{1}}}
	tx, err := c.recordTx(&a, atts, atts)
	if err == nil {
		_, err = c.Submit(tx, true)
	}
	var se *SendError
	if !errors.As(err, &se) || se.Code != codeSimulationFailed {
		t.Fatalf("record by revoked agent: %v", err)
	}
	var kinds []string
	for _, e := range c.Events() {
		switch e.Event.(type) {
		case prova.AgentRegistered:
			kinds = append(kinds, "reg")
		case prova.AttestationIssued:
			kinds = append(kinds, "att")
		case prova.PolicyRootUpdated:
			kinds = append(kinds, "pol")
		case prova.AgentRevokedEvent:
			kinds = append(kinds, "rev")
		}
	}
	if strings.Join(kinds, ",") != "reg,reg,att,pol,rev" {
		t.Fatalf("ground truth kinds %v", kinds)
	}
}

func ptr[T any](v T) *T { return &v }

func TestSendTransactionAndTokens(t *testing.T) {
	c, cl := start(t, Config{})
	ctx := tctx(t)
	payer, payee := c.NewKeypair(), c.NewKeypair()
	if _, err := cl.RequestAirdrop(ctx, payer.PublicKey(), solana.LAMPORTS_PER_SOL, rpc.CommitmentConfirmed); err != nil {
		t.Fatal(err)
	}
	src, err := c.MintTo(DevnetUSDCMint, payer.PublicKey(), 5_000_000)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := c.MintTo(DevnetUSDCMint, payee.PublicKey(), 0)
	if err != nil {
		t.Fatal(err)
	}
	bh, _ := cl.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
	build := func(amount uint64, decimals uint8) *solana.Transaction {
		ix := token.NewTransferCheckedInstruction(amount, decimals, src, DevnetUSDCMint, dst, payer.PublicKey(), nil).Build()
		memo := solana.NewInstruction(solana.MemoProgramID, nil, []byte("x402 nonce 1"))
		tx, err := solana.NewTransaction([]solana.Instruction{ix, memo}, bh.Value.Blockhash, solana.TransactionPayer(payer.PublicKey()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Sign(func(k solana.PublicKey) *solana.PrivateKey {
			if k == payer.PublicKey() {
				return &payer
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	// Wrong decimals: the simulation says why, and nothing lands.
	sim, err := cl.SimulateTransaction(ctx, build(10, 9))
	if err != nil || sim.Value.Err == nil || !strings.Contains(strings.Join(sim.Value.Logs, "\n"), "Mint decimals mismatch") {
		t.Fatalf("simulate: %+v %v", sim, err)
	}
	_, err = cl.SendTransaction(ctx, build(10, 9))
	var rerr *jsonrpc.RPCError
	if !errors.As(err, &rerr) || rerr.Code != codeSimulationFailed {
		t.Fatalf("send with wrong decimals: %v", err)
	}
	sig, err := cl.SendTransaction(ctx, build(1_250_000, 6))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := cl.GetTokenAccountBalance(ctx, dst, rpc.CommitmentConfirmed); err != nil || b.Value.Amount != "1250000" || b.Value.UiAmountString != "1.25" {
		t.Fatalf("balance: %+v %v", b, err)
	}
	res := getTx(t, cl, sig, solana.EncodingBase64, rpc.CommitmentConfirmed)
	if len(res.Meta.PreTokenBalances) != 2 || res.Meta.PostTokenBalances[1].UiTokenAmount.Amount != "1250000" ||
		res.Meta.PostTokenBalances[1].Owner == nil || *res.Meta.PostTokenBalances[1].Owner != payee.PublicKey() ||
		res.Meta.Fee != LamportsPerSignature || res.Meta.PreBalances[0]-res.Meta.PostBalances[0] != LamportsPerSignature {
		t.Fatalf("meta: %+v", res.Meta)
	}
	if !strings.Contains(strings.Join(res.Meta.LogMessages, "\n"), "Program log: Instruction: TransferChecked") {
		t.Fatalf("logs %q", res.Meta.LogMessages)
	}
	// Resending is refused; a bad signature is refused.
	if _, err := cl.SendTransaction(ctx, build(1_250_000, 6)); err == nil {
		t.Fatal("duplicate accepted")
	}
	bad := build(1, 6)
	bad.Signatures[0][0] ^= 1
	if _, err := cl.SendTransaction(ctx, bad); !errors.As(err, &rerr) || rerr.Code != codeSigVerifyFailed {
		t.Fatalf("bad signature: %v", err)
	}
	if bal, err := cl.GetBalance(ctx, payee.PublicKey(), rpc.CommitmentConfirmed); err != nil || bal.Value != 0 {
		t.Fatalf("payee lamports %v %v", bal, err)
	}
}

func TestWebsocketSubscriptions(t *testing.T) {
	c, _ := start(t, Config{Agents: 1})
	ctx := tctx(t)
	client, err := ws.Connect(ctx, c.WSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	logs, err := client.LogsSubscribeMentions(c.ProgramID(), rpc.CommitmentConfirmed)
	if err != nil {
		t.Fatal(err)
	}
	slots, err := client.SlotSubscribe()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // subscriptions confirmed
	g, err := c.Generate(ctx, 1, 30, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range g.Records {
		got, err := logs.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.Value.Signature != want {
			t.Fatalf("notification %d for %s, want %s", i, got.Value.Signature, want)
		}
		if evs, err := prova.ParseLogs(got.Value.Logs, c.ProgramID()); err != nil || len(evs) != 10 {
			t.Fatalf("notification logs: %d events, %v", len(evs), err)
		}
	}
	c.AdvanceSlots(1)
	if s, err := slots.Recv(ctx); err != nil || s.Slot != c.Slot() {
		t.Fatalf("slot notification %+v %v", s, err)
	}

	c.DuplicateDelivery(true)
	g, _ = c.Generate(ctx, 1, 1, 1)
	for i := 0; i < 2; i++ {
		got, err := logs.Recv(ctx)
		if err != nil || got.Value.Signature != g.Records[0] {
			t.Fatalf("duplicate %d: %v", i, err)
		}
	}
	c.DuplicateDelivery(false)

	// A signature subscription at finalized fires once the slot is rooted.
	sub, err := client.SignatureSubscribe(g.Records[0], rpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	c.AdvanceSlots(5)
	if r, err := sub.Recv(ctx); err != nil || r.Value.Err != nil {
		t.Fatalf("signature notification: %v", err)
	}

	if n := c.DropConnections(); n != 1 {
		t.Fatalf("dropped %d connections", n)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		if _, err := logs.Recv(rctx); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatal("subscription did not see the drop")
			}
			break
		}
	}
	c.RefuseWebsockets(true)
	if _, err := ws.Connect(ctx, c.WSURL()); err == nil {
		t.Fatal("connected while refused")
	}
	c.RefuseWebsockets(false)
	again, err := ws.Connect(ctx, c.WSURL())
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
}

func TestRawJSONRPC(t *testing.T) {
	c, _ := start(t, Config{})
	post := func(body string) string {
		resp, err := httpPost(c.RPCURL(), body)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	cases := []struct{ body, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"nope"}`, `"code":-32601`},
		{`{"jsonrpc":"2.0","id":9223372036854775807,"method":"getHealth"}`, `"result":"ok","id":9223372036854775807`},
		{`not json`, `"code":-32700`},
		{`[{"jsonrpc":"2.0","id":1,"method":"getHealth"},{"jsonrpc":"2.0","id":2,"method":"getSlot"}]`, `"id":2`},
		{`{"jsonrpc":"2.0","id":1,"method":"getSignaturesForAddress","params":["bad"]}`, `"code":-32602`},
		{`{"jsonrpc":"2.0","id":1,"method":"getSignaturesForAddress","params":["11111111111111111111111111111111",{"limit":1001}]}`, `"code":-32602`},
		{`{"jsonrpc":"2.0","id":1,"method":"sendTransaction","params":["AAAA",{"encoding":"base64"}]}`, `"code":-32602`},
		{`{"jsonrpc":"2.0","id":1,"method":"getTransaction","params":["` + solana.Signature{}.String() + `",{"commitment":"confirmed"}]}`, `"result":null`},
	}
	for _, tc := range cases {
		if got := post(tc.body); !strings.Contains(got, tc.want) {
			t.Errorf("%s\n got %s\nwant %s", tc.body, got, tc.want)
		}
	}
	if !bytes.Contains([]byte(post(`{"jsonrpc":"2.0","id":1,"method":"getVersion"}`)), []byte("solana-core")) {
		t.Error("getVersion")
	}
}

// TestLaggingNodeAndForkInsert covers the fault methods a load-balanced RPC
// and a confirmed-level fork need: getTransaction answering null for a
// listed transaction (for a number of calls, for a while, or for the next
// transactions to land), and a transaction added to an earlier slot, listed
// in slot order.
func TestLaggingNodeAndForkInsert(t *testing.T) {
	c, cl := start(t, Config{Agents: 1, FinalityDepth: 10})
	ctx := tctx(t)
	program := c.ProgramID()
	getOrNil := func(sig solana.Signature) *rpc.GetTransactionResult {
		t.Helper()
		var out *rpc.GetTransactionResult
		err := cl.RPCCallForInto(ctx, &out, "getTransaction", []any{sig.String(),
			map[string]any{"encoding": "base64", "commitment": "confirmed", "maxSupportedTransactionVersion": 0}})
		if err != nil {
			t.Fatalf("getTransaction: %v", err)
		}
		return out
	}
	known := func(sig solana.Signature) bool {
		t.Helper()
		st, err := cl.GetSignatureStatuses(ctx, true, sig)
		if err != nil {
			t.Fatal(err)
		}
		return st.Value[0] != nil
	}
	listed := func() []solana.Signature {
		t.Helper()
		page, err := cl.GetSignaturesForAddressWithOpts(ctx, program, &rpc.GetSignaturesForAddressOpts{Commitment: rpc.CommitmentConfirmed})
		if err != nil {
			t.Fatal(err)
		}
		out := make([]solana.Signature, len(page))
		for i, s := range page {
			out[i] = s.Signature
		}
		return out
	}

	// Hidden for two calls, through the admin method.
	g, err := c.Generate(ctx, 1, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	sig := g.Records[0]
	if resp, err := httpPost(c.RPCURL(), `{"jsonrpc":"2.0","id":1,"method":"devnet_hideTransaction","params":[{"signature":"`+
		sig.String()+`","calls":2}]}`); err != nil || !strings.Contains(resp, `"result":true`) {
		t.Fatalf("devnet_hideTransaction: %s %v", resp, err)
	}
	// Two calls, each hidden: both are made before either is checked.
	if first, second := getOrNil(sig), getOrNil(sig); first != nil || second != nil || !known(sig) {
		t.Fatal("a transaction hidden for two calls answered within them, or its status was hidden too")
	}
	if third, fourth := getOrNil(sig), getOrNil(sig); third == nil || fourth == nil {
		t.Fatal("the transaction stays hidden after its two calls")
	}
	if l := listed(); len(l) == 0 || l[0] != g.Records[1] {
		t.Fatal("listing changed")
	}

	// The next transaction to land is hidden for a while, its status too.
	if err := c.HideNextTransactions(1, Hide{For: 300 * time.Millisecond, Statuses: true}); err != nil {
		t.Fatal(err)
	}
	g, err = c.Generate(ctx, 1, 2, 1) // two transactions: only the first is hidden
	if err != nil {
		t.Fatal(err)
	}
	hidden, shown := g.Records[0], g.Records[1]
	if getOrNil(hidden) != nil || known(hidden) || getOrNil(shown) == nil || listed()[1] != hidden {
		t.Fatal("the next transaction was not hidden (and listed), or the one after was")
	}
	testenv.WaitFor(t, "the transaction hidden for 300 ms shown", testenv.Patience, func() bool { return getOrNil(hidden) != nil })
	if !known(hidden) {
		t.Fatal("status still hidden after the period")
	}
	for _, bad := range []string{`{"signature":"` + sig.String() + `"}`, `{"signature":"` + sig.String() + `","calls":1,"ms":5}`,
		`{"next":1,"signature":"` + sig.String() + `","calls":1}`, `{"calls":1}`, `{"signature":"` + solana.Signature{}.String() + `","calls":1}`} {
		if resp, _ := httpPost(c.RPCURL(), `{"jsonrpc":"2.0","id":1,"method":"devnet_hideTransaction","params":[`+bad+`]}`); !strings.Contains(resp, `"code":-32602`) {
			t.Errorf("devnet_hideTransaction %s: %s", bad, resp)
		}
	}

	// A fork adds a transaction to an earlier, unfinalized slot.
	c.AdvanceSlots(3)
	early := c.Slot() - 2
	after, err := c.Generate(ctx, 1, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpPost(c.RPCURL(), fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"devnet_insertTransaction","params":[{"agent":0,"slot":%d,"attestations":3}]}`, early))
	if err != nil || !strings.Contains(resp, `"result":"`) {
		t.Fatalf("devnet_insertTransaction: %s %v", resp, err)
	}
	var out struct{ Result string }
	if err := json.Unmarshal([]byte(resp), &out); err != nil {
		t.Fatal(err)
	}
	inserted := solana.MustSignatureFromBase58(out.Result)
	res := getOrNil(inserted)
	if res == nil || res.Slot != early {
		t.Fatalf("inserted transaction: %+v", res)
	}
	l := listed()
	pos := map[solana.Signature]int{}
	for i, s := range l {
		pos[s] = i
	}
	if pos[after.Records[0]] != 0 || pos[inserted] != 1 {
		t.Fatalf("listing order: the later transaction at %d, the inserted one at %d; want 0 and 1", pos[after.Records[0]], pos[inserted])
	}
	// Paging with before/until across the inserted transaction.
	page, err := cl.GetSignaturesForAddressWithOpts(ctx, program, &rpc.GetSignaturesForAddressOpts{
		Before: after.Records[0], Until: l[3], Commitment: rpc.CommitmentConfirmed})
	if err != nil || len(page) != 2 || page[0].Signature != inserted || page[1].Signature != l[2] {
		t.Fatalf("page between: %+v %v", page, err)
	}
	evs := 0
	for _, e := range c.Events() {
		if e.TxSignature == inserted {
			evs++
			if e.Slot != early {
				t.Fatalf("ground truth slot %d", e.Slot)
			}
		}
	}
	if evs != 3 {
		t.Fatalf("%d ground-truth events of the inserted transaction", evs)
	}
	if _, err := c.InsertTransaction(ctx, 0, 1, c.FinalizedSlot()); err == nil {
		t.Fatal("inserted into a finalized slot")
	}
	if _, err := c.InsertTransaction(ctx, 0, 1, c.Slot()+1); err == nil {
		t.Fatal("inserted into a future slot")
	}
}

func TestFundWalletRPC(t *testing.T) {
	c, cl := start(t, Config{})
	ctx := tctx(t)
	w := c.NewKeypair().PublicKey()
	var out struct {
		Wallet      string `json:"wallet"`
		Lamports    uint64 `json:"lamports"`
		USDCAccount string `json:"usdcAccount"`
		USDC        uint64 `json:"usdc"`
	}
	if err := cl.RPCCallForInto(ctx, &out, "devnet_fund", []any{w.String(), map[string]any{"lamports": 5000, "usdc": 2_500_000}}); err != nil {
		t.Fatal(err)
	}
	ata, _, _ := solana.FindAssociatedTokenAddress(w, DevnetUSDCMint)
	if out.Wallet != w.String() || out.Lamports != 5000 || out.USDCAccount != ata.String() || out.USDC != 2_500_000 {
		t.Fatalf("fund: %+v", out)
	}
	// Again, with the defaults: balances add up.
	if err := cl.RPCCallForInto(ctx, &out, "devnet_fund", []any{w.String()}); err != nil {
		t.Fatal(err)
	}
	if out.Lamports != 5000+solana.LAMPORTS_PER_SOL || out.USDC != 102_500_000 {
		t.Fatalf("fund defaults: %+v", out)
	}
	if b, err := cl.GetTokenAccountBalance(ctx, ata, rpc.CommitmentConfirmed); err != nil || b.Value.Amount != "102500000" || b.Value.Decimals != 6 {
		t.Fatalf("balance %+v %v", b, err)
	}
	// The mint is what x402 clients read: Token-owned, 82 bytes, 6 decimals.
	mint, err := cl.GetAccountInfoWithOpts(ctx, DevnetUSDCMint, &rpc.GetAccountInfoOpts{Encoding: solana.EncodingBase64, Commitment: rpc.CommitmentConfirmed})
	if err != nil || mint.Value.Owner != solana.TokenProgramID || len(mint.Value.Data.GetBinary()) != MintSize || mint.Value.Data.GetBinary()[44] != 6 {
		t.Fatalf("mint %+v %v", mint, err)
	}
	for _, bad := range [][]any{{"not-an-address"}, {w.String(), map[string]any{"usdc": -1}}, {w.String(), map[string]any{"lamports": uint64(1) << 62}}} {
		if err := cl.RPCCallForInto(ctx, &out, "devnet_fund", bad); err == nil {
			t.Errorf("devnet_fund %v accepted", bad)
		}
	}
}
