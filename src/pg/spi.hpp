// zizq boundary: SPI conveniences — prepared plans kept for the life of the
// backend, typed reads of result columns, int4[] arrays.
#pragma once

#include <initializer_list>

#include "pg/pg.hpp"

namespace zizq::pg {

// Prepares `sql` once per backend (the plan cache re-plans it when the
// tables change) and returns it.
SPIPlanPtr prepared(SPIPlanPtr &slot, const char *sql, std::initializer_list<Oid> types);
SPIPlanPtr prepared(SPIPlanPtr &slot, const char *sql, const Oid *types, int ntypes);

// Builds a prepared statement's plan now rather than at its first run
// (the first run of a statement in a backend costs a few milliseconds).
void plan_now(SPIPlanPtr plan);

// Runs a prepared plan; raises on an SPI failure. Returns SPI_processed.
uint64 run_plan(SPIPlanPtr plan, const Datum *values, const char *nulls, bool read_only, long limit = 0);

// Column `col` (1-based) of row `row` of SPI_tuptable.
Datum column(uint64 row, int col, bool *isnull);
int64 column_int64(uint64 row, int col);
int32 column_int32(uint64 row, int col);
bool column_bool(uint64 row, int col);  // NULL reads as false
// palloc'd in the caller's memory context (survives SPI_finish when the
// caller switched to its own context first).
char *column_text(uint64 row, int col);

Datum int4_array(const int32 *values, int n);
Datum int8_array(const int64 *values, int n);
// An int8[] whose elements flagged in `nulls` are NULL.
Datum int8_array_with_nulls(const int64 *values, const bool *nulls, int n);
Datum xid_array(const TransactionId *values, int n);
// Elements of an int4[] (no NULL elements); palloc'd.
int array_int4(Datum array, int32 **out);
// Elements of an int8[]; a NULL element reads as 0 and is flagged in
// *nulls. Both palloc'd.
int array_int8(Datum array, int64 **out, bool **nulls);

}  // namespace zizq::pg
