package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/attestd/attestd/client"
	"github.com/google/jsonschema-go/jsonschema"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of list_datasets' limit.
const (
	defaultDatasetDays = 31
	maxDatasetDays     = 366
)

// dayPattern is a UTC day as the dataset names them.
const dayPattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}$`

// DatasetsInput selects the days list_datasets lists.
type DatasetsInput struct {
	Since string `json:"since,omitempty" jsonschema:"only the days on or after this UTC day, YYYY-MM-DD (e.g. 2026-11-01); default: no lower bound"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many days, the most recent of those selected, 1 to 366 (default 31)"`
}

// DatasetsOutput is list_datasets' answer.
type DatasetsOutput struct {
	IndexURL string `json:"indexUrl" jsonschema:"the absolute URL of the whole index (every day, oldest first), to fetch for more than limit days"`
	// Days are the selected days, oldest first.
	Days      []DatasetFile           `json:"days" jsonschema:"the selected days' files, oldest first; a day without any attestation has no file"`
	TotalDays int                     `json:"totalDays" jsonschema:"how many daily files the node serves in all (not only those listed here)"`
	TotalRows int64                   `json:"totalRows" jsonschema:"how many attestations those files hold in all (not only those listed here)"`
	NextIndex int64                   `json:"nextIndex" jsonschema:"the first log index no file holds yet: later attestations are only in the API for now"`
	Pending   []client.DatasetPending `json:"pending" jsonschema:"the next day and why it is not out yet: code day_open (the day is not over in the log), awaiting_checkpoint (over, but no checkpoint covering it is cosigned by the witness quorum yet) or not_started (the producer has written nothing yet), with a reason"`
}

// DatasetFile is one day's file in list_datasets' answer.
type DatasetFile struct {
	Day         string `json:"day" jsonschema:"the UTC day, YYYY-MM-DD"`
	Rows        int64  `json:"rows" jsonschema:"attestations in the file, one row each"`
	Bytes       int64  `json:"bytes" jsonschema:"the file's size"`
	SHA256      string `json:"sha256" jsonschema:"the SHA-256 of the file, hex: compare it after downloading (and skip a day whose digest you already hold)"`
	FileURL     string `json:"fileUrl" jsonschema:"the absolute URL of the Parquet file (GET; Range requests are served)"`
	ManifestURL string `json:"manifestUrl" jsonschema:"the absolute URL of the file's manifest: digest, schema, witnessed checkpoint and range proof"`
	FirstIndex  int64  `json:"firstIndex" jsonschema:"the transparency log index of the file's first row"`
	LastIndex   int64  `json:"lastIndex" jsonschema:"the log index of its last row"`
	WitnessedBy int    `json:"witnessedBy" jsonschema:"how many witnesses cosigned the checkpoint the file is checked against"`
	WitnessedOf int    `json:"witnessedOf" jsonschema:"how many witnesses the checkpoint could carry (witnessedBy of witnessedOf cosigned it)"`
}

// datasetsDescription is list_datasets' description.
const datasetsDescription = "Download the whole index as daily Parquet files instead of paging. Lists the dataset this attestd node serves: " +
	"one Parquet file per UTC day holding every finalized attestation of that day in transparency-log order (columns log_index, pda, agent_pda, " +
	"action_type, action_hash, tx_signature, slot, timestamp, agent_id, privacy_mode, agent_signature), each with its rows, bytes, SHA-256, " +
	"log index range and absolute fileUrl and manifestUrl. For bulk work (counting, aggregating or auditing more than a few pages, mirroring) " +
	"fetch the files listed, one HTTP GET per day (DuckDB, Polars and pandas read them directly), instead of paging list_attestations, " +
	"which takes hours and proves nothing. Each file is checkable with `attestd verify --dataset DAY.parquet --url <node> --log-key <the log's key>`: " +
	"its rows rebuild a checkpoint of the log that witnessedBy of witnessedOf witnesses cosigned. " +
	"pending says which day comes next and why it is not out yet: day_open (the day is not over in the log), awaiting_checkpoint " +
	"(over, but no checkpoint covering it is cosigned by the witness quorum yet) or not_started (no file written yet); attestations after " +
	"the last file (from nextIndex) are only in the API. Default: the 31 most recent days, oldest first; since (YYYY-MM-DD) keeps the days on " +
	"or after it; limit up to 366. Free, no API key."

// addDatasetsTool registers list_datasets.
func (s *Server) addDatasetsTool() error {
	return addTool(s, &mcpsdk.Tool{Name: ToolListDatasets, Annotations: readOnly("List the daily dataset files"), Description: datasetsDescription},
		func(p map[string]*jsonschema.Schema) {
			p["since"].Pattern = dayPattern
			intRange(p["limit"], 1, maxDatasetDays)
		}, s.listDatasets)
}

func (s *Server) listDatasets(ctx context.Context, in DatasetsInput) (DatasetsOutput, string, error) {
	since := strings.TrimSpace(in.Since)
	if since != "" {
		if _, err := time.Parse(time.DateOnly, since); err != nil || len(since) != len(time.DateOnly) {
			return DatasetsOutput{}, "", fmt.Errorf("since must be a UTC day written YYYY-MM-DD (2026-11-01), got %q", in.Since)
		}
	}
	limit := in.Limit
	if limit == 0 {
		limit = defaultDatasetDays
	}
	if limit < 1 || limit > maxDatasetDays {
		return DatasetsOutput{}, "", fmt.Errorf("limit must be 1 to %d days, got %d", maxDatasetDays, in.Limit)
	}
	idx, err := s.api.DatasetIndex(ctx)
	if err != nil {
		return DatasetsOutput{}, "", s.datasetError(err)
	}
	out := DatasetsOutput{IndexURL: s.api.DatasetIndexURL(), Days: []DatasetFile{}, TotalDays: len(idx.Days), NextIndex: idx.NextIndex,
		Pending: idx.Pending}
	var selected []client.DatasetDay
	for _, d := range idx.Days {
		out.TotalRows += d.Rows
		if d.Day >= since { // YYYY-MM-DD orders as the days do
			selected = append(selected, d)
		}
	}
	if len(selected) > limit {
		selected = selected[len(selected)-limit:]
	}
	for _, d := range selected {
		out.Days = append(out.Days, DatasetFile{Day: d.Day, Rows: d.Rows, Bytes: d.Bytes, SHA256: d.SHA256, FileURL: s.api.DatasetFileURL(d.Day),
			ManifestURL: s.api.DatasetManifestURL(d.Day), FirstIndex: d.FirstIndex, LastIndex: d.LastIndex,
			WitnessedBy: d.Witnessed.By, WitnessedOf: d.Witnessed.Of})
	}
	return out, datasetsText(&out, since, s.datasetSite()), nil
}

// datasetSite is the origin the dataset is served at (the API's host).
func (s *Server) datasetSite() string {
	return strings.TrimSuffix(s.api.DatasetIndexURL(), client.DatasetPath+"index.json")
}

// datasetError turns the index's failure into the advice a model reads.
func (s *Server) datasetError(err error) error {
	site := s.datasetSite()
	switch {
	case errors.Is(err, client.ErrDatasetOff):
		return advise(err, "The dataset is off on this attestd node (%s answers 503: its operator has not set ATTESTD_DATASET_BUCKET), "+
			"so there are no daily files to download here. Page with %s instead, or point %s at a node that serves %s.",
			s.api.DatasetIndexURL(), ToolListAttestations, EnvAPIURL, client.DatasetPath)
	case client.StatusOf(err) == http.StatusServiceUnavailable:
		return advise(err, "The dataset's store does not answer on this attestd node (%s: %v); retry in a minute.", site, err)
	case client.StatusOf(err) == http.StatusNotFound:
		return advise(err, "This attestd node (%s) serves no dataset at %s (a version without it?). Page with %s instead.",
			site, s.api.DatasetIndexURL(), ToolListAttestations)
	}
	return s.apiError(err)
}

// datasetsText is list_datasets' readable summary.
func datasetsText(o *DatasetsOutput, since, site string) string {
	var b strings.Builder
	switch {
	case o.TotalDays == 0:
		b.WriteString("The dataset holds no daily file yet.")
	case len(o.Days) == 0:
		fmt.Fprintf(&b, "No daily file on or after %s; the dataset holds %d days (%d attestations) in all: %s.", since, o.TotalDays, o.TotalRows, o.IndexURL)
	default:
		var rows, size int64
		for _, d := range o.Days {
			rows, size = rows+d.Rows, size+d.Bytes
		}
		fmt.Fprintf(&b, "%d daily Parquet files, %s to %s: %d attestations, %s (the dataset: %d days, %d attestations; index %s).",
			len(o.Days), o.Days[0].Day, o.Days[len(o.Days)-1].Day, rows, sizeText(size), o.TotalDays, o.TotalRows, o.IndexURL)
		for i, d := range o.Days {
			if i == maxLines {
				fmt.Fprintf(&b, "\n... and %d more (see the structured result)", len(o.Days)-maxLines)
				break
			}
			fmt.Fprintf(&b, "\n%s  %d rows  %s  sha256 %s  witnessed %d/%d  %s", d.Day, d.Rows, sizeText(d.Bytes), d.SHA256, d.WitnessedBy, d.WitnessedOf, d.FileURL)
		}
		fmt.Fprintf(&b, "\nDownload these files (GET fileUrl) rather than paging %s; check one with "+
			"`attestd verify --dataset %s.parquet --url %s --log-key KEY` (KEY: the log's verifier key, pinned out of band).",
			ToolListAttestations, o.Days[len(o.Days)-1].Day, site)
	}
	for _, p := range o.Pending {
		day := p.Day
		if day == "" {
			day = "next"
		}
		fmt.Fprintf(&b, "\nPending %s: %s (%s).", day, p.Code, p.Reason)
	}
	return b.String()
}

// sizeText writes n bytes for a reader.
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
