package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/logfixture"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/chromedp/chromedp"
)

// plainText, appended to an expression of page text, reads its no-break
// spaces as spaces and drops its word joiners (the pages keep "5 min" and
// "50/s" whole with them).
const plainText = `.replace(/\u00a0/g, " ").replace(/\u2060/g, "")`

// screens are the two screens every page is held to: a phone's and a
// desktop's.
var screens = []struct{ width, height int64 }{{390, 844}, {1440, 900}}

// sitePage is a page of the web application, what says it has rendered,
// and its document title; then, when not empty, what to open or scroll to
// (held to the same checks, and shown in its screenshot): the problem
// parts below the first screen.
type sitePage struct {
	name, hash, ready, title, then string
}

// sitePages are the pages the layout test and the screenshots visit: the
// home page, the list, an agent, an attestation (its log proof checked),
// search results, the stats, the console signed in and the API reference.
func sitePages(pda, agent, tx string) []sitePage {
	return []sitePage{
		{"home", "#/", `document.querySelector("#att-rows tr[data-pda]") && document.querySelector("#overview [data-stat]") && document.querySelector("#activity svg") && document.querySelector("#top-rows tr")`,
			"attestd: AI-agent attestations on Solana", ""},
		{"attestations", "#/attestations", `document.querySelector("#att-rows tr[data-pda]")`, "Attestations: attestd", ""},
		{"agent", "#/agent/" + agent, `document.querySelector("#activity svg") && document.getElementById("activity-note").textContent.length > 0`,
			"Agent " + agent[:5] + "…: attestd", `[...document.querySelectorAll("h2")].find((h) => h.textContent.startsWith("Activity")).scrollIntoView()`},
		{"attestation", "#/attestation/" + pda, `document.getElementById("log-proof") && document.getElementById("log-proof").dataset.result === "verified"`,
			"Attestation " + pda[:5] + "…: attestd", `document.getElementById("log-details").open = true; document.getElementById("log-proof").scrollIntoView()`},
		{"search", "#/search?q=" + tx, `document.querySelector("#search-rows tr[data-pda]")`, "Search for " + tx[:12] + "…: attestd", ""},
		{"stats", "#/stats", `document.querySelector("#activity svg") && document.getElementById("activity-note").textContent.length > 0`, "Stats: attestd", ""},
		{"console", "#/console", `document.getElementById("account-name") && document.querySelector("#key-rows") && document.querySelector("#payment-rows")`, "Console: attestd", ""},
		{"api", "#/api", `document.querySelector("main h1")`, "API reference: attestd", ""},
	}
}

// layoutJS measures what every page promises at every width: no
// horizontal scroll; no code word or number broken across lines (every
// .nw element, and every code word outside a pre, one box); the header
// one row (at most 64 px high), its search box showing its whole
// placeholder (measured with the placeholder as the box's text).
const layoutJS = `(() => {
  const se = document.scrollingElement;
  const word = (e) => e.matches(".nw") || !/\s/.test(e.textContent.trim());
  const broken = [...document.querySelectorAll(".nw, :not(pre) > code:not(.path)")].filter((e) => word(e) && e.getClientRects().length > 1)
    .slice(0, 8).map((e) => e.tagName.toLowerCase() + "." + e.className + " " + JSON.stringify(e.textContent.slice(0, 40)));
  const wide = se.scrollWidth <= se.clientWidth ? [] : [...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > se.clientWidth + 0.5)
    .slice(0, 6).map((e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (typeof e.className === "string" && e.className ? "." + e.className : ""));
  const q = document.getElementById("q"), value = q.value;
  q.value = q.placeholder;
  const fits = q.scrollWidth <= q.clientWidth, shown = q.getClientRects().length > 0;
  q.value = value;
  return {ScrollWidth: se.scrollWidth, ClientWidth: se.clientWidth, Wide: wide, Broken: broken,
    Header: document.querySelector("header").getBoundingClientRect().height, Placeholder: q.placeholder, PlaceholderFits: fits && shown,
    Title: document.title};
})()`

type layout struct {
	ScrollWidth, ClientWidth int
	Wide, Broken             []string
	Header                   float64
	Placeholder              string
	PlaceholderFits          bool
	Title                    string
}

// checkLayout holds the page on screen to layoutJS and to its title.
func (b *browser) checkLayout(t *testing.T, what, title string) {
	t.Helper()
	l := eval[layout](t, b, layoutJS)
	if l.ScrollWidth > l.ClientWidth {
		t.Errorf("%s: scrolls sideways: %d px of content in %d px; too wide: %q", what, l.ScrollWidth, l.ClientWidth, l.Wide)
	}
	if len(l.Broken) > 0 {
		t.Errorf("%s: code words or numbers broken across lines: %q", what, l.Broken)
	}
	if l.Header > 64 {
		t.Errorf("%s: the header is %.0f px high, more than one row (64 px)", what, l.Header)
	}
	if !l.PlaceholderFits || l.Placeholder == "" {
		t.Errorf("%s: the search box cuts its placeholder %q", what, l.Placeholder)
	}
	if l.Title != title {
		t.Errorf("%s: title %q, want %q", what, l.Title, title)
	}
}

// signIn signs the browser's wallet in on the console at root.
func (b *browser) signIn(t *testing.T, root string) {
	t.Helper()
	b.do(t, "open the console", chromedp.Navigate(root+"/#/console"))
	b.waitFor(t, "the sign-in button", `document.getElementById("sign-in") && !document.getElementById("sign-in").disabled`, 20*time.Second)
	b.do(t, "sign in", chromedp.Click(chromedp.ID("sign-in")))
	b.waitFor(t, "signed in", `document.getElementById("account-name")`, 20*time.Second)
}

// visitPages opens every page at both screens (a fresh load each, so that
// the page is drawn at that width), holds it to checkLayout and to
// wordsWhole, and calls shot (when not nil) with the page on screen.
func (b *browser) visitPages(t *testing.T, root string, pages []sitePage, shot func(p sitePage, width int64)) {
	t.Helper()
	for _, s := range screens {
		for _, p := range pages {
			what := fmt.Sprintf("%s at %d px", p.name, s.width)
			b.do(t, "open "+what, chromedp.Navigate("about:blank"), chromedp.EmulateViewport(s.width, s.height), chromedp.Navigate(root+"/"+p.hash))
			b.waitFor(t, what, rendered(p.hash)+" && "+p.ready, 30*time.Second)
			time.Sleep(300 * time.Millisecond) // the layout settles
			b.checkLayout(t, what, p.title)
			b.wordsWhole(t, what)
			if p.then != "" {
				eval[chromedp.Void](t, b, p.then)
				time.Sleep(300 * time.Millisecond)
				b.checkLayout(t, what+", then "+p.then, p.title)
			}
			if shot != nil {
				shot(p, s.width)
			}
		}
	}
	b.do(t, "viewport back", chromedp.EmulateViewport(1200, 900))
}

// startLoggedWebNode is an `attestd serve` process over a seeded database
// whose transparency log holds every attestation, its checkpoints
// countersigned by a witness (as make run's are).
func startLoggedWebNode(t *testing.T) (root string, e *apptest.Env) {
	t.Helper()
	bin := testenv.BuildAttestd(t)
	e = apptest.NewEnv(t, apptest.Options{Agents: 3, Attestations: 300})
	lg := logfixture.NewServed(t, e, "attestd.test/log")
	keys := lg.AddWitnesses(t, "w1.test/w")
	lg.AppendAll(t)
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"DATABASE_URL=" + e.DatabaseURL, "REDIS_URL=" + e.RedisURL, "ATTESTD_REDIS_PREFIX=" + e.Prefix,
		"ATTESTD_METRICS_ADDR=", "ATTESTD_LOG_LEVEL=warn", "ATTESTD_RATE_LIMIT=100000", "ATTESTD_WEBHOOK_SECRET_KEYS=" + webhookKeys(t),
		"ATTESTD_LOG_WITNESSES=" + keys[0] + " http://127.0.0.1:9/add-checkpoint", "ATTESTD_LOG_WITNESS_QUORUM=1"}, lg.ProcessEnv()...)
	api, _ := serveProcess(t, bin, env)
	return strings.TrimSuffix(api, "/api/v1"), e
}

// pagesOf chooses the pages' subjects on the node at root: its newest
// finalized attestation with a proof, that attestation's agent, and a
// transaction of several attestations (search results).
func pagesOf(t *testing.T, root string) []sitePage {
	t.Helper()
	api := root + "/api/v1"
	var list struct {
		Data []struct{ PDA, AgentPDA, TxSignature, Commitment string }
	}
	if get(t, api+"/attestations?limit=100", "198.18.210.1", "", &list) != http.StatusOK {
		t.Fatal("no list of attestations")
	}
	// A transaction of several: among the newest, or the day before's (a
	// local chain's live traffic records one at a time; its seed, several).
	var pda, agent, tx string
	for _, q := range []string{"", "&to=" + time.Now().UTC().Add(-24*time.Hour).Format(time.RFC3339)} {
		var older struct {
			Data []struct{ TxSignature string }
		}
		get(t, api+"/attestations?limit=100"+q, "198.18.210.3", "", &older)
		seen := map[string]int{}
		for _, a := range older.Data {
			if seen[a.TxSignature]++; seen[a.TxSignature] == 2 && tx == "" {
				tx = a.TxSignature
			}
		}
	}
	for _, a := range list.Data {
		if a.Commitment != "finalized" || pda != "" {
			continue
		}
		if get(t, api+"/attestations/"+a.PDA+"/proof", "198.18.210.2", "", nil) == http.StatusOK {
			pda, agent = a.PDA, a.AgentPDA
		}
	}
	if pda == "" || tx == "" {
		t.Fatalf("no logged finalized attestation (%q) or no transaction of several (%q) among the newest 100", pda, tx)
	}
	return sitePages(pda, agent, tx)
}

// TestBrowserPagesFitEveryScreen opens the home page, the list, an agent,
// an attestation (its log proof verified and witnessed), search results,
// the stats, the console signed in and the API reference at 390 and 1440
// px: none scrolls sideways, no code word or number breaks across lines,
// the header is one row with its search box's whole placeholder, and each
// page has its own title. Then the phone's menu, and the focus after a
// search: on the new page's heading, no frame drawn around the page.
func TestBrowserPagesFitEveryScreen(t *testing.T) {
	t.Parallel()
	b := startBrowser(t)
	root, _ := startLoggedWebNode(t)
	pages := pagesOf(t, root)
	b.signIn(t, root)
	b.visitPages(t, root, pages, func(p sitePage, w int64) { b.shootWidth(t, "page-"+p.name, w) })

	// The phone's menu opens below the header (still one row) and closes
	// with Escape.
	b.do(t, "a phone", chromedp.EmulateViewport(390, 844), chromedp.Navigate(root+"/#/stats"))
	b.waitFor(t, "the stats", rendered("#/stats"), 20*time.Second)
	if eval[bool](t, b, `document.querySelector("#nav-links a").getClientRects().length > 0`) {
		t.Error("the header's links show on a phone before the menu is opened")
	}
	b.do(t, "open the menu", chromedp.Click(chromedp.ID("menu")))
	open := eval[struct {
		Links  []string
		Header float64
	}](t, b, `({Links: [...document.querySelectorAll("#nav-links a")].filter((a) => a.getClientRects().length).map((a) => a.getAttribute("href")),
	  Header: document.querySelector("header").getBoundingClientRect().height})`)
	if len(open.Links) != 6 || open.Header > 64 {
		t.Errorf("the open menu shows %q, the header %.0f px high", open.Links, open.Header)
	}
	b.do(t, "close it", chromedp.KeyEvent("\x1b"))
	if eval[bool](t, b, `document.getElementById("menu").getAttribute("aria-expanded") !== "false"`) {
		t.Error("Escape leaves the menu open")
	}

	// A search by keyboard lands on the new page's heading; neither it nor
	// the page draws a focus frame.
	b.do(t, "a desktop", chromedp.EmulateViewport(1440, 900))
	b.do(t, "search", chromedp.SetValue(chromedp.ID("q"), pages[3].hash[len("#/attestation/"):]), chromedp.Focus(chromedp.ID("q")), chromedp.KeyEvent("\r"))
	b.waitFor(t, "the attestation", rendered(pages[3].hash), 20*time.Second)
	focus := eval[[]string](t, b, `(() => { const a = document.activeElement, s = getComputedStyle(a), m = getComputedStyle(document.getElementById("main"));
	  return [a.tagName, s.outlineStyle, m.outlineStyle]; })()`)
	if focus[0] != "H1" || focus[1] != "none" || focus[2] != "none" {
		t.Errorf("after a search the focus is on %s (outline %s; main's outline %s), want the heading without a frame", focus[0], focus[1], focus[2])
	}
}

// TestBrowserREADMEScreenshot takes the README's picture of the home page
// (1440 px, the first screen; ATTESTD_README_SCREENSHOT names where) and,
// with ATTESTD_PAGE_SCREENSHOTS, every page of sitePages at 390 and 1440
// px (<dir>/<page>-<width>.png, the first screen), from what make run
// shows: `attestd local`, its chain, indexer, witnessed log and dataset
// on. Every page is held to the layout test's checks on the way. Each
// picture is stamped with the look's version (docs'
// TestREADMEScreenshotIsCurrent holds the README's to the assets).
func TestBrowserREADMEScreenshot(t *testing.T) {
	out := os.Getenv("ATTESTD_README_SCREENSHOT")
	if out == "" {
		t.Skip("set ATTESTD_README_SCREENSHOT=docs/img/explorer.png (make screenshot) to take the README's screenshot")
	}
	pagesDir := os.Getenv("ATTESTD_PAGE_SCREENSHOTS")
	fromRoot := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join("..", "..", p) // from cmd/attestd to the checkout's root
	}
	out, pagesDir = fromRoot(out), fromRoot(pagesDir)
	root := startLocalNode(t)
	pages := pagesOf(t, root)
	b := startBrowser(t)
	b.signIn(t, root)
	write := func(path string) {
		png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
		testenv.Must(t, err, "screenshot")
		png, err = readmeShot(png)
		testenv.Must(t, err, "stamp the screenshot")
		testenv.Must(t, os.WriteFile(path, png, 0o644), "write %s", path)
		t.Logf("wrote %s (%d bytes)", path, len(png))
	}
	if pagesDir != "" {
		testenv.Must(t, os.MkdirAll(pagesDir, 0o755), "screenshot directory")
	}
	b.visitPages(t, root, pages, func(p sitePage, w int64) {
		time.Sleep(700 * time.Millisecond) // live parts (relative times, the stream) settle
		if pagesDir != "" {
			write(filepath.Join(pagesDir, fmt.Sprintf("%s-%d.png", p.name, w)))
		}
		if p.name == "home" && w == 1440 {
			write(out)
		}
	})
}

// startLocalNode runs `attestd local` (make run) in a directory of the
// test's, from the checkout (its witness is built from the project's tool
// dependency), with a small seed: it returns its root once its indexer has
// indexed the chain's first traffic and its log's checkpoint is witnessed.
func startLocalNode(t *testing.T) string {
	t.Helper()
	bin := testenv.BuildAttestd(t)
	dir := testenv.TempDir(t, "attestd-screenshot-")
	port, err := devstack.FreePort()
	testenv.Must(t, err, "free port")
	root := fmt.Sprintf("http://127.0.0.1:%d", port)
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "ATTESTD_HTTP_ADDR=127.0.0.1:" + fmt.Sprint(port),
		"ATTESTD_METRICS_ADDR=", "ATTESTD_INDEXER_METRICS_ADDR=", "ATTESTD_WORKER_METRICS_ADDR=", "ATTESTD_RATE_LIMIT=0"}, goToolEnv(t)...)
	checkout, err := os.Getwd()
	testenv.Must(t, err, "working directory")
	d := startDaemonIn(t, checkout, bin, env, "local", "--dir", filepath.Join(dir, ".run"), "--agents", "12", "--attestations", "6000")
	d.waitFor(t, "attestd local indexes its chain and logs it", 500*time.Millisecond, func() (bool, string) {
		var o struct {
			Data struct {
				Attestations int64
				Indexer      *struct {
					LastIndexedAt *string
					Synced        bool
				}
				Log *struct{ Size int64 }
			}
		}
		if status, err := tryGet(root+"/api/v1/stats/overview", &o); err != nil || status != http.StatusOK {
			return false, fmt.Sprintf("no overview yet (%d, %v)", status, err)
		}
		ix, lg := o.Data.Indexer, o.Data.Log
		ok := o.Data.Attestations >= 8000 && ix != nil && ix.LastIndexedAt != nil && ix.Synced && lg != nil && lg.Size >= 8000
		return ok, fmt.Sprintf("%d attestations, indexer %+v, log %+v", o.Data.Attestations, ix, lg)
	})
	waitHealth(t, root+"/api/v1", "the log's checkpoint witnessed", func(h health) bool {
		return h.Log != nil && len(h.Log.WitnessedBy) > 0
	})
	return root
}

// The layout test's own checks, on pages made to fail them.
func TestBrowserLayoutCheckFails(t *testing.T) {
	t.Parallel()
	b := startBrowser(t)
	page := `<header style="height:120px"><input id=q placeholder="a placeholder far too long for this narrow little box" style="width:60px"></header>` +
		`<p style="width:40px"><span class=nw style="white-space:normal">12 345 678</span></p><div style="width:2000px">wide</div>`
	b.do(t, "a page that fails", chromedp.EmulateViewport(390, 844), chromedp.Navigate("data:text/html,"+strings.NewReplacer(" ", "%20", "#", "%23").Replace(page)))
	l := eval[layout](t, b, layoutJS)
	if l.ScrollWidth <= l.ClientWidth || len(l.Broken) == 0 || l.Header <= 64 || l.PlaceholderFits {
		t.Errorf("the checks pass a page that scrolls sideways, breaks a number, has a tall header and cuts its placeholder: %+v", l)
	}
}

// tryGet decodes GET url's JSON into out; an error while the server does
// not answer (yet).
func tryGet(url string, out any) (int, error) {
	cl := &http.Client{Timeout: 5 * time.Second}
	res, err := cl.Get(url)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return res.StatusCode, nil
	}
	return res.StatusCode, json.NewDecoder(res.Body).Decode(out)
}
