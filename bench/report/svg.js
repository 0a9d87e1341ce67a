#!/usr/bin/env node
// bench/compare's pictures, as hand-written SVG (no dependencies):
//
//   svg.js DIR
//
// From DIR/timeline.jsonl (test/stress/bin/timeline --json: the budgets
// guide's examples, 10x faster, dispatch and completion times recorded by the
// server): timeline-while_in_flight.svg, timeline-time_based.svg and
// timeline-time_based_burst1.svg, the cumulative dispatches over time against
// the ideal (and for while_in_flight the jobs in flight against the limit).
// From DIR/summary.jsonl (aggregate.js report): compare.svg, one bar chart per
// scenario, zizq vs graphile-worker vs pg-boss (median, min-max whiskers).
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { ROWS, fmt } = require("./rows.js");

const COLORS = { zizq: "#1f6fb2", "graphile-worker": "#e07b24", "pg-boss": "#3a9a4b", "pg-boss singleton": "#98d1a0" };
// Under each bar: the system, and the variant where the row has several.
const SHORT = { zizq: "zizq", "graphile-worker": "graphile", "pg-boss": "pg-boss" };
const VARIANT = { limited: { "graphile-worker": "queues", "pg-boss": "group" } };
const IDEAL = "#888";
const LIMIT = "#c0392b";
const FONT = `font-family="DejaVu Sans, Helvetica, Arial, sans-serif"`;

const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const r2 = (x) => Math.round(x * 100) / 100;

function text(x, y, s, attrs = "") {
  return `<text x="${r2(x)}" y="${r2(y)}" ${attrs}>${esc(s)}</text>`;
}

// Round tick steps (1, 2, 5 x 10^k; 2.5 too unless `integer`) from 0 to the
// first tick at or above `max`, about `count` of them.
function ticks(max, count = 5, integer = false) {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const mults = integer ? [1, 2, 5, 10] : [1, 2, 2.5, 5, 10];
  let step = mults.map((m) => m * mag).find((s) => s >= raw);
  if (integer) step = Math.max(1, Math.round(step));
  const out = [];
  for (let v = 0; ; v += step) {
    out.push(Number(v.toPrecision(12)));
    if (v >= max - step * 1e-9) break;
  }
  return out;
}

// Tick labels: 0, 2.5, 500, 5k, 12.5k, 1.5M.
function tickFmt(v) {
  const trim = (x) => String(Number(x.toPrecision(3)));
  if (v === 0) return "0";
  if (Math.abs(v) >= 1e6) return trim(v / 1e6) + "M";
  if (Math.abs(v) >= 1e3) return trim(v / 1e3) + "k";
  return trim(v);
}

function svgDoc(width, height, body) {
  return `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ${FONT} font-size="12">
<rect width="100%" height="100%" fill="#fff"/>
${body.join("\n")}
</svg>
`;
}

// A plot area with axes: x and y ranges from 0, tick labels, axis titles.
function axes({ left, top, width, height, xmax, ymax, xlabel, ylabel, xticks, yticks, xfmt = (v) => v, yfmt = (v) => v }) {
  const X = (v) => left + (v / xmax) * width;
  const Y = (v) => top + height - (v / ymax) * height;
  const out = [];
  for (const v of yticks) {
    out.push(`<line x1="${left}" x2="${left + width}" y1="${r2(Y(v))}" y2="${r2(Y(v))}" stroke="#e5e5e5"/>`);
    out.push(text(left - 6, Y(v) + 4, yfmt(v), `text-anchor="end" fill="#444"`));
  }
  for (const v of xticks) {
    out.push(`<line x1="${r2(X(v))}" x2="${r2(X(v))}" y1="${top + height}" y2="${top + height + 4}" stroke="#444"/>`);
    out.push(text(X(v), top + height + 17, xfmt(v), `text-anchor="middle" fill="#444"`));
  }
  out.push(`<path d="M${left},${top} V${top + height} H${left + width}" fill="none" stroke="#444"/>`);
  if (xlabel) out.push(text(left + width / 2, top + height + 34, xlabel, `text-anchor="middle"`));
  if (ylabel)
    out.push(text(0, 0, ylabel, `text-anchor="middle" transform="translate(${left - 42},${top + height / 2}) rotate(-90)"`));
  return { X, Y, svg: out };
}

// A step line through (t, value) changes, from (0, v0) to (tEnd, last).
function stepPath(X, Y, changes, v0, tEnd) {
  let d = `M${r2(X(0))},${r2(Y(v0))}`;
  for (const [t, v] of changes) d += ` H${r2(X(t))} V${r2(Y(v))}`;
  return d + ` H${r2(X(tEnd))}`;
}

function legend(x, y, items) {
  const out = [];
  let cx = x;
  for (const it of items) {
    const sw = it.dash ? `stroke-dasharray="${it.dash}"` : "";
    if (it.box) out.push(`<rect x="${cx}" y="${y - 9}" width="12" height="12" fill="${it.color}"/>`);
    else out.push(`<line x1="${cx}" x2="${cx + 22}" y1="${y - 3}" y2="${y - 3}" stroke="${it.color}" stroke-width="2" ${sw}/>`);
    const w = it.box ? 16 : 26;
    out.push(text(cx + w, y + 1, it.label));
    cx += w + it.label.length * 6.6 + 18;
  }
  return out;
}

// ---- the budgets guide's examples

const EXAMPLES = {
  while_in_flight: {
    title: "while_in_flight 5: 20 jobs of 200 ms, 16 workers",
    note: "the guide's example (jobs of 2 s) 10x faster; times recorded by the server",
  },
  time_based: {
    title: "time_based 6 per 600 ms (burst 6): 12 jobs, 16 workers",
    note: "the guide's 6 per minute 100x faster: the burst of 6, then one every 100 ms",
  },
  time_based_burst1: {
    title: "time_based 6 per 600 ms, burst 1: 8 jobs, 16 workers",
    note: "one every 100 ms from the start; times recorded by the server",
  },
};

function timelineSvg(ex) {
  const meta = EXAMPLES[ex.example] || { title: ex.title, note: "" };
  const b = ex.budget;
  const dispatch = ex.dispatch_s.filter((t) => t !== null).sort((a, c) => a - c);
  const complete = ex.complete_s.filter((t) => t !== null);
  const jobs = ex.jobs;
  const wif = b.kind === "while_in_flight";

  // The ideal cumulative dispatches.
  let idealChanges;
  let idealEnd;
  if (wif) {
    const job = ex.job_ms / 1000;
    idealChanges = [];
    for (let k = 0; k * b.allocation < jobs; k++) idealChanges.push([k * job, Math.min(jobs, (k + 1) * b.allocation)]);
    idealEnd = Math.ceil(jobs / b.allocation) * job;
  } else {
    const interval = b.duration_ms / b.allocation / 1000;
    const burst = b.burst ?? b.allocation;
    idealChanges = [[0, Math.min(jobs, burst)]];
    for (let k = 1; burst + k <= jobs; k++) idealChanges.push([k * interval, burst + k]);
    idealEnd = idealChanges[idealChanges.length - 1][0] + ex.job_ms / 1000;
  }
  const lastSeen = Math.max(idealEnd, ...dispatch, ...complete);
  const xt = ticks(lastSeen * 1.03, 8);
  const xmax = xt[xt.length - 1];
  const W = 720;
  const left = 62, plotW = W - left - 24;
  const panelH = 190;
  const body = [];
  body.push(text(left, 22, meta.title, `font-size="15" font-weight="bold"`));
  body.push(text(left, 40, meta.note, `fill="#555"`));

  // Panel 1: cumulative dispatches.
  let top = 78;
  const yt = ticks(jobs, 6, true);
  const a = axes({
    left, top, width: plotW, height: panelH, xmax, ymax: yt[yt.length - 1], xticks: xt, yticks: yt,
    xlabel: wif ? null : "seconds since the first dispatch", ylabel: "jobs dispatched",
    xfmt: (v) => v.toFixed(1),
  });
  body.push(...a.svg);
  body.push(`<path d="${stepPath(a.X, a.Y, idealChanges, 0, xmax)}" fill="none" stroke="${IDEAL}" stroke-width="2" stroke-dasharray="6 4"/>`);
  body.push(`<path d="${stepPath(a.X, a.Y, dispatch.map((t, i) => [t, i + 1]), 0, xmax)}" fill="none" stroke="${COLORS.zizq}" stroke-width="2"/>`);
  for (let i = 0; i < dispatch.length; i++)
    body.push(`<circle cx="${r2(a.X(dispatch[i]))}" cy="${r2(a.Y(i + 1))}" r="2.6" fill="${COLORS.zizq}"/>`);
  body.push(...legend(left + 12, top - 12, [
    { color: COLORS.zizq, label: "dispatched by zizq (cumulative)" },
    { color: IDEAL, dash: "6 4", label: wif ? "ideal: 5 at a time" : `ideal: burst ${b.burst ?? b.allocation}, then 1 per ${b.duration_ms / b.allocation} ms` },
  ]));
  let height = top + panelH + 48;

  // Panel 2 (while_in_flight): jobs in flight against the limit.
  if (wif) {
    top = top + panelH + 54;
    const events = [];
    for (let i = 0; i < ex.dispatch_s.length; i++) {
      if (ex.dispatch_s[i] !== null) events.push([ex.dispatch_s[i], 1]);
      if (ex.complete_s[i] !== null) events.push([ex.complete_s[i], -1]);
    }
    events.sort((p, q) => p[0] - q[0] || p[1] - q[1]); // an end before a start at the same instant
    let running = 0;
    let peak = 0;
    const changes = events.map(([t, d]) => {
      running += d;
      peak = Math.max(peak, running);
      return [t, running];
    });
    const ymax = b.allocation + 2;
    const b2 = axes({
      left, top, width: plotW, height: panelH * 0.75, xmax, ymax, xticks: xt, yticks: ticks(ymax, ymax > 8 ? 4 : ymax, true),
      xlabel: "seconds since the first dispatch", ylabel: "jobs in flight", xfmt: (v) => v.toFixed(1),
    });
    body.push(...b2.svg);
    const inFlight = stepPath(b2.X, b2.Y, changes, 0, xmax);
    body.push(`<path d="${inFlight} V${r2(b2.Y(0))} H${r2(b2.X(0))} Z" fill="${COLORS.zizq}" fill-opacity="0.15" stroke="none"/>`);
    body.push(`<path d="${inFlight}" fill="none" stroke="${COLORS.zizq}" stroke-width="2"/>`);
    body.push(`<line x1="${left}" x2="${left + plotW}" y1="${r2(b2.Y(b.allocation))}" y2="${r2(b2.Y(b.allocation))}" stroke="${LIMIT}" stroke-width="1.5" stroke-dasharray="6 4"/>`);
    body.push(...legend(left + 12, top - 12, [
      { color: COLORS.zizq, label: `in flight (peak ${peak})` },
      { color: LIMIT, dash: "6 4", label: `limit ${b.allocation}` },
    ]));
    height = top + panelH * 0.75 + 48;
  }
  return svgDoc(W, Math.round(height), body);
}

// ---- the peer comparison

function compareSvg(summary) {
  const results = summary.filter((o) => o.kind === "result");
  // limited_singleton is drawn as a fourth bar of limited.
  const rows = ROWS.filter((row) => row.peers && row.id !== "limited_singleton" &&
    results.some((c) => c.row === row.id && c.system !== "zizq"));
  const singleton = results.find((c) => c.row === "limited_singleton" && c.system === "pg-boss");
  if (!rows.length) return null;
  const systems = ["zizq", "graphile-worker", "pg-boss"].filter((s) => results.some((c) => c.system === s));
  const cols = 3;
  const pw = 250, ph = 210;
  const W = cols * pw + 20;
  const gridTop = 70;
  const H = gridTop + Math.ceil(rows.length / cols) * (ph + 26) + 8;
  const reps = Math.max(...results.filter((c) => rows.some((row) => row.id === c.row)).map((c) => c.reps));
  const body = [];
  body.push(text(20, 24, "zizq vs graphile-worker vs pg-boss, same cluster, same workloads", `font-size="15" font-weight="bold"`));
  body.push(text(20, 42, `median of ${reps} run(s)${reps > 1 ? ", whiskers min-max" : ""}; fsync and synchronous_commit on; ` +
    "max N: highest concurrency observed (red: above the limit)", `fill="#555"`));
  body.push(...legend(20, 62, [...systems, ...(singleton ? ["pg-boss singleton"] : [])].map((s) => ({ color: COLORS[s], label: s, box: true }))));

  rows.forEach((row, k) => {
    const ox = 10 + (k % cols) * pw;
    const oy = gridTop + Math.floor(k / cols) * (ph + 26);
    const cells = systems.map((s) => results.find((c) => c.row === row.id && c.system === s)).filter(Boolean)
      .map((c) => ({ ...c, color: COLORS[c.system], name: SHORT[c.system], variant: (VARIANT[row.id] || {})[c.system] }));
    if (row.id === "limited" && singleton)
      cells.push({ ...singleton, color: COLORS["pg-boss singleton"], name: "pg-boss", variant: "singleton" });
    const left = ox + 52, top = oy + 34, width = pw - 62, height = ph - 70;
    const vmax = Math.max(...cells.map((c) => c.max ?? c.median ?? 0), ...cells.map((c) => c.ideal ?? 0));
    const yt = ticks(vmax * 1.12, 4);
    const ymax = yt[yt.length - 1];
    const ideal = cells.map((c) => c.ideal).find((x) => typeof x === "number");
    const sub = row.better === "lower" ? "lower is better" : row.concurrency && ideal ? `dashed: ideal ${fmt(ideal)} jobs/s` : "";
    body.push(text(ox + 10, oy + 14, row.chart || row.id, `font-weight="bold"`));
    if (sub) body.push(text(ox + 10, oy + 28, sub, `fill="#555" font-size="10.5"`));
    const a = axes({
      left, top, width, height, xmax: 1, ymax, xticks: [], yticks: yt, ylabel: row.unit, yfmt: tickFmt,
    });
    body.push(...a.svg);
    const slot = width / cells.length;
    const bw = Math.min(40, slot * 0.6);
    cells.forEach((c, i) => {
      const cx = left + slot * (i + 0.5);
      if (c.median === null) {
        body.push(text(cx, top + height - 6, "error", `text-anchor="middle" fill="${LIMIT}"`));
        return;
      }
      const y = a.Y(c.median);
      body.push(`<rect x="${r2(cx - bw / 2)}" y="${r2(y)}" width="${r2(bw)}" height="${r2(top + height - y)}" fill="${c.color}"/>`);
      if (c.reps > 1 && c.max > c.min) {
        const y1 = a.Y(c.min), y2 = a.Y(c.max);
        body.push(`<path d="M${r2(cx)},${r2(y1)} V${r2(y2)} M${r2(cx - 5)},${r2(y1)} H${r2(cx + 5)} M${r2(cx - 5)},${r2(y2)} H${r2(cx + 5)}" stroke="#222" fill="none"/>`);
      }
      const labelY = Math.min(y, c.reps > 1 ? a.Y(c.max) : y) - 4;
      body.push(text(cx, labelY, fmt(c.median), `text-anchor="middle" font-size="11" stroke="#fff" stroke-width="3" paint-order="stroke"`));
      let below = top + height + 14;
      const fs = cells.length > 3 ? 9.5 : 10.5;
      body.push(text(cx, below, c.name, `text-anchor="middle" font-size="${fs}" fill="#444"`));
      if (c.variant) body.push(text(cx, (below += 12), c.variant, `text-anchor="middle" font-size="${fs}" fill="#666"`));
      if (c.max_concurrency) {
        const over = c.max_concurrency.max > (c.limit ?? Infinity);
        body.push(text(cx, below + 13, `max ${c.max_concurrency.max}`, `text-anchor="middle" font-size="${fs}" fill="${over ? LIMIT : "#444"}"${over ? ` font-weight="bold"` : ""}`));
      }
    });
    if (row.concurrency && ideal)
      body.push(`<line x1="${left}" x2="${left + width}" y1="${r2(a.Y(ideal))}" y2="${r2(a.Y(ideal))}" stroke="${IDEAL}" stroke-dasharray="5 4"/>`);
  });
  return svgDoc(W, H, body);
}

// ---- main

const dir = process.argv[2];
if (!dir) {
  console.error("usage: svg.js DIR");
  process.exit(2);
}
const readJsonl = (f) =>
  fs.existsSync(f) ? fs.readFileSync(f, "utf8").split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)) : [];
const written = [];
for (const ex of readJsonl(path.join(dir, "timeline.jsonl"))) {
  const name = `timeline-${ex.example}.svg`;
  fs.writeFileSync(path.join(dir, name), timelineSvg(ex));
  written.push(name);
}
const cmp = compareSvg(readJsonl(path.join(dir, "summary.jsonl")));
if (cmp) {
  fs.writeFileSync(path.join(dir, "compare.svg"), cmp);
  written.push("compare.svg");
}
console.log(`pictures: ${written.length ? written.join(", ") : "none"}`);
