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

const monthFmt = new Intl.DateTimeFormat("en-US", { month: "short", timeZone: "UTC" });

// xTicks chooses the x axis's labels for buckets starting at ats (ISO
// instants, one bucket each, bw user units wide): [{i, text}] at an even
// step of the calendar, the smallest whose labels keep apart.
export function xTicks(ats, bucket, bw) {
  const ms = ats.map((a) => Date.parse(a));
  const pick = (every, room, keep, text) => {
    if (every * bw < room) return null;
    return ms.flatMap((t, i) => (keep(t) ? [{ i, text: text(t, i) }] : []));
  };
  if (bucket === "hour") {
    for (const k of [1, 2, 3, 4, 6, 12, 24, 48, 168]) {
      const room = k >= 24 ? 60 : 52;
      // every k hours from midnight UTC; every 7 days from a Monday
      const keep = (t) => (k === 168 ? (t / 3600e3 + 72) % 168 === 0 : (t / 3600e3) % k === 0);
      const r = pick(k, room, keep, (t, i) => bucketLabel(ats[i], "hour"));
      if (r) return r;
    }
    return [];
  }
  for (const k of [1, 2, 7, 14]) {
    const keep = (t) => (k === 7 || k === 14 ? ((t / 86400e3 + 3) % k) === 0 : (t / 86400e3) % k === 0);
    const r = pick(k, 60, keep, (t, i) => bucketLabel(ats[i], "day"));
    if (r) return r;
  }
  // every k months, on the first of the month
  for (const k of [1, 2, 3, 6, 12]) {
    if (k * 30 * bw < 68) continue;
    return ms.flatMap((t, i) => {
      const d = new Date(t);
      if (d.getUTCDate() !== 1 || d.getUTCMonth() % k !== 0) return [];
      return [{ i, text: d.getUTCMonth() === 0 || k === 12 ? String(d.getUTCFullYear()) : monthFmt.format(d) }];
    });
  }
  return [];
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
  // x labels at an even step of the calendar (every 3 hours, every
  // Monday, every first of a month...), the smallest whose labels do not
  // touch; a label that would leave the chart at an edge is left out,
  // never moved off its bucket. Each has a tick on the axis.
  const ticksX = xTicks(pts.map((p) => p.at), s.bucket, bw);
  ticksX.forEach(({ i, text }) => {
    const cx = left + i * bw + bw / 2, tw = text.length * 7;
    if (cx - tw / 2 < 2 || cx + tw / 2 > w - 2) return;
    svg.append(el("line", { x1: cx, y1: y(0), x2: cx, y2: y(0) + 4, stroke: "#6e7781" }));
    svg.append(el("text", { x: cx, y: h - bottom + 16, "text-anchor": "middle", class: "axis", "data-xlabel": i }, text));
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
