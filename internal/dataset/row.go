package dataset

import (
	"fmt"
	"time"

	"github.com/attestd/attestd/attestation"
)

// Row is one row of a day's file: a leaf of the log (its index and the
// seven fields attestation.LogLeaf commits to, as the API writes them)
// and three fields of the attestation the leaf does not commit to but a
// reader wants beside it (docs/dataset.md says why each is there).
type Row struct {
	LogIndex    int64     `parquet:"log_index,delta"`
	PDA         string    `parquet:"pda"`
	AgentPDA    string    `parquet:"agent_pda,dict"`
	ActionType  string    `parquet:"action_type,dict"`
	ActionHash  string    `parquet:"action_hash"`
	TxSignature string    `parquet:"tx_signature"`
	Slot        int64     `parquet:"slot,delta"`
	Timestamp   time.Time `parquet:"timestamp,timestamp(millisecond:utc),delta"`
	// Beside the leaf.
	AgentID        string `parquet:"agent_id,dict"`
	PrivacyMode    bool   `parquet:"privacy_mode"`
	AgentSignature string `parquet:"agent_signature"`
}

// RowOf is the row of the leaf at index idx for attestation a.
func RowOf(idx int64, a attestation.Attestation) Row {
	name, _ := a.ActionType.MarshalText() // an invalid type writes "": the leaf check then fails loudly
	return Row{LogIndex: idx, PDA: a.PDA, AgentPDA: a.AgentPDA, ActionType: string(name), ActionHash: a.ActionHash,
		TxSignature: a.TxSignature, Slot: int64(a.Slot), Timestamp: a.Timestamp.UTC(),
		AgentID: a.AgentID, PrivacyMode: a.PrivacyMode, AgentSignature: a.AgentSignature}
}

// Leaf recomputes the log leaf the row stands for (attestation.LogLeaf of
// its seven leaf fields).
func (r Row) Leaf() ([]byte, error) {
	typ, err := attestation.ParseActionType(r.ActionType)
	if err != nil {
		return nil, fmt.Errorf("row %d: %w", r.LogIndex, err)
	}
	if r.Slot < 0 {
		return nil, fmt.Errorf("row %d: negative slot %d", r.LogIndex, r.Slot)
	}
	return attestation.LogLeaf(attestation.Attestation{PDA: r.PDA, AgentPDA: r.AgentPDA, ActionType: typ,
		ActionHash: r.ActionHash, TxSignature: r.TxSignature, Slot: uint64(r.Slot), Timestamp: attestation.At(r.Timestamp)})
}

// Day is a UTC day, written 2006-01-02.
type Day struct{ time.Time }

// DayLayout is how days are written in file names and documents.
const DayLayout = "2006-01-02"

// DayOf is the UTC day of t.
func DayOf(t time.Time) Day {
	y, m, d := t.UTC().Date()
	return Day{time.Date(y, m, d, 0, 0, 0, 0, time.UTC)}
}

// ParseDay reads a day written 2006-01-02 (and nothing else: the name of
// a file is never a path).
func ParseDay(s string) (Day, error) {
	if len(s) != len(DayLayout) {
		return Day{}, fmt.Errorf("day %q: want YYYY-MM-DD", s)
	}
	t, err := time.Parse(DayLayout, s)
	if err != nil {
		return Day{}, fmt.Errorf("day %q: want YYYY-MM-DD", s)
	}
	return Day{t}, nil
}

func (d Day) String() string { return d.Format(DayLayout) }

// Next is the start of the following day.
func (d Day) Next() time.Time { return d.AddDate(0, 0, 1) }

// IsZero reports whether d is no day.
func (d Day) IsZero() bool { return d.Time.IsZero() }
