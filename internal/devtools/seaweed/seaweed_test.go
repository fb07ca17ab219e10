package seaweed

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"
)

// start builds weed and starts a server in dir (a new temporary
// directory when empty), stopped when the test ends.
func start(t *testing.T, dir string) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("starts SeaweedFS (and builds it the first time: minutes)")
	}
	ctx := context.Background()
	bin, err := Binary(ctx, ".")
	if err != nil {
		t.Fatal(err)
	}
	if dir == "" {
		dir = t.TempDir()
	}
	began := time.Now()
	s, err := Start(ctx, Options{Binary: bin, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	t.Logf("weed mini up in %v at %s, %s", time.Since(began).Round(time.Millisecond), s.Endpoint, rss(s))
	return s
}

// rss is the server's resident memory, as /proc says.
func rss(s *Server) string {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/status")
	if err != nil {
		return err.Error()
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			return strings.Join(strings.Fields(line), " ")
		}
	}
	return "VmRSS unknown"
}

// TestBlob: a bucket opened with Open keeps an object: written, read
// whole and in part, its attributes, listed, deleted. Stop ends the
// server and Done is closed.
func TestBlob(t *testing.T) {
	t.Parallel()
	s := start(t, "")
	ctx := context.Background()
	b, err := s.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	exercise(t, b, "dir/object")
	t.Logf("after use: %s", rss(s))

	stopping := time.Now()
	s.Stop()
	t.Logf("stopped in %v", time.Since(stopping).Round(time.Millisecond))
	select {
	case <-s.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("Done not closed after Stop")
	}
}

// TestURL: the bucket opened from URL, with the credentials of Env in the
// environment, as a child process would. (Not parallel: it sets the
// environment; the parallel tests run after it.)
func TestURL(t *testing.T) {
	s := start(t, "")
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	b, err := blob.OpenBucket(context.Background(), s.URL())
	if err != nil {
		t.Fatalf("open %s: %v", s.URL(), err)
	}
	defer b.Close()
	exercise(t, b, "url/object")
}

// TestRestart: a server started again in the same directory has the
// bucket and the objects written before.
func TestRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	s := start(t, dir)
	b, err := s.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WriteAll(ctx, "kept", []byte("kept across a restart"), nil); err != nil {
		t.Fatalf("write: %v", err)
	}
	b.Close()
	s.Stop()

	s = start(t, dir)
	if b, err = s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got, err := b.ReadAll(ctx, "kept"); err != nil || string(got) != "kept across a restart" {
		t.Fatalf("read after restart: %q, %v", got, err)
	}
}

// exercise writes key, reads it whole and in part, checks its
// attributes, lists it and deletes it.
func exercise(t *testing.T, b *blob.Bucket, key string) {
	t.Helper()
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789"), 1000)
	if err := b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/octet-stream"}); err != nil {
		t.Fatalf("write: %v", err)
	}
	got, err := b.ReadAll(ctx, key)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read: %d bytes, %v; want %d bytes", len(got), err, len(data))
	}
	r, err := b.NewRangeReader(ctx, key, 1234, 100, nil)
	if err != nil {
		t.Fatalf("range reader: %v", err)
	}
	part, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(part, data[1234:1334]) {
		t.Fatalf("range read: %q, %v; want %q", part, err, data[1234:1334])
	}
	attrs, err := b.Attributes(ctx, key)
	if err != nil {
		t.Fatalf("attributes: %v", err)
	}
	if attrs.Size != int64(len(data)) || attrs.ETag == "" {
		t.Fatalf("attributes: size %d, etag %q; want size %d and an etag", attrs.Size, attrs.ETag, len(data))
	}
	it := b.List(&blob.ListOptions{Prefix: key[:strings.Index(key, "/")+1]})
	var keys []string
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		keys = append(keys, obj.Key)
	}
	if len(keys) != 1 || keys[0] != key {
		t.Fatalf("list: %q; want [%q]", keys, key)
	}
	if err := b.Delete(ctx, key); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := b.Attributes(ctx, key); gcerrors.Code(err) != gcerrors.NotFound {
		t.Fatalf("attributes after delete: %v; want not found", err)
	}
}
