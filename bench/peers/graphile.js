#!/usr/bin/env node
// graphile-worker workloads for the zizq peer benchmark.
//
//   node graphile.js --scenario <enqueue_single|enqueue_batch|drain|steady|limited>
//                    --conn <postgres connection string>
//                    [--n N] [--workers W] [--producers P] [--seconds S]
//                    [--job-ms MS] [--limit L] [--variant queues|local]
//                    [--local-queue SIZE] [--complete-delay MS] [--hold-snapshot on|off]
//                    [--timeout S]
//
// Prints exactly one JSON line to stdout. See README.md.

import { Logger, makeWorkerUtils, run, runMigrations } from "graphile-worker";
import {
  ConcurrencyGauge, analyzeSchema, boolOpt, dropSchema, holdSnapshot, hr, inChunks, latencySummary, log, numOpt,
  parseArgs, perSecondStats, pkgVersion, produceCount, produceUntil, round, runJob, runMain, secondsSince,
  serverVersion, sleep, waitUntilEmpty, wallMs,
} from "./common.js";

const VERSION = pkgVersion("graphile-worker");
const SYSTEM = `graphile-worker@${VERSION}`;
const SCHEMA = "graphile_worker";
const TASK = "noop";

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
// steady: another session holds one snapshot open through the window
// (common.js, holdSnapshot).
const holdSnapshotOpt = boolOpt(args, "holdSnapshot", false);
if (holdSnapshotOpt && scenario !== "steady") throw new Error("--hold-snapshot is for the steady scenario only");
const heldDesc = holdSnapshotOpt ? ", a snapshot held throughout" : "";

const SCENARIOS = ["enqueue_single", "enqueue_batch", "drain", "steady", "limited"];
const base = { system: SYSTEM, scenario: scenario ?? null };
if (scenario === "limited") base.variant = args.variant || "queues";

// Tuned batching options (website/docs/performance.md "Batching"; options
// documented in GraphileConfig.WorkerOptions): a local queue so one fetch
// locks many jobs, and batched completion with a 0 ms window.
//
// Exception: limited/queues. With named queues the local queue fetches at most
// one job per queue and then waits for the next poll (pollInterval, 2 s), so
// it drops to ~2.5 jobs/s here; the docs say to disable the local queue
// (`-1`) when it does not fit the workload, so that variant defaults to -1.
const namedQueues = scenario === "limited" && (args.variant || "queues") === "queues";
const localQueueSize = numOpt(args, "localQueue", namedQueues ? -1 : 100);
const completeDelay = numOpt(args, "completeDelay", 0);
const pollInterval = numOpt(args, "pollInterval", 2000); // default; NOTIFY does the wake-ups

// Logs go to stderr only; errors and warnings always, the rest with --verbose.
const logger = new Logger((scope) => (level, message) => {
  if (level === "error" || level === "warning" || verbose) {
    log(`graphile ${level}${scope && scope.label ? ` [${scope.label}]` : ""}: ${message}`);
  }
});

function batchingDesc() {
  const parts = [];
  parts.push(localQueueSize > 0 ? `localQueue ${localQueueSize}` : "no localQueue");
  parts.push(completeDelay >= 0 ? `completeJobBatchDelay ${completeDelay}` : "no completeJobBatchDelay");
  return parts.join(", ");
}

function runnerOptions(concurrency) {
  return {
    connectionString: conn,
    concurrency,
    // docs: "10 or concurrentJobs + 2, whichever is larger"
    maxPoolSize: Math.max(10, concurrency + 2),
    pollInterval,
    noHandleSignals: true,
    logger,
    preset: {
      worker: {
        localQueue: { size: localQueueSize },
        completeJobBatchDelay: completeDelay,
        failJobBatchDelay: completeDelay,
      },
    },
  };
}

async function freshSchema() {
  await dropSchema(conn, SCHEMA);
  await runMigrations({ connectionString: conn, logger });
}

async function utils(poolSize) {
  return makeWorkerUtils({ connectionString: conn, maxPoolSize: poolSize, logger });
}

// Starts a worker pool; returns the runner. Cron disabled (no crontab file).
async function startRunner(concurrency, taskList) {
  return run(runnerOptions(concurrency), taskList, []);
}

const isEmptyQuery = async (c) => {
  const r = await c.query(`SELECT EXISTS (SELECT 1 FROM ${SCHEMA}._private_jobs) AS e`);
  return !r.rows[0].e;
};

// Pre-enqueue n jobs (not timed) with addJobs in chunks of 1000.
async function preEnqueue(n, specFor) {
  const wu = await utils(2);
  try {
    await inChunks(n, 1000, (s, k) =>
      wu.addJobs(Array.from({ length: k }, (_, j) => specFor(s + j))));
  } finally {
    await wu.release();
  }
  if (analyze) await analyzeSchema(conn, SCHEMA);
}

// ---------------------------------------------------------------- scenarios

async function enqueueSingle() {
  const n = numOpt(args, "n", 5000);
  const producers = numOpt(args, "producers", 16);
  await freshSchema();
  const wu = await utils(producers + 1);
  try {
    const t0 = hr();
    await produceCount(producers, n, (i) => wu.addJob(TASK, { i }));
    const seconds = secondsSince(t0);
    return {
      config: `${producers} producers, addJob (one job per call/transaction)`,
      n, producers, seconds: round(seconds), jobs_per_s: round(n / seconds, 1),
    };
  } finally {
    await wu.release();
  }
}

async function enqueueBatch() {
  const n = numOpt(args, "n", 20000);
  const batch = numOpt(args, "batch", 1000);
  await freshSchema();
  const wu = await utils(2);
  try {
    const t0 = hr();
    await inChunks(n, batch, (s, k) =>
      wu.addJobs(Array.from({ length: k }, (_, j) => ({ identifier: TASK, payload: { i: s + j } }))));
    const seconds = secondsSince(t0);
    return {
      config: `1 producer, addJobs of ${batch}`,
      n, producers: 1, batch, seconds: round(seconds), jobs_per_s: round(n / seconds, 1),
    };
  } finally {
    await wu.release();
  }
}

async function drain() {
  const n = numOpt(args, "n", 20000);
  const workers = numOpt(args, "workers", 16);
  await freshSchema();
  await preEnqueue(n, (i) => ({ identifier: TASK, payload: { i } }));
  let handled = 0;
  let firstStart = null;
  const taskList = {
    [TASK]: async () => {
      if (firstStart === null) firstStart = hr();
      handled++;
    },
  };
  const t0 = hr();
  const runner = await startRunner(workers, taskList);
  try {
    const tEnd = await waitUntilEmpty(conn, isEmptyQuery, { readyToCheck: () => handled >= n });
    const seconds = Number(tEnd - t0) / 1e9;
    return {
      config: `concurrency ${workers}, ${batchingDesc()}${analyzeDesc}`,
      n, workers, seconds: round(seconds), jobs_per_s: round(n / seconds, 1),
      handled, first_job_ms: firstStart === null ? null : round(Number(firstStart - t0) / 1e6),
      jobs_per_s_from_first_job: firstStart === null ? null : round(n / (Number(tEnd - firstStart) / 1e9), 1),
    };
  } finally {
    await runner.stop();
  }
}

async function steady() {
  const seconds = numOpt(args, "seconds", 10);
  const producers = numOpt(args, "producers", 4);
  const workers = numOpt(args, "workers", 16);
  await freshSchema();

  const enqAt = new Map(); // job id -> wall ms right after addJob() resolved (after commit)
  const startAt = new Map(); // job id -> wall ms when the handler started (within window)
  const callLat = []; // start - wall time taken just before the addJob() call (in payload)
  let windowEndWall = Infinity;
  let completedInWindow = 0;

  const taskList = {
    [TASK]: async (payload, helpers) => {
      const t = wallMs();
      if (t <= windowEndWall) {
        startAt.set(helpers.job.id, t);
        callLat.push(t - payload.t_call);
      }
      if (wallMs() <= windowEndWall) completedInWindow++;
    },
  };

  const runner = await startRunner(workers, taskList);
  const wu = await utils(producers + 1);
  let enqueued = 0;
  let holder = null, heldXids;
  try {
    await sleep(200); // let the pool settle (LISTEN established, first empty fetch done)
    if (holdSnapshotOpt) holder = await holdSnapshot(conn);
    const t0Wall = wallMs();
    windowEndWall = t0Wall + seconds * 1000;
    enqueued = await produceUntil(producers, () => wallMs() >= windowEndWall, async (i) => {
      const job = await wu.addJob(TASK, { i, t_call: wallMs() });
      enqAt.set(job.id, wallMs());
    });
    // Window over: stop producing (done), give in-flight handlers a moment.
    await sleep(100);
    if (holder) [heldXids, holder] = [await holder.release(), null];
  } finally {
    if (holder) await holder.release().catch(() => {});
    await runner.stop();
    await wu.release();
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
  const summary = latencySummary(lat);
  const { count: latCount, ...latency } = summary;
  return {
    config: `concurrency ${workers}, ${batchingDesc()}, ${producers} producers addJob${heldDesc}`,
    seconds, producers, workers,
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
  const workers = numOpt(args, "workers", 16);
  const jobMs = numOpt(args, "jobMs", 50);
  if (!["queues", "local"].includes(variant)) throw new Error(`unknown variant ${variant} (queues|local)`);
  await freshSchema();
  await preEnqueue(n, (i) => ({
    identifier: TASK,
    payload: { i },
    ...(variant === "queues" ? { queueName: `lim_${i % limit}` } : {}),
  }));
  const gauge = new ConcurrencyGauge();
  const doneAt = [];
  const jobTook = [];
  let handled = 0;
  const taskList = {
    [TASK]: async () => {
      gauge.enter();
      try {
        jobTook.push(await runJob(jobMs));
      } finally {
        gauge.leave();
        handled++;
        doneAt.push(wallMs());
      }
    },
  };
  const concurrency = variant === "local" ? limit : workers;
  const mechanism = variant === "local"
    ? `worker concurrency ${limit}`
    : `${limit} named queues (queue_name, serial each), worker concurrency ${workers}`;
  const t0Wall = wallMs();
  const t0 = hr();
  const runner = await startRunner(concurrency, taskList);
  try {
    const tEnd = await waitUntilEmpty(conn, isEmptyQuery, { readyToCheck: () => handled >= n });
    const seconds = Number(tEnd - t0) / 1e9;
    const per = perSecondStats(doneAt, t0Wall);
    return {
      variant,
      config: `${mechanism}, ${batchingDesc()}, jobs sleep ${jobMs} ms${analyzeDesc}`,
      n, limit, workers: concurrency, job_ms: jobMs,
      seconds: round(seconds), jobs_per_s: round(n / seconds, 1),
      ideal_jobs_per_s: round((limit * 1000) / jobMs, 1),
      max_concurrency: gauge.max, limit_respected: gauge.max <= limit, per_second_sd: per.sd,
      job_ms_mean: round(jobTook.reduce((a, b) => a + b, 0) / Math.max(jobTook.length, 1)),
    };
  } finally {
    await runner.stop();
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
