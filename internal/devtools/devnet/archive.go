package devnet

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ledgerFile is the file under Config.StateDir that holds the transactions
// of finalized slots, one savedTx (JSON) a line in ledger order, appended
// as their slots finalize, each save's lines a gzip member of their own
// (zcat reads the whole; chain.json names how many of its bytes are
// whole): a chain continued from its state directory answers for every
// transaction it ever landed (getTransaction, getSignatureStatuses,
// getSignaturesForAddress), as a node keeping its history does. It grows
// with the chain: about 1 KB per transaction (make run's traffic: some
// 5 MB an hour).
const ledgerFile = "ledger.jsonl.gz"

// maxLedgerLine bounds one line of the ledger file (a transaction of 1232
// bytes and its logs, truncated at Config.LogLimit, are far below it).
const maxLedgerLine = 16 << 20

// readLedger reads the first size bytes of dir's ledger file: the
// transactions they hold, in order.
func readLedger(dir string, size int64) ([]savedTx, error) {
	if size == 0 {
		return nil, nil
	}
	path := filepath.Join(dir, ledgerFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("devnet: saved chain's ledger: %w (delete %s to start a new chain)", err, dir)
	}
	defer f.Close()
	whole := &countingReader{r: io.LimitReader(f, size)}
	zr, err := gzip.NewReader(whole)
	if err != nil {
		return nil, fmt.Errorf("devnet: saved chain's ledger %s: %w (delete %s to start a new chain)", path, err, dir)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 0, 64<<10), maxLedgerLine)
	var out []savedTx
	for sc.Scan() {
		var st savedTx
		if err := json.Unmarshal(sc.Bytes(), &st); err != nil {
			return nil, fmt.Errorf("devnet: saved chain's ledger %s, transaction %d: %w (delete %s to start a new chain)", path, len(out)+1, err, dir)
		}
		out = append(out, st)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("devnet: saved chain's ledger %s: %w (delete %s to start a new chain)", path, err, dir)
	}
	if whole.n != size {
		return nil, fmt.Errorf("devnet: saved chain's ledger %s holds %d bytes, chain.json counts %d (delete %s to start a new chain)",
			path, whole.n, size, dir)
	}
	return out, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// trimLedger cuts the ledger file to the bytes chain.json counts
// (c.ledgerSize; none for a new chain): what a save that did not finish
// appended past them goes, so the next append follows the last whole
// line.
func (c *Chain) trimLedger() error {
	if c.cfg.StateDir == "" {
		return nil
	}
	err := os.Truncate(filepath.Join(c.cfg.StateDir, ledgerFile), c.ledgerSize)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("devnet: ledger: %w", err)
	}
	return nil
}

// appendLedger writes txs after the ledger file's counted bytes
// (c.ledgerSize) and returns the count then (c.ledgerSize when there is
// nothing to append). The caller holds saveMu.
func (c *Chain) appendLedger(txs []savedTx) (int64, error) {
	if len(txs) == 0 {
		return c.ledgerSize, nil
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	enc := json.NewEncoder(zw) // a line each
	for _, st := range txs {
		if err := enc.Encode(st); err != nil {
			return 0, fmt.Errorf("devnet: encode ledger: %w", err)
		}
	}
	if err := zw.Close(); err != nil {
		return 0, fmt.Errorf("devnet: encode ledger: %w", err)
	}
	buf := z.Bytes()
	f, err := os.OpenFile(filepath.Join(c.cfg.StateDir, ledgerFile), os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return 0, fmt.Errorf("devnet: ledger: %w", err)
	}
	// At the counted end, not the file's: over whatever a failed write
	// left past it.
	if _, err := f.WriteAt(buf, c.ledgerSize); err != nil {
		f.Close()
		return 0, fmt.Errorf("devnet: ledger: %w", err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("devnet: ledger: %w", err)
	}
	return c.ledgerSize + int64(len(buf)), nil
}
