package apptest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/getkin/kin-openapi/routers"
)

// RecordEnv names the environment variable that, when set to a directory,
// makes every validated exchange of a documented operation write one
// Recording there, the first of each operation and status (later ones are
// skipped): openapi/testdata/answers is regenerated this way (see
// openapi/answers_test.go).
const RecordEnv = "ATTESTD_OPENAPI_RECORD"

// Recording is one answer of one documented operation, as the corpus of
// openapi/testdata/answers holds it.
type Recording struct {
	OperationID string          `json:"operationId"`
	Method      string          `json:"method"`
	Path        string          `json:"path"`    // the document's template
	Request     string          `json:"request"` // path and query as sent, after /api/v1
	Status      int             `json:"status"`
	ContentType string          `json:"contentType,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
}

var safeName = regexp.MustCompile(`[^A-Za-z0-9_]`)

// RecordingName is the file name of the recording of operationID with status.
func RecordingName(operationID string, status int) string {
	return fmt.Sprintf("%s.%d.json", safeName.ReplaceAllString(operationID, "_"), status)
}

func record(req *http.Request, route *routers.Route, r *Response) {
	dir := os.Getenv(RecordEnv)
	if dir == "" || route.Operation == nil || route.Operation.OperationID == "" {
		return
	}
	rec := Recording{OperationID: route.Operation.OperationID, Method: req.Method, Path: route.Path,
		Request: strings.TrimPrefix(req.URL.RequestURI(), "/api/v1"), Status: r.Status, ContentType: r.Header.Get("Content-Type")}
	// A JSON body is kept; another (an event stream) is left out: the
	// recording still says that the answer was given.
	if len(r.Body) > 0 && json.Valid(r.Body) {
		rec.Body = r.Body
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	f, err := os.OpenFile(filepath.Join(dir, RecordingName(rec.OperationID, rec.Status)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) || err != nil {
		return
	}
	_, _ = f.Write(append(b, '\n'))
	_ = f.Close()
}
