package main

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
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
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/gagliardetto/solana-go"
)

// rendered is true once the router drew the page of hash (a same-document
// navigation leaves the previous page up until then).
func rendered(hash string) string {
	if hash == "" {
		hash = "#/"
	}
	return fmt.Sprintf(`(document.getElementById("main").dataset.view === %q)`, hash)
}

// wordsWholeJS lists the words a table shows broken across two lines:
// for every visible table cell, the line each character lands on; a new
// line may start only at a space, or between two elements (a label and
// its value in a card, two buttons). It returns where it found breaks.
const wordsWholeJS = `(() => {
  const bad = [];
  for (const cell of document.querySelectorAll("table td, table th")) {
    if (!cell.getClientRects().length) continue;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    let prev = null;
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (!n.parentElement || !n.parentElement.getClientRects().length) continue;
      const t = n.data;
      for (let i = 0; i < t.length; i++) {
        const r = document.createRange();
        r.setStart(n, i); r.setEnd(n, i + 1);
        const rects = r.getClientRects();
        const space = /\s/.test(t[i]);
        if (!rects.length || (space && !rects[rects.length - 1].width)) {
          // A space collapsed at the end of a line, or away: a break may follow it.
          if (space && prev) prev.ch = " ";
          continue;
        }
        const rect = rects[rects.length - 1];
        if (prev && rect.top > prev.top + Math.max(4, rect.height / 2)) {
          const atSpace = /\s/.test(t[i]) || /\s/.test(prev.ch);
          const between = prev.node !== n && prev.node.parentElement !== n.parentElement;
          if (!atSpace && !between) {
            const text = cell.innerText.replace(/\s+/g, " ").trim();
            bad.push((cell.dataset.label || cell.tagName) + ": " + JSON.stringify(text.slice(0, 60)) + " breaks between " +
              JSON.stringify(prev.ch) + " and " + JSON.stringify(t[i]));
            break;
          }
        }
        prev = { node: n, ch: t[i], top: rect.top };
      }
    }
    if (bad.length >= 8) break;
  }
  return bad;
})()`

// wordsWhole fails the test when a table shows a word broken inside.
func (b *browser) wordsWhole(t *testing.T, what string) {
	t.Helper()
	if bad := eval[[]string](t, b, wordsWholeJS); len(bad) > 0 {
		t.Errorf("%s: words broken inside table cells:\n  %s", what, strings.Join(bad, "\n  "))
	}
}

// TestBrowserWordsWholeCheckFails: the check above finds a word a narrow
// table breaks (as the console's tables once did: "Lab el", "Re vo ke"),
// so it cannot pass by accident.
func TestBrowserWordsWholeCheckFails(t *testing.T) {
	t.Parallel()
	b := startBrowser(t)
	b.do(t, "a squeezed table", chromedp.Navigate("data:text/html,"+strings.ReplaceAll(
		`<table style="width:60px;overflow-wrap:anywhere"><tr><th>Label</th><td>Revoke now</td></tr></table>`, " ", "%20")))
	if bad := eval[[]string](t, b, wordsWholeJS); len(bad) == 0 {
		t.Fatal("a table that breaks Label and Revoke inside passes the check")
	}
	b.do(t, "a wide table", chromedp.Navigate("data:text/html,"+strings.ReplaceAll(
		`<table style="width:60px"><tr><th>Label</th><td>Revoke now and then</td></tr></table>`, " ", "%20")))
	if bad := eval[[]string](t, b, wordsWholeJS); len(bad) != 0 {
		t.Fatalf("a table that breaks only at spaces fails the check: %q", bad)
	}
}

type overview struct {
	At              string
	Agents          int64
	Attestations    int64
	ActiveAgents24h int64
	Rate            struct {
		WindowSeconds, LastWindow, Last24h int64
		PerMinuteNow, PerMinute24h         float64
	}
	TopAgents24h []struct {
		AgentPDA     string
		Attestations int64
	}
	Finality struct{ Unfinalized int64 }
	Indexer  *struct{ LagSlots int64 }
	Log      *struct{ Size int64 }
}

// TestBrowserHomeAndCharts: the home page's figures are the API's
// (/stats/overview), its busiest agents and newest attestations too; the
// charts mark the hour in progress and scale on the complete ones (a busy
// current hour does not flatten the rest), label the y axis with round
// ticks, keep every x label inside the chart, and show a bucket's exact
// count on hover and on keyboard focus.
func TestBrowserHomeAndCharts(t *testing.T) {
	t.Parallel()
	b := startBrowser(t)
	n := startWebNode(t)
	// A quiet complete hour (20 attestations, two hours ago), then a busy
	// current hour: 150 attestations of one agent, now (as make run's chain
	// once outpaced its seeded history).
	var page struct{ Data []apiAttestation }
	n.apiGet(t, "/attestations?limit=1", "", &page)
	agent := n.env.Seeded.Agents[0]
	slot := uint64(page.Data[0]["slot"].(float64)) + 1000
	quiet := seed.NewAttestations([]seed.Agent{n.env.Seeded.Agents[1]}, 20, time.Now().Add(-2*time.Hour), slot, 98)
	recs := seed.NewAttestations([]seed.Agent{agent}, 150, time.Now(), slot+500, 99)
	for _, batch := range [][]store.AttestationRecord{quiet, recs} {
		if _, err := n.env.Store.Apply(context.Background(), &store.Batch{Attestations: batch}); err != nil {
			t.Fatal(err)
		}
	}
	b.do(t, "open the home page", chromedp.Navigate(n.root+"/"))
	b.waitFor(t, "the home page", rendered("#/")+` && document.querySelector("#overview [data-stat=attestations]") && document.querySelector("#top-rows tr[data-top]")`, 20*time.Second)
	var o struct{ Data overview }
	n.apiGet(t, "/stats/overview", "", &o)
	shown := eval[map[string]string](t, b, `Object.fromEntries([...document.querySelectorAll("#overview [data-stat]")].map((e) => [e.dataset.stat, e.dataset.value]))`)
	want := map[string]string{
		"attestations": strconv.FormatInt(o.Data.Attestations, 10), "activeAgents24h": strconv.FormatInt(o.Data.ActiveAgents24h, 10),
		"perMinuteNow": strconv.FormatFloat(o.Data.Rate.PerMinuteNow, 'f', -1, 64), "perMinute24h": strconv.FormatFloat(o.Data.Rate.PerMinute24h, 'f', -1, 64),
		"unfinalized": strconv.FormatInt(o.Data.Finality.Unfinalized, 10),
	}
	if o.Data.Indexer != nil {
		want["lagSlots"] = strconv.FormatInt(o.Data.Indexer.LagSlots, 10)
	}
	for k, v := range want {
		if shown[k] != v {
			t.Errorf("home %s: %q, the API %q (overview at %s)", k, shown[k], v, o.Data.At)
		}
	}
	if o.Data.Rate.LastWindow < 150 || o.Data.ActiveAgents24h < 1 {
		t.Errorf("the overview misses the 150 new attestations: %+v", o.Data.Rate)
	}
	top := eval[[]string](t, b, `[...document.querySelectorAll("#top-rows tr[data-top]")].map((r) => r.dataset.top + " " + r.querySelector("[data-count]").dataset.count)`)
	if len(top) != len(o.Data.TopAgents24h) || len(top) == 0 {
		t.Fatalf("busiest agents %q, the API %+v", top, o.Data.TopAgents24h)
	}
	for i, a := range o.Data.TopAgents24h {
		if top[i] != a.AgentPDA+" "+strconv.FormatInt(a.Attestations, 10) {
			t.Errorf("busiest agent %d: %q, the API %s %d", i, top[i], a.AgentPDA, a.Attestations)
		}
	}
	if top[0] != agent.PDA.String()+" "+strconv.FormatInt(o.Data.TopAgents24h[0].Attestations, 10) || o.Data.TopAgents24h[0].Attestations < 150 {
		t.Errorf("the busiest agent is %q, want %s with its 150 new attestations", top[0], agent.PDA)
	}
	var newest struct{ Data []apiAttestation }
	n.apiGet(t, "/attestations?limit=10", "", &newest)
	rows := eval[[]string](t, b, `[...document.querySelectorAll("#att-rows tr[data-pda]")].map((r) => r.dataset.pda)`)
	if len(rows) != len(newest.Data) || rows[0] != newest.Data[0]["pda"] {
		t.Errorf("newest attestations %d rows from %v, the API %d from %v", len(rows), rows[:min(1, len(rows))], len(newest.Data), newest.Data[0]["pda"])
	}

	// The chart of the last 24 hours: the current hour (150+) is in
	// progress, pale and dashed, outside the scale.
	var act struct {
		Data struct {
			Series []struct {
				At    string
				Total int64
			}
		}
	}
	n.apiGet(t, "/stats/activity?bucket=hour", "", &act)
	last := act.Data.Series[len(act.Data.Series)-1]
	var completeMax int64
	for _, p := range act.Data.Series[:len(act.Data.Series)-1] {
		completeMax = max(completeMax, p.Total)
	}
	chart := eval[struct {
		YMax, PartialBar, Ticks int64
		Partial                 string
		LabelsInside            bool
	}](t, b, `(() => { const svg = document.querySelector("#activity svg"), box = svg.getBoundingClientRect();
	  const bar = svg.querySelector("[data-partial-bar]");
	  return {YMax: +svg.dataset.ymax, Partial: svg.dataset.partial, PartialBar: bar ? +bar.dataset.partialBar : -1,
	    Ticks: svg.querySelectorAll("[data-tick]").length,
	    LabelsInside: [...svg.querySelectorAll("text")].every((t) => { const r = t.getBoundingClientRect(); return r.left >= box.left - 0.5 && r.right <= box.right + 0.5; })}; })()`)
	if chart.Partial != "1" || chart.PartialBar != last.Total {
		t.Errorf("the hour in progress (%d) is not marked: partial %q, bar %d", last.Total, chart.Partial, chart.PartialBar)
	}
	if completeMax < 20 || last.Total < 150 || chart.YMax >= last.Total || chart.YMax < completeMax {
		t.Errorf("the hour in progress (%d) sets the scale (y max %d; the complete hours' max is %d): it flattens the rest", last.Total, chart.YMax, completeMax)
	}
	if chart.Ticks < 2 || !chart.LabelsInside {
		t.Errorf("the y axis has %d ticks; every label inside the chart: %v", chart.Ticks, chart.LabelsInside)
	}
	// The exact count of a bucket on hover, and of the last one on focus.
	tip := eval[string](t, b, `(() => { const svg = document.querySelector("#activity svg"); const hit = svg.querySelector("rect[data-index='3']");
	  const r = hit.getBoundingClientRect(); svg.dispatchEvent(new PointerEvent("pointermove", {clientX: r.left + r.width / 2, clientY: r.top + 10, bubbles: true}));
	  const t = document.querySelector("#activity .tip"); return t.hidden ? "" : t.querySelector("[data-tip-total]").dataset.tipTotal; })()`)
	if tip != strconv.FormatInt(act.Data.Series[3].Total, 10) {
		t.Errorf("hovering bucket 3 shows %q, the API %d", tip, act.Data.Series[3].Total)
	}
	// The window has focus, as a person's does (headless Chromium's has
	// not, and fires no focus events without it).
	b.do(t, "a focused window", func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Call(ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
		return chromedp.Void{}, err
	})
	b.do(t, "focus the chart", chromedp.Focus(chromedp.CSS("#activity svg")))
	tip = eval[string](t, b, `(() => { const t = document.querySelector("#activity .tip"); return t.hidden ? "" : t.innerText; })()`)
	if !strings.Contains(tip, commas(last.Total)+" attestations so far (in progress)") {
		t.Errorf("focusing the chart shows %q, want the hour in progress with %d", tip, last.Total)
	}
	b.checkPage(t, "home")

	// The agent page fits its range to the agent's life: 90 days, by day
	// (TestBrowserYoungAgentChart: a few hours, by hour).
	b.do(t, "open an agent", chromedp.Navigate(n.root+"/#/agent/"+agent.PDA.String()))
	b.waitFor(t, "the agent's chart", rendered("#/agent/"+agent.PDA.String())+` && document.querySelector("#activity svg")`, 20*time.Second)
	if got := eval[string](t, b, `document.querySelector("button[aria-pressed=true]").dataset.range + " " + document.getElementById("activity").dataset.bucket`); got != "life day" {
		t.Errorf("an agent of 90 days opens on %q, want its whole life by day", got)
	}
}

// TestBrowserYoungAgentChart: an agent whose whole life is a few hours
// gets an hourly chart of those hours (not one full-width day).
func TestBrowserYoungAgentChart(t *testing.T) {
	t.Parallel()
	b := startBrowser(t)
	n := startWebNode(t)
	// A fresh agent: registered now, 40 attestations over the last 5 hours.
	a := newAgent(t, n)
	var page struct{ Data []apiAttestation }
	n.apiGet(t, "/attestations?limit=1", "", &page)
	slot := uint64(page.Data[0]["slot"].(float64)) + 1000
	for h := 5; h >= 1; h-- {
		recs := seed.NewAttestations([]seed.Agent{a}, 8, time.Now().Add(-time.Duration(h)*time.Hour), slot, uint64(h))
		slot += 100
		if _, err := n.env.Store.Apply(context.Background(), &store.Batch{Attestations: recs}); err != nil {
			t.Fatal(err)
		}
	}
	b.do(t, "open the young agent", chromedp.Navigate(n.root+"/#/agent/"+a.PDA.String()))
	b.waitFor(t, "its chart", rendered("#/agent/"+a.PDA.String())+` && document.querySelector("#activity svg")`, 20*time.Second)
	got := eval[struct {
		Bucket string
		Bars   int
	}](t, b, `({Bucket: document.getElementById("activity").dataset.bucket, Bars: document.querySelectorAll("#activity rect[data-index]").length})`)
	if got.Bucket != "hour" || got.Bars < 5 || got.Bars > 8 {
		t.Errorf("a 5-hour-old agent's chart: %d buckets per %s, want its 5 or 6 hours", got.Bars, got.Bucket)
	}
}

// newAgent registers a fresh agent in n's store, 6 hours ago.
func newAgent(t *testing.T, n *webNode) seed.Agent {
	t.Helper()
	var page struct{ Data []apiAttestation }
	n.apiGet(t, "/attestations?limit=1", "", &page)
	a, batch := seed.NewAgent(time.Now().Add(-6*time.Hour), uint64(page.Data[0]["slot"].(float64))+500, uint64(time.Now().UnixNano()))
	if _, err := n.env.Store.Apply(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestBrowserSearch: the search box finds each kind of input: an
// attestation, an agent and an operator by address, a transaction (one
// attestation: its page; several: their list), an action hash (one: its
// page; a payload attested twice: both), a payload file hashed in the
// browser (its bytes, and a JSON file by its RFC 8785 form); unknown input
// says what it tried.
func TestBrowserSearch(t *testing.T) {
	t.Parallel()
	b := startBrowser(t)
	n := startWebNode(t)
	ctx := context.Background()
	pool := n.env.Store.Pool()
	var single, multi string
	var multiN int
	testenv.Must(t, pool.QueryRow(ctx, `SELECT tx_signature FROM attestations GROUP BY tx_signature HAVING count(*) = 1 LIMIT 1`).Scan(&single), "single")
	testenv.Must(t, pool.QueryRow(ctx, `SELECT tx_signature, count(*) FROM attestations GROUP BY tx_signature HAVING count(*) > 1 LIMIT 1`).Scan(&multi, &multiN), "multi")
	var singlePDA string
	testenv.Must(t, pool.QueryRow(ctx, `SELECT pda FROM attestations WHERE tx_signature = $1`, single).Scan(&singlePDA), "single pda")
	agent := n.env.Seeded.Agents[0]
	// A payload attested twice (by two agents), and a JSON payload attested
	// in its canonical form.
	var page struct{ Data []apiAttestation }
	n.apiGet(t, "/attestations?limit=1", "", &page)
	slot := uint64(page.Data[0]["slot"].(float64)) + 1000
	twice := `{"tool":"search","q":"twice"}`
	canonical := `{"a":1,"b":"x"}`
	var recs []store.AttestationRecord
	for i, p := range []struct {
		a       seed.Agent
		payload string
	}{{agent, twice}, {n.env.Seeded.Agents[1], twice}, {agent, canonical}} {
		r := seed.NewAttestations([]seed.Agent{p.a}, 1, time.Now(), slot+uint64(i)*10, uint64(500+i))[0]
		r.ActionHash = sha256.Sum256([]byte(p.payload))
		copy(r.Signature[:], ed25519.Sign(p.a.Key, r.ActionHash[:]))
		recs = append(recs, r)
	}
	if _, err := n.env.Store.Apply(ctx, &store.Batch{Attestations: recs}); err != nil {
		t.Fatal(err)
	}
	search := func(q string) {
		t.Helper()
		b.do(t, "search "+q, chromedp.SetValue(chromedp.ID("q"), q), chromedp.Click(chromedp.CSS("#search button[type=submit]")))
	}
	opens := func(what, q, hash string) {
		t.Helper()
		eval[bool](t, b, `document.getElementById("main").dataset.view = ""; true`) // the last page may be this one
		search(q)
		b.waitFor(t, what+" opens "+hash, rendered(hash), 15*time.Second)
		if h := eval[string](t, b, `location.hash`); h != hash {
			t.Errorf("%s: at %s, want %s", what, h, hash)
		}
	}
	lists := func(what, q string, want int) {
		t.Helper()
		search(q)
		b.waitFor(t, what+" lists", `document.querySelectorAll("#search-rows tr[data-pda], #search-rows tr[data-kind]").length > 0`, 15*time.Second)
		if got := eval[int](t, b, `document.querySelectorAll("#search-rows tr[data-pda], #search-rows tr[data-kind]").length`); got != want {
			t.Errorf("%s: %d results, want %d (%s)", what, got, want, eval[string](t, b, `document.getElementById("search-said").innerText`))
		}
	}
	b.do(t, "open the explorer", chromedp.Navigate(n.root+"/#/agents"))
	b.waitFor(t, "the agents page", rendered("#/agents"), 20*time.Second)
	opens("an attestation address", singlePDA, "#/attestation/"+singlePDA)
	opens("an agent address", agent.PDA.String(), "#/agent/"+agent.PDA.String())
	opens("an operator address", agent.Operator.String(), "#/agent/"+agent.PDA.String())
	opens("a transaction of one attestation", single, "#/attestation/"+singlePDA)
	lists("a transaction of several", multi, min(multiN, 25))
	opens("an action hash", hex.EncodeToString(recs[2].ActionHash[:]), "#/attestation/"+recs[2].PDA)
	opens("an action hash in upper case with 0x", "0x"+strings.ToUpper(hex.EncodeToString(recs[2].ActionHash[:])), "#/attestation/"+recs[2].PDA)
	lists("a payload attested twice, by its hash", hex.EncodeToString(recs[0].ActionHash[:]), 2)
	b.checkPage(t, "search results")

	// Files: hashed in the browser, never sent.
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		testenv.Must(t, os.WriteFile(p, []byte(body), 0o644), "write %s", name)
		return p
	}
	b.do(t, "pick the twice payload", chromedp.SetUploadFiles(chromedp.ID("payload-file"), []string{write("twice.json", twice)}))
	b.waitFor(t, "the file's attestations", `document.querySelectorAll("#search-rows tr[data-pda]").length === 2`, 15*time.Second)
	b.do(t, "pick a JSON payload spaced otherwise", chromedp.SetUploadFiles(chromedp.ID("payload-file"), []string{write("spaced.json", "{ \"b\": \"x\",\n  \"a\": 1 }\n")}))
	b.waitFor(t, "the canonical form's attestation", rendered("#/attestation/"+recs[2].PDA), 15*time.Second)

	// Unknown input says what it tried.
	unknown := agent.Key.Public().(ed25519.PublicKey) // an address nothing here has
	for _, tc := range []struct{ q, want string }{
		{solanaAddress(unknown), "No attestation, agent or operator has the address"},
		{strings.Repeat("ab", 32), "No attestation has the action hash"},
		{"hello world", "Nothing to look up"},
		{"abc123", "hexadecimal characters (an action hash has 64)"},
	} {
		search(tc.q)
		b.waitFor(t, "the answer to "+tc.q, fmt.Sprintf(`document.getElementById("search-said") && document.getElementById("search-said").innerText.includes(%q)`, tc.want), 15*time.Second)
	}
	b.checkPage(t, "search without a match")
}

// solanaAddress is a public key in base58.
func solanaAddress(pub ed25519.PublicKey) string { return solana.PublicKeyFromBytes(pub).String() }

// TestBrowserRateLimited: the pages never break on the rate limit. With
// the node's real limit (100 API requests per address and window; a 20 s
// window here) spent from the browser's own address, the page and its
// files still load (they are not API calls), every part whose data the API
// refused says so with when the page tries again (never the raw JSON,
// never a stuck "Loading"), and once the window has passed the page loads
// its data by itself.
func TestBrowserRateLimited(t *testing.T) {
	t.Parallel()
	b := startBrowser(t)
	n := startWebNodeWith(t, "ATTESTD_RATE_LIMIT=100", "ATTESTD_RATE_WINDOW=20s")
	// Spend what is left of the 100 (the test's start spent a few on /health).
	spent := 0
	for n.apiGet(t, "/stats", "", nil) == http.StatusOK {
		if spent++; spent > 100 {
			t.Fatal("more than 100 API requests answered in the window")
		}
	}
	b.do(t, "open the home page", chromedp.Navigate(n.root+"/"))
	b.waitFor(t, "the page with its notice", `!document.getElementById("booting") && !document.getElementById("limit-notice").hidden && document.querySelectorAll("[data-failure=RATE_LIMITED]").length >= 2`, 20*time.Second)
	page := eval[string](t, b, `document.body.innerText`)
	if strings.Contains(page, `{"error"`) || strings.Contains(page, "Loading") {
		t.Errorf("the rate-limited page shows raw JSON or a stuck Loading:\n%s", page)
	}
	notice := eval[string](t, b, `document.getElementById("limit-notice").innerText`)
	if !strings.Contains(notice, "100 a minute") || !strings.Contains(notice, " s.") {
		t.Errorf("the notice says %q", notice)
	}
	if missing := eval[[]string](t, b, `[...document.querySelectorAll("[data-failure=RATE_LIMITED]")].map((e) => e.innerText)`); !strings.Contains(missing[0], "tries again in") {
		t.Errorf("a missing part says %q", missing)
	}
	// The header, the search box and the styles are there (assets served).
	if !eval[bool](t, b, `!!document.querySelector("#search input") && getComputedStyle(document.querySelector("header")).borderBottomStyle === "solid"`) {
		t.Error("the page's own files did not load")
	}
	b.shootWidth(t, "rate-limited-home", 390)
	b.checkPage(t, "rate-limited home")
	// Once the window has passed, the page reloads its data by itself.
	b.waitFor(t, "the data after the window", `document.getElementById("limit-notice").hidden && document.querySelector("#overview [data-stat=attestations]") && document.querySelector("#att-rows tr[data-pda]")`, 30*time.Second)
}
