package x402

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/gagliardetto/solana-go"
)

// Compute budget a payer asks for, as the reference client does.
const (
	PayerComputeUnits     = 20_000
	PayerComputeUnitPrice = 1 // microlamport
)

// Payment is what BuildExact needs beyond the requirements.
type Payment struct {
	// Payer owns the source token account and signs the transfer.
	Payer solana.PrivateKey
	// Blockhash is a recent blockhash (the requirements' hint, or the
	// payer's own RPC's).
	Blockhash solana.Hash
	// Decimals of the asset (the mint's).
	Decimals uint8
	// TokenProgram owns the mint (default: the Token program).
	TokenProgram solana.PublicKey
}

// BuildExact builds and partially signs the transaction that pays q: the
// layout of the reference client (compute unit limit, compute unit price,
// TransferChecked from the payer's associated token account to payTo's,
// a Memo), as a v0 message whose fee payer is q.Extra.FeePayer, signed by
// the payer only. It returns the wire bytes.
func BuildExact(q Requirements, p Payment) ([]byte, error) {
	if q.Scheme != SchemeExact {
		return nil, fmt.Errorf("x402: scheme %q is not %q", q.Scheme, SchemeExact)
	}
	if q.Extra == nil || q.Extra.FeePayer == "" {
		return nil, fmt.Errorf("x402: the requirements name no extra.feePayer")
	}
	amount, err := q.AmountUnits()
	if err != nil {
		return nil, err
	}
	feePayer, err := solana.PublicKeyFromBase58(q.Extra.FeePayer)
	if err != nil {
		return nil, fmt.Errorf("x402: extra.feePayer: %w", err)
	}
	mint, err := solana.PublicKeyFromBase58(q.Asset)
	if err != nil {
		return nil, fmt.Errorf("x402: asset: %w", err)
	}
	payTo, err := solana.PublicKeyFromBase58(q.PayTo)
	if err != nil {
		return nil, fmt.Errorf("x402: payTo: %w", err)
	}
	program := p.TokenProgram
	if program.IsZero() {
		program = solana.TokenProgramID
	}
	owner := p.Payer.PublicKey()
	if owner == feePayer {
		return nil, fmt.Errorf("x402: the payer must not be the fee payer")
	}
	src, err := AssociatedTokenAccount(owner, mint, program)
	if err != nil {
		return nil, err
	}
	dst, err := AssociatedTokenAccount(payTo, mint, program)
	if err != nil {
		return nil, err
	}
	memo := []byte(q.Extra.Memo)
	if len(memo) == 0 {
		var nonce [16]byte
		if _, err := rand.Read(nonce[:]); err != nil {
			return nil, err
		}
		memo = []byte(hex.EncodeToString(nonce[:]))
	}
	ixs := []solana.Instruction{
		solana.NewInstruction(ComputeBudgetProgramID, nil, u32Data(2, PayerComputeUnits)),
		solana.NewInstruction(ComputeBudgetProgramID, nil, u64Data(3, PayerComputeUnitPrice)),
		TransferChecked(program, src, mint, dst, owner, amount, p.Decimals),
		solana.NewInstruction(solana.MemoProgramID, nil, memo),
	}
	return SignPayment(ixs, p.Blockhash, feePayer, p.Payer)
}

// TransferChecked is the SPL Token TransferChecked instruction.
func TransferChecked(program, src, mint, dst, authority solana.PublicKey, amount uint64, decimals uint8) solana.Instruction {
	data := make([]byte, 10)
	data[0] = 12
	binary.LittleEndian.PutUint64(data[1:], amount)
	data[9] = decimals
	return solana.NewInstruction(program, solana.AccountMetaSlice{
		solana.Meta(src).WRITE(), solana.Meta(mint), solana.Meta(dst).WRITE(), solana.Meta(authority).SIGNER(),
	}, data)
}

// SignPayment compiles instructions into a v0 message with feePayer first
// and signs it with signer only, leaving the fee payer's signature slot
// zero for the server to fill. It returns the wire bytes.
func SignPayment(ixs []solana.Instruction, blockhash solana.Hash, feePayer solana.PublicKey, signers ...solana.PrivateKey) ([]byte, error) {
	tx, err := solana.NewTransaction(ixs, blockhash, solana.TransactionPayer(feePayer))
	if err != nil {
		return nil, fmt.Errorf("x402: compile transaction: %w", err)
	}
	tx.Message.SetVersion(solana.MessageVersionV0)
	msg, err := tx.Message.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("x402: encode message: %w", err)
	}
	tx.Signatures = make([]solana.Signature, tx.Message.Header.NumRequiredSignatures)
	for _, s := range signers {
		idx := -1
		for i := 0; i < int(tx.Message.Header.NumRequiredSignatures); i++ {
			if tx.Message.AccountKeys[i] == s.PublicKey() {
				idx = i
			}
		}
		if idx < 0 {
			return nil, fmt.Errorf("x402: %s is not a signer of the transaction", s.PublicKey())
		}
		sig, err := s.Sign(msg)
		if err != nil {
			return nil, fmt.Errorf("x402: sign: %w", err)
		}
		tx.Signatures[idx] = sig
	}
	return tx.MarshalBinary()
}

func u32Data(disc byte, v uint32) []byte {
	b := make([]byte, 5)
	b[0] = disc
	binary.LittleEndian.PutUint32(b[1:], v)
	return b
}

func u64Data(disc byte, v uint64) []byte {
	b := make([]byte, 9)
	b[0] = disc
	binary.LittleEndian.PutUint64(b[1:], v)
	return b
}

// ComputeUnitLimit and ComputeUnitPrice are the compute budget instructions.
func ComputeUnitLimit(units uint32) solana.Instruction {
	return solana.NewInstruction(ComputeBudgetProgramID, nil, u32Data(2, units))
}

// ComputeUnitPrice sets the priority fee in microlamports per unit.
func ComputeUnitPrice(micro uint64) solana.Instruction {
	return solana.NewInstruction(ComputeBudgetProgramID, nil, u64Data(3, micro))
}

// NewPaymentPayload wraps a signed transaction for PAYMENT-SIGNATURE.
func NewPaymentPayload(r ResourceInfo, accepted Requirements, wire []byte) PaymentPayload {
	return PaymentPayload{X402Version: 2, Resource: &r, Accepted: accepted,
		Payload: ExactPayload{Transaction: encodeB64(wire)}}
}
