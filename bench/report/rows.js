// The rows of the comparison: which runs (by label, the row name bench/compare
// gives each run) feed a row, and which number of a run's JSON line is the
// row's metric. Shared by aggregate.js and svg.js.
"use strict";

const PEERS = ["graphile-worker", "pg-boss"];
const SYSTEMS = ["zizq", ...PEERS];
const RUNNER_SYSTEM = { zizq: "zizq", graphile: "graphile-worker", pgboss: "pg-boss" };

const num = (x) => (typeof x === "number" && Number.isFinite(x) ? x : null);
const jobsPerS = (r) => num(r.system === "zizq" ? r.value : r.jobs_per_s);
// The peers' drain clock starts with their runner (start-up included); from
// the first job on is the comparable number (bench/peers/README.md).
const drainRate = (r) => num(r.system === "zizq" ? r.value : r.jobs_per_s_from_first_job);
const p50 = (r) => num(r.latency_ms && r.latency_ms.p50);
const p99 = (r) => num(r.latency_ms && r.latency_ms.p99);
const zizqValue = (r) => num(r.value);
// From the enqueue's call (an upper bound; runs before 0561e6c had the time
// from the return as their value).
const fromCallP50 = (r) => num(r.latency_from_call_ms && r.latency_from_call_ms.p50);

// id: the row (and the scenario name in the ratio lines); label: the runs it
// reads, per system when they differ; peers: the systems compared with zizq.
const ROWS = [
  { id: "enqueue_single", chart: "enqueue, one job per call", title: "enqueue, 1 job per call, 16 producers", unit: "jobs/s", better: "higher",
    metric: jobsPerS, peers: PEERS },
  { id: "enqueue_batch", chart: "enqueue, batches of 1000", title: "enqueue, batches of 1000, 1 producer", unit: "jobs/s", better: "higher",
    metric: jobsPerS, peers: PEERS },
  { id: "drain", chart: "drain (no-op jobs)", title: "drain 20000 no-op jobs, 16 workers", unit: "jobs/s", better: "higher",
    metric: drainRate, peers: PEERS },
  { id: "steady", chart: "steady: throughput", title: "steady: 4 producers + 16 workers", unit: "jobs/s", better: "higher",
    metric: jobsPerS, peers: PEERS },
  { id: "steady_latency_p50", label: "steady", chart: "steady: latency p50", title: "steady: enqueue -> start, p50", unit: "ms",
    better: "lower", metric: p50, peers: PEERS },
  // steady while another session holds one snapshot open (--hold-snapshot):
  // dead rows and index entries pile up, as under a long report.
  { id: "steady_held", chart: "steady, a snapshot held", title: "steady, a snapshot held through the window", unit: "jobs/s",
    better: "higher", metric: jobsPerS, peers: PEERS },
  { id: "steady_held_latency_p99", label: "steady_held", chart: "steady, snapshot held: p99",
    title: "steady, a snapshot held: enqueue -> start, p99", unit: "ms", better: "lower", metric: p99, peers: PEERS },
  { id: "limited", chart: "limited to 5 at a time", title: "limited: concurrency 5, jobs of 50 ms", unit: "jobs/s", better: "higher",
    metric: jobsPerS, peers: PEERS, concurrency: true },
  { id: "limited_singleton", label: { zizq: "limited", "pg-boss": "limited_singleton" },
    chart: "limited, pg-boss singleton",
    title: "limited, pg-boss policy singleton", unit: "jobs/s", better: "higher", metric: jobsPerS,
    peers: ["pg-boss"], concurrency: true },
  // zizq only
  { id: "latency", title: "enqueue call -> blocked worker, p50", unit: "ms", better: "lower", metric: fromCallP50 },
  { id: "roundtrip", title: "drain, dequeue 1 + complete 1", unit: "jobs/s", better: "higher", metric: zizqValue },
  // The machine's floor, run just before each roundtrip / enqueue_single run
  // by the same client: a plain-SQL queue (bench/zizq_bench.cpp, bare_*).
  { id: "roundtrip_bare", title: "plain-SQL queue, same client: roundtrip", unit: "jobs/s", better: "higher",
    metric: zizqValue },
  { id: "enqueue_single_bare", title: "plain-SQL queue, same client: enqueue_single", unit: "jobs/s", better: "higher",
    metric: zizqValue },
  { id: "drain_ref", title: "drain 100000 jobs, before each paired row", unit: "jobs/s", better: "higher", metric: zizqValue },
  { id: "drain_wif", title: "drain 100000 jobs under while_in_flight", unit: "jobs/s", better: "higher", metric: zizqValue },
  { id: "drain_tb", title: "drain 100000 jobs under time_based", unit: "jobs/s", better: "higher", metric: zizqValue },
  { id: "drain_mixed", title: "drain 20000 jobs under both", unit: "jobs/s", better: "higher", metric: zizqValue },
  { id: "drain_many", title: "drain, 8192 budgets of 1", unit: "jobs/s", better: "higher", metric: zizqValue },
  { id: "parked", title: "drain 100000 jobs past 100000 parked", unit: "jobs/s", better: "higher", metric: zizqValue },
  { id: "retained", title: "drain 100000 jobs beside 1.1M retained", unit: "jobs/s", better: "higher", metric: zizqValue },
  { id: "rate", title: "time_based 200/s, burst 1: dispatch rate", unit: "jobs/s", better: "target", metric: zizqValue },
  { id: "refill", title: "token due -> hand-off, p99", unit: "ms", better: "lower", metric: zizqValue },
];

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// 3 significant digits, k/M suffixes above 10000.
function fmt(x) {
  if (x === null || x === undefined || !Number.isFinite(x)) return "-";
  const a = Math.abs(x);
  const sig = (v) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2));
  if (a >= 1e6) return sig(x / 1e6) + "M";
  if (a >= 1e4) return sig(x / 1e3) + "k";
  return sig(x);
}

// The runs' label for a row and system.
function labelOf(row, system) {
  if (typeof row.label === "string") return row.label;
  if (row.label && row.label[system]) return row.label[system];
  return row.id;
}

module.exports = { PEERS, SYSTEMS, RUNNER_SYSTEM, ROWS, labelOf, median, fmt, num };
