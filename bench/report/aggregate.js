#!/usr/bin/env node
// bench/compare's bookkeeping and report (no dependencies):
//
//   aggregate.js settings SETTINGS.json      print the machine and server settings
//   aggregate.js record RAW.jsonl RUNNER LABEL REP EXIT WALL_S PROGRESS COMMAND LINE
//                                            append one run to RAW.jsonl, print a progress line
//   aggregate.js report DIR                  DIR/raw.jsonl -> DIR/summary.jsonl and DIR/table.txt
//                                            (settings, table, targets, ratio lines)
//
// Each row's number per system is the median over its successful runs, shown
// with the min-max. Ratios are zizq/peer for throughputs and peer/zizq for
// latencies, so that higher is better for zizq either way.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { SYSTEMS, RUNNER_SYSTEM, ROWS, labelOf, median, fmt, num } = require("./rows.js");

const pad = (s, n) => s + " ".repeat(Math.max(0, n - s.length));
const lpad = (s, n) => " ".repeat(Math.max(0, n - s.length)) + s;

function readJsonl(file) {
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim().startsWith("{")).map((l) => JSON.parse(l));
}

// ---- settings

function settingsText(s) {
  return [
    `machine   ${s.cpus} CPUs (${s.cpu_model}), ${s.memory} RAM, ${s.kernel}, ${s.os}; data on ${s.filesystem}` +
      (s.damon ? `; DAMON ${s.damon}` : ""),
    `server    PostgreSQL ${s.pg_version}: fsync ${s.fsync}, synchronous_commit ${s.synchronous_commit}, ` +
      `full_page_writes ${s.full_page_writes}, wal_level ${s.wal_level}, shared_buffers ${s.shared_buffers}, ` +
      `max_connections ${s.max_connections}, max_wal_size ${s.max_wal_size}, checkpoint_timeout ${s.checkpoint_timeout}, ` +
      `work_mem ${s.work_mem}, huge_pages ${s.huge_pages ?? "-"}`,
    `versions  zizq ${s.zizq_version} (commit ${s.zizq_commit}, zizq.so ${s.zizq_so}), ` +
      `graphile-worker ${s.graphile_worker}, pg-boss ${s.pg_boss}, node ${s.node}`,
    `run       ${s.mode}, ${s.date}`,
  ].join("\n");
}

// ---- one run

function record([raw, runner, label, rep, exit, wall, progress, command, line]) {
  const system = RUNNER_SYSTEM[runner] || runner;
  let r;
  try {
    const last = (line || "").split("\n").filter((l) => l.trim().startsWith("{")).pop();
    r = JSON.parse(last);
  } catch {
    r = { error: `no JSON line on stdout (exit ${exit})` };
  }
  if (Number(exit) !== 0 && !r.error) r.error = `exit ${exit}`;
  const rec = { ...r, system, label, rep: Number(rep), exit_code: Number(exit), wall_s: Number(wall), command };
  // The VM's CPU steal during the run, in % of its CPU time (bench/compare).
  if (process.env.STEAL_PCT) rec.cpu_steal_pct = Number(process.env.STEAL_PCT);
  if (r.system && r.system !== system) rec.system_version = r.system;
  fs.appendFileSync(raw, JSON.stringify(rec) + "\n");

  let what;
  if (rec.error) {
    what = `ERROR ${rec.error}`;
  } else {
    const rows = ROWS.filter((row) => labelOf(row, system) === label && (system === "zizq" || (row.peers || []).includes(system)));
    what = [...new Set(rows.map((row) => `${fmt(row.metric(rec))} ${row.unit}`))].join(", ");
    if (rec.max_concurrency !== undefined) what += `, max concurrency ${rec.max_concurrency}`;
  }
  const steal = rec.cpu_steal_pct === undefined ? "" : `, CPU steal ${rec.cpu_steal_pct}%`;
  console.log(`[${lpad(progress, 7)}] ${pad(system, 15)} ${pad(label, 19)} rep ${rep}  ${what}  (${Number(wall).toFixed(1)} s${steal})`);
}

// ---- the report

function stats(xs) {
  return xs.length ? { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) } : null;
}

function summarize(runs) {
  const cells = [];
  for (const row of ROWS) {
    for (const system of SYSTEMS) {
      if (system !== "zizq" && !(row.peers || []).includes(system)) continue;
      const label = labelOf(row, system);
      const mine = runs.filter((r) => r.system === system && r.label === label);
      if (!mine.length) continue;
      const ok = mine.filter((r) => !r.error && row.metric(r) !== null);
      const values = ok.map((r) => row.metric(r));
      const cell = {
        kind: "result", row: row.id, title: row.title, system, unit: row.unit, better: row.better,
        ...(stats(values) || { median: null, min: null, max: null }),
        reps: ok.length, errors: mine.length - ok.length, values,
        config: (ok[0] || mine[0]).config || null,
      };
      if (row.concurrency) {
        const conc = ok.map((r) => r.max_concurrency).filter((x) => typeof x === "number");
        cell.max_concurrency = stats(conc);
        cell.max_concurrency_values = conc;
        const ideal = ok.map((r) => r.ideal ?? r.ideal_jobs_per_s).find((x) => typeof x === "number");
        if (ideal !== undefined) cell.ideal = ideal;
        cell.limit = 5;
        const lim = ok.map((r) => r.limit).find((x) => typeof x === "number");
        if (lim !== undefined) cell.limit = lim;
      }
      if (row.id === "rate") {
        const target = ok.map((r) => r.target).find((x) => typeof x === "number");
        if (target !== undefined) cell.target = target;
      }
      cells.push(cell);
    }
  }
  // A row that borrows zizq's runs of another row (limited_singleton) only
  // shows when its peer ran.
  return cells.filter((c) => c.system !== "zizq" || typeof ROWS.find((r) => r.id === c.row).label !== "object" ||
    cells.some((o) => o.row === c.row && o.system !== "zizq"));
}

function cellText(c) {
  if (!c) return "";
  if (c.median === null) return c.errors ? "error" : "-";
  let s = fmt(c.median);
  if (c.reps > 1) s += ` (${fmt(c.min)}-${fmt(c.max)})`;
  if (c.max_concurrency) {
    const m = c.max_concurrency;
    s += ` c${m.min === m.max ? m.max : `${m.min}-${m.max}`}`;
  }
  if (c.target) s += ` of ${fmt(c.target)}`;
  if (c.errors) s += ` +${c.errors} err`;
  return s;
}

// Ratio, higher is better for zizq.
function ratioOf(row, z, p) {
  if (!z || !p || !z.median || !p.median) return null;
  return row.better === "lower" ? p.median / z.median : z.median / p.median;
}

function report(dir) {
  const runs = readJsonl(path.join(dir, "raw.jsonl"));
  const cells = summarize(runs);
  const cell = (row, system) => cells.find((c) => c.row === row && c.system === system);
  const lines = [];
  const out = [...cells];

  // The table.
  const present = SYSTEMS.filter((s) => cells.some((c) => c.system === s));
  const rows = ROWS.filter((row) => cells.some((c) => c.row === row.id));
  const texts = rows.map((row) => present.map((s) => cellText(cell(row.id, s))));
  const w0 = Math.max(8, ...rows.map((r) => r.id.length));
  const w1 = Math.max(5, ...rows.map((r) => r.title.length));
  const widths = present.map((s, i) => Math.max(s.length, ...texts.map((t) => t[i].length)));
  // Repetitions of the plan (drain_ref runs several times in each).
  const reps = Math.max(0, ...runs.map((r) => r.rep || 0));
  lines.push(`== results: median${reps > 1 ? " (min-max)" : ""} of ${reps} run(s); cN = highest concurrency observed`);
  lines.push([pad("scenario", w0), pad("workload", w1), pad("unit", 6), ...present.map((s, i) => pad(s, widths[i]))].join("  ").trimEnd());
  rows.forEach((row, k) => {
    const unit = row.unit + (row.better === "lower" ? " v" : "");
    lines.push([pad(row.id, w0), pad(row.title, w1), pad(unit, 6), ...texts[k].map((t, i) => pad(t, widths[i]))].join("  ").trimEnd());
  });
  lines.push("(ms v: lower is better; everything else: higher is better)");

  // Errors.
  const errors = runs.filter((r) => r.error);
  if (errors.length) {
    lines.push("", "== errors");
    for (const r of errors) lines.push(`${r.system} ${r.label} rep ${r.rep}: ${String(r.error).slice(0, 300)}`);
  }

  // The VM's CPU steal during each scenario's runs (median and max over
  // its runs, every system's), when bench/compare recorded it.
  const stolen = rows.map((row) => {
    const xs = runs.filter((r) => ROWS.some((x) => x.id === row.id && labelOf(x, r.system) === r.label) &&
      typeof r.cpu_steal_pct === "number").map((r) => r.cpu_steal_pct);
    return xs.length ? `${pad(row.id, w0)}  ${fmt(median(xs))} (max ${fmt(Math.max(...xs))})` : null;
  }).filter(Boolean);
  if (stolen.length) lines.push("", "== CPU steal during the runs, % of the VM's CPU time: median (max)", ...stolen);

  // Targets.
  lines.push("", "== targets");
  const bestPeer = (rowId) => {
    const row = ROWS.find((r) => r.id === rowId);
    const ps = (row.peers || []).map((p) => cell(rowId, p)).filter((c) => c && c.median !== null);
    if (!ps.length) return null;
    return ps.reduce((a, b) => ((row.better === "lower" ? b.median < a.median : b.median > a.median) ? b : a));
  };
  const target = (id, goal, test) => {
    const t = test();
    out.push({ kind: "target", target: id, goal, met: t.met, detail: t.detail });
    const verdict = t.met === null ? "n/a" : t.met ? "met" : "MISSED";
    lines.push(`${pad(id, 19)} ${pad(goal, 42)} ${pad(verdict, 7)} ${t.detail}`);
  };
  for (const id of ["drain", "steady"]) {
    target(id, "zizq >= 2x best peer", () => {
      const z = cell(id, "zizq");
      const b = bestPeer(id);
      if (!z || z.median === null || !b) return { met: null, detail: "no data" };
      const x = z.median / b.median;
      return { met: x >= 2, detail: `zizq ${fmt(z.median)} / ${b.system} ${fmt(b.median)} = ${x.toFixed(2)}x` };
    });
  }
  target("steady_latency_p50", "zizq p50 <= 1/2 best peer's", () => {
    const z = cell("steady_latency_p50", "zizq");
    const b = bestPeer("steady_latency_p50");
    if (!z || z.median === null || !b) return { met: null, detail: "no data" };
    return {
      met: z.median <= b.median / 2,
      detail: `zizq ${fmt(z.median)} ms, ${b.system} ${fmt(b.median)} ms (${(b.median / z.median).toFixed(2)}x)`,
    };
  });
  target("limited", "zizq >= 98% of ideal, concurrency == limit", () => {
    const z = cell("limited", "zizq");
    if (!z || z.median === null || !z.ideal) return { met: null, detail: "no data" };
    const share = z.median / z.ideal;
    const conc = z.max_concurrency_values;
    const exact = conc.length === z.reps && conc.every((c) => c === z.limit);
    return {
      met: share >= 0.98 && exact,
      detail: `${(share * 100).toFixed(1)}% of ideal ${fmt(z.ideal)} jobs/s, ` +
        `highest concurrency ${conc.join(",")} for limit ${z.limit}`,
    };
  });

  // The issues' own targets for zizq (#2 foundation, #3 budgets).
  const zmed = (id) => {
    const c = cell(id, "zizq");
    return c && c.median !== null ? c.median : null;
  };
  const atLeast = (id, goal, floor) =>
    target(id, `>= ${fmt(floor)} ${goal}`, () => {
      const v = zmed(id);
      return v === null ? { met: null, detail: "no data" } : { met: v >= floor, detail: `${fmt(v)}` };
    });
  const shareOf = (id, base, goal, share) =>
    target(id, goal, () => {
      const v = zmed(id), b = zmed(base);
      if (v === null || b === null) return { met: null, detail: "no data" };
      return { met: v >= share * b, detail: `${fmt(v)} / ${base} ${fmt(b)} = ${((100 * v) / b).toFixed(0)}%` };
    });
  // zizq's runs of `id` against the run of `refLabel` just before each in
  // the same repetition (bench/compare pairs them): the ratios, in order.
  const pairedRatios = (id, refLabel) => {
    const ratios = [];
    const lastRef = new Map(); // rep -> value of the latest reference run
    for (const r of runs) {
      if (r.system !== "zizq" || r.error) continue;
      if (r.label === refLabel) lastRef.set(r.rep, num(r.value));
      else if (r.label === id && lastRef.get(r.rep) && num(r.value) !== null) {
        ratios.push(num(r.value) / lastRef.get(r.rep));
        lastRef.delete(r.rep);
      }
    }
    return ratios;
  };
  const percents = (xs) => xs.map((x) => (100 * x).toFixed(0) + "%").join(", ");
  // An absolute target, with the plain-SQL queue's figure of the same runs
  // beside it: what this machine gives any queue at the time.
  const atLeastBesideFloor = (id, goal, floor) =>
    target(id, `>= ${fmt(floor)} ${goal}`, () => {
      const v = zmed(id);
      if (v === null) return { met: null, detail: "no data" };
      const base = zmed(`${id}_bare`);
      const ratios = pairedRatios(id, `${id}_bare`);
      const beside = base === null || !ratios.length ? "" :
        `; plain-SQL queue ${fmt(base)}, zizq ${(100 * median(ratios)).toFixed(0)}% of it paired (${percents(ratios)})`;
      return { met: v >= floor, detail: `${fmt(v)}${beside}` };
    });
  atLeast("drain", "jobs/s (#2)", 30000);
  atLeastBesideFloor("roundtrip", "jobs/s (#2)", 5000);
  atLeastBesideFloor("enqueue_single", "jobs/s (#2)", 5000);
  atLeast("enqueue_batch", "jobs/s (#2)", 80000);
  target("latency", "p50 <= 2 ms, p99 <= 10 ms (#2)", () => {
    // Judged from the enqueue's call (an upper bound: the commit lies between
    // the call and the return); the time from the return is a lower bound.
    const runsOf = runs.filter((r) => r.system === "zizq" && r.label === "latency" && !r.error && r.latency_from_call_ms);
    if (!runsOf.length) return { met: null, detail: "no data" };
    const p50s = runsOf.map((r) => r.latency_from_call_ms.p50), p99s = runsOf.map((r) => r.latency_from_call_ms.p99);
    const m50 = median(p50s), m99 = median(p99s);
    return { met: m50 <= 2 && m99 <= 10, detail: `p50 ${fmt(m50)} ms, p99 ${fmt(m99)} ms (from the enqueue's call)` };
  });
  // Each run of these against the drain_ref run just before it (bench/compare
  // pairs them); the median of those ratios is the verdict. The ratio of the
  // medians against the drain row is shown beside it. Results without
  // drain_ref runs (older ones) are judged against the drain row.
  const pairedShareOf = (id, goal, share) => {
    const ratios = pairedRatios(id, "drain_ref");
    if (!ratios.length) return shareOf(id, "drain", goal, share);
    target(id, goal, () => {
      const m = median(ratios), v = zmed(id), d = zmed("drain");
      const apart = v !== null && d !== null ? `; ${fmt(v)} / drain ${fmt(d)} = ${((100 * v) / d).toFixed(0)}%` : "";
      return {
        met: m >= share,
        detail: `${(100 * m).toFixed(0)}% paired (${percents(ratios)})${apart}`,
      };
    });
  };
  pairedShareOf("retained", "within 10% of drain (#2)", 0.9);
  pairedShareOf("drain_wif", ">= 80% of drain (#3)", 0.8);
  pairedShareOf("drain_tb", ">= 80% of drain (#3)", 0.8);
  pairedShareOf("parked", "within 10% of drain (#3)", 0.9);
  shareOf("drain_many", "drain_wif", ">= 50% of one budget (#3)", 0.5);
  target("rate", "within 1% of the budget's rate (#3)", () => {
    const c = cell("rate", "zizq");
    if (!c || c.median === null || !c.target) return { met: null, detail: "no data" };
    const err = (100 * (c.median - c.target)) / c.target;
    return { met: Math.abs(err) <= 1, detail: `${fmt(c.median)} of ${fmt(c.target)} jobs/s (${err.toFixed(2)}%)` };
  });
  target("refill", "p99 <= 5 ms (#3)", () => {
    const v = zmed("refill");
    if (v === null) return { met: null, detail: "no data" };
    // The machine's wake-up delay in the same runs (a bare 20 ms sleep of the
    // client), for judging the tail; results from before it have none.
    const slept = runs.filter((r) => r.system === "zizq" && r.label === "refill" && !r.error && r.sleep_oversleep_ms)
      .map((r) => r.sleep_oversleep_ms.p99).filter((x) => typeof x === "number");
    const machine = slept.length ? `; a bare 20 ms sleep meanwhile: p99 ${fmt(median(slept))} ms late` : "";
    return { met: v <= 5, detail: `${fmt(v)} ms${machine}` };
  });

  // What a held snapshot costs each system, against its own steady run.
  const held = SYSTEMS.map((s) => [s, cell("steady", s), cell("steady_held", s)]).filter(([, a, b]) => a && b);
  if (held.length) {
    lines.push("", "== a snapshot held (steady_held against the same system's steady)");
    const p99Of = (system, label) => {
      const xs = runs.filter((r) => r.system === system && r.label === label && !r.error && r.latency_ms)
        .map((r) => r.latency_ms.p99).filter((x) => typeof x === "number");
      return xs.length ? median(xs) : null;
    };
    for (const [s, a, b] of held) {
      const share = a.median && b.median !== null ? `${((100 * b.median) / a.median).toFixed(0)}% of its throughput` : "n/a";
      lines.push(`${pad(s, 16)} ${share}, enqueue -> start p99 ${fmt(p99Of(s, "steady"))} -> ${fmt(p99Of(s, "steady_held"))} ms`);
    }
  }

  // Ratios: one per row with peers, per peer.
  lines.push("", "== ratios (higher is better for zizq; latencies: peer / zizq)");
  for (const row of ROWS) {
    for (const peer of row.peers || []) {
      const z = cell(row.id, "zizq");
      const p = cell(row.id, peer);
      if (!z || !p) continue;
      const x = ratioOf(row, z, p);
      let note = "";
      if (row.concurrency && p.max_concurrency && p.max_concurrency.max > p.limit)
        note = `  (${peer} exceeded the limit: concurrency up to ${p.max_concurrency.max} for a limit of ${p.limit})`;
      out.push({ kind: "ratio", scenario: row.id, peer, ratio: x, zizq: z.median, peer_value: p.median, unit: row.unit, note: note.trim() || undefined });
      lines.push(`ratio ${row.id} zizq/${peer} = ${x === null ? "n/a" : x.toFixed(2)}${note}`);
    }
  }

  fs.writeFileSync(path.join(dir, "summary.jsonl"), out.map((o) => JSON.stringify(o)).join("\n") + "\n");
  let settings = "";
  const sf = path.join(dir, "settings.json");
  if (fs.existsSync(sf)) settings = "== settings\n" + settingsText(JSON.parse(fs.readFileSync(sf, "utf8"))) + "\n\n";
  fs.writeFileSync(path.join(dir, "table.txt"), settings + lines.join("\n") + "\n");
}

// ---- main

const [cmd, ...rest] = process.argv.slice(2);
if (cmd === "settings") {
  console.log("== settings\n" + settingsText(JSON.parse(fs.readFileSync(rest[0], "utf8"))));
} else if (cmd === "record") {
  record(rest);
} else if (cmd === "report") {
  report(rest[0]);
} else {
  console.error("usage: aggregate.js settings FILE | record ... | report DIR");
  process.exit(2);
}
