package x402

import (
	"crypto/ed25519"
	"encoding/binary"
	"unicode/utf8"

	"github.com/gagliardetto/solana-go"
)

// Programs an `exact` payment may call.
var (
	ComputeBudgetProgramID = solana.MustPublicKeyFromBase58("ComputeBudget111111111111111111111111111111")
	// LighthouseProgramID is the assertion program wallets (Phantom,
	// Solflare) insert as guards; its instructions can only fail a
	// transaction.
	LighthouseProgramID = solana.MustPublicKeyFromBase58("L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95")
)

// Bounds of the compute budget a payment may ask the fee payer to fund.
const (
	DefaultMaxComputeUnits     = 400_000
	DefaultMaxComputeUnitPrice = 50_000 // microlamports per unit
	maxMemoBytes               = 256
	maxLighthouse              = 4
)

// Reasons CheckExact refuses a transaction (x402's SVM error codes).
const (
	ReasonInstructionsLength  = "invalid_exact_svm_payload_transaction_instructions_length"
	ReasonComputeLimit        = "invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction"
	ReasonComputePrice        = "invalid_exact_svm_payload_transaction_instructions_compute_price_instruction"
	ReasonComputePriceTooHigh = "invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high"
	ReasonUnknownInstruction  = "invalid_exact_svm_payload_unknown_instruction"
	ReasonNoTransfer          = "invalid_exact_svm_payload_no_transfer_instruction"
	ReasonMintMismatch        = "invalid_exact_svm_payload_mint_mismatch"
	ReasonRecipientMismatch   = "invalid_exact_svm_payload_recipient_mismatch"
	ReasonAmountMismatch      = "invalid_exact_svm_payload_amount_mismatch"
	ReasonDecimalsMismatch    = "invalid_exact_svm_payload_decimals_mismatch"
	ReasonFeePayerMismatch    = "invalid_exact_svm_payload_fee_payer_mismatch"
	ReasonFeePayerTransfer    = "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds"
	ReasonFeePayerInAccounts  = "invalid_exact_svm_payload_transaction_fee_payer_included_in_instruction_accounts"
	ReasonMemoMismatch        = "invalid_exact_svm_payload_memo_mismatch"
	ReasonMemoCount           = "invalid_exact_svm_payload_memo_count"
	ReasonSigners             = "invalid_exact_svm_payload_transaction_signers"
	ReasonSignature           = "invalid_exact_svm_payload_transaction_signature"
	ReasonLookupTables        = "invalid_exact_svm_payload_address_lookup_tables"
)

// ExactTerms are what an `exact` payment must do, as the server built them.
type ExactTerms struct {
	FeePayer solana.PublicKey
	PayTo    solana.PublicKey
	Asset    solana.PublicKey
	Amount   uint64
	// Decimals of Asset; negative when unknown (the chain still checks
	// TransferChecked's decimals).
	Decimals int
	// Memo, when set, must be the data of exactly one Memo instruction.
	Memo string
	// MaxComputeUnits and MaxComputeUnitPrice bound the fee the fee payer
	// funds (zero: the defaults).
	MaxComputeUnits     uint32
	MaxComputeUnitPrice uint64

	destToken, destToken2022 solana.PublicKey
}

// Prepare derives the payTo's token accounts (once: the derivation costs
// tens of microseconds). Call it after setting the fields.
func (t *ExactTerms) Prepare() error {
	var err error
	if t.destToken, err = AssociatedTokenAccount(t.PayTo, t.Asset, solana.TokenProgramID); err != nil {
		return err
	}
	t.destToken2022, err = AssociatedTokenAccount(t.PayTo, t.Asset, solana.Token2022ProgramID)
	return err
}

// Destination is payTo's associated token account under program.
func (t *ExactTerms) Destination(program solana.PublicKey) solana.PublicKey {
	if program == solana.Token2022ProgramID {
		return t.destToken2022
	}
	return t.destToken
}

// AssociatedTokenAccount derives owner's associated token account of mint
// under a token program (Token or Token-2022).
func AssociatedTokenAccount(owner, mint, tokenProgram solana.PublicKey) (solana.PublicKey, error) {
	k, _, err := solana.FindProgramAddress([][]byte{owner[:], tokenProgram[:], mint[:]}, solana.SPLAssociatedTokenAccountProgramID)
	return k, err
}

// Checked is what CheckExact learned from a valid payment.
type Checked struct {
	Payer        solana.PublicKey // the token authority (the client)
	Source       solana.PublicKey // its token account
	TokenProgram solana.PublicKey
	MessageHash  [32]byte // SHA-256 of the message: the replay key
}

// Signed checks what any payment is, whatever it pays: a transaction with
// exactly two signers whose second (the payer) signed its message. It
// returns the payer and the SHA-256 of the message, the key a payment is
// known by (a payment presented again is the same message). It reads no
// requirements: a payment seen before is judged by what it bought, not by
// today's price or fee payer.
func Signed(tx *Transaction) (payer solana.PublicKey, messageHash [32]byte, err *Error) {
	if tx.Header.NumRequiredSignatures != 2 || len(tx.Signatures) != 2 || len(tx.Keys) < 2 {
		return payer, messageHash, fail(ReasonSigners, "the transaction needs %d signatures; a payment has exactly two: the fee payer's and the payer's",
			tx.Header.NumRequiredSignatures)
	}
	if !ed25519.Verify(tx.Keys[1][:], tx.Message, tx.Signatures[1][:]) {
		return payer, messageHash, fail(ReasonSignature, "the payer's signature does not verify over the message")
	}
	return tx.Keys[1], sha256Sum(tx.Message), nil
}

// CheckExact enforces every MUST of the SVM `exact` scheme that needs no
// chain state, plus the signature of the payer:
//
//   - legacy or v0 message without address lookup tables; exactly two
//     signers: the configured fee payer first, the token authority second;
//     the authority's signature valid over the message;
//   - instructions in order: SetComputeUnitLimit (at most
//     MaxComputeUnits), SetComputeUnitPrice (at most MaxComputeUnitPrice),
//     then exactly one TransferChecked of Token or Token-2022, at most one
//     Memo (exactly one, with that data, when the terms name one) and up to
//     four Lighthouse guard instructions, and nothing else;
//   - the transfer moves exactly Amount of Asset (with its decimals) from a
//     source other than the destination into payTo's associated token
//     account under that token program;
//   - the fee payer is in no instruction's accounts, never the program
//     called, never the authority or the source.
//
// What needs the chain (the blockhash still valid, the source funded, the
// simulation succeeding) is the verifier's part.
func CheckExact(tx *Transaction, t *ExactTerms) (*Checked, error) {
	if e := checkFeePayer(tx, t); e != nil {
		return nil, e
	}
	if e := checkComputeBudget(tx, t); e != nil {
		return nil, e
	}
	transfer, e := findTransfer(tx, t)
	if e != nil {
		return nil, e
	}
	src, program, e := checkTransfer(tx, t, tx.Instructions[transfer])
	if e != nil {
		return nil, e
	}
	// The payer's signature over the message.
	if !ed25519.Verify(tx.Keys[1][:], tx.Message, tx.Signatures[1][:]) {
		return nil, fail(ReasonSignature, "the payer's signature does not verify over the message")
	}
	return &Checked{Payer: tx.Keys[1], Source: tx.Keys[src], TokenProgram: program, MessageHash: sha256Sum(tx.Message)}, nil
}

// checkFeePayer checks the transaction's shape around its fee payer: no
// lookup tables, the configured fee payer first, 3 to 4+maxLighthouse
// instructions none of which uses the fee payer, and exactly two signers.
func checkFeePayer(tx *Transaction, t *ExactTerms) *Error {
	if tx.Lookups > 0 {
		return fail(ReasonLookupTables, "the transaction loads accounts from address lookup tables, which are not accepted")
	}
	if len(tx.Keys) == 0 || tx.Keys[0] != t.FeePayer {
		return fail(ReasonFeePayerMismatch, "the fee payer (first account) must be %s, the extra.feePayer of the requirements", t.FeePayer)
	}
	n := len(tx.Instructions)
	if n < 3 || n > 3+1+maxLighthouse {
		return fail(ReasonInstructionsLength, "%d instructions; a payment has 3 to %d", n, 4+maxLighthouse)
	}
	for i, ix := range tx.Instructions {
		if ix.Program == 0 {
			return fail(ReasonFeePayerInAccounts, "instruction %d calls the fee payer as a program", i)
		}
		p := tx.Keys[ix.Program]
		if (p == solana.TokenProgramID || p == solana.Token2022ProgramID) && len(ix.Accounts) >= 4 &&
			(ix.Accounts[0] == 0 || ix.Accounts[3] == 0) {
			return fail(ReasonFeePayerTransfer, "instruction %d moves tokens with the fee payer as source or authority", i)
		}
		for _, a := range ix.Accounts {
			if a == 0 {
				return fail(ReasonFeePayerInAccounts, "instruction %d uses the fee payer as an account; the fee payer may only pay the fee", i)
			}
		}
	}
	if tx.Header.NumRequiredSignatures != 2 {
		return fail(ReasonSigners, "the transaction needs %d signatures; a payment has exactly two: the fee payer's and the payer's",
			tx.Header.NumRequiredSignatures)
	}
	return nil
}

// checkComputeBudget checks the first two instructions:
// SetComputeUnitLimit and SetComputeUnitPrice, within the terms' caps.
func checkComputeBudget(tx *Transaction, t *ExactTerms) *Error {
	maxUnits, maxPrice := t.MaxComputeUnits, t.MaxComputeUnitPrice
	if maxUnits == 0 {
		maxUnits = DefaultMaxComputeUnits
	}
	if maxPrice == 0 {
		maxPrice = DefaultMaxComputeUnitPrice
	}
	ix := tx.Instructions[0]
	if tx.Keys[ix.Program] != ComputeBudgetProgramID || len(ix.Data) != 5 || ix.Data[0] != 2 || len(ix.Accounts) != 0 {
		return fail(ReasonComputeLimit, "the first instruction must be ComputeBudget SetComputeUnitLimit")
	}
	if units := binary.LittleEndian.Uint32(ix.Data[1:]); units > maxUnits {
		return fail(ReasonComputeLimit, "compute unit limit %d is above %d", units, maxUnits)
	}
	ix = tx.Instructions[1]
	if tx.Keys[ix.Program] != ComputeBudgetProgramID || len(ix.Data) != 9 || ix.Data[0] != 3 || len(ix.Accounts) != 0 {
		return fail(ReasonComputePrice, "the second instruction must be ComputeBudget SetComputeUnitPrice")
	}
	if price := binary.LittleEndian.Uint64(ix.Data[1:]); price > maxPrice {
		return fail(ReasonComputePriceTooHigh, "compute unit price %d microlamports is above %d", price, maxPrice)
	}
	return nil
}

// findTransfer checks the instructions after the compute budget: exactly
// one TransferChecked, at most one Memo (exactly one, with the terms'
// data, when they name one), a few Lighthouse guards, and nothing else.
// It returns the transfer's index.
func findTransfer(tx *Transaction, t *ExactTerms) (int, *Error) {
	transfer, memos, guards := -1, 0, 0
	var memo []byte
	for i := 2; i < len(tx.Instructions); i++ {
		ix := tx.Instructions[i]
		switch p := tx.Keys[ix.Program]; p {
		case solana.TokenProgramID, solana.Token2022ProgramID:
			if len(ix.Data) == 0 || ix.Data[0] != 12 {
				return 0, fail(ReasonUnknownInstruction, "instruction %d is a token instruction other than TransferChecked", i)
			}
			if transfer >= 0 {
				return 0, fail(ReasonUnknownInstruction, "instruction %d is a second TransferChecked; a payment has one", i)
			}
			transfer = i
		case solana.MemoProgramID:
			memos++
			memo = ix.Data
			if memos > 1 {
				return 0, fail(ReasonMemoCount, "more than one Memo instruction")
			}
			if len(ix.Data) > maxMemoBytes || !utf8.Valid(ix.Data) {
				return 0, fail(ReasonMemoMismatch, "the memo must be at most %d bytes of UTF-8", maxMemoBytes)
			}
		case LighthouseProgramID:
			guards++
			if guards > maxLighthouse {
				return 0, fail(ReasonInstructionsLength, "more than %d Lighthouse instructions", maxLighthouse)
			}
		default:
			return 0, fail(ReasonUnknownInstruction, "instruction %d calls %s, which a payment never needs", i, p)
		}
	}
	if transfer < 0 {
		return 0, fail(ReasonNoTransfer, "no TransferChecked instruction")
	}
	if t.Memo != "" && (memos != 1 || string(memo) != t.Memo) {
		return 0, fail(ReasonMemoMismatch, "exactly one Memo instruction with the data of extra.memo is required")
	}
	return transfer, nil
}

// checkTransfer checks the TransferChecked ix: exactly Amount of Asset
// (with its decimals), from a writable source other than the destination,
// into payTo's associated token account under its token program, by the
// transaction's second signer. It returns the source's account index and
// the token program.
func checkTransfer(tx *Transaction, t *ExactTerms, ix Instruction) (src uint8, program solana.PublicKey, e *Error) {
	program = tx.Keys[ix.Program]
	if len(ix.Data) != 10 {
		return 0, program, fail(ReasonUnknownInstruction, "TransferChecked data is %d bytes, not 10", len(ix.Data))
	}
	if len(ix.Accounts) != 4 {
		return 0, program, fail(ReasonUnknownInstruction, "TransferChecked has %d accounts; a single-signer transfer has 4", len(ix.Accounts))
	}
	src, mint, dst, auth := ix.Accounts[0], ix.Accounts[1], ix.Accounts[2], ix.Accounts[3]
	if tx.Keys[mint] != t.Asset {
		return 0, program, fail(ReasonMintMismatch, "the transfer moves mint %s, not %s", tx.Keys[mint], t.Asset)
	}
	if want := t.Destination(program); tx.Keys[dst] != want {
		return 0, program, fail(ReasonRecipientMismatch, "the transfer goes to %s, not %s (payTo's associated token account)", tx.Keys[dst], want)
	}
	if amount := binary.LittleEndian.Uint64(ix.Data[1:9]); amount != t.Amount {
		return 0, program, fail(ReasonAmountMismatch, "the transfer moves %d atomic units; the price is exactly %d", amount, t.Amount)
	}
	if t.Decimals >= 0 && int(ix.Data[9]) != t.Decimals {
		return 0, program, fail(ReasonDecimalsMismatch, "the transfer states %d decimals; the asset has %d", ix.Data[9], t.Decimals)
	}
	if src == 0 || auth == 0 {
		return 0, program, fail(ReasonFeePayerTransfer, "the fee payer must not be the transfer's source or authority")
	}
	if src == dst {
		return 0, program, fail(ReasonRecipientMismatch, "the transfer's source is its destination")
	}
	if auth != 1 {
		return 0, program, fail(ReasonSigners, "the transfer's authority must be the transaction's second signer")
	}
	if !tx.IsWritable(int(src)) || !tx.IsWritable(int(dst)) {
		return 0, program, fail(ReasonUnknownInstruction, "the transfer's source and destination must be writable")
	}
	return src, program, nil
}
