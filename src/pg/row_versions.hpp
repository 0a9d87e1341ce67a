// zizq boundary: what became of a row version a dequeue's scan met.
//
// A dequeue's snapshot can still show as ready a job another worker took
// after the snapshot was taken (its claim went with its commit). FOR UPDATE
// in READ COMMITTED then locks the job's newest version (in flight, or
// being deleted by its worker's complete) before the re-check finds it no
// longer ready: the row is skipped, but the lock stays until the dequeue's
// transaction ends, and that worker's complete waits for it. So the
// claim refuses such a version first.
#pragma once

#include "pg/pg.hpp"

namespace zizq::pg {

// A version of a zizq._jobs row: its ctid and its raw xmax, as a scan's
// qual sees them.
struct RowVersion {
  ItemPointerData tid;
  TransactionId raw_xmax;
};

// Whether `seen` was updated or deleted by a transaction that committed,
// and the job's next version (if any) is not ready and not updated or
// deleted in turn. False whenever that is not certain (the updater still
// running or aborted, the chain pruned, the next version ready or updated
// again): then the row lock and its re-check decide, as before. (A commit
// between this check and the row lock still leaves the lock behind.) A next version that is ready at the same key must be
// left to them: an update that keeps a ready job at its key lowers no
// scan floor at commit, so a scan that passed it unclaimed could leave it
// below a floor. One that is not ready comes back only through a commit
// that lowers the floor (triggers.cpp, announce_ready).
bool taken_since_snapshot(const RowVersion &seen);

}  // namespace zizq::pg
