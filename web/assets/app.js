// The single page: a hash router over the explorer and the console. Every
// view reads the public API at /api/v1; nothing is loaded from elsewhere.
import { listView, attestationView, agentView, agentsView, statsView } from "./explorer.js";
import { consoleView } from "./console.js";
import { el } from "./util.js";

const main = document.getElementById("main");
let stop = null; // the current view's cleanup (closes the live stream)

// route parses location.hash: "#/path?query".
export function route() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const q = raw.indexOf("?");
  const path = q < 0 ? raw : raw.slice(0, q);
  const params = new URLSearchParams(q < 0 ? "" : raw.slice(q + 1));
  return { path, params, parts: path.split("/").filter(Boolean).map(decodeURIComponent) };
}

let generation = 0; // which render is current: a slower earlier one draws into a detached view

async function render() {
  if (stop) { stop(); stop = null; }
  const mine = ++generation;
  const r = route();
  for (const a of document.querySelectorAll("nav a")) {
    const target = a.getAttribute("href");
    const current = target === "#/" + (r.parts[0] || "") || (target === "#/" && r.parts[0] === "attestation") ||
      (target === "#/agents" && r.parts[0] === "agent");
    if (current) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  const view = el("div", { class: "view" });
  main.replaceChildren(view);
  let cleanup = null;
  try {
    switch (r.parts[0] || "") {
      case "": cleanup = await listView(view, r.params); break;
      case "attestation": cleanup = await attestationView(view, r.parts[1] || ""); break;
      case "agent": cleanup = await agentView(view, r.parts[1] || ""); break;
      case "agents": cleanup = await agentsView(view, r.params); break;
      case "stats": cleanup = await statsView(view); break;
      case "console": cleanup = await consoleView(view); break;
      default: view.append(el("h1", {}, "Not found"), el("p", {}, "No page here. ", el("a", { href: "#/" }, "Back to the explorer")));
    }
  } catch (e) {
    view.append(el("p", { class: "error", role: "alert" }, "Could not load this page: " + e.message));
  }
  // A render overtaken by a newer one stops what it started (a stream).
  if (mine !== generation) { if (cleanup) cleanup(); } else stop = cleanup;
}

window.addEventListener("hashchange", () => { render(); main.focus(); });
// The skip link moves focus to the content without touching the route.
document.querySelector(".skip").addEventListener("click", (e) => { e.preventDefault(); main.focus(); });
render();
