// zizq complete (SPEC §2): a job's success. Applied only to jobs still in
// flight (a job whose lease ran out, that was released or deleted answers
// false), so no completion is ever applied twice. Completed jobs are removed
// at once unless their retention keeps them; the trigger flight_exit gives
// their budgets' in-flight cost back at commit.
#include <algorithm>

#include "pg/pg.hpp"
#include "pg/shmem.hpp"
#include "pg/spi.hpp"
#include "pg/xact.hpp"

namespace zizq::pg {
namespace {

SPIPlanPtr complete_plan = nullptr;

// Completes the in-flight jobs among `ids`; returns how many, their ids in
// SPI_tuptable (column 1). Column 2 is the purge time of retained ones.
uint64 complete_jobs(Datum ids) {
  prepared(complete_plan,
           "WITH gone AS ("
           "  DELETE FROM zizq._jobs WHERE id = ANY ($1) AND status = 'in_flight'"
           "    AND COALESCE((retention->>'completed_ms')::bigint, $2) = 0"
           "  RETURNING id, attempts),"
           " kept AS ("
           "  UPDATE zizq._jobs SET status = 'completed', completed_at = clock_timestamp(), session_id = NULL,"
           "    lease_until = NULL, lease_ms = NULL,"
           "    purge_at = clock_timestamp() + COALESCE((retention->>'completed_ms')::bigint, $2) * interval '1 millisecond',"
           "    unique_hold = CASE WHEN unique_while = 'exists' THEN unique_hold END"
           "  WHERE id = ANY ($1) AND status = 'in_flight' AND COALESCE((retention->>'completed_ms')::bigint, $2) > 0"
           "  RETURNING id, purge_at),"
           " errors AS (DELETE FROM zizq._job_errors e USING gone WHERE e.job_id = gone.id AND gone.attempts > 0)"
           " SELECT id, NULL::timestamptz FROM gone UNION ALL SELECT id, purge_at FROM kept",
           {INT8ARRAYOID, INT8OID});
  Datum args[2] = {ids, Int64GetDatum(guc_completed_retention_ms)};
  uint64 rows = run_plan(complete_plan, args, nullptr, false);
  TimestampTz earliest = 0;
  for (uint64 i = 0; i < rows; ++i) {
    bool isnull = false;
    Datum purge = column(i, 2, &isnull);
    if (!isnull && (earliest == 0 || DatumGetTimestampTz(purge) < earliest)) earliest = DatumGetTimestampTz(purge);
  }
  if (earliest != 0) at_commit_wake_dispatcher_before(earliest);
  return rows;
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
  uint64 done = complete_jobs(int8_array(&id, 1));
  SPI_finish();
  note_own_change(only_own_before, OwnChange::Durable);
  PG_RETURN_BOOL(done > 0);
}

// Returns the ids that were not applied (no longer in flight, or unknown).
PG_FUNCTION_INFO_V1(zizq_complete_many);
Datum zizq_complete_many(PG_FUNCTION_ARGS) {
  require_shared();
  int64 *ids;
  int n = array_int8(PG_GETARG_DATUM(0), &ids);
  MemoryContext outer = CurrentMemoryContext;
  bool only_own_before = only_own_changes_so_far();
  if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "zizq: SPI_connect failed");
  uint64 done = complete_jobs(int8_array(ids, n));
  MemoryContext old = MemoryContextSwitchTo(outer);
  int64 *missed = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(n, 1)));
  MemoryContextSwitchTo(old);
  int64 *applied = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(done, 1)));
  for (uint64 r = 0; r < done; ++r) applied[r] = column_int64(r, 1);
  std::sort(applied, applied + done);
  int nmissed = 0;
  for (int i = 0; i < n; ++i)
    if (!std::binary_search(applied, applied + done, ids[i])) missed[nmissed++] = ids[i];
  SPI_finish();
  note_own_change(only_own_before, OwnChange::Durable);
  PG_RETURN_DATUM(int8_array(missed, nmissed));
}

}  // extern "C"
