package web

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mr-tron/base58"
)

// Message is a Sign-In-With-Solana message: the EIP-4361 text form with a
// Solana address, as wallets show it to the person signing.
//
//	${domain} wants you to sign in with your Solana account:
//	${address}
//
//	${statement}
//
//	URI: ${uri}
//	Version: 1
//	Chain ID: ${chainId}
//	Nonce: ${nonce}
//	Issued At: ${issuedAt}
//	Expiration Time: ${expirationTime}
type Message struct {
	Domain         string
	Address        string
	Statement      string
	URI            string
	Version        string
	ChainID        string
	Nonce          string
	IssuedAt       time.Time
	ExpirationTime time.Time
}

// MaxMessageBytes bounds a sign-in message before it is parsed.
const MaxMessageBytes = 2048

const header = " wants you to sign in with your Solana account:"

// String renders the message in its text form (what is signed).
func (m Message) String() string {
	var b strings.Builder
	b.WriteString(m.Domain + header + "\n" + m.Address + "\n\n")
	if m.Statement != "" {
		b.WriteString(m.Statement + "\n\n")
	}
	b.WriteString("URI: " + m.URI + "\nVersion: " + m.Version + "\nChain ID: " + m.ChainID + "\nNonce: " + m.Nonce +
		"\nIssued At: " + m.IssuedAt.UTC().Format(time.RFC3339) + "\nExpiration Time: " + m.ExpirationTime.UTC().Format(time.RFC3339))
	return b.String()
}

// ParseMessage reads the text form strictly: every field present, in
// order, once; the address a 32-byte base58 public key; times RFC 3339.
// A message that does not render back to exactly the same text is refused,
// so what the server checks is what the person read.
func ParseMessage(s string) (Message, error) {
	var m Message
	if len(s) > MaxMessageBytes {
		return m, fmt.Errorf("the message must be at most %d bytes", MaxMessageBytes)
	}
	lines := strings.Split(s, "\n")
	if len(lines) < 9 {
		return m, errors.New("the message is not a Sign-In-With-Solana message")
	}
	domain, ok := strings.CutSuffix(lines[0], header)
	if !ok || domain == "" || strings.ContainsAny(domain, " \t\r") {
		return m, errors.New(`the first line must be "<domain>` + header + `"`)
	}
	m.Domain, m.Address = domain, lines[1]
	if _, err := PublicKey(m.Address); err != nil {
		return m, err
	}
	if lines[2] != "" {
		return m, errors.New("the address must be followed by an empty line")
	}
	rest := lines[3:]
	if !strings.HasPrefix(rest[0], "URI: ") {
		if len(rest) < 3 || rest[1] != "" {
			return m, errors.New("the statement must be one line followed by an empty line")
		}
		m.Statement, rest = rest[0], rest[2:]
	}
	fields := []struct {
		name string
		dst  *string
	}{{"URI", &m.URI}, {"Version", &m.Version}, {"Chain ID", &m.ChainID}, {"Nonce", &m.Nonce}}
	var issued, expires string
	all := append(fields, struct {
		name string
		dst  *string
	}{"Issued At", &issued}, struct {
		name string
		dst  *string
	}{"Expiration Time", &expires})
	if len(rest) != len(all) {
		return m, errors.New("the message must end with URI, Version, Chain ID, Nonce, Issued At and Expiration Time, one a line")
	}
	for i, f := range all {
		v, ok := strings.CutPrefix(rest[i], f.name+": ")
		if !ok || v == "" {
			return m, fmt.Errorf("line %q: want %q", rest[i], f.name+": …")
		}
		*f.dst = v
	}
	var err error
	if m.IssuedAt, err = time.Parse(time.RFC3339, issued); err != nil {
		return m, fmt.Errorf("the Issued At field must be an RFC 3339 time, got %q", issued)
	}
	if m.ExpirationTime, err = time.Parse(time.RFC3339, expires); err != nil {
		return m, fmt.Errorf("the Expiration Time field must be an RFC 3339 time, got %q", expires)
	}
	if m.String() != s {
		return m, errors.New("the message is not in canonical form (UTC times to the second, no extra spaces or lines)")
	}
	return m, nil
}

// PublicKey decodes a base58 Solana address into an Ed25519 public key.
func PublicKey(address string) (ed25519.PublicKey, error) {
	if len(address) < 32 || len(address) > 44 {
		return nil, fmt.Errorf("the address must be a base58 Solana address (32 to 44 characters), got %d characters", len(address))
	}
	b, err := base58.Decode(address)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, errors.New("the address must be a base58 Solana address (32 bytes)")
	}
	return ed25519.PublicKey(b), nil
}

// VerifySignature checks sig (64 bytes) over the message's text by its
// address.
func VerifySignature(text, address string, sig []byte) error {
	pub, err := PublicKey(address)
	if err != nil {
		return err
	}
	if len(sig) != ed25519.SignatureSize || !ed25519.Verify(pub, []byte(text), sig) {
		return errors.New("the signature is not the address's Ed25519 signature of the message")
	}
	return nil
}
