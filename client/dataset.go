package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// DatasetPath is where a node serves the daily dataset: at the origin's
// root, not under /api/v1 (docs/dataset.md).
const DatasetPath = "/dataset/"

// The pending codes of a DatasetIndex.
const (
	// DatasetDayOpen: the day is not over in the log yet.
	DatasetDayOpen = "day_open"
	// DatasetAwaitingCheckpoint: the day is over, but no checkpoint
	// covering its last leaf is cosigned by the witness quorum yet.
	DatasetAwaitingCheckpoint = "awaiting_checkpoint"
	// DatasetNotStarted: the producer has not written the index yet.
	DatasetNotStarted = "not_started"
)

// ErrDatasetOff: the node serves no dataset (no bucket configured): its
// 503 UNAVAILABLE names ATTESTD_DATASET_BUCKET. DatasetIndex wraps it with
// the *APIError.
var ErrDatasetOff = errors.New("the dataset is off on this node")

// DatasetIndex is GET /dataset/index.json: every day's Parquet file,
// oldest first, and what is still pending.
type DatasetIndex struct {
	Format    string `json:"format"`
	Origin    string `json:"origin"` // the transparency log's origin
	UpdatedAt Time   `json:"updatedAt"`
	// Days are the complete days, oldest first; a day without any
	// attestation has no file.
	Days []DatasetDay `json:"days"`
	// NextIndex is the first leaf of the log no file holds yet.
	NextIndex int64 `json:"nextIndex"`
	// Pending says which day comes next and why it is not out yet.
	Pending []DatasetPending `json:"pending"`
}

// DatasetDay is one day's file in a DatasetIndex.
type DatasetDay struct {
	Day        string `json:"day"`      // YYYY-MM-DD (UTC)
	File       string `json:"file"`     // the file's name beside the index: DatasetFileURL(Day)
	Manifest   string `json:"manifest"` // its manifest's: DatasetManifestURL(Day)
	Rows       int64  `json:"rows"`
	FirstIndex int64  `json:"firstIndex"` // the log index of the first row
	LastIndex  int64  `json:"lastIndex"`
	Bytes      int64  `json:"bytes"`
	SHA256     string `json:"sha256"` // of the file, hex
	// CheckpointSize is the size of the checkpoint the file was cut against.
	CheckpointSize int64            `json:"checkpointSize"`
	Witnessed      DatasetWitnessed `json:"witnessed"`
}

// DatasetWitnessed says how many witnesses cosigned a file's checkpoint
// (By of Of; Quorum were required).
type DatasetWitnessed struct {
	By     int `json:"by"`
	Of     int `json:"of"`
	Quorum int `json:"quorum"`
}

// DatasetPending is a day not out yet, and why (Code: DatasetDayOpen,
// DatasetAwaitingCheckpoint, DatasetNotStarted).
type DatasetPending struct {
	Day    string `json:"day,omitempty"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// DatasetIndex calls GET /dataset/index.json at the service's root. On a
// node without the dataset the service answers 503 UNAVAILABLE: the error
// then wraps both ErrDatasetOff and the *APIError.
func (c *Client) DatasetIndex(ctx context.Context) (*DatasetIndex, error) {
	var idx DatasetIndex
	r := request{method: http.MethodGet, path: DatasetPath + "index.json", site: true}
	if err := c.do(ctx, r, &idx); err != nil {
		if e, ok := AsAPIError(err); ok && e.Status == http.StatusServiceUnavailable && strings.Contains(e.Message, "ATTESTD_DATASET_BUCKET") {
			return nil, fmt.Errorf("%w: %w", ErrDatasetOff, err)
		}
		return nil, err
	}
	if idx.Days == nil {
		idx.Days = []DatasetDay{}
	}
	if idx.Pending == nil {
		idx.Pending = []DatasetPending{}
	}
	return &idx, nil
}

// DatasetIndexURL is the absolute URL of the dataset's index.
func (c *Client) DatasetIndexURL() string { return c.site + DatasetPath + "index.json" }

// DatasetFileURL is the absolute URL of day's Parquet file (day:
// YYYY-MM-DD, as in DatasetDay.Day). The file supports range requests.
func (c *Client) DatasetFileURL(day string) string {
	return c.site + DatasetPath + url.PathEscape(day) + ".parquet"
}

// DatasetManifestURL is the absolute URL of day's manifest (its digest,
// its witnessed checkpoint and the range proof `attestd verify --dataset`
// checks the file with).
func (c *Client) DatasetManifestURL(day string) string {
	return c.site + DatasetPath + url.PathEscape(day) + ".json"
}
