package prova

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/attestd/attestd/attestation"
	"github.com/gagliardetto/solana-go"
)

// rep returns n copies of b.
func rep(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func key(b byte) solana.PublicKey { return solana.PublicKeyFromBytes(rep(b, 32)) }
func h32(b byte) (h [32]byte)     { copy(h[:], rep(b, 32)); return }
func s64(b byte) (s [64]byte)     { copy(s[:], rep(b, 64)); return }

// ts is 100000000 (1973-03-03T09:46:40Z) as i64 little-endian.
var tsLE = []byte{0x00, 0xe1, 0xf5, 0x05, 0, 0, 0, 0}

const ts = 100000000

func TestDiscriminatorsMatchAnchorDerivation(t *testing.T) {
	// Anchor 0.31 derives discriminators as sha256("<namespace>:<name>")[:8];
	// the IDL's explicit values (copied into this package) must agree.
	cases := []struct {
		preimage string
		got      Discriminator
	}{
		{"global:register_agent", DiscRegisterAgent},
		{"global:record_attestations", DiscRecordAttestations},
		{"global:revoke_agent", DiscRevokeAgent},
		{"global:update_policy_root", DiscUpdatePolicyRoot},
		{"account:AgentAccount", DiscAgentAccount},
		{"event:AgentRegistered", DiscAgentRegistered},
		{"event:AttestationIssued", DiscAttestationIssued},
		{"event:AgentRevokedEvent", DiscAgentRevoked},
		{"event:PolicyRootUpdated", DiscPolicyRootUpdated},
	}
	for _, c := range cases {
		sum := sha256.Sum256([]byte(c.preimage))
		if Discriminator(sum[:8]) != c.got {
			t.Errorf("%s: sha256 prefix %v, IDL %v", c.preimage, sum[:8], c.got)
		}
	}
}

func TestEventVectors(t *testing.T) {
	cases := []struct {
		name string
		wire []byte
		want Event
	}{
		{
			name: "AttestationIssued",
			wire: cat([]byte{173, 237, 90, 123, 155, 224, 231, 242}, rep(1, 32), rep(2, 32), []byte{3}, rep(4, 32), []byte{1}, tsLE, rep(6, 64)),
			want: AttestationIssued{Agent: key(1), AgentID: h32(2), ActionType: attestation.ToolCall, ActionHash: h32(4),
				PrivacyMode: true, Timestamp: ts, Signature: s64(6)},
		},
		{
			name: "AttestationIssued Custom, no privacy, negative time",
			wire: cat([]byte{173, 237, 90, 123, 155, 224, 231, 242}, rep(1, 32), rep(2, 32), []byte{6}, rep(4, 32), []byte{0},
				[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, rep(6, 64)),
			want: AttestationIssued{Agent: key(1), AgentID: h32(2), ActionType: attestation.Custom, ActionHash: h32(4),
				Timestamp: -1, Signature: s64(6)},
		},
		{
			name: "AgentRegistered",
			wire: cat([]byte{191, 78, 217, 54, 232, 100, 189, 85}, rep(1, 32), rep(2, 32), rep(3, 32), tsLE),
			want: AgentRegistered{Agent: key(1), Operator: key(2), AgentID: h32(3), Timestamp: ts},
		},
		{
			name: "AgentRevokedEvent",
			wire: cat([]byte{218, 156, 242, 182, 58, 95, 202, 161}, rep(1, 32), rep(2, 32), tsLE),
			want: AgentRevokedEvent{Agent: key(1), Operator: key(2), Timestamp: ts},
		},
		{
			name: "PolicyRootUpdated",
			wire: cat([]byte{194, 120, 18, 146, 205, 54, 53, 217}, rep(1, 32), rep(2, 32), rep(9, 32), tsLE),
			want: PolicyRootUpdated{Agent: key(1), Operator: key(2), NewRoot: h32(9), Timestamp: ts},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeEvent(c.wire)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got != c.want {
				t.Fatalf("decode: got %+v\nwant %+v", got, c.want)
			}
			if enc := c.want.Encode(); !bytes.Equal(enc, c.wire) {
				t.Fatalf("encode:\n got %x\nwant %x", enc, c.wire)
			}
		})
	}
	if len(cases[0].wire) != AttestationIssuedSize || len(cases[2].wire) != AgentRegisteredSize ||
		len(cases[3].wire) != AgentRevokedSize || len(cases[4].wire) != PolicyRootUpdatedSize {
		t.Fatal("size constants disagree with the vectors")
	}
}

func TestDecodeEventRejects(t *testing.T) {
	good := AttestationIssued{Agent: key(1), AgentID: h32(2), ActionHash: h32(4), Timestamp: ts, Signature: s64(6)}.Encode()
	badBool := append([]byte(nil), good...)
	badBool[8+32+32+1+32] = 2
	badType := append([]byte(nil), good...)
	badType[8+32+32] = 7
	cases := []struct {
		name    string
		data    []byte
		unknown bool
	}{
		{"empty", nil, false},
		{"seven bytes", good[:7], false},
		{"discriminator only", good[:8], false},
		{"one short", good[:len(good)-1], false},
		{"one long", append(append([]byte(nil), good...), 0), false},
		{"bool 2", badBool, false},
		{"action type 7", badType, false},
		{"unknown discriminator", cat(rep(0, 8), good[8:]), true},
		{"account discriminator", cat(DiscAgentAccount[:], good[8:]), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, err := DecodeEvent(c.data)
			if err == nil {
				t.Fatalf("decoded %+v, want error", ev)
			}
			if errors.Is(err, ErrUnknownDiscriminator) != c.unknown {
				t.Fatalf("error %v: unknown-discriminator %v, want %v", err, !c.unknown, c.unknown)
			}
		})
	}
}

func TestAgentAccountVector(t *testing.T) {
	wire := cat([]byte{241, 119, 69, 140, 233, 9, 112, 50}, rep(1, 32), rep(2, 32), rep(3, 32),
		[]byte{0x10, 0x27, 0, 0, 0, 0, 0, 0}, tsLE, []byte{1, 254})
	want := AgentAccount{Operator: key(1), AgentID: h32(2), PolicyRoot: h32(3), AttestationCount: 10000,
		CreatedAt: ts, Revoked: true, Bump: 254}
	got, err := DecodeAgentAccount(wire)
	if err != nil || got != want {
		t.Fatalf("decode: %+v, %v", got, err)
	}
	if !bytes.Equal(want.Encode(), wire) || len(wire) != AgentAccountSize {
		t.Fatalf("encode: %x", want.Encode())
	}
	// Trailing space in the account is allowed; anything short is not.
	if _, err := DecodeAgentAccount(append(append([]byte(nil), wire...), 0, 0)); err != nil {
		t.Fatalf("padded account: %v", err)
	}
	for _, bad := range [][]byte{nil, wire[:8], wire[:len(wire)-1], cat(DiscAgentRegistered[:], wire[8:])} {
		if _, err := DecodeAgentAccount(bad); err == nil {
			t.Fatalf("decoded %x", bad)
		}
	}
}

func TestInstructionVectors(t *testing.T) {
	cases := []struct {
		name string
		wire []byte
		want InstructionArgs
	}{
		{
			name: "register_agent",
			wire: cat([]byte{135, 157, 66, 195, 2, 113, 175, 30}, rep(2, 32), rep(3, 32)),
			want: RegisterAgentArgs{AgentID: h32(2), PolicyRoot: h32(3)},
		},
		{
			name: "record_attestations x2",
			wire: cat([]byte{228, 78, 80, 123, 83, 203, 69, 235}, []byte{2, 0, 0, 0},
				[]byte{0}, rep(4, 32), []byte{0}, rep(5, 64),
				[]byte{5}, rep(6, 32), []byte{1}, rep(7, 64)),
			want: RecordAttestationsArgs{Attestations: []AttestationInput{
				{ActionType: attestation.Transaction, ActionHash: h32(4), Signature: s64(5)},
				{ActionType: attestation.PolicyCheck, ActionHash: h32(6), PrivacyMode: true, Signature: s64(7)},
			}},
		},
		{
			name: "record_attestations empty",
			wire: cat([]byte{228, 78, 80, 123, 83, 203, 69, 235}, []byte{0, 0, 0, 0}),
			want: RecordAttestationsArgs{Attestations: []AttestationInput{}},
		},
		{
			name: "revoke_agent",
			wire: []byte{227, 60, 209, 125, 240, 117, 163, 73},
			want: RevokeAgentArgs{},
		},
		{
			name: "update_policy_root",
			wire: cat([]byte{204, 72, 225, 189, 180, 164, 143, 74}, rep(8, 32)),
			want: UpdatePolicyRootArgs{NewRoot: h32(8)},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeInstruction(c.wire)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !bytes.Equal(got.Encode(), c.wire) || got.Name() != c.want.Name() {
				t.Fatalf("decode: got %+v", got)
			}
			if enc := c.want.Encode(); !bytes.Equal(enc, c.wire) {
				t.Fatalf("encode:\n got %x\nwant %x", enc, c.wire)
			}
		})
	}
	rec := cases[1].wire
	if !bytes.Equal(rec[RecordHashOffset(1):RecordHashOffset(1)+32], rep(6, 32)) ||
		!bytes.Equal(rec[RecordSignatureOffset(1):RecordSignatureOffset(1)+64], rep(7, 64)) {
		t.Fatal("record offsets do not point at entry 1")
	}
	for _, bad := range [][]byte{
		nil, rep(0, 8), rec[:len(rec)-1], append(append([]byte(nil), rec...), 0),
		cat(DiscRecordAttestations[:], []byte{0xff, 0xff, 0xff, 0xff}), // 4 billion entries, no data
		cat(DiscRecordAttestations[:], []byte{1, 0, 0}),
		cat(DiscRevokeAgent[:], []byte{0}),
	} {
		if got, err := DecodeInstruction(bad); err == nil {
			t.Fatalf("decoded %x as %+v", bad, got)
		}
	}
}

func TestInstructionBuilders(t *testing.T) {
	program := solana.MustPublicKeyFromBase58(attestation.DefaultProgramID)
	op := key(7)
	agent, _, err := attestation.DeriveAgentPDA(program, op)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := NewRegisterAgentInstruction(program, op, RegisterAgentArgs{AgentID: h32(1), PolicyRoot: h32(2)})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := NewRecordAttestationsInstruction(program, op, RecordAttestationsArgs{Attestations: []AttestationInput{{}}})
	if err != nil {
		t.Fatal(err)
	}
	rev, _ := NewRevokeAgentInstruction(program, op)
	upd, _ := NewUpdatePolicyRootInstruction(program, op, UpdatePolicyRootArgs{NewRoot: h32(3)})
	type acct struct {
		key          solana.PublicKey
		write, signs bool
	}
	cases := []struct {
		name string
		ix   solana.Instruction
		want []acct
	}{
		{"register", reg, []acct{{agent, true, false}, {op, true, true}, {solana.SystemProgramID, false, false}}},
		{"record", rec, []acct{{agent, true, false}, {op, true, true}, {solana.SysVarInstructionsPubkey, false, false}}},
		{"revoke", rev, []acct{{agent, true, false}, {op, true, true}}},
		{"update", upd, []acct{{agent, true, false}, {op, true, true}}},
	}
	for _, c := range cases {
		if c.ix.ProgramID() != program {
			t.Errorf("%s: program %s", c.name, c.ix.ProgramID())
		}
		got := c.ix.Accounts()
		if len(got) != len(c.want) {
			t.Fatalf("%s: %d accounts", c.name, len(got))
		}
		for i, w := range c.want {
			if got[i].PublicKey != w.key || got[i].IsWritable != w.write || got[i].IsSigner != w.signs {
				t.Errorf("%s: account %d = %+v, want %+v", c.name, i, got[i], w)
			}
		}
		data, _ := c.ix.Data()
		if _, err := DecodeInstruction(data); err != nil {
			t.Errorf("%s: data does not decode: %v", c.name, err)
		}
	}
}

func TestEd25519Layout(t *testing.T) {
	// Two checks under one key: header, two 14-byte records, the key once,
	// then signature and message of each.
	checks := []Ed25519Check{
		{PublicKey: h32(1), Signature: s64(2), Message: rep(3, 32)},
		{PublicKey: h32(1), Signature: s64(4), Message: rep(5, 32)},
	}
	data, err := EncodeEd25519(checks)
	if err != nil {
		t.Fatal(err)
	}
	want := cat([]byte{2, 0},
		// sig 62, ix ffff, key 30, ix ffff, msg 126, size 32, ix ffff
		[]byte{62, 0, 0xff, 0xff, 30, 0, 0xff, 0xff, 126, 0, 32, 0, 0xff, 0xff},
		// sig 158, key 30, msg 222
		[]byte{158, 0, 0xff, 0xff, 30, 0, 0xff, 0xff, 222, 0, 32, 0, 0xff, 0xff},
		rep(1, 32), rep(2, 64), rep(3, 32), rep(4, 64), rep(5, 32))
	if !bytes.Equal(data, want) {
		t.Fatalf("layout:\n got %s\nwant %s", hex.EncodeToString(data), hex.EncodeToString(want))
	}
	offs, err := ParseEd25519Offsets(data)
	if err != nil || len(offs) != 2 || offs[1].MessageDataOffset != 222 {
		t.Fatalf("parse: %+v %v", offs, err)
	}
	// The signatures are garbage: verification must fail, not panic.
	if _, err := VerifyEd25519(data, 0, nil); !errors.Is(err, ErrEd25519) {
		t.Fatalf("verify garbage: %v", err)
	}
}

func TestEd25519Verify(t *testing.T) {
	agent := solana.NewWallet().PrivateKey
	var agentID [32]byte
	copy(agentID[:], agent.PublicKey().Bytes())
	atts := make([]AttestationInput, 3)
	for i := range atts {
		atts[i].ActionHash = sha256.Sum256([]byte{byte(i)})
		sig, err := agent.Sign(atts[i].ActionHash[:])
		if err != nil {
			t.Fatal(err)
		}
		atts[i].Signature = sig
	}
	ix, err := NewEd25519InstructionForRecord(agentID, atts)
	if err != nil {
		t.Fatal(err)
	}
	if ix.ProgramID() != Ed25519ProgramID || len(ix.Accounts()) != 0 {
		t.Fatal("precompile instruction has wrong program or accounts")
	}
	data, _ := ix.Data()
	checks, err := VerifyEd25519(data, 0, nil)
	if err != nil || len(checks) != 3 {
		t.Fatalf("verify: %d checks, %v", len(checks), err)
	}
	for i, c := range checks {
		if c.PublicKey != agentID || c.Signature != atts[i].Signature || !bytes.Equal(c.Message, atts[i].ActionHash[:]) {
			t.Fatalf("check %d does not match attestation", i)
		}
	}

	// Offsets into another instruction (the record_attestations data), as
	// programs that save space lay it out.
	rec := RecordAttestationsArgs{Attestations: atts}.Encode()
	o := func(v int) []byte { return []byte{byte(v), byte(v >> 8)} }
	other := cat([]byte{1, 0}, o(RecordSignatureOffset(2)), o(1), o(16), o(0xffff), o(RecordHashOffset(2)), o(32), o(1), agentID[:])
	lookup := func(i int) ([]byte, bool) {
		if i == 1 {
			return rec, true
		}
		return nil, false
	}
	if _, err := VerifyEd25519(other, 0, lookup); err != nil {
		t.Fatalf("cross-instruction verify: %v", err)
	}

	tampered := append([]byte(nil), data...)
	tampered[len(tampered)-1] ^= 1
	cases := map[string][]byte{
		"tampered message":    tampered,
		"empty":               nil,
		"zero with data":      {0, 0, 1},
		"count beyond data":   {3, 0, 1},
		"offset out of range": cat([]byte{1, 0}, o(0xfff0), o(0xffff), o(0), o(0xffff), o(0), o(32), o(0xffff)),
		"missing instruction": cat([]byte{1, 0}, o(0), o(5), o(0), o(0xffff), o(0), o(32), o(0xffff)),
	}
	for name, bad := range cases {
		if _, err := VerifyEd25519(bad, 0, lookup); !errors.Is(err, ErrEd25519) {
			t.Errorf("%s: %v, want ErrEd25519", name, err)
		}
	}
	if _, err := EncodeEd25519(nil); err == nil {
		t.Error("encoded zero checks")
	}
}

func TestParseLogs(t *testing.T) {
	program := solana.MustPublicKeyFromBase58(attestation.DefaultProgramID)
	other := solana.MustPublicKeyFromBase58("Mimic11111111111111111111111111111111111111")
	ev1 := AttestationIssued{Agent: key(1), AgentID: h32(2), ActionType: attestation.Decision, ActionHash: h32(3), Timestamp: ts, Signature: s64(4)}
	ev2 := ev1
	ev2.ActionHash = h32(5)
	reg := AgentRegistered{Agent: key(1), Operator: key(2), AgentID: h32(3), Timestamp: ts}
	unknown := cat(rep(0xee, 8), rep(1, 10))
	p, o := program, other
	sys := solana.SystemProgramID
	anchorRecord := []string{
		"Program ComputeBudget111111111111111111111111111111 invoke [1]",
		"Program ComputeBudget111111111111111111111111111111 success",
		LogInvoke(p, 1),
		LogInstruction("RecordAttestations"),
		LogData(ev1.Encode()),
		LogData(ev2.Encode()),
		LogConsumed(p, 12000, 200000),
		LogSuccess(p),
	}
	cases := []struct {
		name    string
		logs    []string
		want    []LoggedEvent
		wantErr error
	}{
		{name: "anchor record_attestations", logs: anchorRecord,
			want: []LoggedEvent{{0, 1, ev1}, {1, 1, ev2}}},
		{name: "register with system CPI", logs: []string{
			LogInvoke(p, 1), LogInstruction("RegisterAgent"), LogInvoke(sys, 2), LogSuccess(sys),
			LogData(reg.Encode()), LogConsumed(p, 9000, 200000), LogSuccess(p)},
			want: []LoggedEvent{{0, 1, reg}}},
		{name: "another program prints an event", logs: []string{
			LogInvoke(o, 1), LogData(ev1.Encode()), LogSuccess(o),
			LogInvoke(p, 1), LogData(ev2.Encode()), LogSuccess(p)},
			want: []LoggedEvent{{0, 1, ev2}}},
		{name: "our program CPIs into one that prints an event", logs: []string{
			LogInvoke(p, 1), LogData(ev1.Encode()), LogInvoke(o, 2), LogData(ev1.Encode()), "Program data: !!not-base64!!",
			LogSuccess(o), LogData(ev2.Encode()), LogSuccess(p)},
			want: []LoggedEvent{{0, 1, ev1}, {1, 1, ev2}}},
		{name: "another program CPIs into ours", logs: []string{
			LogInvoke(o, 1), LogData(ev1.Encode()), LogInvoke(p, 2), LogData(ev2.Encode()), LogSuccess(p), LogSuccess(o)},
			want: []LoggedEvent{{0, 2, ev2}}},
		{name: "two instructions share the index", logs: []string{
			LogInvoke(p, 1), LogData(ev1.Encode()), LogSuccess(p), LogInvoke(p, 1), LogData(ev2.Encode()), LogSuccess(p)},
			want: []LoggedEvent{{0, 1, ev1}, {1, 1, ev2}}},
		{name: "unknown event takes an index", logs: []string{
			LogInvoke(p, 1), LogData(unknown), LogData(ev2.Encode()), LogSuccess(p)},
			want: []LoggedEvent{{1, 1, ev2}}},
		{name: "split data fields", logs: []string{
			LogInvoke(p, 1), "Program data: " + LogData(ev1.Encode()[:20])[len("Program data: "):] + " " +
				LogData(ev1.Encode()[20:])[len("Program data: "):], LogSuccess(p)},
			want: []LoggedEvent{{0, 1, ev1}}},
		{name: "failed program", logs: []string{
			LogInvoke(p, 1), LogData(ev1.Encode()),
			LogAnchorError(ProgramErrors[ErrCodeInvalidSignature], "programs/prova/src/lib.rs", 88),
			LogConsumed(p, 5000, 200000), LogFailed(p, CustomErrorReason(6002))},
			want: []LoggedEvent{{0, 1, ev1}}},
		{name: "no logs", logs: nil, want: nil},
		{name: "free text", logs: []string{"Program failed to complete: exceeded CUs", "hello", "Program log: x"}, want: nil},
		{name: "truncated", logs: []string{LogInvoke(p, 1), LogData(ev1.Encode()), "Log truncated"}, wantErr: ErrLogsTruncated},
		{name: "data outside a program", logs: []string{LogData(ev1.Encode())}, wantErr: ErrMalformedLogs},
		{name: "depth skips", logs: []string{LogInvoke(p, 2)}, wantErr: ErrMalformedLogs},
		{name: "depth zero", logs: []string{"Program " + p.String() + " invoke [0]"}, wantErr: ErrMalformedLogs},
		{name: "depth not a number", logs: []string{"Program " + p.String() + " invoke [x]"}, wantErr: ErrMalformedLogs},
		{name: "success of a program not running", logs: []string{LogInvoke(p, 1), LogSuccess(o)}, wantErr: ErrMalformedLogs},
		{name: "success on empty stack", logs: []string{LogSuccess(p)}, wantErr: ErrMalformedLogs},
		{name: "our data not base64", logs: []string{LogInvoke(p, 1), "Program data: !!!", LogSuccess(p)}, wantErr: ErrMalformedLogs},
		{name: "our event malformed", logs: []string{LogInvoke(p, 1), LogData(ev1.Encode()[:50]), LogSuccess(p)}, wantErr: ErrShort},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseLogs(c.logs, program)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("error %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d events, want %d: %+v", len(got), len(c.want), got)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("event %d: got %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
	if !strings.HasPrefix(LogAnchorError(ProgramErrors[6000], "f.rs", 1), "Program log: AnchorError thrown in f.rs:1. Error Code: AgentRevoked. Error Number: 6000.") {
		t.Fatal("anchor error line")
	}
}
