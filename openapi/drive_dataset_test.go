package openapi_test

import (
	"net/http"
	"testing"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/datasetfixture"
)

// driveDataset provokes every documented answer of the dataset's routes
// from 200 to 429, on a node serving a bucket (a directory, through the
// same blob library as S3) that holds one day's file, its manifest and an
// index; its guard allows a burst of 10 requests, then 429.
func driveDataset(t *testing.T, env *apptest.Env) {
	t.Helper()
	b, _ := datasetfixture.Write(t, dataset.Pending{Day: "2026-11-28", Code: dataset.PendingDayOpen, Reason: "the day is open"}, "2026-11-27")
	srv := dataset.NewServer(dataset.ServerDeps{Bucket: b, Config: dataset.Config{Rate: 1}, Logger: apptest.Logger()})
	node := rootOf(env.StartNode(t, apptest.NodeOptions{Configure: func(d *app.Deps) { d.Unlimited = append(d.Unlimited, srv.Routes()...) }}))
	send := func(path string, hdr map[string]string, want int) *apptest.Response {
		t.Helper()
		r := node.Do(t, http.MethodGet, path, nil, hdr)
		if r.Status != want {
			t.Errorf("GET %s %v: %d, want %d: %.300s", path, hdr, r.Status, want, r.Body)
		}
		return r
	}
	for _, p := range []string{"/dataset/index.json", "/dataset/2026-11-27.json", "/dataset/2026-11-27.parquet"} {
		r := send(p, nil, http.StatusOK)
		send(p, map[string]string{"If-None-Match": r.Header.Get("ETag")}, http.StatusNotModified)
	}
	send("/dataset/2026-11-27.parquet", map[string]string{"Range": "bytes=0-3"}, http.StatusPartialContent)
	send("/dataset/2026-11-27.parquet", map[string]string{"Range": "bytes=0-1,4-5"}, http.StatusRequestedRangeNotSatisfiable)
	send("/dataset/2026-11-26.parquet", nil, http.StatusNotFound)
	send("/dataset/2026-11-26.json", nil, http.StatusNotFound)
	// The guard: a burst of 10 requests a second for one address, then 429.
	limited := map[string]bool{}
	for i := 0; i < 30 && len(limited) < 3; i++ {
		for _, p := range []string{"/dataset/index.json", "/dataset/2026-11-27.parquet", "/dataset/2026-11-27.json"} {
			if r := node.Do(t, http.MethodGet, p, nil, map[string]string{"Range": "bytes=0-0"}); r.Status == http.StatusTooManyRequests {
				limited[p] = true
			}
		}
	}
	if len(limited) != 3 {
		t.Errorf("the dataset's guard did not answer 429 on each route: %v", limited)
	}
}
