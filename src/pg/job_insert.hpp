// zizq boundary: new zizq._jobs rows inserted the way COPY FROM inserts
// them, without an INSERT statement.
//
// enqueue_many's INSERT ... SELECT FROM unnest(...) RETURNING spent about a
// third of a 1,000-job call away from the table and its indexes: the
// function scan's tuplestore, the projection, RETURNING's tuplestore and the
// SPI copy of every row. Here the caller's values go into tuple slots, the
// columns it does not give take the table's defaults (evaluated per row, as
// an INSERT evaluates them: id from the sequence, created_at from
// clock_timestamp()), table_multi_insert stores a batch (one WAL record per
// heap page) and the executor's own ExecInsertIndexTuples makes each row's
// index entries (partial predicates, expression indexes). Constraints are
// checked by ExecConstraints.
//
// Not for rows that may meet a unique key already taken: those need
// INSERT ... ON CONFLICT's speculative insertion. No trigger fires: the
// caller does what the jobs_inserted trigger would, and begin_job_insert
// declines (returns nullptr) when something added to the table acts on an
// INSERT: another trigger, a rule, forced row security, a stored generated
// column, a domain-typed column left to its default. The rows are visible
// to the transaction's next command.
#pragma once

#include "pg/pg.hpp"

namespace zizq::pg {

struct JobInsert;

// Opens zizq._jobs for rows that give `columns` (names), buffering up to
// `capacity` rows between flushes; nullptr when the table needs an INSERT
// statement (above). Raises what an INSERT would in a read-only
// transaction, during recovery or without the INSERT privilege.
JobInsert *begin_job_insert(const char *const *columns, int ncolumns, int capacity);

// The table's descriptor (for job_columns_of).
TupleDesc job_insert_desc(const JobInsert *ins);

// Buffers one row: values[k] and nulls[k] for columns[k]. Flush first when
// job_insert_full().
void add_job_row(JobInsert *ins, const Datum *values, const bool *nulls);
bool job_insert_full(const JobInsert *ins);

// Inserts the buffered rows and returns how many. Until the next
// add_job_row, job_insert_row(ins, i) gives row i's stored values (its
// defaults filled in) through tts_values / tts_isnull.
int flush_job_rows(JobInsert *ins);
TupleTableSlot *job_insert_row(const JobInsert *ins, int i);

// Closes the table and frees the executor state; the rows stay.
void end_job_insert(JobInsert *ins);

// At the end of every top-level transaction: no direct insert or take
// (job_write.hpp) is in progress any more (one that raised an error did
// not end).
void end_of_transaction_job_inserts();

}  // namespace zizq::pg
