// zizq transactional shared memory.
//
// Shared memory is not MVCC, so every change that mirrors a table change is
// recorded here and settled by the transaction's outcome:
//   - done now, undone on (sub)transaction abort: token debits of a dequeue,
//     parked-count raises, budgets created in shared memory;
//   - done at commit only: releases of in-flight cost, parked-count drops,
//     policy changes, budget removals, wake-ups of workers and dispatcher.
// So the shared state is always conservative: a limit is never exceeded by a
// transaction that has not committed, and nothing is released early.
//
// The records live in TopTransactionContext. Callers reserve space before
// changing shared memory (reserve_ops), so that recording never fails after
// the change is made.
#pragma once

#include "core/policy.hpp"
#include "core/scan_floor.hpp"

#include "pg/pg.hpp"

namespace zizq::pg {

struct ClaimedJob;  // claims.hpp

void register_xact_callbacks();

// dequeue.cpp: disarms what its take statements' SQL functions read
// (zizq._paid_at, zizq._claim_paid) when the (sub)transaction it was armed
// in aborts (at nest level `level` or above it), so that no error can
// leave it armed for a later call.
void abort_take_statements(int level);

// Ensures the next `n` record_* calls cannot fail (allocates now).
void reserve_ops(int n);

// Done now; undone on abort.
void record_debit(int32 budget, int32 cost);
// In-flight cost added for a job written around zizq's calls: taken off
// again (no token refunded) if the transaction rolls back.
void record_in_flight_charge(int32 budget, int32 cost);
// Refunds a recorded debit now (the job it paid for went to another worker)
// and forgets the record.
void refund_debit_now(int32 budget, int32 cost);
void record_parked_raise(int32 budget, int position);
void record_budget_created(int32 budget);
// Rows locked by this transaction become ready again if it aborts: wake
// workers that skipped them meanwhile.
void record_wake_on_abort(uint32 queue_hash, int jobs);

// Dropped when the (sub)transaction ends, committed or not; one that ends
// without its job taken (an abort) lowers the queue's floor to the job
// (claims.hpp, release_claimed_jobs).
void record_claim(int64 job_id, uint32 queue_hash, int32 priority);
// Forgets a recorded claim whose job was not taken (another worker got it,
// the statement skipped it) and says which job it was, for the caller to
// release (dequeue.cpp, release_dropped_claims). False when not recorded.
bool forget_claim(int64 job_id, ClaimedJob *job);

// Done at commit.
void at_commit_release(int32 budget, int32 cost);
void at_commit_parked_drop(int32 budget, int position);
void at_commit_policy(int32 budget, const core::Policy &policy);
void at_commit_drop_budget(int32 budget);
// A budget deleted earlier in this transaction is inserted again (same id):
// its drop at commit is called off. Returns whether there was one.
bool cancel_pending_drop(int32 budget);
void at_commit_reset_budgets();
// At commit, no job is in flight, parked or offered any more (TRUNCATE
// zizq._jobs): in-flight costs and parked counts go to 0, time_based
// buckets keep their tokens.
void at_commit_clear_job_state();
void at_commit_dirty(int32 budget);
// A transaction whose WAL-logged changes were all made by zizq calls of
// these kinds needs less of its commit (see xact.cpp, "commits whose flush
// can wait"): Volatile (an unleased dequeue) no flush, Durable (complete, a
// leased dequeue) a flush after its wake-ups rather than before.
enum class OwnChange { Volatile, Durable };
// Called before such a call changes anything: whether the transaction's
// WAL-logged changes so far were all noted by note_own_change.
bool only_own_changes_so_far();
void note_own_change(bool only_own_before, OwnChange need);
void at_commit_wake_queue(uint32 queue_hash, int jobs);
// A ready job of `queue` (priority, id), not parked: the queue's scan floor
// of its kind is lowered after the commit, before workers are woken
// (floors.hpp).
void at_commit_lower_floor(const char *queue, core::FloorKind kind, int32 priority, int64 job_id);
// Every scan floor goes after the commit (rows written around zizq).
void at_commit_clear_floors();
// LISTEN zizq listeners of this queue are notified (by the dispatcher).
void at_commit_notify(const char *queue);
void at_commit_wake_dispatcher();
// The dispatcher looks for in-flight jobs of sessions that no longer exist.
void at_commit_sweep_sessions();
void at_commit_wake_dispatcher_before(TimestampTz when);

}  // namespace zizq::pg
