package x402

import (
	"github.com/gagliardetto/solana-go"
)

// Bounds of a transaction this package decodes, far above what an `exact`
// payment needs and below what would make decoding costly.
const (
	maxSignatures   = 8
	maxAccountKeys  = 64
	maxInstructions = 16
	maxIxAccounts   = 32
)

// Transaction is a decoded Solana wire transaction (legacy or v0). Message
// is the exact signed bytes; Raw the whole wire form.
type Transaction struct {
	Raw          []byte
	Signatures   []solana.Signature
	Message      []byte
	Versioned    bool
	Header       solana.MessageHeader
	Keys         []solana.PublicKey // static account keys
	Blockhash    solana.Hash
	Instructions []Instruction
	Lookups      int // address table lookups (v0)
}

// Instruction is one compiled instruction.
type Instruction struct {
	Program  uint8   // index into Keys
	Accounts []uint8 // indices into Keys
	Data     []byte
}

// ReasonInvalidTransaction: the transaction bytes do not decode.
const ReasonInvalidTransaction = "invalid_exact_svm_payload_transaction"

// reader walks bytes without ever reading past the end.
type reader struct {
	b   []byte
	off int
	err *Error
}

func (r *reader) failf(format string, args ...any) {
	if r.err == nil {
		r.err = fail(ReasonInvalidTransaction, format, args...)
	}
}

func (r *reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.failf("truncated at %s (offset %d)", what, r.off)
		return nil
	}
	out := r.b[r.off : r.off+n]
	r.off += n
	return out
}

func (r *reader) byte(what string) byte {
	b := r.take(1, what)
	if b == nil {
		return 0
	}
	return b[0]
}

// compactU16 reads Solana's short_vec length, refusing non-canonical
// encodings (as the runtime does) so that the bytes signed are the only
// encoding of the message.
func (r *reader) compactU16(what string) int {
	var v, shift int
	for i := 0; i < 3; i++ {
		c := int(r.byte(what))
		if r.err != nil {
			return 0
		}
		if i == 2 && c > 3 {
			r.failf("%s length overflows 16 bits", what)
			return 0
		}
		v |= (c & 0x7f) << shift
		if c&0x80 == 0 {
			if i > 0 && c == 0 {
				r.failf("%s length is not canonically encoded", what)
				return 0
			}
			return v
		}
		shift += 7
	}
	r.failf("%s length is not canonically encoded", what)
	return 0
}

// count reads a length and checks it against max and against what the
// remaining bytes can hold at minSize bytes per element.
func (r *reader) count(what string, max, minSize int) int {
	n := r.compactU16(what)
	if r.err != nil {
		return 0
	}
	if n > max {
		r.failf("%d %s; at most %d are accepted", n, what, max)
		return 0
	}
	if n*minSize > len(r.b)-r.off {
		r.failf("%d %s do not fit in the %d bytes left", n, what, len(r.b)-r.off)
		return 0
	}
	return n
}

// DecodeTransaction parses wire bytes of at most MaxTransactionSize. Every
// count is bounded and checked against the bytes left before anything is
// allocated for it; indices are checked against the keys; trailing bytes,
// address-table versions other than 0 and malformed lengths are refused.
// It never panics.
func DecodeTransaction(raw []byte) (*Transaction, error) {
	if len(raw) > MaxTransactionSize {
		return nil, fail(ReasonInvalidTransaction, "%d bytes; a Solana transaction is at most %d", len(raw), MaxTransactionSize)
	}
	r := &reader{b: raw}
	tx := &Transaction{Raw: raw}
	nsig := r.signatures(tx)
	msgStart := r.off
	nkeys := r.messageHead(tx)
	r.instructions(tx, nkeys)
	if tx.Versioned && r.err == nil {
		r.lookups(tx)
	}
	if r.err == nil && r.off != len(raw) {
		r.failf("%d bytes after the message", len(raw)-r.off)
	}
	if r.err != nil {
		return nil, r.err
	}
	if err := tx.checkAccounts(nsig, nkeys); err != nil {
		return nil, err
	}
	tx.Message = raw[msgStart:]
	return tx, nil
}

// signatures reads the transaction's signatures; it returns their count.
func (r *reader) signatures(tx *Transaction) int {
	nsig := r.count("signatures", maxSignatures, 64)
	if nsig > 0 {
		tx.Signatures = make([]solana.Signature, nsig)
		for i := range tx.Signatures {
			copy(tx.Signatures[i][:], r.take(64, "signature"))
		}
	}
	return nsig
}

// messageHead reads the message up to its instructions: its version (a
// legacy message has none), header, static account keys and recent
// blockhash; it returns the number of keys.
func (r *reader) messageHead(tx *Transaction) int {
	if r.err == nil && r.off < len(r.b) && r.b[r.off]&0x80 != 0 {
		if v := r.b[r.off] & 0x7f; v != 0 {
			r.failf("message version %d is not supported (legacy and 0 are)", v)
		}
		r.off++
		tx.Versioned = true
	}
	h := r.take(3, "message header")
	if h != nil {
		tx.Header = solana.MessageHeader{NumRequiredSignatures: h[0], NumReadonlySignedAccounts: h[1], NumReadonlyUnsignedAccounts: h[2]}
	}
	nkeys := r.count("account keys", maxAccountKeys, 32)
	if r.err == nil {
		tx.Keys = make([]solana.PublicKey, nkeys)
		for i := range tx.Keys {
			copy(tx.Keys[i][:], r.take(32, "account key"))
		}
	}
	copy(tx.Blockhash[:], r.take(32, "recent blockhash"))
	return nkeys
}

// instructions reads the compiled instructions, checking their program
// and account indices against the nkeys keys.
func (r *reader) instructions(tx *Transaction, nkeys int) {
	nix := r.count("instructions", maxInstructions, 3)
	if r.err == nil {
		tx.Instructions = make([]Instruction, nix)
	}
	for i := 0; i < nix && r.err == nil; i++ {
		ix := &tx.Instructions[i]
		ix.Program = r.byte("program index")
		na := r.count("instruction accounts", maxIxAccounts, 1)
		ix.Accounts = r.take(na, "instruction accounts")
		nd := r.count("instruction data", MaxTransactionSize, 1)
		ix.Data = r.take(nd, "instruction data")
		if r.err == nil && int(ix.Program) >= nkeys {
			r.failf("instruction %d names program index %d of %d keys", i, ix.Program, nkeys)
		}
		for _, a := range ix.Accounts {
			if r.err == nil && int(a) >= nkeys {
				r.failf("instruction %d names account index %d of %d keys", i, a, nkeys)
			}
		}
	}
}

// lookups reads a v0 message's address table lookups (counted, not kept).
func (r *reader) lookups(tx *Transaction) {
	tx.Lookups = r.count("address table lookups", 8, 34)
	for i := 0; i < tx.Lookups && r.err == nil; i++ {
		r.take(32, "lookup table")
		r.take(r.count("writable lookups", 256, 1), "writable lookups")
		r.take(r.count("readonly lookups", 256, 1), "readonly lookups")
	}
}

// checkAccounts refuses a message whose header does not match its nsig
// signatures and nkeys keys, or that lists an account twice.
func (tx *Transaction) checkAccounts(nsig, nkeys int) error {
	hd := tx.Header
	if int(hd.NumRequiredSignatures) != nsig || int(hd.NumRequiredSignatures)+int(hd.NumReadonlyUnsignedAccounts) > nkeys ||
		hd.NumReadonlySignedAccounts >= hd.NumRequiredSignatures {
		return fail(ReasonInvalidTransaction, "the message header does not match its %d signatures and %d keys", nsig, nkeys)
	}
	seen := make(map[solana.PublicKey]struct{}, nkeys)
	for _, k := range tx.Keys {
		if _, dup := seen[k]; dup {
			return fail(ReasonInvalidTransaction, "account %s is listed twice", k)
		}
		seen[k] = struct{}{}
	}
	return nil
}

// IsSigner reports whether key index i must sign.
func (tx *Transaction) IsSigner(i int) bool { return i < int(tx.Header.NumRequiredSignatures) }

// IsWritable reports whether key index i is writable.
func (tx *Transaction) IsWritable(i int) bool {
	h := tx.Header
	signers := int(h.NumRequiredSignatures)
	if i < signers {
		return i < signers-int(h.NumReadonlySignedAccounts)
	}
	return i < len(tx.Keys)-int(h.NumReadonlyUnsignedAccounts)
}

// WithSignature returns a copy of the wire bytes with signature i replaced.
func (tx *Transaction) WithSignature(i int, sig solana.Signature) []byte {
	out := append([]byte(nil), tx.Raw...)
	// One signature count byte: maxSignatures < 128.
	copy(out[1+64*i:], sig[:])
	return out
}
