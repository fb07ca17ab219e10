package x402

import (
	"encoding/base64"
	"testing"
)

// FuzzDecodePayment: any header decodes or is refused with an *Error;
// never a panic, never a transaction past the bound.
func FuzzDecodePayment(f *testing.F) {
	wire, _ := payment(f)
	q := Requirements{Scheme: SchemeExact, Network: Devnet.CAIP2, Amount: "1", Asset: Devnet.USDC.String(), PayTo: Devnet.USDC.String(),
		Extra: &Extra{FeePayer: Devnet.USDC.String()}}
	h, _ := EncodeHeader(NewPaymentPayload(ResourceInfo{URL: "x"}, q, wire))
	f.Add(h)
	f.Add("")
	f.Add("e30=")
	f.Add(base64.StdEncoding.EncodeToString([]byte(`{"x402Version":2,"accepted":{"scheme":"exact"},"payload":{"transaction":"AAAA"}}`)))
	f.Fuzz(func(t *testing.T, h string) {
		for _, dec := range []func(string) ([]byte, error){
			func(s string) ([]byte, error) { _, b, err := DecodePaymentV2(s); return b, err },
			func(s string) ([]byte, error) { _, b, err := DecodePaymentV1(s); return b, err },
		} {
			b, err := dec(h)
			if err != nil {
				if _, ok := AsError(err); !ok {
					t.Fatalf("untyped error %v", err)
				}
				continue
			}
			if len(b) > MaxTransactionSize+2 {
				t.Fatalf("transaction of %d bytes passed", len(b))
			}
		}
	})
}

// FuzzCheckTransaction: any bytes decode or are refused, and whatever
// decodes is checked without a panic; what passes really pays the terms.
func FuzzCheckTransaction(f *testing.F) {
	wire, terms := payment(f)
	f.Add(wire)
	f.Add([]byte{1})
	f.Add(wire[:100])
	f.Fuzz(func(t *testing.T, b []byte) {
		tx, err := DecodeTransaction(b)
		if err != nil {
			if _, ok := AsError(err); !ok {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(tx.Keys) > maxAccountKeys || len(tx.Instructions) > maxInstructions {
			t.Fatalf("bounds exceeded: %d keys %d instructions", len(tx.Keys), len(tx.Instructions))
		}
		c, cerr := CheckExact(tx, terms)
		if cerr != nil {
			return
		}
		if tx.Keys[0] != terms.FeePayer || c.Payer == terms.FeePayer || len(tx.Signatures) != 2 {
			t.Fatalf("a transaction passed without paying the terms: %+v", tx)
		}
	})
}

// FuzzReadTransfer: any transaction the chain shows us to payTo is read
// as a payment or refused, never a panic; what is read moves the asset
// into payTo's account, by the transaction's second signer, and the
// amount is the transfer's.
func FuzzReadTransfer(f *testing.F) {
	wire, terms := payment(f)
	f.Add(wire)
	f.Add(wire[:len(wire)-1])
	f.Add([]byte{2, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		tx, err := DecodeTransaction(b)
		if err != nil {
			return
		}
		tr, err := ReadTransfer(tx, terms)
		if err != nil {
			return
		}
		if tr.Payer != tx.Keys[1] || tr.MessageHash != sha256Sum(tx.Message) {
			t.Fatalf("read %+v from a transaction whose second signer is %s", tr, tx.Keys[1])
		}
	})
}
