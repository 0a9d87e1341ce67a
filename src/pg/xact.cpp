// zizq transactional shared memory (see xact.hpp).
#include "pg/xact.hpp"

#include "core/token_bucket.hpp"

#include "pg/claims.hpp"
#include "pg/floors.hpp"
#include "pg/job_insert.hpp"
#include "pg/shmem.hpp"

extern "C" {
#include "access/xlog.h"
#include "executor/instrument.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "utils/guc.h"
}

namespace zizq::pg {
namespace {

enum class Kind : uint8 {
  // undone on abort
  Debit,
  InFlightCharge,  // in-flight cost of a job written around zizq's calls
  ParkedRaise,
  BudgetCreated,
  WakeOnAbort,
  Claim,  // released at the end, whatever the outcome
  // done at commit
  Release,
  ParkedDrop,
  Policy,
  DropBudget,
  ResetBudgets,
  ClearJobState,
  Dirty,
  LowerFloor,
  ClearFloors,
  WakeQueue,
  WakeDispatcher,
  WakeDispatcherBefore,
  SweepSessions,
  Notify,
  Consumed,
};

struct Op {
  Kind kind;
  int nest;
  int32 budget;
  int32 value;  // cost, position or job count
  uint32 hash;
  int64 job;    // Claim, LowerFloor (value: the job's priority; hash: its queue's)
  const char *queue;  // Notify, LowerFloor (TopTransactionContext)
  core::FloorKind floor;  // LowerFloor
  TimestampTz when;
  core::Policy policy;
};


Op *ops = nullptr;
int nops = 0;
int capacity = 0;
// Ops [0, logged_upto) went to the replay log at PRE_COMMIT, for a load
// under way: commit_all must not apply them as well. (Another extension's
// pre-commit callback, run after zizq's, may still add ops after them.)
int logged_upto = 0;

void forget_commit_mode();  // below, with the commit modes

// Everything this module keeps for a transaction, once it has ended.
void forget_all() {
  ops = nullptr;  // its memory goes with TopTransactionContext
  nops = 0;
  capacity = 0;
  forget_hidden_ready_jobs();
  forget_readied_jobs();
  end_own_insert();
  end_own_delete();
  end_live_raises();
  forget_commit_mode();
  end_of_transaction_job_inserts();
  logged_upto = 0;
}

Op &push(Kind kind) {
  if (nops >= capacity) reserve_ops(1);
  Op &op = ops[nops++];
  op = Op{};
  op.kind = kind;
  op.nest = GetCurrentTransactionNestLevel();
  return op;
}

ClaimedJob claimed_job(const Op &op) { return ClaimedJob{op.job, op.hash, op.value}; }

// Releases the claims among ops [from, nops): at commit their jobs were
// taken (the statements that claimed them dropped the others); at an abort
// they are ready again.
void release_claims(int from, bool taken) {
  constexpr int kChunk = 256;
  int n = 0;
  ClaimedJob jobs[kChunk];
  for (int i = from; i < nops; ++i) {
    if (ops[i].kind != Kind::Claim) continue;
    jobs[n++] = claimed_job(ops[i]);
    if (n == kChunk) {
      release_claimed_jobs(jobs, n, taken);
      n = 0;
    }
  }
  release_claimed_jobs(jobs, n, taken);
}

bool is_budget_undo(Kind k) {
  return k == Kind::Debit || k == Kind::InFlightCharge || k == Kind::ParkedRaise || k == Kind::BudgetCreated;
}

bool any_parked(const BudgetEntry *b) {
  for (int k = 0; k < core::kMaxBindings; ++k)
    if (b->parked[k] > 0) return true;
  return false;
}

// Gives a debit back (budget_lock held exclusively). Jobs refused while
// these tokens were held may be parked or starved by now: for them a refund
// is a release, and the dispatcher must look. Returns whether it must.
bool refund_locked(BudgetEntry *b, int32 cost, int64 now) {
  core::refund(b->policy, b->tokens, cost, now);
  bool dirtied = any_parked(b) || b->starved;
  if (dirtied) mark_dirty(b);
  return dirtied;
}

// While budgets load, the entries this transaction logged at once (a
// budget created, jobs parked) are replayed if its top-level transaction
// commits, and a rolled-back subtransaction must not count: log their
// opposites, replayed or skipped with them.
void log_compensations(int from) {
  for (int i = nops - 1; i >= from; --i) {
    if (ops[i].kind == Kind::BudgetCreated) log_replay(ReplayEntry::Dropped, ops[i].budget, 0, nullptr);
    if (ops[i].kind == Kind::ParkedRaise) log_replay(ReplayEntry::ParkedDrop, ops[i].budget, ops[i].value, nullptr);
  }
}

// Undoes the budget ops of [from, nops) applied at once (budget_lock held).
void undo_budget_ops(int from, int64 now) {
  for (int i = nops - 1; i >= from; --i) {
    const Op &op = ops[i];
    if (op.kind == Kind::BudgetCreated) {
      remove_budget(op.budget);
      continue;
    }
    BudgetEntry *b = find_budget(op.budget);
    if (b == nullptr) continue;
    if (op.kind == Kind::Debit) {
      refund_locked(b, op.value, now);
    } else if (op.kind == Kind::InFlightCharge) {
      core::release(b->tokens, op.value);
    } else if (op.kind == Kind::ParkedRaise) {
      b->parked[op.value] = ZZ_MAX(0, b->parked[op.value] - 1);
    }
  }
}

// Undoes ops [from, nops) that were applied at once; drops the rest. A
// whole transaction's entries in the replay log need no opposites: it
// aborted, and the replay skips them.
void undo_from(int from, bool subtransaction) {
  bool any_budget_op = false;
  for (int i = from; i < nops; ++i) any_budget_op = any_budget_op || is_budget_undo(ops[i].kind);
  release_claims(from, /*taken=*/false);
  bool dirtied = false;
  if (any_budget_op) {
    // budgets_loaded is read under the lock: a load that ended meanwhile
    // replayed this transaction's entries (it was still running), and they
    // are undone here.
    LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
    uint64 marks_before = shared->dirty_marks;
    if (shared->budgets_loaded)
      undo_budget_ops(from, monotonic_us());
    else if (shared->loading && subtransaction)
      log_compensations(from);
    dirtied = shared->dirty_marks != marks_before;
    LWLockRelease(shared->budget_lock);
  }
  if (dirtied) wake_dispatcher();
  // Rows this transaction had locked are ready again: wake workers that
  // skipped them while they were locked.
  for (int i = from; i < nops; ++i)
    if (ops[i].kind == Kind::WakeOnAbort) wake_waiters(ops[i].hash, ops[i].value);
  nops = from;
}

// While the dispatcher loads budgets, committed changes are logged for it to
// replay rather than applied: at PRE_COMMIT (`at_pre_commit`: the commit may
// yet fail), or at commit when a load began in between.
void log_budget_op(const Op &op, bool at_pre_commit) {
  switch (op.kind) {
    case Kind::Release: log_replay(ReplayEntry::Release, op.budget, op.value, nullptr, at_pre_commit); break;
    case Kind::ParkedDrop: log_replay(ReplayEntry::ParkedDrop, op.budget, op.value, nullptr, at_pre_commit); break;
    case Kind::Policy: log_replay(ReplayEntry::Policy, op.budget, 0, &op.policy, at_pre_commit); break;
    case Kind::DropBudget: log_replay(ReplayEntry::Dropped, op.budget, 0, nullptr, at_pre_commit); break;
    case Kind::ResetBudgets: log_replay(ReplayEntry::Reset, 0, 0, nullptr, at_pre_commit); break;
    case Kind::ClearJobState: shared->replay_overflow = true; break;  // the load starts over, from the tables
    case Kind::Dirty: log_replay(ReplayEntry::Dirty, op.budget, 0, nullptr, at_pre_commit); break;
    default: break;
  }
}

// Standby offers a commit made affordable: a worker of each queue is woken
// straight away (see Offer in shmem.hpp), ahead of the dispatcher.
struct Handoffs {
  int n;
  int32 budgets[8];
  uint32 queues[8];
};

void apply_budget_op(const Op &op, int64 now, Handoffs &handoffs) {
  if (op.kind == Kind::ResetBudgets) {
    reset_budgets_in_place();
    return;
  }
  if (op.kind == Kind::ClearJobState) {
    clear_job_state_in_place();
    return;
  }
  if (op.kind == Kind::DropBudget) {
    remove_budget(op.budget);
    return;
  }
  BudgetEntry *b = find_budget(op.budget);
  if (b == nullptr) return;
  switch (op.kind) {
    case Kind::Release: {
      core::release(b->tokens, op.value);
      bool noted = false;
      for (int i = 0; i < handoffs.n; ++i) noted = noted || handoffs.budgets[i] == b->id;
      const Offer *standby = handoffs.n < 8 && !noted ? affordable_standby(b, now) : nullptr;
      if (standby != nullptr) {
        handoffs.budgets[handoffs.n] = b->id;
        handoffs.queues[handoffs.n++] = standby->queue_hash;
      }
      // The hand-off is a hint: the woken worker may take something else.
      // The dispatcher evaluates the line as before; it replaces offers in
      // one critical section, so the worker never finds the line bare.
      if (b->starved || any_parked(b)) mark_dirty(b);
      break;
    }
    case Kind::ParkedDrop:
      b->parked[op.value] = ZZ_MAX(0, b->parked[op.value] - 1);
      mark_dirty(b);
      break;
    case Kind::Policy:
      core::change_policy(b->policy, op.policy, b->tokens, now);
      b->policy = op.policy;
      mark_dirty(b);
      break;
    case Kind::Dirty:
      mark_dirty(b);
      break;
    default:
      break;
  }
}

// No allocation here: this runs after the commit, where an error cannot
// abort anything.
void lower_committed_floors() {
  constexpr int kChunk = 64;
  const char *queues[kChunk];
  core::FloorKind kinds[kChunk];
  core::JobKey keys[kChunk];
  int n = 0;
  for (int i = 0; i < nops; ++i) {
    if (ops[i].kind == Kind::ClearFloors) {
      clear_all_floors();
      return;
    }
  }
  for (int i = 0; i < nops; ++i) {
    if (ops[i].kind != Kind::LowerFloor) continue;
    queues[n] = ops[i].queue;
    kinds[n] = ops[i].floor;
    keys[n++] = core::JobKey{ops[i].value, ops[i].job};
    if (n == kChunk) {
      lower_floors(queues, kinds, keys, n);
      n = 0;
    }
  }
  lower_floors(queues, kinds, keys, n);
}

bool is_budget_op(Kind k) { return k >= Kind::Release && k <= Kind::Dirty; }

// Before the commit becomes visible: while the dispatcher loads budgets, the
// budget ops go to its replay log now. Deciding at commit left a window: a
// load whose snapshot already saw this commit could finish before
// commit_all ran, which then applied the ops too (a release taken off twice,
// a while_in_flight limit exceeded). Logged now, the entry is replayed only
// if the load's snapshot did not see the commit, and left to this
// transaction (commit_all) if the load finds it still running.
void log_budget_ops_if_loading() {
  // Unlocked first read, to keep budget_lock off every commit. Loading turns
  // on only when shared memory is set up, within CREATE EXTENSION (no other
  // transaction can have ops on tables not yet committed), and after a log
  // overflow; a commit that misses that last turn is logged by commit_all,
  // and the reload waits for every older writer.
  if (!static_cast<volatile Shared *>(shared)->loading) return;
  bool any = false;
  for (int i = 0; i < nops && !any; ++i) any = is_budget_op(ops[i].kind);
  if (!any) return;
  LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
  if (shared->loading) {
    for (int i = 0; i < nops; ++i) log_budget_op(ops[i], /*at_pre_commit=*/true);
    logged_upto = nops;
  }
  LWLockRelease(shared->budget_lock);
}

// A transaction that failed after its PRE_COMMIT: a load may have left it
// the changes it logged, which now never happen.
void drop_deferred() {
  LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
  (void)take_deferred(GetTopTransactionIdIfAny());
  LWLockRelease(shared->budget_lock);
}

void commit_all() {
  bool budget_ops = false, wake_dispatcher_now = false, sweep_sessions = false;
  TimestampTz wake_before = 0;
  for (int i = 0; i < nops; ++i) {
    Kind k = ops[i].kind;
    budget_ops = budget_ops || (is_budget_op(k) && i >= logged_upto);
    wake_dispatcher_now = wake_dispatcher_now || k == Kind::WakeDispatcher || k == Kind::SweepSessions;
    sweep_sessions = sweep_sessions || k == Kind::SweepSessions;
    if (k == Kind::WakeDispatcherBefore && (wake_before == 0 || ops[i].when < wake_before)) wake_before = ops[i].when;
  }
  // Floors first: a worker woken below must scan from the lowered floor.
  lower_committed_floors();
  Handoffs handoffs;
  handoffs.n = 0;
  if (budget_ops || logged_upto > 0) {
    int64 now = monotonic_us();
    LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
    uint64 marks_before = shared->dirty_marks;
    // A load that found this transaction between its PRE_COMMIT and its
    // commit left the changes it had logged to it.
    int from = logged_upto;
    if (logged_upto > 0 && !shared->loading && shared->budgets_loaded && take_deferred(GetTopTransactionIdIfAny()))
      from = 0;
    if (shared->loading) {
      for (int i = logged_upto; i < nops; ++i) log_budget_op(ops[i], /*at_pre_commit=*/false);
    } else if (shared->budgets_loaded) {
      for (int i = from; i < nops; ++i) apply_budget_op(ops[i], now, handoffs);  // budget ops only
    }
    wake_dispatcher_now = wake_dispatcher_now || shared->dirty_marks != marks_before;
    LWLockRelease(shared->budget_lock);
  }
  for (int i = 0; i < handoffs.n; ++i) (void)wake_waiters(handoffs.queues[i], 1);
  for (int i = 0; i < nops; ++i) {
    if (ops[i].kind != Kind::WakeQueue) continue;
    int count = ops[i].value;
    for (int j = i + 1; j < nops; ++j)  // one wake per queue, summing its jobs
      if (ops[j].kind == Kind::WakeQueue && ops[j].hash == ops[i].hash) {
        count += ops[j].value;
        ops[j].kind = Kind::Consumed;
      }
    wake_waiters(ops[i].hash, count);
  }
  for (int i = 0; i < nops; ++i) {
    if (ops[i].kind != Kind::Notify) continue;
    bool seen = false;
    for (int j = 0; j < i && !seen; ++j) seen = ops[j].kind == Kind::Notify && strcmp(ops[j].queue, ops[i].queue) == 0;
    if (!seen) note_notify(ops[i].queue);
  }
  if (sweep_sessions) {
    LWLockAcquire(shared->waiter_lock, LW_EXCLUSIVE);
    shared->sessions_ended = true;
    LWLockRelease(shared->waiter_lock);
  }
  if (wake_dispatcher_now)
    wake_dispatcher();
  else if (wake_before != 0)
    wake_dispatcher_before(wake_before);
}

// ---- commits whose flush can wait ----------------------------------------------
// Two kinds of change made by zizq calls need less of their commit than
// synchronous_commit = on gives every transaction:
//   - Volatile: a dequeue without a lease. Should the server crash before its
//     commit record is flushed, the job is found ready again; the outcome is
//     the same as if it had been flushed, since a crash ends the worker's
//     session and the jobs of ended sessions go back to ready. Such a commit
//     does not wait for the flush at all; its record reaches disk with the
//     next flush (at the latest the worker's complete).
//   - Durable: a complete (or a leased dequeue). Its commit is flushed before
//     the client hears of it, but after the commit is visible and its wake-ups
//     are sent (commit_all): the tokens it gives back reach the next job while
//     its WAL flushes. Anything that sees the commit before the flush ends
//     sees only job states, and anything it writes in turn lies after the
//     commit record in the WAL: a crash loses both or neither. Not done when
//     a synchronous standby must confirm the commit (its wait is part of the
//     commit), nor when synchronous_commit asks for no local flush.
// Only a transaction whose every WAL record was written inside such calls
// qualifies: a change with an xid before the first call, or any WAL record
// between or after them (counted by pgWalUsage.wal_records, so even one
// written without an xid), keeps the commit as configured. WAL that another
// extension's pre-commit callback writes after ours (callbacks run newest
// first) is caught at commit: the commit is then flushed before returning.
// Writes of triggers a user adds to zizq._jobs run inside zizq's calls and
// count as theirs (README, "Choices where the spec is silent").
constexpr int64 kNoOwnChange = -1, kForeignChange = -2;
int64 own_wal_mark = kNoOwnChange;  // WAL records after the last own change
OwnChange own_need = OwnChange::Volatile;
bool committing_async = false;  // this commit was switched to synchronous_commit = off

// Whether a synchronous standby must confirm commits. Both this backend's
// setting and the shared flag that commits consult (a reload may not have
// reached this backend yet).
bool standby_confirms_commits() {
  if (!SyncRepRequested()) return false;
  bool named = SyncRepStandbyNames != nullptr && SyncRepStandbyNames[0] != '\0';
  return named ||
         (WalSndCtl != nullptr && (static_cast<volatile WalSndCtlData *>(WalSndCtl)->sync_standbys_status & SYNC_STANDBY_DEFINED));
}

void choose_commit_mode() {
  if (own_wal_mark < 0 || pgWalUsage.wal_records != own_wal_mark) return;
  if (own_need == OwnChange::Durable &&
      (synchronous_commit < SYNCHRONOUS_COMMIT_LOCAL_FLUSH || standby_confirms_commits()))
    return;
  (void)set_config_option("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
  committing_async = true;
}

// After commit_all: a Durable commit, or one that another pre-commit
// callback added WAL to (more than the commit record itself), reaches disk
// before the client hears of it. A transaction without an xid wrote no
// commit record.
void flush_if_needed() {
  if (!committing_async || !TransactionIdIsValid(GetTopTransactionIdIfAny())) return;
  if (own_need == OwnChange::Durable || pgWalUsage.wal_records > own_wal_mark + 1) XLogFlush(XactLastCommitEnd);
}

void forget_commit_mode() {
  own_wal_mark = kNoOwnChange;
  own_need = OwnChange::Volatile;
  committing_async = false;
}

void on_xact(XactEvent event, void *) {
  switch (event) {
    case XACT_EVENT_PRE_COMMIT:
      if (nops > 0 && shared != nullptr) log_budget_ops_if_loading();
      choose_commit_mode();
      break;
    case XACT_EVENT_PRE_PREPARE:
      if (nops > 0)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("cannot PREPARE a transaction that has used zizq job or budget functions")));
      break;
    case XACT_EVENT_COMMIT:
    case XACT_EVENT_PARALLEL_COMMIT:
      if (nops > 0 && shared != nullptr) {
        release_claims(0, /*taken=*/true);
        commit_all();
      }
      // The client hears of the commit only once it is on disk.
      flush_if_needed();
      forget_all();
      break;
    case XACT_EVENT_ABORT:
    case XACT_EVENT_PARALLEL_ABORT:
      abort_take_statements(1);
      if (shared != nullptr) abort_live_raises(1);
      if (logged_upto > 0 && shared != nullptr) drop_deferred();
      if (nops > 0 && shared != nullptr) undo_from(0, /*subtransaction=*/false);
      forget_all();
      break;
    case XACT_EVENT_PREPARE:
      forget_all();
      break;
    default:
      break;
  }
}

void on_subxact(SubXactEvent event, SubTransactionId, SubTransactionId, void *) {
  int level = GetCurrentTransactionNestLevel();  // the aborting or committing one
  // A take statement that failed, claims made or not, and an enqueue whose
  // insert failed, whether or not it had queued ops. (Each only when the
  // aborting level is the one it began at or an outer one: a user's
  // trigger may catch an error in a subtransaction of its own while the
  // statement goes on.)
  if (event == SUBXACT_EVENT_ABORT_SUB) {
    abort_take_statements(level);
    if (shared != nullptr) abort_live_raises(level);
    abort_own_insert(level);
  }
  if (nops == 0) return;
  if (event == SUBXACT_EVENT_ABORT_SUB) {
    int keep = 0;
    // Ops of the aborted level and deeper sit at the end of the list.
    while (keep < nops && ops[keep].nest < level) ++keep;
    if (shared != nullptr) undo_from(keep, /*subtransaction=*/true);
    nops = keep;
  } else if (event == SUBXACT_EVENT_COMMIT_SUB) {
    for (int i = 0; i < nops; ++i)
      if (ops[i].nest >= level) ops[i].nest = level - 1;
  }
}

}  // namespace

void register_xact_callbacks() {
  RegisterXactCallback(on_xact, nullptr);
  RegisterSubXactCallback(on_subxact, nullptr);
}

// Huge allocations: a transaction that enqueues some two million jobs
// (three ops of 88 bytes each, plus the queue names) outgrows palloc's
// 1 GB, and its next enqueue failed ("invalid memory alloc request size").
void reserve_ops(int n) {
  if (nops + n <= capacity) return;
  int wanted = ZZ_MAX(capacity * 2, nops + n + 16);
  Size bytes = static_cast<Size>(wanted) * sizeof(Op);
  if (ops == nullptr)
    ops = static_cast<Op *>(MemoryContextAllocHuge(TopTransactionContext, bytes));
  else
    ops = static_cast<Op *>(repalloc_huge(ops, bytes));
  capacity = wanted;
}

void record_debit(int32 budget, int32 cost) {
  Op &op = push(Kind::Debit);
  op.budget = budget;
  op.value = cost;
}

void record_in_flight_charge(int32 budget, int32 cost) {
  Op &op = push(Kind::InFlightCharge);
  op.budget = budget;
  op.value = cost;
}

void refund_debit_now(int32 budget, int32 cost) {
  for (int i = nops - 1; i >= 0; --i) {
    if (ops[i].kind != Kind::Debit || ops[i].budget != budget || ops[i].value != cost) continue;
    ops[i].kind = Kind::Consumed;
    LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
    BudgetEntry *b = find_budget(budget);
    bool dirtied = b != nullptr && refund_locked(b, cost, monotonic_us());
    LWLockRelease(shared->budget_lock);
    if (dirtied) wake_dispatcher();
    return;
  }
}

void record_parked_raise(int32 budget, int position) {
  Op &op = push(Kind::ParkedRaise);
  op.budget = budget;
  op.value = position;
}

void record_budget_created(int32 budget) { push(Kind::BudgetCreated).budget = budget; }

void record_claim(int64 job_id, uint32 queue_hash, int32 priority) {
  Op &op = push(Kind::Claim);
  op.job = job_id;
  op.hash = queue_hash;
  op.value = priority;
}

bool forget_claim(int64 job_id, ClaimedJob *job) {
  for (int i = nops - 1; i >= 0; --i) {
    if (ops[i].kind != Kind::Claim || ops[i].job != job_id) continue;
    ops[i].kind = Kind::Consumed;
    *job = claimed_job(ops[i]);
    return true;
  }
  return false;
}

void record_wake_on_abort(uint32 hash, int jobs) {
  Op &op = push(Kind::WakeOnAbort);
  op.hash = hash;
  op.value = jobs;
}

void at_commit_release(int32 budget, int32 cost) {
  Op &op = push(Kind::Release);
  op.budget = budget;
  op.value = cost;
}

void at_commit_parked_drop(int32 budget, int position) {
  Op &op = push(Kind::ParkedDrop);
  op.budget = budget;
  op.value = position;
}

void at_commit_policy(int32 budget, const core::Policy &policy) {
  Op &op = push(Kind::Policy);
  op.budget = budget;
  op.policy = policy;
}

void at_commit_drop_budget(int32 budget) { push(Kind::DropBudget).budget = budget; }

bool cancel_pending_drop(int32 budget) {
  bool cancelled = false;
  for (int i = 0; i < nops; ++i)
    if (ops[i].kind == Kind::DropBudget && ops[i].budget == budget) {
      ops[i].kind = Kind::Consumed;
      cancelled = true;
    }
  return cancelled;
}

void at_commit_reset_budgets() { push(Kind::ResetBudgets); }
void at_commit_clear_job_state() { push(Kind::ClearJobState); }
bool only_own_changes_so_far() {
  if (own_wal_mark == kForeignChange) return false;
  if (own_wal_mark == kNoOwnChange) return !TransactionIdIsValid(GetTopTransactionIdIfAny());
  return pgWalUsage.wal_records == own_wal_mark;
}

void note_own_change(bool only_own_before, OwnChange need) {
  if (!only_own_before) {
    own_wal_mark = kForeignChange;
    return;
  }
  own_wal_mark = pgWalUsage.wal_records;
  if (need == OwnChange::Durable) own_need = OwnChange::Durable;
}

void at_commit_dirty(int32 budget) { push(Kind::Dirty).budget = budget; }

void at_commit_wake_queue(uint32 queue_hash, int jobs) {
  Op &op = push(Kind::WakeQueue);
  op.hash = queue_hash;
  op.value = jobs;
}

void at_commit_wake_dispatcher() { push(Kind::WakeDispatcher); }
void at_commit_sweep_sessions() { push(Kind::SweepSessions); }

void at_commit_lower_floor(const char *queue, core::FloorKind kind, int32 priority, int64 job_id) {
  note_readied_jobs();
  char *copy = MemoryContextStrdup(TopTransactionContext, queue);
  reserve_ops(1);
  Op &op = push(Kind::LowerFloor);
  op.queue = copy;
  op.floor = kind;
  op.value = priority;
  op.job = job_id;
}

void at_commit_clear_floors() {
  note_readied_jobs();
  reserve_ops(1);
  push(Kind::ClearFloors);
}

void at_commit_notify(const char *queue) {
  reserve_ops(1);
  char *copy = MemoryContextStrdup(TopTransactionContext, queue);
  push(Kind::Notify).queue = copy;
}
void at_commit_wake_dispatcher_before(TimestampTz when) { push(Kind::WakeDispatcherBefore).when = when; }

}  // namespace zizq::pg
