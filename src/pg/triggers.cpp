// zizq triggers on zizq._jobs: the rules every path that changes a job must
// obey, whoever runs the UPDATE or DELETE (see sql/zizq--1.0.sql, part 3).
// Row triggers without WHEN clauses: the checks here cost less than
// PostgreSQL's per-statement compilation of a WHEN qual. The UPDATE trigger
// runs BEFORE (it may unpark the new row), queueing nothing for after the
// statement. The DELETE trigger runs AFTER: before a BEFORE ROW DELETE
// trigger the executor locks the row, a WAL record per completed job. The
// work they record happens at commit (xact.cpp), so a row that is not in
// the end updated changes nothing.
#include "pg/pg.hpp"
#include "pg/job_row.hpp"
#include "pg/shmem.hpp"
#include "pg/spi.hpp"
#include "pg/triggers.hpp"
#include "pg/floors.hpp"
#include "pg/lines.hpp"
#include "pg/xact.hpp"

namespace zizq::pg {
namespace {

// Attribute numbers of zizq._jobs, looked up once per relation.
struct JobAttrs {
  Oid relid;
  int status, queue, priority, budget_ids, budget_costs, parked, id;
};

const JobAttrs &attrs_of(Relation rel) {
  static JobAttrs a{InvalidOid, 0, 0, 0, 0, 0, 0, 0};
  if (a.relid != RelationGetRelid(rel)) {
    TupleDesc d = RelationGetDescr(rel);
    a = JobAttrs{RelationGetRelid(rel),        SPI_fnumber(d, "status"),       SPI_fnumber(d, "queue"),
                 SPI_fnumber(d, "priority"),   SPI_fnumber(d, "budget_ids"),   SPI_fnumber(d, "budget_costs"),
                 SPI_fnumber(d, "parked"),     SPI_fnumber(d, "id")};
  }
  return a;
}

TriggerData *trigger_data(FunctionCallInfo fcinfo, const char *name) {
  if (!CALLED_AS_TRIGGER(fcinfo)) elog(ERROR, "%s: not called by trigger manager", name);
  // Writes to zizq._jobs reach shared memory, which holds the budgets of
  // zizq.database only: refused in a database the setting no longer names.
  require_shared();
  return reinterpret_cast<TriggerData *>(fcinfo->context);
}

// A view of one row's columns.
struct Row {
  HeapTuple tuple;
  TupleDesc desc;
  Datum get(int att, bool *isnull) const { return heap_getattr(tuple, att, desc, isnull); }
  bool is_status(int att, const char *status) const {
    bool isnull = false;
    Datum d = get(att, &isnull);
    return !isnull && text_is(d, status);
  }
  bool flag(int att) const {
    bool isnull = false;
    Datum d = get(att, &isnull);
    return !isnull && DatumGetBool(d);
  }
  bool is_null(int att) const {
    bool isnull = false;
    get(att, &isnull);
    return isnull;
  }
};

bool same_column(const Row &a, const Row &b, int att) {
  bool an = false, bn = false;
  Datum ad = a.get(att, &an), bd = b.get(att, &bn);
  if (an || bn) return an == bn;
  Form_pg_attribute f = TupleDescAttr(a.desc, att - 1);
  return datumIsEqual(ad, bd, f->attbyval, f->attlen);
}

// A row's bindings, read up to what both arrays hold and at most
// kMaxBindings: rows written around zizq (a superuser's UPDATE, COPY, a
// crafted dump) may have other shapes, and the per-position counts in
// shared memory (parked[k]) must never be indexed past. `well_formed`:
// the arrays are as zizq writes them.
int bindings_of(const Row &r, const JobAttrs &a, int32 **ids, int32 **costs, bool *well_formed = nullptr) {
  if (well_formed != nullptr) *well_formed = true;
  bool ids_null = false, costs_null = false;
  Datum d = r.get(a.budget_ids, &ids_null);
  Datum c = r.get(a.budget_costs, &costs_null);
  if (ids_null || costs_null) {
    if (well_formed != nullptr) *well_formed = ids_null == costs_null;
    return 0;
  }
  int n = array_int4(d, ids);
  int m = array_int4(c, costs);
  if (well_formed != nullptr) *well_formed = n == m && n >= 1 && n <= zizq::core::kMaxBindings;
  return ZZ_MIN(ZZ_MIN(n, m), zizq::core::kMaxBindings);
}

void release_at_commit(const Row &old, const JobAttrs &a) {
  int32 *ids, *costs;
  int n = bindings_of(old, a, &ids, &costs);
  reserve_ops(n);
  for (int i = 0; i < n; ++i) at_commit_release(ids[i], costs[i]);
}

void leave_lines_at_commit(const Row &old, const JobAttrs &a) {
  int32 *ids, *costs;
  int n = bindings_of(old, a, &ids, &costs);
  reserve_ops(2 * n);
  for (int k = 0; k < n; ++k) {
    at_commit_parked_drop(ids[k], k);
    at_commit_dirty(ids[k]);
  }
}

zizq::core::FloorKind floor_kind(const Row &r, const JobAttrs &a) {
  return r.is_null(a.budget_ids) ? zizq::core::FloorKind::Free : zizq::core::FloorKind::Budgeted;
}

// Ready and not parked: in an index a dequeue scans from its queue's floor
// of the job's kind.
void note_if_hidden(const Row &old, const JobAttrs &a) {
  if (old.is_status(a.status, "ready") && !old.flag(a.parked)) note_hidden_ready_job(floor_kind(old, a));
}

void announce_ready(const Row &row, const JobAttrs &a) {
  bool isnull = false;
  char *queue = TextDatumGetCString(row.get(a.queue, &isnull));
  at_commit_lower_floor(queue, floor_kind(row, a), DatumGetInt32(row.get(a.priority, &isnull)),
                        DatumGetInt64(row.get(a.id, &isnull)));
  reserve_ops(1);
  at_commit_wake_queue(queue_hash(queue, strlen(queue)), 1);
  at_commit_notify(queue);
}

}  // namespace

HeapTuple job_update_rules(Relation rel, HeapTuple old_tuple, HeapTuple new_tuple) {
  if (shared == nullptr) return new_tuple;
  const JobAttrs &a = attrs_of(rel);
  TupleDesc desc = RelationGetDescr(rel);
  Row old{old_tuple, desc}, now{new_tuple, desc};

  if (old.is_status(a.status, "in_flight") && !now.is_status(a.status, "in_flight") && !old.is_null(a.budget_ids))
    release_at_commit(old, a);
  note_if_hidden(old, a);

  bool was_parked = old.flag(a.parked);
  bool moved = !same_column(old, now, a.status) || !same_column(old, now, a.queue) || !same_column(old, now, a.id) ||
               !same_column(old, now, a.priority) || !same_column(old, now, a.budget_ids) ||
               !same_column(old, now, a.budget_costs);
  if (was_parked && (!now.flag(a.parked) || moved)) {
    leave_lines_at_commit(old, a);
    if (now.flag(a.parked)) {
      int col = a.parked;
      Datum value = BoolGetDatum(false);
      bool null = false;
      now.tuple = heap_modify_tuple_by_cols(now.tuple, desc, 1, &col, &value, &null);
    }
  }

  if (now.is_status(a.status, "ready") && !now.flag(a.parked) &&
      (!old.is_status(a.status, "ready") || was_parked || moved))
    announce_ready(now, a);
  return now.tuple;
}

}  // namespace zizq::pg

using namespace zizq::pg;

extern "C" {

PG_FUNCTION_INFO_V1(zizq_trg_job_update);
Datum zizq_trg_job_update(PG_FUNCTION_ARGS) {
  TriggerData *td = trigger_data(fcinfo, "zizq_trg_job_update");
  return PointerGetDatum(job_update_rules(td->tg_relation, td->tg_trigtuple, td->tg_newtuple));
}

PG_FUNCTION_INFO_V1(zizq_trg_job_delete);
Datum zizq_trg_job_delete(PG_FUNCTION_ARGS) {
  TriggerData *td = trigger_data(fcinfo, "zizq_trg_job_delete");
  if (shared == nullptr) return PointerGetDatum(td->tg_trigtuple);
  const JobAttrs &a = attrs_of(td->tg_relation);
  Row old{td->tg_trigtuple, RelationGetDescr(td->tg_relation)};
  if (old.is_status(a.status, "in_flight") && !old.is_null(a.budget_ids)) release_at_commit(old, a);
  if (old.flag(a.parked)) leave_lines_at_commit(old, a);
  // AFTER: the result is ignored (zizq_trg_jobs_deleting noted hidden jobs).
  // Still declared BEFORE by an install script older than this library, the
  // row must be returned or its delete would be skipped.
  return TRIGGER_FIRED_BEFORE(td->tg_event) ? PointerGetDatum(td->tg_trigtuple) : PointerGetDatum(nullptr);
}

// Statement triggers for writes around zizq's functions. Rows inserted by
// COPY, pg_restore or a plain INSERT may be ready below their queues'
// floors, with no key known: every floor goes after the commit. A TRUNCATE
// outside zizq.reset() hides every ready job from the rest of its
// transaction, as reset() does.
PG_FUNCTION_INFO_V1(zizq_trg_jobs_inserted);
Datum zizq_trg_jobs_inserted(PG_FUNCTION_ARGS) {
  (void)trigger_data(fcinfo, "zizq_trg_jobs_inserted");
  if (shared != nullptr && !in_own_insert()) at_commit_clear_floors();
  return PointerGetDatum(nullptr);
}

// A job inserted around zizq's functions (pg_restore's COPY into a running
// server, an operator's INSERT) in flight or parked: the live state counts it
// as zizq's own calls would have. Parked, its budgets count it as the
// dispatcher's own park does (uncounted, their lines were never looked at
// again, and it waited until a restart). In flight, its budgets carry its
// cost as a load counts it (taken off if this rolls back), and the
// dispatcher looks for jobs of sessions that no longer exist (a restored
// job's session is another server's). A budget not in shared memory yet
// counts such jobs when its row comes (pg_restore copies zizq._jobs first);
// while the dispatcher loads, the load starts over (count_now_or_reload).
// zizq's own enqueue counts the jobs it parks itself; the WHEN clause
// leaves out other rows.
void count_inserted_in_flight(const int32 *ids, const int32 *costs, int n) {
  reserve_ops(n);
  LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
  for (int k = 0; k < n && count_now_or_reload(); ++k) {
    BudgetEntry *b = find_budget(ids[k]);
    if (b == nullptr) continue;
    b->tokens.in_flight += costs[k];
    record_in_flight_charge(ids[k], costs[k]);
  }
  LWLockRelease(shared->budget_lock);
}

PG_FUNCTION_INFO_V1(zizq_trg_job_inserted_live);
Datum zizq_trg_job_inserted_live(PG_FUNCTION_ARGS) {
  TriggerData *td = trigger_data(fcinfo, "zizq_trg_job_inserted_live");
  if (shared == nullptr || in_own_insert()) return PointerGetDatum(nullptr);
  const JobAttrs &a = attrs_of(td->tg_relation);
  Row row{td->tg_trigtuple, RelationGetDescr(td->tg_relation)};
  int32 *ids, *costs;
  bool well_formed;
  int n = bindings_of(row, a, &ids, &costs, &well_formed);
  if (!well_formed) {
    bool isnull = false;
    ereport(ERROR, (errcode(ERRCODE_CHECK_VIOLATION),
                    errmsg("job %lld has budget_ids and budget_costs zizq cannot read",
                           static_cast<long long>(DatumGetInt64(row.get(a.id, &isnull)))),
                    errdetail("A job binds 1 to %d budgets, with one cost each, or none (both NULL).",
                              zizq::core::kMaxBindings)));
  }
  if (row.is_status(a.status, "in_flight")) {
    if (n > 0) count_inserted_in_flight(ids, costs, n);
    reserve_ops(1);
    at_commit_sweep_sessions();
  } else if (row.is_status(a.status, "ready") && row.flag(a.parked) && n > 0) {
    note_parked(ids, n);
  }
  return PointerGetDatum(nullptr);
}

// Before any other DELETE: it may remove ready jobs, which a rollback would
// bring back (see note_if_hidden). Noted here rather than per row, as the
// row trigger runs only after the statement. complete's DELETE removes
// in-flight jobs only.
PG_FUNCTION_INFO_V1(zizq_trg_jobs_deleting);
Datum zizq_trg_jobs_deleting(PG_FUNCTION_ARGS) {
  (void)trigger_data(fcinfo, "zizq_trg_jobs_deleting");
  if (!in_own_delete()) note_hidden_ready_jobs_of_all_kinds();
  return PointerGetDatum(nullptr);
}

PG_FUNCTION_INFO_V1(zizq_trg_jobs_truncated);
Datum zizq_trg_jobs_truncated(PG_FUNCTION_ARGS) {
  (void)trigger_data(fcinfo, "zizq_trg_jobs_truncated");
  note_hidden_ready_jobs_of_all_kinds();
  // The jobs' in-flight costs, parked counts and offers leave with them:
  // without this, the tokens of in-flight jobs never came back.
  at_commit_clear_job_state();
  at_commit_wake_dispatcher();
  return PointerGetDatum(nullptr);
}

}  // extern "C"
