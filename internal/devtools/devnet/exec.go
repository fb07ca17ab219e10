package devnet

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/prova"
	"github.com/gagliardetto/solana-go"
)

// Native program ids the simulator executes besides the Prova program.
var (
	ComputeBudgetProgramID = solana.MustPublicKeyFromBase58("ComputeBudget111111111111111111111111111111")
	// MimicProgramID is a test program that prints its instruction data as
	// "Program data:", to look like an event of another program.
	MimicProgramID = solana.MustPublicKeyFromBase58("Mimic11111111111111111111111111111111111111")
	nativeLoaderID = solana.MustPublicKeyFromBase58("NativeLoader1111111111111111111111111111111")
	sysvarOwnerID  = solana.MustPublicKeyFromBase58("Sysvar1111111111111111111111111111111111111")
)

// Fees and budgets.
const (
	LamportsPerSignature = 5000
	defaultUnitsPerIx    = 200_000
	maxUnitsPerTx        = 1_400_000
	agentAccountRent     = 1_969_680 // rent-exempt minimum for 155 bytes
	tokenAccountRent     = 2_039_280 // rent-exempt minimum for 165 bytes
	mintAccountRent      = 1_461_600 // rent-exempt minimum for 82 bytes
	sourceFile           = "programs/prova/src/lib.rs"
)

// txError is a Solana TransactionError in its JSON shape.
type txError = any

func instructionError(i int, e any) txError { return map[string]any{"InstructionError": []any{i, e}} }
func custom(code int) any                   { return map[string]any{"Custom": code} }

// ixFailure is an instruction error with the runtime's failure reason.
type ixFailure struct {
	err    any    // InstructionError payload: "MissingRequiredSignature" or {"Custom": n}
	reason string // for "Program <id> failed: <reason>"
}

func (f *ixFailure) Error() string { return f.reason }

func customFailure(code int) *ixFailure {
	return &ixFailure{err: custom(code), reason: prova.CustomErrorReason(code)}
}

func namedFailure(name, reason string) *ixFailure { return &ixFailure{err: name, reason: reason} }

// exec runs one transaction against a copy-on-write view of the accounts.
type exec struct {
	c        *Chain
	msg      *solana.Message
	keys     []solana.PublicKey
	signer   []bool
	writable []bool
	overlay  map[solana.PublicKey]*Account
	logs     []string
	events   []prova.LoggedEvent
	inner    []innerInstructions
	undo     []func(st map[solana.PublicKey]*Account)
	units    uint64
	budget   uint64
	now      int64
	ix       int // index of the executing top-level instruction
	evIndex  int
	datas    [][]byte
	logBytes int
	cut      bool
	verified map[int][]prova.Ed25519Check // precompile results by instruction index
}

type innerInstructions struct {
	Index        int                `json:"index"`
	Instructions []innerInstruction `json:"instructions"`
}

type innerInstruction struct {
	ProgramIDIndex int    `json:"programIdIndex"`
	Accounts       []int  `json:"accounts"`
	Data           string `json:"data"`
	StackHeight    int    `json:"stackHeight"`
}

func (x *exec) get(k solana.PublicKey) *Account {
	if a, ok := x.overlay[k]; ok {
		return a
	}
	a := x.c.accounts[k].clone()
	x.overlay[k] = a
	return a
}

func (x *exec) put(k solana.PublicKey, a *Account) { x.overlay[k] = a }

func (x *exec) log(line string) {
	if x.cut {
		return
	}
	if lim := x.c.cfg.LogLimit; lim > 0 && x.logBytes+len(line) > lim {
		x.logs = append(x.logs, "Log truncated")
		x.cut = true
		return
	}
	x.logBytes += len(line)
	x.logs = append(x.logs, line)
}

func (x *exec) emit(ev prova.Event) {
	x.log(prova.LogData(ev.Encode()))
	x.events = append(x.events, prova.LoggedEvent{Index: x.evIndex, Depth: 1, Event: ev})
	x.evIndex++
}

// run executes every instruction; it returns the transaction error (nil on
// success).
func (x *exec) run() txError {
	nonBuiltin := 0
	for _, ci := range x.msg.Instructions {
		if int(ci.ProgramIDIndex) >= len(x.keys) {
			return "InvalidAccountIndex"
		}
		p := x.keys[ci.ProgramIDIndex]
		if p == ComputeBudgetProgramID {
			if len(ci.Data) >= 5 && ci.Data[0] == 2 { // SetComputeUnitLimit(u32)
				x.budget = uint64(binary.LittleEndian.Uint32(ci.Data[1:5]))
			}
			continue
		}
		if p != prova.Ed25519ProgramID {
			nonBuiltin++
		}
	}
	if x.budget == 0 {
		x.budget = min(uint64(nonBuiltin)*defaultUnitsPerIx, maxUnitsPerTx)
	}
	x.budget = min(x.budget, maxUnitsPerTx)
	x.datas = make([][]byte, len(x.msg.Instructions))
	for i, ci := range x.msg.Instructions {
		x.datas[i] = ci.Data
	}
	for i, ci := range x.msg.Instructions {
		x.ix = i
		accts := make([]int, len(ci.Accounts))
		for j, a := range ci.Accounts {
			if int(a) >= len(x.keys) {
				return instructionError(i, "NotEnoughAccountKeys")
			}
			accts[j] = int(a)
		}
		program := x.keys[ci.ProgramIDIndex]
		if f := x.instruction(program, accts, ci.Data); f != nil {
			return instructionError(i, f.err)
		}
	}
	return nil
}

// instruction executes one top-level instruction, writing the runtime's
// invoke/success/failed lines around it.
func (x *exec) instruction(program solana.PublicKey, accts []int, data []byte) *ixFailure {
	var units uint64
	var f *ixFailure
	x.log(prova.LogInvoke(program, 1))
	switch program {
	case ComputeBudgetProgramID:
		units = 150
	case prova.Ed25519ProgramID:
		checks, err := prova.VerifyEd25519(data, x.ix, func(i int) ([]byte, bool) {
			if i < 0 || i >= len(x.datas) {
				return nil, false
			}
			return x.datas[i], true
		})
		if x.verified == nil {
			x.verified = map[int][]prova.Ed25519Check{}
		}
		x.verified[x.ix] = checks
		if err != nil {
			f = &ixFailure{err: custom(2), reason: "custom program error: 0x2"} // PrecompileError::InvalidSignature
		}
	case solana.SystemProgramID:
		units, f = x.system(accts, data)
	case solana.TokenProgramID:
		units, f = x.token(accts, data)
	case solana.SPLAssociatedTokenAccountProgramID:
		units, f = x.ata(accts, data)
	case solana.MemoProgramID:
		x.log(prova.LogMessage(fmt.Sprintf("Memo (len %d): %q", len(data), string(data))))
		units = uint64(len(data))*10 + 500
	case MimicProgramID:
		x.log(prova.LogMessage("Instruction: Mimic"))
		x.log(prova.LogData(data))
		units = 1000
	case x.c.cfg.ProgramID:
		units, f = x.prova(accts, data)
	default:
		f = namedFailure("UnsupportedProgramId", "Unsupported program id")
	}
	if program != ComputeBudgetProgramID && program != prova.Ed25519ProgramID && program != solana.SystemProgramID {
		remaining := x.budget - min(x.units, x.budget)
		x.log(prova.LogConsumed(program, min(units, remaining), remaining))
	}
	x.units += units
	if f != nil {
		x.log(prova.LogFailed(program, f.reason))
		return f
	}
	x.log(prova.LogSuccess(program))
	return nil
}

func (x *exec) isSigner(i int) bool   { return i >= 0 && i < len(x.signer) && x.signer[i] }
func (x *exec) isWritable(i int) bool { return i >= 0 && i < len(x.writable) && x.writable[i] }

// system executes the System program's Transfer.
func (x *exec) system(accts []int, data []byte) (uint64, *ixFailure) {
	if len(data) < 4 {
		return 150, namedFailure("InvalidInstructionData", "invalid instruction data")
	}
	switch binary.LittleEndian.Uint32(data) {
	case 2: // Transfer { lamports: u64 }
		if len(data) != 12 || len(accts) < 2 {
			return 150, namedFailure("InvalidInstructionData", "invalid instruction data")
		}
		from, to := accts[0], accts[1]
		if !x.isSigner(from) {
			return 150, namedFailure("MissingRequiredSignature", "missing required signature for instruction")
		}
		if !x.isWritable(from) || !x.isWritable(to) {
			return 150, namedFailure("ReadonlyLamportChange", "instruction changed the balance of a read-only account")
		}
		lamports := binary.LittleEndian.Uint64(data[4:])
		if f := x.moveLamports(x.keys[from], x.keys[to], lamports); f != nil {
			x.log(prova.LogMessage(fmt.Sprintf("Transfer: insufficient lamports, need %d", lamports)))
			return 150, f
		}
		return 150, nil
	}
	return 150, namedFailure("InvalidInstructionData", "invalid instruction data")
}

func (x *exec) moveLamports(from, to solana.PublicKey, n uint64) *ixFailure {
	src := x.get(from)
	if src == nil || src.Lamports < n {
		return customFailure(1) // SystemError::ResultWithNegativeLamports
	}
	dst := x.get(to)
	if dst == nil {
		dst = &Account{Owner: solana.SystemProgramID}
		x.put(to, dst)
	}
	src.Lamports -= n
	dst.Lamports += n
	x.undo = append(x.undo, func(st map[solana.PublicKey]*Account) {
		if a := st[from]; a != nil {
			a.Lamports += n
		}
		if a := st[to]; a != nil && a.Lamports >= n {
			a.Lamports -= n
		}
	})
	return nil
}

// prova executes one of the Prova program's instructions, with Anchor's
// logs and errors.
func (x *exec) prova(accts []int, data []byte) (uint64, *ixFailure) {
	args, err := prova.DecodeInstruction(data)
	if err != nil {
		x.log(prova.LogMessage("AnchorError occurred. Error Code: InstructionDidNotDeserialize. Error Number: 102. Error Message: The program could not deserialize the given instruction."))
		if errors.Is(err, prova.ErrUnknownDiscriminator) {
			return 1500, customFailure(101) // InstructionFallbackNotFound
		}
		return 1500, customFailure(102)
	}
	x.log(prova.LogInstruction(args.Name()))
	anchorErr := func(units uint64, code, line int) (uint64, *ixFailure) {
		x.log(prova.LogAnchorError(prova.ProgramErrors[code], sourceFile, line))
		return units, customFailure(code)
	}
	if len(accts) < 2 {
		x.log(prova.LogMessage("AnchorError occurred. Error Code: AccountNotEnoughKeys. Error Number: 3005. Error Message: Not enough account keys given to the instruction."))
		return 2000, customFailure(3005)
	}
	agentKey, operatorIdx := x.keys[accts[0]], accts[1]
	operator := x.keys[operatorIdx]
	if !x.isSigner(operatorIdx) {
		x.log(prova.LogMessage("AnchorError caused by account: operator. Error Code: AccountNotSigner. Error Number: 3010. Error Message: The given account did not sign."))
		return 2000, customFailure(3010)
	}
	if !x.isWritable(accts[0]) {
		x.log(prova.LogMessage("AnchorError caused by account: agent. Error Code: ConstraintMut. Error Number: 2000. Error Message: A mut constraint was violated."))
		return 2000, customFailure(2000)
	}
	if a, ok := args.(prova.RegisterAgentArgs); ok {
		return x.registerAgent(agentKey, operator, accts, a)
	}
	acc := x.get(agentKey)
	if acc == nil || acc.Owner != x.c.cfg.ProgramID {
		x.log(prova.LogMessage("AnchorError caused by account: agent. Error Code: AccountNotInitialized. Error Number: 3012. Error Message: The program expected this account to be already initialized."))
		return 3000, customFailure(3012)
	}
	agent, err := prova.DecodeAgentAccount(acc.Data)
	if err != nil {
		x.log(prova.LogMessage("AnchorError caused by account: agent. Error Code: AccountDidNotDeserialize. Error Number: 3003. Error Message: Failed to deserialize the account."))
		return 3000, customFailure(3003)
	}
	if pda, _, _ := attestation.DeriveAgentPDA(x.c.cfg.ProgramID, agent.Operator); pda != agentKey {
		x.log(prova.LogMessage("AnchorError caused by account: agent. Error Code: ConstraintSeeds. Error Number: 2006. Error Message: A seeds constraint was violated."))
		return 3000, customFailure(2006)
	}
	if agent.Operator != operator {
		return anchorErr(4000, prova.ErrCodeUnauthorizedOperator, 41)
	}
	prev := agent
	switch a := args.(type) {
	case prova.RecordAttestationsArgs:
		return x.recordAttestations(agentKey, acc, agent, accts, a)
	case prova.RevokeAgentArgs:
		if agent.Revoked {
			return anchorErr(4000, prova.ErrCodeAgentRevoked, 120)
		}
		agent.Revoked = true
		acc.Data = agent.Encode()
		x.emit(prova.AgentRevokedEvent{Agent: agentKey, Operator: operator, Timestamp: x.now})
		x.undo = append(x.undo, func(st map[solana.PublicKey]*Account) {
			setAgent(st, agentKey, func(g *prova.AgentAccount) { g.Revoked = false })
		})
		return 5210, nil
	case prova.UpdatePolicyRootArgs:
		if agent.Revoked {
			return anchorErr(4000, prova.ErrCodeAgentRevoked, 135)
		}
		if a.NewRoot == ([32]byte{}) {
			return anchorErr(4000, prova.ErrCodeInvalidPolicyRoot, 136)
		}
		agent.PolicyRoot = a.NewRoot
		acc.Data = agent.Encode()
		x.emit(prova.PolicyRootUpdated{Agent: agentKey, Operator: operator, NewRoot: a.NewRoot, Timestamp: x.now})
		x.undo = append(x.undo, func(st map[solana.PublicKey]*Account) {
			setAgent(st, agentKey, func(g *prova.AgentAccount) { g.PolicyRoot = prev.PolicyRoot })
		})
		return 5630, nil
	}
	return 1500, customFailure(101)
}

func setAgent(st map[solana.PublicKey]*Account, key solana.PublicKey, f func(*prova.AgentAccount)) {
	acc := st[key]
	if acc == nil {
		return
	}
	a, err := prova.DecodeAgentAccount(acc.Data)
	if err != nil {
		return
	}
	f(&a)
	acc.Data = a.Encode()
}

func (x *exec) registerAgent(agentKey, operator solana.PublicKey, accts []int, a prova.RegisterAgentArgs) (uint64, *ixFailure) {
	pda, bump, err := attestation.DeriveAgentPDA(x.c.cfg.ProgramID, operator)
	if err != nil || pda != agentKey {
		x.log(prova.LogMessage("AnchorError caused by account: agent. Error Code: ConstraintSeeds. Error Number: 2006. Error Message: A seeds constraint was violated."))
		return 3000, customFailure(2006)
	}
	if len(accts) < 3 || x.keys[accts[2]] != solana.SystemProgramID {
		x.log(prova.LogMessage("AnchorError caused by account: system_program. Error Code: InvalidProgramId. Error Number: 3008. Error Message: Program ID was not as expected."))
		return 3000, customFailure(3008)
	}
	if a.PolicyRoot == ([32]byte{}) {
		x.log(prova.LogAnchorError(prova.ProgramErrors[prova.ErrCodeInvalidPolicyRoot], sourceFile, 22))
		return 4000, customFailure(prova.ErrCodeInvalidPolicyRoot)
	}
	// Anchor's `init` creates the account through a CPI into the System
	// program.
	x.log(prova.LogInvoke(solana.SystemProgramID, 2))
	cpi := make([]byte, 4+8+8+32)
	binary.LittleEndian.PutUint32(cpi[0:], 0) // CreateAccount
	binary.LittleEndian.PutUint64(cpi[4:], agentAccountRent)
	binary.LittleEndian.PutUint64(cpi[12:], prova.AgentAccountSize)
	copy(cpi[20:], x.c.cfg.ProgramID[:])
	x.inner = append(x.inner, innerInstructions{Index: x.ix, Instructions: []innerInstruction{{
		ProgramIDIndex: accts[2], Accounts: []int{accts[1], accts[0]}, Data: solana.Base58(cpi).String(), StackHeight: 2,
	}}})
	if existing := x.get(agentKey); existing != nil && (existing.Lamports > 0 || len(existing.Data) > 0) {
		x.log(prova.LogMessage(fmt.Sprintf("Create Account: account Address { address: %s, base: None } already in use", agentKey)))
		x.log(prova.LogFailed(solana.SystemProgramID, "custom program error: 0x0"))
		return 6000, customFailure(0)
	}
	payer := x.get(operator)
	if payer == nil || payer.Lamports < agentAccountRent {
		x.log(prova.LogMessage(fmt.Sprintf("Transfer: insufficient lamports %d, need %d", lamportsOf(payer), agentAccountRent)))
		x.log(prova.LogFailed(solana.SystemProgramID, "custom program error: 0x1"))
		return 6000, customFailure(1)
	}
	x.log(prova.LogSuccess(solana.SystemProgramID))
	payer.Lamports -= agentAccountRent
	acc := &Account{Lamports: agentAccountRent, Owner: x.c.cfg.ProgramID, Data: prova.AgentAccount{
		Operator: operator, AgentID: a.AgentID, PolicyRoot: a.PolicyRoot, CreatedAt: x.now, Bump: bump,
	}.Encode()}
	x.put(agentKey, acc)
	x.emit(prova.AgentRegistered{Agent: agentKey, Operator: operator, AgentID: a.AgentID, Timestamp: x.now})
	x.undo = append(x.undo, func(st map[solana.PublicKey]*Account) {
		delete(st, agentKey)
		if p := st[operator]; p != nil {
			p.Lamports += agentAccountRent
		}
	})
	return 12_458, nil
}

func lamportsOf(a *Account) uint64 {
	if a == nil {
		return 0
	}
	return a.Lamports
}

// recordAttestations checks the batch and, entry by entry, that the
// preceding Ed25519 precompile instruction verified the agent's signature
// over the hash, emitting one AttestationIssued per entry.
func (x *exec) recordAttestations(agentKey solana.PublicKey, acc *Account, agent prova.AgentAccount, accts []int, a prova.RecordAttestationsArgs) (uint64, *ixFailure) {
	n := len(a.Attestations)
	units := uint64(6000 + 1900*n)
	if agent.Revoked {
		x.log(prova.LogAnchorError(prova.ProgramErrors[prova.ErrCodeAgentRevoked], sourceFile, 58))
		return 4000, customFailure(prova.ErrCodeAgentRevoked)
	}
	if n == 0 {
		x.log(prova.LogAnchorError(prova.ProgramErrors[prova.ErrCodeEmptyBatch], sourceFile, 59))
		return 4000, customFailure(prova.ErrCodeEmptyBatch)
	}
	if n > prova.MaxAttestationsPerTx {
		x.log(prova.LogAnchorError(prova.ProgramErrors[prova.ErrCodeBatchLimitExceeded], sourceFile, 60))
		return 4000, customFailure(prova.ErrCodeBatchLimitExceeded)
	}
	if len(accts) < 3 || x.keys[accts[2]] != solana.SysVarInstructionsPubkey {
		x.log(prova.LogMessage("AnchorError caused by account: instructions. Error Code: ConstraintAddress. Error Number: 2012. Error Message: An address constraint was violated."))
		return 4000, customFailure(2012)
	}
	// The precompile instruction must come right before this one; the
	// runtime already verified its signatures.
	var checks []prova.Ed25519Check
	if x.ix > 0 && x.keys[x.msg.Instructions[x.ix-1].ProgramIDIndex] == prova.Ed25519ProgramID {
		checks = x.verified[x.ix-1]
	}
	for i, in := range a.Attestations {
		if i >= len(checks) || checks[i].PublicKey != agent.AgentID || checks[i].Signature != in.Signature ||
			string(checks[i].Message) != string(in.ActionHash[:]) {
			x.log(prova.LogAnchorError(prova.ProgramErrors[prova.ErrCodeInvalidSignature], sourceFile, 77))
			return units, customFailure(prova.ErrCodeInvalidSignature)
		}
		x.emit(prova.AttestationIssued{Agent: agentKey, AgentID: agent.AgentID, ActionType: in.ActionType,
			ActionHash: in.ActionHash, PrivacyMode: in.PrivacyMode, Timestamp: x.now, Signature: in.Signature})
	}
	agent.AttestationCount += uint64(n)
	acc.Data = agent.Encode()
	x.undo = append(x.undo, func(st map[solana.PublicKey]*Account) {
		setAgent(st, agentKey, func(g *prova.AgentAccount) { g.AttestationCount -= uint64(n) })
	})
	return units, nil
}

// signatureOf is a transaction's id: its first signature.
func signatureOf(tx *solana.Transaction) solana.Signature {
	if len(tx.Signatures) == 0 {
		return solana.Signature{}
	}
	return tx.Signatures[0]
}

// hashOf is SHA-256 (for payload hashes).
func hashOf(b []byte) [32]byte { return sha256.Sum256(b) }
