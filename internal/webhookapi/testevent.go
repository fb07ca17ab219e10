package webhookapi

import (
	"encoding/json"
	"time"

	"github.com/attestd/attestd/attestation"
)

// testMessage is the message of every test event.
const testMessage = "A test delivery from attestd: your endpoint received it and can check its signature."

// testPayload is the data of a test event.
func testPayload(webhookID string, at time.Time) []byte {
	b, _ := json.Marshal(WebhookTestData{WebhookID: webhookID, Message: testMessage, SentAt: attestation.At(at)})
	return b
}
