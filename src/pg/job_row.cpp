// zizq boundary: zizq.job rows (see job_row.hpp).
#include "pg/job_row.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

namespace zizq::pg {

HeapTuple job_tuple_from_spi(uint64 row, int first_col, bool duplicate) {
  static TupleDesc desc = nullptr;
  static Oid desc_type = InvalidOid;
  // The type's OID changes when the extension is re-created: look it up again.
  Oid nsp = get_namespace_oid("zizq", false);
  Oid type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("job"), ObjectIdGetDatum(nsp));
  if (!OidIsValid(type)) elog(ERROR, "zizq: type zizq.job is missing");
  if (desc == nullptr || desc_type != type) {
    MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
    desc = BlessTupleDesc(lookup_rowtype_tupdesc_copy(type, -1));
    MemoryContextSwitchTo(old);
    desc_type = type;
  }
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

}  // namespace zizq::pg
