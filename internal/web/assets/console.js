// The console: sign in with a Solana wallet (Sign-In-With-Solana), then
// manage the account's API keys and webhooks through the API's own routes,
// with the session as an admin of the account. Every call that changes
// something carries the session's CSRF token.
import { el, api, APIError, when, copyButton, short, num, nw, blob, cardsTable, cell, failure } from "./util.js";
import { webhookTools, eventCatalog } from "./webhooks.js";
import { installTestWallet } from "./devwallet.js";

let session = null; // {account, wallet, csrfToken, expiresAt}

export async function consoleView(main) {
  main.classList.add("console");
  try {
    session = (await api("/auth/session")).data;
  } catch (e) {
    if (!(e instanceof APIError && e.status === 401)) {
      main.append(el("h1", {}, "Console"), failure(e, "your session"));
      return null;
    }
    session = null;
  }
  if (!session) return signInView(main);
  const status = el("p", { id: "console-status", class: "status", role: "status", "aria-live": "polite" });
  const signOut = el("button", { type: "button", class: "secondary", id: "sign-out" }, "Sign out");
  signOut.addEventListener("click", async () => {
    await api("/auth/signout", { method: "POST", csrf: session.csrfToken });
    session = null;
    main.replaceChildren();
    signInView(main);
  });
  main.append(el("h1", {}, "Console"),
    el("p", {}, "Signed in as ", blob(session.account, { id: "account-name" }), " with wallet ",
      el("code", {}, short(session.wallet, 12)), " ", copyButton(session.wallet, "wallet address"),
      "; the session ends ", when(session.expiresAt), ". ", signOut),
    status);
  const say = (msg, bad) => { status.textContent = msg; status.classList.toggle("error", !!bad); };
  const keys = el("section", { "aria-labelledby": "keys-h" });
  const hooks = el("section", { "aria-labelledby": "hooks-h" });
  const pays = el("section", { "aria-labelledby": "pays-h" });
  main.append(keys, hooks, pays);
  await Promise.all([keysSection(keys, say), webhooksSection(hooks, say), paymentsSection(pays)]);
  return null;
}

function signInView(main) {
  const status = el("p", { id: "signin-status", class: "status", role: "status", "aria-live": "polite" });
  const button = el("button", { type: "button", id: "sign-in" }, "Sign in with Solana");
  button.addEventListener("click", async () => {
    status.textContent = "Waiting for your wallet…";
    status.classList.remove("error");
    try {
      await signIn();
      main.replaceChildren();
      await consoleView(main);
    } catch (e) {
      status.textContent = "Sign-in failed: " + e.message;
      status.classList.add("error");
    }
  });
  const actions = el("p", { class: "signin-actions" }, button);
  main.append(el("h1", {}, "Console"),
    el("p", {}, "Your account is your Solana wallet: sign in to create and revoke API keys and manage webhooks. ",
      "Your wallet shows the message it signs: check that it names this site."),
    actions, status);
  if (!hasWallet()) noWallet(main, button, status, actions);
  return null;
}

function hasWallet() { return !!(window.solana && typeof window.solana.signMessage === "function"); }

// noWallet explains how to get a wallet; on a node served from this
// machine (make run) it offers a local test wallet first, beside the
// sign-in button (on a phone's first screen).
function noWallet(main, button, status, actions) {
  button.disabled = true;
  button.title = "No Solana wallet in this browser: see below";
  button.setAttribute("aria-describedby", "no-wallet-h");
  const local = ["127.0.0.1", "localhost", "[::1]"].includes(location.hostname);
  const sec = el("section", { id: "no-wallet", "aria-labelledby": "no-wallet-h" },
    el("h2", { id: "no-wallet-h" }, "No Solana wallet in this browser"),
    el("p", {}, "Signing in needs a Solana wallet extension that can sign messages. Install one, reload this page, and sign in: ",
      "signing in costs nothing and sends no transaction."),
    el("ul", { class: "wallets" },
      el("li", {}, el("a", { href: "https://phantom.com/download", rel: "noopener", target: "_blank" }, "Phantom"), " (Chrome, Firefox, Brave, Edge; iOS and Android apps)"),
      el("li", {}, el("a", { href: "https://solflare.com/download", rel: "noopener", target: "_blank" }, "Solflare"), " (browser extension and mobile apps)"),
      el("li", {}, el("a", { href: "https://backpack.app/download", rel: "noopener", target: "_blank" }, "Backpack"), " (browser extension and mobile apps)")),
    el("p", { class: "muted" }, "On a phone, open this page in your wallet app's built-in browser."));
  if (local) {
    const use = el("button", { type: "button", class: "secondary", id: "use-test-wallet", "aria-describedby": "test-wallet-help" }, "Use a local test wallet");
    const help = el("p", { id: "test-wallet-help", class: "muted" }, "No Solana wallet in this browser. This node is served from this computer (make run): ",
      "a test wallet is an Ed25519 key made in this browser and kept in its local storage, enough to sign in and try the console, ",
      "never a wallet for funds. Anyone using this browser profile can use it.");
    use.addEventListener("click", async () => {
      const address = await installTestWallet();
      button.disabled = false;
      button.removeAttribute("title");
      button.removeAttribute("aria-describedby");
      use.remove();
      // The wallet is here now: the "no wallet" help gives way to what is.
      help.replaceWith(el("p", { id: "test-wallet-address" }, "A local test wallet is ready: ", blob(address), " (kept in this browser's local storage). ",
        "Press Sign in with Solana: it signs the sign-in message and nothing else."));
      sec.remove();
      status.textContent = "Test wallet ready.";
      button.focus();
    });
    actions.append(" ", use);
    actions.after(help);
  }
  main.append(sec);
}

// signIn asks the wallet to sign a Sign-In-With-Solana message built from
// a fresh server nonce, and starts a session with it.
async function signIn() {
  const provider = window.solana;
  if (!provider || typeof provider.signMessage !== "function") throw new Error("no Solana wallet found in this browser");
  const conn = await provider.connect();
  const pk = (conn && conn.publicKey) || provider.publicKey;
  if (!pk) throw new Error("the wallet did not share its address");
  const address = typeof pk === "string" ? pk : (pk.toBase58 ? pk.toBase58() : pk.toString());
  const n = (await api("/auth/nonce")).data;
  const message = `${n.domain} wants you to sign in with your Solana account:\n${address}\n\n${n.statement}\n\n` +
    `URI: ${n.uri}\nVersion: ${n.version}\nChain ID: ${n.chainId}\nNonce: ${n.nonce}\nIssued At: ${n.issuedAt}\nExpiration Time: ${n.expirationTime}`;
  const signed = await provider.signMessage(new TextEncoder().encode(message), "utf8");
  const sig = signed && signed.signature ? signed.signature : signed;
  const bytes = sig instanceof Uint8Array ? sig : new Uint8Array(sig);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  session = (await api("/auth/signin", { method: "POST", body: { message, signature: btoa(bin) } })).data;
}

function csrf() { return session ? session.csrfToken : ""; }

async function keysSection(sec, say) {
  const tbody = el("tbody", { id: "key-rows" });
  const label = el("input", { id: "key-label", maxlength: 100, placeholder: "laptop, CI, auditor…" });
  const secret = el("div", { id: "new-key", "aria-live": "polite" });
  const form = el("form", { id: "key-form" }, el("label", { for: "key-label" }, "Label of a new key"), label, " ",
    el("button", { type: "submit" }, "Create key"));
  const headers = [["Key"], ["Label"], ["Role"], ["Created"], ["Last used"], ["State"], ["Action", { hidden: true }]];
  const table = cardsTable({ id: "key-table", bodyId: "key-rows" }, headers, []);
  async function load() {
    const page = await api("/keys?limit=100");
    const body = table.tBodies[0];
    body.replaceChildren(...page.data.map((k) => {
      const revoke = el("button", { type: "button", class: "danger", "data-revoke": k.prefix, "aria-label": "Revoke key " + k.prefix }, "Revoke");
      revoke.addEventListener("click", async () => {
        if (!confirm(`Revoke key atst_${k.prefix}…? Calls made with it will be refused.`)) return;
        try { await api("/keys/" + k.prefix, { method: "DELETE", csrf: csrf() }); say(`Key ${k.prefix} revoked.`); await load(); }
        catch (e) { say("Could not revoke: " + e.message, true); }
      });
      return el("tr", { "data-key": k.prefix }, cell("Key", {}, el("code", {}, "atst_" + k.prefix + "…"), " ", copyButton("atst_" + k.prefix, "key prefix " + k.prefix)),
        cell("Label", {}, k.label || el("span", { class: "muted" }, "none")),
        cell("Role", {}, k.role), cell("Created", {}, when(k.createdAt)), cell("Last used", {}, when(k.lastUsedAt)),
        cell("State", { "data-state": k.revoked ? "revoked" : "active" }, k.revoked ? el("span", {}, "revoked ", when(k.revokedAt)) : "active"),
        cell("", {}, k.revoked ? "" : revoke));
    }));
    if (!page.data.length) {
      body.append(el("tr", {}, el("td", { colspan: headers.length, class: "empty", "data-label": "" },
        "No keys yet. Give a new key a label above and press Create key: its secret is shown once, to copy then. ",
        "A key opens the premium routes (", el("code", { class: "nw" }, "x-api-key"), " header) and manages this account's webhooks.")));
    }
  }
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const k = (await api("/keys", { method: "POST", csrf: csrf(), body: { label: label.value, role: "admin" } })).data;
      secret.replaceChildren(el("div", { class: "secret" },
        el("p", {}, el("strong", {}, "Your new key, shown this once. "), "Store it now: it cannot be shown again."),
        el("p", {}, blob(k.key, { id: "new-key-secret" }), " ", copyButton(k.key, "the new key", { id: "copy-key" }))));
      label.value = "";
      say(`Key ${k.prefix} created.`);
      await load();
    } catch (err) { say("Could not create the key: " + err.message, true); }
  });
  sec.append(el("h2", { id: "keys-h" }, "API keys"), form, secret, table);
  await load();
}

async function webhooksSection(sec, say) {
  const url = el("input", { id: "hook-url", type: "url", size: 50, required: true, placeholder: "https://example.com/hooks/attestd" });
  const desc = el("input", { id: "hook-desc", maxlength: 200 });
  const created = el("div", { id: "new-hook", "aria-live": "polite" });
  const log = el("div", { id: "delivery-log" });
  const tools = webhookTools({ say, csrf, reload: () => load() });
  const form = el("form", { id: "hook-form" },
    el("div", {}, el("label", { for: "hook-url" }, "URL of a new webhook (receives attestation.created)"), url),
    el("div", {}, el("label", { for: "hook-desc" }, "Description"), desc),
    el("p", {}, el("button", { type: "submit" }, "Create webhook")));
  const headers = [["Id"], ["URL"], ["Description"], ["State"], ["Actions"]];
  const table = cardsTable({ id: "hook-table", bodyId: "hook-rows", class: "cards-wide" }, headers, []);
  const tbody = table.tBodies[0];
  async function act(fn, ok) {
    // The message comes once the table shows the change.
    try { await fn(); await load(); if (ok) say(ok); } catch (e) { say(e.message, true); }
  }
  async function showLog(id) {
    const page = await api(`/webhooks/${id}/deliveries?limit=50`);
    const rows = page.data.map((d) => {
      const retry = el("button", { type: "button", class: "secondary", "data-retry": d.deliveryId }, "Retry");
      retry.addEventListener("click", () => act(() => api(`/webhooks/${id}/deliveries/${d.deliveryId}/retry`, { method: "POST", csrf: csrf() })
        .then(() => showLog(id)), "Retry queued."));
      return el("tr", { "data-delivery": d.deliveryId }, cell("Attempted", {}, when(d.attemptedAt)), cell("Event", {}, d.eventType),
        cell("Attempt", {}, String(d.attempt) + (d.manual ? " (manual)" : "")),
        cell("Outcome", { "data-outcome": d.succeeded ? "ok" : "failed" }, d.succeeded ? "delivered" : "failed"),
        cell("Status", {}, d.statusCode == null ? "no answer" : String(d.statusCode)),
        cell("Latency", { class: "num" }, nw(num(d.latencyMs) + "\u00a0ms")), cell("Error", {}, d.error || el("span", { class: "muted" }, "none")), cell("", {}, retry));
    });
    const refresh = el("button", { type: "button", class: "secondary", id: "refresh-log" }, "Refresh");
    refresh.addEventListener("click", () => showLog(id).catch((e) => say(e.message, true)));
    log.replaceChildren(el("h3", {}, "Deliveries of " + id + " "), refresh,
      cardsTable({ id: "delivery-table", bodyId: "delivery-rows", class: "cards-wide" }, [["Attempted"], ["Event"], ["Attempt"], ["Outcome"], ["Status"], ["Latency", { num: true }], ["Error"], ["Action", { hidden: true }]],
        rows, "No attempt yet. Press Send test to send this webhook a webhook.test event now, or wait for the next attestation."));
  }
  async function load() {
    const page = await api("/webhooks?limit=100");
    tbody.replaceChildren(...page.data.map((w) => {
      const b = (text, attr, fn, cls) => { const x = el("button", { type: "button", class: cls || "secondary", [attr]: w.id }, text); x.addEventListener("click", fn); return x; };
      return el("tr", { "data-hook": w.id }, cell("Id", {}, el("code", {}, w.id)), cell("URL", {}, el("code", { title: w.url }, short(w.url, 40)), " ", copyButton(w.url, "webhook URL")),
        cell("Description", {}, w.description || el("span", { class: "muted" }, "none")),
        cell("State", { "data-state": w.active ? "active" : "paused", "data-verification": w.verification.status },
          (w.active ? "active" : "paused" + (w.disabledReason ? ": " + w.disabledReason : "")) +
          "; " + endpointState(w.verification) +
          tools.describe(w)),
        cell("Actions", { class: "actions-cell" },
          b(w.active ? "Pause" : "Resume", "data-toggle", () => act(() => api("/webhooks/" + w.id, { method: "PATCH", csrf: csrf(), body: { active: !w.active } }), w.active ? "Paused." : "Resumed.")),
          ...(w.verification.status === "unverified" ? [b("Verify again", "data-verify", () => act(() => api(`/webhooks/${w.id}/verify`, { method: "POST", csrf: csrf() }), "Verification started: the receiver gets a webhook.verify request within 10 s."))] : []),
          b("Send test", "data-test", () => act(() => api(`/webhooks/${w.id}/test`, { method: "POST", csrf: csrf() }), "Test event queued.")),
          b("Deliveries", "data-log", () => showLog(w.id).catch((e) => say(e.message, true))),
          ...tools.buttons(w).filter((x) => typeof x !== "string"),
          b("Delete", "data-delete", () => { if (confirm("Delete webhook " + w.id + "?")) act(() => api("/webhooks/" + w.id, { method: "DELETE", csrf: csrf() }), "Deleted."); }, "danger")));
    }));
    if (!page.data.length) {
      tbody.append(el("tr", {}, el("td", { colspan: headers.length, class: "empty", "data-label": "" },
        "No webhooks yet. Enter the URL of a receiver above and press Create webhook: every new attestation is POSTed to it, signed with a secret shown once.")));
    }
  }
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const w = (await api("/webhooks", { method: "POST", csrf: csrf(), body: { url: url.value, events: ["attestation.created"], description: desc.value } })).data;
      created.replaceChildren(el("div", { class: "secret" }, el("p", {}, el("strong", {}, "Signing secret of " + w.id + ", shown this once: "),
        "store it where your receiver checks signatures."),
        el("p", {}, blob(w.secret, { id: "new-hook-secret" }), " ", copyButton(w.secret, "the signing secret", { id: "copy-hook-secret" }))));
      url.value = ""; desc.value = "";
      say(`Webhook ${w.id} created.`);
      await load();
    } catch (err) { say("Could not create the webhook: " + err.message, true); }
  });
  sec.append(el("h2", { id: "hooks-h" }, "Webhooks"), form, created, table, tools.panel, log);
  const catalog = el("section", { "aria-labelledby": "catalog-h" });
  sec.append(catalog);
  eventCatalog(catalog).catch((e) => say(e.message, true));
  try { await load(); } catch (e) {
    if (e instanceof APIError && e.status === 503) tbody.replaceChildren(el("tr", {}, el("td", { colspan: headers.length, class: "empty", "data-label": "" }, e.message))); else throw e;
  }
}

// endpointState says which per-host cap a webhook's deliveries share and
// what answering the webhook.verify challenge gives. Deliveries never wait
// for the challenge: it is an opt-in proof.
function endpointState(v) {
  const rate = (n) => (n == null ? "no cap" : num(n) + "\u2060/\u2060s"); // a word joiner: "24/s" stays whole
  if (v.status === "verified") return `endpoint verified: up to ${rate(v.hostRateLimit)} to its host`;
  const state = v.status === "pending" ? "endpoint verification pending" : "endpoint unverified";
  return `${state}: deliveries go on, up to ${rate(v.hostRateLimit)} to its host with other unverified webhooks; ` +
    `echo the webhook.verify challenge for ${rate(v.verifiedHostRateLimit)}` + (v.error ? ` (last answer: ${v.error})` : "");
}

// USDC mints (6 decimals): their amounts are shown in USDC.
const usdc = new Set(["EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU"]);

async function paymentsSection(sec) {
  const page = await api("/auth/payments?limit=50");
  const rows = page.data.map((p) => el("tr", {}, cell("Time", {}, when(p.createdAt)), cell("Route", {}, el("code", {}, p.route)),
    cell("Amount", { "data-amount": p.amount, class: "num" }, usdc.has(p.asset) ? (Number(p.amount) / 1e6).toFixed(6).replace(/0+$/, "").replace(/\.$/, "") + " USDC" : p.amount + " of " + short(p.asset, 8)),
    cell("Status", {}, p.status),
    cell("Transaction", {}, p.txSignature ? [el("code", { title: p.txSignature }, short(p.txSignature, 12)), " ", copyButton(p.txSignature, "transaction signature")] : el("span", { class: "muted" }, "none"))));
  sec.append(el("h2", { id: "pays-h" }, "Pay-per-request payments from this wallet"),
    el("p", { class: "muted" }, "Premium calls paid with x402 from this wallet; calls made with keys show as each key's last use above."),
    cardsTable({ id: "payment-table", bodyId: "payment-rows" }, [["Time"], ["Route"], ["Amount", { num: true }], ["Status"], ["Transaction"]], rows,
      "No payment from this wallet yet. A premium route called without a key answers 402 with a price; an x402 client pays it from this wallet, and each payment shows here."));
}
