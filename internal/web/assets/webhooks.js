// The console's webhook tools beyond the basics (issue 26): recover a
// time window's deliveries after an outage, rotate a signing secret (the
// new one shown once), and the event catalog with each type's schema and
// example. console.js calls webhookTools for each row's buttons and its
// panel, and eventCatalog for the catalog section.
import { el, api, copyButton, when, num, plural, blob } from "./util.js";

// isoOf turns a datetime-local value (the browser's time zone) into RFC 3339.
function isoOf(v) { return v ? new Date(v).toISOString() : null; }

// localOf is a Date as a datetime-local value.
function localOf(d) {
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

export function webhookTools({ say, csrf, reload }) {
  const panel = el("div", { id: "hook-tools", "aria-live": "polite" });

  function recoverForm(w) {
    const since = el("input", { id: "recover-since", type: "datetime-local", required: true, value: localOf(new Date(Date.now() - 3600e3)) });
    const until = el("input", { id: "recover-until", type: "datetime-local" });
    const status = el("select", { id: "recover-status" }, el("option", { value: "failed" }, "failed deliveries"), el("option", { value: "all" }, "all deliveries"));
    const result = el("p", { id: "recover-result" });
    const form = el("form", { id: "recover-form" },
      el("h3", {}, "Recover deliveries of " + w.id),
      el("p", { class: "muted" }, "Sends again the deliveries created in a window (when each event was sent to this webhook, not the attestation's chain time; at most 14 days, within the log's 30 days) that failed, or all of them. Leave the end empty for now."),
      el("div", {}, el("label", { for: "recover-since" }, "From"), since),
      el("div", {}, el("label", { for: "recover-until" }, "To (optional)"), until),
      el("div", {}, el("label", { for: "recover-status" }, "Which"), status),
      el("p", {}, el("button", { type: "submit" }, "Recover")), result);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const body = { since: isoOf(since.value), status: status.value };
      if (until.value) body.until = isoOf(until.value);
      try {
        const r = (await api(`/webhooks/${w.id}/recover`, { method: "POST", csrf: csrf(), body })).data;
        const progress = el("button", { type: "button", class: "secondary", id: "recover-progress" }, "Progress");
        const show = (x) => result.replaceChildren(`Recovery ${x.id}: ${plural(x.queued, "delivery", "deliveries")} to send again, ${num(x.processed)} queued so far` +
          (x.skipped ? `, ${num(x.skipped)} skipped (acknowledged meanwhile, or the webhook was paused)` : "") + ` (${x.state}). `, progress);
        progress.addEventListener("click", async () => {
          try { show((await api(`/webhooks/${w.id}/recoveries/${r.id}`)).data); } catch (err) { say(err.message, true); }
        });
        show(r);
        say(`Recovery of ${w.id} ${r.state === "running" ? "started" : "done"}: ${plural(r.queued, "delivery", "deliveries")}.`);
      } catch (err) { say("Could not recover: " + err.message, true); }
    });
    panel.replaceChildren(form);
  }

  function rotateForm(w) {
    const hours = el("input", { id: "rotate-hours", type: "number", min: 0, max: 168, step: "any", value: 24 });
    const shown = el("div", { id: "rotated" });
    const form = el("form", { id: "rotate-form" },
      el("h3", {}, "Rotate the signing secret of " + w.id),
      el("p", { class: "muted" }, "Deliveries are signed with both secrets during the overlap, so your receiver can switch to the new one at its pace."),
      el("div", {}, el("label", { for: "rotate-hours" }, "Overlap (hours, 0 to 168)"), hours),
      el("p", {}, el("button", { type: "submit" }, "Rotate secret")), shown);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      if (!confirm("Make a new signing secret for " + w.id + "?")) return;
      try {
        const r = (await api(`/webhooks/${w.id}/rotate-secret`, { method: "POST", csrf: csrf(), body: { overlapSeconds: Math.round(Number(hours.value) * 3600) } })).data;
        shown.replaceChildren(el("div", { class: "secret" },
          el("p", {}, el("strong", {}, "New signing secret of " + w.id + ", shown this once: ")),
          el("p", {}, blob(r.secret, { id: "rotated-secret" }), " ", copyButton(r.secret, "the new signing secret", { id: "copy-rotated-secret" })),
          el("p", {}, r.previousSecretExpiresAt ? ["The old secret keeps signing until ", when(r.previousSecretExpiresAt), "."] : "The old secret no longer signs.")));
        say(`Secret of ${w.id} rotated.`);
        await reload();
      } catch (err) { say("Could not rotate: " + err.message, true); }
    });
    panel.replaceChildren(form);
  }

  // buttons are a row's extra actions.
  function buttons(w) {
    const b = (text, attr, fn) => { const x = el("button", { type: "button", class: "secondary", [attr]: w.id }, text); x.addEventListener("click", fn); return x; };
    return [" ", b("Recover", "data-recover", () => recoverForm(w)), " ", b("Rotate secret", "data-rotate", () => rotateForm(w))];
  }

  // describe is a row's signing and limit summary.
  function describe(w) {
    const parts = ["signed " + (w.signatureScheme || "v1")];
    if (w.rateLimitPerSecond != null) parts.push(num(w.rateLimitPerSecond) + "\u2060/\u2060s at most"); // a word joiner: "24/s" stays whole
    if (w.previousSecretExpiresAt) parts.push("old secret valid until " + w.previousSecretExpiresAt.replace("T", " ").replace("Z", " UTC"));
    return "; " + parts.join(", ");
  }

  return { panel, buttons, describe };
}

// eventCatalog fills sec with the event types, each with its JSON Schema
// and an example (GET /webhooks/event-types, public).
export async function eventCatalog(sec) {
  const list = el("div", { id: "event-catalog" });
  sec.append(el("h2", { id: "catalog-h" }, "Event types"),
    el("p", { class: "muted" }, "What deliveries carry: each type's JSON Schema (also in the OpenAPI document) and an example."), list);
  const page = await api("/webhooks/event-types");
  list.replaceChildren(...page.data.map((t) => el("details", { "data-event-type": t.name },
    el("summary", {}, el("code", {}, t.name), " ", t.description, t.subscribable ? "" : " (sent on its own, not subscribed to)"),
    el("h4", {}, "Schema"), el("pre", {}, JSON.stringify(t.schema, null, 2)),
    el("h4", {}, "Example"), el("pre", {}, JSON.stringify(t.example, null, 2)))));
}
