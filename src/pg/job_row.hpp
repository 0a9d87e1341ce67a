// zizq boundary: rows of the zizq.job type (SPEC §2: every function that
// returns a job returns one).
#pragma once

#include "pg/pg.hpp"

namespace zizq::pg {

// The zizq._jobs columns of a zizq.job, in the type's order, for SELECT and
// RETURNING lists; `duplicate` is not among them.
#define ZIZQ_JOB_COLUMNS                                                                                  \
  "id, queue, type, payload, priority, status, ready_at, attempts, retry_limit, backoff, retention, "     \
  "unique_key, unique_while, created_at, dequeued_at, failed_at, completed_at, lease_until, budgets"
constexpr int kJobColumns = 19;

// A zizq.job tuple from columns [first_col, first_col + 19) of SPI result
// row `row`, formed in the current memory context.
HeapTuple job_tuple_from_spi(uint64 row, int first_col, bool duplicate);

// The same row with everything but id, unique_key, unique_while and
// duplicate NULL: what a duplicate enqueue returns of a job the caller may
// not read.
HeapTuple job_tuple_id_only(HeapTuple full);

// Whether a text datum (a row's status, unique_while) is `value`.
bool text_is(Datum datum, const char *value);

// zizq._jobs's OID; raises if the table is missing.
Oid jobs_relid();

// The attribute number of zizq._jobs column `name` in `table`, the
// table's descriptor; raises if there is none.
AttrNumber job_column(TupleDesc table, const char *name);

// Fills attnums[0..18] with the zizq._jobs attribute numbers (in `table`,
// the table's descriptor) of the zizq.job type's columns.
void job_columns_of(TupleDesc table, AttrNumber *attnums);

// Whether the zizq._jobs columns at attnums (from job_columns_of) have the
// types of the zizq.job columns they fill: false after a column's type was
// changed, when rows of the table cannot stand for zizq.job rows as they are.
bool job_columns_match(TupleDesc table, const AttrNumber *attnums);

// A zizq.job tuple from the values of a whole zizq._jobs row, with attnums
// from job_columns_of, formed in the current memory context.
HeapTuple job_tuple_from_row(const Datum *row, const bool *row_nulls, const AttrNumber *attnums, bool duplicate);

}  // namespace zizq::pg
