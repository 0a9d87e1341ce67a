// Shared helpers for the peer benchmark scripts (graphile.js, pgboss.js).
//
// Contract: every run prints exactly ONE line of JSON to stdout (via emit()),
// everything else goes to stderr (via log()).

import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import pg from "pg";

// Installed version of a dependency (read from node_modules, since some
// packages do not export their package.json).
export function pkgVersion(name) {
  const url = new URL(`./node_modules/${name}/package.json`, import.meta.url);
  return JSON.parse(readFileSync(url, "utf8")).version;
}

// ---------------------------------------------------------------- arguments

// Parses `--key value`, `--key=value` and bare `--flag` (=> true). Keys are
// converted from kebab-case to camelCase (`--job-ms` => jobMs). Values that
// look like numbers become numbers.
export function parseArgs(argv = process.argv.slice(2)) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith("--")) throw new Error(`unexpected argument: ${a}`);
    let key = a.slice(2);
    let val;
    const eq = key.indexOf("=");
    if (eq >= 0) {
      val = key.slice(eq + 1);
      key = key.slice(0, eq);
    } else if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) {
      val = argv[++i];
    } else {
      val = true;
    }
    key = key.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (typeof val === "string" && val !== "" && !Number.isNaN(Number(val))) {
      val = Number(val);
    }
    out[key] = val;
  }
  return out;
}

// Number-valued option with default; rejects garbage early.
export function numOpt(args, key, dflt) {
  const v = args[key];
  if (v === undefined || v === true) return dflt;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new Error(`--${key} must be a number, got ${v}`);
  return n;
}

// Boolean-ish option: 1/0, true/false, on/off, yes/no.
export function boolOpt(args, key, dflt) {
  const v = args[key];
  if (v === undefined) return dflt;
  if (v === true || v === 1) return true;
  if (v === 0) return false;
  const s = String(v).toLowerCase();
  if (["1", "true", "on", "yes"].includes(s)) return true;
  if (["0", "false", "off", "no"].includes(s)) return false;
  throw new Error(`--${key} must be on/off, got ${v}`);
}

// ---------------------------------------------------------------- timing

// Monotonic nanosecond clock, for durations.
export const hr = () => process.hrtime.bigint();
// Seconds elapsed since an hr() reading, as a float.
export const secondsSince = (t0) => Number(hr() - t0) / 1e9;
// Wall-clock milliseconds with microsecond precision. Comparable across
// processes on the same host (used for enqueue -> start latency).
export const wallMs = () => performance.timeOrigin + performance.now();

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A simulated job of `ms` milliseconds, as zizq_bench's run_job: a timer
// to 2 ms before its end (Node's timers fire late, by a millisecond or
// more), then the rest waited out a turn of the event loop at a time, so
// that jobs running together in one process do not hold each other up.
// Resolves with how long the job really took.
export async function runJob(ms) {
  const start = performance.now();
  const end = start + ms;
  if (ms > 2) await sleep(ms - 2);
  while (performance.now() < end) await new Promise((r) => setImmediate(r));
  return performance.now() - start;
}

export const round = (x, digits = 3) => {
  if (x === null || x === undefined || !Number.isFinite(x)) return x ?? null;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
};

// ---------------------------------------------------------------- statistics

// Percentile of an ascending-sorted numeric array, linear interpolation
// between closest ranks (same as numpy's default "linear" method). p in [0,100].
export function percentile(sorted, p) {
  if (!sorted.length) return null;
  if (sorted.length === 1) return sorted[0];
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  if (lo === hi) return sorted[lo];
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

// {count, p50, p90, p99, max, mean} of an (unsorted) array of ms values.
export function latencySummary(values, digits = 3) {
  const s = Float64Array.from(values).sort();
  if (!s.length) return { count: 0, p50: null, p90: null, p99: null, max: null, mean: null };
  let sum = 0;
  for (const v of s) sum += v;
  return {
    count: s.length,
    p50: round(percentile(s, 50), digits),
    p90: round(percentile(s, 90), digits),
    p99: round(percentile(s, 99), digits),
    max: round(s[s.length - 1], digits),
    mean: round(sum / s.length, digits),
  };
}

// Population standard deviation of completions per 1-second bucket, over the
// full seconds between t0 and the last completion (partial last second is
// dropped). `timesMs` are wall-clock ms of job completions, t0Ms the start.
export function perSecondStats(timesMs, t0Ms) {
  if (!timesMs.length) return { buckets: [], sd: null };
  const last = Math.max(...timesMs);
  const full = Math.floor((last - t0Ms) / 1000);
  if (full < 1) return { buckets: [], sd: null };
  const buckets = new Array(full).fill(0);
  for (const t of timesMs) {
    const b = Math.floor((t - t0Ms) / 1000);
    if (b >= 0 && b < full) buckets[b]++;
  }
  const mean = buckets.reduce((a, b) => a + b, 0) / full;
  const sd = Math.sqrt(buckets.reduce((a, b) => a + (b - mean) ** 2, 0) / full);
  return { buckets, sd: round(sd, 2) };
}

// Counts handlers running at once; remembers the maximum.
export class ConcurrencyGauge {
  constructor() {
    this.current = 0;
    this.max = 0;
  }
  enter() {
    this.current++;
    if (this.current > this.max) this.max = this.current;
  }
  leave() {
    this.current--;
  }
}

// ---------------------------------------------------------------- output

let emitted = false;

// Prints the single result line. Later calls are ignored (and logged).
export function emit(obj) {
  if (emitted) {
    log("emit() called twice; ignoring", JSON.stringify(obj));
    return;
  }
  emitted = true;
  process.stdout.write(JSON.stringify(obj) + "\n");
}

export function log(...parts) {
  const s = parts
    .map((p) => (typeof p === "string" ? p : p instanceof Error ? p.stack || String(p) : JSON.stringify(p)))
    .join(" ");
  process.stderr.write(`[${new Date().toISOString()}] ${s}\n`);
}

// Hard timeout: prints an error line and exits 1 if the run is not finished
// after `seconds`. Returns a function that cancels it.
export function installHardTimeout(seconds, base) {
  const t = setTimeout(() => {
    emit({ ...base, error: `hard timeout after ${seconds} s` });
    log(`hard timeout after ${seconds} s, exiting`);
    process.exit(1);
  }, seconds * 1000);
  return () => clearTimeout(t);
}

// Wraps main(): on success prints `result`, on failure prints an error line
// and exits 1. After a successful run, the process should exit by itself once
// pools are closed; if something keeps the event loop alive we force it.
export async function runMain(base, main, { timeoutSeconds = 300 } = {}) {
  const cancel = installHardTimeout(timeoutSeconds, base);
  let code = 0;
  try {
    const result = await main();
    emit({ ...base, ...result });
  } catch (err) {
    log("run failed:", err);
    emit({ ...base, error: String(err && err.message ? err.message : err) });
    code = 1;
  }
  cancel();
  process.exitCode = code;
  // Grace period for sockets/timers to close; then force exit.
  setTimeout(() => {
    log("event loop still busy 5 s after finishing; forcing exit");
    process.exit(code);
  }, 5000).unref();
}

// ---------------------------------------------------------------- database

export async function withClient(connectionString, fn) {
  const c = new pg.Client({ connectionString, application_name: "peers-bench-admin" });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

// Drops the peer's schema so every run starts from a clean state.
export async function dropSchema(connectionString, schema) {
  await withClient(connectionString, async (c) => {
    await c.query("SET client_min_messages = warning");
    await c.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`);
  });
}

// VACUUM ANALYZE every table of a schema (used, optionally, after the
// untimed pre-enqueue so the timed part runs with fresh planner statistics).
export async function analyzeSchema(connectionString, schema) {
  await withClient(connectionString, async (c) => {
    const r = await c.query(
      `SELECT format('%I.%I', schemaname, relname) AS t FROM pg_stat_user_tables WHERE schemaname = $1`,
      [schema]);
    for (const { t } of r.rows) await c.query(`VACUUM ANALYZE ${t}`);
  });
}

// A reader that keeps one snapshot open (a long report, a forgotten
// transaction): no row version that dies after it began can be removed, by
// VACUUM or by pruning, until it ends (the steady scenario's
// --hold-snapshot; zizq_bench.cpp has the same). release() reports how many
// transaction ids were assigned meanwhile and ends the holder's transaction.
export async function holdSnapshot(connectionString) {
  const holder = new pg.Client({ connectionString, application_name: "peers-bench-snapshot" });
  await holder.connect();
  await holder.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
  await holder.query("SELECT 1"); // takes the snapshot
  return {
    async release() {
      const age = await withClient(connectionString, async (c) =>
        (await c.query("SELECT age(backend_xmin)::int AS age FROM pg_stat_activity WHERE pid = $1",
          [holder.processID])).rows[0].age);
      await holder.query("COMMIT");
      await holder.end();
      return age;
    },
  };
}

export async function serverVersion(connectionString) {
  return withClient(connectionString, async (c) => {
    const r = await c.query("SHOW server_version");
    return r.rows[0].server_version;
  });
}

// Polls `isEmpty(client)` with a dedicated connection until it returns true.
// To keep the probe from competing with the workload, the DB is only queried
// every `intervalMs` once `readyToCheck()` says the in-process count has been
// reached, and otherwise every `fallbackMs` as a safety net. Resolves with the
// hr() time at which the empty result came back.
export async function waitUntilEmpty(connectionString, isEmpty, {
  intervalMs = 10,
  fallbackMs = 250,
  readyToCheck = () => true,
  deadlineMs = Infinity,
} = {}) {
  const c = new pg.Client({ connectionString, application_name: "peers-bench-probe" });
  await c.connect();
  try {
    let lastQuery = 0;
    const start = Date.now();
    for (;;) {
      const now = Date.now();
      if (readyToCheck() || now - lastQuery >= fallbackMs) {
        lastQuery = now;
        if (await isEmpty(c)) return hr();
      }
      if (now - start > deadlineMs) throw new Error("queue did not empty before deadline");
      await sleep(intervalMs);
    }
  } finally {
    await c.end();
  }
}

// Runs `producers` concurrent loops calling `once(i)` with a shared counter
// until `total` calls were made. Returns nothing; time it outside.
export async function produceCount(producers, total, once) {
  let next = 0;
  const loop = async () => {
    for (;;) {
      const i = next++;
      if (i >= total) return;
      await once(i);
    }
  };
  await Promise.all(Array.from({ length: producers }, loop));
}

// Runs `producers` concurrent loops calling `once(i)` until `shouldStop()`.
// Returns the number of calls that completed.
export async function produceUntil(producers, shouldStop, once) {
  let next = 0;
  let done = 0;
  const loop = async () => {
    while (!shouldStop()) {
      const i = next++;
      await once(i);
      done++;
    }
  };
  await Promise.all(Array.from({ length: producers }, loop));
  return done;
}

// Splits [0, n) into chunks of `size`; calls fn(startIndex, count) sequentially.
export async function inChunks(n, size, fn) {
  for (let s = 0; s < n; s += size) {
    await fn(s, Math.min(size, n - s));
  }
}
