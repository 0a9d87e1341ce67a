// zizq bench: the libpq benchmark driver. Each run of a scenario prints one
// JSON line on stdout (everything else goes to stderr). bench/compare runs
// the scenarios (and the peers') several times on one throwaway cluster and
// reports medians and ratios.
//
// Usage: zizq_bench <scenario> [--n N] [--workers W] [--producers P]
//                   [--batch B] [--seconds S] [--job-ms MS] [--limit L]
//                   [--rate R] [--budgets K] [--parked N]
//                   [--statements prepared|simple] [--hold-snapshot on|off]
// Connection from PGHOST/PGPORT/PGUSER/PGDATABASE.
//
// The workers' and producers' calls in the timed loops are statements
// prepared once per connection (as graphile-worker's are by default);
// `--statements simple` sends their text at every call instead.
//
// Scenarios:
//   enqueue_single   P producers, one job per call (one transaction each)
//   enqueue_batch    enqueue_many of B jobs per call
//   drain            N jobs enqueued beforehand; W workers dequeue B at a time
//                    and complete them in bulk; time until the queue is empty
//   roundtrip        like drain with B = 1: dequeue 1, complete 1
//   latency          commit of an enqueue -> return of a worker blocked in
//                    dequeue(wait)
//   steady           P producers and W workers together for S seconds:
//                    throughput and enqueue->start latency; with
//                    --hold-snapshot on, while another session holds one
//                    snapshot open from before the window to its end
//   drain_wif        drain with every job bound to a while_in_flight budget
//                    of large allocation
//   drain_tb         ... to a time_based budget of high rate
//   drain_mixed      ... to both
//   drain_many       ... spread over K budgets (8192) of allocation 1, each
//                    with parked jobs; compare with drain_wif
//   parked           drain of unbudgeted jobs with N parked jobs ahead of them
//                    in the same queue (on an exhausted budget)
//   retained         drain with 1,000,000 completed-and-retained and 100,000
//                    scheduled jobs in the tables
//   limited          concurrency L, jobs of MS ms, W workers: throughput and
//                    the highest concurrency observed
//   rate             time_based R per second with burst 1 for S seconds:
//                    the dispatch rate
//   refill           time_based budget, workers blocked in dequeue(wait):
//                    delay from the instant a token is due to the hand-off
//   bare_roundtrip   the machine's floor for roundtrip, measured by the same
//                    client: a plain-SQL SKIP LOCKED queue (one table, two
//                    indexes), dequeue 1 + complete 1
//   bare_enqueue_single  ... and for enqueue_single: one INSERT per call
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../support/pgclient.hpp"

using zizq::client::Conn;
using zizq::client::Result;
using zizq::client::now_s;

namespace {

struct Args {
  std::string scenario;
  int n = 20000, workers = 16, producers = 16, batch = 100, job_ms = 50, limit = 5, budgets = 8192;
  int parked = 100000;
  double seconds = 10, rate = 200;
  bool hold_snapshot = false;  // steady: a reader holds one snapshot through the window
};

bool prepared_statements = true;  // --statements

// A call of a timed loop: prepared once per connection, or sent as text.
Result call(Conn &c, const std::string &sql, const std::vector<std::string> &params = {}) {
  if (prepared_statements) return c.exec_prepared(sql, params);
  return params.empty() ? c.exec(sql) : c.exec(sql, params);
}

std::string fmt(const char *f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// One JSON line: fixed fields first, then the scenario's own.
void report(const Args &a, const std::string &config, double value, const std::string &unit,
            const std::vector<std::pair<std::string, std::string>> &extra = {}) {
  std::string line = "{\"system\":\"zizq\",\"scenario\":\"" + a.scenario + "\",\"config\":\"" + config +
                     "\",\"value\":" + fmt("%.3f", value) + ",\"unit\":\"" + unit + "\",\"statements\":\"" +
                     (prepared_statements ? "prepared" : "simple") + "\"";
  for (const auto &kv : extra) line += ",\"" + kv.first + "\":" + kv.second;
  std::printf("%s}\n", line.c_str());
  std::fflush(stdout);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(p / 100.0 * v.size())) - 1;
  return v[std::min(i, v.size() - 1)];
}

std::string latency_json(const std::vector<double> &ms) {
  return "{\"p50\":" + fmt("%.3f", percentile(ms, 50)) + ",\"p90\":" + fmt("%.3f", percentile(ms, 90)) +
         ",\"p99\":" + fmt("%.3f", percentile(ms, 99)) + ",\"max\":" + fmt("%.3f", percentile(ms, 100)) +
         ",\"n\":" + std::to_string(ms.size()) + "}";
}

void run_threads(int n, const std::function<void(int)> &body) {
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back(body, i);
  for (auto &t : threads) t.join();
}

// Triggers on zizq._jobs that are not zizq's own run in every dequeue and
// complete and would count in the figures (the stress test's history
// trigger stays behind on a cluster it ran on): said on stderr.
void warn_of_foreign_triggers(Conn &c) {
  auto r = c.exec("SELECT string_agg(t.tgname, ', ' ORDER BY t.tgname) FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid "
                  "WHERE t.tgrelid = 'zizq._jobs'::regclass AND NOT t.tgisinternal "
                  "AND p.pronamespace <> 'zizq'::regnamespace");
  if (!r.null(0, 0))
    std::fprintf(stderr, "warning: zizq._jobs has triggers that are not zizq's (%s): their cost is in the figures\n",
                 r.get(0, 0).c_str());
}

void fresh(Conn &c) {
  c.exec("SELECT zizq.reset()");
  c.exec("VACUUM ANALYZE zizq._jobs");
  warn_of_foreign_triggers(c);
}

// enqueue_many of n unbudgeted (or budgeted) jobs, in calls of 1000.
void enqueue_jobs(Conn &c, int n, const std::string &queue, const std::string &budgets_sql = "NULL") {
  for (int done = 0; done < n; done += 1000) {
    int k = std::min(1000, n - done);
    c.exec("SELECT count(*) FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object("
           "'queue', $1::text, 'type', 'noop', 'payload', jsonb_build_object('i', i), 'budgets', " +
               budgets_sql + "))) FROM generate_series(1, $2::int) i))",
           {queue, std::to_string(k)});
  }
}


// Runs `body` on n threads, each with its own connection made and warmed
// before the clock starts; returns the seconds from the start signal to the
// last end.
// The end of the timed work: the first crossing counts. Workers still
// blocked in dequeue(wait) afterwards are not timed.
class FinishLine {
 public:
  void cross() {
    std::call_once(once_, [this] { at_ = now_s(); });
  }
  double at() const { return at_; }

 private:
  std::once_flag once_;
  double at_ = 0;
};

// The statements of the timed worker loops, prepared while warming up.
const char *const kDequeueOne = "SELECT id FROM zizq.dequeue(ARRAY[$1], 1, wait => $2::interval)";
const char *const kDequeueBatch = "SELECT array_agg(id) FROM zizq.dequeue(ARRAY[$1], $2::int, wait => '200 ms')";
const char *const kCompleteOne = "SELECT zizq.complete($1::bigint)";
const char *const kCompleteMany = "SELECT zizq.complete($1::bigint[])";
const char *const kDequeueLatency = "SELECT id FROM zizq.dequeue(ARRAY['lat'], 1, wait => '1 s')";
const char *const kDequeueSteady = "SELECT id FROM zizq.dequeue(ARRAY['steady'], 10, wait => '200 ms')";
const std::vector<std::string> kWorkerStatements = {kDequeueOne,     kDequeueBatch,  kCompleteOne,
                                                    kCompleteMany,   kDequeueLatency, kDequeueSteady};

// The plain-SQL queue's statements (see "the plain-SQL floor" below).
// Its dequeue's commit is not waited for, as zizq's unleased dequeue's is
// not: set_config(..., true) lasts to the end of the statement's own
// transaction.
const char *const kBareDequeue =
    "UPDATE zizq_bench_bare.jobs SET status = 'running', dequeued_at = now() "
    "WHERE id = (SELECT id FROM zizq_bench_bare.jobs WHERE queue = $1 AND status = 'ready' "
    "ORDER BY priority, id LIMIT 1 FOR UPDATE SKIP LOCKED) "
    "RETURNING id, set_config('synchronous_commit', 'off', true)";
const char *const kBareComplete = "DELETE FROM zizq_bench_bare.jobs WHERE id = $1::bigint";
const char *const kBareEnqueue =
    "INSERT INTO zizq_bench_bare.jobs (queue, type, payload) VALUES ('bench', 'noop', '{\"x\": 1}') RETURNING id";

// How a connection is readied before the clock starts.
enum class Warm {
  None,  // as a producer: its statement is prepared at its first call
  Zizq,  // as a long-lived zizq worker (below)
  Bare,  // the plain-SQL queue's statements prepared
};

// Runs `body` on n connections made (and readied) beforehand; returns the
// instant they were all let go.
double timed_workers(int n, const std::function<void(Conn &)> &body, Warm warm = Warm::Zizq) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&] {
      Conn c;
      // Warm the connection as a long-lived worker is: zizq's statements
      // planned, caches filled (an empty dequeue and complete; a dequeue
      // that waits plans the budgeted path's statements before it sleeps).
      if (warm == Warm::Zizq) {
        c.exec("SELECT count(*) FROM zizq.dequeue(ARRAY['warm-up'], 1, wait => '1 ms')");
        c.exec("SELECT zizq.complete('{}'::bigint[])");
        if (prepared_statements)
          for (const std::string &sql : kWorkerStatements) c.prepare(sql);
      }
      if (warm == Warm::Bare && prepared_statements)
        for (const char *sql : {kBareDequeue, kBareComplete}) c.prepare(sql);
      ++ready;
      while (!go.load()) std::this_thread::yield();
      body(c);
    });
  while (ready.load() < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  double start = now_s();
  go = true;
  for (auto &t : threads) t.join();
  return start;
}

// Dequeues one job of `queue`, waiting up to `wait`, and completes it at
// once. Returns when the dequeue returned, or -1 when no job came.
double run_one(Conn &c, const std::string &queue, const std::string &wait) {
  auto r = call(c, kDequeueOne, {queue, wait});
  double t = now_s();
  if (r.rows() == 0) return -1;
  call(c, kCompleteOne, {r.get(0, 0)});
  return t;
}

// Up to `batch` jobs, completed in one call; the jobs done.
int64_t take_batch(Conn &c, const std::string &queue, int batch) {
  auto r = call(c, kDequeueBatch, {queue, std::to_string(batch)});
  if (r.null(0, 0)) return 0;
  std::string ids = r.get(0, 0);
  call(c, kCompleteMany, {ids});
  return std::count(ids.begin(), ids.end(), ',') + 1;
}

// W workers dequeue `batch` at a time and complete in bulk until `total`
// jobs are done; returns the seconds from start to the last completion.
// A worker that takes one job at a time asks for one (SELECT id), as such
// a worker would, not for an array of one.
double drain_queue(const Args &a, const std::string &queue, int batch, int64_t total) {
  std::atomic<int64_t> done{0};
  FinishLine finish;
  double start = timed_workers(a.workers, [&](Conn &c) {
    while (done.load() < total) {
      int64_t n = batch == 1 ? (run_one(c, queue, "200 ms") < 0 ? 0 : 1) : take_batch(c, queue, batch);
      if (n > 0 && (done += n) >= total) finish.cross();
    }
  });
  return finish.at() - start;
}

// ---- the plain-SQL floor ------------------------------------------------------------
// What this machine gives the simplest queue one could write in SQL, with
// the same client, connections and statement mode as zizq's runs: a table
// with a primary key and one partial index of ready jobs, a dequeue that is
// one UPDATE over a SKIP LOCKED sub-select, a complete that is one DELETE.
// It has none of zizq's features (no budgets, leases, scheduling, retries,
// unique keys, wake-ups; workers poll), so it bounds what any queue design
// can reach here. Its commits are as zizq's: the dequeue's is not waited
// for, the complete's and the enqueue's are.
void fresh_bare(Conn &c) {
  c.exec("SET client_min_messages = warning");
  c.exec("DROP SCHEMA IF EXISTS zizq_bench_bare CASCADE");
  c.exec("CREATE SCHEMA zizq_bench_bare");
  c.exec("CREATE TABLE zizq_bench_bare.jobs (id bigserial PRIMARY KEY, queue text NOT NULL, type text NOT NULL, "
         "payload jsonb NOT NULL DEFAULT '{}', priority int NOT NULL DEFAULT 0, status text NOT NULL DEFAULT 'ready', "
         "created_at timestamptz NOT NULL DEFAULT now(), dequeued_at timestamptz)");
  c.exec("CREATE INDEX ON zizq_bench_bare.jobs (queue, priority, id) WHERE status = 'ready'");
}

void bare_roundtrip(const Args &a) {
  Conn c;
  fresh_bare(c);
  c.exec("INSERT INTO zizq_bench_bare.jobs (queue, type, payload) "
         "SELECT 'bench', 'noop', jsonb_build_object('i', i) FROM generate_series(1, $1::int) i",
         {std::to_string(a.n)});
  c.exec("VACUUM ANALYZE zizq_bench_bare.jobs");
  std::atomic<int64_t> done{0};
  FinishLine finish;
  double start = timed_workers(a.workers, [&](Conn &w) {
    while (done.load() < a.n) {
      auto r = call(w, kBareDequeue, {"bench"});
      if (r.rows() == 0) continue;  // every ready row locked by others for the moment
      call(w, kBareComplete, {r.get(0, 0)});
      if (++done >= a.n) finish.cross();
    }
  }, Warm::Bare);
  double s = finish.at() - start;
  c.exec("DROP SCHEMA zizq_bench_bare CASCADE");
  report(a, std::to_string(a.workers) + " workers, plain-SQL queue: UPDATE .. SKIP LOCKED 1 + DELETE 1", a.n / s, "jobs/s",
         {{"n", std::to_string(a.n)}, {"seconds", fmt("%.3f", s)}});
}

// a.n single-row enqueues by a.producers connections, each `sql` a call;
// the seconds they took.
double time_single_enqueues(const Args &a, const char *sql) {
  std::atomic<int> next{0};
  double start = timed_workers(a.producers, [&](Conn &p) {
    while (next.fetch_add(1) < a.n) call(p, sql);
  }, Warm::None);
  return now_s() - start;
}

void bare_enqueue_single(const Args &a) {
  Conn c;
  fresh_bare(c);
  double s = time_single_enqueues(a, kBareEnqueue);
  c.exec("DROP SCHEMA zizq_bench_bare CASCADE");
  report(a, std::to_string(a.producers) + " producers, plain-SQL queue: one INSERT per call", a.n / s, "jobs/s");
}

// ---- scenarios ------------------------------------------------------------------

void enqueue_single(const Args &a) {
  Conn c;
  fresh(c);
  double s = time_single_enqueues(a, "SELECT (zizq.enqueue('bench', 'noop', '{\"x\": 1}')).id");
  report(a, std::to_string(a.producers) + " producers, one job per call", a.n / s, "jobs/s");
}

void enqueue_batch(const Args &a) {
  Conn c;
  fresh(c);
  std::string batch = "[";
  for (int i = 0; i < 1000; ++i) batch += std::string(i ? "," : "") + "{\"queue\":\"bench\",\"type\":\"noop\",\"payload\":{\"i\":" + std::to_string(i) + "}}";
  batch += "]";
  double start = now_s();
  for (int done = 0; done < a.n; done += 1000) call(c, "SELECT count(*) FROM zizq.enqueue_many($1::jsonb)", {batch});
  double s = now_s() - start;
  report(a, "1 producer, enqueue_many of 1000 (JSON built by the client)", a.n / s, "jobs/s");
}

void drain(const Args &a, int batch, const std::string &budgets_sql, const std::string &config) {
  Conn c;
  fresh(c);
  enqueue_jobs(c, a.n, "bench", budgets_sql);
  c.exec("VACUUM ANALYZE zizq._jobs");
  double s = drain_queue(a, "bench", batch, a.n);
  report(a, config, a.n / s, "jobs/s", {{"n", std::to_string(a.n)}, {"seconds", fmt("%.3f", s)}});
}

// Enqueue-to-start latencies, measured at the clients as the peers'
// scripts do: from the moment the producer's enqueue call returned (its
// commit done; a lower bound) and from the moment it was made (an upper
// bound), to the moment a worker's dequeue returned the job.
class Latencies {
 public:
  void enqueued(const std::string &id, double called, double returned) {
    std::lock_guard<std::mutex> lock(mu_);
    sent_[id] = {called, returned};
  }
  void started(const std::string &id, double at) {
    std::lock_guard<std::mutex> lock(mu_);
    started_[id] = at;
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return started_.size();
  }
  // Milliseconds, for the jobs whose both ends were seen.
  std::vector<double> from_return() const { return collect(true); }
  std::vector<double> from_call() const { return collect(false); }

 private:
  std::vector<double> collect(bool after_return) const {
    std::vector<double> ms;
    for (const auto &[id, at] : started_) {
      auto it = sent_.find(id);
      if (it != sent_.end()) ms.push_back((at - (after_return ? it->second.second : it->second.first)) * 1000);
    }
    return ms;
  }
  std::mutex mu_;
  std::map<std::string, std::pair<double, double>> sent_;
  std::map<std::string, double> started_;
};

void latency(const Args &a) {
  Conn c;
  fresh(c);
  Latencies lat;
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  std::atomic<int> ready{0};
  for (int w = 0; w < 4; ++w)
    workers.emplace_back([&] {
      Conn wc;
      ++ready;
      while (!stop.load()) {
        auto r = call(wc, kDequeueLatency);
        double t = now_s();
        if (r.rows() == 0) continue;
        lat.started(r.get(0, 0), t);
        call(wc, kCompleteOne, {r.get(0, 0)});
      }
    });
  while (ready.load() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // all blocked in dequeue(wait)
  size_t n = static_cast<size_t>(std::min(a.n, 1000));
  for (size_t i = 0; i < n; ++i) {
    double called = now_s();
    auto r = call(c, "SELECT id FROM zizq.enqueue('lat', 'noop')");
    lat.enqueued(r.get(0, 0), called, now_s());
    while (lat.count() <= i) std::this_thread::sleep_for(std::chrono::microseconds(50));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the workers back in dequeue(wait)
  }
  stop = true;
  for (auto &t : workers) t.join();
  // The commit lies between the enqueue's call and its return, and a woken
  // worker often returns before the producer hears of the commit, so the
  // time from the return can be negative. The headline is the time from the
  // call: an upper bound that includes the commit's own flush.
  std::vector<double> after = lat.from_return(), before = lat.from_call();
  report(a, "1 producer, 4 workers blocked in dequeue(wait), one job at a time", percentile(before, 50),
         "ms p50 from the enqueue's call",
         {{"latency_ms", latency_json(after)}, {"latency_from_call_ms", latency_json(before)}});
}

// A reader that keeps one snapshot open (a long report, a forgotten
// transaction): no row version that dies after it began can be removed, by
// VACUUM or by pruning, until it ends. Queues that walk dead entries or
// dead rows on every fetch slow down as they pile up.
class SnapshotHolder {
 public:
  SnapshotHolder() {
    c_.exec("BEGIN ISOLATION LEVEL REPEATABLE READ");
    c_.exec("SELECT 1");  // takes the snapshot
  }
  // How many transaction ids were assigned since, as seen from `other`
  // (which must not be the holder); then ends the holder's transaction.
  long release(Conn &other) {
    long age = std::atol(other.exec("SELECT age(backend_xmin) FROM pg_stat_activity WHERE pid = $1",
                                    {std::to_string(c_.backend_pid())}).get(0, 0).c_str());
    c_.exec("COMMIT");
    return age;
  }

 private:
  Conn c_;
};

void steady(const Args &a) {
  Conn c;
  fresh(c);
  std::unique_ptr<SnapshotHolder> holder;
  if (a.hold_snapshot) holder = std::make_unique<SnapshotHolder>();
  Latencies lat;
  std::atomic<bool> producing{true};
  std::atomic<long> enqueued{0}, completed{0};
  double start = now_s(), end = start + a.seconds;
  std::vector<std::thread> threads;
  for (int w = 0; w < a.workers; ++w)
    threads.emplace_back([&] {
      Conn wc;
      while (producing.load()) {
        auto r = call(wc, kDequeueSteady);
        double t = now_s();
        if (r.rows() == 0) continue;
        std::string ids = "{";
        for (int i = 0; i < r.rows(); ++i) {
          ids += (i ? "," : "") + r.get(i, 0);
          if (t < end) lat.started(r.get(i, 0), t);
        }
        call(wc, kCompleteMany, {ids + "}"});
        if (now_s() < end) completed += r.rows();
      }
    });
  for (int p = 0; p < a.producers; ++p)
    threads.emplace_back([&] {
      Conn pc;
      while (now_s() < end) {
        double called = now_s();
        auto r = call(pc, "SELECT (zizq.enqueue('steady', 'noop')).id");
        lat.enqueued(r.get(0, 0), called, now_s());
        ++enqueued;
      }
    });
  for (int p = a.workers; p < static_cast<int>(threads.size()); ++p) threads[p].join();
  producing = false;
  for (int w = 0; w < a.workers; ++w) threads[w].join();
  std::vector<double> after = lat.from_return(), before = lat.from_call();
  std::vector<std::pair<std::string, std::string>> extra = {{"enqueued", std::to_string(enqueued.load())},
                                                            {"latency_ms", latency_json(after)},
                                                            {"latency_from_call_ms", latency_json(before)}};
  std::string config = std::to_string(a.producers) + " producers (one job per call), " + std::to_string(a.workers) +
                       " workers (batches of 10)";
  if (holder) {
    extra.push_back({"held_snapshot_xids", std::to_string(holder->release(c))});
    config += ", a snapshot held throughout";
  }
  report(a, config, completed.load() / a.seconds, "jobs/s", extra);
}

// Jobs bound to budgets that never run short: the cost of the budget
// machinery itself (drain_wif: while_in_flight, drain_tb: time_based,
// drain_mixed: both on every job).
void budgeted_drain(const Args &a) {
  Conn c;
  fresh(c);
  c.exec("SELECT zizq.define_budget('fast', 1000000, 'time_based', duration => '1 second')");
  c.exec("SELECT zizq.define_budget('big', 1000000, 'while_in_flight')");
  std::string bindings, config;
  if (a.scenario == "drain_wif") {
    bindings = R"([{"key": "big"}])";
    config = "while_in_flight 1000000";
  } else if (a.scenario == "drain_tb") {
    bindings = R"([{"key": "fast"}])";
    config = "time_based 1000000/s";
  } else {
    bindings = R"([{"key": "fast"}, {"key": "big"}])";
    config = "time_based 1000000/s + while_in_flight 1000000";
  }
  enqueue_jobs(c, a.n, "bench", "'" + bindings + "'::jsonb");
  c.exec("VACUUM ANALYZE zizq._jobs");
  double s = drain_queue(a, "bench", a.batch, a.n);
  report(a, config + ", " + std::to_string(a.workers) + " workers x batch " + std::to_string(a.batch), a.n / s, "jobs/s",
         {{"n", std::to_string(a.n)}, {"seconds", fmt("%.3f", s)}});
}

void drain_many(const Args &a) {
  Conn c;
  fresh(c);
  // K budgets of allocation 1 with 3 jobs each: while one runs, two are parked.
  int k = a.budgets, per = 3, total = k * per;
  for (int done = 0; done < k; done += 1000)
    c.exec("SELECT count(zizq.define_budget('b' || i, 1, 'while_in_flight')) FROM generate_series($1::int, $2::int) i",
           {std::to_string(done), std::to_string(std::min(k, done + 1000) - 1)});
  for (int done = 0; done < total; done += 1000)
    c.exec("SELECT count(*) FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', 'bench', 'type', 'noop', "
           "'budgets', jsonb_build_array(jsonb_build_object('key', 'b' || (i % $3::int))))) "
           "FROM generate_series($1::int, $2::int) i))",
           {std::to_string(done), std::to_string(std::min(total, done + 1000) - 1), std::to_string(k)});
  c.exec("VACUUM ANALYZE zizq._jobs");
  double s = drain_queue(a, "bench", a.batch, total);
  report(a, std::to_string(k) + " while_in_flight budgets of 1, " + std::to_string(per) + " jobs each, " +
                std::to_string(a.workers) + " workers x batch " + std::to_string(a.batch),
         total / s, "jobs/s", {{"n", std::to_string(total)}});
}

void parked(const Args &a) {
  Conn c;
  fresh(c);
  c.exec("SELECT zizq.define_budget('exhausted', 1, 'while_in_flight')");
  c.exec("SELECT zizq.enqueue('hold', 'noop', budgets => '[{\"key\": \"exhausted\"}]')");
  c.exec("SELECT count(*) FROM zizq.dequeue(ARRAY['hold'], 1, lease => '1 hour')");
  enqueue_jobs(c, a.parked, "bench", "'[{\"key\": \"exhausted\"}]'::jsonb");
  enqueue_jobs(c, a.n, "bench");
  c.exec("VACUUM ANALYZE zizq._jobs");
  double s = drain_queue(a, "bench", a.batch, a.n);
  report(a, std::to_string(a.parked) + " parked jobs ahead in the queue, " + std::to_string(a.workers) +
                " workers x batch " + std::to_string(a.batch),
         a.n / s, "jobs/s");
}

void retained(const Args &a) {
  Conn c;
  fresh(c);
  std::fprintf(stderr, "retained: filling 1,000,000 completed and 100,000 scheduled jobs\n");
  c.exec("INSERT INTO zizq._jobs (queue, type, status, ready_at, completed_at, purge_at) "
         "SELECT 'old', 'noop', 'completed', now(), now(), now() + interval '30 days' FROM generate_series(1, 1000000)");
  c.exec("INSERT INTO zizq._jobs (queue, type, status, ready_at) "
         "SELECT 'later', 'noop', 'scheduled', now() + interval '30 days' FROM generate_series(1, 100000)");
  enqueue_jobs(c, a.n, "bench");
  c.exec("VACUUM ANALYZE zizq._jobs");
  double s = drain_queue(a, "bench", a.batch, a.n);
  report(a, "1,000,000 completed + 100,000 scheduled jobs retained, " + std::to_string(a.workers) + " workers x batch " +
                std::to_string(a.batch),
         a.n / s, "jobs/s");
}

// The time from a complete's call to the dispatch its token allowed. With a
// limit of L, dispatch k (in time order) needs k - L tokens back, so it came
// no earlier than the (k - L)-th complete call: pairing the sorted lists
// this way gives each hand-off's gap (exact while the slots are all busy).
std::vector<double> handoff_gaps(std::vector<double> dispatched, std::vector<double> completing, int limit) {
  std::sort(dispatched.begin(), dispatched.end());
  std::sort(completing.begin(), completing.end());
  std::vector<double> gaps;
  for (size_t k = limit; k < dispatched.size() && k - limit < completing.size(); ++k)
    gaps.push_back(1000 * (dispatched[k] - completing[k - limit]));
  return gaps;
}

double mean(const std::vector<double> &v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / v.size();
}

// A simulated job of `ms` milliseconds. A bare sleep_for(50 ms) on this VM
// overslept 0.44-0.75 ms on average (the thread's wake-up after the
// timer), so the ideal of L / 50 ms was out of reach of any queue: the job
// sleeps to 1 ms before its end and waits out the rest by yielding.
// job_ms_mean in the report says how long the jobs really took.
void run_job(int ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  std::this_thread::sleep_until(end - std::chrono::milliseconds(1));
  while (std::chrono::steady_clock::now() < end) std::this_thread::yield();
}

void limited(const Args &a) {
  Conn c;
  fresh(c);
  c.exec("SELECT zizq.define_budget('limit', $1::int, 'while_in_flight')", {std::to_string(a.limit)});
  enqueue_jobs(c, a.n, "limited", "'[{\"key\": \"limit\"}]'::jsonb");
  std::atomic<int> running{0}, peak{0}, done{0};
  std::mutex times_lock;
  std::vector<double> dispatched, completing, job_ms;  // job_ms: how long the client's sleep really took
  FinishLine finish;
  double start = timed_workers(a.workers, [&](Conn &wc) {
    while (done.load() < a.n) {
      auto r = call(wc, kDequeueOne, {"limited", "200 ms"});
      if (r.rows() == 0) continue;
      {
        std::lock_guard<std::mutex> g(times_lock);
        dispatched.push_back(now_s());
      }
      int now = ++running;
      int seen = peak.load();
      while (now > seen && !peak.compare_exchange_weak(seen, now)) {
      }
      double began = now_s();
      run_job(a.job_ms);
      --running;
      {
        std::lock_guard<std::mutex> g(times_lock);
        completing.push_back(now_s());
        job_ms.push_back(1000 * (completing.back() - began));
      }
      call(wc, kCompleteOne, {r.get(0, 0)});
      if (++done == a.n) finish.cross();
    }
  });
  double s = finish.at() - start;
  double ideal = 1000.0 * a.limit / a.job_ms;
  std::vector<double> gaps = handoff_gaps(dispatched, completing, a.limit);
  report(a, "while_in_flight " + std::to_string(a.limit) + ", jobs of " + std::to_string(a.job_ms) + " ms, " +
                std::to_string(a.workers) + " workers",
         a.n / s, "jobs/s",
         {{"ideal", fmt("%.1f", ideal)},
          {"max_concurrency", std::to_string(peak.load())},
          {"n", std::to_string(a.n)},
          {"first_dispatch_ms", fmt("%.3f", dispatched.empty() ? 0.0 : 1000 * (dispatched.front() - start))},
          {"handoff_ms", latency_json(gaps)},
          {"handoff_mean_ms", fmt("%.3f", mean(gaps))},
          {"job_ms_mean", fmt("%.3f", mean(job_ms))}});
}

void rate(const Args &a) {
  Conn c;
  fresh(c);
  c.exec("SELECT zizq.define_budget('rate', $1::int, 'time_based', duration => '1 second', burst => 1)",
         {std::to_string(static_cast<int>(a.rate))});
  // Enough jobs for the window and a second more: the budget, not the
  // backlog, sets the pace throughout.
  size_t n = static_cast<size_t>(a.rate * (a.seconds + 1)) + 100;
  enqueue_jobs(c, static_cast<int>(n), "rate", "'[{\"key\": \"rate\"}]'::jsonb");
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<double> times;
  timed_workers(a.workers, [&](Conn &wc) {
    while (!stop.load()) {
      double t = run_one(wc, "rate", "100 ms");
      if (t < 0) continue;
      std::lock_guard<std::mutex> lock(mu);
      times.push_back(t);
      if (t - times.front() >= a.seconds + 0.5 || times.size() == n) stop = true;
    }
  });
  // The rate over the steady part: from the first dispatch, `seconds` long.
  std::sort(times.begin(), times.end());
  double t0 = times.front();
  long in_window = std::count_if(times.begin(), times.end(), [&](double t) { return t >= t0 && t < t0 + a.seconds; });
  double measured = in_window / a.seconds;
  report(a, "time_based " + fmt("%.0f", a.rate) + "/s, burst 1, " + fmt("%.0f", a.seconds) + " s, " +
                std::to_string(a.workers) + " workers",
         measured, "jobs/s", {{"target", fmt("%.1f", a.rate)}, {"error_pct", fmt("%.2f", (measured / a.rate - 1) * 100)}});
}

void refill(const Args &a) {
  Conn c;
  fresh(c);
  // One token every 20 ms, burst 1; workers always waiting. For each
  // hand-off after the first: from the instant its token came due to the
  // return of the worker's dequeue. Both on CLOCK_MONOTONIC, the clock of
  // the server's token arithmetic. A token's due instant follows the
  // budget's rule: 20 ms after the previous one's, or after the previous
  // hand-off when that one came later than the grace the budget forgives
  // (the drip restarts from that debit).
  c.exec("SELECT zizq.define_budget('refill', 50, 'time_based', duration => '1 second', burst => 1)");
  const double interval_s = 0.020;
  double grace_s = std::stod(c.exec("SELECT extract(epoch FROM current_setting('zizq.dispatch_grace')::interval)::text").get(0, 0));
  int n = std::min(a.n, 300);
  enqueue_jobs(c, n, "refill", "'[{\"key\": \"refill\"}]'::jsonb");
  std::mutex mu;
  std::vector<double> times;
  std::atomic<int> done{0};
  // The machine's own wake-up delay, measured meanwhile: how much later than
  // asked a bare 20 ms sleep of this client ends. Every hand-off here needs
  // such a wake (the dispatcher's at the due instant), so its tail bounds
  // what the hand-offs' tail can be on this machine.
  std::vector<double> oversleep_ms;
  std::thread sleeper([&] {
    while (done.load() < n) {
      double t0 = now_s();
      std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(interval_s * 1e6)));
      oversleep_ms.push_back(1000 * (now_s() - t0 - interval_s));
    }
  });
  run_threads(4, [&](int) {
    Conn wc;
    while (done.load() < n) {
      double t = run_one(wc, "refill", "200 ms");
      if (t < 0) continue;
      std::lock_guard<std::mutex> lock(mu);
      times.push_back(t);
      ++done;
    }
  });
  sleeper.join();
  std::sort(times.begin(), times.end());
  // The drip's phase: the earliest of the first hand-offs against a 20 ms
  // grid (the very first returns late, after its backend's first plans).
  double phase = times[1] - interval_s;
  for (size_t k = 1; k < std::min<size_t>(times.size(), 30); ++k) phase = std::min(phase, times[k] - k * interval_s);
  std::vector<double> ms;
  double due = phase + interval_s;
  for (size_t k = 1; k < times.size(); ++k) {
    double late = times[k] - due;
    if (late < 0) {  // came due earlier than the grid said: follow it
      due = times[k];
      late = 0;
    }
    ms.push_back(late * 1000);
    due = (late <= grace_s ? due : times[k]) + interval_s;
  }
  report(a, "time_based 50/s burst 1, 4 workers blocked in dequeue(wait): token due -> dequeue returned",
         percentile(ms, 99), "ms p99",
         {{"latency_ms", latency_json(ms)}, {"sleep_oversleep_ms", latency_json(oversleep_ms)}});
}

}  // namespace

int main(int argc, char **argv) {
  const std::map<std::string, std::function<void(const Args &)>> scenarios = {
      {"enqueue_single", enqueue_single},
      {"enqueue_batch", enqueue_batch},
      {"drain",
       [](const Args &a) {
         drain(a, a.batch, "NULL", std::to_string(a.workers) + " workers x batch " + std::to_string(a.batch) + ", bulk complete");
       }},
      {"roundtrip",
       [](const Args &a) { drain(a, 1, "NULL", std::to_string(a.workers) + " workers, dequeue 1 + complete 1"); }},
      {"latency", latency},
      {"steady", steady},
      {"drain_wif", budgeted_drain},
      {"drain_tb", budgeted_drain},
      {"drain_mixed", budgeted_drain},
      {"drain_many", drain_many},
      {"parked", parked},
      {"retained", retained},
      {"limited", limited},
      {"rate", rate},
      {"refill", refill},
      {"bare_roundtrip", bare_roundtrip},
      {"bare_enqueue_single", bare_enqueue_single},
  };
  auto known = argc >= 2 ? scenarios.find(argv[1]) : scenarios.end();
  if (known == scenarios.end()) {
    std::fprintf(stderr, "usage: zizq_bench <scenario> [--n N] [--workers W] [--producers P] [--batch B] [--seconds S]\n"
                         "                  [--job-ms MS] [--limit L] [--rate R] [--budgets K] [--parked P]\n"
                         "                  [--statements prepared|simple] [--hold-snapshot on|off]\n"
                         "scenarios:");
    for (const auto &kv : scenarios) std::fprintf(stderr, " %s", kv.first.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  Args a;
  a.scenario = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    double v = std::atof(argv[i + 1]);
    if (k == "--statements") {
      std::string mode = argv[i + 1];
      if (mode != "prepared" && mode != "simple") {
        std::fprintf(stderr, "--statements takes prepared or simple, not %s\n", mode.c_str());
        return 2;
      }
      prepared_statements = mode == "prepared";
    } else if (k == "--hold-snapshot") {
      std::string mode = argv[i + 1];
      if (mode != "on" && mode != "off") {
        std::fprintf(stderr, "--hold-snapshot takes on or off, not %s\n", mode.c_str());
        return 2;
      }
      a.hold_snapshot = mode == "on";
    } else if (k == "--n") a.n = static_cast<int>(v);
    else if (k == "--workers") a.workers = static_cast<int>(v);
    else if (k == "--producers") a.producers = static_cast<int>(v);
    else if (k == "--batch") a.batch = static_cast<int>(v);
    else if (k == "--seconds") a.seconds = v;
    else if (k == "--job-ms") a.job_ms = static_cast<int>(v);
    else if (k == "--limit") a.limit = static_cast<int>(v);
    else if (k == "--rate") a.rate = v;
    else if (k == "--budgets") a.budgets = static_cast<int>(v);
    else if (k == "--parked") a.parked = static_cast<int>(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (a.hold_snapshot && a.scenario != "steady") {
    std::fprintf(stderr, "--hold-snapshot is for the steady scenario only\n");
    return 2;
  }
  try {
    known->second(a);
  } catch (const std::exception &e) {
    std::string message = e.what();  // as a JSON string: no quotes, backslashes or newlines
    for (char &ch : message)
      if (ch == '"' || ch == '\\' || ch == '\n') ch = ' ';
    std::printf("{\"system\":\"zizq\",\"scenario\":\"%s\",\"error\":\"%s\"}\n", a.scenario.c_str(), message.c_str());
    return 1;
  }
  return 0;
}
