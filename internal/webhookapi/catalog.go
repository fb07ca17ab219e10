package webhookapi

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/webhook"
)

// The data of each event type, as the code writes it: attestation.created
// carries an attestation.Attestation (store.AttestationRecord.API); the
// others these types. The catalog's JSON Schemas are generated from them,
// and a test checks that the write path's payloads decode into them
// exactly and that openapi.yaml holds the same schemas.

// AgentRegisteredData is the data of agent.registered.
type AgentRegisteredData struct {
	PDA          string           `json:"pda" doc:"The agent's account (pda)." schema:"address"`
	Operator     string           `json:"operator" doc:"The operator's wallet." schema:"address"`
	AgentID      string           `json:"agentId" doc:"The agent's id key." schema:"address"`
	PolicyRoot   string           `json:"policyRoot" doc:"The policy root, 64 hexadecimal digits." schema:"hash"`
	RegisteredAt attestation.Time `json:"registeredAt"`
	TxSignature  string           `json:"txSignature" schema:"signature"`
	Slot         uint64           `json:"slot"`
}

// AgentRevokedData is the data of agent.revoked.
type AgentRevokedData struct {
	PDA         string           `json:"pda" doc:"The agent's account (pda)." schema:"address"`
	RevokedAt   attestation.Time `json:"revokedAt"`
	TxSignature string           `json:"txSignature" schema:"signature"`
	Slot        uint64           `json:"slot"`
}

// AgentPolicyUpdatedData is the data of agent.policy_updated.
type AgentPolicyUpdatedData struct {
	PDA         string           `json:"pda" doc:"The agent's account (pda)." schema:"address"`
	PolicyRoot  string           `json:"policyRoot" doc:"The new policy root, 64 hexadecimal digits." schema:"hash"`
	UpdatedAt   attestation.Time `json:"updatedAt"`
	TxSignature string           `json:"txSignature" schema:"signature"`
	Slot        uint64           `json:"slot"`
}

// WebhookTestData is the data of webhook.test.
type WebhookTestData struct {
	WebhookID string           `json:"webhookId" schema:"webhook"`
	Message   string           `json:"message"`
	SentAt    attestation.Time `json:"sentAt"`
}

// WebhookDisabledData is the data of webhook.disabled, sent to an
// account's other webhooks when the service deactivates one.
type WebhookDisabledData struct {
	WebhookID  string           `json:"webhookId" doc:"The webhook deactivated." schema:"webhook"`
	URL        string           `json:"url"`
	Reason     string           `json:"reason" doc:"Why: the receiver answered 410 Gone, or every delivery failed too long."`
	DisabledAt attestation.Time `json:"disabledAt"`
}

// EventType is one entry of the event catalog.
type EventType struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Subscribable: a webhook can list it in events; the others are sent
	// on their own (webhook.test on request, webhook.disabled to the
	// account's other webhooks).
	Subscribable bool `json:"subscribable"`
	// SchemaName names the schema in openapi.yaml's components.
	SchemaName string `json:"schemaName"`
	// Schema is the JSON Schema of the whole delivery body.
	Schema json.RawMessage `json:"schema"`
	// Example is a delivery body of the type.
	Example json.RawMessage `json:"example"`
}

// exampleOrigin is the public origin of the examples.
var exampleOrigin = config.Origin{Scheme: "https", Host: "attestd.example.com"}

var exampleAt = attestation.At(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))

// catalogSource lists the event types with their data types and examples.
var catalogSource = []struct {
	name, schema, description string
	subscribable              bool
	data                      any
}{
	{store.EventAttestationCreated, "AttestationCreatedEvent", "An attestation was indexed (data: the attestation, as GET /attestations/{id} shows it).", true,
		attestation.Attestation{PDA: "7Np41oeYqPefeNQEHSv1UDhYrehxin3NStELsSKCT4K2", AgentPDA: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin",
			AgentID: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", ActionType: attestation.ActionType(0), ActionHash: strings.Repeat("ab", 32),
			TxSignature: exampleSig, Slot: 312456789, Timestamp: exampleAt, AgentSignature: exampleSig, Commitment: attestation.Finalized}},
	{store.EventAgentRegistered, "AgentRegisteredEvent", "An agent was registered.", true,
		AgentRegisteredData{PDA: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin", Operator: "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T",
			AgentID: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", PolicyRoot: strings.Repeat("cd", 32), RegisteredAt: exampleAt,
			TxSignature: exampleSig, Slot: 312456700}},
	{store.EventAgentRevoked, "AgentRevokedEvent", "An agent was revoked.", true,
		AgentRevokedData{PDA: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin", RevokedAt: exampleAt, TxSignature: exampleSig, Slot: 312456800}},
	{store.EventAgentPolicyUpdated, "AgentPolicyUpdatedEvent", "An agent's policy root changed.", true,
		AgentPolicyUpdatedData{PDA: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin", PolicyRoot: strings.Repeat("ef", 32), UpdatedAt: exampleAt,
			TxSignature: exampleSig, Slot: 312456750}},
	{store.EventWebhookTest, "WebhookTestEvent", "A test delivery asked for with POST /webhooks/{id}/test.", false,
		WebhookTestData{WebhookID: "wh_0123456789abcdef01234567", Message: testMessage, SentAt: exampleAt}},
	{store.EventWebhookDisabled, "WebhookDisabledEvent", "The service deactivated another webhook of the account (its receiver answered 410 Gone, or its deliveries failed too long).", false,
		WebhookDisabledData{WebhookID: "wh_0123456789abcdef01234567", URL: "https://example.com/hooks/attestd",
			Reason: goneReason, DisabledAt: exampleAt}},
}

const exampleSig = "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW"

// goneReason is the disabled reason of a webhook whose receiver answered 410.
const goneReason = "the receiver answered 410 Gone, asking for no more deliveries"

// Catalog is the event catalog GET /webhooks/event-types serves.
var Catalog = buildCatalog()

// catalogJSON and catalogETag are its answer and strong tag.
var catalogJSON, catalogETag = func() ([]byte, string) {
	b, err := json.Marshal(struct {
		Data []EventType `json:"data"`
	}{Catalog})
	if err != nil {
		panic(err)
	}
	b = append(b, '\n') // as every JSON answer (httpapi.Marshal)
	sum := sha256.Sum256(b)
	return b, `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}()

func buildCatalog() []EventType {
	out := make([]EventType, 0, len(catalogSource))
	for _, c := range catalogSource {
		s := EventSchema(c.name)
		sb, err := json.Marshal(s)
		if err != nil {
			panic(err)
		}
		data, err := json.Marshal(c.data)
		if err != nil {
			panic(err)
		}
		ex, err := json.Marshal(json.RawMessage(webhook.Body(store.OutboxEvent{ID: 1234, Type: c.name, CreatedAt: exampleAt.Time, Payload: data}, exampleOrigin)))
		if err != nil {
			panic(err)
		}
		out = append(out, EventType{Name: c.name, Description: c.description, Subscribable: c.subscribable, SchemaName: c.schema,
			Schema: sb, Example: ex})
	}
	return out
}

// EventSchema is the JSON Schema (the OpenAPI 3.0 subset) of the delivery
// body of event type name, nil for an unknown one.
func EventSchema(name string) map[string]any {
	for _, c := range catalogSource {
		if c.name != name {
			continue
		}
		props := map[string]any{
			"id":        map[string]any{"type": "string", "pattern": "^evt_[0-9]+$", "description": "The event's id, the same for every webhook that receives it."},
			"type":      map[string]any{"type": "string", "enum": []string{c.name}},
			"createdAt": timeSchema(),
			"data":      schemaOf(reflect.TypeOf(c.data)),
		}
		required := []string{"id", "type", "createdAt", "data"}
		if name == store.EventAttestationCreated {
			l := schemaOf(reflect.TypeOf(webhook.LogLink{}))
			l["description"] = "Where the attestation's offline proof (a C2SP tlog-proof) is served, and its state in the log when the event was written. A field added to the SPEC's delivery shape: receivers that do not know it ignore it."
			l["properties"].(map[string]any)["state"].(map[string]any)["enum"] = []string{webhook.LogAwaitingAppend, webhook.LogAwaitingFinalization}
			props["log"] = l
			required = append(required, "log")
		}
		return map[string]any{
			"type":                 "object",
			"description":          c.description,
			"required":             required,
			"additionalProperties": false,
			"properties":           props,
		}
	}
	return nil
}

// CatalogSchemas maps each schema name of the catalog to its schema.
func CatalogSchemas() map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, c := range catalogSource {
		out[c.schema] = EventSchema(c.name)
	}
	return out
}

func timeSchema() map[string]any {
	return map[string]any{"type": "string", "format": "date-time", "pattern": `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$`}
}

var (
	timeType       = reflect.TypeOf(attestation.Time{})
	actionType     = reflect.TypeOf(attestation.ActionType(0))
	commitmentType = reflect.TypeOf(attestation.Commitment(""))
)

// schemaOf generates the schema of a data type: its exported fields by
// their json names, all required, none other allowed; the schema tag
// names a string's form, the doc tag describes a field.
func schemaOf(t reflect.Type) map[string]any {
	switch t {
	case timeType:
		return timeSchema()
	case actionType:
		return map[string]any{"type": "string", "enum": attestation.ActionTypeNames()}
	case commitmentType:
		return map[string]any{"type": "string", "enum": []string{string(attestation.Confirmed), string(attestation.Finalized)}}
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Pointer:
		s := schemaOf(t.Elem())
		s["nullable"] = true
		return s
	case reflect.Slice:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem())}
	case reflect.Struct:
		props := map[string]any{}
		var required []string
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" || name == "" {
				continue
			}
			s := schemaOf(f.Type)
			if form, ok := stringForms[f.Tag.Get("schema")]; ok {
				for k, v := range form {
					s[k] = v
				}
			} else if tag := f.Tag.Get("schema"); tag != "" {
				panic(fmt.Sprintf("unknown schema tag %q", tag))
			}
			if d := f.Tag.Get("doc"); d != "" {
				s["description"] = d
			}
			props[name] = s
			required = append(required, name)
		}
		return map[string]any{"type": "object", "required": required, "additionalProperties": false, "properties": props}
	}
	panic(fmt.Sprintf("no schema for %s", t))
}

// stringForms are the patterns of the schema tag's names.
var stringForms = map[string]map[string]any{
	"address":   {"pattern": "^[1-9A-HJ-NP-Za-km-z]{32,44}$"},
	"signature": {"pattern": "^[1-9A-HJ-NP-Za-km-z]{64,88}$"},
	"hash":      {"pattern": "^[0-9a-f]{64}$"},
	"webhook":   {"pattern": "^wh_[0-9a-f]{24}$"},
}
