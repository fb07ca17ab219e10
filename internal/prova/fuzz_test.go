package prova

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/attestd/attestd/attestation"
	"github.com/gagliardetto/solana-go"
)

func FuzzDecodeEvent(f *testing.F) {
	f.Add(AttestationIssued{Agent: key(1), ActionType: attestation.Custom, Timestamp: -5}.Encode())
	f.Add(AgentRegistered{Agent: key(1)}.Encode())
	f.Add(AgentRevokedEvent{Operator: key(3)}.Encode())
	f.Add(PolicyRootUpdated{NewRoot: h32(2)}.Encode())
	f.Add([]byte{173, 237, 90, 123, 155, 224, 231, 242, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := DecodeEvent(data)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to the same bytes.
		if enc := ev.Encode(); !bytes.Equal(enc, data) {
			t.Fatalf("round trip:\n in %x\nout %x", data, enc)
		}
	})
}

func FuzzDecodeInstruction(f *testing.F) {
	f.Add(RegisterAgentArgs{AgentID: h32(1)}.Encode())
	f.Add(RecordAttestationsArgs{Attestations: []AttestationInput{{ActionType: 3, PrivacyMode: true}}}.Encode())
	f.Add(RevokeAgentArgs{}.Encode())
	f.Add(UpdatePolicyRootArgs{}.Encode())
	f.Add(cat(DiscRecordAttestations[:], []byte{0xff, 0xff, 0xff, 0x7f}))
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := DecodeInstruction(data)
		if err != nil {
			return
		}
		if enc := ix.Encode(); !bytes.Equal(enc, data) {
			t.Fatalf("round trip:\n in %x\nout %x", data, enc)
		}
	})
}

func FuzzDecodeAgentAccount(f *testing.F) {
	f.Add(AgentAccount{Operator: key(1), Revoked: true, Bump: 255}.Encode())
	f.Add(DiscAgentAccount[:])
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := DecodeAgentAccount(data)
		if err != nil {
			return
		}
		if enc := a.Encode(); !bytes.Equal(enc, data[:AgentAccountSize]) {
			t.Fatalf("round trip:\n in %x\nout %x", data, enc)
		}
	})
}

func FuzzVerifyEd25519(f *testing.F) {
	d, _ := EncodeEd25519([]Ed25519Check{{PublicKey: h32(1), Message: []byte("m")}})
	f.Add(d)
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		other := []byte("another instruction's data")
		checks, err := VerifyEd25519(data, 0, func(i int) ([]byte, bool) { return other, i == 1 })
		if err == nil && len(checks) != int(data[0]) {
			t.Fatalf("%d checks for count %d", len(checks), data[0])
		}
		if err != nil && !errors.Is(err, ErrEd25519) {
			t.Fatalf("error not ErrEd25519: %v", err)
		}
	})
}

func FuzzParseLogs(f *testing.F) {
	p := solana.MustPublicKeyFromBase58(attestation.DefaultProgramID)
	o := solana.SystemProgramID
	ev := AttestationIssued{Agent: key(1)}.Encode()
	seeds := [][]string{
		{LogInvoke(p, 1), LogInstruction("RecordAttestations"), LogData(ev), LogConsumed(p, 1, 2), LogSuccess(p)},
		{LogInvoke(o, 1), LogData(ev), LogSuccess(o), LogInvoke(p, 1), LogInvoke(o, 2), LogSuccess(o), LogData(ev), LogFailed(p, "x")},
		{"Program data: ", "Program  invoke [1]", "Log truncated"},
	}
	for _, s := range seeds {
		f.Add(strings.Join(s, "\n"))
	}
	f.Fuzz(func(t *testing.T, joined string) {
		logs := strings.Split(joined, "\n")
		evs, err := ParseLogs(logs, p)
		if err != nil {
			return
		}
		last := -1
		for _, e := range evs {
			if e.Index <= last || e.Event == nil || e.Depth < 1 {
				t.Fatalf("bad event sequence %+v", evs)
			}
			last = e.Index
		}
	})
}
