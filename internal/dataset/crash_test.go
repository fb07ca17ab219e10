package dataset_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/internal/testing/testenv"
	"gocloud.dev/blob"
)

// producerCmd is `attestd dataset --once` writing under prefix.
func (w *world) producerCmd(t *testing.T, bin, prefix string) *exec.Cmd {
	t.Helper()
	witnesses := make([]string, len(w.served.Config.Witnesses))
	for i, wt := range w.served.Config.Witnesses {
		witnesses[i] = wt.VerifierKey + " http://127.0.0.1:9/add-checkpoint"
	}
	cmd := exec.Command(bin, "dataset", "--once")
	cmd.Env = append(w.s3.Env(), "PATH=/usr/bin:/bin", "DATABASE_URL="+w.env.DatabaseURL, "ATTESTD_DATASET_BUCKET="+w.s3.URL(),
		"ATTESTD_DATASET_PREFIX="+prefix, "ATTESTD_LOG_KEY="+w.served.VerifierKey, "ATTESTD_LOG_WITNESSES="+strings.Join(witnesses, ","),
		"ATTESTD_LOG_WITNESS_QUORUM=1", "ATTESTD_LOG_FORMAT=json")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// files reads every object under prefix: name to bytes.
func (w *world) files(t *testing.T, prefix string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	b := blob.PrefixedBucket(w.bucket, prefix)
	out := map[string][]byte{}
	it := b.List(nil)
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		testenv.Must(t, err, "list")
		data, err := b.ReadAll(ctx, o.Key)
		testenv.Must(t, err, "read %s", o.Key)
		out[o.Key] = data
	}
	return out
}

// A producer killed (SIGKILL) while it writes a day's file leaves nothing
// a reader sees: no file, no manifest, not in the index. Run again, it
// finishes the job with the same bytes as a producer never killed.
func TestKilledMidFileFinishesTheSame(t *testing.T) {
	if testing.Short() {
		t.Skip("starts SeaweedFS")
	}
	w := newWorld(t)
	w.add(t, "2026-11-20", 50)
	w.add(t, "2026-11-21", 60000) // long enough to be killed inside
	w.add(t, "2026-11-22", 1)
	w.served.AppendAll(t)
	bin := testenv.BuildAttestd(t)
	clean := prefixFor(t)
	_, err := w.producer(t, clean).Round(context.Background())
	testenv.Must(t, err, "clean round")
	want := w.files(t, clean)

	killed := prefixFor(t)
	cmd := w.producerCmd(t, bin, killed)
	stderr, err := cmd.StderrPipe()
	testenv.Must(t, err, "stderr")
	testenv.Must(t, cmd.Start(), "start the producer")
	started := waitLine(t, stderr, `"msg":"dataset day started"`, `"day":"2026-11-21"`)
	if !started {
		t.Fatal("the producer never started the long day")
	}
	time.Sleep(150 * time.Millisecond) // inside the file: it takes seconds
	testenv.Must(t, cmd.Process.Signal(syscall.SIGKILL), "kill")
	_ = cmd.Wait()
	after := w.files(t, killed)
	if _, ok := after["2026-11-21.json"]; ok {
		t.Fatal("the long day's manifest was written before the kill: the test did not kill inside the file")
	}
	if _, ok := after["2026-11-21.parquet"]; ok {
		t.Fatal("a partial file is visible after the kill")
	}
	var idx dataset.Index
	testenv.Must(t, json.Unmarshal(after["index.json"], &idx), "index after the kill")
	if len(idx.Days) != 1 || idx.Days[0].Day != "2026-11-20" {
		t.Fatalf("the index after the kill lists %+v", idx.Days)
	}

	out, err := w.producerCmd(t, bin, killed).CombinedOutput()
	testenv.Must(t, err, "the producer's second run: %s", out)
	got := w.files(t, killed)
	for _, name := range []string{"2026-11-20.parquet", "2026-11-21.parquet"} {
		if string(got[name]) != string(want[name]) || len(want[name]) == 0 {
			t.Fatalf("%s: %d bytes after the restart, %d from a clean run, not the same", name, len(got[name]), len(want[name]))
		}
	}
}

// Two producers started together write each day once: the lock elects one,
// and the other finds the days done.
func TestTwoProducersWriteOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts SeaweedFS")
	}
	w := newWorld(t)
	w.fill(t, 200)
	bin := testenv.BuildAttestd(t)
	prefix := prefixFor(t)
	var wg sync.WaitGroup
	outs := make([][]byte, 2)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			outs[i], err = w.producerCmd(t, bin, prefix).CombinedOutput()
			if err != nil {
				t.Errorf("producer %d: %v: %s", i, err, outs[i])
			}
		}()
	}
	wg.Wait()
	cuts := 0
	for _, o := range outs {
		cuts += strings.Count(string(o), `"msg":"dataset day cut"`)
	}
	if cuts != len(fixtureDays) {
		t.Fatalf("two producers cut %d days between them, want %d:\n%s\n%s", cuts, len(fixtureDays), outs[0], outs[1])
	}
	if n := len(w.files(t, prefix)); n != 2*len(fixtureDays)+1 {
		t.Fatalf("%d objects, want %d", n, 2*len(fixtureDays)+1)
	}
}

// waitLine reads r until a line holding every one of subs (true), or EOF.
// The rest of r is drained in the background.
func waitLine(t *testing.T, r io.Reader, subs ...string) bool {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		all := true
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			go func() { _, _ = io.Copy(io.Discard, r) }()
			return true
		}
	}
	return false
}
