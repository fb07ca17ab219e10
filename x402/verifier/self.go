package verifier

import (
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/tracing"

	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/x402"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"
	"golang.org/x/sync/singleflight"
)

// rpcTimeout bounds one Solana RPC call.
const rpcTimeout = 5 * time.Second

// selfSettler co-signs payments as their fee payer and settles them
// through a Solana RPC: simulate before the handler, send and confirm
// after it.
type selfSettler struct {
	key           solana.PrivateKey
	pub           solana.PublicKey // key's, derived once (PublicKey validates the key: ~30 µs)
	rpc           *rpc.Client
	chain         chainCheck
	settleTimeout time.Duration

	hintMu      sync.Mutex
	hint        blockhashHint
	hintLoading bool
	hintFailed  time.Time          // last failed refresh (an unreachable RPC is not waited for on every answer)
	hintSF      singleflight.Group // answers after an idle period share one refresh
}

type blockhashHint struct {
	hash      solana.Hash
	lastValid uint64
	at        time.Time
}

func newSelfSettler(key solana.PrivateKey, rpcURL string, settleTimeout time.Duration) *selfSettler {
	c := tracing.SolanaRPC(rpcURL)
	return &selfSettler{key: key, pub: key.PublicKey(), rpc: c, chain: chainCheck{rpc: c}, settleTimeout: settleTimeout}
}

func (s *selfSettler) feePayer() (solana.PublicKey, bool) { return s.pub, true }

// Ages of the blockhash hint: past hintFresh it is refreshed in the
// background; past hintStale (after an idle period) the answer waits for a
// refresh, at most hintWait, rather than go out without the hint.
const (
	hintFresh = 2 * time.Second
	hintStale = 30 * time.Second
	hintWait  = 750 * time.Millisecond
)

// recentBlockhash is the hint put in 402 answers: a blockhash at most two
// seconds old, refreshed in the background so a busy node's answers never
// wait for the RPC. After an idle period the first answer refreshes it on
// demand (bounded by hintWait).
func (s *selfSettler) recentBlockhash() (solana.Hash, uint64, bool) {
	s.hintMu.Lock()
	h := s.hint
	if !h.at.IsZero() && time.Since(h.at) <= hintStale {
		if time.Since(h.at) > hintFresh && !s.hintLoading {
			s.hintLoading = true
			go s.refreshHint(time.Second)
		}
		s.hintMu.Unlock()
		return h.hash, h.lastValid, true
	}
	if time.Since(s.hintFailed) < hintFresh {
		s.hintMu.Unlock()
		return solana.Hash{}, 0, false // a refresh just failed: do not wait again
	}
	s.hintMu.Unlock()
	_, _, _ = s.hintSF.Do("hint", func() (any, error) { s.refreshHint(hintWait); return nil, nil })
	s.hintMu.Lock()
	defer s.hintMu.Unlock()
	h = s.hint
	if h.at.IsZero() || time.Since(h.at) > hintStale {
		return solana.Hash{}, 0, false
	}
	return h.hash, h.lastValid, true
}

func (s *selfSettler) refreshHint(wait time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	out, err := s.rpc.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
	s.hintMu.Lock()
	defer s.hintMu.Unlock()
	s.hintLoading = false
	if err == nil && out != nil && out.Value != nil {
		s.hint = blockhashHint{hash: out.Value.Blockhash, lastValid: out.Value.LastValidBlockHeight, at: time.Now()}
	} else {
		s.hintFailed = time.Now()
	}
}

// blockhashValidity is how many blocks a blockhash stays valid (150).
const blockhashValidity = 150

// heightSlack covers a blockhash newer than the confirmed height it is
// bounded by (taken from a processed block, a few blocks ahead): without
// it such a transaction could still land after its row was released.
const heightSlack = 32

// lastValidHeight bounds the block height after which p's transaction can
// no longer land: the hint's when the payer used the hinted blockhash,
// otherwise the current height plus a blockhash's life (the blockhash is
// valid now, so it cannot outlive that) plus heightSlack.
func (s *selfSettler) lastValidHeight(ctx context.Context, p *Payment) uint64 {
	s.hintMu.Lock()
	h := s.hint
	s.hintMu.Unlock()
	if !h.at.IsZero() && h.hash == p.Tx.Blockhash {
		return h.lastValid
	}
	height, err := s.chain.blockHeight(ctx)
	if err != nil {
		return 0 // unknown: the reconciler falls back to the row's age
	}
	return height + blockhashValidity + heightSlack
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
			return challenge(ReasonSimulationFailed, "payment refused: the chain rejects the transaction: "+excerpt.Of(rerr.Message, 200))
		}
		return unavailable(ReasonRPCDown, "cannot check the payment with Solana now (the RPC did not answer); nothing was charged; try again shortly")
	}
	if res == nil || res.Value == nil {
		return unavailable(ReasonRPCDown, "the Solana RPC answered an empty simulation; nothing was charged; try again shortly")
	}
	if res.Value.Err != nil {
		return simulationRefusal(res.Value.Err, res.Value.Logs)
	}
	p.lastValid = s.lastValidHeight(ctx, p)
	return nil
}

func simulationRefusal(txErr any, logs []string) *Refusal {
	desc := fmt.Sprint(txErr)
	if strings.Contains(desc, "BlockhashNotFound") {
		return challenge(ReasonBlockhashExpired, "payment refused: its recent blockhash has expired (or is unknown to the chain); sign a new payment with a fresh blockhash")
	}
	msg := "payment refused: the transaction fails on chain (" + excerpt.Of(desc, 120) + ")"
	for i := len(logs) - 1; i >= 0 && i >= len(logs)-3; i-- {
		if strings.Contains(logs[i], "Error") || strings.Contains(logs[i], "failed") || strings.Contains(logs[i], "insufficient") {
			msg += ": " + excerpt.Of(logs[i], 160)
			break
		}
	}
	return challenge(ReasonSimulationFailed, msg)
}

// settle sends the co-signed transaction and follows it on chain until it
// lands (settled), fails or expires (released: nothing was charged), or the
// settle timeout ends the wait (pending: the chain decides later, and the
// reconciler records it).
func (s *selfSettler) settle(ctx context.Context, p *Payment) (string, store.PaymentStatus, *Refusal) {
	ctx, cancel := context.WithTimeout(ctx, s.settleTimeout)
	defer cancel()
	sendCtx, sendCancel := context.WithTimeout(ctx, rpcTimeout)
	_, err := s.rpc.SendEncodedTransactionWithOpts(sendCtx, base64.StdEncoding.EncodeToString(p.signed),
		rpc.TransactionOpts{PreflightCommitment: rpc.CommitmentConfirmed})
	sendCancel()
	var refused string
	var rerr *jsonrpc.RPCError
	if errors.As(err, &rerr) {
		// Refused at the door, unless it was sent before: ask the chain.
		refused = "the chain refused the payment at settlement: " + excerpt.Of(rerr.Message, 200)
	}
	// Otherwise the send may have reached the cluster: confirm before deciding.
	sig := solana.MustSignatureFromBase58(p.txSig)
	wait := 100 * time.Millisecond
	for {
		st, reason, err := s.chain.state(ctx, sig, p.lastValid)
		if err == nil {
			switch st {
			case stateLanded:
				return p.txSig, store.PaymentSettled, nil
			case stateFailed, stateExpired:
				return "", store.PaymentReleased, &Refusal{Reason: ReasonSettleFailed, Message: reason}
			}
			if refused != "" {
				return "", store.PaymentReleased, &Refusal{Reason: ReasonSettleFailed, Message: refused + "; not charged"}
			}
		}
		select {
		case <-ctx.Done():
			return "", store.PaymentPending, &Refusal{Reason: ReasonNotConfirmed, Message: fmt.Sprintf(
				"the payment transaction %s was not confirmed within %s; it stays pending until the chain decides: "+
					"if it lands (before block height %d), present the same payment again for this answer (no new charge); if it does not, you are not charged",
				p.txSig, s.settleTimeout, p.lastValid)}
		case <-time.After(wait):
		}
		wait = min(wait*2, time.Second)
	}
}

// check asks the chain about a sent payment (for a re-presented one).
func (s *selfSettler) check(ctx context.Context, sig solana.Signature, lastValid uint64) (chainState, string, error) {
	return s.chain.state(ctx, sig, lastValid)
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
