package web

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/mr-tron/base58"
)

func sample() Message {
	pub := make([]byte, 32)
	pub[0] = 7
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	return Message{Domain: "attestd.example", Address: base58.Encode(pub), Statement: Statement, URI: "https://attestd.example",
		Version: "1", ChainID: "mainnet", Nonce: "0123456789abcdef0123456789abcdef", IssuedAt: at, ExpirationTime: at.Add(5 * time.Minute)}
}

func TestParseMessage(t *testing.T) {
	m := sample()
	text := m.String()
	want := "attestd.example wants you to sign in with your Solana account:\n" + m.Address + "\n\n" + Statement +
		"\n\nURI: https://attestd.example\nVersion: 1\nChain ID: mainnet\nNonce: 0123456789abcdef0123456789abcdef\n" +
		"Issued At: 2026-11-23T12:00:00Z\nExpiration Time: 2026-11-23T12:05:00Z"
	if text != want {
		t.Fatalf("rendered\n%s\nwant\n%s", text, want)
	}
	got, err := ParseMessage(text)
	if err != nil || got != m {
		t.Fatalf("parse: %+v %v", got, err)
	}
	noStatement := m
	noStatement.Statement = ""
	if got, err := ParseMessage(noStatement.String()); err != nil || got != noStatement {
		t.Errorf("without a statement: %+v %v", got, err)
	}
	for name, bad := range map[string]string{
		"empty":            "",
		"trailing newline": text + "\n",
		"crlf":             strings.ReplaceAll(text, "\n", "\r\n"),
		"no header":        strings.Replace(text, " wants you to sign in with your Solana account:", ":", 1),
		"ethereum":         strings.Replace(text, "Solana", "Ethereum", 1),
		"bad address":      strings.Replace(text, m.Address, "0OIl", 1),
		"short address":    strings.Replace(text, m.Address, "11111111", 1),
		"missing nonce":    strings.Replace(text, "Nonce: 0123456789abcdef0123456789abcdef\n", "", 1),
		"swapped fields":   strings.Replace(strings.Replace(text, "Version: 1\nChain ID: mainnet", "Chain ID: mainnet\nVersion: 1", 1), "", "", 1),
		"offset time":      strings.Replace(text, "2026-11-23T12:00:00Z", "2026-11-23T13:00:00+01:00", 1),
		"fractional time":  strings.Replace(text, "2026-11-23T12:00:00Z", "2026-11-23T12:00:00.5Z", 1),
		"bad time":         strings.Replace(text, "2026-11-23T12:05:00Z", "soon", 1),
		"extra field":      text + "\nResources: x",
		"two statements":   strings.Replace(text, Statement, Statement+"\nmore", 1),
		"space in domain":  strings.Replace(text, "attestd.example wants", "attestd.example  wants", 1),
		"too long":         strings.Replace(text, Statement, strings.Repeat("a", MaxMessageBytes), 1),
	} {
		if _, err := ParseMessage(bad); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func TestVerifySignature(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	addr := base58.Encode(pub)
	sig := ed25519.Sign(priv, []byte("hello"))
	if err := VerifySignature("hello", addr, sig); err != nil {
		t.Fatal(err)
	}
	if VerifySignature("hellO", addr, sig) == nil || VerifySignature("hello", addr, sig[:63]) == nil ||
		VerifySignature("hello", base58.Encode(make([]byte, 32)), sig) == nil || VerifySignature("hello", "x", sig) == nil {
		t.Error("a wrong signature verified")
	}
}

func FuzzParseMessage(f *testing.F) {
	f.Add(sample().String())
	f.Add("x wants you to sign in with your Solana account:\n\n\n\n\n\n\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMessage(s)
		if err == nil && m.String() != s {
			t.Errorf("parsed a message that renders differently")
		}
	})
}
