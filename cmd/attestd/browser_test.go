package main

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/mr-tron/base58"
)

// browser is a headless Chromium tab with a test wallet: window.solana
// defined before any page script, whose signMessage is signed in Go with
// a known Ed25519 key (through a runtime binding).
type browser struct {
	ctx    context.Context
	wallet ed25519.PrivateKey
	addr   string
	mu     sync.Mutex
	signed []string // the messages the wallet signed
}

// walletScript is the injected wallet, in the shape of the window.solana
// of browser wallets (connect, publicKey, signMessage). confirm() dialogs
// are accepted.
const walletScript = `(() => {
  const address = %q;
  const publicKey = { toBase58: () => address, toString: () => address };
  window.solana = {
    publicKey: null,
    async connect() { this.publicKey = publicKey; return { publicKey }; },
    async signMessage(bytes, display) {
      const b64 = await attestdTestSign(new TextDecoder().decode(bytes));
      const bin = atob(b64), sig = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) sig[i] = bin.charCodeAt(i);
      return { signature: sig, publicKey };
    },
  };
  window.confirm = () => true;
  window.__cspViolations = [];
  document.addEventListener("securitypolicyviolation", (e) => window.__cspViolations.push(e.violatedDirective + " " + e.blockedURI));
})();`

var (
	chromiumOnce sync.Once
	chromiumPath string
	chromiumErr  error
)

// chromium finds the Debian package's browser, installing it with apt-get
// when it is missing and the tests run as root (as make run installs
// PostgreSQL and Redis); it skips the test when there is none to be had.
func chromium(t *testing.T) string {
	t.Helper()
	chromiumOnce.Do(func() {
		if chromiumPath, chromiumErr = exec.LookPath("chromium"); chromiumErr == nil || os.Geteuid() != 0 {
			return
		}
		if _, err := exec.LookPath("apt-get"); err != nil {
			return
		}
		if err := devstack.AptInstall("chromium"); err != nil {
			chromiumErr = fmt.Errorf("install chromium: %w", err)
			return
		}
		chromiumPath, chromiumErr = exec.LookPath("chromium")
	})
	if chromiumErr != nil {
		t.Skipf("browser tests need Chromium (apt-get install -y chromium), and none could be installed: %v", chromiumErr)
	}
	return chromiumPath
}

// startBrowser starts a headless Chromium of t's own. The browser tests
// run in parallel (each has its own Chromium, node, database and Redis
// prefix, and they wait on pages far more than they compute).
func startBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromium(t)
	pub, priv, err := ed25519.GenerateKey(nil)
	testenv.Must(t, err, "wallet key")
	b := &browser{wallet: priv, addr: base58.Encode(pub)}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1200, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	// An outer deadline for the whole session, not a budget: the axe pass
	// over every page at every width takes minutes on a loaded machine.
	end, _ := testenv.Context(t, 8*time.Minute).Deadline()
	ctx, cancelTimeout := context.WithDeadline(ctx, end)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	err = chromedp.Do(ctx,
		chromedp.ExposeFunc("attestdTestSign", func(ctx context.Context, msg string) (string, error) {
			b.mu.Lock()
			b.signed = append(b.signed, msg)
			b.mu.Unlock()
			return base64.StdEncoding.EncodeToString(ed25519.Sign(priv, []byte(msg))), nil
		}),
		func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument,
				page.AddScriptToEvaluateOnNewDocumentParams{Source: fmt.Sprintf(walletScript, b.addr)})
			return chromedp.Void{}, err
		})
	testenv.Must(t, err, "start chromium")
	b.ctx = ctx
	return b
}

func (b *browser) do(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression into T.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor waits (in the page) until expr is truthy, at most within.
func (b *browser) waitFor(t *testing.T, what, expr string, within time.Duration) {
	t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond),
		chromedp.WithPollingTimeout(within))); err != nil {
		body, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector("main").innerText`))
		t.Fatalf("%s: not within %s (%v); the page says:\n%s", what, within, err, body)
	}
}

// checkPage holds the page shown to what every page promises: nothing
// refused by the Content-Security-Policy, every form field labelled, every
// button named.
func (b *browser) checkPage(t *testing.T, what string) {
	t.Helper()
	if v := eval[[]string](t, b, `window.__cspViolations`); len(v) > 0 {
		t.Errorf("%s: Content-Security-Policy violations %q", what, v)
	}
	if v := eval[[]string](t, b, `[...document.querySelectorAll("input,select,textarea")].filter((e) => !e.labels || !e.labels.length).map((e) => e.outerHTML)`); len(v) > 0 {
		t.Errorf("%s: fields without a label: %q", what, v)
	}
	// (textContent: a link inside a closed disclosure is not rendered, and has no innerText)
	if v := eval[[]string](t, b, `[...document.querySelectorAll("button,a")].filter((e) => !(e.innerText.trim() || e.textContent.trim() || e.getAttribute("aria-label"))).map((e) => e.outerHTML)`); len(v) > 0 {
		t.Errorf("%s: buttons or links without a name: %q", what, v)
	}
	b.shoot(t, what)
}

// shoot saves the page, at a phone's and a desktop's width, as
// PNG files under ATTESTD_TEST_SCREENSHOTS (unset: none), for a person to
// look at.
func (b *browser) shoot(t *testing.T, what string) {
	t.Helper()
	dir := os.Getenv("ATTESTD_TEST_SCREENSHOTS")
	if dir == "" {
		return
	}
	testenv.Must(t, os.MkdirAll(dir, 0o755), "screenshot directory")
	for _, v := range []struct {
		name          string
		width, height int64
	}{{"phone", 390, 844}, {"desktop", 1280, 900}} {
		b.do(t, "viewport "+v.name, chromedp.EmulateViewport(v.width, v.height))
		time.Sleep(300 * time.Millisecond) // the layout settles
		png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
		testenv.Must(t, err, "screenshot of %s", what)
		name := strings.NewReplacer(" ", "-", "/", "-").Replace(what) + "-" + v.name + ".png"
		testenv.Must(t, os.WriteFile(filepath.Join(dir, name), png, 0o644), "write %s", name)
	}
	b.do(t, "viewport back", chromedp.EmulateViewport(1200, 900))
}

// webNode is an `attestd serve` process and an `attestd worker` over a
// seeded database, as make run composes them, with a webhook receiver.
type webNode struct {
	env      *apptest.Env
	root     string // http://127.0.0.1:port
	api      string // root + /api/v1
	received chan string
	hookURL  string
}

func startWebNode(t *testing.T) *webNode { return startWebNodeOf(t, 3, 300) }

// startWebNodeWith is startWebNode with more of the node's environment
// (a later setting wins).
func startWebNodeWith(t *testing.T, more ...string) *webNode { return startWebNodeEnv(t, 3, 300, more) }

// startWebNodeOf is startWebNode over agents agents and attestations.
func startWebNodeOf(t *testing.T, agents, attestations int) *webNode {
	return startWebNodeEnv(t, agents, attestations, nil)
}

func startWebNodeEnv(t *testing.T, agents, attestations int, more []string) *webNode {
	t.Helper()
	bin := testenv.BuildAttestd(t)
	e := apptest.NewEnv(t, apptest.Options{Agents: agents, Attestations: attestations})
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(),
		"DATABASE_URL=" + e.DatabaseURL, "REDIS_URL=" + e.RedisURL, "ATTESTD_REDIS_PREFIX=" + e.Prefix,
		"ATTESTD_METRICS_ADDR=", "ATTESTD_WORKER_METRICS_ADDR=", "ATTESTD_LOG_LEVEL=warn", "ATTESTD_RATE_LIMIT=100000",
		"ATTESTD_WEBHOOK_SECRET_KEYS=" + webhookKeys(t), "ATTESTD_WEBHOOK_ALLOW_LOOPBACK=1", "ATTESTD_WEBHOOK_POLL_INTERVAL=50ms"}
	env = append(env, more...)
	base, _ := serveProcess(t, bin, env)
	startDaemon(t, bin, env, "worker")
	n := &webNode{env: e, api: base, root: strings.TrimSuffix(base, "/api/v1"), received: make(chan string, 16)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	testenv.Must(t, err, "receiver")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if answer, ok := webhook.ChallengeAnswer(b); ok { // the endpoint verification
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(answer)
			return
		}
		select {
		case n.received <- string(b):
		default:
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	n.hookURL = "http://" + ln.Addr().String() + "/hook"
	return n
}

// apiGet decodes GET api+path into out and returns the status.
func (n *webNode) apiGet(t *testing.T, path, key string, out any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, n.api+path, nil)
	testenv.Must(t, err, "request")
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	res, err := http.DefaultClient.Do(req)
	testenv.Must(t, err, "GET %s", path)
	defer res.Body.Close()
	if out != nil && res.StatusCode == 200 {
		testenv.Must(t, json.NewDecoder(res.Body).Decode(out), "decode %s", path)
	}
	return res.StatusCode
}

type apiAttestation map[string]any

// TestBrowserExplorer drives the explorer in headless Chromium against a
// running node: the list shows what the API serves (a new attestation
// appearing by itself is TestBrowserLiveStream), the attestation page shows every
// field and its payload check says match and mismatch, the agent and
// stats pages show the API's figures. It logs the first page's bytes and
// time to a rendered list.
func TestBrowserExplorer(t *testing.T) {
	t.Parallel()
	b := startBrowser(t)
	n := startWebNode(t)

	// The list page: bytes and time to a rendered list.
	b.do(t, "open the explorer", chromedp.Navigate(n.root+"/#/attestations"))
	b.waitFor(t, "the list renders", `document.querySelectorAll("#att-rows tr[data-pda]").length > 0`, 20*time.Second)
	rendered := eval[float64](t, b, `performance.getEntriesByName("attestd:list-rendered")[0].startTime`)
	bytes := eval[float64](t, b, `performance.getEntriesByType("navigation").concat(performance.getEntriesByType("resource")).reduce((s, e) => s + e.transferSize, 0)`)
	requests := eval[int](t, b, `performance.getEntriesByType("resource").length + 1`)
	b.checkPage(t, "explorer")
	t.Logf("explorer first page: %d requests, %.0f bytes transferred, list rendered %.0f ms after navigation start", requests, bytes, rendered)

	// The list is the API's newest page.
	var page struct{ Data []apiAttestation }
	n.apiGet(t, "/attestations?limit=25", "", &page)
	shown := eval[[]string](t, b, `[...document.querySelectorAll("#att-rows tr[data-pda]")].map((r) => r.dataset.pda)`)
	if len(shown) != len(page.Data) {
		t.Fatalf("the list shows %d rows, the API %d", len(shown), len(page.Data))
	}
	for i, a := range page.Data {
		if shown[i] != a["pda"] {
			t.Errorf("row %d: %s, the API says %s", i, shown[i], a["pda"])
		}
	}
	firstRow := eval[string](t, b, `document.querySelector("#att-rows tr").innerText`)
	for _, f := range []string{"actionType", "commitment"} {
		if !strings.Contains(firstRow, page.Data[0][f].(string)) {
			t.Errorf("first row %q lacks %s %v", firstRow, f, page.Data[0][f])
		}
	}

	// An attestation with a payload we know (written after the page
	// loaded: TestBrowserLiveStream checks that the list shows it by
	// itself).
	payload := `{"tool":"search","query":"attestd","at":"` + time.Now().UTC().Format(time.RFC3339) + `"}`
	agent := n.env.Seeded.Agents[0]
	var maxSlot uint64
	for _, a := range page.Data {
		maxSlot = max(maxSlot, uint64(a["slot"].(float64)))
	}
	recs := seed.NewAttestations([]seed.Agent{agent}, 1, time.Now(), maxSlot+1000, 4242)
	recs[0].ActionHash = sha256.Sum256([]byte(payload))
	copy(recs[0].Signature[:], ed25519.Sign(agent.Key, recs[0].ActionHash[:]))
	newPDA := recs[0].PDA
	if _, err := n.env.Store.Apply(context.Background(), &store.Batch{Attestations: recs}); err != nil {
		t.Fatal(err)
	}

	// Filters live in the URL: a shared link opens the same filtered list.
	b.do(t, "filter by type", chromedp.SetValue(chromedp.ID("f-type"), "ToolCall"), chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
	b.waitFor(t, "the filtered list", `location.hash === "#/attestations?type=ToolCall" && [...document.querySelectorAll("#att-rows tr[data-pda] td:nth-child(3)")].every((td) => td.innerText === "ToolCall")`, 10*time.Second)
	var filtered struct{ Data []apiAttestation }
	n.apiGet(t, "/attestations?limit=25&actionType=ToolCall", "", &filtered)
	b.do(t, "open the shared link", chromedp.Navigate(n.root+"/#/?type=ToolCall&agent="+agent.PDA.String()))
	b.waitFor(t, "the shared filter applies", `document.getElementById("f-agent").value.length > 0 && document.querySelectorAll("#att-rows tr[data-pda]").length > 0`, 10*time.Second)
	rows := eval[[]string](t, b, `[...document.querySelectorAll("#att-rows tr[data-pda]")].map((r) => r.cells[2].innerText + " " + r.cells[1].querySelector("a").getAttribute("href"))`)
	for _, r := range rows {
		if r != "ToolCall #/agent/"+agent.PDA.String() {
			t.Errorf("filtered row %q", r)
		}
	}

	// The attestation page: every field as the API says, and the payload check.
	var one struct{ Data apiAttestation }
	n.apiGet(t, "/attestations/"+newPDA, "", &one)
	b.do(t, "open the attestation", chromedp.Navigate(n.root+"/#/attestation/"+newPDA))
	b.waitFor(t, "the attestation page", `document.querySelector("[data-field=commitment]")`, 10*time.Second)
	fields := eval[map[string]string](t, b, `Object.fromEntries([...document.querySelectorAll("[data-field]")].map((e) => [e.dataset.field, e.innerText]))`)
	for k, v := range one.Data {
		want := fmt.Sprint(v)
		if k == "privacyMode" {
			want = map[bool]string{true: "yes", false: "no"}[v.(bool)]
		}
		if k == "slot" {
			want = commas(int64(v.(float64)))
		}
		if fields[k] != want {
			t.Errorf("field %s: page %q, API %q", k, fields[k], want)
		}
	}
	b.do(t, "verify the payload", chromedp.SendKeys(chromedp.ID("payload"), payload), chromedp.Click(chromedp.CSS("#verify-form button")))
	b.waitFor(t, "match", `document.querySelector("#verify-result [data-result=match]")`, 5*time.Second)
	b.do(t, "verify another payload", chromedp.SendKeys(chromedp.ID("payload"), " "), chromedp.Click(chromedp.CSS("#verify-form button")))
	b.waitFor(t, "mismatch", `document.querySelector("#verify-result [data-result=mismatch]")`, 5*time.Second)
	b.checkPage(t, "attestation page")

	// The agent page and the global stats show the API's figures.
	var stats struct {
		Data struct {
			TotalAttestations, Last24h, Last7d int
			ByType                             map[string]int
		}
	}
	n.apiGet(t, "/agents/"+agent.PDA.String()+"/stats", "", &stats)
	b.do(t, "open the agent", chromedp.Navigate(n.root+"/#/agent/"+agent.PDA.String()))
	b.waitFor(t, "the agent page", `document.querySelector("[data-stat=totalAttestations]") && document.querySelectorAll("svg rect").length > 7`, 10*time.Second)
	got := eval[map[string]string](t, b, `Object.fromEntries([...document.querySelectorAll("[data-stat],[data-bar]")].map((e) => [e.dataset.stat || e.dataset.bar, e.textContent]))`)
	want := map[string]string{"totalAttestations": commas(int64(stats.Data.TotalAttestations)), "last24h": commas(int64(stats.Data.Last24h)), "last7d": commas(int64(stats.Data.Last7d))}
	for typ, c := range stats.Data.ByType {
		want[typ] = commas(int64(c))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("agent page %s: %q, API %q", k, got[k], v)
		}
	}
	var global struct {
		Agents, Attestations, Last24h, IndexedSlot int
		ByType                                     map[string]int
	}
	n.apiGet(t, "/stats", "", &global)
	b.do(t, "open the stats", chromedp.Navigate(n.root+"/#/stats"))
	b.waitFor(t, "the stats page", `document.querySelector("[data-stat=attestations]")`, 10*time.Second)
	got = eval[map[string]string](t, b, `Object.fromEntries([...document.querySelectorAll("[data-stat],[data-bar]")].map((e) => [e.dataset.stat || e.dataset.bar, e.textContent]))`)
	want = map[string]string{"agents": commas(int64(global.Agents)), "attestations": commas(int64(global.Attestations)), "last24h": commas(int64(global.Last24h)), "indexedSlot": commas(int64(global.IndexedSlot))}
	for typ, c := range global.ByType {
		want[typ] = commas(int64(c))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("stats page %s: %q, API %q", k, got[k], v)
		}
	}
	b.checkPage(t, "stats page")
}

// TestBrowserConsole signs in with the test wallet, creates a key in the
// console, calls a premium route with it, revokes it in the console and
// sees the 401; creates a webhook, sends it a test event and sees the
// delivery in its log; signs out.
func TestBrowserConsole(t *testing.T) {
	t.Parallel()
	b := startBrowser(t)
	n := startWebNode(t)

	b.do(t, "open the console", chromedp.Navigate(n.root+"/#/console"))
	b.do(t, "wait for the sign-in button", chromedp.WaitVisible(chromedp.ID("sign-in")))
	b.checkPage(t, "sign-in page")
	// Keyboard only: Tab from the top of the page reaches the button.
	for i := 0; i < 12 && !eval[bool](t, b, `document.activeElement && document.activeElement.id === "sign-in"`); i++ {
		b.do(t, "tab", chromedp.KeyEvent("\t"))
	}
	if !eval[bool](t, b, `document.activeElement.id === "sign-in"`) {
		t.Fatal("the sign-in button is not reachable with Tab")
	}
	b.do(t, "sign in with Enter", chromedp.KeyEvent("\r"))
	b.waitFor(t, "signed in", `document.getElementById("account-name")`, 15*time.Second)
	if acct := eval[string](t, b, `document.getElementById("account-name").innerText`); acct != "wallet."+b.addr {
		t.Errorf("signed in as %q", acct)
	}
	b.mu.Lock()
	signed := append([]string(nil), b.signed...)
	b.mu.Unlock()
	if len(signed) != 1 || !strings.HasPrefix(signed[0], strings.TrimPrefix(n.root, "http://")+" wants you to sign in with your Solana account:\n"+b.addr+"\n") {
		t.Errorf("the wallet signed %q", signed)
	}
	// The session cookie is HttpOnly: page scripts cannot read it.
	if c := eval[string](t, b, `document.cookie`); strings.Contains(c, "attestd_session") {
		t.Errorf("page scripts see the session cookie: %q", c)
	}

	// A key made in the console works on a premium route until the
	// console revokes it.
	b.do(t, "create a key", chromedp.SendKeys(chromedp.ID("key-label"), "browser test"), chromedp.Click(chromedp.CSS("#key-form button")))
	b.waitFor(t, "the new key", `document.getElementById("new-key-secret") && document.querySelector("#key-rows tr[data-key]")`, 10*time.Second)
	key := eval[string](t, b, `document.getElementById("new-key-secret").innerText`)
	prefix := key[len("atst_") : len("atst_")+8]
	agent := n.env.Seeded.Agents[0].PDA.String()
	if s := n.apiGet(t, "/premium/full-history/"+agent, key, nil); s != http.StatusOK {
		t.Fatalf("premium route with the console's key: %d", s)
	}
	var keys struct {
		Data []struct{ Prefix, Role, Label string }
	}
	n.apiGet(t, "/keys", key, &keys)
	if len(keys.Data) != 1 || keys.Data[0].Role != "admin" || keys.Data[0].Label != "browser test" {
		t.Errorf("the account's keys: %+v", keys.Data)
	}
	b.do(t, "revoke the key", chromedp.Click(chromedp.CSS(fmt.Sprintf("button[data-revoke=%q]", prefix))))
	b.waitFor(t, "the key shown revoked", fmt.Sprintf(`document.querySelector('#key-rows tr[data-key=%q] td[data-state=revoked]')`, prefix), 10*time.Second)
	testenv.WaitFor(t, "the revoked key refused on the premium route", 10*time.Second, func() bool {
		return n.apiGet(t, "/premium/full-history/"+agent, key, nil) == http.StatusUnauthorized
	})

	// A webhook made in the console gets a test event, logged.
	b.do(t, "create a webhook", chromedp.SendKeys(chromedp.ID("hook-url"), n.hookURL), chromedp.SendKeys(chromedp.ID("hook-desc"), "browser"),
		chromedp.Click(chromedp.CSS("#hook-form button")))
	b.waitFor(t, "the new webhook", `document.querySelector("#hook-rows tr[data-hook]") && document.getElementById("new-hook-secret")`, 10*time.Second)
	hook := eval[string](t, b, `document.querySelector("#hook-rows tr[data-hook]").dataset.hook`)
	b.do(t, "send a test event", chromedp.Click(chromedp.CSS(fmt.Sprintf("button[data-test=%q]", hook))))
	// The console says so once the table is drawn again.
	b.waitFor(t, "the test event queued", `document.getElementById("console-status").innerText === "Test event queued."`, 10*time.Second)
	select {
	case body := <-n.received:
		if !strings.Contains(body, `"webhook.test"`) {
			t.Errorf("the receiver got %s", body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery reached the receiver within 30 s")
	}
	b.do(t, "open the delivery log", chromedp.Click(chromedp.CSS(fmt.Sprintf("button[data-log=%q]", hook))))
	b.waitFor(t, "the delivery log", `document.getElementById("delivery-rows")`, 10*time.Second)
	testenv.WaitForState(t, "the delivery log shows a delivered attempt", testenv.Patience, testenv.Every(100*time.Millisecond, func() (bool, string) {
		if eval[bool](t, b, `!!document.querySelector("#delivery-rows tr[data-delivery] td[data-outcome=ok]")`) {
			return true, ""
		}
		// (a click from the page: the log redraws itself, button included)
		eval[chromedp.Void](t, b, `document.getElementById("refresh-log").click()`)
		return false, "no row with data-outcome=ok"
	}))
	if !eval[bool](t, b, `!!document.querySelector("#payment-rows")`) {
		t.Error("the console shows no payments table")
	}
	b.checkPage(t, "console")
	// Signed in, with a key, a webhook and its log: the console fits every
	// width, no word in its tables (keys, webhooks, deliveries, payments)
	// is broken inside, and axe-core finds no serious or critical violation.
	src := axeSource(t)
	for _, w := range widths {
		b.do(t, "viewport", chromedp.EmulateViewport(w, 900))
		time.Sleep(100 * time.Millisecond) // the layout settles
		what := fmt.Sprintf("signed-in console at %d px", w)
		b.fits(t, what)
		b.wordsWhole(t, what)
		b.axe(t, src, what)
		b.shootWidth(t, "signed-in-console", w)
	}
	b.do(t, "viewport back", chromedp.EmulateViewport(1200, 900))
	// Pause it.
	b.do(t, "pause the webhook", chromedp.Click(chromedp.CSS(fmt.Sprintf("button[data-toggle=%q]", hook))))
	b.waitFor(t, "paused", fmt.Sprintf(`document.querySelector('#hook-rows tr[data-hook=%q] td[data-state=paused]')`, hook), 10*time.Second)

	// Signing out ends the session.
	b.do(t, "sign out", chromedp.Click(chromedp.ID("sign-out")))
	b.waitFor(t, "signed out", `document.getElementById("sign-in")`, 10*time.Second)
	b.do(t, "reload the console", chromedp.Navigate(n.root+"/#/stats"), chromedp.Navigate(n.root+"/#/console"))
	b.waitFor(t, "still signed out", `document.getElementById("sign-in")`, 10*time.Second)
}
