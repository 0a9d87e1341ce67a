// zizq complete (SPEC §2): a job's success. Applied only to jobs still in
// flight (a job whose lease ran out, that was released or deleted answers
// false), so no completion is ever applied twice. Completed jobs are removed
// at once unless their retention keeps them; the trigger job_delete (or
// job_update, for a kept job) gives their budgets' in-flight cost back at
// commit.
#include <algorithm>

#include "pg/pg.hpp"
#include "pg/floors.hpp"
#include "pg/shmem.hpp"
#include "pg/spi.hpp"
#include "pg/xact.hpp"

namespace zizq::pg {
namespace {

SPIPlanPtr delete_plan = nullptr, keep_plan = nullptr, errors_plan = nullptr;

// Up to three statements, each run only when needed: one DELETE when jobs
// are not retained (the default), one UPDATE when they are. (One statement
// with the three as CTEs initialised an UPDATE, with every index of
// zizq._jobs opened for it, on each call: a third of a single complete's
// time.) The statement for the default retention runs first; the other
// gets the ids it did not apply (retained otherwise, or not in flight).

// What a complete applied so far.
struct Applied {
  int64 *ids;  // room for every id asked
  int n;
  TimestampTz earliest_purge;  // of the jobs kept; 0: none
};

void delete_errors(const int64 *job_ids, int n) {
  if (n == 0) return;
  prepared(errors_plan, "DELETE FROM zizq._job_errors WHERE job_id = ANY ($1)", {INT8ARRAYOID});
  Datum args[1] = {int8_array(job_ids, n)};
  (void)run_plan(errors_plan, args, nullptr, false);
}

// Deletes the in-flight jobs among `ids` that nothing retains, with the
// errors of their attempts.
void delete_unretained(const int64 *ids, int n, Applied &done) {
  prepared(delete_plan,
           "DELETE FROM zizq._jobs WHERE id = ANY ($1) AND status = 'in_flight' "
           "AND COALESCE((retention->>'completed_ms')::bigint, $2) = 0 RETURNING id, attempts",
           {INT8ARRAYOID, INT8OID});
  Datum args[2] = {int8_array(ids, n), Int64GetDatum(guc_completed_retention_ms)};
  uint64 rows = 0;
  begin_own_delete();
  PG_TRY();
  {
    rows = run_plan(delete_plan, args, nullptr, false);
  }
  PG_FINALLY();
  {
    end_own_delete();
  }
  PG_END_TRY();
  int64 *with_errors = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(rows, 1)));
  int nerrors = 0;
  for (uint64 i = 0; i < rows; ++i) {
    done.ids[done.n++] = column_int64(i, 1);
    if (column_int32(i, 2) > 0) with_errors[nerrors++] = column_int64(i, 1);
  }
  delete_errors(with_errors, nerrors);
}

// Marks in-flight jobs among `ids` completed, kept until their retention
// ends: those retained, or (`any_retention`, after the DELETE) all of them,
// so that a job whose retention became 0 since the DELETE read it is
// completed all the same, and purged at once.
void keep_retained(const int64 *ids, int n, bool any_retention, Applied &done) {
  prepared(keep_plan,
           "UPDATE zizq._jobs SET status = 'completed', completed_at = clock_timestamp(), session_id = NULL,"
           "  lease_until = NULL, lease_ms = NULL,"
           "  purge_at = clock_timestamp() + COALESCE((retention->>'completed_ms')::bigint, $2) * interval '1 millisecond',"
           "  unique_hold = CASE WHEN unique_while = 'exists' THEN unique_hold END"
           " WHERE id = ANY ($1) AND status = 'in_flight'"
           "  AND ($3 OR COALESCE((retention->>'completed_ms')::bigint, $2) > 0) RETURNING id, purge_at",
           {INT8ARRAYOID, INT8OID, BOOLOID});
  Datum args[3] = {int8_array(ids, n), Int64GetDatum(guc_completed_retention_ms), BoolGetDatum(any_retention)};
  uint64 rows = run_plan(keep_plan, args, nullptr, false);
  for (uint64 i = 0; i < rows; ++i) {
    done.ids[done.n++] = column_int64(i, 1);
    bool isnull = false;
    TimestampTz purge = DatumGetTimestampTz(column(i, 2, &isnull));
    if (!isnull && (done.earliest_purge == 0 || purge < done.earliest_purge)) done.earliest_purge = purge;
  }
}

// The ids the first statement did not apply, in `rest`; returns how many.
int not_applied(const int64 *ids, int n, const Applied &done, int64 *rest) {
  int64 *sorted = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(done.n, 1)));
  std::copy(done.ids, done.ids + done.n, sorted);
  std::sort(sorted, sorted + done.n);
  int nrest = 0;
  for (int i = 0; i < n; ++i)
    if (!std::binary_search(sorted, sorted + done.n, ids[i])) rest[nrest++] = ids[i];
  return nrest;
}

// Completes the in-flight jobs among ids[0, n); returns how many, their
// ids in `applied` (room for n).
int complete_jobs(const int64 *ids, int n, int64 *applied) {
  Applied done{applied, 0, 0};
  bool retained_by_default = guc_completed_retention_ms > 0;
  if (retained_by_default)
    keep_retained(ids, n, /*any_retention=*/false, done);
  else
    delete_unretained(ids, n, done);
  int64 *rest = static_cast<int64 *>(palloc(sizeof(int64) * n));
  int nrest = done.n == n ? 0 : not_applied(ids, n, done, rest);
  if (nrest > 0 && retained_by_default) delete_unretained(rest, nrest, done);
  if (nrest > 0 && !retained_by_default) keep_retained(rest, nrest, /*any_retention=*/true, done);
  if (done.earliest_purge != 0) at_commit_wake_dispatcher_before(done.earliest_purge);
  return done.n;
}

}  // namespace
}  // namespace zizq::pg

using namespace zizq::pg;

extern "C" {

PG_FUNCTION_INFO_V1(zizq_complete_one);
Datum zizq_complete_one(PG_FUNCTION_ARGS) {
  require_shared();
  int64 id = PG_GETARG_INT64(0);
  bool only_own_before = only_own_changes_so_far();
  if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "zizq: SPI_connect failed");
  int64 applied[1];
  int done = complete_jobs(&id, 1, applied);
  SPI_finish();
  note_own_change(only_own_before, OwnChange::Durable);
  PG_RETURN_BOOL(done > 0);
}

// Returns the ids that were not applied (no longer in flight, or unknown),
// in the order given; a NULL id is never applied and comes back as NULL,
// as in release and heartbeat.
PG_FUNCTION_INFO_V1(zizq_complete_many);
Datum zizq_complete_many(PG_FUNCTION_ARGS) {
  require_shared();
  int64 *ids;
  bool *nulls;
  int n = array_int8(PG_GETARG_DATUM(0), &ids, &nulls);
  int64 *given = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(n, 1)));
  int ngiven = 0;
  for (int i = 0; i < n; ++i)
    if (!nulls[i]) given[ngiven++] = ids[i];
  MemoryContext outer = CurrentMemoryContext;
  bool only_own_before = only_own_changes_so_far();
  if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "zizq: SPI_connect failed");
  int64 *applied = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(ngiven, 1)));
  int done = complete_jobs(given, ngiven, applied);
  MemoryContext old = MemoryContextSwitchTo(outer);
  int64 *missed = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(n, 1)));
  bool *missed_null = static_cast<bool *>(palloc(sizeof(bool) * ZZ_MAX(n, 1)));
  MemoryContextSwitchTo(old);
  std::sort(applied, applied + done);
  int nmissed = 0;
  for (int i = 0; i < n; ++i) {
    if (!nulls[i] && std::binary_search(applied, applied + done, ids[i])) continue;
    missed[nmissed] = ids[i];
    missed_null[nmissed++] = nulls[i];
  }
  SPI_finish();
  note_own_change(only_own_before, OwnChange::Durable);
  PG_RETURN_DATUM(int8_array_with_nulls(missed, missed_null, nmissed));
}

}  // extern "C"
