// zizq boundary: one job taken without an UPDATE statement.
//
// A hand-off's take (one job, paid for, at the row version the offer or
// the walk read) spent most of the woken worker's ~0.15 ms in the
// statement that takes it: executor start-up for an UPDATE of a table with
// 15 indexes (each opened, 13 partial predicates compiled), a sub-select's
// plan, RETURNING. Here the row is found by its primary key, locked as FOR
// UPDATE SKIP LOCKED locks it, updated as the statement would update it
// (the job_update trigger's rules applied in place of the trigger), its
// index entries made with the states job_insert.cpp keeps between calls,
// and the zizq.job row formed from the new version.
//
// The statement is still used (take_job_directly returns kByStatement)
// when the table has something a user added that acts on an UPDATE
// (another BEFORE or statement trigger, a rule, row security that applies,
// a stored generated column), without the privileges the statement would
// use, in a read-only transaction or during recovery (where the statement
// raises), in REPEATABLE READ or SERIALIZABLE, and with zizq.direct_take
// off. AFTER row triggers (an audit table, the stress tests' history)
// fire as after the statement.
#pragma once

#include "pg/pg.hpp"

namespace zizq::pg {

enum class DirectTake { kTaken, kNotTaken, kByStatement };

struct TakeRequest {
  int64 id;
  TransactionId seen;  // the version to take: only while the row is still it
  TimestampTz paid_at; // dequeued_at
  bool leased;
  int64 lease_ms;      // when leased
  int64 session;       // when not
};

// Takes the job if its row is still the version `seen`, ready, and not
// locked by another transaction. kTaken: *job is the zizq.job row (in the
// caller's memory context) and *queue its queue.
DirectTake take_job_directly(const TakeRequest &req, HeapTuple *job, char **queue);

}  // namespace zizq::pg
