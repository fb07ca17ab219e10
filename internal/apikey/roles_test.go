package apikey_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gofiber/fiber/v2"
)

// TestKeyRoles: admin keys (the CLI's, or made explicitly by an admin key)
// manage the account's keys; read keys (the default of POST /keys) call
// key-protected routes only, get 403 FORBIDDEN on /keys, and can never
// revoke a key of a higher role.
func TestKeyRoles(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	kn := startNode(t, env, nodeOpt{})
	ctx := context.Background()
	admin := newKey(t, kn.svc, "acme", "cli") // as `attestd keys create` makes it
	if admin.Key.Role != "admin" {
		t.Fatalf("a key made as the CLI makes it has role %q, want admin", admin.Key.Role)
	}
	type created struct {
		Data struct{ Prefix, Key, Role string }
	}
	create := func(key, body string) (*apptest.Response, created) {
		var c created
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		r := kn.Do(t, http.MethodPost, "/keys", b, map[string]string{"x-api-key": key, "Content-Type": "application/json"})
		if r.Status == 201 {
			r.JSON(t, &c)
		}
		return r, c
	}

	// An admin key makes read keys by default, admin keys when asked.
	r, read := create(admin.Secret, `{"label":"ci"}`)
	if r.Status != 201 || read.Data.Role != "read" {
		t.Fatalf("default role through POST /keys: %d %s", r.Status, r.Body)
	}
	r, admin2 := create(admin.Secret, `{"label":"second admin","role":"admin"}`)
	if r.Status != 201 || admin2.Data.Role != "admin" {
		t.Fatalf("admin key asking for an admin key: %d %s", r.Status, r.Body)
	}
	if r := kn.Do(t, http.MethodGet, "/keys", nil, withKey(admin2.Data.Key)); r.Status != 200 {
		t.Fatalf("the new admin key cannot list keys: %d %s", r.Status, r.Body)
	}
	r, explicitRead := create(admin.Secret, `{"role":"read"}`)
	if r.Status != 201 || explicitRead.Data.Role != "read" {
		t.Fatalf("explicit read role: %d %s", r.Status, r.Body)
	}

	// The read key works where any valid key does...
	if status := seam(t, kn, read.Data.Key); status != 200 {
		t.Fatalf("read key on a key-protected route: %d", status)
	}
	// ...and is 403 FORBIDDEN on every key route, whatever it asks.
	forbidden := []struct {
		method, path, body string
	}{
		{http.MethodGet, "/keys", ""},
		{http.MethodPost, "/keys", ""},
		{http.MethodPost, "/keys", `{"label":"escalate","role":"admin"}`},
		{http.MethodPost, "/keys", `{"role":"read"}`},
		{http.MethodDelete, "/keys/" + admin.Key.Prefix, ""},
		{http.MethodDelete, "/keys/" + admin2.Data.Prefix, ""},
		{http.MethodDelete, "/keys/" + explicitRead.Data.Prefix, ""},
		{http.MethodDelete, "/keys/" + read.Data.Prefix, ""},
	}
	for _, f := range forbidden {
		var b []byte
		if f.body != "" {
			b = []byte(f.body)
		}
		r := kn.Do(t, f.method, f.path, b, map[string]string{"x-api-key": read.Data.Key, "Content-Type": "application/json"})
		if r.Status != 403 || r.ErrorCode() != "FORBIDDEN" || !strings.Contains(string(r.Body), "admin role") {
			t.Errorf("read key %s %s %s: %d %s", f.method, f.path, f.body, r.Status, r.Body)
		}
	}
	// Nothing changed: no key was made or revoked by the read key.
	var l keyList
	kn.Do(t, http.MethodGet, "/keys", nil, withKey(admin.Secret)).JSON(t, &l)
	if l.Pagination.Total != 4 {
		t.Fatalf("acme has %d keys after the read key's attempts, want 4", l.Pagination.Total)
	}
	roles := map[string]string{}
	for _, k := range l.Data {
		if k.Revoked {
			t.Errorf("key %s was revoked", k.Prefix)
		}
		roles[k.Prefix] = k.Role
	}
	if roles[admin.Key.Prefix] != "admin" || roles[admin2.Data.Prefix] != "admin" || roles[read.Data.Prefix] != "read" {
		t.Errorf("listed roles %v", roles)
	}

	// Below the routes too: acting as the read key, a key of a higher role
	// is out of reach; one of its own role is not.
	p, reason, err := kn.svc.Authenticate(ctx, read.Data.Key)
	if err != nil || reason != "ok" || p.Role != apikey.RoleRead {
		t.Fatalf("read key principal: %+v %s %v", p, reason, err)
	}
	if _, err := kn.svc.RevokeAs(ctx, p, admin.Key.Prefix); err != apikey.ErrForbidden {
		t.Fatalf("a read principal revoking an admin key: %v, want ErrForbidden", err)
	}
	if r := kn.Do(t, http.MethodGet, "/keys", nil, withKey(admin.Secret)); r.Status != 200 {
		t.Fatalf("the admin key stopped working: %d", r.Status)
	}
	if _, err := kn.svc.RevokeAs(ctx, p, explicitRead.Data.Prefix); err != nil {
		t.Fatalf("a read principal revoking a read key of its account: %v", err)
	}
	// An admin key revokes a read key and another admin key.
	for _, prefix := range []string{read.Data.Prefix, admin2.Data.Prefix} {
		if r := kn.Do(t, http.MethodDelete, "/keys/"+prefix, nil, withKey(admin.Secret)); r.Status != 204 {
			t.Fatalf("admin revokes %s: %d %s", prefix, r.Status, r.Body)
		}
	}
	if status := seam(t, kn, read.Data.Key); status != 401 {
		t.Errorf("revoked read key: %d", status)
	}

	// RequireRole in front of a route that any key may reach otherwise.
	app := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error {
		if e, ok := apierror.As(err); ok {
			return c.Status(e.Status).SendString(e.Code)
		}
		return err
	}})
	app.Get("/x", kn.svc.Require(apikey.RequireOptions{}), apikey.RequireRole(apikey.RoleAdmin), func(c *fiber.Ctx) error { return c.SendString("ran") })
	app.Get("/unauthenticated", apikey.RequireRole(apikey.RoleRead), func(c *fiber.Ctx) error { return c.SendString("ran") })
	_, fresh := create(admin.Secret, "")
	for _, tc := range []struct {
		path, key string
		status    int
	}{
		{"/x", admin.Secret, 200}, {"/x", fresh.Data.Key, 403}, {"/x", "", 401}, {"/unauthenticated", "", 401},
	} {
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		if tc.key != "" {
			req.Header.Set("x-api-key", tc.key)
		}
		res, err := app.Test(req, 5000)
		testenv.Must(t, err, "request")
		if res.StatusCode != tc.status {
			b, _ := io.ReadAll(res.Body)
			t.Errorf("%s with key %t: %d %s, want %d", tc.path, tc.key != "", res.StatusCode, b, tc.status)
		}
	}
}
