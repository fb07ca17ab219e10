package logreport

import "github.com/attestd/attestd/attestation"

// Health is the log's part of /health.
type Health struct {
	Origin string `json:"origin"`
	// Size is the served checkpoint's (0: none yet); Newest the newest
	// signed, witnessed or not.
	Size   int64 `json:"size"`
	Newest int64 `json:"newest"`
	// Quorum of the Witnesses must cosign a checkpoint for it to be served
	// (0: none configured); WitnessedBy names those whose cosignature the
	// served checkpoint carries.
	Quorum      int       `json:"quorum"`
	WitnessedBy []string  `json:"witnessedBy"`
	Witnesses   []Witness `json:"witnesses"`
}

// Witness is where one witness stands.
type Witness struct {
	Name string `json:"name"`
	// Key is its verifier key (name+keyid+base64, C2SP tlog-cosignature),
	// as configured: what the explorer checks cosignatures with.
	Key   string `json:"key"`
	Size  int64  `json:"size"`            // the size it last cosigned
	Error string `json:"error,omitempty"` // its last failure, while it fails
}

// Status is the log's latest signed checkpoint, as the overview
// (GET /stats/overview) reports it.
type Status struct {
	Origin       string           `json:"origin"`
	Size         int64            `json:"size"`
	CheckpointAt attestation.Time `json:"checkpointAt"`
}
