// zizq tests: the history of job status changes, recorded at the server by
// a test-only trigger on zizq._jobs, with the budgets each change concerns.
// Times are the server's clock at the UPDATE or DELETE, or for a dispatch
// when its budgets paid; only committed changes are kept (a rolled-back
// dequeue leaves no trace).
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "../../support/pgclient.hpp"

namespace zizq::test {

struct Change {
  int64_t job;
  std::string from, to;  // to = "gone" for a delete
  double at;             // seconds since the epoch (server clock)
  std::vector<int32_t> budgets, costs;
};

inline void install_history(client::Conn &c) {
  // One implicit transaction: SET LOCAL quiets the DROP ... IF EXISTS notices.
  c.exec(R"(
    SET LOCAL client_min_messages = warning;
    CREATE TABLE IF NOT EXISTS public.zizq_test_history (
      job bigint, from_status text, to_status text, at timestamptz DEFAULT clock_timestamp(),
      budget_ids integer[], budget_costs integer[]);
    CREATE OR REPLACE FUNCTION public.zizq_test_record() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' THEN
        INSERT INTO public.zizq_test_history (job, from_status, to_status, budget_ids, budget_costs)
        VALUES (OLD.id, OLD.status, 'gone', OLD.budget_ids, OLD.budget_costs);
      ELSIF OLD.status IS DISTINCT FROM NEW.status THEN
        -- A dispatch counts from when its budgets paid (dequeued_at), which a
        -- dequeue taking several jobs may precede its UPDATE by a while.
        INSERT INTO public.zizq_test_history (job, from_status, to_status, at, budget_ids, budget_costs)
        VALUES (NEW.id, OLD.status, NEW.status,
                CASE WHEN NEW.status = 'in_flight' THEN NEW.dequeued_at ELSE clock_timestamp() END,
                OLD.budget_ids, OLD.budget_costs);
      END IF;
      RETURN NULL;
    END $$;
    DROP TRIGGER IF EXISTS zizq_test_history ON zizq._jobs;
    CREATE TRIGGER zizq_test_history AFTER UPDATE OR DELETE ON zizq._jobs
      FOR EACH ROW EXECUTE FUNCTION public.zizq_test_record();
    TRUNCATE public.zizq_test_history;)");
}

inline void remove_history(client::Conn &c) {
  c.exec(R"(
    DROP TRIGGER IF EXISTS zizq_test_history ON zizq._jobs;
    DROP FUNCTION IF EXISTS public.zizq_test_record();
    DROP TABLE IF EXISTS public.zizq_test_history;)");
}

// Installs the history trigger for its lifetime. The trigger would
// otherwise stay on the cluster after the test and slow down whatever runs
// there next (a benchmark on a developer's cluster paid ~25 % of a drain's
// CPU for it), so it is removed on every way out, failures included.
class HistoryRecorder {
 public:
  explicit HistoryRecorder(client::Conn &c) : conn_(c) { install_history(c); }
  ~HistoryRecorder() {
    try {
      remove_history(conn_);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "could not remove the history trigger: %s\n", e.what());
    }
  }
  HistoryRecorder(const HistoryRecorder &) = delete;
  HistoryRecorder &operator=(const HistoryRecorder &) = delete;

 private:
  client::Conn &conn_;
};

inline std::vector<int32_t> int_array(const std::string &text) {
  std::vector<int32_t> out;
  std::string digits;
  for (char ch : text) {
    if ((ch >= '0' && ch <= '9') || ch == '-') {
      digits += ch;
    } else if (!digits.empty()) {
      out.push_back(std::stoi(digits));
      digits.clear();
    }
  }
  if (!digits.empty()) out.push_back(std::stoi(digits));
  return out;
}

inline std::vector<Change> read_history(client::Conn &c) {
  auto r = c.exec(
      "SELECT job, from_status, to_status, extract(epoch FROM at)::float8, COALESCE(budget_ids::text, '{}'), "
      "COALESCE(budget_costs::text, '{}') FROM public.zizq_test_history ORDER BY at, job");
  std::vector<Change> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back(Change{r.num(i, 0), r.get(i, 1), r.get(i, 2), r.real(i, 3), int_array(r.get(i, 4)),
                         int_array(r.get(i, 5))});
  return out;
}

// A job's time in flight: from the change into in_flight to the change out.
struct Flight {
  int64_t job;
  double start, end;  // end = +inf while still in flight
  std::vector<int32_t> budgets, costs;
};

inline std::vector<Flight> flights(const std::vector<Change> &history) {
  std::vector<Flight> out;
  std::map<int64_t, size_t> open;
  for (const Change &c : history) {
    if (c.to == "in_flight") {
      open[c.job] = out.size();
      out.push_back(Flight{c.job, c.at, 1e300, c.budgets, c.costs});
    } else if (c.from == "in_flight") {
      auto it = open.find(c.job);
      if (it != open.end()) {
        out[it->second].end = c.at;
        open.erase(it);
      }
    }
  }
  return out;
}

}  // namespace zizq::test
