package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/bench/internal/benchkit"
	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// startNode runs `attestd serve` over log c's database and bucket: the
// API's rate limit and the dataset's guard off (ATTESTD_DATASET_RATE=0,
// ATTESTD_DATASET_MIB_RATE=0).
func (b *bench) startNode(ctx context.Context, c *cutLog) (string, *exec.Cmd, func(), error) {
	var pfx [4]byte
	_, _ = rand.Read(pfx[:])
	addr, metrics := "127.0.0.1:"+strconv.Itoa(freePort()), "127.0.0.1:"+strconv.Itoa(freePort())
	env := append(os.Environ(), "DATABASE_URL="+c.url, "REDIS_URL="+b.stores.RedisURL, "ATTESTD_REDIS_PREFIX=dsbench"+hex.EncodeToString(pfx[:])+":",
		"ATTESTD_LOG_LEVEL=warn", "ATTESTD_RATE_LIMIT=0", "ATTESTD_MAX_CONNS_PER_IP=0", "ATTESTD_LOG_KEY="+b.key.VerifierKey, "ATTESTD_LOG_WITNESSES=",
		"ATTESTD_DATASET_BUCKET="+bucketURL(c.bucketDir), "ATTESTD_DATASET_PREFIX="+prefix, "ATTESTD_DATASET_RATE=0", "ATTESTD_DATASET_MIB_RATE=0",
		"ATTESTD_HTTP_ADDR="+addr, "ATTESTD_METRICS_ADDR="+metrics)
	cmd, stop, err := benchkit.Start(ctx, env, 10*time.Second, b.o.attestd, "http://"+addr+"/api/v1/health", "serve")
	if err != nil {
		return "", nil, nil, err
	}
	return "http://" + addr, cmd, stop, nil
}

func freePort() int {
	p, err := devstack.FreePort()
	if err != nil {
		fail(err)
	}
	return p
}

// sizePart: one day's file against the API's pages of the same rows.
func (b *bench) sizePart(ctx context.Context, w io.Writer, c *cutLog) error {
	idx, err := readIndex(c.bucketDir)
	if err != nil {
		return err
	}
	d := idx.Days[len(idx.Days)/2]
	base, _, stop, err := b.startNode(ctx, c)
	if err != nil {
		return err
	}
	defer stop()
	hc := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: time.Minute}
	defer hc.CloseIdleConnections()
	// The file as the node serves it: the manifest's bytes.
	res, err := hc.Get(base + "/dataset/" + d.File)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(h, res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || n != d.Bytes || hex.EncodeToString(h.Sum(nil)) != d.SHA256 {
		return fmt.Errorf("GET /dataset/%s: %d, %d bytes (%v): not the manifest's %d bytes and digest", d.File, res.StatusCode, n, err, d.Bytes)
	}
	rows, err := parquet.ReadFile[dataset.Row](filepath.Join(c.bucketDir, prefix, d.File))
	if err != nil {
		return fmt.Errorf("read %s: %w", d.File, err)
	}
	inFile := make(map[string]bool, len(rows))
	for _, r := range rows {
		inFile[r.PDA] = true
	}
	// The pages of 100 that hold the same rows.
	day, err := dataset.ParseDay(d.Day)
	if err != nil {
		return err
	}
	q := url.Values{"from": {day.Format(time.RFC3339)}, "to": {day.Next().Format(time.RFC3339)}, "limit": {"100"}}
	var wire, plain, items int64
	pages, gzipped := 0, 0
	seen := make(map[string]bool, len(rows))
	start := time.Now()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/attestations?"+q.Encode(), nil)
		req.Header.Set("Accept-Encoding", "gzip")
		res, err := hc.Do(req)
		if err != nil {
			return err
		}
		raw, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return err
		}
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /api/v1/attestations: %d %s", res.StatusCode, raw)
		}
		pages++
		wire += int64(len(raw))
		body := raw
		if res.Header.Get("Content-Encoding") == "gzip" {
			gzipped++
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				return err
			}
			if body, err = io.ReadAll(zr); err != nil {
				return err
			}
		}
		plain += int64(len(body))
		var page struct {
			Data []struct {
				PDA string `json:"pda"`
			} `json:"data"`
			Pagination struct {
				NextCursor string `json:"nextCursor"`
			} `json:"pagination"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return fmt.Errorf("page %d: %w", pages, err)
		}
		for _, a := range page.Data {
			if !inFile[a.PDA] || seen[a.PDA] {
				return fmt.Errorf("page %d: attestation %s is not in %s, or twice in the pages", pages, a.PDA, d.File)
			}
			seen[a.PDA] = true
		}
		items += int64(len(page.Data))
		if page.Pagination.NextCursor == "" {
			break
		}
		q.Set("cursor", page.Pagination.NextCursor)
	}
	took := time.Since(start)
	if items != d.Rows || int64(len(rows)) != d.Rows {
		return fmt.Errorf("the pages hold %d attestations, the file %d rows, the index says %d", items, len(rows), d.Rows)
	}
	per := func(x int64) float64 { return float64(x) / float64(d.Rows) }
	fmt.Fprintf(w, "### Size\n\nThe day %s of the first log: %d attestations. Its file as `attestd serve` sends it (GET /dataset/%s, "+
		"the manifest's bytes and digest), against the pages of GET /api/v1/attestations?from=%s&to=%s&limit=100 that hold the same "+
		"attestations (followed by nextCursor; every attestation of the file in them once), asked with Accept-Encoding: gzip of the same "+
		"node (%d pages, %d of them gzip-compressed by the node; %s on loopback with the API's rate limit off). Bodies only, no headers.\n\n",
		d.Day, d.Rows, d.File, day.Format(time.RFC3339), day.Next().Format(time.RFC3339), pages, gzipped, took.Round(time.Millisecond))
	fmt.Fprintf(w, "| form | bytes | bytes per attestation |\n|---|---:|---:|\n")
	fmt.Fprintf(w, "| Parquet file (zstd, dictionary and delta encodings) | %d | %.1f |\n", d.Bytes, per(d.Bytes))
	fmt.Fprintf(w, "| JSON pages of 100, gzip, as the node sent them | %d | %.1f |\n", wire, per(wire))
	fmt.Fprintf(w, "| the same pages' JSON, uncompressed | %d | %.1f |\n\n", plain, per(plain))
	fmt.Fprintf(w, "Parquet bytes / gzip'd JSON bytes: %.2f; Parquet / uncompressed JSON: %.2f.\n\n", float64(d.Bytes)/float64(wire), float64(d.Bytes)/float64(plain))
	// The same rows encoded as the producer does but with zstd's better
	// level: what the compression level is worth (not what is served).
	var buf bytes.Buffer
	pw := parquet.NewGenericWriter[dataset.Row](&buf, parquet.Compression(&zstd.Codec{Level: zstd.SpeedBetterCompression}),
		parquet.MaxRowsPerRowGroup(dataset.RowGroupRows))
	if _, err := pw.Write(rows); err != nil {
		return err
	}
	if err := pw.Close(); err != nil {
		return err
	}
	fmt.Fprintf(w, "For comparison only (not what the producer writes): the file's rows written again with the same schema and row groups "+
		"but zstd at SpeedBetterCompression instead of the producer's SpeedDefault (key-value metadata left out): %d bytes, %.1f per "+
		"attestation, %.2f of the gzip'd pages. The random 32- and 64-byte values in base58 and hex that make up most of a row "+
		"(pda, tx_signature, agent_signature, action_hash) compress only by entropy coding, which klauspost/compress's zstd skips at its "+
		"default level when a block has no matches.\n\n", buf.Len(), per(int64(buf.Len())), float64(buf.Len())/float64(wire))
	logf("size: %s: parquet %.1f B/row, gzip pages %.1f B/row", d.Day, per(d.Bytes), per(wire))
	return nil
}

// procCPU is the CPU time (user + system) process pid has used so far.
func procCPU(pid int) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // after the command's name
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * time.Second / 100 // clock ticks (USER_HZ, 100 on Linux)
}
