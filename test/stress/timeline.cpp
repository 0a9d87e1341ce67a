// zizq timeline: the budgets guide's examples (shared/seeds) replayed ten
// times faster, printed as a timeline a person can read and, with --check,
// asserted from the dispatch times the server recorded:
//   while_in_flight 5 with jobs of 200 ms runs exactly 5 at a time;
//   time_based 6 per 600 ms gives the burst of 6, then one every 100 ms;
//   with burst 1, one every 100 ms from the start.
// With --json, stdout carries one JSON line per example instead of the
// printed timeline (the budget, and each job's dispatch and completion in
// seconds after the first dispatch, server clock); the --check lines then go
// to stderr. bench/compare draws its pictures from these lines.
//
// Usage: timeline [--check] [--quiet] [--json]   (connection from PGHOST/PGPORT/...)
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "history.hpp"

using zizq::client::Conn;
using zizq::client::now_s;

namespace {

bool quiet = false;
bool json = false;
int failures = 0;

// The check lines: on stdout, or on stderr when stdout carries JSON.
FILE *report_out() { return json ? stderr : stdout; }

void expect(bool ok, const std::string &what) {
  if (!ok) ++failures;
  std::fprintf(report_out(), "  %s %s\n", ok ? "ok  " : "FAIL", what.c_str());
}

// Workers take jobs of `queue` one at a time, "work" job_ms, complete them.
// They connect, warm up, and wait in dequeue(wait) before the jobs are
// enqueued, as the workers of a running pool would.
//
// Warming up: each worker first takes and completes one budgeted job of
// its own. A backend's first budgeted dequeue costs it ~6 ms of one-off
// work (planning, relation caches, first-touch memory) that a pool pays
// once at start; paid in the example's first round by five fresh backends
// at once on 2 CPUs, it made that round ~20 ms late and the example about
// connection start-up rather than the budget. The warm-up jobs are done
// before `enqueue`, which begins the history the checks read.
void run_workers(Conn &c, const std::string &queue, int workers, int jobs, int job_ms,
                 const std::function<void()> &enqueue) {
  c.exec("SELECT zizq.define_budget('timeline-warm-up', 1000, 'while_in_flight', replace => true)");
  c.exec("SELECT count(*) FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', 'warm-up-' || w, "
         "'type', 'warm-up', 'budgets', jsonb_build_array(jsonb_build_object('key', 'timeline-warm-up')))) "
         "FROM generate_series(1, $1::int) AS w))",
         {std::to_string(workers)});
  std::atomic<int> done{0}, ready{0}, next_warm_up{1};
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&] {
      Conn c;
      std::string own = "warm-up-" + std::to_string(next_warm_up++);
      c.exec("SELECT zizq.complete(id) FROM zizq.dequeue(ARRAY[$1], 1, wait => '10 s')", {own});
      ++ready;
      while (done.load() < jobs) {
        auto r = c.exec("SELECT id FROM zizq.dequeue(ARRAY[$1], 1, wait => '500 ms')", {queue});
        if (r.rows() == 0) continue;
        std::this_thread::sleep_for(std::chrono::milliseconds(job_ms));
        c.exec("SELECT zizq.complete($1::bigint)", {r.get(0, 0)});
        ++done;
      }
    });
  while (ready.load() < workers) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // all in dequeue(wait)
  enqueue();
  for (auto &t : threads) t.join();
}

struct Run {
  std::vector<zizq::test::Flight> flights;
  double t0;
};

Run replay(Conn &c, const std::string &queue, int jobs, int job_ms, const std::string &budget) {
  zizq::test::HistoryRecorder recorder(c);
  run_workers(c, queue, 16, jobs, job_ms, [&] {
    c.exec("TRUNCATE public.zizq_test_history");  // the warm-up's
    c.exec("SELECT count(*) FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', $1::text, "
           "'type', 'example', 'budgets', jsonb_build_array(jsonb_build_object('key', $2::text)))) "
           "FROM generate_series(1, $3::int)))",
           {queue, budget, std::to_string(jobs)});
  });
  Run run{zizq::test::flights(zizq::test::read_history(c)), 0};
  std::sort(run.flights.begin(), run.flights.end(),
            [](const auto &a, const auto &b) { return a.start < b.start; });
  run.t0 = run.flights.empty() ? 0 : run.flights.front().start;
  return run;
}

int running_at(const Run &run, double t) {
  int n = 0;
  for (const auto &f : run.flights) n += f.start <= t && t < f.end;
  return n;
}

void print_timeline(const std::string &title, const Run &run) {
  if (quiet) return;
  std::printf("\n%s\n", title.c_str());
  // Merge starts and ends into one ordered list of moments.
  struct Moment {
    double t;
    bool start;
    int64_t job;
  };
  std::vector<Moment> moments;
  for (const auto &f : run.flights) {
    moments.push_back({f.start, true, f.job});
    moments.push_back({f.end, false, f.job});
  }
  std::sort(moments.begin(), moments.end(), [](const Moment &a, const Moment &b) {
    return a.t != b.t ? a.t < b.t : a.start < b.start;
  });
  int running = 0;
  for (const auto &m : moments) {
    running += m.start ? 1 : -1;
    if (m.start)
      std::printf("  %+8.3fs  job %-3lld starts     running: %d %s\n", m.t - run.t0, static_cast<long long>(m.job),
                  running, std::string(running, '#').c_str());
    else
      std::printf("  %+8.3fs  job %-3lld completes  running: %d %s\n", m.t - run.t0, static_cast<long long>(m.job),
                  running, std::string(running, '#').c_str());
  }
}

// One JSON line for an example: what the budget is, and per job (in
// dispatch order) its dispatch and completion, seconds after t0. `budget` is
// a JSON object written by the caller.
void print_json(const std::string &example, const std::string &title, const std::string &budget, int jobs, int job_ms,
                const Run &run) {
  if (!json) return;
  auto list = [&](bool starts) {
    std::string out = "[";
    char buf[32];
    for (size_t i = 0; i < run.flights.size(); ++i) {
      double t = starts ? run.flights[i].start : run.flights[i].end;
      if (t > 1e299)
        std::snprintf(buf, sizeof buf, "null");
      else
        std::snprintf(buf, sizeof buf, "%.6f", t - run.t0);
      out += (i ? "," : "") + std::string(buf);
    }
    return out + "]";
  };
  std::printf("{\"example\":\"%s\",\"title\":\"%s\",\"budget\":%s,\"jobs\":%d,\"job_ms\":%d,"
              "\"t0_epoch\":%.6f,\"dispatch_s\":%s,\"complete_s\":%s}\n",
              example.c_str(), title.c_str(), budget.c_str(), jobs, job_ms, run.t0, list(true).c_str(),
              list(false).c_str());
  std::fflush(stdout);
}

void check_concurrency(const Run &run, int limit, int jobs, int job_ms) {
  int peak = 0;
  for (const auto &f : run.flights) peak = std::max(peak, running_at(run, f.start));
  double span = run.flights.back().end - run.t0;
  double ideal = std::ceil(double(jobs) / limit) * job_ms / 1000.0;
  expect(peak == limit, "at most " + std::to_string(limit) + " in flight, and " + std::to_string(limit) +
                            " reached (peak " + std::to_string(peak) + ")");
  char buf[128];
  std::snprintf(buf, sizeof buf, "%d jobs done in %.3f s (ideal %.3f s)", jobs, span, ideal);
  expect(span < ideal * 1.15, buf);
}

// Hand-offs trail their due instants by the wake-up and the dequeue itself
// (a few ms; tens under load on 2 cores); the burst is as many hand-offs as
// workers can do back to back. Times are those of the dispatching UPDATEs,
// which follow the token debits by a variable delay: a dispatch may look
// early by up to one token (the "+ 1" of SPEC's rate bound), never more.
void check_pacing(const Run &run, int burst, double interval_s) {
  for (size_t k = 0; k < run.flights.size(); ++k) {
    double at = run.flights[k].start - run.t0;
    bool in_burst = k < static_cast<size_t>(burst);
    double ideal = in_burst ? 0 : (k - burst + 1) * interval_s;
    double late = in_burst ? 0.060 : 0.030;
    double early = in_burst ? 0 : interval_s;
    char buf[128];
    std::snprintf(buf, sizeof buf, "dispatch %2zu at %+.3f s (ideal %+.3f s)", k + 1, at, ideal);
    expect(at >= ideal - early && at <= ideal + late, buf);
  }
}

}  // namespace

int main(int argc, char **argv) {
  bool check = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--check") == 0) check = true;
    if (std::strcmp(argv[i], "--quiet") == 0) quiet = true;
    if (std::strcmp(argv[i], "--json") == 0) json = quiet = true;
  }
  try {
    Conn c;
    c.exec("SELECT zizq.reset()");

    c.exec("SELECT zizq.define_budget('cpu-intensive', 5, 'while_in_flight')");
    Run conc = replay(c, "example", 20, 200, "cpu-intensive");
    print_timeline("while_in_flight 5, jobs of 200 ms (the guide's 2 s jobs, 10x faster):", conc);
    print_json("while_in_flight", "while_in_flight 5, jobs of 200 ms",
               "{\"key\":\"cpu-intensive\",\"kind\":\"while_in_flight\",\"allocation\":5}", 20, 200, conc);
    if (check) check_concurrency(conc, 5, 20, 200);

    c.exec("SELECT zizq.define_budget('rate', 6, 'time_based', duration => '600 ms')");
    Run rate = replay(c, "example2", 12, 20, "rate");
    print_timeline("time_based 6 per 600 ms, jobs of 20 ms (the guide's 6/minute, 100x faster): "
                   "the burst of 6, then one every 100 ms:",
                   rate);
    print_json("time_based", "time_based 6 per 600 ms (burst 6), jobs of 20 ms",
               "{\"key\":\"rate\",\"kind\":\"time_based\",\"allocation\":6,\"duration_ms\":600,\"burst\":6}", 12, 20,
               rate);
    if (check) check_pacing(rate, 6, 0.1);

    c.exec("SELECT zizq.define_budget('paced', 6, 'time_based', duration => '600 ms', burst => 1)");
    Run paced = replay(c, "example3", 8, 20, "paced");
    print_timeline("time_based 6 per 600 ms with burst 1: one every 100 ms from the start:", paced);
    print_json("time_based_burst1", "time_based 6 per 600 ms, burst 1, jobs of 20 ms",
               "{\"key\":\"paced\",\"kind\":\"time_based\",\"allocation\":6,\"duration_ms\":600,\"burst\":1}", 8, 20,
               paced);
    if (check) check_pacing(paced, 1, 0.1);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "timeline: %s\n", e.what());
    return 2;
  }
  if (check) std::fprintf(report_out(), "%s\n", failures == 0 ? "timeline: all checks passed" : "timeline: FAILED");
  return failures == 0 ? 0 : 1;
}
