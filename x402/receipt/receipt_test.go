package receipt

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/config"
)

var testOrigin = config.Origin{Scheme: "http", Host: "127.0.0.1:8080"}

func testSigner(t testing.TB) *Signer {
	t.Helper()
	s, err := NewSigner(ed25519.NewKeyFromSeed(make([]byte, 32)), testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func samplePayload() Payload {
	return Payload{Amount: "10000", Asset: "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU", IssuedAt: 1763900000,
		Network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1", Payer: "payer", PayTo: "payto",
		RequestDigest: strings.Repeat("ab", 32), ResourceURL: "http://127.0.0.1:8080/api/v1/premium/bulk-verify?x=<&>",
		ResponseDigest: strings.Repeat("cd", 32), Transaction: "tx", Version: Version}
}

func TestSignVerify(t *testing.T) {
	s := testSigner(t)
	if !strings.HasPrefix(s.KeyID(), "did:web:127.0.0.1%3A8080#") {
		t.Fatalf("kid %q", s.KeyID())
	}
	jws, err := s.Sign(samplePayload())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Verify(jws, s.JWKS())
	if err != nil || p != samplePayload() {
		t.Fatalf("verify: %v %+v", err, p)
	}
	// The payload is JCS: sorted keys, no HTML escaping.
	parts := strings.Split(jws, ".")
	body, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if !strings.HasPrefix(string(body), `{"amount":"10000","asset":`) || !strings.Contains(string(body), "?x=<&>") {
		t.Fatalf("payload %s", body)
	}
	var keys []string
	var m map[string]json.RawMessage
	_ = json.Unmarshal(body, &m)
	for k := range m {
		keys = append(keys, k)
	}
	if len(keys) != 11 {
		t.Fatalf("payload keys %v", keys)
	}
}

// Hostile and forged receipts are refused with the reason, never a panic.
func TestVerifyRefuses(t *testing.T) {
	s := testSigner(t)
	other, _ := NewSigner(ed25519.NewKeyFromSeed(append(make([]byte, 31), 1)), testOrigin)
	good, _ := s.Sign(samplePayload())
	forgedKey, _ := other.Sign(samplePayload())
	parts := strings.Split(good, ".")
	p2 := samplePayload()
	p2.Amount = "1"
	body, _ := Canonical(p2)
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(body) + "." + parts[2]
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"`+s.KeyID()+`"}`)) + "." + parts[1] + "."
	hs := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"`+s.KeyID()+`"}`)) + "." + parts[1] + "." + parts[2]
	// other's receipt relabelled with our kid: the signature fails.
	op := strings.Split(forgedKey, ".")
	relabelled := parts[0] + "." + op[1] + "." + op[2]
	extra := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"version":1,"evil":true}`)) + "." + parts[2]
	cases := map[string]struct {
		jws  string
		want error
	}{
		"empty":            {"", ErrMalformed},
		"two parts":        {parts[0] + "." + parts[1], ErrMalformed},
		"four parts":       {good + ".x", ErrMalformed},
		"huge":             {strings.Repeat("a", MaxLength+1), ErrMalformed},
		"bad base64":       {"!!." + parts[1] + "." + parts[2], ErrMalformed},
		"alg none":         {none, ErrMalformed},
		"alg HS256":        {hs, ErrMalformed},
		"unknown field":    {extra, ErrMalformed},
		"other key":        {forgedKey, ErrUnknownKey},
		"tampered payload": {tampered, ErrSignature},
		"relabelled":       {relabelled, ErrSignature},
		"short signature":  {parts[0] + "." + parts[1] + ".AAAA", ErrMalformed},
	}
	for name, c := range cases {
		if _, err := Verify(c.jws, s.JWKS()); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

func TestParseKey(t *testing.T) {
	k := ed25519.NewKeyFromSeed(make([]byte, 32))
	ints, _ := json.Marshal(func() []int {
		out := make([]int, len(k))
		for i, b := range k {
			out[i] = int(b)
		}
		return out
	}())
	for name, in := range map[string]string{
		"seed std": base64.StdEncoding.EncodeToString(k.Seed()),
		"seed url": base64.RawURLEncoding.EncodeToString(k.Seed()),
		"full":     base64.StdEncoding.EncodeToString(k),
		"keypair":  string(ints),
	} {
		got, err := ParseKey([]byte(in + "\n"))
		if err != nil || !got.Equal(k) {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := append([]byte(nil), k...)
	bad[63] ^= 1
	for name, in := range map[string]string{
		"empty": "", "short": base64.StdEncoding.EncodeToString([]byte("abc")), "text": "not a key",
		"mismatched pair": base64.StdEncoding.EncodeToString(bad), "array": "[1,2,3]", "array range": "[" + strings.Repeat("300,", 63) + "300]",
	} {
		if _, err := ParseKey([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestKeyFromEnv(t *testing.T) {
	seed := base64.StdEncoding.EncodeToString(make([]byte, 32))
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if k, err := KeyFromEnv(env(nil)); k != nil || err != nil {
		t.Fatalf("unset: %v %v", k, err)
	}
	if k, err := KeyFromEnv(env(map[string]string{EnvKey: seed})); k == nil || err != nil {
		t.Fatalf("set: %v", err)
	}
	if _, err := KeyFromEnv(env(map[string]string{EnvKey: seed, EnvKeyFile: "/x"})); err == nil {
		t.Fatal("both set: accepted")
	}
	if _, err := KeyFromEnv(env(map[string]string{EnvKeyFile: "/nonexistent/key"})); err == nil || !strings.Contains(err.Error(), EnvKeyFile) {
		t.Fatalf("missing file: %v", err)
	}
}

func FuzzVerify(f *testing.F) {
	s := testSigner(f)
	good, _ := s.Sign(samplePayload())
	f.Add(good)
	f.Add("a.b.c")
	f.Add("..")
	f.Fuzz(func(t *testing.T, jws string) {
		p, err := Verify(jws, s.JWKS())
		if err == nil && jws != good {
			// Ed25519 signatures are not malleable: only the signed text verifies.
			if again, _ := s.Sign(p); again != jws {
				t.Fatalf("a receipt we did not sign verified: %q", jws)
			}
		}
	})
}

// Receipt signing adds at most 100 µs per paid answer (issue 25). On a
// shared machine wall time per op includes preemption; cpu-µs/op is the
// process's CPU time (getrusage) per op, what the signing costs.
func BenchmarkSign(b *testing.B) {
	s := testSigner(b)
	p := samplePayload()
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if _, err := s.Sign(p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkVerify(b *testing.B) {
	s := testSigner(b)
	jws, _ := s.Sign(samplePayload())
	keys := s.JWKS()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Verify(jws, keys); err != nil {
			b.Fatal(err)
		}
	}
}
