package app_test

import "github.com/gagliardetto/solana-go"

func parseSig(s string) ([64]byte, error) {
	sig, err := solana.SignatureFromBase58(s)
	return sig, err
}
