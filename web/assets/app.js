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

async function render() {
  if (stop) { stop(); stop = null; }
  const r = route();
  for (const a of document.querySelectorAll("nav a")) {
    const target = a.getAttribute("href");
    const current = target === "#/" + (r.parts[0] || "") || (target === "#/" && r.parts[0] === "attestation") ||
      (target === "#/agents" && r.parts[0] === "agent");
    if (current) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  main.replaceChildren();
  try {
    switch (r.parts[0] || "") {
      case "": stop = await listView(main, r.params); break;
      case "attestation": stop = await attestationView(main, r.parts[1] || ""); break;
      case "agent": stop = await agentView(main, r.parts[1] || ""); break;
      case "agents": stop = await agentsView(main, r.params); break;
      case "stats": stop = await statsView(main); break;
      case "console": stop = await consoleView(main); break;
      default: main.append(el("h1", {}, "Not found"), el("p", {}, "No page here. ", el("a", { href: "#/" }, "Back to the explorer")));
    }
  } catch (e) {
    main.append(el("p", { class: "error", role: "alert" }, "Could not load this page: " + e.message));
  }
}

window.addEventListener("hashchange", () => { render(); main.focus(); });
// The skip link moves focus to the content without touching the route.
document.querySelector(".skip").addEventListener("click", (e) => { e.preventDefault(); main.focus(); });
render();
