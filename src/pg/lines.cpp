// zizq boundary: budget lines (see lines.hpp).
#include "pg/lines.hpp"

#include "pg/spi.hpp"
#include "pg/xact.hpp"

namespace zizq::pg {
namespace {

SPIPlanPtr ahead_plans[core::kMaxBindings] = {nullptr, nullptr, nullptr, nullptr};

SPIPlanPtr ahead_plan(int k) {
  static const char *sql[core::kMaxBindings] = {
      "SELECT 1 FROM zizq._jobs WHERE budget_ids[1] = $1 AND queue = $2 AND status = 'ready' AND parked "
      "AND (priority, id) < ($3, $4) LIMIT 1",
      "SELECT 1 FROM zizq._jobs WHERE budget_ids[2] = $1 AND queue = $2 AND status = 'ready' AND parked "
      "AND cardinality(budget_ids) >= 2 AND (priority, id) < ($3, $4) LIMIT 1",
      "SELECT 1 FROM zizq._jobs WHERE budget_ids[3] = $1 AND queue = $2 AND status = 'ready' AND parked "
      "AND cardinality(budget_ids) >= 3 AND (priority, id) < ($3, $4) LIMIT 1",
      "SELECT 1 FROM zizq._jobs WHERE budget_ids[4] = $1 AND queue = $2 AND status = 'ready' AND parked "
      "AND cardinality(budget_ids) >= 4 AND (priority, id) < ($3, $4) LIMIT 1",
  };
  return prepared(ahead_plans[k], sql[k], {INT4OID, TEXTOID, INT4OID, INT8OID});
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
    Datum args[4] = {Int32GetDatum(budget), CStringGetTextDatum(queue), Int32GetDatum(priority), Int64GetDatum(id)};
    if (run_plan(ahead_plan(k), args, nullptr, false, 1) > 0) return true;
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
