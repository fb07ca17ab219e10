package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Test vectors published by the Standard Webhooks project (its libraries'
// sign tests): secret, message id, timestamp and payload, and the expected
// signature.
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorPayload   = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	// Signatures those tests expect to be refused for the same message.
	vectorWrong1 = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
	vectorWrong2 = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA="
)

func vectorHeader(sig string, ts int64) http.Header {
	h := http.Header{}
	h.Set(HeaderID, vectorMsgID)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(HeaderSignature, sig)
	return h
}

func TestStandardWebhooksVectors(t *testing.T) {
	s, err := NewSigner(vectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Standard(vectorMsgID, vectorTimestamp, []byte(vectorPayload)); got != vectorSignature {
		t.Fatalf("sign: %s, want %s", got, vectorSignature)
	}
	at := time.Unix(vectorTimestamp, 0)
	body := []byte(vectorPayload)
	cases := []struct {
		name string
		h    http.Header
		now  time.Time
		want error
	}{
		{"valid", vectorHeader(vectorSignature, vectorTimestamp), at, nil},
		{"valid among others", vectorHeader(vectorWrong1+" v2,"+vectorSignature[3:]+" "+vectorSignature, vectorTimestamp), at, nil},
		{"invalid signature", vectorHeader(vectorWrong1, vectorTimestamp), at, ErrSignature},
		{"one bit off", vectorHeader(vectorWrong2, vectorTimestamp), at, ErrSignature},
		{"partial signature", vectorHeader("v1,", vectorTimestamp), at, ErrSignature},
		{"unknown version", vectorHeader("v2,"+vectorSignature[3:], vectorTimestamp), at, ErrSignature},
		{"old timestamp", vectorHeader(vectorSignature, vectorTimestamp), at.Add(DefaultTolerance + time.Second), ErrTimestamp},
		{"future timestamp", vectorHeader(vectorSignature, vectorTimestamp), at.Add(-DefaultTolerance - time.Second), ErrTimestamp},
		{"missing id", func() http.Header { h := vectorHeader(vectorSignature, vectorTimestamp); h.Del(HeaderID); return h }(), at, ErrMissingHeaders},
		{"missing timestamp", func() http.Header {
			h := vectorHeader(vectorSignature, vectorTimestamp)
			h.Del(HeaderTimestamp)
			return h
		}(), at, ErrMissingHeaders},
		{"garbage timestamp", func() http.Header {
			h := vectorHeader(vectorSignature, vectorTimestamp)
			h.Set(HeaderTimestamp, "yesterday")
			return h
		}(), at, ErrTimestamp},
	}
	for _, c := range cases {
		if err := Verify(vectorSecret, c.h, body, c.now, 0); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// The secret also verifies without its prefix, as the libraries accept.
	if err := Verify(strings.TrimPrefix(vectorSecret, SecretPrefix), vectorHeader(vectorSignature, vectorTimestamp), body, at, 0); err != nil {
		t.Errorf("secret without prefix: %v", err)
	}
	// A changed body fails.
	if err := Verify(vectorSecret, vectorHeader(vectorSignature, vectorTimestamp), []byte(`{"test": 2432232315}`), at, 0); !errors.Is(err, ErrSignature) {
		t.Errorf("changed body: %v", err)
	}
}

// TestServiceSignatureIndependently checks x-service-signature with a
// separate HMAC computation and, where openssl is installed, with openssl.
func TestServiceSignatureIndependently(t *testing.T) {
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, SecretPrefix) || len(secret) != len(SecretPrefix)+44 {
		t.Fatalf("secret %q", secret)
	}
	body := []byte(`{"id":"evt_1","type":"attestation.created","createdAt":"2026-11-21T10:00:00Z","data":{"pda":"x"}}`)
	s, _ := NewSigner(secret)
	got := s.Service(body)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	if want := "sha256=" + hex.EncodeToString(m.Sum(nil)); got != want {
		t.Fatalf("x-service-signature %s, want %s", got, want)
	}
	if err := VerifyService(secret, got, body); err != nil {
		t.Fatal(err)
	}
	if err := VerifyService(secret, got, append(body, ' ')); !errors.Is(err, ErrSignature) {
		t.Fatalf("changed body: %v", err)
	}
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Log("openssl not installed; checked by the HMAC computation only")
		return
	}
	cmd := exec.Command(openssl, "dgst", "-sha256", "-hmac", secret)
	cmd.Stdin = strings.NewReader(string(body))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("openssl: %v", err)
	}
	fields := strings.Fields(string(out))
	if len(fields) == 0 || "sha256="+fields[len(fields)-1] != got {
		t.Fatalf("openssl says %q, we sent %s", out, got)
	}
}

func TestSetHeaders(t *testing.T) {
	s, _ := NewSigner(vectorSecret)
	h := http.Header{}
	s.Set(h, vectorMsgID, time.Unix(vectorTimestamp, 0), []byte(vectorPayload))
	if h.Get(HeaderSignature) != vectorSignature || h.Get(HeaderTimestamp) != "1614265330" || h.Get(HeaderID) != vectorMsgID {
		t.Fatalf("headers %v", h)
	}
	if err := VerifyService(vectorSecret, h.Get(HeaderService), []byte(vectorPayload)); err != nil {
		t.Fatal(err)
	}
}

func FuzzVerify(f *testing.F) {
	f.Add(vectorMsgID, "1614265330", vectorSignature, vectorPayload)
	f.Add("", "", "v1,", "")
	f.Add("a", "-1", "v1,AAAA v1a,BBBB", "{}")
	f.Fuzz(func(t *testing.T, id, ts, sig, body string) {
		h := http.Header{}
		h.Set(HeaderID, id)
		h.Set(HeaderTimestamp, ts)
		h.Set(HeaderSignature, sig)
		err := Verify(vectorSecret, h, []byte(body), time.Unix(vectorTimestamp, 0), 0)
		if err == nil && !(id == vectorMsgID && ts == "1614265330" && body == vectorPayload) {
			// Only the vector itself (or a collision) verifies.
			n, _ := strconv.ParseInt(ts, 10, 64)
			s, _ := NewSigner(vectorSecret)
			if !strings.Contains(sig, s.Standard(id, n, []byte(body))[3:]) {
				t.Fatalf("verified a forged delivery: %q %q %q", id, ts, sig)
			}
		}
	})
}
