package dataset

import (
	"encoding/hex"
	"fmt"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/translog/logformat"
	"golang.org/x/mod/sumdb/tlog"
)

// Manifest describes one day's file: what it holds, its digest, its
// schema, and the witnessed checkpoint it was cut against with the range
// proof that ties its rows to that checkpoint's root. It is written once,
// after the file, and never changed.
type Manifest struct {
	Format     string `json:"format"`
	Day        string `json:"day"`
	File       string `json:"file"` // the file's name, beside the manifest
	Rows       int64  `json:"rows"`
	FirstIndex int64  `json:"firstIndex"`
	LastIndex  int64  `json:"lastIndex"`
	Bytes      int64  `json:"bytes"`
	SHA256     string `json:"sha256"` // hex
	Schema     string `json:"schema"` // the Parquet schema
	// Checkpoint is the whole signed checkpoint (C2SP tlog-checkpoint)
	// with the witnesses' cosignatures (C2SP tlog-cosignature).
	Checkpoint string           `json:"checkpoint"`
	Witnessed  Witnessed        `json:"witnessed"`
	Proof      Proof            `json:"proof"`
	CutAt      attestation.Time `json:"cutAt"`
}

// Witnessed says how many witnesses cosigned the checkpoint.
type Witnessed struct {
	By     int `json:"by"`
	Of     int `json:"of"`
	Quorum int `json:"quorum"`
}

// Proof is a range proof (logformat.RangeProof): the hashes that, with
// the file's rows, rebuild the checkpoint's root. Hashes are standard
// base64 (encoding/json of []byte).
type Proof struct {
	TreeSize int64    `json:"treeSize"`
	Left     [][]byte `json:"left"`
	Right    [][]byte `json:"right"`
}

// RangeProof is p as logformat takes it.
func (p Proof) RangeProof() (logformat.RangeProof, error) {
	var rp logformat.RangeProof
	conv := func(in [][]byte) ([]tlog.Hash, error) {
		if len(in) > 128 {
			return nil, fmt.Errorf("range proof of %d hashes", len(in))
		}
		out := make([]tlog.Hash, len(in))
		for i, h := range in {
			if len(h) != tlog.HashSize {
				return nil, fmt.Errorf("range proof hash %d: %d bytes", i, len(h))
			}
			out[i] = tlog.Hash(h)
		}
		return out, nil
	}
	var err error
	if rp.Left, err = conv(p.Left); err != nil {
		return rp, err
	}
	rp.Right, err = conv(p.Right)
	return rp, err
}

// ProofOf is rp in a manifest.
func ProofOf(size int64, rp logformat.RangeProof) Proof {
	p := Proof{TreeSize: size, Left: make([][]byte, len(rp.Left)), Right: make([][]byte, len(rp.Right))}
	for i, h := range rp.Left {
		p.Left[i] = append([]byte(nil), h[:]...)
	}
	for i, h := range rp.Right {
		p.Right[i] = append([]byte(nil), h[:]...)
	}
	return p
}

// Index lists every file and says what is still pending.
type Index struct {
	Format    string           `json:"format"`
	Origin    string           `json:"origin"` // the log's origin
	UpdatedAt attestation.Time `json:"updatedAt"`
	// Days are the complete days, oldest first.
	Days []IndexDay `json:"days"`
	// NextIndex is the first leaf no file holds yet.
	NextIndex int64 `json:"nextIndex"`
	// Pending says which day comes next and why it is not out yet.
	Pending []Pending `json:"pending"`
}

// IndexDay is one complete day.
type IndexDay struct {
	Day            string    `json:"day"`
	File           string    `json:"file"`
	Manifest       string    `json:"manifest"`
	Rows           int64     `json:"rows"`
	FirstIndex     int64     `json:"firstIndex"`
	LastIndex      int64     `json:"lastIndex"`
	Bytes          int64     `json:"bytes"`
	SHA256         string    `json:"sha256"`
	CheckpointSize int64     `json:"checkpointSize"`
	Witnessed      Witnessed `json:"witnessed"`
}

// Pending is a day not out yet, and why.
type Pending struct {
	Day    string `json:"day,omitempty"`
	Code   string `json:"code"` // day_open, awaiting_checkpoint, log_held, log_off
	Reason string `json:"reason"`
}

// The pending codes.
const (
	PendingDayOpen    = "day_open"
	PendingCheckpoint = "awaiting_checkpoint"
	PendingLogHeld    = "log_held"
)

// FileName is the name of day's file; ManifestName its manifest's.
func FileName(d Day) string     { return d.String() + ".parquet" }
func ManifestName(d Day) string { return d.String() + ".json" }

// IndexName is the index's name.
const IndexName = "index.json"

// dayOf is the index entry of manifest m.
func dayOf(m Manifest, d Day) IndexDay {
	return IndexDay{Day: m.Day, File: FileName(d), Manifest: ManifestName(d), Rows: m.Rows, FirstIndex: m.FirstIndex,
		LastIndex: m.LastIndex, Bytes: m.Bytes, SHA256: m.SHA256, CheckpointSize: m.Proof.TreeSize, Witnessed: m.Witnessed}
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }
