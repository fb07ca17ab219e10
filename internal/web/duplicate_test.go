package web_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestSignInWithAKeyTwiceIsRefused: {"message": m, "signature": x,
// "signature": s} signed in with the last signature. It is 400 naming the
// member; the nonce is not spent, so the same message signs in after.
func TestSignInWithAKeyTwiceIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	w := newWallet(t)
	m := h.message(w, h.nonce(t)).String()
	sig := w.sign(m)
	body := `{"message":` + strconv.Quote(m) + `,"signature":"AAAA","signature":"` + sig + `"}`
	r := h.node.Do(t, http.MethodPost, "/auth/signin", []byte(body), map[string]string{"Content-Type": "application/json"})
	if r.Status != http.StatusBadRequest || r.ErrorCode() != "INVALID_PARAM" || !strings.Contains(r.ErrorMessage(), `"signature" appears twice`) ||
		r.Header.Get("Set-Cookie") != "" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r := h.signIn(t, m, sig); r.Status != http.StatusOK {
		t.Fatalf("the same message, sent plainly: %d %s", r.Status, r.Body)
	}
}
