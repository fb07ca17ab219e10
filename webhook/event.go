package webhook

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/store"
)

// Events lists the event names a webhook can subscribe to.
var Events = []string{store.EventAttestationCreated, store.EventAgentRegistered, store.EventAgentRevoked, store.EventAgentPolicyUpdated}

// knownEvent reports whether name is in Events.
func knownEvent(name string) bool {
	for _, e := range Events {
		if e == name {
			return true
		}
	}
	return false
}

// EventID is the public id of an outbox event.
func EventID(outboxID int64) string { return "evt_" + strconv.FormatInt(outboxID, 10) }

// Body is the exact JSON a delivery of an event carries:
// {"id", "type", "createdAt", "data"}, data being the stored payload
// (compacted). The same event always yields the same bytes.
func Body(e store.OutboxEvent) string {
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
	b.WriteByte('}')
	return b.String()
}

func quote(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// testMessage is the message of every test event.
const testMessage = "A test delivery from attestd: your endpoint received it and can check its signature."

// testPayload is the data of a test event.
func testPayload(webhookID string, at time.Time) []byte {
	b, _ := json.Marshal(WebhookTestData{WebhookID: webhookID, Message: testMessage, SentAt: attestation.At(at)})
	return b
}
