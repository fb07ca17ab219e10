package verifier

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/attestd/attestd/x402"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"
)

// rpcTimeout bounds one Solana RPC call.
const rpcTimeout = 5 * time.Second

// selfSettler co-signs payments as their fee payer and settles them
// through a Solana RPC: simulate before the handler, send and confirm
// after it.
type selfSettler struct {
	key           solana.PrivateKey
	rpc           *rpc.Client
	settleTimeout time.Duration

	hintMu      sync.Mutex
	hint        blockhashHint
	hintLoading bool
}

type blockhashHint struct {
	hash      solana.Hash
	lastValid uint64
	at        time.Time
}

func newSelfSettler(key solana.PrivateKey, rpcURL string, settleTimeout time.Duration) *selfSettler {
	return &selfSettler{key: key, rpc: rpc.New(rpcURL), settleTimeout: settleTimeout}
}

func (s *selfSettler) feePayer() (solana.PublicKey, bool) { return s.key.PublicKey(), true }

// recentBlockhash is the hint put in 402 answers: a blockhash at most two
// seconds old, refreshed in the background so no answer waits for the RPC.
func (s *selfSettler) recentBlockhash() (solana.Hash, uint64, bool) {
	s.hintMu.Lock()
	defer s.hintMu.Unlock()
	h := s.hint
	if time.Since(h.at) > 2*time.Second && !s.hintLoading {
		s.hintLoading = true
		go s.refreshHint()
	}
	if h.at.IsZero() || time.Since(h.at) > 30*time.Second {
		return solana.Hash{}, 0, false
	}
	return h.hash, h.lastValid, true
}

func (s *selfSettler) refreshHint() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	out, err := s.rpc.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
	s.hintMu.Lock()
	defer s.hintMu.Unlock()
	s.hintLoading = false
	if err == nil && out != nil && out.Value != nil {
		s.hint = blockhashHint{hash: out.Value.Blockhash, lastValid: out.Value.LastValidBlockHeight, at: time.Now()}
	}
}

// verify signs as fee payer and simulates the complete transaction: the
// blockhash must still be valid, the source funded, every instruction
// succeed.
func (s *selfSettler) verify(ctx context.Context, p *Payment) *Refusal {
	sig, err := s.key.Sign(p.Tx.Message)
	if err != nil {
		return unavailable(ReasonRPCDown, "cannot sign as fee payer: "+err.Error())
	}
	p.signed = p.Tx.WithSignature(0, sig)
	p.txSig = sig.String()
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	res, err := s.rpc.SimulateRawTransactionWithOpts(ctx, p.signed, &rpc.SimulateTransactionOpts{
		SigVerify: true, Commitment: rpc.CommitmentConfirmed})
	if err != nil {
		var rerr *jsonrpc.RPCError
		if errors.As(err, &rerr) {
			if rerr.Code == -32003 {
				return challenge(x402.ReasonSignature, "payment refused: a signature of the transaction does not verify")
			}
			return challenge(ReasonSimulationFailed, "payment refused: the chain rejects the transaction: "+clip(rerr.Message, 200))
		}
		return unavailable(ReasonRPCDown, "cannot check the payment with Solana now (the RPC did not answer); nothing was charged; try again shortly")
	}
	if res == nil || res.Value == nil {
		return unavailable(ReasonRPCDown, "the Solana RPC answered an empty simulation; nothing was charged; try again shortly")
	}
	if res.Value.Err != nil {
		return simulationRefusal(res.Value.Err, res.Value.Logs)
	}
	return nil
}

func simulationRefusal(txErr any, logs []string) *Refusal {
	desc := fmt.Sprint(txErr)
	if strings.Contains(desc, "BlockhashNotFound") {
		return challenge(ReasonBlockhashExpired, "payment refused: its recent blockhash has expired (or is unknown to the chain); sign a new payment with a fresh blockhash")
	}
	msg := "payment refused: the transaction fails on chain (" + clip(desc, 120) + ")"
	for i := len(logs) - 1; i >= 0 && i >= len(logs)-3; i-- {
		if strings.Contains(logs[i], "Error") || strings.Contains(logs[i], "failed") || strings.Contains(logs[i], "insufficient") {
			msg += ": " + clip(logs[i], 160)
			break
		}
	}
	return challenge(ReasonSimulationFailed, msg)
}

// settle sends the co-signed transaction and waits until it is confirmed.
func (s *selfSettler) settle(ctx context.Context, p *Payment) (string, *Refusal) {
	ctx, cancel := context.WithTimeout(ctx, s.settleTimeout)
	defer cancel()
	sendCtx, sendCancel := context.WithTimeout(ctx, rpcTimeout)
	_, err := s.rpc.SendEncodedTransactionWithOpts(sendCtx, base64.StdEncoding.EncodeToString(p.signed),
		rpc.TransactionOpts{PreflightCommitment: rpc.CommitmentConfirmed})
	sendCancel()
	if err != nil {
		var rerr *jsonrpc.RPCError
		if errors.As(err, &rerr) {
			return "", &Refusal{Reason: ReasonSettleFailed, Message: "the chain refused the payment at settlement: " + clip(rerr.Message, 200)}
		}
		// The send may have reached the cluster: confirm before deciding.
	}
	sig := solana.MustSignatureFromBase58(p.txSig)
	wait := 100 * time.Millisecond
	for {
		qctx, qcancel := context.WithTimeout(ctx, rpcTimeout)
		st, err := s.rpc.GetSignatureStatuses(qctx, false, sig)
		qcancel()
		if err == nil && st != nil && len(st.Value) == 1 && st.Value[0] != nil {
			v := st.Value[0]
			if v.Err != nil {
				return "", &Refusal{Reason: ReasonSettleFailed, Message: "the payment transaction failed on chain: " + clip(fmt.Sprint(v.Err), 200)}
			}
			if v.ConfirmationStatus == rpc.ConfirmationStatusConfirmed || v.ConfirmationStatus == rpc.ConfirmationStatusFinalized {
				return p.txSig, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", &Refusal{Reason: ReasonNotConfirmed, Message: fmt.Sprintf("the payment transaction %s was not confirmed within %s; it was not charged unless it lands later", p.txSig, s.settleTimeout)}
		case <-time.After(wait):
		}
		wait = min(wait*2, time.Second)
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// preflight reports what would make every payment fail: payTo's token
// account missing, the fee payer without SOL for fees.
func (s *selfSettler) preflight(ctx context.Context, dest solana.PublicKey) []string {
	var out []string
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	acc, err := s.rpc.GetAccountInfoWithOpts(ctx, dest, &rpc.GetAccountInfoOpts{Commitment: rpc.CommitmentConfirmed})
	switch {
	case errors.Is(err, rpc.ErrNotFound) || (err == nil && (acc == nil || acc.Value == nil)):
		out = append(out, fmt.Sprintf("payTo's token account %s does not exist: every payment will fail until it is created (clients do not create it)", dest))
	case err != nil:
		out = append(out, "cannot reach the Solana RPC to check payTo's token account: "+err.Error())
		return out
	}
	bal, err := s.rpc.GetBalance(ctx, s.key.PublicKey(), rpc.CommitmentConfirmed)
	if err == nil && bal.Value < 10*5000 {
		out = append(out, fmt.Sprintf("the fee payer %s holds %d lamports: not enough for fees", s.key.PublicKey(), bal.Value))
	}
	return out
}
