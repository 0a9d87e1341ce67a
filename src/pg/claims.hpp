// zizq claims: jobs a dequeue has taken in a transaction that has not ended.
//
// Other dequeues see such a job as ready in their snapshots until that
// transaction commits. Unbudgeted jobs would cost them a failed row lock
// (through the heavyweight lock manager) each; budgeted ones would cost
// tokens spent and refunded, and a line blocked meanwhile. So a dequeue
// claims a job before it locks it, and passes over jobs another holds: the
// claim set is a SKIP LOCKED that costs a shared-memory probe.
//
// Claims are hints for who takes a job (a row lock still decides), but not
// for where scans start: scan floors may pass claimed jobs (floors.hpp,
// live raises; the budgeted walk's raise), so a claim released without its
// job taken must bring the floor back down, to the key the claimer found
// the job at. A claim keeps that key: a job moved since (another priority
// or queue, by a commit the claimer did not see) is one whose release
// would lower the wrong floor or key, so no scan passes it (Moved). They
// live in striped open-addressing tables (one LWLock per stripe) and are
// dropped when their transaction ends, committed or not.
#pragma once

#include "pg/pg.hpp"
#include "pg/row_versions.hpp"

namespace zizq::pg {

constexpr int kClaimStripes = 16;

Size claims_size();
void attach_claims(char *base);

// Where a claimer found the job: its queue's name hash and its priority.
struct ClaimKey {
  uint32 queue_hash;
  int32 priority;
};

// Claimed: ours now. Ours: this backend's transaction holds it already.
// Busy: another transaction holds it, found at the same key. Moved: another
// holds it, found at another key (the job moved since) or in another
// database (another job with the same id). Untracked: the
// table is full; proceed, the row lock decides.
enum class Claim { Claimed, Ours, Busy, Moved, Untracked };
Claim claim_job(int64 job_id, ClaimKey key);
void unclaim_jobs(const int64 *job_ids, int n);
// claimed[i]: whether ids[i] is claimed by anyone.
void claimed_jobs(const int64 *ids, int n, bool *claimed);
// Whether anyone claims the job seen at `key`, and at which key.
enum class ClaimHolder { None, SameKey, OtherKey };
ClaimHolder claim_holder(int64 job_id, ClaimKey key);
// A claimed job its claimer has paid for and taken (its UPDATE holds the
// row): as good as taken, unless that transaction rolls back.
void mark_claim_paid(int64 job_id);
enum class ClaimState : uint8 { None, Open, Paid };
void claim_states(const int64 *ids, int n, ClaimState *states);

// Releases claims. Jobs not taken are ready again, perhaps below floors
// that scans raised past them while they were claimed (floors.hpp, live
// raises): their queues' floors come down to them.
struct ClaimedJob {
  int64 id;
  uint32 queue_hash;
  int32 priority;
};
void release_claimed_jobs(const ClaimedJob *jobs, int n, bool taken);

// zizq._claim()'s work (claims.cpp), for the single-statement takes: claims
// the job for the current attempt, noting its key (floors.hpp, examined
// keys and live raises). Yes: claimed now (or untracked: the row lock
// decides); Again: this attempt holds it already (a FOR UPDATE re-check of
// a row updated since the snapshot asks twice); No: another holds it, or
// `seen` (the version the scan met; nullptr: not known) was taken since
// the snapshot (row_versions.hpp).
enum class TakeClaim { No, Yes, Again };
TakeClaim claim_for_take(int64 id, int32 priority, const text *queue, const RowVersion *seen);

// The claims made through zizq._claim() (SQL) by this backend's current
// dequeue attempt: those not taken are dropped after the statement.
void begin_claim_batch();
// Returns those not among `taken` (palloc'd, *n of them) and empties the
// batch; the caller releases them (dequeue.cpp, release_dropped_claims).
int64 *unused_claims(const int64 *taken, int ntaken, int *n);

}  // namespace zizq::pg
