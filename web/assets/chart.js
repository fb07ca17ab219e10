// Charts drawn as SVG from API figures: no library.
import { el, actionTypes, typeColors } from "./util.js";

// barChart draws one bar per {label, value}.
export function barChart(title, rows) {
  const w = 640, rowH = 24, left = 130, h = rows.length * rowH + 8;
  const max = Math.max(1, ...rows.map((r) => r.value));
  const svg = el("svg", { viewBox: `0 0 ${w} ${h}`, width: "100%", role: "img", "aria-label": title });
  svg.append(el("title", {}, title));
  rows.forEach((r, i) => {
    const y = 4 + i * rowH, bw = Math.round(((w - left - 70) * r.value) / max);
    svg.append(el("text", { x: 0, y: y + 15 }, r.label));
    svg.append(el("rect", { x: left, y, width: Math.max(bw, 1), height: rowH - 6, fill: r.color || typeColors[0] }));
    svg.append(el("text", { x: left + bw + 6, y: y + 15, "data-bar": r.label }, String(r.value)));
  });
  return svg;
}

// stackedTimeline draws, per bucket, a bar stacked by action type.
// buckets: [{label, counts: {type: n}}], oldest first.
export function stackedTimeline(title, buckets) {
  const w = 640, h = 220, bottom = 24, top = 8, left = 36;
  const totals = buckets.map((b) => actionTypes.reduce((s, t) => s + (b.counts[t] || 0), 0));
  const max = Math.max(1, ...totals);
  const bw = (w - left) / Math.max(1, buckets.length);
  const svg = el("svg", { viewBox: `0 0 ${w} ${h}`, width: "100%", role: "img", "aria-label": title });
  svg.append(el("title", {}, title));
  svg.append(el("text", { x: 0, y: top + 10 }, String(max)));
  svg.append(el("line", { x1: left, y1: h - bottom, x2: w, y2: h - bottom, stroke: "#6e7781" }));
  buckets.forEach((b, i) => {
    let y = h - bottom;
    const x = left + i * bw;
    for (const [ti, t] of actionTypes.entries()) {
      const n = b.counts[t] || 0;
      if (!n) continue;
      const bh = ((h - bottom - top) * n) / max;
      y -= bh;
      const r = el("rect", { x: x + 2, y, width: Math.max(bw - 4, 1), height: bh, fill: typeColors[ti] });
      r.append(el("title", {}, `${b.label}: ${n} ${t}`));
      svg.append(r);
    }
    if (buckets.length <= 16 || i % Math.ceil(buckets.length / 8) === 0) {
      svg.append(el("text", { x: x + 2, y: h - 6 }, b.label));
    }
  });
  return svg;
}

// legend names the colours of the action types.
export function legend() {
  return el("p", { class: "legend" }, actionTypes.map((t, i) => el("span", {},
    el("svg", { width: 10, height: 10, "aria-hidden": "true" }, el("rect", { width: 10, height: 10, fill: typeColors[i] })), " " + t)));
}
