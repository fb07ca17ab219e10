package stream

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/attestd/attestd/attestation"
)

func TestSubscriberReceivesNewAttestation(t *testing.T) {
	x := newHarness(t, Config{})
	r, resp := x.open("", nil)
	if r == nil {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("stream compressed: %q", resp.Header.Get("Content-Encoding"))
	}
	first, err := r.next()
	if err != nil || r.retry != "2000" {
		t.Fatalf("first frame: %+v %v, retry %q; want retry: 2000", first, err, r.retry)
	}
	added := x.add(1, 0, attestation.Confirmed)
	e := r.mustNext(t)
	if e.Event != "attestation" || e.ID != cursorOf(added[0]) || e.Data != listItem(t, added[0]) {
		t.Fatalf("event %+v\nwant id %s data %s", e, cursorOf(added[0]), listItem(t, added[0]))
	}
	// The same JSON as the list's item.
	list, err := http.Get(x.node.URL + "/attestations?limit=1")
	if err != nil {
		t.Fatal(err)
	}
	defer list.Body.Close()
	var page struct{ Data []json.RawMessage }
	if err := json.NewDecoder(list.Body).Decode(&page); err != nil || len(page.Data) != 1 {
		t.Fatalf("list: %v %d", err, len(page.Data))
	}
	if string(page.Data[0]) != e.Data {
		t.Fatalf("stream data %s\nlist item   %s", e.Data, page.Data[0])
	}
}

func TestCommitmentAndRemovedEvents(t *testing.T) {
	x := newHarness(t, Config{})
	r, resp := x.open("", nil)
	if r == nil {
		t.Fatalf("status %d", resp.StatusCode)
	}
	added := x.add(2, 1, attestation.Confirmed)
	for i := range added {
		if e := r.mustNext(t); e.Event != "attestation" || e.ID != cursorOf(added[i]) {
			t.Fatalf("event %d: %+v", i, e)
		}
	}
	if _, err := x.env.Store.Finalize(t.Context(), []string{added[0].TxSignature}); err != nil {
		t.Fatal(err)
	}
	e := r.mustNext(t)
	fin := added[0]
	fin.Commitment = attestation.Finalized
	if e.Event != "commitment" || e.ID != "" || e.Data != listItem(t, fin) {
		t.Fatalf("commitment event %+v\nwant data %s", e, listItem(t, fin))
	}
	if _, err := x.env.Store.RemoveTransactions(t.Context(), []string{added[1].TxSignature}); err != nil {
		t.Fatal(err)
	}
	e = r.mustNext(t)
	want := `{"pda":"` + added[1].PDA + `","txSignature":"` + added[1].TxSignature + `"}`
	if e.Event != "removed" || e.ID != "" || e.Data != want {
		t.Fatalf("removed event %+v, want data %s", e, want)
	}
}

func TestBadCursorIs400(t *testing.T) {
	x := newHarness(t, Config{})
	for _, q := range []string{"?after=nope", "?after=" + strings.Repeat("A", 300), "?agentPda=xyz", "?actionType=9", "?limit=5", "?after=a&after=b"} {
		_, resp := x.open(q, nil)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"INVALID_PARAM"`) {
			t.Errorf("%s: %d %s", q, resp.StatusCode, body)
		}
	}
	_, resp := x.open("", http.Header{"Last-Event-ID": {"garbage"}})
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "Last-Event-ID") {
		t.Errorf("bad Last-Event-ID: %d %s", resp.StatusCode, body)
	}
}
