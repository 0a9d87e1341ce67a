// zizq dispatcher tasks (see dispatcher.cpp for the story of a cycle).
#include <algorithm>

#include "core/bindings.hpp"
#include "core/token_bucket.hpp"

#include "dispatcher/tasks.hpp"
#include "pg/errors.hpp"
#include "pg/lines.hpp"
#include "pg/claims.hpp"
#include "pg/shmem.hpp"
#include "pg/spi.hpp"
#include "pg/xact.hpp"

extern "C" {
#include "access/transam.h"
#include "catalog/namespace.h"
#include "commands/extension.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
}

namespace zizq::dispatcher {
namespace {

using namespace zizq::pg;

// How many jobs of one line an evaluation may offer at once.
constexpr int kLineWalk = 32;
// Work per task per cycle: a larger backlog is finished in later cycles.
constexpr int kBatch = 10000;
// How soon a cycle put off by a conflicting table lock is tried again.
constexpr int64 kBusyRetryMs = 20;
// How soon a job skipped because another transaction held its row (a
// requeue, a promotion) is tried again: often enough that it follows the
// holder's commit closely, seldom enough that a lock held for minutes costs
// the dispatcher little.
constexpr int64 kHeldRowRetryMs = 100;

struct Timer {
  int32 budget;  // hash key
  int64 due_us;
  bool handed_off;  // put back after a hand-off: evaluate when due, no second hand-off
};

// ---- transactions ----------------------------------------------------------------

void begin(const char *activity) {
  SetCurrentStatementStartTimestamp();
  StartTransactionCommand();
  if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "zizq dispatcher: SPI_connect failed");
  PushActiveSnapshot(GetTransactionSnapshot());
  pgstat_report_activity(STATE_RUNNING, activity);
}

// A transaction whose queries all see one snapshot.
void begin_repeatable_read(const char *activity) {
  SetCurrentStatementStartTimestamp();
  StartTransactionCommand();
  XactIsoLevel = XACT_REPEATABLE_READ;
  if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "zizq dispatcher: SPI_connect failed");
  PushActiveSnapshot(GetTransactionSnapshot());
  pgstat_report_activity(STATE_RUNNING, activity);
}

void end() {
  SPI_finish();
  PopActiveSnapshot();
  CommitTransactionCommand();
  pgstat_report_stat(false);
  pgstat_report_activity(STATE_IDLE, nullptr);
}

// Takes zizq's table locks without waiting. The dispatcher's transactions
// must never queue behind DROP EXTENSION, TRUNCATE (zizq.reset) or ALTER
// TABLE: those lock the tables in their own orders, and a wait here could
// close a deadlock cycle with them. When a lock is taken, the cycle is put
// off for kBusyRetryMs.
bool try_lock_tables(LOCKMODE mode) {
  Oid schema = get_namespace_oid("zizq", true);
  if (!OidIsValid(schema)) return false;
  for (const char *name : {"_jobs", "_job_errors", "budgets"}) {
    Oid rel = get_relname_relid(name, schema);
    if (!OidIsValid(rel) || !ConditionalLockRelationOid(rel, mode)) return false;
  }
  return true;
}

void exec(const char *sql) {
  if (SPI_execute(sql, false, 0) < 0) elog(ERROR, "zizq dispatcher: failed: %s", sql);
}

TimestampTz column_ts(uint64 row, int col) {
  bool isnull = false;
  Datum d = column(row, col, &isnull);
  return isnull ? 0 : DatumGetTimestampTz(d);
}

TimestampTz earliest(TimestampTz a, TimestampTz b) {
  if (a == 0) return b;
  if (b == 0) return a;
  return ZZ_MIN(a, b);
}

// ---- rebuilding shared memory ---------------------------------------------------------

struct LoadedBudget {
  int32 id;
  core::Policy policy;
  int64 in_flight;
  int32 parked[core::kMaxBindings];
};

LoadedBudget *find_loaded(LoadedBudget *all, int n, int32 id) {
  for (int i = 0; i < n; ++i)
    if (all[i].id == id) return &all[i];
  return nullptr;
}

// Has the snapshot seen the change this transaction made (or will it never
// count: aborted)?
bool seen_by(Snapshot snapshot, TransactionId xid) {
  if (!TransactionIdIsValid(xid) || TransactionIdDidAbort(xid)) return true;
  return TransactionIdDidCommit(xid) && !XidInMVCCSnapshot(xid, snapshot);
}

bool still_running(TransactionId xid) {
  return TransactionIdIsValid(xid) && !TransactionIdDidCommit(xid) && !TransactionIdDidAbort(xid);
}

// Applies one logged change; false when it creates a budget that shared
// memory has no room for.
bool apply_replay(const ReplayEntry &e, int64 now) {
  if (e.kind == ReplayEntry::Reset) {
    reset_budgets_in_place();
    return true;
  }
  if (e.kind == ReplayEntry::Created) return add_budget(e.budget, e.policy) != nullptr;
  if (e.kind == ReplayEntry::Dropped) {
    remove_budget(e.budget);
    return true;
  }
  BudgetEntry *b = find_budget(e.budget);
  if (b == nullptr) return true;
  switch (e.kind) {
    case ReplayEntry::Release: core::release(b->tokens, e.value); break;
    case ReplayEntry::ParkedRaise: b->parked[e.value]++; break;
    case ReplayEntry::ParkedDrop: b->parked[e.value] = ZZ_MAX(0, b->parked[e.value] - 1); break;
    case ReplayEntry::Policy:
      core::change_policy(b->policy, e.policy, b->tokens, now);
      b->policy = e.policy;
      break;
    default: break;
  }
  mark_dirty(b);
  return true;
}

// Budgets, in-flight costs and parked counts as one snapshot sees them
// (the transaction is REPEATABLE READ), then the changes that committed
// unseen while loading; then budgeted dispatch may begin.
bool load_state() {
  // _jobs before budgets: the order zizq.reset()'s TRUNCATE locks them in.
  exec("SELECT c.budget_id, sum(c.cost)::bigint FROM zizq._jobs j, "
       "unnest(j.budget_ids, j.budget_costs) AS c(budget_id, cost) WHERE j.status = 'in_flight' GROUP BY 1");
  uint64 nsums = SPI_processed;
  int32 *sum_ids = static_cast<int32 *>(palloc(sizeof(int32) * ZZ_MAX(nsums, 1)));
  int64 *sums = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(nsums, 1)));
  for (uint64 i = 0; i < nsums; ++i) {
    sum_ids[i] = column_int32(i, 1);
    sums[i] = column_int64(i, 2);
  }
  exec("SELECT id, allocation, strategy, duration_ms, burst FROM zizq.budgets");
  int n = static_cast<int>(SPI_processed);
  LoadedBudget *all = static_cast<LoadedBudget *>(palloc0(sizeof(LoadedBudget) * ZZ_MAX(n, 1)));
  for (int i = 0; i < n; ++i) {
    bool isnull = false;
    all[i].id = column_int32(i, 1);
    int64 allocation = column_int32(i, 2);
    char *strategy = column_text(i, 3);
    Datum duration = column(i, 4, &isnull);
    std::optional<int64_t> duration_ms;
    if (!isnull) duration_ms = DatumGetInt64(duration);
    Datum burst = column(i, 5, &isnull);
    std::optional<int64_t> burst_v;
    if (!isnull) burst_v = DatumGetInt32(burst);
    core::Policy p;
    run_core([&] { p = core::make_policy("", allocation, strategy, duration_ms, burst_v); });
    all[i].policy = p;
  }
  for (uint64 i = 0; i < nsums; ++i)
    if (LoadedBudget *b = find_loaded(all, n, sum_ids[i])) b->in_flight = sums[i];
  exec("SELECT j.budget_ids[k], k, count(*)::bigint FROM zizq._jobs j, "
       "generate_series(1, cardinality(j.budget_ids)) AS k WHERE j.status = 'ready' AND j.parked GROUP BY 1, 2");
  for (uint64 i = 0; i < SPI_processed; ++i)
    if (LoadedBudget *b = find_loaded(all, n, column_int32(i, 1)))
      b->parked[ZZ_MIN(column_int32(i, 2), core::kMaxBindings) - 1] = static_cast<int32>(column_int64(i, 3));

  int missing = 0;
  Snapshot snapshot = GetActiveSnapshot();
  int64 now = monotonic_us();
  LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
  if (shared->replay_overflow) {
    LWLockRelease(shared->budget_lock);
    return false;  // too much happened meanwhile: load again
  }
  for (int i = 0; i < n; ++i) {
    BudgetEntry *e = add_budget(all[i].id, all[i].policy);
    if (e == nullptr) {
      ++missing;
      continue;
    }
    e->tokens.in_flight = all[i].in_flight;
    memcpy(e->parked, all[i].parked, sizeof e->parked);
    mark_dirty(e);
  }
  for (int i = 0; i < shared->replay_count; ++i) {
    const ReplayEntry &e = replay_log[i];
    if (seen_by(snapshot, e.xid)) continue;
    // A commit's change logged at PRE_COMMIT by a transaction still running:
    // the commit may yet fail (a serialization failure, a full NOTIFY
    // queue), so the transaction applies it itself once committed. Decided
    // once per transaction: its commit can land in clog during this loop.
    if (e.at_pre_commit && (is_deferred(e.xid) || (still_running(e.xid) && defer_to_committer(e.xid)))) continue;
    if (!apply_replay(e, now)) ++missing;
  }
  shared->replay_count = 0;
  shared->loading = false;
  shared->budgets_loaded = true;
  LWLockRelease(shared->budget_lock);
  // Workers that looked while budgets were not loaded passed budgeted jobs
  // by without asking for their parking: they look again now.
  wake_all_waiters();
  if (missing > 0)
    ereport(WARNING, (errmsg("zizq: %d budgets exceed zizq.max_budgets = %d; their jobs cannot be dispatched",
                             missing, guc_max_budgets)));
  return true;
}

// Waits until every transaction that was writing zizq's tables when loading
// began has ended, without taking a lock (as CREATE INDEX CONCURRENTLY does):
// their changes are then either in the snapshot or in the replay log. Its
// own transaction, with no table lock and no snapshot held while waiting: an
// older writer that goes on to lock a table (DDL, zizq.reset()), or a
// CREATE INDEX CONCURRENTLY waiting for old snapshots, would otherwise wait
// for the dispatcher meanwhile.
void wait_for_older_writers() {
  StartTransactionCommand();
  pgstat_report_activity(STATE_RUNNING, "zizq dispatcher: waiting for older writers");
  Oid rels[2];
  int n = 0;
  Oid schema = get_namespace_oid("zizq", true);
  if (OidIsValid(schema))  // dropped meanwhile: nothing to load
    for (const char *name : {"_jobs", "budgets"}) {
      Oid rel = get_relname_relid(name, schema);
      if (OidIsValid(rel)) rels[n++] = rel;
    }
  InvalidateCatalogSnapshot();
  for (int i = 0; i < n; ++i) {
    LOCKTAG tag;
    SET_LOCKTAG_RELATION(tag, MyDatabaseId, rels[i]);
    WaitForLockers(tag, ShareLock, false);
  }
  CommitTransactionCommand();
  pgstat_report_activity(STATE_IDLE, nullptr);
}


// ---- writing tasks ----------------------------------------------------------------------

SPIPlanPtr holders_plan = nullptr, dead_plan = nullptr, leases_plan = nullptr, requeue_plan = nullptr;
SPIPlanPtr promote_plan = nullptr, park_plan = nullptr, purge_plan = nullptr, next_plan = nullptr;

int64 *alive_sessions(int *n) {
  int64 *alive = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(MaxBackends, 1)));
  *n = 0;
  LWLockAcquire(shared->waiter_lock, LW_SHARED);
  for (int i = 0; i < MaxBackends; ++i)
    if (sessions[i] != 0) alive[(*n)++] = static_cast<int64>(sessions[i]);
  LWLockRelease(shared->waiter_lock);
  return alive;
}

// Requeues what it can of `ids`: jobs of the ended sessions `dead`, or
// (dead NULL) jobs whose lease ran out; false when some were left, their
// rows held by another transaction (or no longer due).
bool return_to_ready(Datum ids, Datum dead, bool no_dead) {
  prepared(requeue_plan, "SELECT cardinality($1), cardinality(zizq._return_unlocked_to_ready($1, $2))",
           {INT8ARRAYOID, INT8ARRAYOID});
  Datum args[2] = {ids, dead};
  char nulls[3] = {' ', no_dead ? 'n' : ' ', '\0'};
  run_plan(requeue_plan, args, nulls, false);
  return column_int32(0, 1) == column_int32(0, 2);
}

// In-flight jobs without a lease whose session has ended go back to ready.
// Order matters: first the sessions holding jobs (as of this snapshot), then
// which sessions are alive. A session registers before its first dequeue
// commits, so one missing from the live set has ended for good; requeueing
// by its id never touches a job a live session holds. Returns false when
// some were left (their rows held elsewhere): the sessions count as ended
// again, for the next try.
bool requeue_dead_sessions() {
  // Cleared before the read of the holders, not after: a flag raised after
  // that read (a session ending, jobs written in flight around zizq) asks
  // for the next sweep, which sees what this one's snapshot did not.
  LWLockAcquire(shared->waiter_lock, LW_EXCLUSIVE);
  shared->sessions_ended = false;
  LWLockRelease(shared->waiter_lock);
  prepared(holders_plan,
           "SELECT COALESCE(array_agg(DISTINCT COALESCE(session_id, 0)), '{}') FROM zizq._jobs "
           "WHERE status = 'in_flight' AND lease_until IS NULL",
           {});
  run_plan(holders_plan, nullptr, nullptr, false);
  bool isnull = false;
  int64 *holders;
  bool *no_session;  // none: the COALESCE reads a missing session as 0
  int nholders = array_int8(column(0, 1, &isnull), &holders, &no_session);
  int nalive;
  int64 *alive = alive_sessions(&nalive);
  int64 *dead = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(nholders, 1)));
  int ndead = 0;
  for (int i = 0; i < nholders; ++i) {
    bool lives = false;
    for (int j = 0; j < nalive && !lives; ++j) lives = alive[j] == holders[i];
    if (!lives) dead[ndead++] = holders[i];
  }
  if (ndead == 0) return true;
  prepared(dead_plan,
           "SELECT ARRAY(SELECT id FROM zizq._jobs WHERE status = 'in_flight' "
           "AND lease_until IS NULL AND COALESCE(session_id, 0) = ANY ($1))",
           {INT8ARRAYOID});
  Datum args[1] = {int8_array(dead, ndead)};
  run_plan(dead_plan, args, nullptr, false);
  bool isnull_ids = false;
  if (return_to_ready(column(0, 1, &isnull_ids), args[0], false)) return true;
  LWLockAcquire(shared->waiter_lock, LW_EXCLUSIVE);
  shared->sessions_ended = true;
  LWLockRelease(shared->waiter_lock);
  return false;
}

bool expire_leases() {
  prepared(leases_plan,
           "SELECT COALESCE(array_agg(id), '{}') FROM zizq._jobs WHERE status = 'in_flight' "
           "AND lease_until <= clock_timestamp()",
           {});
  run_plan(leases_plan, nullptr, nullptr, false);
  bool isnull = false;
  return return_to_ready(column(0, 1, &isnull), 0, true);
}

// Scheduled jobs whose ready_at has come (the trigger ready_update wakes
// their workers and notifies at commit). Returns how many.
uint64 promote_scheduled() {
  prepared(promote_plan,
           "WITH due AS (SELECT id FROM zizq._jobs WHERE status = 'scheduled' AND ready_at <= clock_timestamp() "
           "ORDER BY ready_at LIMIT $1 FOR UPDATE SKIP LOCKED) "
           "UPDATE zizq._jobs j SET status = 'ready' FROM due WHERE j.id = due.id",
           {INT4OID});
  Datum args[1] = {Int32GetDatum(kBatch)};
  return run_plan(promote_plan, args, nullptr, false);
}

SPIPlanPtr unparked_plan = nullptr;

// The requested jobs still ready, unparked and bound, found by id. Bound
// reads `COALESCE(cardinality(budget_ids), 0) > 0`, not `budget_ids IS NOT
// NULL`: with `status = 'ready' AND NOT parked`, the latter (or any strict
// test of budget_ids, from which the planner infers it) implies
// `_jobs_budgeted`'s predicate, and a generic plan made on an empty table's
// statistics read that whole index, the ids a condition on its second
// column (0.3 ms for 20,000 budgeted jobs).
#define ZIZQ_REQUESTED_BUDGETED \
  "id = ANY ($1) AND status = 'ready' AND NOT parked AND COALESCE(cardinality(budget_ids), 0) > 0"

// Requested jobs still ready and not parked (their rows were locked):
// their budgets are marked starved for their queues.
void starve_unparked(Datum requested) {
  prepared(unparked_plan,
           "SELECT queue, budget_ids FROM zizq._jobs WHERE " ZIZQ_REQUESTED_BUDGETED,
           {INT8ARRAYOID});
  Datum args[1] = {requested};
  uint64 rows = run_plan(unparked_plan, args, nullptr, false);
  for (uint64 i = 0; i < rows; ++i) {
    char *queue = column_text(i, 1);
    bool isnull = false;
    int32 *budgets;
    int nb = ZZ_MIN(array_int4(column(i, 2, &isnull), &budgets), core::kMaxBindings);
    core::Binding bindings[core::kMaxBindings];
    for (int k = 0; k < nb; ++k) bindings[k] = core::Binding{budgets[k], 0};
    LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
    mark_starved(bindings, nb, queue_hash(queue, strlen(queue)));
    for (int k = 0; k < nb; ++k)
      if (BudgetEntry *b = find_budget(budgets[k])) mark_dirty(b);
    LWLockRelease(shared->budget_lock);
  }
}

// Budgeted jobs a dequeue could not take move into their budgets' lines. A
// row some transaction holds is passed over: the dispatcher never waits for
// a user's lock. Its budgets are marked starved, so that the next tokens
// wake its queue's workers to walk it (and ask for its parking) again.
void park_requested() {
  int64 *ids = static_cast<int64 *>(palloc(sizeof(int64) * kParkRequestSlots));
  LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
  int n = take_park_requests(ids, kParkRequestSlots);
  LWLockRelease(shared->budget_lock);
  if (n == 0) return;
  prepared(park_plan,
           "WITH free AS (SELECT id FROM zizq._jobs WHERE " ZIZQ_REQUESTED_BUDGETED " FOR UPDATE SKIP LOCKED) "
           "UPDATE zizq._jobs j SET parked = true FROM free WHERE j.id = free.id RETURNING j.budget_ids",
           {INT8ARRAYOID});
  Datum args[1] = {int8_array(ids, n)};
  uint64 rows = run_plan(park_plan, args, nullptr, false);
  for (uint64 i = 0; i < rows; ++i) {
    bool isnull = false;
    int32 *budgets;
    int nb = array_int4(column(i, 1, &isnull), &budgets);
    note_parked(budgets, ZZ_MIN(nb, core::kMaxBindings));
  }
  if (rows < static_cast<uint64>(n)) starve_unparked(args[0]);
}

void purge() {
  prepared(purge_plan,
           "SELECT count(*) FROM zizq._delete_jobs(ARRAY(SELECT id FROM zizq._jobs "
           "WHERE purge_at <= clock_timestamp() ORDER BY purge_at LIMIT $1))",
           {INT4OID});
  Datum args[1] = {Int32GetDatum(kBatch)};
  run_plan(purge_plan, args, nullptr, false);
}

void read_next_times(Dispatcher &d) {
  prepared(next_plan,
           "SELECT (SELECT min(ready_at) FROM zizq._jobs WHERE status = 'scheduled'), "
           "(SELECT min(lease_until) FROM zizq._jobs WHERE status = 'in_flight' AND lease_until IS NOT NULL), "
           "(SELECT min(purge_at) FROM zizq._jobs WHERE purge_at IS NOT NULL)",
           {});
  run_plan(next_plan, nullptr, nullptr, true);
  d.next_scheduled = column_ts(0, 1);
  d.next_lease = column_ts(0, 2);
  d.next_purge = column_ts(0, 3);
}

bool due(TimestampTz when, TimestampTz now) { return when != 0 && when <= now; }

// The writing transaction. Returns false when the extension is not there.
enum class Phase { Absent, Busy, Done };

void discard_notifications() {
  QueueName pending[kNotifySlots];
  bool overflow = false;
  while (take_notifies(pending, kNotifySlots, &overflow) > 0) {
  }
}

Phase write_phase(Dispatcher &d) {
  begin("zizq dispatcher: maintenance");
  if (!OidIsValid(get_extension_oid("zizq", true))) {
    end();
    discard_notifications();  // of a dropped extension's queues
    return Phase::Absent;
  }
  if (!try_lock_tables(RowExclusiveLock)) {
    end();
    return Phase::Busy;
  }
  LWLockAcquire(shared->budget_lock, LW_SHARED);
  bool loaded = shared->budgets_loaded;
  LWLockRelease(shared->budget_lock);
  LWLockAcquire(shared->waiter_lock, LW_SHARED);
  bool ended = shared->sessions_ended;
  LWLockRelease(shared->waiter_lock);
  bool requeued_all = true;
  if (!loaded) {
    LWLockAcquire(shared->budget_lock, LW_SHARED);
    bool overflowed = shared->replay_overflow;
    LWLockRelease(shared->budget_lock);
    // Changes were lost from the log: start over, after every transaction
    // that could have made one has ended.
    if (overflowed) reset_shared_state(/*wait_writers=*/true);
    LWLockAcquire(shared->budget_lock, LW_SHARED);
    bool must_wait = shared->wait_writers;
    LWLockRelease(shared->budget_lock);
    if (must_wait) {
      end();
      wait_for_older_writers();
      LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
      shared->wait_writers = false;
      LWLockRelease(shared->budget_lock);
      begin("zizq dispatcher: maintenance");
      if (!try_lock_tables(RowExclusiveLock)) {
        end();
        return Phase::Busy;
      }
    }
    requeued_all = requeue_dead_sessions();
    end();
    begin_repeatable_read("zizq dispatcher: loading budgets");
    if (!try_lock_tables(AccessShareLock)) {
      end();
      return Phase::Busy;
    }
    if (!load_state()) {
      end();
      return write_phase(d);
    }
  } else if (ended || !d.started) {
    requeued_all = requeue_dead_sessions();
  }
  TimestampTz now = GetCurrentTimestamp();
  bool leases_all = !due(d.next_lease, now) || expire_leases();
  bool promoting = due(d.next_scheduled, now);
  bool promoted_batch = promoting && promote_scheduled() == static_cast<uint64>(kBatch);
  park_requested();
  if (due(d.next_purge, now)) purge();
  read_next_times(d);
  end();
  // Work still due that this cycle could not do (rows held by other
  // transactions) is tried again a little later, not in a spin; a full
  // batch of promotions comes straight back.
  TimestampTz retry = now + kHeldRowRetryMs * 1000;
  d.requeue_retry = requeued_all ? 0 : retry;
  if (!leases_all && due(d.next_lease, now)) d.next_lease = retry;
  if (promoting && !promoted_batch && due(d.next_scheduled, now)) d.next_scheduled = retry;
  return Phase::Done;
}

// ---- evaluating budget lines ---------------------------------------------------------------

SPIPlanPtr head_plans[core::kMaxBindings] = {nullptr, nullptr, nullptr, nullptr};

SPIPlanPtr heads_plan(int k) {
  // Per queue of the budget's position-k line, the first jobs in dispatch
  // order: a skip scan over the queues, then a short walk of each line.
  static char sql[core::kMaxBindings][1200];
  if (sql[k][0] == '\0') {
    char cond[160];
    snprintf(cond, sizeof cond, "budget_ids[%d] = $1 AND status = 'ready' AND parked%s", k + 1,
             k == 0 ? "" : psprintf(" AND cardinality(budget_ids) >= %d", k + 1));
    snprintf(sql[k], sizeof sql[k],
             "WITH RECURSIVE q AS ("
             " (SELECT queue FROM zizq._jobs WHERE %s ORDER BY queue LIMIT 1)"
             " UNION ALL"
             " SELECT (SELECT queue FROM zizq._jobs WHERE %s AND queue > q.queue ORDER BY queue LIMIT 1)"
             " FROM q WHERE q.queue IS NOT NULL)"
             " SELECT h.id, h.priority, h.queue, h.budget_ids, h.budget_costs, h.xmin FROM q, LATERAL"
             " (SELECT id, priority, queue, budget_ids, budget_costs, xmin FROM zizq._jobs WHERE %s AND queue = q.queue"
             "  ORDER BY budget_ids[%d], queue, priority, id LIMIT $2) h WHERE q.queue IS NOT NULL",
             cond, cond, cond, k + 1);
  }
  return prepared(head_plans[k], sql[k], {INT4OID, INT4OID});
}

struct LineJob {
  int64 id;
  int32 priority;
  char *queue;
  int nbindings;
  core::Binding bindings[core::kMaxBindings];
  TransactionId xmin;  // the row version read
};

bool line_order(const LineJob &a, const LineJob &b) {
  int c = strcmp(a.queue, b.queue);
  if (c != 0) return c < 0;
  return a.priority != b.priority ? a.priority < b.priority : a.id < b.id;
}

int read_lines(int32 budget, const int32 counts[core::kMaxBindings], LineJob **out) {
  int cap = 64, n = 0;
  LineJob *jobs = static_cast<LineJob *>(palloc(sizeof(LineJob) * cap));
  for (int k = 0; k < core::kMaxBindings; ++k) {
    if (counts[k] <= 0) continue;
    Datum args[2] = {Int32GetDatum(budget), Int32GetDatum(kLineWalk)};
    uint64 rows = run_plan(heads_plan(k), args, nullptr, true);
    for (uint64 i = 0; i < rows; ++i) {
      if (n == cap) {
        cap *= 2;
        jobs = static_cast<LineJob *>(repalloc(jobs, sizeof(LineJob) * cap));
      }
      LineJob &j = jobs[n++];
      j.id = column_int64(i, 1);
      j.priority = column_int32(i, 2);
      j.queue = column_text(i, 3);
      bool ids_null = false, costs_null = false;
      int32 *ids, *costs;
      Datum id_array = column(i, 4, &ids_null), cost_array = column(i, 5, &costs_null);
      // (Rows written around zizq may hold other shapes.)
      int nb = ids_null || costs_null ? 0 : array_int4(id_array, &ids);
      int nc = nb == 0 ? 0 : array_int4(cost_array, &costs);
      j.nbindings = ZZ_MIN(ZZ_MIN(nb, nc), core::kMaxBindings);
      for (int b = 0; b < j.nbindings; ++b) j.bindings[b] = core::Binding{ids[b], costs[b]};
      bool xmin_null = false;
      Datum xmin = column(i, 6, &xmin_null);
      j.xmin = xmin_null ? InvalidTransactionId : DatumGetTransactionId(xmin);
    }
  }
  std::sort(jobs, jobs + n, line_order);
  // Several positions: only the merged head of each queue is known in order
  // past kLineWalk, so drop duplicates (a job at two positions of the same
  // budget cannot happen) and keep the order.
  *out = jobs;
  return n;
}

struct Snapshot {
  bool found;
  core::Policy policy;
  core::TokenState tokens;
  int64 offered;
  int32 parked[core::kMaxBindings];
  uint32 version;
};

Snapshot snapshot_of(int32 id) {
  Snapshot s{};
  BudgetEntry *b = find_budget(id);
  if (b == nullptr) return s;
  s.found = true;
  s.policy = b->policy;
  s.tokens = b->tokens;
  s.offered = b->offered_cost;
  memcpy(s.parked, b->parked, sizeof s.parked);
  s.version = b->park_version;
  return s;
}

void add_timer(Dispatcher &d, int32 budget, int64 due_us, bool handed_off = false) {
  bool found = false;
  auto *t = static_cast<Timer *>(hash_search(d.timers, &budget, HASH_ENTER, &found));
  if (!found || due_us < t->due_us) {
    t->due_us = due_us;
    t->handed_off = handed_off;
  }
}

// Withdraws the offers made from this budget's lines: the evaluation below
// makes them again from the lines as they are now.
void withdraw_line_offers(int32 budget) {
  for (int i = 0; i < shared->offer_high; ++i)
    if (offers[i].job_id != 0 && offers[i].line_budget == budget) remove_offer(i);
}

SPIPlanPtr unparked_ahead_plan = nullptr;

// Whether budgeted jobs that are not parked wait ahead of `j` in its queue
// with this budget: they are the line's real head (a dequeue takes them or
// parks them, which re-evaluates the line), so `j` is not offered yet. Jobs
// an uncommitted dequeue has claimed are taken already.
bool unparked_ahead(const LineJob &j, int32 budget) {
  constexpr int kLook = 16;
  prepared(unparked_ahead_plan,
           "SELECT id FROM zizq._jobs WHERE status = 'ready' AND budget_ids IS NOT NULL AND NOT parked "
           "AND queue = $2 AND (queue, priority, id) < ($2, $3, $4) AND $1 = ANY (budget_ids) "
           "ORDER BY queue, priority, id LIMIT $5",
           {INT4OID, TEXTOID, INT4OID, INT8OID, INT4OID});
  Datum args[5] = {Int32GetDatum(budget), CStringGetTextDatum(j.queue), Int32GetDatum(j.priority),
                   Int64GetDatum(j.id), Int32GetDatum(kLook)};
  int n = static_cast<int>(run_plan(unparked_ahead_plan, args, nullptr, true));
  if (n == 0) return false;
  if (n == kLook) return true;  // a long way ahead: wait for them either way
  int64 ids[kLook];
  bool claimed[kLook];
  for (int i = 0; i < n; ++i) ids[i] = column_int64(i, 1);
  claimed_jobs(ids, n, claimed);
  for (int i = 0; i < n; ++i)
    if (!claimed[i]) return true;
  return false;
}

// Whether a job is at the head of its other budgets' lines too.
bool heads_other_lines(const LineJob &j, int32 budget) {
  for (int b = 0; b < j.nbindings; ++b) {
    if (j.bindings[b].budget == budget) continue;
    int32 counts[core::kMaxBindings];
    parked_counts(j.bindings[b].budget, counts);
    if (any_parked(counts) && parked_ahead(j.bindings[b].budget, counts, j.queue, j.priority, j.id)) return false;
  }
  return true;
}

// What one evaluation plans for a budget's lines: the offers it will post
// in place of the ones standing there now. Affordability counts the costs
// of other lines' offers and of this plan, not of the offers replaced.
struct LinePlan {
  int32 budget;
  int n;
  LineJob *jobs;
  bool *standby;
  // Per budget met: cost of the offers planned so far.
  static constexpr int kBudgets = 256;
  int nbudgets;
  int32 ids[kBudgets];
  int64 planned[kBudgets];
  bool full() const { return nbudgets == kBudgets; }

  int64 planned_for(int32 id) const {
    for (int i = 0; i < nbudgets; ++i)
      if (ids[i] == id) return planned[i];
    return 0;
  }
  void add_planned(int32 id, int64 cost) {
    for (int i = 0; i < nbudgets; ++i)
      if (ids[i] == id) {
        planned[i] += cost;
        return;
      }
    if (full()) return;  // affordable() then offers no more (see there)
    ids[nbudgets] = id;
    planned[nbudgets++] = cost;
  }
};

LinePlan start_plan(int32 budget, int capacity) {
  LinePlan p;
  p.budget = budget;
  p.n = 0;
  p.jobs = static_cast<LineJob *>(palloc(sizeof(LineJob) * ZZ_MAX(capacity, 1)));
  p.standby = static_cast<bool *>(palloc(sizeof(bool) * ZZ_MAX(capacity, 1)));
  p.nbudgets = 0;
  return p;
}

void plan_offer(LinePlan &p, const LineJob &j, bool standby) {
  p.jobs[p.n] = j;
  p.standby[p.n++] = standby;
  if (standby) return;
  for (int k = 0; k < j.nbindings; ++k) p.add_planned(j.bindings[k].budget, j.bindings[k].cost);
}

// Cost on `budget` of the offers standing on the board for `line` (the ones
// this evaluation replaces). Read in the same hold of budget_lock as the
// budget's offered_cost: an offer taken meanwhile leaves both at once.
int64 standing_line_cost(int32 line, int32 budget) {
  int64 cost = 0;
  for (int i = 0; i < shared->offer_high; ++i) {
    const Offer &o = offers[i];
    if (o.job_id == 0 || o.line_budget != line || o.standby) continue;
    for (int k = 0; k < o.nbindings; ++k)
      if (o.bindings[k].budget == budget) cost += o.bindings[k].cost;
  }
  return cost;
}

// Can every budget of `j` pay its cost on top of what is offered (the plan
// included)? If not, when (nullopt: only a release can help).
bool affordable(const LineJob &j, LinePlan &plan, int64 now, std::optional<int64> *when) {
  if (plan.full()) {  // too many budgets to count what is planned: the rest of the line later
    *when = now + 10000;
    return false;
  }
  bool ok = true;
  int64 latest = now;
  bool timed = true;
  LWLockAcquire(shared->budget_lock, LW_SHARED);
  for (int b = 0; b < j.nbindings; ++b) {
    int32 id = j.bindings[b].budget;
    Snapshot s = snapshot_of(id);
    if (!s.found) {
      ok = timed = false;
      continue;
    }
    int64 others = s.offered - standing_line_cost(plan.budget, id);
    int64 need = j.bindings[b].cost + ZZ_MAX(0, others + plan.planned_for(id));
    if (core::can_pay(s.policy, s.tokens, need, now)) continue;
    ok = false;
    // Beyond the capacity, only the standing offers being taken (or
    // withdrawn) can make room: they re-evaluate this line.
    std::optional<int64> t;
    if (need <= s.policy.capacity()) run_core([&] { t = core::due_time(s.policy, s.tokens, need, now); });
    if (!t) timed = false;
    else latest = ZZ_MAX(latest, *t);
  }
  LWLockRelease(shared->budget_lock);
  *when = timed ? std::optional<int64>(latest) : std::nullopt;
  return ok;
}

struct Wakes {
  int n;
  uint32 hashes[64];
  char *queues[64];
};

void note_wake(Wakes &w, const char *queue) {
  uint32 h = queue_hash(queue, strlen(queue));
  for (int i = 0; i < w.n; ++i)
    if (w.hashes[i] == h) return;
  if (w.n < 64) {
    w.hashes[w.n] = h;
    w.queues[w.n++] = pstrdup(queue);
  }
}

// Posts one planned offer (budget_lock held exclusively).
bool post_planned(const LineJob &j, int32 line_budget, bool standby) {
  Offer o{};
  o.job_id = j.id;
  o.standby = standby;
  o.priority = j.priority;
  o.queue_hash = queue_hash(j.queue, strlen(j.queue));
  o.line_budget = line_budget;
  o.nbindings = j.nbindings;
  memcpy(o.bindings, j.bindings, sizeof o.bindings);
  o.xmin = j.xmin;
  if (strlen(j.queue) < sizeof o.queue) strcpy(o.queue, j.queue);  // else "" (Offer{} zeroed it)
  BudgetEntry *b = find_budget(line_budget);
  o.park_version = b ? b->park_version : 0;
  return post_offer(o);
}

// Replaces the line's standing offers with the plan in one critical
// section, so that a dequeue never finds the line without its offers
// while it is evaluated. Wakes a worker per new offer.
void carry_out(Dispatcher &d, const LinePlan &p, Wakes &wakes) {
  bool *posted = static_cast<bool *>(palloc(sizeof(bool) * ZZ_MAX(p.n, 1)));
  bool full = false;
  LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
  withdraw_line_offers(p.budget);
  for (int i = 0; i < p.n; ++i) {
    posted[i] = !full && post_planned(p.jobs[i], p.budget, p.standby[i]);
    full = full || !posted[i];
  }
  LWLockRelease(shared->budget_lock);
  if (full) add_timer(d, p.budget, monotonic_us() + 10000);  // offers full: try again shortly
  for (int i = 0; i < p.n; ++i) {
    if (!posted[i] || p.standby[i]) continue;
    wake_waiters(queue_hash(p.jobs[i].queue, strlen(p.jobs[i].queue)), 1);
    note_wake(wakes, p.jobs[i].queue);
  }
}

// Wakes the workers that found this budget short, once it can pay again.
void serve_starved(Dispatcher &d, int32 budget, int64 now, Wakes &wakes) {
  LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
  BudgetEntry *b = find_budget(budget);
  if (b == nullptr || !b->starved) {
    LWLockRelease(shared->budget_lock);
    return;
  }
  bool can = core::can_pay(b->policy, b->tokens, 1 + b->offered_cost, now);
  std::optional<int64> t;
  if (!can) run_core([&] { t = core::due_time(b->policy, b->tokens, std::min<int64>(1 + b->offered_cost, b->policy.capacity()), now); });
  bool any = b->starved_any_queue;
  uint32 hash = b->starved_queue;
  if (can) b->starved = b->starved_any_queue = false;
  LWLockRelease(shared->budget_lock);
  if (!can) {
    if (t) add_timer(d, budget, *t);
    return;
  }
  if (any)
    wake_all_waiters();
  else
    wake_waiters(hash, MaxBackends);
  (void)wakes;
}

void evaluate(Dispatcher &d, int32 budget, Wakes &wakes) {
  int64 now = monotonic_us();
  LWLockAcquire(shared->budget_lock, LW_SHARED);
  Snapshot s = snapshot_of(budget);
  LWLockRelease(shared->budget_lock);
  if (!s.found) return;
  LineJob *jobs = nullptr;
  int n = any_parked(s.parked) ? read_lines(budget, s.parked, &jobs) : 0;
  LinePlan plan = start_plan(budget, n);
  // A job an open dequeue has claimed may be taken or handed back: its line
  // waits until that dequeue ends (which evaluates the line again). One it
  // has paid for and taken is as good as taken: the jobs behind it are
  // offered now, on what the tokens have left (a rollback refunds and has
  // the line evaluated again).
  ClaimState *claims = static_cast<ClaimState *>(palloc(sizeof(ClaimState) * ZZ_MAX(n, 1)));
  int64 *ids = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(n, 1)));
  for (int i = 0; i < n; ++i) ids[i] = jobs[i].id;
  claim_states(ids, n, claims);
  const char *line = nullptr;
  bool line_done = false;
  for (int i = 0; i < n; ++i) {
    const LineJob &j = jobs[i];
    if (line == nullptr || strcmp(line, j.queue) != 0) {
      line = j.queue;
      line_done = false;
    }
    if (line_done || claims[i] == ClaimState::Paid) continue;
    if (claims[i] == ClaimState::Open) {
      line_done = true;
      continue;
    }
    // Budgeted jobs not parked ahead of it are the line's real head (a
    // dequeue takes or parks them, which re-evaluates the line); a job
    // waiting in another budget's line holds this line behind it.
    if (unparked_ahead(j, budget) || !heads_other_lines(j, budget)) {
      line_done = true;
      continue;
    }
    std::optional<int64> when;
    if (!affordable(j, plan, now, &when)) {
      if (when) add_timer(d, budget, *when);
      plan_offer(plan, j, /*standby=*/true);
      line_done = true;
      continue;
    }
    plan_offer(plan, j, /*standby=*/false);
  }
  carry_out(d, plan, wakes);
  serve_starved(d, budget, now, wakes);
}

// Removes and returns the due timers' budgets; handed_off[i] (when asked)
// whether that timer was put back after a hand-off.
int32 *due_budgets(Dispatcher &d, int *n, bool **handed_off = nullptr) {
  int64 now = monotonic_us();
  long count = hash_get_num_entries(d.timers);
  int32 *ids = static_cast<int32 *>(palloc(sizeof(int32) * ZZ_MAX(count, 1)));
  bool *flags = static_cast<bool *>(palloc(sizeof(bool) * ZZ_MAX(count, 1)));
  *n = 0;
  HASH_SEQ_STATUS scan;
  hash_seq_init(&scan, d.timers);
  for (auto *t = static_cast<Timer *>(hash_seq_search(&scan)); t != nullptr;
       t = static_cast<Timer *>(hash_seq_search(&scan)))
    if (t->due_us <= now) {
      flags[*n] = t->handed_off;
      ids[(*n)++] = t->budget;
    }
  if (handed_off != nullptr) *handed_off = flags;
  for (int i = 0; i < *n; ++i) hash_search(d.timers, &ids[i], HASH_REMOVE, nullptr);
  return ids;
}

bool dirty_pending() {
  LWLockAcquire(shared->budget_lock, LW_SHARED);
  bool pending = shared->dirty_count > 0;
  LWLockRelease(shared->budget_lock);
  return pending;
}

bool timers_due(Dispatcher &d) {
  int64 now = monotonic_us();
  HASH_SEQ_STATUS scan;
  hash_seq_init(&scan, d.timers);
  for (auto *t = static_cast<Timer *>(hash_seq_search(&scan)); t != nullptr;
       t = static_cast<Timer *>(hash_seq_search(&scan)))
    if (t->due_us <= now) {
      hash_seq_term(&scan);
      return true;
    }
  return false;
}

int32 *dirty_budgets(int *n) {
  LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
  int32 *ids = static_cast<int32 *>(palloc(sizeof(int32) * ZZ_MAX(shared->dirty_count, 1)));
  *n = 0;
  for (int32 id = pop_dirty(); id != 0; id = pop_dirty()) ids[(*n)++] = id;
  LWLockRelease(shared->budget_lock);
  return ids;
}

SPIPlanPtr ready_queues_plan = nullptr;

// The NOTIFYs of noted queues go out at most once a millisecond. Each batch
// is a transaction with a commit record; without a spacing, producers
// enqueueing thousands of jobs a second would have the dispatcher commit
// (and wake the WAL writer) about once per enqueue, and each enqueue would
// signal the dispatcher. Queues noted meanwhile stay pending and go out
// together at the end of the spacing: the first note after a send signals
// the dispatcher (which then sleeps until the spacing ends), the others
// signal nobody.
// Workers blocked in dequeue(wait) do not wait for this: their latches are
// set at the enqueue's commit. Only LISTEN clients can see up to this much
// more delay, and only while notifications are that frequent.
constexpr int64 kNotifySpacingUs = 1000;

bool notifications_pending() {
  LWLockAcquire(shared->waiter_lock, LW_SHARED);
  bool pending = shared->notify_count > 0 || shared->notify_overflow;
  LWLockRelease(shared->waiter_lock);
  return pending;
}

// When the pending notifications may go out: now, or the end of the
// spacing (monotonic µs); 0 when none are pending.
int64 notifications_due_at(const Dispatcher &d) {
  if (!notifications_pending()) return 0;
  return d.notified_us == 0 ? monotonic_us() : d.notified_us + kNotifySpacingUs;
}

bool notifications_due(const Dispatcher &d) {
  int64 due = notifications_due_at(d);
  return due != 0 && due <= monotonic_us();
}

// NOTIFY zizq for the queues that got dispatchable jobs (noted at commit by
// enqueues, releases, promotions; once the spacing allows) and for the
// queues this evaluation offered jobs in. With more queues than slots, every
// queue with ready jobs.
void send_notifications(Dispatcher &d, const Wakes &wakes) {
  for (int i = 0; i < wakes.n; ++i) Async_Notify("zizq", wakes.queues[i]);
  if (!notifications_due(d)) return;
  d.notified_us = monotonic_us();
  QueueName pending[kNotifySlots];
  bool overflow = false;
  int n = take_notifies(pending, kNotifySlots, &overflow);
  for (int i = 0; i < n; ++i) Async_Notify("zizq", pending[i].name);
  if (!overflow) return;
  prepared(ready_queues_plan,
           "WITH RECURSIVE q AS ((SELECT queue FROM zizq._jobs WHERE status = 'ready' AND NOT parked "
           "ORDER BY queue LIMIT 1) UNION ALL SELECT (SELECT queue FROM zizq._jobs WHERE status = 'ready' "
           "AND NOT parked AND queue > q.queue ORDER BY queue LIMIT 1) FROM q WHERE q.queue IS NOT NULL) "
           "SELECT queue FROM q WHERE queue IS NOT NULL",
           {});
  uint64 rows = run_plan(ready_queues_plan, nullptr, nullptr, true);
  for (uint64 i = 0; i < rows; ++i) Async_Notify("zizq", column_text(i, 1));
}

bool evaluate_phase(Dispatcher &d) {
  if (!dirty_pending() && !timers_due(d) && !notifications_due(d)) return true;
  begin("zizq dispatcher: evaluating budgets");
  if (!try_lock_tables(AccessShareLock)) {
    end();
    return false;
  }
  int ndirty, ndue;
  int32 *dirty = dirty_budgets(&ndirty);
  int32 *timed = due_budgets(d, &ndue);
  Wakes wakes;
  wakes.n = 0;
  for (int i = 0; i < ndirty; ++i) evaluate(d, dirty[i], wakes);
  for (int i = 0; i < ndue; ++i) {
    bool seen = false;
    for (int j = 0; j < ndirty && !seen; ++j) seen = dirty[j] == timed[i];
    if (!seen) evaluate(d, timed[i], wakes);
  }
  send_notifications(d, wakes);
  end();
  return true;
}

TimestampTz next_timer(Dispatcher &d) {
  int64 first = 0;
  HASH_SEQ_STATUS scan;
  hash_seq_init(&scan, d.timers);
  for (auto *t = static_cast<Timer *>(hash_seq_search(&scan)); t != nullptr;
       t = static_cast<Timer *>(hash_seq_search(&scan)))
    if (first == 0 || t->due_us < first) first = t->due_us;
  return first == 0 ? 0 : wall_time_of(first);
}

}  // namespace

void start(Dispatcher &d) {
  memset(&d, 0, sizeof d);
  HASHCTL info;
  memset(&info, 0, sizeof info);
  info.keysize = sizeof(int32);
  info.entrysize = sizeof(Timer);
  info.hcxt = TopMemoryContext;
  d.timers = hash_create("zizq dispatcher timers", 256, &info, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

// Due timers whose budget's standby offer can now be paid: a worker of its
// queue is woken first thing, with no SQL. The wake is a hint (the worker
// may take another job): the timer stays, for an evaluation that offers the
// line again and sends the NOTIFYs. After a wake it comes a little later: a
// woken worker takes the standby within a millisecond or two, and an
// evaluation meanwhile would compete with it for the CPU and the budget
// lock (the taker's commit has the line evaluated anyway).
constexpr int64 kHandOffWindowUs = 2000;

void hand_off_standbys(Dispatcher &d) {
  int n;
  bool *handed_off;
  int32 *due = due_budgets(d, &n, &handed_off);
  int64 now = monotonic_us();
  for (int i = 0; i < n; ++i) {
    if (handed_off[i]) {  // the hand-off did not settle it: evaluate now
      add_timer(d, due[i], now);
      continue;
    }
    LWLockAcquire(shared->budget_lock, LW_SHARED);
    BudgetEntry *b = find_budget(due[i]);
    const Offer *o = b != nullptr ? affordable_standby(b, now) : nullptr;
    uint32 queue = o != nullptr ? o->queue_hash : 0;
    LWLockRelease(shared->budget_lock);
    bool woken = o != nullptr && wake_waiters(queue, 1) > 0;
    add_timer(d, due[i], woken ? now + kHandOffWindowUs : now, woken);
  }
  // Outside any transaction, in TopMemoryContext: every cycle runs this.
  pfree(due);
  pfree(handed_off);
}

TimestampTz run_cycle(Dispatcher &d) {
  hand_off_standbys(d);
  TimestampTz busy_retry = GetCurrentTimestamp() + kBusyRetryMs * 1000;
  Phase written = write_phase(d);
  if (written == Phase::Absent) return 0;
  if (written == Phase::Busy) return busy_retry;
  if (!d.started) {
    // A fresh dispatcher has no timers: look at every budget with parked
    // jobs. Park requests its predecessor took but did not commit are lost:
    // every budget counts as starved once, so that workers walk the jobs
    // left unparked as soon as tokens allow.
    LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, budget_hash);
    for (auto *b = static_cast<BudgetEntry *>(hash_seq_search(&scan)); b != nullptr;
         b = static_cast<BudgetEntry *>(hash_seq_search(&scan))) {
      b->starved = b->starved_any_queue = true;
      mark_dirty(b);
    }
    LWLockRelease(shared->budget_lock);
    d.started = true;
  }
  if (!evaluate_phase(d)) return busy_retry;
  TimestampTz next = earliest(earliest(d.next_scheduled, d.next_lease), earliest(d.next_purge, next_timer(d)));
  next = earliest(next, d.requeue_retry);
  int64 notify_at = notifications_due_at(d);
  if (notify_at != 0) next = earliest(next, wall_time_of(notify_at));
  // More due work than one batch: come straight back.
  return next;
}

}  // namespace zizq::dispatcher
