package docs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestTryItAgainstLocal runs the README's "Try it" block as a script
// against `attestd local` (make run), from a directory laid out like a
// checkout after make build (bin/attestd). Only the port differs from the
// README (the test takes a free one), and the stores are the test's, given
// to attestd local. The script runs as a second terminal would: without
// DATABASE_URL or REDIS_URL, so its premium step proves that one-shot
// commands find a running local's stores (.run/stores.env) on their own.
func TestTryItAgainstLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts attestd local")
	}
	for _, tool := range []string{"bash", "curl", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the Try it block needs %s, which this machine lacks", tool)
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	testenv.Must(t, err, "read README.md")
	block, ok := shellBlockUnder(string(b), "Try it")
	if !ok {
		t.Fatal(`README.md has no "## Try it" section with a sh code block`)
	}
	if !strings.Contains(block, "localhost:8080") {
		t.Fatalf("the Try it block no longer calls localhost:8080, where make run serves:\n%s", block)
	}

	bin := testenv.BuildAttestd(t)
	dir := testenv.TempDir(t, "attestd-tryit-")
	testenv.Must(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755), "mkdir bin")
	testenv.Must(t, os.Symlink(bin, filepath.Join(dir, "bin", "attestd")), "link bin/attestd")
	port, err := devstack.FreePort()
	testenv.Must(t, err, "free port")
	redisURL, prefix := testenv.Redis(t)
	stores := []string{"DATABASE_URL=" + testenv.Database(t), "REDIS_URL=" + redisURL, "ATTESTD_REDIS_PREFIX=" + prefix}
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}

	local := exec.Command(filepath.Join(dir, "bin", "attestd"), "local", "--agents", "3", "--attestations", "50")
	local.Dir = dir
	local.Env = append(append(base, stores...), fmt.Sprintf("ATTESTD_HTTP_ADDR=127.0.0.1:%d", port),
		"ATTESTD_METRICS_ADDR=", "ATTESTD_INDEXER_METRICS_ADDR=", "ATTESTD_WORKER_METRICS_ADDR=")
	out := &testenv.Output{}
	local.Stdout, local.Stderr = out, out
	local.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	testenv.Must(t, local.Start(), "start attestd local")
	done := make(chan struct{})
	go func() { _ = local.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = local.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = local.Process.Kill()
			<-done
		}
	})

	api := fmt.Sprintf("http://127.0.0.1:%d/api/v1", port)
	served := false
	defer func() {
		if !served {
			t.Logf("attestd local output:\n%s", out.String())
		}
	}()
	testenv.WaitForState(t, "attestd local serves its seeded attestations", testenv.Patience, testenv.Every(200*time.Millisecond, func() (bool, string) {
		select {
		case <-done:
			t.Fatal("attestd local exited")
		default:
		}
		var st struct{ Attestations int }
		resp, err := http.Get(api + "/stats")
		if err != nil {
			return false, err.Error()
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		return err == nil && resp.StatusCode == http.StatusOK && st.Attestations >= 50,
			fmt.Sprintf("/stats %s, %d attestations (%v)", resp.Status, st.Attestations, err)
	}))
	served = true

	script := strings.ReplaceAll(block, "localhost:8080", fmt.Sprintf("localhost:%d", port)) +
		"\n" + `for v in PDA AGENT CURSOR KEY HASH DAY; do eval "test -n \"\$$v\"" || { echo "$v is empty" >&2; exit 1; }; done` + "\n"
	cmd := exec.Command("bash", "-e", "-o", "pipefail")
	cmd.Dir = dir
	cmd.Env = base // no stores: the second terminal has none
	cmd.Stdin = strings.NewReader(script)
	res, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the Try it block failed: %v\n%s\nattestd local:\n%s", err, clip(string(res)), clip(out.String()))
	}
	got := string(res)
	if !strings.Contains(got, "using the stores of the make run in "+dir) {
		t.Errorf("the premium step did not say which stores it found:\n%s", clip(got))
	}
	if strings.Contains(got, `"error":`) {
		t.Errorf("a call of the Try it block answered an error:\n%s", clip(got))
	}
	for _, want := range []string{`"status":`, `"byType":`, `"pagination":`, `"totalAttestations":`, `"reportHash":`, `"summary":`,
		`"valid":true`, `"actionHash":`, " rows, leaves ", `"structuredContent":`} {
		if !strings.Contains(got, want) {
			t.Errorf("the Try it block's output lacks %s:\n%s", want, clip(got))
		}
	}
	// A demo a person reads in a terminal: no page of a thousand records.
	if len(got) > 64<<10 {
		t.Errorf("the Try it block prints %d KB; keep it readable (under 64 KB):\n%s", len(got)>>10, clip(got))
	}
}

// clip keeps a failure message readable: the first and last 2 KB of s.
func clip(s string) string {
	const keep = 2048
	if len(s) <= 2*keep {
		return s
	}
	return s[:keep] + fmt.Sprintf("\n[... %d bytes ...]\n", len(s)-2*keep) + s[len(s)-keep:]
}
