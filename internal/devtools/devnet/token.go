package devnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/attestd/attestd/internal/prova"
	"github.com/gagliardetto/solana-go"
)

// SPL Token account layouts (spl-token state.rs).
const (
	MintSize         = 82
	TokenAccountSize = 165
)

// DevnetUSDCMint is Circle's USDC mint on Solana devnet; the simulator
// creates it at genesis with 6 decimals.
var DevnetUSDCMint = solana.MustPublicKeyFromBase58("4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU")

type mintInfo struct {
	authority solana.PrivateKey
}

// Mint is the decoded part of a mint account the simulator uses.
type Mint struct {
	Authority solana.PublicKey
	Supply    uint64
	Decimals  uint8
}

// TokenAccount is the decoded part of a token account.
type TokenAccount struct {
	Mint   solana.PublicKey
	Owner  solana.PublicKey
	Amount uint64
}

func encodeMint(m Mint) []byte {
	b := make([]byte, MintSize)
	binary.LittleEndian.PutUint32(b[0:], 1) // COption::Some
	copy(b[4:36], m.Authority[:])
	binary.LittleEndian.PutUint64(b[36:], m.Supply)
	b[44] = m.Decimals
	b[45] = 1 // is_initialized
	// freeze_authority: COption::None (zeros)
	return b
}

// DecodeMint reads a mint account.
func DecodeMint(b []byte) (Mint, error) {
	if len(b) != MintSize || b[45] != 1 {
		return Mint{}, errors.New("not an initialized mint")
	}
	var m Mint
	copy(m.Authority[:], b[4:36])
	m.Supply = binary.LittleEndian.Uint64(b[36:])
	m.Decimals = b[44]
	return m, nil
}

func encodeTokenAccount(t TokenAccount) []byte {
	b := make([]byte, TokenAccountSize)
	copy(b[0:32], t.Mint[:])
	copy(b[32:64], t.Owner[:])
	binary.LittleEndian.PutUint64(b[64:], t.Amount)
	b[108] = 1 // AccountState::Initialized
	return b
}

// DecodeTokenAccount reads a token account.
func DecodeTokenAccount(b []byte) (TokenAccount, error) {
	if len(b) != TokenAccountSize || b[108] == 0 {
		return TokenAccount{}, errors.New("not an initialized token account")
	}
	var t TokenAccount
	copy(t.Mint[:], b[0:32])
	copy(t.Owner[:], b[32:64])
	t.Amount = binary.LittleEndian.Uint64(b[64:])
	return t, nil
}

func setTokenAmount(b []byte, amount uint64) { binary.LittleEndian.PutUint64(b[64:], amount) }

// tokenAccountOf returns the decoded token account at k.
func (x *exec) tokenAccount(k solana.PublicKey) (*Account, TokenAccount, bool) {
	a := x.get(k)
	if a == nil || a.Owner != solana.TokenProgramID {
		return nil, TokenAccount{}, false
	}
	t, err := DecodeTokenAccount(a.Data)
	return a, t, err == nil
}

// tokenTransfer is an SPL Token Transfer or TransferChecked as decoded:
// account indexes into the transaction's keys, and the instruction data.
type tokenTransfer struct {
	src, dst, owner int
	mint            int // TransferChecked only
	amount          uint64
	decimals        uint8 // TransferChecked only
	checked         bool
}

// token executes SPL Token Transfer (3) and TransferChecked (12).
func (x *exec) token(accts []int, data []byte) (uint64, *ixFailure) {
	tr, ok := x.decodeTransfer(accts, data)
	if !ok {
		return 1000, namedFailure("InvalidInstructionData", "invalid instruction data")
	}
	sa, st, ok := x.tokenAccount(x.keys[tr.src])
	if !ok {
		return 2000, namedFailure("InvalidAccountData", "invalid account data for instruction")
	}
	da, dt, ok := x.tokenAccount(x.keys[tr.dst])
	if !ok {
		return 2000, namedFailure("InvalidAccountData", "invalid account data for instruction")
	}
	if !x.isWritable(tr.src) || !x.isWritable(tr.dst) {
		return 2000, namedFailure("InvalidArgument", "invalid program argument")
	}
	if units, f := x.checkTransfer(tr, st, dt); f != nil {
		return units, f
	}
	x.applyTransfer(tr, sa, st, da, dt)
	if tr.checked {
		return 6200, nil
	}
	return 4645, nil
}

// decodeTransfer reads a Transfer or TransferChecked instruction, logging
// which it is; ok is false for other data or too few accounts.
func (x *exec) decodeTransfer(accts []int, data []byte) (tr tokenTransfer, ok bool) {
	if len(data) == 0 {
		return tokenTransfer{}, false
	}
	switch data[0] {
	case 3:
		x.log(prova.LogMessage("Instruction: Transfer"))
		if len(data) != 9 || len(accts) < 3 {
			return tokenTransfer{}, false
		}
		tr.src, tr.dst, tr.owner = accts[0], accts[1], accts[2]
		tr.amount = binary.LittleEndian.Uint64(data[1:])
	case 12:
		x.log(prova.LogMessage("Instruction: TransferChecked"))
		if len(data) != 10 || len(accts) < 4 {
			return tokenTransfer{}, false
		}
		tr.src, tr.mint, tr.dst, tr.owner = accts[0], accts[1], accts[2], accts[3]
		tr.amount = binary.LittleEndian.Uint64(data[1:])
		tr.decimals = data[9]
		tr.checked = true
	default:
		return tokenTransfer{}, false
	}
	return tr, true
}

// tokenError logs msg as the token program does and fails with its
// custom error code.
func (x *exec) tokenError(msg string, code int) (uint64, *ixFailure) {
	x.log(prova.LogMessage("Error: " + msg))
	return 3000, customFailure(code)
}

// checkTransfer applies the token program's rules to a transfer between
// the token accounts st and dt: one mint (and, checked, the named mint
// and its decimals), the owner signing, enough funds. A nil failure
// passes.
func (x *exec) checkTransfer(tr tokenTransfer, st, dt TokenAccount) (uint64, *ixFailure) {
	if st.Mint != dt.Mint {
		return x.tokenError("Account not associated with this Mint", 3)
	}
	if tr.checked {
		if x.keys[tr.mint] != st.Mint {
			return x.tokenError("Account not associated with this Mint", 3)
		}
		ma := x.get(st.Mint)
		if ma == nil {
			return 2000, namedFailure("InvalidAccountData", "invalid account data for instruction")
		}
		m, err := DecodeMint(ma.Data)
		if err != nil {
			return 2000, namedFailure("InvalidAccountData", "invalid account data for instruction")
		}
		if m.Decimals != tr.decimals {
			return x.tokenError("Mint decimals mismatch", 18)
		}
	}
	if x.keys[tr.owner] != st.Owner {
		return x.tokenError("owner does not match", 4)
	}
	if !x.isSigner(tr.owner) {
		return 2000, namedFailure("MissingRequiredSignature", "missing required signature for instruction")
	}
	if st.Amount < tr.amount {
		return x.tokenError("insufficient funds", 1)
	}
	return 0, nil
}

// applyTransfer moves the amount from sa to da (a transfer to itself
// leaves the balance) and records how to undo it.
func (x *exec) applyTransfer(tr tokenTransfer, sa *Account, st TokenAccount, da *Account, dt TokenAccount) {
	amount := tr.amount
	srcKey, dstKey := x.keys[tr.src], x.keys[tr.dst]
	setTokenAmount(sa.Data, st.Amount-amount)
	if srcKey == dstKey {
		setTokenAmount(da.Data, st.Amount)
	} else {
		setTokenAmount(da.Data, dt.Amount+amount)
	}
	x.undo = append(x.undo, func(s map[solana.PublicKey]*Account) {
		if a := s[srcKey]; a != nil && len(a.Data) == TokenAccountSize {
			setTokenAmount(a.Data, binary.LittleEndian.Uint64(a.Data[64:])+amount)
		}
		if a := s[dstKey]; a != nil && len(a.Data) == TokenAccountSize {
			setTokenAmount(a.Data, binary.LittleEndian.Uint64(a.Data[64:])-amount)
		}
	})
}

// ata executes the associated-token-account program's Create (empty data
// or 0) and CreateIdempotent (1).
func (x *exec) ata(accts []int, data []byte) (uint64, *ixFailure) {
	idempotent := len(data) == 1 && data[0] == 1
	if len(data) > 1 || (len(data) == 1 && data[0] > 1) {
		return 1000, namedFailure("InvalidInstructionData", "invalid instruction data")
	}
	if idempotent {
		x.log(prova.LogMessage("CreateIdempotent"))
	} else {
		x.log(prova.LogMessage("Create"))
	}
	if len(accts) < 6 {
		return 1000, namedFailure("NotEnoughAccountKeys", "insufficient account keys for instruction")
	}
	payer, ataKey, wallet, mint := x.keys[accts[0]], x.keys[accts[1]], x.keys[accts[2]], x.keys[accts[3]]
	want, _, err := solana.FindAssociatedTokenAddress(wallet, mint)
	if err != nil || want != ataKey {
		x.log(prova.LogMessage("Error: Associated address does not match seed derivation"))
		return 3000, namedFailure("InvalidSeeds", "Provided seeds do not result in a valid address")
	}
	if existing := x.get(ataKey); existing != nil && existing.Owner == solana.TokenProgramID {
		if idempotent {
			if t, err := DecodeTokenAccount(existing.Data); err == nil && t.Owner == wallet && t.Mint == mint {
				return 4000, nil
			}
		}
		return 4000, namedFailure("IllegalOwner", "Provided owner is not allowed")
	}
	if ma := x.get(mint); ma == nil || ma.Owner != solana.TokenProgramID {
		return 4000, namedFailure("IncorrectProgramId", "incorrect program id for instruction")
	}
	if !x.isSigner(accts[0]) {
		return 4000, namedFailure("MissingRequiredSignature", "missing required signature for instruction")
	}
	p := x.get(payer)
	if p == nil || p.Lamports < tokenAccountRent {
		return 4000, customFailure(1)
	}
	p.Lamports -= tokenAccountRent
	x.put(ataKey, &Account{Lamports: tokenAccountRent, Owner: solana.TokenProgramID,
		Data: encodeTokenAccount(TokenAccount{Mint: mint, Owner: wallet})})
	x.undo = append(x.undo, func(s map[solana.PublicKey]*Account) {
		delete(s, ataKey)
		if a := s[payer]; a != nil {
			a.Lamports += tokenAccountRent
		}
	})
	return 21_000, nil
}

// tokenBalance is a TransactionStatusMeta token balance in its JSON shape.
type tokenBalance struct {
	AccountIndex  int           `json:"accountIndex"`
	Mint          string        `json:"mint"`
	Owner         string        `json:"owner"`
	ProgramID     string        `json:"programId"`
	UITokenAmount uiTokenAmount `json:"uiTokenAmount"`
}

type uiTokenAmount struct {
	Amount         string   `json:"amount"`
	Decimals       uint8    `json:"decimals"`
	UIAmount       *float64 `json:"uiAmount"`
	UIAmountString string   `json:"uiAmountString"`
}

func makeUIAmount(amount uint64, decimals uint8) uiTokenAmount {
	f := float64(amount) / math.Pow10(int(decimals))
	s := strconv.FormatUint(amount, 10)
	if decimals > 0 {
		for len(s) <= int(decimals) {
			s = "0" + s
		}
		s = s[:len(s)-int(decimals)] + "." + s[len(s)-int(decimals):]
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return uiTokenAmount{Amount: strconv.FormatUint(amount, 10), Decimals: decimals, UIAmount: &f, UIAmountString: s}
}

// tokenBalancesLocked lists the token accounts among keys with their
// balances.
func (c *Chain) tokenBalancesLocked(keys []solana.PublicKey) []tokenBalance {
	out := []tokenBalance{}
	for i, k := range keys {
		a := c.accounts[k]
		if a == nil || a.Owner != solana.TokenProgramID {
			continue
		}
		t, err := DecodeTokenAccount(a.Data)
		if err != nil {
			continue
		}
		var dec uint8
		if ma := c.accounts[t.Mint]; ma != nil {
			if m, err := DecodeMint(ma.Data); err == nil {
				dec = m.Decimals
			}
		}
		out = append(out, tokenBalance{AccountIndex: i, Mint: t.Mint.String(), Owner: t.Owner.String(),
			ProgramID: solana.TokenProgramID.String(), UITokenAmount: makeUIAmount(t.Amount, dec)})
	}
	return out
}

// CreateMint creates a mint account directly in the state (genesis-style)
// and returns its address; the simulator holds its mint authority.
func (c *Chain) CreateMint(decimals uint8) (solana.PublicKey, error) {
	c.genMu.Lock()
	mintKey := c.newKeyLocked()
	auth := c.newKeyLocked()
	c.genMu.Unlock()
	c.createMint(mintKey.PublicKey(), auth, decimals)
	return mintKey.PublicKey(), nil
}

func (c *Chain) createMint(mint solana.PublicKey, auth solana.PrivateKey, decimals uint8) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.accounts[mint] = &Account{Lamports: mintAccountRent, Owner: solana.TokenProgramID,
		Data: encodeMint(Mint{Authority: auth.PublicKey(), Decimals: decimals})}
	c.mints[mint] = &mintInfo{authority: auth}
}

// MintTo credits amount tokens of mint to owner's associated token account,
// creating it when needed, directly in the state. It returns the token
// account's address.
func (c *Chain) MintTo(mint, owner solana.PublicKey, amount uint64) (solana.PublicKey, error) {
	ata, _, err := solana.FindAssociatedTokenAddress(owner, mint)
	if err != nil {
		return solana.PublicKey{}, fmt.Errorf("devnet: derive token account: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ma := c.accounts[mint]
	if ma == nil || ma.Owner != solana.TokenProgramID {
		return solana.PublicKey{}, fmt.Errorf("devnet: %s is not a mint", mint)
	}
	m, err := DecodeMint(ma.Data)
	if err != nil {
		return solana.PublicKey{}, fmt.Errorf("devnet: mint %s: %w", mint, err)
	}
	m.Supply += amount
	ma.Data = encodeMint(m)
	a := c.accounts[ata]
	if a == nil {
		a = &Account{Lamports: tokenAccountRent, Owner: solana.TokenProgramID,
			Data: encodeTokenAccount(TokenAccount{Mint: mint, Owner: owner})}
		c.accounts[ata] = a
	}
	t, err := DecodeTokenAccount(a.Data)
	if err != nil {
		return solana.PublicKey{}, fmt.Errorf("devnet: token account %s: %w", ata, err)
	}
	setTokenAmount(a.Data, t.Amount+amount)
	return ata, nil
}

// TokenBalance reads a token account's amount.
func (c *Chain) TokenBalance(account solana.PublicKey) (uint64, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	a := c.accounts[account]
	if a == nil || a.Owner != solana.TokenProgramID {
		return 0, fmt.Errorf("devnet: %s is not a token account", account)
	}
	t, err := DecodeTokenAccount(a.Data)
	if err != nil {
		return 0, err
	}
	return t.Amount, nil
}
