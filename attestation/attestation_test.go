package attestation

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
)

func TestActionTypes(t *testing.T) {
	want := []string{"Transaction", "Decision", "ModelInvocation", "ToolCall", "ResourceAccess", "PolicyCheck", "Custom"}
	for i, name := range want {
		typ, err := ParseActionType(name)
		if err != nil || int(typ) != i || typ.String() != name {
			t.Errorf("%s: %d %v", name, typ, err)
		}
		b, err := json.Marshal(typ)
		if err != nil || string(b) != `"`+name+`"` {
			t.Errorf("marshal %s: %s %v", name, b, err)
		}
	}
	for _, bad := range []string{"", "toolcall", "TOOLCALL", "Tool Call", "7", "Unknown"} {
		if _, err := ParseActionType(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if ActionType(7).Valid() {
		t.Error("7 valid")
	}
	if _, err := json.Marshal(ActionType(9)); err == nil {
		t.Error("invalid type marshalled")
	}
}

func TestDerivePDAMatchesTheContract(t *testing.T) {
	program := solana.MustPublicKeyFromBase58(DefaultProgramID)
	var sig solana.Signature
	for i := range sig {
		sig[i] = byte(i)
	}
	for _, idx := range []int{0, 1, 99, 65535} {
		got, err := DerivePDA(program, sig, idx)
		if err != nil {
			t.Fatal(err)
		}
		// Recompute independently from the contract's seed list.
		var le [2]byte
		binary.LittleEndian.PutUint16(le[:], uint16(idx))
		want, _, err := solana.FindProgramAddress([][]byte{[]byte("attestation"), sig[:32], sig[32:], le[:]}, program)
		if err != nil || got != want {
			t.Fatalf("index %d: %s, want %s", idx, got, want)
		}
		if solana.IsOnCurve(got[:]) {
			t.Fatalf("pda %s is on the curve", got)
		}
	}
	a, _ := DerivePDA(program, sig, 0)
	b, _ := DerivePDA(program, sig, 1)
	if a == b {
		t.Fatal("event index does not change the pda")
	}
	for _, bad := range []int{-1, 65536} {
		if _, err := DerivePDA(program, sig, bad); err == nil {
			t.Errorf("index %d accepted", bad)
		}
	}
	op := solana.MustPublicKeyFromBase58("11111111111111111111111111111112")
	agent, bump, err := DeriveAgentPDA(program, op)
	check, _ := solana.CreateProgramAddress([][]byte{[]byte("prova_agent"), op[:], {bump}}, program)
	if err != nil || agent != check {
		t.Fatalf("agent pda %s bump %d, recomputed %s", agent, bump, check)
	}
}

func TestVerifySignature(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	var id [32]byte
	copy(id[:], pub)
	hash := sha256.Sum256([]byte(`{"tool":"search"}`))
	var sig [64]byte
	copy(sig[:], ed25519.Sign(priv, hash[:]))
	if !VerifySignature(id, hash, sig) {
		t.Fatal("good signature rejected")
	}
	tampered := hash
	tampered[0] ^= 1
	badSig := sig
	badSig[10] ^= 1
	other, _, _ := ed25519.GenerateKey(nil)
	var otherID [32]byte
	copy(otherID[:], other)
	for name, ok := range map[string]bool{
		"tampered hash": VerifySignature(id, tampered, sig),
		"tampered sig":  VerifySignature(id, hash, badSig),
		"other key":     VerifySignature(otherID, hash, sig),
		"zero":          VerifySignature([32]byte{}, hash, [64]byte{}),
	} {
		if ok {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestParseHashAndAddress(t *testing.T) {
	good := strings.Repeat("ab", 32)
	for _, in := range []string{good, strings.ToUpper(good), "0x" + good, "0X" + good} {
		if h, err := ParseHash(in); err != nil || h[0] != 0xab {
			t.Errorf("%q: %v", in, err)
		}
	}
	for _, in := range []string{"", good[:62], good + "00", strings.Repeat("zz", 32), "0x"} {
		if _, err := ParseHash(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	for _, in := range []string{DefaultProgramID, "11111111111111111111111111111111"} {
		if _, err := ParseAddress(in); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
	for _, in := range []string{"", "abc", "0OIl" + DefaultProgramID[4:], DefaultProgramID + "1", strings.Repeat("z", 44)} {
		if _, err := ParseAddress(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestTimeFormat(t *testing.T) {
	tm := At(time.Date(2026, 11, 21, 10, 0, 0, 999, time.FixedZone("x", 3600)))
	b, _ := json.Marshal(tm)
	if string(b) != `"2026-11-21T09:00:00Z"` {
		t.Fatalf("got %s", b)
	}
	var back Time
	if err := json.Unmarshal(b, &back); err != nil || !back.Equal(tm.Time) {
		t.Fatalf("round trip %v %v", back, err)
	}
	if OptTime(nil) != nil {
		t.Fatal("absent time not nil")
	}
	// The zero instant is a time like any other, never "absent".
	zero := time.Time{}
	if p := OptTime(&zero); p == nil || p.String() != "0001-01-01T00:00:00Z" {
		t.Fatalf("zero instant: %v", p)
	}
}

func FuzzParseHash(f *testing.F) {
	f.Add(strings.Repeat("ab", 32))
	f.Add("0x")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHash(s)
		if err == nil {
			// Whatever parses re-encodes to the same bytes.
			if _, err := ParseHash(strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"))); err != nil {
				t.Fatalf("%q parsed to %x but its lower form does not", s, h)
			}
		}
	})
}

func FuzzParseAddress(f *testing.F) {
	f.Add(DefaultProgramID)
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		pk, err := ParseAddress(s)
		if err == nil && pk.String() != s {
			t.Fatalf("%q parsed to %s", s, pk)
		}
	})
}

// FuzzDecodeAddress holds decodeAddress to the reference decoder: base58
// decoding by the Solana library, then exactly 32 bytes.
func FuzzDecodeAddress(f *testing.F) {
	for _, s := range []string{DefaultProgramID, strings.Repeat("1", 32), strings.Repeat("1", 33), strings.Repeat("1", 31) + "2",
		"JEKNVnkbo3jma5nREBBJCDoXFVeKkD56V3xKrvRmWxFG", "JEKNVnkbo3jma5nREBBJCDoXFVeKkD56V3xKrvRmWxFH", strings.Repeat("z", 44),
		"1" + DefaultProgramID, DefaultProgramID + "1", "0OIl", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := decodeAddress(s)
		want, err := solana.PublicKeyFromBase58(s)
		if ok != (err == nil) || (ok && got != want) {
			t.Fatalf("%q: decodeAddress %x %v; reference %x %v", s, got[:], ok, want[:], err)
		}
	})
}

func BenchmarkParseAddress(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseAddress(DefaultProgramID); err != nil {
			b.Fatal(err)
		}
	}
}
