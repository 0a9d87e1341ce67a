// zizq boundary: zizq.job rows (see job_row.hpp).
#include "pg/job_row.hpp"
#include "pg/spi.hpp"

#include <algorithm>
#include <iterator>

extern "C" {
#include "catalog/namespace.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

namespace zizq::pg {

namespace {

// The zizq.job type's descriptor, looked up again when the extension has
// been re-created (the type's OID changes).
TupleDesc job_desc() {
  static TupleDesc desc = nullptr;
  static Oid desc_type = InvalidOid;
  Oid nsp = get_namespace_oid("zizq", false);
  Oid type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("job"), ObjectIdGetDatum(nsp));
  if (!OidIsValid(type)) elog(ERROR, "zizq: type zizq.job is missing");
  if (desc == nullptr || desc_type != type) {
    MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
    desc = BlessTupleDesc(lookup_rowtype_tupdesc_copy(type, -1));
    MemoryContextSwitchTo(old);
    desc_type = type;
  }
  return desc;
}

}  // namespace

HeapTuple job_tuple_from_spi(uint64 row, int first_col, bool duplicate) {
  TupleDesc desc = job_desc();
  // The SPI row deformed once: read column by column, each varlena or NULL
  // before a column made finding it a walk from the row's start.
  constexpr int kMaxSpiColumns = 64;
  TupleDesc from = SPI_tuptable->tupdesc;
  if (from->natts > kMaxSpiColumns || first_col - 1 + kJobColumns > from->natts)
    elog(ERROR, "zizq: a job row read from %d columns", from->natts);
  Datum all[kMaxSpiColumns];
  bool all_nulls[kMaxSpiColumns];
  heap_deform_tuple(SPI_tuptable->vals[row], from, all, all_nulls);
  Datum values[kJobColumns + 1];
  bool nulls[kJobColumns + 1];
  for (int i = 0; i < kJobColumns; ++i) {
    values[i] = all[first_col - 1 + i];
    nulls[i] = all_nulls[first_col - 1 + i];
  }
  values[kJobColumns] = BoolGetDatum(duplicate);
  nulls[kJobColumns] = false;
  return heap_form_tuple(desc, values, nulls);
}

HeapTuple job_tuple_id_only(HeapTuple full) {
  constexpr int kKept[] = {0, 11, 12, kJobColumns};  // id, unique_key, unique_while, duplicate
  TupleDesc desc = job_desc();
  Datum values[kJobColumns + 1];
  bool nulls[kJobColumns + 1];
  heap_deform_tuple(full, desc, values, nulls);
  for (int i = 0; i <= kJobColumns; ++i)
    if (std::find(std::begin(kKept), std::end(kKept), i) == std::end(kKept)) nulls[i] = true;
  return heap_form_tuple(desc, values, nulls);
}

Oid jobs_relid() {
  Oid relid = get_relname_relid("_jobs", get_namespace_oid("zizq", false));
  if (!OidIsValid(relid)) elog(ERROR, "zizq: table zizq._jobs is missing");
  return relid;
}

AttrNumber job_column(TupleDesc table, const char *name) {
  int attnum = SPI_fnumber(table, name);
  if (attnum <= 0) elog(ERROR, "zizq: zizq._jobs has no column \"%s\"", name);
  return static_cast<AttrNumber>(attnum);
}

void job_columns_of(TupleDesc table, AttrNumber *attnums) {
  // The names come from ZIZQ_JOB_COLUMNS itself, so the two cannot differ.
  char names[] = ZIZQ_JOB_COLUMNS;
  int i = 0;
  for (char *save = nullptr, *name = strtok_r(names, ", ", &save); name != nullptr;
       name = strtok_r(nullptr, ", ", &save)) {
    if (i == kJobColumns) elog(ERROR, "zizq: ZIZQ_JOB_COLUMNS names more than %d columns", kJobColumns);
    attnums[i++] = job_column(table, name);
  }
  if (i != kJobColumns) elog(ERROR, "zizq: ZIZQ_JOB_COLUMNS names %d columns, not %d", i, kJobColumns);
}

bool text_is(Datum datum, const char *value) {
  text *t = DatumGetTextPP(datum);
  size_t len = strlen(value);
  return VARSIZE_ANY_EXHDR(t) == len && memcmp(VARDATA_ANY(t), value, len) == 0;
}

bool job_columns_match(TupleDesc table, const AttrNumber *attnums) {
  TupleDesc job = job_desc();
  for (int i = 0; i < kJobColumns; ++i)
    if (TupleDescAttr(table, attnums[i] - 1)->atttypid != TupleDescAttr(job, i)->atttypid) return false;
  return true;
}

HeapTuple job_tuple_from_row(const Datum *row, const bool *row_nulls, const AttrNumber *attnums, bool duplicate) {
  Datum values[kJobColumns + 1];
  bool nulls[kJobColumns + 1];
  for (int i = 0; i < kJobColumns; ++i) {
    values[i] = row[attnums[i] - 1];
    nulls[i] = row_nulls[attnums[i] - 1];
  }
  values[kJobColumns] = BoolGetDatum(duplicate);
  nulls[kJobColumns] = false;
  return heap_form_tuple(job_desc(), values, nulls);
}

}  // namespace zizq::pg
