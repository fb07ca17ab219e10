package httpapi

import (
	"testing"

	"github.com/attestd/attestd/internal/apierror"
)

func TestIsJSON(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json": true, "application/json; charset=utf-8": true, "Application/JSON": true,
		"": false, "text/plain": false, "application/x-www-form-urlencoded": false, "application/jsonx": false,
		"application/json;;": false, "multipart/form-data; boundary=x": false,
	} {
		if IsJSON(ct) != want {
			t.Errorf("%q: %v", ct, !want)
		}
	}
}

func TestRequireJSON(t *testing.T) {
	if err := RequireJSON("application/json; charset=utf-8", ""); err != nil {
		t.Fatal(err)
	}
	for example, want := range map[string]string{
		"":               "send the body as application/json",
		`{"ids": [...]}`: `send the body as application/json: {"ids": [...]}`,
	} {
		e, ok := apierror.As(RequireJSON("text/plain", example))
		if !ok || e.Status != 415 || e.Code != apierror.CodeUnsupportedMedia || e.Message != want {
			t.Errorf("%q: %+v", example, e)
		}
	}
}
