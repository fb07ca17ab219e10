package openapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/strict"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/openapi"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// answersDir holds one recorded answer of every documented operation and
// status (apptest.Recording, written by the suite's own exchanges with
// ATTESTD_OPENAPI_RECORD set: `make answers` regenerates it).
const answersDir = "testdata/answers"

// unrecorded lists the documented answers from 200 to 429 that no test of
// the suite provokes, each with why; every other one must be recorded.
var unrecorded = map[string]string{
	// PAYMENT_REPLAYED is the x402 middleware's answer, the same for every
	// paid route (the shared PaymentReplayed response); x402fiber's tests
	// replay a payment on full-history, whose 409 is recorded.
	"getForensicReport.409.json": "x402 replay: the same middleware answer as getFullHistory.409",
	"bulkVerify.409.json":        "x402 replay: the same middleware answer as getFullHistory.409",
}

func loadAnswers(t *testing.T) []apptest.Recording {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(answersDir, "*.json"))
	testenv.Must(t, err, "list answers")
	if len(files) == 0 {
		t.Fatalf("no recorded answers in %s (make answers)", answersDir)
	}
	sort.Strings(files)
	out := make([]apptest.Recording, 0, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		testenv.Must(t, err, "read %s", f)
		var r apptest.Recording
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if filepath.Base(f) != apptest.RecordingName(r.OperationID, r.Status) {
			t.Fatalf("%s holds %s %d", f, r.OperationID, r.Status)
		}
		out = append(out, r)
	}
	return out
}

// TestRecordedAnswersCoverEveryOperation: every operation of the document,
// with every status from 200 to 429 it documents, has a recorded answer
// (or a reason in unrecorded), so no route escapes the validators and the
// generated clients below.
func TestRecordedAnswersCoverEveryOperation(t *testing.T) {
	doc, err := openapi.Document()
	testenv.Must(t, err, "document")
	have := map[string]bool{}
	for _, r := range loadAnswers(t) {
		have[apptest.RecordingName(r.OperationID, r.Status)] = true
	}
	var missing []string
	ops, pairs := 0, 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "" {
				t.Errorf("%s %s has no operationId (generated clients name their calls after it)", method, path)
				continue
			}
			ops++
			for code := range op.Responses.Map() {
				status, err := strconv.Atoi(code)
				if err != nil || status < 200 || status > 429 {
					continue
				}
				pairs++
				name := apptest.RecordingName(op.OperationID, status)
				if !have[name] && unrecorded[name] == "" {
					missing = append(missing, fmt.Sprintf("%s %s %d (%s)", method, path, status, name))
				}
			}
		}
	}
	sort.Strings(missing)
	t.Logf("%d operations, %d documented answers from 200 to 429, %d recorded, %d exempt", ops, pairs, len(have), len(unrecorded))
	if len(missing) > 0 {
		t.Errorf("%d documented answers have no recording in %s (make answers; or say why in unrecorded):\n%s",
			len(missing), answersDir, strings.Join(missing, "\n"))
	}
}

// TestRecordedAnswersAreStrictlyValid judges every recorded answer with the
// Go strict validator apptest uses on every exchange.
func TestRecordedAnswersAreStrictlyValid(t *testing.T) {
	answers := loadAnswers(t)
	invalid := 0
	for _, r := range answers {
		if err := strict.ValidateAnswer(r.Method, r.Path, r.Status, r.Body); err != nil {
			invalid++
			t.Errorf("%s: %v", apptest.RecordingName(r.OperationID, r.Status), err)
		}
	}
	t.Logf("%d recorded answers, %d invalid under the strict validator", len(answers), invalid)
}

// servedDocument starts a node and fetches /api/v1/openapi.json from it,
// the document users generate clients from; it returns the file it wrote.
func servedDocument(t *testing.T) string {
	t.Helper()
	node := apptest.NewEnv(t, apptest.Options{}).StartNode(t, apptest.NodeOptions{})
	res := node.Get(t, "/openapi.json")
	if res.Status != 200 {
		t.Fatalf("GET /openapi.json: %d", res.Status)
	}
	f := filepath.Join(t.TempDir(), "openapi.json")
	testenv.Must(t, os.WriteFile(f, res.Body, 0o644), "write served document")
	return f
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestRecordedAnswersValidWithAjv validates every recorded answer against
// the served document with openapi-response-validator (ajv), the strict
// validator issue 27 was found with.
func TestRecordedAnswersValidWithAjv(t *testing.T) {
	modules := testenv.NodeModules(t, filepath.Join("testdata", "clients"))
	doc := servedDocument(t)
	abs, err := filepath.Abs(answersDir)
	testenv.Must(t, err, "answers dir")
	out := run(t, "", nil, "node", filepath.Join("testdata", "clients", "validate.js"), modules, doc, abs)
	var summary struct {
		Total, Valid int
		Invalid      []json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &summary); err != nil {
		t.Fatalf("validate.js: %v\n%s", err, out)
	}
	t.Logf("openapi-response-validator: %d recorded answers, %d valid, %d invalid", summary.Total, summary.Valid, len(summary.Invalid))
	if summary.Total == 0 || len(summary.Invalid) > 0 || summary.Valid != summary.Total {
		t.Errorf("answers invalid under openapi-response-validator:\n%s", out)
	}
}

// TestStrictValidatorRefusesWhatClientsRefuse mutates recorded answers the
// way a wrong document would let through, and checks that the strict
// validator refuses each, and accepts the nulls the document declares.
func TestStrictValidatorRefusesWhatClientsRefuse(t *testing.T) {
	byName := map[string]apptest.Recording{}
	for _, r := range loadAnswers(t) {
		byName[apptest.RecordingName(r.OperationID, r.Status)] = r
	}
	for _, c := range []struct {
		name, file string
		mutate     func(body map[string]any)
		valid      bool
	}{
		{"revokedAt null", "getAgent.200.json", func(b map[string]any) { b["data"].(map[string]any)["revokedAt"] = nil }, true},
		{"revokedAt a time", "getAgent.200.json", func(b map[string]any) { b["data"].(map[string]any)["revokedAt"] = "2026-11-24T10:00:00Z" }, true},
		{"revokedAt not a time", "getAgent.200.json", func(b map[string]any) { b["data"].(map[string]any)["revokedAt"] = "yesterday" }, false},
		{"revokedAt a time with an offset", "getAgent.200.json", func(b map[string]any) { b["data"].(map[string]any)["revokedAt"] = "2026-11-24T10:00:00+01:00" }, false},
		{"revoked null", "getAgent.200.json", func(b map[string]any) { b["data"].(map[string]any)["revoked"] = nil }, false},
		{"a field the document does not list", "getAgent.200.json", func(b map[string]any) { b["data"].(map[string]any)["extra"] = 1 }, false},
		{"a required field missing", "getAgent.200.json", func(b map[string]any) { delete(b["data"].(map[string]any), "revokedAt") }, false},
		{"bulk reason null", "bulkVerify.200.json", func(b map[string]any) { item(b)["reason"] = nil }, true},
		{"bulk reason unknown", "bulkVerify.200.json", func(b map[string]any) { item(b)["reason"] = "expired" }, false},
		{"bulk actionType null", "bulkVerify.200.json", func(b map[string]any) { item(b)["actionType"] = nil }, true},
		{"bulk actionType unknown", "bulkVerify.200.json", func(b map[string]any) { item(b)["actionType"] = "Nope" }, false},
		{"bulk timestamp null", "bulkVerify.200.json", func(b map[string]any) { item(b)["timestamp"] = nil }, true},
		{"health status unknown", "getHealth.200.json", func(b map[string]any) { b["status"] = "fine" }, false},
	} {
		r, ok := byName[c.file]
		if !ok {
			t.Fatalf("no recording %s", c.file)
		}
		var body map[string]any
		testenv.Must(t, json.Unmarshal(r.Body, &body), "decode %s", c.file)
		c.mutate(body)
		b, err := json.Marshal(body)
		testenv.Must(t, err, "encode")
		if err := strict.ValidateAnswer(r.Method, r.Path, r.Status, b); (err == nil) != c.valid {
			t.Errorf("%s: valid %v, want %v (%v)", c.name, err == nil, c.valid, err)
		}
	}
}

func item(b map[string]any) map[string]any { return b["data"].([]any)[0].(map[string]any) }
