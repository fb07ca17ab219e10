// The single page: a hash router over the home, the explorer, the search,
// the dataset's downloads, the console and the API reference. Every view reads the public API at
// /api/v1; nothing is loaded from elsewhere. When the API's per-IP limit
// refuses a call, a notice says so and when the page tries again, and the
// view is drawn again then.
import { homeView } from "./home.js";
import { listView, attestationView, agentView, agentsView, statsView, listParams } from "./explorer.js";
import { searchView, attachSearch } from "./search.js";
import { consoleView } from "./console.js";
import { apiRefView } from "./apiref.js";
import { dataView } from "./data.js";
import { el, secondsLeft, failure, short } from "./util.js";

const main = document.getElementById("main");
const notice = el("div", { id: "limit-notice", class: "notice", role: "status", hidden: true });
main.before(notice);
let stop = null; // the current view's cleanup (closes the live stream)

// route parses location.hash: "#/path?query".
export function route() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const q = raw.indexOf("?");
  const path = q < 0 ? raw : raw.slice(0, q);
  const params = new URLSearchParams(q < 0 ? "" : raw.slice(q + 1));
  let parts;
  try { parts = path.split("/").filter(Boolean).map(decodeURIComponent); } catch { parts = ["?"]; }
  return { path, params, parts };
}

let generation = 0; // which render is current: a slower earlier one draws into a detached view

// navOf is the navigation entry a route belongs to.
function navOf(r) {
  const p = r.parts[0] || "";
  if (p === "" && [...r.params.keys()].some((k) => listParams.includes(k))) return "#/attestations";
  return { "": "#/", attestation: "#/attestations", attestations: "#/attestations", agent: "#/agents", agents: "#/agents",
    stats: "#/stats", data: "#/data", console: "#/console", api: "#/api" }[p] || "";
}

// titleOf is the document's title on route r: what the page shows, then
// the site ("Attestation 3xZab…: attestd").
function titleOf(r) {
  const id = (r.parts[1] || "").slice(0, 64);
  const list = r.parts[0] === "attestations" || (!r.parts[0] && [...r.params.keys()].some((k) => listParams.includes(k)));
  let what;
  if (list) what = "Attestations";
  else {
    switch (r.parts[0] || "") {
      case "": return "attestd: AI-agent attestations on Solana";
      case "attestation": what = "Attestation " + short(id, 5); break;
      case "agent": what = "Agent " + short(id, 5); break;
      case "agents": what = "Agents"; break;
      case "stats": what = "Stats"; break;
      case "data": what = "Download the data"; break;
      case "search": what = "Search" + (r.params.get("q") ? " for " + short(r.params.get("q"), 12) : ""); break;
      case "console": what = "Console"; break;
      case "api": what = "API reference"; break;
      default: what = "Not found";
    }
  }
  return what + ": attestd";
}

async function render() {
  if (stop) { stop(); stop = null; }
  const mine = ++generation;
  const shown = location.hash || "#/";
  const r = route();
  const current = navOf(r);
  for (const a of document.querySelectorAll("nav a")) {
    if (a.getAttribute("href") === current) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  document.title = titleOf(r);
  menu(false);
  // The search box keeps its text on the search page only.
  const box = document.getElementById("q");
  if (box && r.parts[0] !== "search") box.value = "";
  const view = el("div", { class: "view" });
  main.replaceChildren(view);
  let cleanup = null;
  try {
    switch (r.parts[0] || "") {
      case "":
        // Links of the former list page (#/?agent=...) still open the list.
        cleanup = await ([...r.params.keys()].some((k) => listParams.includes(k)) ? listView(view, r.params) : homeView(view));
        break;
      case "attestations": cleanup = await listView(view, r.params); break;
      case "attestation": cleanup = await attestationView(view, r.parts[1] || ""); break;
      case "agent": cleanup = await agentView(view, r.parts[1] || ""); break;
      case "agents": cleanup = await agentsView(view, r.params); break;
      case "stats": cleanup = await statsView(view); break;
      case "data": cleanup = await dataView(view); break;
      case "search": cleanup = await searchView(view, r.params); break;
      case "console": cleanup = await consoleView(view); break;
      case "api": cleanup = await apiRefView(view, r.parts[1] || ""); break;
      default: view.append(el("h1", {}, "Not found"), el("p", {}, "No page here. ", el("a", { href: "#/" }, "Back to the home page")));
    }
  } catch (e) {
    view.append(failure(e, "this page"));
  }
  // A render overtaken by a newer one stops what it started (a stream).
  if (mine !== generation) { if (cleanup) cleanup(); return; }
  stop = cleanup;
  main.dataset.view = shown; // which route is on screen (tests wait for it)
  performance.mark("attestd:view-rendered");
  return view;
}

// A navigation within the page moves focus to the new page's heading (a
// screen reader reads where it arrived; no frame is drawn around it), or
// to main when the page has none.
async function navigated() {
  window.scrollTo(0, 0);
  const view = await render();
  if (!view || !view.isConnected) return;
  const h1 = view.querySelector("h1");
  const target = h1 || main;
  if (h1) h1.setAttribute("tabindex", "-1");
  // Not when the reader already moved on (typing in the search box, say).
  if (document.activeElement === document.body || document.activeElement === main || !document.activeElement) target.focus({ preventScroll: true });
}

// The rate limit: one notice with a countdown, then the view again.
let retryTimer = null;
function limited() {
  const tick = () => {
    const s = secondsLeft();
    if (s <= 0) {
      notice.hidden = true;
      retryTimer = null;
      render();
      return;
    }
    notice.hidden = false;
    notice.textContent = `The API is refusing requests from your address for now: it allows 100 a minute per address, and this ` +
      `browser (or others behind the same address) used them. The page is fine; its data loads again in ${s} s.`;
    retryTimer = setTimeout(tick, 1000);
  };
  if (!retryTimer) tick();
}
window.addEventListener("attestd:limited", limited);

window.addEventListener("hashchange", () => { main.focus({ preventScroll: true }); navigated(); });

// The menu (below 960 px the header's links fold behind it).
const menuButton = document.getElementById("menu");
function menu(open) {
  if (!menuButton) return;
  menuButton.setAttribute("aria-expanded", String(open));
}
if (menuButton) {
  menuButton.addEventListener("click", () => menu(menuButton.getAttribute("aria-expanded") !== "true"));
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && menuButton.getAttribute("aria-expanded") === "true") { menu(false); menuButton.focus(); }
  });
  document.addEventListener("click", (e) => {
    if (menuButton.getAttribute("aria-expanded") === "true" && !e.target.closest("nav")) menu(false);
  });
  document.getElementById("nav-links").addEventListener("click", (e) => { if (e.target.closest("a")) menu(false); });
  // A file picked from the menu closes it too.
  document.getElementById("payload-file").addEventListener("change", () => menu(false));
}

// The search box's placeholder: the longest of these that the box shows
// whole at its current width.
const placeholders = ["Address, transaction, action hash or payload file", "Address, transaction or action hash", "Address, tx or hash", "Address or hash", "Search"];
const measure = document.createElement("canvas").getContext("2d");
function fitPlaceholder() {
  const input = document.getElementById("q");
  if (!input || !measure) return;
  const cs = getComputedStyle(input);
  // (less the clear button's room, which a typed text shows)
  const room = input.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 20;
  if (room <= 0) return;
  measure.font = `${cs.fontStyle} ${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
  const fits = placeholders.find((p) => measure.measureText(p).width <= room) || placeholders[placeholders.length - 1];
  if (input.placeholder !== fits) input.placeholder = fits;
}
if (window.ResizeObserver) new ResizeObserver(fitPlaceholder).observe(document.getElementById("q")); else window.addEventListener("resize", fitPlaceholder);
fitPlaceholder();
// The skip link moves focus to the content without touching the route.
document.querySelector(".skip").addEventListener("click", (e) => { e.preventDefault(); main.focus(); });
attachSearch(document.getElementById("search"));
render();
