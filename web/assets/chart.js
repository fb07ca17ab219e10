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
    svg.append(el("rect", { x: left, y, width: Math.max(bw, 1), height: rowH - 8, fill: r.color || typeColors[0], rx: 2 }));
    svg.append(el("text", { x: left + bw + 6, y: y + 17, "data-bar": r.label, "data-value": r.value }, num(r.value)));
  });
  return svg;
}

// stackedTimeline draws, per bucket, a bar stacked by action type, w user
// units wide (the width it is shown at, so its text stays readable).
// buckets: [{label, counts: {type: n}, total}], oldest first.
export function stackedTimeline(title, buckets, w = 640) {
  const h = 240, bottom = 28, top = 12, left = 48;
  const totals = buckets.map((b) => b.total ?? actionTypes.reduce((s, t) => s + (b.counts[t] || 0), 0));
  const max = Math.max(1, ...totals);
  const bw = (w - left) / Math.max(1, buckets.length);
  const svg = el("svg", { viewBox: `0 0 ${w} ${h}`, width: "100%", role: "img", "aria-label": title, class: "timeline" });
  svg.append(el("title", {}, title));
  svg.append(el("text", { x: left - 6, y: top + 8, "text-anchor": "end" }, num(max)));
  svg.append(el("text", { x: left - 6, y: h - bottom, "text-anchor": "end" }, "0"));
  svg.append(el("line", { x1: left, y1: top, x2: w, y2: top, stroke: "#d0d7de" }));
  svg.append(el("line", { x1: left, y1: h - bottom, x2: w, y2: h - bottom, stroke: "#6e7781" }));
  const every = Math.ceil(buckets.length / Math.max(2, Math.floor((w - left) / 90)));
  buckets.forEach((b, i) => {
    let y = h - bottom;
    const x = left + i * bw;
    for (const [ti, t] of actionTypes.entries()) {
      const n = b.counts[t] || 0;
      if (!n) continue;
      const bh = ((h - bottom - top) * n) / max;
      y -= bh;
      const r = el("rect", { x: x + (bw > 4 ? 1 : 0), y, width: Math.max(bw - (bw > 4 ? 2 : 0), 0.5), height: bh, fill: typeColors[ti] });
      r.append(el("title", {}, `${b.label}: ${num(n)} ${t}`));
      svg.append(r);
    }
    if (i % every === 0) svg.append(el("text", { x: x + 1, y: h - 8 }, b.label));
  });
  return svg;
}

// legend names the colours of the action types.
export function legend() {
  return el("p", { class: "legend" }, actionTypes.map((t, i) => el("span", {},
    el("svg", { width: 10, height: 10, "aria-hidden": "true" }, el("rect", { width: 10, height: 10, fill: typeColors[i] })), " " + t)));
}
