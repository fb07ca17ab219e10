package x402

import (
	"encoding/binary"
	"errors"

	"github.com/gagliardetto/solana-go"
)

// Transfer is what a landed `exact` payment transaction moved to payTo.
type Transfer struct {
	Payer       solana.PublicKey // the transfer's authority: the transaction's second signer
	Amount      uint64           // atomic units of the asset
	MessageHash [32]byte         // SHA-256 of the message: the ledger's replay key
}

// ReadTransfer reads a transaction as an `exact` payment of t.Asset into
// t.PayTo's associated token account (t prepared): two signers, the
// payment's instructions and nothing else, one TransferChecked. Unlike
// CheckExact it does not ask for an amount or a fee payer: it reads what
// was paid, from a transaction the chain already executed (so signatures
// are not checked again). Anything else sent to payTo is not a payment,
// and is an error.
func ReadTransfer(tx *Transaction, t *ExactTerms) (Transfer, error) {
	if tx.Header.NumRequiredSignatures != 2 || len(tx.Keys) < 2 || len(tx.Instructions) < 3 {
		return Transfer{}, errors.New("not a payment: a payment has two signers and at least three instructions")
	}
	i, ferr := findTransfer(tx, &ExactTerms{})
	if ferr != nil {
		return Transfer{}, ferr
	}
	ix := tx.Instructions[i]
	if len(ix.Data) != 10 {
		return Transfer{}, errors.New("not a payment: TransferChecked data is not 10 bytes")
	}
	terms := *t
	terms.Amount, terms.Decimals = binary.LittleEndian.Uint64(ix.Data[1:9]), -1
	if _, _, cerr := checkTransfer(tx, &terms, ix); cerr != nil {
		return Transfer{}, cerr
	}
	return Transfer{Payer: tx.Keys[1], Amount: terms.Amount, MessageHash: sha256Sum(tx.Message)}, nil
}
