// zizq boundary: budget lines — the parked jobs of a budget in one queue, in
// dispatch order — as enqueue, dequeue and the dispatcher ask about them.
//
// A parked job sits in index zizq._jobs_line_<k> under the budget it names
// at binding position k; BudgetEntry.parked[k] bounds their number, so a
// zero count answers without a query.
#pragma once

#include "core/bindings.hpp"

#include "pg/pg.hpp"
#include "pg/shmem.hpp"

namespace zizq::pg {

// Copies a budget's parked counts (budget_lock is taken here); all zero when
// the budget is unknown.
void parked_counts(int32 budget, int32 out[core::kMaxBindings]);

bool any_parked(const int32 counts[core::kMaxBindings]);

// Is a parked job of `budget` in `queue` strictly ahead of (priority, id)?
// id = INT64_MAX asks about a job not inserted yet (it will be the newest).
// Needs an SPI connection.
bool parked_ahead(int32 budget, const int32 counts[core::kMaxBindings], const char *queue, int32 priority,
                  int64 id);

// Records that `job_bindings` just parked (rows written by this
// transaction): raises their counts now, undone on abort, and has the
// dispatcher evaluate those budgets at commit.
void note_parked(const int32 *budgets, int n);

}  // namespace zizq::pg
