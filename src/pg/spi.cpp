// zizq boundary: SPI conveniences (see spi.hpp).
#include "pg/spi.hpp"

namespace zizq::pg {

// SPI leaves its procedure context current after every call, whatever was
// current before. The wrappers below switch back, so that what their
// caller allocates next goes where it chose: a dequeue(wait) runs each look
// in a context it resets, and allocations that went to SPI's context
// instead stayed until the call returned (35 kB per empty wake-up of a
// two-queue wait, 442 MB in 25 s in a helper's measurement). (No RAII
// guard: an error's longjmp would skip it, and its recovery resets the
// contexts anyway.)

SPIPlanPtr prepared(SPIPlanPtr &slot, const char *sql, const Oid *types, int ntypes) {
  if (slot != nullptr) return slot;
  MemoryContext caller = CurrentMemoryContext;
  // Generic plans: the statements are fixed, their parameters do not change
  // the best plan, and re-planning each call would cost more than running.
  SPIPlanPtr plan = SPI_prepare_cursor(sql, ntypes, const_cast<Oid *>(types), CURSOR_OPT_GENERIC_PLAN);
  if (plan == nullptr) elog(ERROR, "zizq: SPI_prepare failed (%s): %s", SPI_result_code_string(SPI_result), sql);
  SPI_keepplan(plan);
  MemoryContextSwitchTo(caller);
  slot = plan;
  return slot;
}

SPIPlanPtr prepared(SPIPlanPtr &slot, const char *sql, std::initializer_list<Oid> types) {
  return prepared(slot, sql, types.begin(), static_cast<int>(types.size()));
}

void plan_now(SPIPlanPtr plan) {
  ListCell *lc;
  foreach (lc, SPI_plan_get_plan_sources(plan)) {
    CachedPlan *cp = GetCachedPlan(static_cast<CachedPlanSource *>(lfirst(lc)), nullptr, nullptr, nullptr);
    ReleaseCachedPlan(cp, nullptr);
  }
}

uint64 run_plan(SPIPlanPtr plan, const Datum *values, const char *nulls, bool read_only, long limit) {
  MemoryContext caller = CurrentMemoryContext;
  int rc = SPI_execute_plan(plan, const_cast<Datum *>(values), nulls, read_only, limit);
  if (rc < 0) elog(ERROR, "zizq: SPI_execute_plan failed: %s", SPI_result_code_string(rc));
  MemoryContextSwitchTo(caller);
  return SPI_processed;
}

Datum column(uint64 row, int col, bool *isnull) {
  return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, isnull);
}

int64 column_int64(uint64 row, int col) {
  bool isnull = false;
  Datum d = column(row, col, &isnull);
  return isnull ? 0 : DatumGetInt64(d);
}

int32 column_int32(uint64 row, int col) {
  bool isnull = false;
  Datum d = column(row, col, &isnull);
  return isnull ? 0 : DatumGetInt32(d);
}

bool column_bool(uint64 row, int col) {
  bool isnull = false;
  Datum d = column(row, col, &isnull);
  return !isnull && DatumGetBool(d);
}

char *column_text(uint64 row, int col) {
  bool isnull = false;
  Datum d = column(row, col, &isnull);
  return isnull ? nullptr : TextDatumGetCString(d);
}

namespace {

// A one-dimensional array of n values (palloc'd), each made a Datum by `to_datum`.
template <typename T, typename ToDatum>
Datum datum_array(const T *values, int n, ToDatum to_datum, Oid type, int len, bool byval, char align) {
  Datum *elems = static_cast<Datum *>(palloc(sizeof(Datum) * ZZ_MAX(n, 1)));
  for (int i = 0; i < n; ++i) elems[i] = to_datum(values[i]);
  return PointerGetDatum(construct_array(elems, n, type, len, byval, align));
}

}  // namespace

Datum int4_array(const int32 *values, int n) {
  return datum_array(values, n, [](int32 v) { return Int32GetDatum(v); }, INT4OID, 4, true, TYPALIGN_INT);
}

Datum int8_array(const int64 *values, int n) {
  return datum_array(values, n, [](int64 v) { return Int64GetDatum(v); }, INT8OID, 8, FLOAT8PASSBYVAL,
                     TYPALIGN_DOUBLE);
}

Datum int8_array_with_nulls(const int64 *values, const bool *nulls, int n) {
  Datum *elems = static_cast<Datum *>(palloc(sizeof(Datum) * ZZ_MAX(n, 1)));
  for (int i = 0; i < n; ++i) elems[i] = Int64GetDatum(values[i]);
  int dims[1] = {n};
  int lbs[1] = {1};
  return PointerGetDatum(construct_md_array(elems, const_cast<bool *>(nulls), 1, dims, lbs, INT8OID, 8,
                                            FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

Datum xid_array(const TransactionId *values, int n) {
  return datum_array(values, n, [](TransactionId v) { return TransactionIdGetDatum(v); }, XIDOID, 4, true,
                     TYPALIGN_INT);
}

int array_int4(Datum array, int32 **out) {
  ArrayType *a = DatumGetArrayTypeP(array);
  Datum *elems;
  bool *nulls;
  int n;
  deconstruct_array(a, INT4OID, 4, true, TYPALIGN_INT, &elems, &nulls, &n);
  *out = static_cast<int32 *>(palloc(sizeof(int32) * ZZ_MAX(n, 1)));
  for (int i = 0; i < n; ++i) (*out)[i] = nulls[i] ? 0 : DatumGetInt32(elems[i]);
  return n;
}

int array_int8(Datum array, int64 **out, bool **nulls) {
  ArrayType *a = DatumGetArrayTypeP(array);
  Datum *elems;
  int n;
  deconstruct_array(a, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, nulls, &n);
  *out = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(n, 1)));
  for (int i = 0; i < n; ++i) (*out)[i] = (*nulls)[i] ? 0 : DatumGetInt64(elems[i]);
  return n;
}

}  // namespace zizq::pg
