// zizq boundary: budget lines (see lines.hpp).
#include "pg/lines.hpp"

#include "pg/spi.hpp"
#include "pg/xact.hpp"

namespace zizq::pg {
namespace {

SPIPlanPtr head_plans[core::kMaxBindings] = {nullptr, nullptr, nullptr, nullptr};

// The first parked job of a budget's line in a queue: (priority, id) of the
// line's k-th index. Whether a job has parked jobs ahead is then one
// comparison. A row comparison `(priority, id) < ($3, $4)` in the statement
// asked the same, but btree stops a scan on a row comparison only when its
// first column decides: for a job at the head of its line, every entry of
// the same priority failed on `id` and the scan went on to the end of the
// line (182 buffers for a line of 30,000 parked jobs, instead of 3).
SPIPlanPtr head_plan(int k) {
  static const char *sql[core::kMaxBindings] = {
      "SELECT priority, id FROM zizq._jobs WHERE budget_ids[1] = $1 AND queue = $2 AND status = 'ready' AND parked "
      "ORDER BY priority, id LIMIT 1",
      "SELECT priority, id FROM zizq._jobs WHERE budget_ids[2] = $1 AND queue = $2 AND status = 'ready' AND parked "
      "AND cardinality(budget_ids) >= 2 ORDER BY priority, id LIMIT 1",
      "SELECT priority, id FROM zizq._jobs WHERE budget_ids[3] = $1 AND queue = $2 AND status = 'ready' AND parked "
      "AND cardinality(budget_ids) >= 3 ORDER BY priority, id LIMIT 1",
      "SELECT priority, id FROM zizq._jobs WHERE budget_ids[4] = $1 AND queue = $2 AND status = 'ready' AND parked "
      "AND cardinality(budget_ids) >= 4 ORDER BY priority, id LIMIT 1",
  };
  return prepared(head_plans[k], sql[k], {INT4OID, TEXTOID});
}

}  // namespace

void parked_counts(int32 budget, int32 out[core::kMaxBindings]) {
  LWLockAcquire(shared->budget_lock, LW_SHARED);
  BudgetEntry *b = find_budget(budget);
  for (int k = 0; k < core::kMaxBindings; ++k) out[k] = b ? b->parked[k] : 0;
  LWLockRelease(shared->budget_lock);
}

bool any_parked(const int32 counts[core::kMaxBindings]) {
  for (int k = 0; k < core::kMaxBindings; ++k)
    if (counts[k] > 0) return true;
  return false;
}

bool parked_ahead(int32 budget, const int32 counts[core::kMaxBindings], const char *queue, int32 priority,
                  int64 id) {
  for (int k = 0; k < core::kMaxBindings; ++k) {
    if (counts[k] <= 0) continue;
    Datum args[2] = {Int32GetDatum(budget), CStringGetTextDatum(queue)};
    if (run_plan(head_plan(k), args, nullptr, false, 1) == 0) continue;
    int32 head_priority = column_int32(0, 1);
    int64 head_id = column_int64(0, 2);
    if (head_priority < priority || (head_priority == priority && head_id < id)) return true;
  }
  return false;
}

void note_parked(const int32 *budgets, int n) {
  reserve_ops(2 * n);
  LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
  for (int k = 0; k < n; ++k) {
    if (shared->loading) {
      log_replay(ReplayEntry::ParkedRaise, budgets[k], k, nullptr);
      record_parked_raise(budgets[k], k);  // undone if this rolls back after the load
      continue;
    }
    BudgetEntry *b = shared->budgets_loaded ? find_budget(budgets[k]) : nullptr;
    if (b == nullptr) continue;
    b->parked[k]++;
    b->park_version++;
    record_parked_raise(budgets[k], k);
  }
  LWLockRelease(shared->budget_lock);
  for (int k = 0; k < n; ++k) at_commit_dirty(budgets[k]);
}

}  // namespace zizq::pg
