package stream

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/prometheus/client_golang/prometheus/testutil"
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

// sortLikeLog orders one batch as the write path numbers it.
func sortLikeLog(as []attestation.Attestation) []attestation.Attestation {
	out := append([]attestation.Attestation(nil), as...)
	slices.SortStableFunc(out, func(a, b attestation.Attestation) int {
		if c := a.Timestamp.Time.Compare(b.Timestamp.Time); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Slot, b.Slot); c != 0 {
			return c
		}
		return strings.Compare(a.PDA, b.PDA)
	})
	return out
}

// TestResumeExactlyOnce: 1,000 attestations arrive while the client's
// connection is killed 10 times; each reconnect sends Last-Event-ID, and
// the client sees every attestation once, in order.
func TestResumeExactlyOnce(t *testing.T) {
	x := newHarness(t, Config{})
	r, resp := x.open("", nil)
	if r == nil {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if _, err := r.next(); err != nil {
		t.Fatal(err)
	}
	const total, batch = 1000, 10
	want := make(chan []string, total/batch)
	go func() {
		defer close(want)
		for i := 0; i < total/batch; i++ {
			var ids []string
			for _, a := range sortLikeLog(x.add(batch, i, attestation.Confirmed)) {
				ids = append(ids, cursorOf(a))
			}
			want <- ids
		}
	}()
	var got []string
	killAt := map[int]bool{}
	for i := 1; i <= 10; i++ {
		killAt[i*total/11+i*7%13] = true
	}
	kills := 0
	for len(got) < total {
		e := r.mustNext(t)
		if e.Event != "attestation" {
			t.Fatalf("unexpected event %+v", e)
		}
		got = append(got, e.ID)
		if killAt[len(got)] {
			kills++
			r.resp.Body.Close() // the connection dies mid-stream
			r, resp = x.open("", http.Header{"Last-Event-ID": {e.ID}})
			if r == nil {
				t.Fatalf("reconnect %d: status %d", kills, resp.StatusCode)
			}
		}
	}
	var all []string
	for ids := range want {
		all = append(all, ids...)
	}
	if kills != 10 {
		t.Fatalf("killed %d times, want 10", kills)
	}
	if len(all) != total || !slices.Equal(got, all) {
		for i := range min(len(got), len(all)) {
			if got[i] != all[i] {
				t.Fatalf("event %d: got %s, want %s (of %d got, %d written)", i, got[i], all[i], len(got), len(all))
			}
		}
		t.Fatalf("got %d events, want %d", len(got), len(all))
	}
}

func TestFiltersHonoured(t *testing.T) {
	x := newHarness(t, Config{})
	agent := x.env.Seeded.Agents[1].PDA.String()
	byAgent, resp := x.open("?agentPda="+agent, nil)
	if byAgent == nil {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var added []attestation.Attestation
	for i := range 6 {
		added = append(added, sortLikeLog(x.add(5, i, attestation.Confirmed))...)
	}
	typ := added[0].ActionType
	byType, resp := x.open("?actionType="+typ.String()+"&after="+cursorOf(added[0]), nil)
	if byType == nil {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var wantAgent, wantType []string
	for i, a := range added {
		if a.AgentPDA == agent {
			wantAgent = append(wantAgent, cursorOf(a))
		}
		if i > 0 && a.ActionType == typ {
			wantType = append(wantType, cursorOf(a))
		}
	}
	// A last attestation matching both marks the end.
	last := x.add(1, 1, attestation.Confirmed)[0]
	wantAgent = append(wantAgent, cursorOf(last))
	if last.ActionType == typ {
		wantType = append(wantType, cursorOf(last))
	}
	for name, c := range map[string]struct {
		r    *sseReader
		want []string
	}{"agentPda": {byAgent, wantAgent}, "actionType": {byType, wantType}} {
		var got []string
		for len(got) < len(c.want) {
			got = append(got, c.r.mustNext(t).ID)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v\nwant %v", name, got, c.want)
		}
	}
}

func TestPerIPCap(t *testing.T) {
	x := newHarness(t, Config{MaxPerIP: 2})
	a, _ := x.open("", nil)
	b, _ := x.open("", nil)
	if a == nil || b == nil {
		t.Fatal("first two streams refused")
	}
	_, resp := x.open("", nil)
	body, _ := io.ReadAll(resp.Body)
	var env struct {
		Error struct{ Code, Message string }
	}
	if resp.StatusCode != http.StatusTooManyRequests || json.Unmarshal(body, &env) != nil || env.Error.Code != "RATE_LIMITED" ||
		resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third stream: %d %s", resp.StatusCode, body)
	}
	a.resp.Body.Close()
	testenv.WaitFor(t, "the closed stream's slot given back", testenv.Patience, func() bool { return x.h.Open() == 1 })
	if c, resp := x.open("", nil); c == nil {
		t.Fatalf("after one closed: %d", resp.StatusCode)
	}
	if got := testutil.ToFloat64(x.h.m.refused.WithLabelValues("per_ip")); got != 1 {
		t.Fatalf("refused per_ip = %v, want 1", got)
	}
}

// TestSlowReaderDropped: a client that never reads is dropped once a write
// is not taken within the write timeout; the node holds nothing for it.
func TestSlowReaderDropped(t *testing.T) {
	x := newHarness(t, Config{WriteTimeout: 300 * time.Millisecond})
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", strings.TrimPrefix(x.node.Root, "http://"))
	testenv.Must(t, err, "dial")
	defer c.Close()
	if _, err := io.WriteString(c, "GET /api/v1/attestations/stream HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "stream open", testenv.Patience, func() bool { return x.h.Open() == 1 })
	for i := 0; testutil.ToFloat64(x.h.m.dropped) == 0; i++ {
		if i == 200 {
			t.Fatal("a client that never reads was not dropped after 20,000 attestations")
		}
		x.add(100, i, attestation.Confirmed)
	}
	testenv.WaitFor(t, "dropped stream closed", testenv.Patience, func() bool { return x.h.Open() == 0 })
	x.hub.mu.RLock()
	n := len(x.hub.ring)
	x.hub.mu.RUnlock()
	if n > ringSize {
		t.Fatalf("ring holds %d rows", n)
	}
	// The node still streams to others.
	r, _ := x.open("", nil)
	added := x.add(1, 0, attestation.Confirmed)
	if e := r.mustNext(t); e.ID != cursorOf(added[0]) {
		t.Fatalf("after the drop: %+v", e)
	}
}

func TestCursorTooOldOrUnknownIsErrorEvent(t *testing.T) {
	x := newHarness(t, Config{})
	old := x.add(1, 0, attestation.Confirmed)[0]
	if _, err := x.hub.st.PruneStream(t.Context(), time.Now().Add(time.Hour), 1000); err != nil {
		t.Fatal(err)
	}
	unknown := old
	unknown.PDA = "11111111111111111111111111111112"
	for name, c := range map[string]struct {
		cursor, code string
	}{"too old": {cursorOf(old), CodeCursorTooOld}, "unknown": {cursorOf(unknown), CodeCursorUnknown}} {
		r, resp := x.open("", http.Header{"Last-Event-ID": {c.cursor}})
		if r == nil {
			t.Fatalf("%s: status %d", name, resp.StatusCode)
		}
		e := r.mustNext(t)
		var env struct {
			Error struct{ Code, Message string }
		}
		if e.Event != "error" || e.ID != "" || json.Unmarshal([]byte(e.Data), &env) != nil || env.Error.Code != c.code {
			t.Fatalf("%s: %+v, want an error event %s", name, e, c.code)
		}
		if _, err := r.nextEvent(); err != io.EOF {
			t.Fatalf("%s: after the error event: %v, want the end", name, err)
		}
	}
}

// TestResumeFromListCursor: a list's nextCursor resumes too: every
// attestation the log holds after it, oldest first.
func TestResumeFromListCursor(t *testing.T) {
	x := newHarness(t, Config{})
	first := sortLikeLog(x.add(3, 0, attestation.Confirmed))
	second := sortLikeLog(x.add(3, 1, attestation.Confirmed))
	r, _ := x.open("?after="+cursorOf(first[1]), nil)
	for _, a := range append(first[2:], second...) {
		if e := r.mustNext(t); e.ID != cursorOf(a) || e.Data != listItem(t, a) {
			t.Fatalf("got %+v, want %s", e, cursorOf(a))
		}
	}
}

func TestHeartbeatLifetimeAndDrain(t *testing.T) {
	x := newHarness(t, Config{Heartbeat: 100 * time.Millisecond, Lifetime: 2 * time.Second})
	r, _ := x.open("", nil)
	sawComment := false
	for {
		e, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("stream did not end cleanly at its lifetime: %v", err)
		}
		sawComment = sawComment || e.Comment
	}
	if !sawComment {
		t.Fatal("no heartbeat comment")
	}
	testenv.WaitFor(t, "lifetime end counted", testenv.Patience, func() bool { return testutil.ToFloat64(x.h.m.ended.WithLabelValues("lifetime")) == 1 })

	r, _ = x.open("", nil)
	x.hub.Drain()
	for {
		_, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("stream did not end cleanly at drain: %v", err)
		}
	}
	_, resp := x.open("", nil)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a stream opened while draining: %d", resp.StatusCode)
	}
}

func TestHeadAndOtherMethods(t *testing.T) {
	x := newHarness(t, Config{})
	req, _ := http.NewRequest(http.MethodHead, x.node.URL+"/attestations/stream", nil)
	resp, err := streamClient.Do(req)
	testenv.Must(t, err, "head")
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || x.h.Open() != 0 {
		t.Fatalf("HEAD: %d %q open %d", resp.StatusCode, resp.Header.Get("Content-Type"), x.h.Open())
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, x.node.URL+"/attestations/stream", nil)
		resp, err := streamClient.Do(req)
		testenv.Must(t, err, "%s", m)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(string(body), "METHOD_NOT_ALLOWED") {
			t.Errorf("%s: %d %s", m, resp.StatusCode, body)
		}
	}
}

// TestGoClientResumes: the Go client follows streams the server ends (a
// one-second lifetime) and resumes each with the last id: every attestation
// once, in order.
func TestGoClientResumes(t *testing.T) {
	x := newHarness(t, Config{Lifetime: time.Second})
	cl, err := client.New(x.node.Root)
	testenv.Must(t, err, "client")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	got := make(chan string, 10000)
	done := make(chan error, 1)
	go func() {
		done <- cl.Stream(ctx, client.StreamParams{AgentPDA: x.env.Seeded.Agents[2].PDA.String()}, func(e client.StreamEvent) error {
			if e.Type == client.StreamAttestation {
				got <- e.ID
			}
			return nil
		})
	}()
	testenv.WaitFor(t, "client connected", testenv.Patience, func() bool { return x.h.Open() == 1 })
	var want []string
	// Attestations keep arriving until the server has ended two streams
	// (each resumed by the client).
	for i := 0; i < 8 || testutil.ToFloat64(x.h.m.ended.WithLabelValues("lifetime")) < 2; i++ {
		if i == 200 {
			t.Fatal("the server did not end two streams")
		}
		for _, a := range sortLikeLog(x.add(5, 2, attestation.Confirmed)) {
			want = append(want, cursorOf(a))
		}
		x.add(2, i%2, attestation.Confirmed) // other agents: filtered out
		time.Sleep(200 * time.Millisecond)
	}
	var seen []string
	for len(seen) < len(want) {
		select {
		case id := <-got:
			seen = append(seen, id)
		case err := <-done:
			t.Fatalf("Stream returned %v", err)
		case <-time.After(testenv.Patience):
			// Not a fixed 30 s: a client whose reconnections failed on a
			// loaded machine backs off up to 30 s (MaxBackoff) before it
			// resumes; a lost event is still never received.
			t.Fatalf("got %d of %d events", len(seen), len(want))
		}
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("got %v\nwant %v", seen, want)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Stream returned %v after cancel", err)
	}
}

// TestGoClientStopsOnErrorEvent: a cursor the server cannot resume from is
// an *APIError, not a reconnection loop.
func TestGoClientStopsOnErrorEvent(t *testing.T) {
	x := newHarness(t, Config{})
	cl, err := client.New(x.node.Root)
	testenv.Must(t, err, "client")
	a := x.add(1, 0, attestation.Confirmed)[0]
	a.PDA = "11111111111111111111111111111112"
	err = cl.Stream(t.Context(), client.StreamParams{After: cursorOf(a)}, func(client.StreamEvent) error { return nil })
	if e, ok := client.AsAPIError(err); !ok || e.Code != CodeCursorUnknown {
		t.Fatalf("Stream returned %v, want CURSOR_UNKNOWN", err)
	}
	err = cl.Stream(t.Context(), client.StreamParams{AgentPDA: "nope"}, func(client.StreamEvent) error { return nil })
	if client.StatusOf(err) != http.StatusBadRequest {
		t.Fatalf("bad filter: %v", err)
	}
}

// TestRateAndConnectionLimits: opening a stream is one request against the
// rate limit and its events are none; a stream holds one of its IP's
// connections under the connection cap, and gives it back when it ends.
func TestRateAndConnectionLimits(t *testing.T) {
	x := newHarnessWith(t, Config{}, func(env *apptest.Env, d *app.Deps) {
		d.Middleware = append(d.Middleware, env.NewLimiter(t, 6).Middleware())
		d.ConnLimit = app.ConnLimit{PerIP: 2}
	})
	a, resp := x.open("", nil) // request 1
	if a == nil {
		t.Fatalf("stream a: %d", resp.StatusCode)
	}
	if b, resp := x.open("", nil); b == nil { // request 2
		t.Fatalf("stream b: %d", resp.StatusCode)
	}
	get := func(c *http.Client) (int, string) {
		res, err := c.Get(x.node.URL + "/attestations?limit=1")
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	// A third connection is refused at once (the node answers before any
	// request).
	third, err := net.Dial("tcp", strings.TrimPrefix(x.node.Root, "http://"))
	testenv.Must(t, err, "dial")
	refused, err := http.ReadResponse(bufio.NewReader(third), nil)
	testenv.Must(t, err, "read the refusal")
	body, _ := io.ReadAll(refused.Body)
	third.Close()
	if refused.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "open connections") {
		t.Fatalf("a third connection: %d %s, want the connection cap's 429", refused.StatusCode, body)
	}
	for _, added := range sortLikeLog(x.add(3, 0, attestation.Confirmed)) { // events: not requests
		if e := a.mustNext(t); e.ID != cursorOf(added) {
			t.Fatalf("event %+v", e)
		}
	}
	a.resp.Body.Close()
	// Its connection is given back (a refused connection is no request).
	// Then one kept-alive connection for the reads: with stream b, the
	// cap's two.
	reads := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}}
	testenv.WaitFor(t, "stream a's connection given back", testenv.Patience, func() bool {
		status, body := get(reads)
		if status == http.StatusOK {
			return true
		}
		if status != 0 && !strings.Contains(body, "open connections") { // 0: refused before the request was sent
			t.Fatalf("request 3: %d %s", status, body)
		}
		return false
	})
	for i := 4; i <= 6; i++ {
		if status, body := get(reads); status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, status, body)
		}
	}
	if status, body := get(reads); status != http.StatusTooManyRequests || !strings.Contains(body, "RATE_LIMITED") {
		t.Fatalf("request 7: %d %s, want the rate limit's 429", status, body)
	}
}

// TestOneSubscriptionPerNode: however many clients, the node's hub holds
// one subscription to the epoch channel.
func TestOneSubscriptionPerNode(t *testing.T) {
	x := newHarness(t, Config{})
	channel := x.env.Prefix + "epoch"
	subs := func() int64 {
		n, err := x.node.Redis.PubSubNumSub(t.Context(), channel).Result()
		testenv.Must(t, err, "PUBSUB NUMSUB")
		return n[channel]
	}
	before := subs()
	var rs []*sseReader
	for range 20 {
		r, resp := x.open("", nil)
		if r == nil {
			t.Fatalf("status %d", resp.StatusCode)
		}
		rs = append(rs, r)
	}
	added := x.add(1, 0, attestation.Confirmed)[0]
	for _, r := range rs {
		if e := r.mustNext(t); e.ID != cursorOf(added) {
			t.Fatalf("event %+v", e)
		}
	}
	if after := subs(); after != before {
		t.Fatalf("epoch channel subscribers: %d with 20 streams, %d without", after, before)
	}
}

// TestMissedAnnouncementsStillDelivered: a hub that hears no announcement
// at all (no subscription) still delivers every attestation, in order, by
// its poll: the announcement only wakes it up.
func TestMissedAnnouncementsStillDelivered(t *testing.T) {
	x := newHarness(t, Config{})
	hub := NewHub(HubDeps{Store: x.hub.st, Config: Config{Poll: 50 * time.Millisecond}, Logger: x.hub.log})
	t.Cleanup(hub.Close)
	h := New(Deps{Hub: hub})
	node := x.env.StartNode(t, apptest.NodeOptions{Configure: func(d *app.Deps) { d.Stream = h.Serve }})
	testenv.WaitFor(t, "deaf hub ready", testenv.Patience, func() bool { _, ok := hub.position(); return ok })
	req, _ := http.NewRequest(http.MethodGet, node.URL+"/attestations/stream", nil)
	resp, err := streamClient.Do(req)
	testenv.Must(t, err, "open")
	defer resp.Body.Close()
	r := &sseReader{resp: resp, br: bufio.NewReader(resp.Body)}
	var want []string
	for i := range 5 {
		for _, a := range sortLikeLog(x.add(4, i, attestation.Confirmed)) {
			want = append(want, cursorOf(a))
		}
	}
	for i, id := range want {
		if e := r.mustNext(t); e.ID != id {
			t.Fatalf("event %d: %s, want %s", i, e.ID, id)
		}
	}
}

// TestRemovedBeforeSent: a client resuming from before an attestation a
// fork has removed since gets its removal, after the attestation when the
// node had read it before the fork (from memory), or alone (from
// PostgreSQL, where it is gone): either way its view ends exact.
func TestRemovedBeforeSent(t *testing.T) {
	x := newHarness(t, Config{})
	first := x.add(1, 0, attestation.Confirmed)[0]
	gone := x.add(1, 1, attestation.Confirmed)[0]
	if _, err := x.env.Store.RemoveTransactions(t.Context(), []string{gone.TxSignature}); err != nil {
		t.Fatal(err)
	}
	r, resp := x.open("?after="+cursorOf(first), nil)
	if r == nil {
		t.Fatalf("status %d", resp.StatusCode)
	}
	e := r.mustNext(t)
	if e.Event == "attestation" && e.ID == cursorOf(gone) {
		e = r.mustNext(t)
	}
	if e.Event != "removed" || !strings.Contains(e.Data, gone.PDA) {
		t.Fatalf("event %+v, want the removal of %s", e, gone.PDA)
	}
	next := x.add(1, 2, attestation.Confirmed)[0]
	if e := r.mustNext(t); e.Event != "attestation" || e.ID != cursorOf(next) {
		t.Fatalf("then %+v, want %s", e, cursorOf(next))
	}

	// A node started after the fork reads the log from PostgreSQL: the
	// removed attestation is left out, its removal comes.
	hub := NewHub(HubDeps{Store: x.hub.st, Redis: apptest.NewRedis(t, x.env.RedisURL), Prefix: x.env.Prefix, Logger: x.hub.log})
	t.Cleanup(hub.Close)
	h := New(Deps{Hub: hub})
	node := x.env.StartNode(t, apptest.NodeOptions{Configure: func(d *app.Deps) { d.Stream = h.Serve }})
	testenv.WaitFor(t, "second hub ready", testenv.Patience, func() bool { _, ok := hub.position(); return ok })
	req, _ := http.NewRequest(http.MethodGet, node.URL+"/attestations/stream?after="+cursorOf(first), nil)
	resp, err := streamClient.Do(req)
	testenv.Must(t, err, "open")
	defer resp.Body.Close()
	r2 := &sseReader{resp: resp, br: bufio.NewReader(resp.Body)}
	if e := r2.mustNext(t); e.Event != "removed" || !strings.Contains(e.Data, gone.PDA) {
		t.Fatalf("from PostgreSQL: %+v, want the removal of %s alone", e, gone.PDA)
	}
	if e := r2.mustNext(t); e.ID != cursorOf(next) {
		t.Fatalf("from PostgreSQL, then %+v, want %s", e, cursorOf(next))
	}
}
