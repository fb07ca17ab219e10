package dataset_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"gocloud.dev/blob/fileblob"
)

// A download takes as long as the client takes: the node's write timeout
// bounds each stretch without progress, not the whole file. A client
// reading a 24 MiB file slowly, for several times the timeout, gets every
// byte.
func TestSlowDownloadOutlivesTheWriteTimeout(t *testing.T) {
	const timeout = time.Second
	ctx := context.Background()
	b, err := fileblob.OpenBucket(t.TempDir(), nil)
	testenv.Must(t, err, "bucket")
	t.Cleanup(func() { b.Close() })
	day, _ := dataset.ParseDay("2026-11-27")
	body := make([]byte, 24<<20)
	_, _ = rand.Read(body)
	sum := sha256.Sum256(body)
	m := dataset.Manifest{Format: dataset.Format, Day: day.String(), File: dataset.FileName(day), Rows: 1, Bytes: int64(len(body)),
		SHA256: hex.EncodeToString(sum[:]), CutAt: attestation.At(time.Now()), Proof: dataset.Proof{TreeSize: 1}}
	mj, _ := json.Marshal(m)
	testenv.Must(t, b.WriteAll(ctx, dataset.FileName(day), body, nil), "file")
	testenv.Must(t, b.WriteAll(ctx, dataset.ManifestName(day), mj, nil), "manifest")
	srv := dataset.NewServer(dataset.ServerDeps{Bucket: b, Logger: apptest.Logger(), WriteTimeout: timeout})
	env := apptest.NewEnv(t, apptest.Options{})
	node := env.StartNode(t, apptest.NodeOptions{Configure: func(d *app.Deps) {
		d.Timeouts.Write = timeout
		d.Unlimited = append(d.Unlimited, srv.Routes()...)
	}})
	conn, err := net.Dial("tcp", strings.TrimPrefix(node.Root, "http://"))
	testenv.Must(t, err, "dial")
	defer conn.Close()
	testenv.Must(t, conn.(*net.TCPConn).SetReadBuffer(32<<10), "read buffer")
	_, err = fmt.Fprintf(conn, "GET /dataset/%s HTTP/1.1\r\nHost: x\r\n\r\n", dataset.FileName(day))
	testenv.Must(t, err, "request")
	res, err := http.ReadResponse(bufio.NewReaderSize(conn, 32<<10), nil)
	testenv.Must(t, err, "response")
	defer res.Body.Close()
	start, got, buf := time.Now(), sha256.New(), make([]byte, 256<<10)
	n := 0
	for {
		k, err := res.Body.Read(buf)
		got.Write(buf[:k])
		n += k
		if err == io.EOF {
			break
		}
		testenv.Must(t, err, "read after %d bytes, %s", n, time.Since(start))
		time.Sleep(6 * time.Millisecond) // at most 32 KiB a read: about 5 MiB/s
	}
	if took := time.Since(start); n != len(body) || hex.EncodeToString(got.Sum(nil)) != m.SHA256 || took < 2*timeout {
		t.Fatalf("read %d of %d bytes in %s (a write timeout of %s): not the whole file, or not slowly", n, len(body), took, timeout)
	}
}
