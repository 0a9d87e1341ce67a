#!/usr/bin/env node
// pg-boss workloads for the zizq peer benchmark.
//
//   node pgboss.js --scenario <enqueue_single|enqueue_batch|drain|steady|limited>
//                  --conn <postgres connection string>
//                  [--n N] [--workers W] [--producers P] [--seconds S]
//                  [--job-ms MS] [--limit L] [--variant group|singleton|batch|local]
//                  [--batch-size B] [--poll SECONDS] [--notify on|off] [--pool N]
//                  [--hold-snapshot on|off] [--timeout S]
//
// Prints exactly one JSON line to stdout. See README.md.

import { PgBoss } from "pg-boss";
import {
  ConcurrencyGauge, analyzeSchema, boolOpt, dropSchema, holdSnapshot, hr, inChunks, latencySummary, log, numOpt, parseArgs,
  perSecondStats, pkgVersion, produceCount, produceUntil, round, runJob, runMain, secondsSince,
  serverVersion, sleep, waitUntilEmpty, wallMs,
} from "./common.js";

const VERSION = pkgVersion("pg-boss");
const SYSTEM = `pg-boss@${VERSION}`;
const SCHEMA = "pgboss";
const QUEUE = "bench";

const args = parseArgs();
const scenario = args.scenario;
const conn = args.conn || process.env.DATABASE_URL;
const verbose = boolOpt(args, "verbose", false);
// VACUUM ANALYZE the peer's tables after the untimed pre-enqueue (drain,
// limited), like pgbench vacuums before a run: without it the timed drain
// runs on a table with no statistics and unset hint bits, which cost ~30-40%
// here. --analyze off to skip.
const analyze = boolOpt(args, "analyze", true);
const analyzeDesc = analyze ? ", VACUUM ANALYZE after pre-enqueue" : "";

const SCENARIOS = ["enqueue_single", "enqueue_batch", "drain", "steady", "limited"];
const base = { system: SYSTEM, scenario: scenario ?? null };
if (scenario === "limited") base.variant = args.variant || "group";

// Tuning (docs/api/workers.md + JobPollingOptions in dist/types.d.ts):
// * batchSize 100 per fetch with burstWhenBatchFull: a worker keeps fetching
//   without delay while fetches come back full (ignored at batchSize 1).
// * pollingIntervalSeconds 0.5, the documented minimum (default 2).
// * useListenNotify + queue `notify: true` (opt-in LISTEN/NOTIFY wake-ups) in
//   the steady scenario, where jobs arrive while workers are idle. Off by
//   default elsewhere (nothing is inserted while workers run, and it adds a
//   pg_notify to every insert); override with --notify on|off.
const poll = numOpt(args, "poll", 0.5);
const notify = boolOpt(args, "notify", scenario === "steady");
// steady: another session holds one snapshot open through the window
// (common.js, holdSnapshot).
const holdSnapshotOpt = boolOpt(args, "holdSnapshot", false);
if (holdSnapshotOpt && scenario !== "steady") throw new Error("--hold-snapshot is for the steady scenario only");
const heldDesc = holdSnapshotOpt ? ", a snapshot held throughout" : "";

function bossOptions(extra = {}) {
  return {
    connectionString: conn,
    schema: SCHEMA,
    application_name: "peers-bench-pgboss",
    schedule: false, // no cron in this benchmark
    ...extra,
  };
}

async function startBoss(opts) {
  const boss = new PgBoss(bossOptions(opts));
  boss.on("error", (e) => log("pg-boss error:", e && e.message ? e.message : e));
  boss.on("warning", (w) => {
    if (verbose) log("pg-boss warning:", w && w.message ? w.message : w);
  });
  await boss.start();
  return boss;
}

// Clean state: drop the schema, then let the first instance re-create it.
async function freshBoss({ pool, listen = false, queue = {} }) {
  await dropSchema(conn, SCHEMA);
  const boss = await startBoss({ max: pool, useListenNotify: listen });
  await boss.createQueue(QUEUE, { notify, ...queue });
  return boss;
}

const isEmptyQuery = async (c) => {
  const r = await c.query(
    `SELECT EXISTS (SELECT 1 FROM ${SCHEMA}.job WHERE name = $1 AND state < 'completed') AS e`,
    [QUEUE]);
  return !r.rows[0].e;
};

async function preEnqueue(boss, n, jobFor) {
  await inChunks(n, 1000, (s, k) =>
    boss.insert(QUEUE, Array.from({ length: k }, (_, j) => jobFor(s + j))));
  if (analyze) await analyzeSchema(conn, SCHEMA);
}

function pollDesc(batchSize) {
  const parts = [`poll ${poll} s`];
  if (batchSize > 1) parts.push("burstWhenBatchFull");
  if (notify) parts.push("LISTEN/NOTIFY");
  return parts.join(", ");
}

// ---------------------------------------------------------------- scenarios

async function enqueueSingle() {
  const n = numOpt(args, "n", 5000);
  const producers = numOpt(args, "producers", 16);
  const boss = await freshBoss({ pool: producers + 2 });
  try {
    const t0 = hr();
    await produceCount(producers, n, (i) => boss.send(QUEUE, { i }));
    const seconds = secondsSince(t0);
    return {
      config: `${producers} producers, send() (one job per call/transaction)${notify ? ", queue notify" : ""}`,
      n, producers, seconds: round(seconds), jobs_per_s: round(n / seconds, 1),
    };
  } finally {
    await boss.stop({ graceful: true, close: true });
  }
}

async function enqueueBatch() {
  const n = numOpt(args, "n", 20000);
  const batch = numOpt(args, "batch", 1000);
  const boss = await freshBoss({ pool: 4 });
  try {
    const t0 = hr();
    await inChunks(n, batch, (s, k) =>
      boss.insert(QUEUE, Array.from({ length: k }, (_, j) => ({ data: { i: s + j } }))));
    const seconds = secondsSince(t0);
    return {
      config: `1 producer, insert() of ${batch}${notify ? ", queue notify" : ""}`,
      n, producers: 1, batch, seconds: round(seconds), jobs_per_s: round(n / seconds, 1),
    };
  } finally {
    await boss.stop({ graceful: true, close: true });
  }
}

async function drain() {
  const n = numOpt(args, "n", 20000);
  const workers = numOpt(args, "workers", 16);
  const batchSize = numOpt(args, "batchSize", 100);
  const pool = numOpt(args, "pool", 10);
  const boss = await freshBoss({ pool, listen: notify });
  try {
    await preEnqueue(boss, n, (i) => ({ data: { i } }));
    let handled = 0;
    let firstStart = null;
    const t0 = hr();
    await boss.work(QUEUE, {
      localConcurrency: workers, batchSize, burstWhenBatchFull: true,
      pollingIntervalSeconds: poll,
    }, async (jobs) => {
      if (firstStart === null) firstStart = hr();
      handled += jobs.length;
    });
    const tEnd = await waitUntilEmpty(conn, isEmptyQuery, { readyToCheck: () => handled >= n });
    const seconds = Number(tEnd - t0) / 1e9;
    return {
      config: `${workers} workers x batchSize ${batchSize}, ${pollDesc(batchSize)}, pool ${pool}${analyzeDesc}`,
      n, workers, batch_size: batchSize, seconds: round(seconds), jobs_per_s: round(n / seconds, 1),
      handled, first_job_ms: firstStart === null ? null : round(Number(firstStart - t0) / 1e6),
      jobs_per_s_from_first_job: firstStart === null ? null : round(n / (Number(tEnd - firstStart) / 1e9), 1),
    };
  } finally {
    await boss.stop({ graceful: true, close: true });
  }
}

async function steady() {
  const seconds = numOpt(args, "seconds", 10);
  const producers = numOpt(args, "producers", 4);
  const workers = numOpt(args, "workers", 16);
  const batchSize = numOpt(args, "batchSize", 100);
  const pool = numOpt(args, "pool", 10);
  // Consumer instance (workers, LISTEN) and a separate producer instance with
  // its own pool, like an application server next to a worker process.
  const boss = await freshBoss({ pool, listen: notify });
  const producer = await startBoss({ max: producers + 1, supervise: false, migrate: false });

  const enqAt = new Map(); // job id -> wall ms right after send() resolved (after commit)
  const startAt = new Map(); // job id -> wall ms when the handler started (within window)
  const callLat = [];
  let windowEndWall = Infinity;
  let completedInWindow = 0;
  let enqueued = 0;
  let holder = null, heldXids;
  try {
    await boss.work(QUEUE, {
      localConcurrency: workers, batchSize, burstWhenBatchFull: true,
      pollingIntervalSeconds: poll, notifyPollingIntervalSeconds: poll,
    }, async (jobs) => {
      for (const job of jobs) {
        const t = wallMs();
        if (t <= windowEndWall) {
          startAt.set(job.id, t);
          callLat.push(t - job.data.t_call);
        }
      }
      if (wallMs() <= windowEndWall) completedInWindow += jobs.length;
    });
    await sleep(1000); // let every worker do its first (empty) fetch and the listener connect
    if (holdSnapshotOpt) holder = await holdSnapshot(conn);
    const t0Wall = wallMs();
    windowEndWall = t0Wall + seconds * 1000;
    enqueued = await produceUntil(producers, () => wallMs() >= windowEndWall, async (i) => {
      const id = await producer.send(QUEUE, { i, t_call: wallMs() });
      enqAt.set(id, wallMs());
    });
    await sleep(100);
    if (holder) [heldXids, holder] = [await holder.release(), null];
  } finally {
    if (holder) await holder.release().catch(() => {});
    await producer.stop({ graceful: true, close: true });
    await boss.stop({ graceful: true, close: true });
  }
  const lat = [];
  let negative = 0;
  for (const [id, t] of startAt) {
    const e = enqAt.get(id);
    if (e === undefined) continue;
    const d = t - e;
    if (d < 0) negative++;
    lat.push(d);
  }
  const { count: latCount, ...latency } = latencySummary(lat);
  return {
    config: `${workers} workers x batchSize ${batchSize}, ${pollDesc(batchSize)}, pool ${pool}, ${producers} producers send()${heldDesc}`,
    seconds, producers, workers, batch_size: batchSize,
    jobs_per_s: round(completedInWindow / seconds, 1),
    enqueued, enqueue_per_s: round(enqueued / seconds, 1),
    completed: completedInWindow, started_in_window: startAt.size,
    backlog_at_end: enqueued - startAt.size,
    latency_ms: latency,
    latency_samples: latCount,
    latency_negative: negative,
    latency_from_call_ms: (({ count, ...r }) => r)(latencySummary(callLat)),
    ...(holdSnapshotOpt ? { held_snapshot_xids: heldXids } : {}),
  };
}

async function limited() {
  const variant = base.variant;
  const n = numOpt(args, "n", 1000);
  const limit = numOpt(args, "limit", 5);
  const W = numOpt(args, "workers", 16);
  const jobMs = numOpt(args, "jobMs", 50);

  // Each variant: how many pg-boss workers (localConcurrency), how many jobs
  // per fetch, queue policy, per-job options, and the limit mechanism.
  // group and singleton default to batchSize L with burstWhenBatchFull (the
  // documented way to keep fetching while there is work); --batch-size 1
  // reproduces the plain "16 workers x batchSize 1" configuration, which is
  // bound by the 0.5 s poll.
  let workers, batchSize, policy = "standard", jobOpts = () => ({}), workExtra = {}, mechanism;
  switch (variant) {
    case "local": // process-local: L workers, one job each
      workers = limit;
      batchSize = 1;
      mechanism = `${limit} workers x batchSize 1 (process-local)`;
      break;
    case "batch": // process-local: one worker, L jobs per fetch run concurrently
      workers = 1;
      batchSize = limit;
      mechanism = `1 worker x batchSize ${limit} (process-local)`;
      break;
    case "group": // global (DB-enforced) per-group limit, one group
      workers = W;
      batchSize = numOpt(args, "batchSize", limit);
      workExtra = { groupConcurrency: limit };
      jobOpts = () => ({ group: { id: "g1" } });
      mechanism = `groupConcurrency ${limit} (one group), ${workers} workers x batchSize ${batchSize}`;
      break;
    case "singleton": // global: policy singleton = 1 active per singletonKey; L keys
      workers = W;
      batchSize = numOpt(args, "batchSize", limit);
      policy = "singleton";
      jobOpts = (i) => ({ singletonKey: `k${i % limit}` });
      mechanism = `policy singleton + ${limit} singletonKeys, ${workers} workers x batchSize ${batchSize}`;
      break;
    default:
      throw new Error(`unknown variant ${variant} (group|singleton|batch|local)`);
  }
  const pool = numOpt(args, "pool", 10);
  const boss = await freshBoss({ pool, listen: notify, queue: { policy } });
  try {
    await preEnqueue(boss, n, (i) => ({ data: { i }, ...jobOpts(i) }));
    const gauge = new ConcurrencyGauge();
    const doneAt = [];
    const jobTook = [];
    let handled = 0;
    const runOne = async () => {
      gauge.enter();
      try {
        jobTook.push(await runJob(jobMs));
      } finally {
        gauge.leave();
        handled++;
        doneAt.push(wallMs());
      }
    };
    const t0Wall = wallMs();
    const t0 = hr();
    await boss.work(QUEUE, {
      localConcurrency: workers, batchSize, burstWhenBatchFull: batchSize > 1,
      pollingIntervalSeconds: poll, ...workExtra,
    }, async (jobs) => {
      await Promise.all(jobs.map(runOne));
    });
    const tEnd = await waitUntilEmpty(conn, isEmptyQuery, { readyToCheck: () => handled >= n });
    const seconds = Number(tEnd - t0) / 1e9;
    const per = perSecondStats(doneAt, t0Wall);
    return {
      variant,
      config: `${mechanism}, ${pollDesc(batchSize)}, pool ${pool}, jobs sleep ${jobMs} ms${analyzeDesc}`,
      n, limit, workers, batch_size: batchSize, job_ms: jobMs,
      seconds: round(seconds), jobs_per_s: round(n / seconds, 1),
      ideal_jobs_per_s: round((limit * 1000) / jobMs, 1),
      max_concurrency: gauge.max, limit_respected: gauge.max <= limit, per_second_sd: per.sd,
      job_ms_mean: round(jobTook.reduce((a, b) => a + b, 0) / Math.max(jobTook.length, 1)),
    };
  } finally {
    await boss.stop({ graceful: true, close: true });
  }
}

// ---------------------------------------------------------------- main

const timeoutSeconds = numOpt(args, "timeout", 300);
runMain(base, async () => {
  if (!SCENARIOS.includes(scenario)) throw new Error(`--scenario must be one of ${SCENARIOS.join(", ")}`);
  if (!conn) throw new Error("--conn (or DATABASE_URL) is required");
  const pgVersion = await serverVersion(conn);
  const started = new Date().toISOString();
  const fn = { enqueue_single: enqueueSingle, enqueue_batch: enqueueBatch, drain, steady, limited }[scenario];
  const r = await fn();
  return { ...r, pg: pgVersion, node: process.version, started_at: started };
}, { timeoutSeconds });
