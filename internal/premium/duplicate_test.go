package premium_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/testing/apptest"
)

// TestBulkVerifyWithAKeyTwiceIsRefused: {"ids":[a],"ids":[b]} was
// answered for b alone. It is 400 naming ids.
func TestBulkVerifyWithAKeyTwiceIsRefused(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 1, Attestations: 2})
	pn := startNode(t, env, premium.Config{})
	all := pdas(t, env, "ORDER BY pda LIMIT 2")
	body := `{"ids":["` + all[0] + `"],"ids":["` + all[1] + `"]}`
	r := pn.raw(t, http.MethodPost, "/premium/bulk-verify", []byte(body), map[string]string{"Content-Type": "application/json", "x-api-key": pn.key})
	if r.Status != http.StatusBadRequest || r.ErrorCode() != "INVALID_PARAM" || !strings.Contains(r.ErrorMessage(), `"ids" appears twice`) {
		t.Errorf("%d %s", r.Status, truncate(r.Body))
	}
}
