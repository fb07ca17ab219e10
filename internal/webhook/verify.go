package webhook

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/pause"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/webhook/signature"
)

// VerifyEvent is the type of the endpoint verification request, sent to a
// new webhook URL (created, or changed by PATCH, or on POST /verify): a
// POST signed exactly as deliveries are, whose body is {"id", "type":
// "webhook.verify", "createdAt", "data": {"webhookId", "challenge"}}. It is
// an opt-in proof, never a precondition of delivery: every webhook gets its
// events, and a receiver that answers with a 2xx and the JSON body
// {"challenge": "<the same>"} moves its webhook from the small per-host cap
// of unverified endpoints to the verified one.
const VerifyEvent = "webhook.verify"

// Verification constants.
const (
	// maxChallengeAnswer bounds the answer read: a longer one fails.
	maxChallengeAnswer = 4096
	// verifySlots is how many verification requests a worker has in flight.
	verifySlots = 8
)

// ChallengeAnswer is what a receiver answers a verification request with:
// when body is a webhook.verify request, the JSON {"challenge": ...} to
// send back with a 2xx, and true; otherwise nil, false. Receivers should
// check the request's signature first, as for any delivery.
func ChallengeAnswer(body []byte) ([]byte, bool) {
	var req struct {
		Type string `json:"type"`
		Data struct {
			Challenge string `json:"challenge"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &req) != nil || req.Type != VerifyEvent || req.Data.Challenge == "" {
		return nil, false
	}
	answer, err := json.Marshal(struct {
		Challenge string `json:"challenge"`
	}{req.Data.Challenge})
	return answer, err == nil
}

// verifyRequest is the body of a verification request.
func verifyRequest(msgID, webhookID, challenge string, at time.Time) []byte {
	b, _ := json.Marshal(struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		CreatedAt string `json:"createdAt"`
		Data      any    `json:"data"`
	}{msgID, VerifyEvent, attestation.At(at).String(), struct {
		WebhookID string `json:"webhookId"`
		Challenge string `json:"challenge"`
	}{webhookID, challenge}})
	return b
}

// newChallenge is 32 random bytes, base64url; newMsgID a webhook-id.
func newChallenge() (string, error) {
	var b [32]byte
	if _, err := crand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

func newMsgID() (string, error) {
	var b [16]byte
	if _, err := crand.Read(b[:]); err != nil {
		return "", err
	}
	return "msg_" + hex.EncodeToString(b[:]), nil
}

// verifyLoop sends the due verification requests: it claims as many as it
// has free slots every poll interval and sends each under the unverified
// endpoints' per-host cap, through the same guarded client as deliveries.
func (w *Worker) verifyLoop(ctx, sendCtx context.Context) {
	slots := make(chan struct{}, verifySlots)
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(w.cfg.PollInterval)
	defer t.Stop()
	lease := 2*w.cfg.Timeout + 5*time.Second
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		free := cap(slots) - len(slots)
		if free == 0 {
			continue
		}
		jobs, err := w.st.ClaimVerifications(ctx, free, lease)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("claiming endpoint verifications failed", "err", err)
			}
			continue
		}
		for _, j := range jobs {
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-slots; wg.Done() }()
				w.verifyOne(sendCtx, j)
			}()
		}
	}
}

// verifyOne makes one verification attempt of j and records it. The
// request takes a turn at the unverified endpoints' cap of its host, as
// their deliveries do: when the turn is later, the attempt is postponed to
// it (and made on it, without asking the cap again).
func (w *Worker) verifyOne(ctx context.Context, j store.VerifyJob) {
	o := store.VerifyOutcome{WebhookID: j.WebhookID, Round: j.Round}
	var result verificationResult
	to := w.dests.of(ctx, hostOf(j.URL)).key
	wait := time.Duration(0)
	onIt, early := onTurn(derefTime(j.Turn), w.now())
	if onIt || early {
		wait = max(j.Turn.Sub(w.now()), 0) // back before its turn: wait for it
	} else {
		wait, _ = w.unverifiedCap.turn(ctx, to, true)
	}
	if wait > hostRetry && !onIt {
		next := w.now().Add(wait)
		o.Postpone, o.Next, result = true, &next, verificationPostponed
	} else if wait > 0 && !pause.For(ctx, wait) {
		return // stopping: the claim's lease runs out and it is tried again
	}
	if !o.Postpone {
		why, answered := w.challenge(ctx, j)
		switch {
		case why == "":
			o.Verified, result = true, verificationVerified
		case answered:
			// The receiver answered, not with the challenge: it does not
			// take part (a receiver written to SPEC.md answers 200 and
			// nothing else), so no further request is sent.
			o.Error, result = why, verificationUnverified
		case j.Attempts < len(w.cfg.VerifySchedule):
			wait := w.cfg.VerifySchedule[j.Attempts]
			next := w.now().Add(wait + time.Duration(rand.Int64N(int64(wait/10)+1)))
			o.Error, o.Next, result = why, &next, verificationRetrying
		default:
			o.Error, result = why, verificationUnverified
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	recorded, err := w.st.RecordVerification(rctx, o)
	if err != nil {
		w.log.Warn("recording an endpoint verification failed; it is tried again", "webhook", j.WebhookID, "err", err)
		return
	}
	w.m.verifications.WithLabelValues(string(result)).Inc()
	if !recorded || o.Postpone {
		return
	}
	// Every worker sends its deliveries under the cap of the new state now.
	w.hooks.forget(j.WebhookID)
	if err := w.q.NotifyChanged(rctx, j.WebhookID); err != nil {
		w.log.Debug("could not tell the workers a verification ended; they notice within 5 s", "webhook", j.WebhookID, "err", err)
	}
	switch result {
	case verificationVerified:
		w.log.Info("webhook endpoint verified; its deliveries share the verified per-host cap", "webhook", j.WebhookID,
			"attempt", j.Attempts+1, "host_rate", w.verifiedCap.String())
	case verificationUnverified:
		w.log.Info("webhook endpoint not verified; its deliveries go on under the unverified per-host cap", "webhook", j.WebhookID,
			"attempts", j.Attempts+1, "why", o.Error, "host_rate", w.unverifiedCap.String())
	default:
		w.log.Info("webhook endpoint verification got no answer; trying again", "webhook", j.WebhookID, "attempt", j.Attempts+1,
			"why", o.Error, "next", o.Next)
	}
}

func derefTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// challenge sends j's verification request and checks the answer; it
// returns why it failed ("": verified) and whether the receiver answered
// at all: a status other than 408, 429 and 5xx is an answer (the receiver
// is up and chose its reply), so the round ends there; no answer, or one
// of those, is tried again on the schedule.
func (w *Worker) challenge(ctx context.Context, j store.VerifyJob) (why string, answered bool) {
	secret, err := w.cfg.Keys.Open(j.SecretSealed, j.SecretKeyID, []byte(j.WebhookID))
	if err != nil {
		return "cannot open the webhook's secret", false
	}
	signer, err := signature.NewSigner(string(secret))
	if err != nil {
		return "invalid webhook secret", false
	}
	challenge, err := newChallenge()
	if err != nil {
		return "no randomness for the challenge", false
	}
	id, err := newMsgID()
	if err != nil {
		return "no randomness for the message id", false
	}
	body := verifyRequest(id, j.WebhookID, challenge, w.now())
	ctx, cancel := context.WithTimeout(ctx, 2*w.cfg.Timeout+time.Second)
	defer cancel()
	resp, why := w.post(ctx, j.URL, signing{signer: signer, id: id, body: body})
	if resp == nil {
		return why, false
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxChallengeAnswer+1))
	if st := resp.StatusCode; st < 200 || st > 299 {
		answered := st != http.StatusRequestTimeout && st != http.StatusTooManyRequests && st < 500
		return fmt.Sprintf("the receiver answered %d %s, not 2xx with the challenge", st, http.StatusText(st)), answered
	}
	if err != nil {
		return cleanText("reading the answer: "+err.Error(), maxErrorLen), false
	}
	if len(answer) > maxChallengeAnswer {
		return fmt.Sprintf("the answer is longer than %d bytes", maxChallengeAnswer), true
	}
	var got struct {
		Challenge *string `json:"challenge"`
	}
	if json.Unmarshal(bytes.TrimSpace(answer), &got) != nil || got.Challenge == nil {
		return `the receiver answered 2xx without the JSON {"challenge": "<the request's data.challenge>"}`, true
	}
	if subtle.ConstantTimeCompare([]byte(*got.Challenge), []byte(challenge)) != 1 {
		return "the answer's challenge is not the one sent", true
	}
	return "", true
}
