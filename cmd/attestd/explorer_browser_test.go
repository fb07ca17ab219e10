package main

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// commas writes n with thousands separators, as the explorer shows counts.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// widths are the viewport widths every page must fit: two phones, a
// tablet, a desktop.
var widths = []int64{360, 390, 768, 1440}

// axeSource is axe-core's browser bundle, installed from npm
// (testdata/axe: package.json and package-lock.json).
func axeSource(t *testing.T) string {
	t.Helper()
	modules := testenv.NodeModules(t, filepath.Join("testdata", "axe"))
	b, err := os.ReadFile(filepath.Join(modules, "axe-core", "axe.min.js"))
	testenv.Must(t, err, "read axe.min.js")
	return string(b)
}

type axeViolation struct {
	ID, Impact, Help string
	Nodes            []string
}

// axe runs axe-core on the page (WCAG 2.0, 2.1 and 2.2 A and AA, and best
// practices) and fails the test on every serious or critical violation;
// it returns how many violations of each impact it found.
func (b *browser) axe(t *testing.T, src, what string) map[string]int {
	t.Helper()
	if !eval[bool](t, b, `typeof window.axe === "object"`) {
		if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[chromedp.Void](src)); err != nil {
			t.Fatalf("inject axe-core: %v", err)
		}
	}
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]axeViolation](`axe.run(document, {resultTypes: ["violations"]}).then((r) =>
		r.violations.map((v) => ({ID: v.id, Impact: v.impact || "", Help: v.help, Nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" "))})))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe on %s: %v", what, err)
	}
	counts := map[string]int{}
	for _, x := range v {
		counts[x.Impact]++
		if x.Impact == "serious" || x.Impact == "critical" {
			t.Errorf("%s: axe %s violation %s (%s) at %q", what, x.Impact, x.ID, x.Help, x.Nodes)
		} else {
			t.Logf("%s: axe %s violation %s (%s) at %q", what, x.Impact, x.ID, x.Help, x.Nodes)
		}
	}
	return counts
}

// fits fails the test when the page is wider than the viewport.
func (b *browser) fits(t *testing.T, what string) {
	t.Helper()
	m := eval[struct{ Scroll, Inner int }](t, b, `({Scroll: document.documentElement.scrollWidth, Inner: window.innerWidth})`)
	if m.Scroll > m.Inner {
		wide := eval[[]string](t, b, `[...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5)
			.slice(0, 8).map((e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className && typeof e.className === "string" ? "." + e.className : "") + " right=" + Math.round(e.getBoundingClientRect().right))`)
		t.Errorf("%s: the page is %d px wide in a %d px viewport; too wide: %q", what, m.Scroll, m.Inner, wide)
	}
}

// shootWidth saves the page at the current width under
// ATTESTD_TEST_SCREENSHOTS (unset: none).
func (b *browser) shootWidth(t *testing.T, what string, width int64) {
	t.Helper()
	dir := os.Getenv("ATTESTD_TEST_SCREENSHOTS")
	if dir == "" {
		return
	}
	testenv.Must(t, os.MkdirAll(dir, 0o755), "screenshot directory")
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	testenv.Must(t, err, "screenshot of %s", what)
	name := fmt.Sprintf("%s-%d.png", strings.NewReplacer(" ", "-", "/", "-").Replace(what), width)
	testenv.Must(t, os.WriteFile(filepath.Join(dir, name), png, 0o644), "write %s", name)
	// The first screen alone, at full size, for a person to read.
	png, err = chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	testenv.Must(t, err, "screenshot of %s", what)
	name = fmt.Sprintf("%s-%d-screen.png", strings.NewReplacer(" ", "-", "/", "-").Replace(what), width)
	testenv.Must(t, os.WriteFile(filepath.Join(dir, name), png, 0o644), "write %s", name)
}

// explorerPage is a page of the explorer and what says it has rendered.
type explorerPage struct{ name, hash, ready string }

func explorerPages(n *webNode, pda, agent, tx string) []explorerPage {
	return []explorerPage{
		{"home", "#/", `document.querySelector("#att-rows tr[data-pda]") && document.querySelector("#overview [data-stat]") && document.querySelector("#activity svg") && document.querySelector("#top-rows tr")`},
		{"list", "#/attestations", `document.querySelector("#att-rows tr[data-pda]")`},
		{"attestation", "#/attestation/" + pda, `document.querySelector("[data-field=commitment]") && document.getElementById("log-proof")`},
		{"agent", "#/agent/" + agent, `document.querySelector("#activity svg") && document.getElementById("activity-note").textContent.length > 0`},
		{"agents", "#/agents", `document.querySelector("#agent-rows tr[data-agent]")`},
		{"stats", "#/stats", `document.querySelector("#activity svg") && document.getElementById("activity-note").textContent.length > 0`},
		{"search", "#/search?q=" + tx, `document.querySelector("#search-rows tr[data-pda]")`},
		{"api", "#/api", `document.querySelector(".op[data-operation=listAttestations] table")`},
		{"console", "#/console", `document.getElementById("sign-in")`},
	}
}

// TestBrowserEveryPageFitsAndPassesAxe opens every page of the web
// application at 360, 390, 768 and 1440 px: none is wider than the
// screen, no word in any table is broken inside, and axe-core finds no
// serious or critical violation on any.
func TestBrowserEveryPageFitsAndPassesAxe(t *testing.T) {
	t.Parallel()
	src := axeSource(t)
	b := startBrowser(t)
	n := startWebNode(t)
	var page struct{ Data []apiAttestation }
	n.apiGet(t, "/attestations?limit=1", "", &page)
	pda, agent := page.Data[0]["pda"].(string), page.Data[0]["agentPda"].(string)
	var tx string
	testenv.Must(t, n.env.Store.Pool().QueryRow(context.Background(),
		`SELECT tx_signature FROM attestations GROUP BY tx_signature HAVING count(*) > 1 LIMIT 1`).Scan(&tx), "a transaction of several attestations")
	b.do(t, "open the explorer", chromedp.Navigate(n.root+"/"))
	totals := map[string]int{}
	pages := explorerPages(n, pda, agent, tx)
	for _, w := range widths {
		b.do(t, "viewport", chromedp.EmulateViewport(w, 900))
		for _, p := range pages {
			what := fmt.Sprintf("%s at %d px", p.name, w)
			b.do(t, "open "+what, chromedp.Navigate(n.root+"/"+p.hash))
			b.waitFor(t, what, rendered(p.hash)+" && "+p.ready, 20*time.Second)
			b.fits(t, what)
			b.wordsWhole(t, what)
			for k, v := range b.axe(t, src, what) {
				totals[k] += v
			}
			b.shootWidth(t, p.name, w)
		}
	}
	t.Logf("axe-core over %d page views: violations by impact %v (serious and critical fail the test)", len(widths)*len(pages), totals)
}

// TestBrowserVerifyBox: the payload check hashes the bytes and the RFC
// 8785 form, says which matched, refuses an empty box, and offers a
// published sample payload that matches.
func TestBrowserVerifyBox(t *testing.T) {
	t.Parallel()
	b := startBrowser(t)
	n := startWebNode(t)
	agent := n.env.Seeded.Agents[0]
	canonical := `{"a":1,"b":[true,null,"x"],"c":{"d":"é"}}`
	recs := seed.NewAttestations([]seed.Agent{agent}, 1, time.Now(), 1<<40, 77)
	recs[0].ActionHash = sha256.Sum256([]byte(canonical))
	copy(recs[0].Signature[:], ed25519.Sign(agent.Key, recs[0].ActionHash[:]))
	if _, err := n.env.Store.Apply(context.Background(), &store.Batch{Attestations: recs}); err != nil {
		t.Fatal(err)
	}
	b.do(t, "open the attestation", chromedp.Navigate(n.root+"/#/attestation/"+recs[0].PDA))
	b.waitFor(t, "the attestation page", `document.getElementById("verify-form")`, 10*time.Second)
	check := func(what, payload, want, form string) {
		t.Helper()
		eval[bool](t, b, fmt.Sprintf(`(() => { const p = document.getElementById("payload"); p.value = %q; document.getElementById("verify-result").replaceChildren(); return true; })()`, payload))
		b.do(t, "verify "+what, chromedp.Click(chromedp.CSS("#verify-form button[type=submit]")))
		b.waitFor(t, what, `document.querySelector("#verify-result [data-result]")`, 5*time.Second)
		got := eval[[]string](t, b, `(() => { const r = document.querySelector("#verify-result [data-result]"); return [r.dataset.result, r.dataset.form || "", r.innerText]; })()`)
		if got[0] != want || got[1] != form {
			t.Errorf("%s: result %q form %q (%s), want %q %q", what, got[0], got[1], got[2], want, form)
		}
	}
	check("the exact bytes", canonical, "match", "raw")
	check("the same JSON spaced and reordered", "{\n  \"c\": {\"d\": \"\\u00e9\"},\n  \"b\": [true, null, \"x\"],\n  \"a\": 1.0\n}", "match", "canonical")
	check("other JSON", `{"a":2}`, "mismatch", "")
	check("not JSON", `hello`, "mismatch", "")
	check("an empty box", ``, "empty", "")
	if msg := eval[string](t, b, `document.querySelector("#verify-result [data-result]").innerText`); !strings.Contains(msg, "empty") {
		t.Errorf("the empty box says %q", msg)
	}
	if eval[bool](t, b, `!!document.getElementById("try-sample")`) {
		t.Error("an attestation without a published payload offers a sample")
	}

	// Copy buttons: reached by keyboard, they copy the whole value and say
	// so through the live region. (The clipboard is recorded in the page:
	// headless Chromium grants no clipboard.)
	eval[bool](t, b, `Object.defineProperty(navigator, "clipboard", {value: {writeText: async (t) => { window.__copied = t; }}}); true`)
	b.do(t, "copy the action hash by keyboard", chromedp.Focus(chromedp.CSS(`button[aria-label="Copy action hash"]`)), chromedp.KeyEvent("\r"))
	b.waitFor(t, "copied", `document.getElementById("announcer").textContent === "Copied action hash"`, 5*time.Second)
	if got := eval[string](t, b, `window.__copied`); got != fmt.Sprintf("%x", recs[0].ActionHash) {
		t.Errorf("the copy button copied %q", got)
	}
	if n := eval[int](t, b, `document.querySelectorAll("button.copy").length`); n < 6 {
		t.Errorf("the attestation page has %d copy buttons, want one per id and hash (6)", n)
	}

	// A seeded attestation whose payload is published: the page offers it,
	// and it matches.
	if len(n.env.Seeded.Samples) == 0 {
		t.Fatal("the seed published no sample payload")
	}
	s := n.env.Seeded.Samples[0]
	b.do(t, "open a sample", chromedp.Navigate(n.root+"/#/attestation/"+s.PDA))
	b.waitFor(t, "the sample button", `document.getElementById("try-sample")`, 10*time.Second)
	b.do(t, "try the sample", chromedp.Click(chromedp.ID("try-sample")), chromedp.Click(chromedp.CSS("#verify-form button[type=submit]")))
	b.waitFor(t, "the sample matches", `document.querySelector("#verify-result [data-result=match][data-form=raw]")`, 5*time.Second)
	if got := eval[string](t, b, `document.getElementById("payload").value`); got != s.Payload {
		t.Errorf("the sample button filled %q, the seed published %q", got, s.Payload)
	}
	b.checkPage(t, "verify box")
}

// TestBrowserPaging: the list pages by cursor (Older, Newer, Newest), each
// page the API's, the cursor in the URL; the agents page lists every agent.
func TestBrowserPaging(t *testing.T) {
	t.Parallel()
	b := startBrowser(t)
	n := startWebNode(t)
	var p1, p2, p3 struct {
		Data       []apiAttestation
		Pagination struct{ NextCursor string }
	}
	n.apiGet(t, "/attestations?limit=25", "", &p1)
	n.apiGet(t, "/attestations?limit=25&cursor="+p1.Pagination.NextCursor, "", &p2)
	n.apiGet(t, "/attestations?limit=25&cursor="+p2.Pagination.NextCursor, "", &p3)
	rows := func() []string {
		return eval[[]string](t, b, `[...document.querySelectorAll("#att-rows tr[data-pda]")].map((r) => r.dataset.pda)`)
	}
	same := func(what string, want []apiAttestation) {
		t.Helper()
		got := rows()
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows, the API %d", what, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i]["pda"] {
				t.Errorf("%s row %d: %s, the API %s", what, i, got[i], want[i]["pda"])
			}
		}
	}
	first := func(pda any) string {
		return fmt.Sprintf(`document.querySelector("#att-rows tr[data-pda]") && document.querySelector("#att-rows tr[data-pda]").dataset.pda === %q`, pda)
	}
	b.do(t, "open the explorer", chromedp.Navigate(n.root+"/#/attestations"))
	b.waitFor(t, "page 1", first(p1.Data[0]["pda"]), 20*time.Second)
	same("page 1", p1.Data)
	if eval[bool](t, b, `!!document.getElementById("page-newer")`) {
		t.Error("the first page offers newer")
	}
	b.do(t, "older", chromedp.Click(chromedp.ID("page-older")))
	b.waitFor(t, "page 2", first(p2.Data[0]["pda"]), 10*time.Second)
	same("page 2", p2.Data)
	b.do(t, "older again", chromedp.Click(chromedp.ID("page-older")))
	b.waitFor(t, "page 3", first(p3.Data[0]["pda"]), 10*time.Second)
	same("page 3", p3.Data)
	if h := eval[string](t, b, `location.hash`); !strings.Contains(h, "cursor="+p2.Pagination.NextCursor) {
		t.Errorf("page 3's URL %q lacks its cursor", h)
	}
	b.do(t, "newer", chromedp.Click(chromedp.ID("page-newer")))
	b.waitFor(t, "page 2 again", first(p2.Data[0]["pda"]), 10*time.Second)
	b.do(t, "newer again", chromedp.Click(chromedp.ID("page-newer")))
	b.waitFor(t, "page 1 again", first(p1.Data[0]["pda"]), 10*time.Second)
	b.do(t, "older by keyboard", chromedp.Focus(chromedp.ID("page-older")), chromedp.KeyEvent("\r"))
	b.waitFor(t, "page 2 by keyboard", first(p2.Data[0]["pda"]), 10*time.Second)
	b.do(t, "newest", chromedp.Click(chromedp.ID("page-newest")))
	b.waitFor(t, "page 1 from newest", first(p1.Data[0]["pda"]), 10*time.Second)

	var agents struct {
		Data []struct {
			PDA              string
			AttestationCount int64
		}
	}
	n.apiGet(t, "/agents?limit=25", "", &agents)
	b.do(t, "open the agents", chromedp.Navigate(n.root+"/#/agents"))
	b.waitFor(t, "the agents page", `document.querySelector("#agent-rows tr[data-agent]")`, 10*time.Second)
	got := eval[[]string](t, b, `[...document.querySelectorAll("#agent-rows tr[data-agent]")].map((r) => r.dataset.agent + " " + r.cells[1].innerText)`)
	if len(got) != len(agents.Data) {
		t.Fatalf("agents page: %d rows, the API %d", len(got), len(agents.Data))
	}
	for i, a := range agents.Data {
		if want := a.PDA + " " + commas(a.AttestationCount); got[i] != want {
			t.Errorf("agents row %d: %q, want %q", i, got[i], want)
		}
	}
	b.checkPage(t, "agents page")
}

// TestBrowserConsoleWithoutWallet: without a wallet the console says how
// to get one (links) and, on a node served from this machine, offers a
// local test wallet that signs in.
func TestBrowserConsoleWithoutWallet(t *testing.T) {
	t.Parallel()
	b := startBrowser(t)
	n := startWebNode(t)
	b.do(t, "open the stats", chromedp.Navigate(n.root+"/#/stats"))
	eval[bool](t, b, `delete window.solana; true`)
	b.do(t, "open the console", chromedp.Navigate(n.root+"/#/console"))
	b.waitFor(t, "the no-wallet help", `document.getElementById("no-wallet")`, 10*time.Second)
	links := eval[[]string](t, b, `[...document.querySelectorAll("#no-wallet a")].map((a) => a.href)`)
	for _, w := range []string{"phantom.com", "solflare.com", "backpack.app"} {
		if !strings.Contains(strings.Join(links, " "), w) {
			t.Errorf("no link to %s in %q", w, links)
		}
	}
	if !eval[bool](t, b, `document.getElementById("sign-in").disabled`) {
		t.Error("the sign-in button is enabled without a wallet")
	}
	// A disabled button looks disabled: not the enabled button's colours.
	if look := eval[[]string](t, b, `(() => { const s = getComputedStyle(document.getElementById("sign-in")); return [s.backgroundColor, s.cursor, s.borderStyle]; })()`); look[0] == "rgb(11, 87, 208)" || look[1] != "not-allowed" || look[2] != "dashed" {
		t.Errorf("the disabled sign-in button looks enabled: background %s, cursor %s, border %s", look[0], look[1], look[2])
	}
	b.checkPage(t, "console without a wallet")
	b.do(t, "use a test wallet", chromedp.Click(chromedp.ID("use-test-wallet")))
	b.waitFor(t, "the test wallet", `document.getElementById("test-wallet-address") && !document.getElementById("sign-in").disabled`, 10*time.Second)
	if eval[bool](t, b, `!!document.getElementById("no-wallet")`) {
		t.Error(`"No Solana wallet in this browser" stays on the page once the test wallet is ready`)
	}
	b.checkPage(t, "console with the test wallet ready")
	b.do(t, "sign in", chromedp.Click(chromedp.ID("sign-in")))
	b.waitFor(t, "signed in", `document.getElementById("account-name")`, 15*time.Second)
	addr := eval[string](t, b, `window.solana.publicKey.toBase58()`)
	if acct := eval[string](t, b, `document.getElementById("account-name").innerText`); acct != "wallet."+addr {
		t.Errorf("signed in as %q with test wallet %s", acct, addr)
	}
}

// TestBrowserLiveStream: the explorer shows an attestation created after
// the page loaded, without any polling request: one EventSource on
// /attestations/stream, no further /attestations fetch.
//
// NEEDS THE STREAM (issue 23, GET /api/v1/attestations/stream, built on
// another branch): until the lead merges it, this test fails at its first
// check, which says the endpoint answers 404.
func TestBrowserLiveStream(t *testing.T) {
	t.Parallel()
	n := startWebNode(t)
	// A node just started answers 503 with Retry-After until its stream hub
	// has read the log's head; an EventSource retries, and so does this.
	var res *http.Response
	testenv.WaitForState(t, "the stream past its 503 with Retry-After", testenv.Patience, testenv.Every(500*time.Millisecond, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.api+"/attestations/stream", nil)
		testenv.Must(t, err, "request")
		req.Header.Set("Accept", "text/event-stream")
		res, err = http.DefaultClient.Do(req)
		testenv.Must(t, err, "GET /attestations/stream")
		res.Body.Close()
		return res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "",
			fmt.Sprintf("%s, Retry-After %q", res.Status, res.Header.Get("Retry-After"))
	}))
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /api/v1/attestations/stream answers %d %q, not a text/event-stream: the stream endpoint is not on this branch (without it the path falls to GET /attestations/:id, 400; it lands with the stream work of issue 23)",
			res.StatusCode, res.Header.Get("Content-Type"))
	}

	b := startBrowser(t)
	// Count the EventSources the page opens.
	b.do(t, "count event sources", func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `window.__es = []; window.EventSource = class extends window.EventSource { constructor(u, o) { super(u, o); window.__es.push(String(u)); } };`})
		return chromedp.Void{}, err
	})
	b.do(t, "open the explorer", chromedp.Navigate(n.root+"/"))
	b.waitFor(t, "the list renders", `document.querySelectorAll("#att-rows tr[data-pda]").length > 0`, 20*time.Second)
	b.waitFor(t, "the stream is open", `document.getElementById("live-status").innerText.includes("live")`, 10*time.Second)
	eval[bool](t, b, `window.__sameDocument = true`)
	fetches := `performance.getEntriesByType("resource").filter((e) => /\/api\/v1\/attestations(\?|$)/.test(e.name)).length`
	before := eval[int](t, b, fetches)
	var page struct{ Data []apiAttestation }
	n.apiGet(t, "/attestations?limit=1", "", &page)
	agent := n.env.Seeded.Agents[0]
	recs := seed.NewAttestations([]seed.Agent{agent}, 1, time.Now(), uint64(page.Data[0]["slot"].(float64))+1000, 4243)
	if _, err := n.env.Store.Apply(context.Background(), &store.Batch{Attestations: recs}); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	b.waitFor(t, "the new attestation in the live list", fmt.Sprintf(`document.querySelector('#att-rows tr[data-pda=%q]')`, recs[0].PDA), 10*time.Second)
	t.Logf("a new attestation was on screen %s after its write", time.Since(written).Round(10*time.Millisecond))
	if !eval[bool](t, b, `window.__sameDocument === true && document.querySelector("#att-rows tr").dataset.pda === `+fmt.Sprintf("%q", recs[0].PDA)) {
		t.Error("the page reloaded, or the new attestation is not first")
	}
	time.Sleep(3 * time.Second) // long enough for any poll to show (the old one ran every 1.2 s)
	if after := eval[int](t, b, fetches); after != before {
		t.Errorf("the list fetched /attestations %d more times after it loaded: it polls", after-before)
	}
	streams := eval[[]string](t, b, `window.__es`)
	if len(streams) != 1 {
		t.Errorf("stream connections %q, want one", streams)
	}
}
