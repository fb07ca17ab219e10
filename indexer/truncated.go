package indexer

import (
	"errors"
	"fmt"

	"github.com/attestd/attestd/internal/prova"
	"github.com/gagliardetto/solana-go"
)

// errNoFallback means the events cannot be rebuilt from the instructions.
var errNoFallback = errors.New("events cannot be rebuilt from the instructions")

// eventsFromInstructions rebuilds the program's events from a successful
// transaction's top-level instructions, for when the runtime truncated the
// logs (10,000 bytes: a record_attestations of a few dozen entries already
// exceeds it). The program emits, per instruction and in order: one
// AgentRegistered, one AttestationIssued per entry (agent_id from the
// Ed25519 precompile instruction the program checked), one
// AgentRevokedEvent, or one PolicyRootUpdated, stamped with the block's
// clock (blockTime). Transactions that reach the program through CPI are
// not rebuilt.
func eventsFromInstructions(tx *solana.Transaction, programID solana.PublicKey, blockTime int64, hasInner bool) ([]prova.LoggedEvent, error) {
	if hasInner {
		return nil, fmt.Errorf("%w: inner instructions", errNoFallback)
	}
	m := &tx.Message
	keys := m.AccountKeys
	account := func(ci solana.CompiledInstruction, i int) (solana.PublicKey, error) {
		if i >= len(ci.Accounts) || int(ci.Accounts[i]) >= len(keys) {
			return solana.PublicKey{}, fmt.Errorf("%w: missing account %d", errNoFallback, i)
		}
		return keys[ci.Accounts[i]], nil
	}
	datas := make([][]byte, len(m.Instructions))
	for i, ci := range m.Instructions {
		datas[i] = ci.Data
	}
	var out []prova.LoggedEvent
	emit := func(e prova.Event) { out = append(out, prova.LoggedEvent{Index: len(out), Depth: 1, Event: e}) }
	for i, ci := range m.Instructions {
		if int(ci.ProgramIDIndex) >= len(keys) || keys[ci.ProgramIDIndex] != programID {
			continue
		}
		args, err := prova.DecodeInstruction(ci.Data)
		if err != nil {
			return nil, fmt.Errorf("%w: instruction %d: %w", errNoFallback, i, err)
		}
		agent, err := account(ci, 0)
		if err != nil {
			return nil, err
		}
		operator, err := account(ci, 1)
		if err != nil {
			return nil, err
		}
		switch a := args.(type) {
		case prova.RegisterAgentArgs:
			emit(prova.AgentRegistered{Agent: agent, Operator: operator, AgentID: a.AgentID, Timestamp: blockTime})
		case prova.RecordAttestationsArgs:
			if i == 0 || int(m.Instructions[i-1].ProgramIDIndex) >= len(keys) || keys[m.Instructions[i-1].ProgramIDIndex] != prova.Ed25519ProgramID {
				return nil, fmt.Errorf("%w: record_attestations without a precompile instruction", errNoFallback)
			}
			checks, err := prova.VerifyEd25519(datas[i-1], i-1, func(j int) ([]byte, bool) {
				if j < 0 || j >= len(datas) {
					return nil, false
				}
				return datas[j], true
			})
			if err != nil || len(checks) < len(a.Attestations) {
				return nil, fmt.Errorf("%w: precompile does not cover the entries", errNoFallback)
			}
			for j, in := range a.Attestations {
				emit(prova.AttestationIssued{Agent: agent, AgentID: checks[j].PublicKey, ActionType: in.ActionType,
					ActionHash: in.ActionHash, PrivacyMode: in.PrivacyMode, Timestamp: blockTime, Signature: in.Signature})
			}
		case prova.RevokeAgentArgs:
			emit(prova.AgentRevokedEvent{Agent: agent, Operator: operator, Timestamp: blockTime})
		case prova.UpdatePolicyRootArgs:
			emit(prova.PolicyRootUpdated{Agent: agent, Operator: operator, NewRoot: a.NewRoot, Timestamp: blockTime})
		}
	}
	return out, nil
}
