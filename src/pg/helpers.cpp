// zizq boundary: small SQL-callable helpers that give plpgsql functions the
// core rules (names, retries, retention, job patches) and wake-ups.
#include <random>
#include <string>

#include "core/backoff.hpp"
#include "core/job_spec.hpp"
#include "core/json.hpp"
#include "core/names.hpp"

#include "pg/errors.hpp"
#include "pg/floors.hpp"
#include "pg/jsonb_text.hpp"
#include "pg/pg.hpp"
#include "pg/shmem.hpp"
#include "pg/xact.hpp"

namespace zizq::pg {

core::Backoff default_backoff() {
  core::Backoff b;
  b.base_ms = guc_backoff_base_ms;
  b.exponent = guc_backoff_exponent;
  b.jitter_ms = guc_backoff_jitter_ms;
  return b;
}

core::Retention default_retention() {
  core::Retention r;
  r.completed_ms = guc_completed_retention_ms;
  r.dead_ms = guc_dead_retention_ms;
  return r;
}

}  // namespace zizq::pg

using namespace zizq;
using namespace zizq::pg;

extern "C" {

PG_FUNCTION_INFO_V1(zizq_check_database);
Datum zizq_check_database(PG_FUNCTION_ARGS) {
  require_shared();  // refuses any other database than zizq.database
  PG_RETURN_VOID();
}

// CREATE EXTENSION: shared memory may hold budgets of an earlier install
// (ids are reused); drop them and let the dispatcher load from the new tables.
PG_FUNCTION_INFO_V1(zizq_reset_shared);
Datum zizq_reset_shared(PG_FUNCTION_ARGS) {
  require_shared();
  // Only while the install script runs: at any other time, transactions
  // under way could have changes logged or applied by neither side.
  if (!creating_extension)
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("zizq._reset_shared() runs only within CREATE EXTENSION zizq")));
  reset_shared_state(/*wait_writers=*/false);
  PG_RETURN_VOID();
}

// zizq.forget_scan_floors(): every queue's dequeues scan from the bottom
// again (floors.hpp). Jobs written already are committed, so at once.
PG_FUNCTION_INFO_V1(zizq_forget_scan_floors);
Datum zizq_forget_scan_floors(PG_FUNCTION_ARGS) {
  require_shared();
  clear_all_floors();
  PG_RETURN_VOID();
}

// zizq.scan_floors(): where dequeues of each queue start their scans, for
// operators and tests. A floor past every job (none was ready when it
// rose) has NULL priority and id.
PG_FUNCTION_INFO_V1(zizq_scan_floors);
Datum zizq_scan_floors(PG_FUNCTION_ARGS) {
  require_shared();
  ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
  InitMaterializedSRF(fcinfo, 0);
  constexpr int kMaxRows = core::kFloorSlots * core::kFloorKinds;
  FloorRow *rows = static_cast<FloorRow *>(palloc(sizeof(FloorRow) * kMaxRows));
  int n = copy_floors(rows, kMaxRows);
  for (int i = 0; i < n; ++i) {
    bool past_all = rows[i].floor == core::kAboveAllKeys;
    Datum values[4] = {CStringGetTextDatum(rows[i].queue),
                       CStringGetTextDatum(rows[i].kind == core::FloorKind::Free ? "free" : "budgeted"),
                       Int32GetDatum(rows[i].floor.priority), Int64GetDatum(rows[i].floor.id)};
    bool nulls[4] = {false, false, past_all, past_all};
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
  }
  return (Datum)0;
}

PG_FUNCTION_INFO_V1(zizq_check_name);
Datum zizq_check_name(PG_FUNCTION_ARGS) {
  char *kind = text_to_cstring(PG_GETARG_TEXT_PP(0));
  text *name = PG_GETARG_TEXT_PP(1);
  const char *data = VARDATA_ANY(name);
  int len = VARSIZE_ANY_EXHDR(name);
  run_core([&] { core::check_name(kind, std::string_view(data, len)); });
  PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(zizq_default_retry_limit);
Datum zizq_default_retry_limit(PG_FUNCTION_ARGS) { PG_RETURN_INT32(guc_retry_limit); }

// Milliseconds until the next attempt of a job that has failed `attempts`
// times, by its own backoff or the server's.
PG_FUNCTION_INFO_V1(zizq_retry_delay_ms);
Datum zizq_retry_delay_ms(PG_FUNCTION_ARGS) {
  int32 attempts = PG_ARGISNULL(0) ? 1 : PG_GETARG_INT32(0);
  char *backoff = PG_ARGISNULL(1) ? nullptr : jsonb_datum_text(PG_GETARG_DATUM(1));
  double random01 = pg_prng_double(&pg_global_prng_state);
  int64 delay = 0;
  core::Backoff defaults = default_backoff();
  run_core([&] {
    core::json::Value job = backoff ? core::json::parse(backoff) : core::json::Value::null();
    delay = core::backoff_delay_ms(core::backoff_with(defaults, &job), attempts, random01);
  });
  PG_RETURN_INT64(delay);
}

// How long a job is kept once `terminal` ("completed" or "dead").
PG_FUNCTION_INFO_V1(zizq_retention_ms);
Datum zizq_retention_ms(PG_FUNCTION_ARGS) {
  char *retention = PG_ARGISNULL(0) ? nullptr : jsonb_datum_text(PG_GETARG_DATUM(0));
  char *terminal = text_to_cstring(PG_GETARG_TEXT_PP(1));
  int64 ms = 0;
  core::Retention defaults = default_retention();
  run_core([&] {
    core::json::Value job = retention ? core::json::parse(retention) : core::json::Value::null();
    core::Retention r = core::retention_with(defaults, &job);
    ms = strcmp(terminal, "dead") == 0 ? r.dead_ms : r.completed_ms;
  });
  PG_RETURN_INT64(ms);
}

// Validates an update_job patch and resolves it against the job's current
// backoff and retention. One row: for each field its change (keep / set /
// reset / now) and new value.
PG_FUNCTION_INFO_V1(zizq_job_patch);
Datum zizq_job_patch(PG_FUNCTION_ARGS) {
  if (PG_ARGISNULL(0))
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("patch must not be NULL")));
  char *patch = jsonb_datum_text(PG_GETARG_DATUM(0));
  char *backoff = PG_ARGISNULL(1) ? nullptr : jsonb_datum_text(PG_GETARG_DATUM(1));
  char *retention = PG_ARGISNULL(2) ? nullptr : jsonb_datum_text(PG_GETARG_DATUM(2));
  size_t room = strlen(patch) + (backoff ? strlen(backoff) : 0) + (retention ? strlen(retention) : 0) + 64;
  char *queue = static_cast<char *>(palloc0(room));
  char *ready_at = static_cast<char *>(palloc0(room));
  char *new_backoff = static_cast<char *>(palloc0(2 * room));
  char *new_retention = static_cast<char *>(palloc0(2 * room));
  bool has_queue = false, has_priority = false;
  int32 priority = 0, retry_limit = 0;
  const char *ready_change = "keep", *retry_change = "keep", *backoff_change = "keep", *retention_change = "keep";
  bool backoff_null = true, retention_null = true;

  run_core([&] {
    using Change = core::JobPatch::Change;
    core::JobPatch p = core::parse_job_patch(core::json::parse(patch));
    if (p.queue) {
      has_queue = true;
      strlcpy(queue, p.queue->c_str(), room);
    }
    if (p.priority) {
      has_priority = true;
      priority = static_cast<int32>(*p.priority);
    }
    if (p.ready_at == Change::Reset) ready_change = "now";
    if (p.ready_at == Change::Set) {
      ready_change = "set";
      strlcpy(ready_at, p.ready_at_text.c_str(), room);
    }
    if (p.retry_limit != Change::Keep) {
      retry_change = p.retry_limit == Change::Set ? "set" : "reset";
      retry_limit = static_cast<int32>(std::min<int64_t>(p.retry_limit_value, INT32_MAX));
    }
    auto resolve = [&](Change change, const char *current, const core::json::Value &value, const char *&label,
                       bool &is_null, char *out, bool is_backoff) {
      if (change == Change::Keep) return;
      label = change == Change::Set ? "set" : "reset";
      if (change == Change::Reset) return;
      core::json::Value base = current ? core::json::parse(current) : core::json::Value::null();
      core::json::Value merged = is_backoff ? core::merged_backoff(base, value) : core::merged_retention(base, value);
      if (merged.is_null()) return;
      is_null = false;
      strlcpy(out, core::json::serialize(merged).c_str(), 2 * room);
    };
    resolve(p.backoff, backoff, p.backoff_patch, backoff_change, backoff_null, new_backoff, true);
    resolve(p.retention, retention, p.retention_patch, retention_change, retention_null, new_retention, false);
  });

  TupleDesc desc;
  if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE) elog(ERROR, "record type expected");
  desc = BlessTupleDesc(desc);
  Datum values[10];
  bool nulls[10] = {!has_queue, !has_priority, false, ready_change[0] != 's', false, retry_change[0] != 's',
                    false,      backoff_null,  false, retention_null};
  values[0] = has_queue ? CStringGetTextDatum(queue) : 0;
  values[1] = Int32GetDatum(priority);
  values[2] = CStringGetTextDatum(ready_change);
  values[3] = ready_change[0] == 's' ? CStringGetTextDatum(ready_at) : 0;
  values[4] = CStringGetTextDatum(retry_change);
  values[5] = Int32GetDatum(retry_limit);
  values[6] = CStringGetTextDatum(backoff_change);
  values[7] = backoff_null ? 0 : jsonb_from_text(new_backoff);
  values[8] = CStringGetTextDatum(retention_change);
  values[9] = retention_null ? 0 : jsonb_from_text(new_retention);
  PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

// What the dispatcher is doing, for operators and tests: whether it runs,
// whether budgets are loaded into shared memory, the offers standing, the
// budgeted jobs waiting to be parked, and when it plans to wake next.
PG_FUNCTION_INFO_V1(zizq_dispatcher_state);
Datum zizq_dispatcher_state(PG_FUNCTION_ARGS) {
  require_shared();
  LWLockAcquire(shared->waiter_lock, LW_SHARED);
  bool running = shared->dispatcher_latch != nullptr;
  TimestampTz next_wake = shared->dispatcher_next_wake;
  int waiting = 0;
  for (int i = 0; i < MaxBackends; ++i) waiting += waiters[i].latch != nullptr;
  // Queues noted for a NOTIFY not sent yet (-1: more than the slots hold).
  int pending_notifications = shared->notify_overflow ? -1 : shared->notify_count;
  LWLockRelease(shared->waiter_lock);
  LWLockAcquire(shared->budget_lock, LW_SHARED);
  bool loaded = shared->budgets_loaded;
  int offer_count = shared->offer_count, park_requests = shared->park_count, dirty = shared->dirty_count;
  long budgets = hash_get_num_entries(budget_hash);
  LWLockRelease(shared->budget_lock);
  TupleDesc desc;
  if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE) elog(ERROR, "record type expected");
  desc = BlessTupleDesc(desc);
  Datum values[9] = {BoolGetDatum(running), BoolGetDatum(loaded), Int64GetDatum(budgets), Int32GetDatum(offer_count),
                     Int32GetDatum(park_requests), Int32GetDatum(dirty), Int32GetDatum(waiting),
                     TimestampTzGetDatum(next_wake), Int32GetDatum(pending_notifications)};
  bool nulls[9] = {false, false, false, false, false, false, false, !running || next_wake == 0, false};
  PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

// Asks the dispatcher, at commit, to be awake by `when` (a retry's ready_at,
// a dead job's purge time).
PG_FUNCTION_INFO_V1(zizq_wake_dispatcher_at);
Datum zizq_wake_dispatcher_at(PG_FUNCTION_ARGS) {
  if (shared != nullptr && !PG_ARGISNULL(0)) at_commit_wake_dispatcher_before(PG_GETARG_TIMESTAMPTZ(0));
  PG_RETURN_VOID();
}

// Whether the dispatcher has offered this parked job to the next dequeue of
// its queue (a standby offer counts once its budgets can pay).
PG_FUNCTION_INFO_V1(zizq_offered);
Datum zizq_offered(PG_FUNCTION_ARGS) {
  require_shared();
  LWLockAcquire(shared->budget_lock, LW_SHARED);
  bool offered = offered_now(PG_GETARG_INT64(0), monotonic_us());
  LWLockRelease(shared->budget_lock);
  PG_RETURN_BOOL(offered);
}

PG_FUNCTION_INFO_V1(zizq_wake_dispatcher);
Datum zizq_wake_dispatcher(PG_FUNCTION_ARGS) {
  if (shared != nullptr) at_commit_wake_dispatcher();
  PG_RETURN_VOID();
}

}  // extern "C"
