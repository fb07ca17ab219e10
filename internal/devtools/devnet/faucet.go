package devnet

import (
	"encoding/json"

	"github.com/gagliardetto/solana-go"
)

func rpcRequestAirdrop(c *Chain, params []json.RawMessage) (any, *rpcError) {
	key, err := paramPubkey(params, 0)
	if err != nil {
		return nil, err
	}
	var lamports uint64
	if len(params) < 2 || json.Unmarshal(params[1], &lamports) != nil {
		return nil, invalidParams("lamports")
	}
	sig, aerr := c.Airdrop(key, lamports)
	if aerr != nil {
		return nil, &rpcError{Code: codeInternal, Message: aerr.Error()}
	}
	return sig.String(), nil
}

// Airdrop sends lamports from the faucet in a real System transfer.
func (c *Chain) Airdrop(to solana.PublicKey, lamports uint64) (solana.Signature, error) {
	data := make([]byte, 12)
	data[0] = 2
	for i := 0; i < 8; i++ {
		data[4+i] = byte(lamports >> (8 * i))
	}
	ix := solana.NewInstruction(solana.SystemProgramID, solana.AccountMetaSlice{
		solana.Meta(c.faucet.PublicKey()).WRITE().SIGNER(), solana.Meta(to).WRITE()}, data)
	tx, err := c.sign(c.faucet, []solana.Instruction{ix})
	if err != nil {
		return solana.Signature{}, err
	}
	return c.Submit(tx, true)
}
