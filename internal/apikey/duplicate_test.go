package apikey_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/testing/apptest"
)

// TestCreateKeyWithAKeyTwiceIsRefused: {"role":"admin","role":"read"} was
// read as the last role (a log or a proxy reading the first saw an admin
// key asked for). A key written twice, at any depth and in any spelling,
// is 400 naming it, and no key is made.
func TestCreateKeyWithAKeyTwiceIsRefused(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	kn := startNode(t, env, nodeOpt{})
	k := newKey(t, kn.svc, "acme", "")
	h := map[string]string{"x-api-key": k.Secret, "Content-Type": "application/json"}
	for _, body := range []string{`{"role":"admin","role":"read"}`, `{"label":"a","\u006cabel":"b"}`, `{"role":"read","ROLE":"admin"}`} {
		r := kn.Do(t, http.MethodPost, "/keys", []byte(body), h)
		if r.Status != http.StatusBadRequest || r.ErrorCode() != "INVALID_PARAM" || !strings.Contains(r.ErrorMessage(), "appears twice") {
			t.Errorf("%s: %d %s", body, r.Status, r.Body)
		}
	}
	r := kn.Do(t, http.MethodGet, "/keys", nil, map[string]string{"x-api-key": k.Secret})
	if r.Status != http.StatusOK || strings.Count(string(r.Body), `"prefix"`) != 1 {
		t.Errorf("keys after the refusals: %d %s", r.Status, r.Body)
	}
}
