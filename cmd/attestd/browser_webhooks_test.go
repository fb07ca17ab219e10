package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserConsoleWebhookTools: the console's webhook tools (issue 26):
// rotate a secret (the new one shown once), recover a window, and the
// event catalog with each type's schema and example.
func TestBrowserConsoleWebhookTools(t *testing.T) {
	t.Parallel()
	b := startBrowser(t)
	n := startWebNode(t)
	b.do(t, "open the console", chromedp.Navigate(n.root+"/#/console"))
	b.do(t, "sign in", chromedp.WaitVisible(chromedp.ID("sign-in")), chromedp.Click(chromedp.ID("sign-in")))
	b.waitFor(t, "signed in", `document.getElementById("account-name")`, 15*time.Second)

	b.do(t, "create a webhook", chromedp.SendKeys(chromedp.ID("hook-url"), n.hookURL), chromedp.Click(chromedp.CSS("#hook-form button")))
	b.waitFor(t, "the new webhook", `document.querySelector("#hook-rows tr[data-hook]") && document.getElementById("new-hook-secret")`, 10*time.Second)
	hook := eval[string](t, b, `document.querySelector("#hook-rows tr[data-hook]").dataset.hook`)
	first := eval[string](t, b, `document.getElementById("new-hook-secret").innerText`)

	// Rotate: confirm() is answered yes.
	eval[chromedp.Void](t, b, `window.confirm = () => true`)
	b.do(t, "open rotate", chromedp.Click(chromedp.CSS(fmt.Sprintf("button[data-rotate=%q]", hook))))
	b.waitFor(t, "the rotate form", `document.getElementById("rotate-form")`, 10*time.Second)
	b.do(t, "rotate", chromedp.Click(chromedp.CSS("#rotate-form button")))
	b.waitFor(t, "the new secret", `document.getElementById("rotated-secret")`, 10*time.Second)
	second := eval[string](t, b, `document.getElementById("rotated-secret").innerText`)
	if !strings.HasPrefix(second, "whsec_") || second == first {
		t.Errorf("rotated secret %q (first %q)", second, first)
	}
	b.waitFor(t, "the overlap in the row", fmt.Sprintf(`document.querySelector('#hook-rows tr[data-hook=%q]').innerText.includes("old secret valid until")`, hook), 10*time.Second)

	// Recover the last hour: nothing failed, so nothing to send.
	b.do(t, "open recover", chromedp.Click(chromedp.CSS(fmt.Sprintf("button[data-recover=%q]", hook))))
	b.waitFor(t, "the recover form", `document.getElementById("recover-form")`, 10*time.Second)
	b.do(t, "recover", chromedp.Click(chromedp.CSS("#recover-form button")))
	b.waitFor(t, "the recovery", `document.getElementById("recover-result").innerText.startsWith("Recovery rcv_")`, 10*time.Second)
	if got := eval[string](t, b, `document.getElementById("recover-result").innerText`+plainText); !strings.Contains(got, "0 deliveries to send again") {
		t.Errorf("recovery shown as %q", got)
	}

	// Each row says which per-host cap the endpoint's deliveries share and
	// what answering the challenge gives: a second webhook, at a port where
	// nothing answers, stays pending (its deliveries go on all the same).
	b.do(t, "create an unanswered webhook", chromedp.SendKeys(chromedp.ID("hook-url"), "http://127.0.0.1:9/nothing"), chromedp.Click(chromedp.CSS("#hook-form button")))
	b.waitFor(t, "the endpoint states", `document.querySelectorAll("#hook-rows tr[data-hook]").length === 2 && [...document.querySelectorAll("#hook-rows td[data-verification]")].every((td) => td.innerText`+plainText+`.includes("/s"))`, 10*time.Second)
	if got := eval[string](t, b, `document.querySelector('#hook-rows td[data-verification=pending]').innerText`+plainText); !strings.Contains(got, "deliveries go on") || !strings.Contains(got, "challenge for 50/s") {
		t.Errorf("a pending endpoint's row says %q", got)
	}

	// The catalog.
	b.waitFor(t, "the catalog", `document.querySelectorAll("#event-catalog details").length === 6`, 10*time.Second)
	if !eval[bool](t, b, `document.querySelector('#event-catalog details[data-event-type="webhook.disabled"] pre').textContent.includes('"webhookId"')`) {
		t.Error("the catalog shows no schema for webhook.disabled")
	}
	b.checkPage(t, "console webhook tools")
}
