// Charts drawn as SVG from API figures: no library.
import { el, actionTypes, typeColors, num } from "./util.js";

// barChart draws one bar per {label, value}, w user units wide (the width
// it is shown at, so its text keeps its size).
export function barChart(title, rows, w = 640) {
  const rowH = 28, left = 128, h = rows.length * rowH + 8;
  const max = Math.max(1, ...rows.map((r) => r.value));
  const svg = el("svg", { viewBox: `0 0 ${w} ${h}`, width: "100%", role: "img", "aria-label": title, class: "bars" });
  svg.append(el("title", {}, title));
  rows.forEach((r, i) => {
    const y = 4 + i * rowH, bw = Math.round(((w - left - 70) * r.value) / max);
    svg.append(el("text", { x: 0, y: y + 17 }, r.label));
    const bar = el("rect", { x: left, y, width: Math.max(bw, 1), height: rowH - 8, fill: r.color || typeColors[0], rx: 2 });
    bar.append(el("title", {}, `${r.label}: ${num(r.value)}`));
    svg.append(bar);
    svg.append(el("text", { x: left + bw + 6, y: y + 17, "data-bar": r.label, "data-value": r.value }, num(r.value)));
  });
  return svg;
}

// niceStep is a round step (1, 2, 2.5 or 5 times a power of ten, at least
// 1) that splits max into about parts ticks.
export function niceStep(max, parts = 4) {
  const raw = Math.max(max, 1) / parts;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 2.5, 5, 10]) {
    const s = m * p;
    if (s >= raw && Number.isInteger(s)) return s;
  }
  return Math.ceil(raw);
}

const dayFmt = new Intl.DateTimeFormat("en-US", { month: "short", day: "numeric", timeZone: "UTC" });
const yearFmt = new Intl.DateTimeFormat("en-US", { month: "short", day: "numeric", year: "numeric", timeZone: "UTC" });

// bucketLabel is a bucket's short label: "10:00" (an hour; the date at
// midnight), "Nov 21" (a day).
export function bucketLabel(iso, bucket) {
  const d = new Date(iso);
  if (bucket === "day") return dayFmt.format(d);
  return iso.slice(11, 13) === "00" ? dayFmt.format(d) : iso.slice(11, 16);
}

// bucketSpan says which span a bucket covers, in full.
export function bucketSpan(iso, bucket) {
  const d = new Date(iso);
  if (bucket === "day") return yearFmt.format(d) + " (UTC)";
  const end = new Date(d.getTime() + 3600e3).toISOString().slice(11, 16);
  return `${yearFmt.format(d)}, ${iso.slice(11, 16)}–${end} UTC`;
}

// stepMs is a bucket's length.
export function stepMs(bucket) { return bucket === "day" ? 86400e3 : 3600e3; }

// timeline draws an activity series (the API's {bucket, series: [{at,
// total, byType}]}) as bars stacked by action type, w user units wide.
// The bucket still in progress at now is partial: drawn pale and dashed,
// labelled, and left out of the scale (so a busy current hour never
// flattens the rest; when it is taller it is cut at the top with its
// count). The y axis has round ticks; x labels never leave the chart;
// hovering or focusing a bucket shows its exact counts.
export function timeline(title, s, w = 640, now = Date.now()) {
  const h = 268, top = 18, bottom = 40, right = 10;
  const pts = s.series;
  const step = stepMs(s.bucket);
  const partial = pts.map((p) => Date.parse(p.at) + step > now);
  const complete = pts.filter((_, i) => !partial[i]).map((p) => p.total);
  const maxComplete = complete.length ? Math.max(0, ...complete) : 0;
  const maxAll = Math.max(0, ...pts.map((p) => p.total));
  const tick = niceStep(maxComplete > 0 ? maxComplete : maxAll);
  const yMax = Math.max(tick, Math.ceil((maxComplete > 0 ? maxComplete : maxAll) / tick) * tick);
  const ticks = [];
  for (let v = 0; v <= yMax; v += tick) ticks.push(v);
  const left = 12 + 7.5 * Math.max(...ticks.map((v) => num(v).length));
  const plotW = w - left - right, plotH = h - top - bottom;
  const bw = plotW / Math.max(1, pts.length);
  const y = (v) => top + plotH - (plotH * Math.min(v, yMax)) / yMax;

  const svg = el("svg", { viewBox: `0 0 ${w} ${h}`, width: "100%", role: "img", "aria-label": title, class: "timeline", tabindex: "0",
    "data-ymax": yMax, "data-partial": partial.some(Boolean) ? "1" : "0" });
  svg.append(el("title", {}, title));
  for (const v of ticks) {
    svg.append(el("line", { x1: left, y1: y(v), x2: w - right, y2: y(v), stroke: v === 0 ? "#6e7781" : "#e1e4e8" }));
    svg.append(el("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end", class: "axis", "data-tick": v }, num(v)));
  }
  const hits = [];
  pts.forEach((p, i) => {
    const x = left + i * bw, pad = bw > 4 ? 1 : 0;
    let base = y(0), drawn = 0;
    const g = el("g", { opacity: partial[i] ? 0.45 : null });
    for (const [ti, t] of actionTypes.entries()) {
      const n = p.byType[t] || 0;
      if (!n) continue;
      const yTop = y(Math.min(drawn + n, yMax));
      if (base - yTop > 0) g.append(el("rect", { x: x + pad, y: yTop, width: Math.max(bw - 2 * pad, 0.5), height: base - yTop, fill: typeColors[ti] }));
      base = yTop;
      drawn += n;
    }
    svg.append(g);
    if (partial[i] && p.total > 0) {
      svg.append(el("rect", { x: x + pad, y: y(p.total), width: Math.max(bw - 2 * pad, 0.5), height: y(0) - y(p.total), fill: "none",
        stroke: "#1b1f24", "stroke-dasharray": "3 2", "data-partial-bar": p.total }));
    }
    if (p.total > yMax) { // cut: say its count above the plot
      svg.append(el("text", { x: Math.min(x + bw / 2, w - right), y: top - 5, "text-anchor": x + bw / 2 > w - 40 ? "end" : "middle", class: "axis" }, "↑ " + num(p.total)));
    }
    const hit = el("rect", { x, y: top, width: Math.max(bw, 0.5), height: plotH, fill: "transparent", "data-index": i, "data-total": p.total });
    hit.append(el("title", {}, `${bucketSpan(p.at, s.bucket)}: ${num(p.total)} attestations${partial[i] ? " so far (in progress)" : ""}`));
    svg.append(hit);
    hits.push(hit);
  });
  // x labels: as many as fit at a regular step, none cut at either edge,
  // none over another.
  const labelW = s.bucket === "day" ? 58 : 50;
  const every = Math.max(1, Math.ceil((pts.length * labelW) / Math.max(plotW, 1)));
  let lastRight = -Infinity;
  pts.forEach((p, i) => {
    if (i % every !== 0) return;
    const text = bucketLabel(p.at, s.bucket);
    const cx = left + i * bw + bw / 2, tw = text.length * 7;
    let x = cx, anchor = "middle", from = cx - tw / 2;
    if (from < left - 4) { x = left; anchor = "start"; from = left; } else if (cx + tw / 2 > w - 2) { x = w - 2; anchor = "end"; from = w - 2 - tw; }
    if (from < lastRight + 8) return;
    lastRight = from + tw;
    svg.append(el("text", { x, y: h - bottom + 16, "text-anchor": anchor, class: "axis", "data-xlabel": i }, text));
  });
  if (partial.some(Boolean)) {
    svg.append(el("text", { x: w - right, y: h - 2, "text-anchor": "end", class: "axis" }, "pale, dashed: in progress"));
  }
  const mark = el("rect", { x: 0, y: top, width: Math.max(bw, 0.5), height: plotH, fill: "none", stroke: "#1b1f24", "stroke-width": 1.5, visibility: "hidden" });
  svg.append(mark);

  // The tooltip: exact counts of the bucket under the pointer or focus.
  const tip = el("div", { class: "tip", role: "tooltip", hidden: true });
  const wrap = el("div", { class: "plot", style: null }, svg, tip);
  let current = -1;
  const show = (i) => {
    if (i < 0 || i >= pts.length) return;
    current = i;
    const p = pts[i];
    const parts = actionTypes.filter((t) => p.byType[t]).map((t) => el("div", {}, `${t}: ${num(p.byType[t])}`));
    tip.replaceChildren(el("b", {}, bucketSpan(p.at, s.bucket)), el("div", { "data-tip-total": p.total },
      `${num(p.total)} attestation${p.total === 1 ? "" : "s"}${partial[i] ? " so far (in progress)" : ""}`), ...parts);
    tip.hidden = false;
    mark.setAttribute("x", left + i * bw);
    mark.setAttribute("visibility", "visible");
    const box = svg.getBoundingClientRect(), scale = box.width / w;
    const cx = (left + i * bw + bw / 2) * scale;
    tip.style.left = Math.max(0, Math.min(cx + 12, box.width - tip.offsetWidth)) + "px";
    tip.style.top = "8px";
  };
  const hide = () => { tip.hidden = true; mark.setAttribute("visibility", "hidden"); };
  svg.addEventListener("pointermove", (e) => {
    const box = svg.getBoundingClientRect();
    const x = ((e.clientX - box.left) / box.width) * w;
    const i = Math.floor((x - left) / bw);
    if (i >= 0 && i < pts.length) show(i); else hide();
  });
  svg.addEventListener("pointerleave", hide);
  svg.addEventListener("focus", () => show(pts.length - 1)); // the newest first; arrows move
  svg.addEventListener("blur", hide);
  svg.addEventListener("keydown", (e) => {
    if (e.key === "ArrowLeft") { show(Math.max(0, current - 1)); e.preventDefault(); }
    else if (e.key === "ArrowRight") { show(Math.min(pts.length - 1, current + 1)); e.preventDefault(); }
    else if (e.key === "Escape") hide();
  });
  wrap.showBucket = show; // for tests and the keyboard
  return wrap;
}

// legend names the colours of the action types.
export function legend() {
  return el("p", { class: "legend" }, actionTypes.map((t, i) => el("span", {},
    el("svg", { width: 10, height: 10, "aria-hidden": "true" }, el("rect", { width: 10, height: 10, fill: typeColors[i] })), " " + t)));
}
