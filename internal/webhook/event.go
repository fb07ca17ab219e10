package webhook

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/store"
)

// Events lists the event names a webhook can subscribe to.
var Events = []string{store.EventAttestationCreated, store.EventAgentRegistered, store.EventAgentRevoked, store.EventAgentPolicyUpdated}

// EventID is the public id of an outbox event.
func EventID(outboxID int64) string { return "evt_" + strconv.FormatInt(outboxID, 10) }

// Body is the exact JSON a delivery of an event carries:
// {"id", "type", "createdAt", "data"}, data being the stored payload
// (compacted), and for attestation.created a "log" member (LogLink): the
// link to the attestation's offline proof. origin is the node's public
// origin (the link is absolute; zero: a path). The same event always
// yields the same bytes.
func Body(e store.OutboxEvent, origin config.Origin) string {
	var data bytes.Buffer
	if err := json.Compact(&data, e.Payload); err != nil {
		data.Reset()
		data.WriteString("null")
	}
	var b bytes.Buffer
	b.Grow(64 + data.Len())
	b.WriteString(`{"id":`)
	b.Write(quote(EventID(e.ID)))
	b.WriteString(`,"type":`)
	b.Write(quote(e.Type))
	b.WriteString(`,"createdAt":`)
	b.Write(quote(attestation.At(e.CreatedAt).String()))
	b.WriteString(`,"data":`)
	b.Write(data.Bytes())
	if l, ok := logLinkOf(e, origin); ok {
		b.WriteString(`,"log":`)
		lb, _ := json.Marshal(l)
		b.Write(lb)
	}
	b.WriteByte('}')
	return b.String()
}

// The states of an attestation.created delivery's log member, as they were
// when the event was written (the same on every attempt): the event is
// written with the attestation, before the appender gives it a leaf.
const (
	// LogAwaitingAppend: the attestation was finalized; its leaf is
	// appended and covered by a cosigned checkpoint within seconds, and
	// the proof link answers 409 ATTESTATION_NOT_LOGGED until then.
	LogAwaitingAppend = "awaiting_append"
	// LogAwaitingFinalization: the attestation was confirmed; it enters
	// the log once finalized (the link answers 409
	// ATTESTATION_NOT_FINALIZED until then), never if a fork drops it
	// (then 404).
	LogAwaitingFinalization = "awaiting_finalization"
)

// LogLink is the log member of an attestation.created delivery: where the
// attestation's C2SP tlog-proof is served, and its state at the event. A
// link, not the proof: the event is written before the leaf exists, every
// attempt of a delivery carries the same bytes, and a proof is against a
// checkpoint that moves every few seconds.
type LogLink struct {
	State string `json:"state" doc:"The log's state of the attestation when the event was written, the same on every attempt: awaiting_append (finalized; appended within seconds, then the proof answers) or awaiting_finalization (confirmed; logged once finalized)."`
	Proof string `json:"proof" doc:"The URL of the attestation's offline proof, a C2SP tlog-proof (GET /attestations/{id}/proof?format=tlog-proof): 409 until the leaf is appended and covered by a checkpoint, then the proof to keep beside the delivery."`
}

// logLinkOf is the log member of e, if it has one: an attestation.created
// whose payload names a well-formed pda and commitment.
func logLinkOf(e store.OutboxEvent, origin config.Origin) (LogLink, bool) {
	if e.Type != store.EventAttestationCreated {
		return LogLink{}, false
	}
	var a struct {
		PDA        string                 `json:"pda"`
		Commitment attestation.Commitment `json:"commitment"`
	}
	if json.Unmarshal(e.Payload, &a) != nil || !base58Address(a.PDA) {
		return LogLink{}, false
	}
	var l LogLink
	switch a.Commitment {
	case attestation.Finalized:
		l.State = LogAwaitingAppend
	case attestation.Confirmed:
		l.State = LogAwaitingFinalization
	default:
		return LogLink{}, false
	}
	path := "/api/v1/attestations/" + a.PDA + "/proof?format=tlog-proof"
	if origin.IsZero() {
		l.Proof = path
	} else {
		l.Proof = origin.URL(path)
	}
	return l, true
}

// base58Address reports whether s has the form of a Solana address (so
// it is safe in a URL path as is).
func base58Address(s string) bool {
	if len(s) < 32 || len(s) > 44 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '1' && c <= '9' || c >= 'A' && c <= 'H' || c >= 'J' && c <= 'N' || c >= 'P' && c <= 'Z' || c >= 'a' && c <= 'k' || c >= 'm' && c <= 'z') {
			return false
		}
	}
	return true
}

func quote(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}
