package attestation

import (
	"encoding/json"
	"fmt"

	"github.com/gowebpki/jcs"
)

// LogLeaf is the leaf of the transparency log (docs/log.md) for a: the
// RFC 8785 (JCS) canonical JSON of its pda, agentPda, actionType,
// actionHash, txSignature, slot and timestamp, with the API's field names
// and values (timestamp as the API writes it, slot a number). Anyone who
// holds an attestation's API answer recomputes its leaf with this.
func LogLeaf(a Attestation) ([]byte, error) {
	b, err := json.Marshal(struct {
		PDA         string     `json:"pda"`
		AgentPDA    string     `json:"agentPda"`
		ActionType  ActionType `json:"actionType"`
		ActionHash  string     `json:"actionHash"`
		TxSignature string     `json:"txSignature"`
		Slot        uint64     `json:"slot"`
		Timestamp   Time       `json:"timestamp"`
	}{a.PDA, a.AgentPDA, a.ActionType, a.ActionHash, a.TxSignature, a.Slot, a.Timestamp})
	if err != nil {
		return nil, fmt.Errorf("log leaf of %s: %w", a.PDA, err)
	}
	c, err := jcs.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("log leaf of %s: canonical JSON: %w", a.PDA, err)
	}
	return c, nil
}
