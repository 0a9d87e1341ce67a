// zizq claims (see claims.hpp).
#include "core/scan_floor.hpp"

#include "pg/claims.hpp"

#include <algorithm>

#include "pg/floors.hpp"
#include "pg/shmem.hpp"
#include "pg/xact.hpp"

namespace zizq::pg {
namespace {

constexpr int kSlotsPerStripe = 4096;  // a power of two
// Set in a slot once the claimer has paid for and taken the job: the sign
// bit, as job ids (an identity from 1) are positive.
constexpr int64 kPaidBit = PG_INT64_MIN;

struct Stripe {
  int count;
  int64 slots[kSlotsPerStripe];     // 0 = empty; else a job id, with kPaidBit once paid
  int owners[kSlotsPerStripe];      // the claimer's pgprocno
  ClaimKey keys[kSlotsPerStripe];   // where the claimer found the job
  Oid databases[kSlotsPerStripe];   // and in which database (job ids repeat across databases)
};

int64 job_of(int64 slot) { return slot & ~kPaidBit; }

Stripe *stripes = nullptr;

uint32 mix(int64 job_id) {
  return hash_bytes_uint32(static_cast<uint32>(job_id) ^ static_cast<uint32>(job_id >> 32));
}

Stripe &stripe_of(uint32 h) { return stripes[h % kClaimStripes]; }
LWLock *lock_of(uint32 h) { return &shared->claim_locks[h % kClaimStripes].lock; }
uint32 home_of(uint32 h) { return (h / kClaimStripes) & (kSlotsPerStripe - 1); }

uint32 find_slot(const Stripe &st, uint32 h, int64 job_id) {
  uint32 i = home_of(h);
  while (st.slots[i] != 0 && job_of(st.slots[i]) != job_id) i = (i + 1) & (kSlotsPerStripe - 1);
  return i;
}

// Linear probing: shift later entries of the cluster back into the hole.
void erase_at(Stripe &st, uint32 i) {
  st.slots[i] = 0;
  st.count--;
  uint32 j = i;
  for (;;) {
    j = (j + 1) & (kSlotsPerStripe - 1);
    if (st.slots[j] == 0) return;
    uint32 home = home_of(mix(job_of(st.slots[j])));
    bool movable = (i <= j) ? (home <= i || home > j) : (home <= i && home > j);
    if (movable) {
      st.slots[i] = st.slots[j];
      st.owners[i] = st.owners[j];
      st.keys[i] = st.keys[j];
      st.databases[i] = st.databases[j];
      st.slots[j] = 0;
      i = j;
    }
  }
}

// This attempt's SQL-made claims (kept for the backend's life).
int64 *batch = nullptr;
int batch_count = 0, batch_capacity = 0;

}  // namespace

Size claims_size() { return mul_size(kClaimStripes, sizeof(Stripe)); }

void attach_claims(char *base) { stripes = reinterpret_cast<Stripe *>(base); }

// Whether the claim in slot i was made at `key` in this database.
bool claimed_at(const Stripe &st, uint32 i, const ClaimKey &key) {
  return st.databases[i] == MyDatabaseId && st.keys[i].queue_hash == key.queue_hash &&
         st.keys[i].priority == key.priority;
}

Claim claim_job(int64 job_id, ClaimKey key) {
  uint32 h = mix(job_id);
  Stripe &st = stripe_of(h);
  Claim result = Claim::Untracked;
  LWLockAcquire(lock_of(h), LW_EXCLUSIVE);
  uint32 i = find_slot(st, h, job_id);
  if (st.slots[i] != 0) {
    result = st.owners[i] == MyProc->pgprocno ? Claim::Ours : claimed_at(st, i, key) ? Claim::Busy : Claim::Moved;
  } else if (st.count < kSlotsPerStripe / 2) {
    st.slots[i] = job_id;
    st.owners[i] = MyProc->pgprocno;
    st.keys[i] = key;
    st.databases[i] = MyDatabaseId;
    st.count++;
    result = Claim::Claimed;
  }
  LWLockRelease(lock_of(h));
  return result;
}

void unclaim_jobs(const int64 *job_ids, int n) {
  for (int k = 0; k < n; ++k) {
    uint32 h = mix(job_ids[k]);
    Stripe &st = stripe_of(h);
    LWLockAcquire(lock_of(h), LW_EXCLUSIVE);
    uint32 i = find_slot(st, h, job_ids[k]);
    if (st.slots[i] != 0) erase_at(st, i);
    LWLockRelease(lock_of(h));
  }
}

void release_claimed_jobs(const ClaimedJob *jobs, int n, bool taken) {
  constexpr int kChunk = 256;
  int64 ids[kChunk];
  uint32 hashes[kChunk];
  core::JobKey keys[kChunk];
  for (int from = 0; from < n; from += kChunk) {
    int k = ZZ_MIN(kChunk, n - from);
    for (int i = 0; i < k; ++i) {
      ids[i] = jobs[from + i].id;
      hashes[i] = jobs[from + i].queue_hash;
      keys[i] = core::JobKey{jobs[from + i].priority, jobs[from + i].id};
    }
    // Unclaimed first: a scan that meets the job after the floor came down
    // must find it free.
    unclaim_jobs(ids, k);
    if (!taken) lower_floors_of_hashes(hashes, keys, k);
  }
}

void mark_claim_paid(int64 job_id) {
  uint32 h = mix(job_id);
  Stripe &st = stripe_of(h);
  LWLockAcquire(lock_of(h), LW_EXCLUSIVE);
  uint32 i = find_slot(st, h, job_id);
  if (st.slots[i] != 0) st.slots[i] |= kPaidBit;
  LWLockRelease(lock_of(h));
}

namespace {

ClaimState state_of(int64 job_id) {
  uint32 h = mix(job_id);
  const Stripe &st = stripe_of(h);
  LWLockAcquire(lock_of(h), LW_SHARED);
  int64 slot = st.slots[find_slot(st, h, job_id)];
  LWLockRelease(lock_of(h));
  return slot == 0 ? ClaimState::None : (slot & kPaidBit) ? ClaimState::Paid : ClaimState::Open;
}

}  // namespace

void claim_states(const int64 *ids, int n, ClaimState *states) {
  for (int k = 0; k < n; ++k) states[k] = state_of(ids[k]);
}

void claimed_jobs(const int64 *ids, int n, bool *claimed) {
  for (int k = 0; k < n; ++k) claimed[k] = state_of(ids[k]) != ClaimState::None;
}

ClaimHolder claim_holder(int64 job_id, ClaimKey key) {
  uint32 h = mix(job_id);
  const Stripe &st = stripe_of(h);
  LWLockAcquire(lock_of(h), LW_SHARED);
  uint32 i = find_slot(st, h, job_id);
  ClaimHolder holder = st.slots[i] == 0 ? ClaimHolder::None
                       : claimed_at(st, i, key) ? ClaimHolder::SameKey
                                                   : ClaimHolder::OtherKey;
  LWLockRelease(lock_of(h));
  return holder;
}

void begin_claim_batch() { batch_count = 0; }

int64 *unused_claims(const int64 *taken, int ntaken, int *n) {
  int64 *unused = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(batch_count, 1)));
  *n = 0;
  for (int i = 0; i < batch_count; ++i)
    if (std::find(taken, taken + ntaken, batch[i]) == taken + ntaken) unused[(*n)++] = batch[i];
  batch_count = 0;
  return unused;
}

}  // namespace zizq::pg

using namespace zizq::pg;

extern "C" {

// zizq._unclaimed(id, priority, queue): whether no open dequeue has claimed
// the job. The budgeted read skips those in SQL; it claims only the
// candidates its walk considers, so that a row it reads ahead stays free
// for other workers. The last filter of the read, so it sees every job
// ready in the statement's snapshot that the scan reached, claimed or not:
// the smallest of their keys is how far the queue's budgeted floor may
// rise, and one claimed at another key (moved since) keeps the walk from
// raising past it.
PG_FUNCTION_INFO_V1(zizq_unclaimed);
Datum zizq_unclaimed(PG_FUNCTION_ARGS) {
  int64 id = PG_GETARG_INT64(0);
  int32 priority = PG_GETARG_INT32(1);
  note_examined(zizq::core::JobKey{priority, id});
  text *queue = PG_GETARG_TEXT_PP(2);
  ClaimKey key{queue_hash(VARDATA_ANY(queue), VARSIZE_ANY_EXHDR(queue)), priority};
  ClaimHolder holder = claim_holder(id, key);
  if (holder == ClaimHolder::OtherKey) note_moved_claim();
  PG_RETURN_BOOL(holder == ClaimHolder::None);
}

// zizq._claim(id, priority, queue): claims a job for the current dequeue
// attempt (see claims.hpp); false when another transaction holds it. The
// last filter of the unbudgeted dequeue statements, before FOR UPDATE SKIP
// LOCKED, so it sees every job ready in the statement's snapshot that the
// scan reached: the smallest of their keys is how far a scan floor may
// rise at the statement's end, and each job claimed raises it at once
// (floors.hpp, live raises). Claims the attempt does not take are released
// at its end (dequeue.cpp, release_dropped_claims). A claim this backend
// holds already answers true: a FOR UPDATE re-check (EvalPlanQual) of a
// row updated since the snapshot evaluates the filter a second time. The
// row's ctid and xmax (arguments 4 and 5; '0' for xmax: not known) let it
// refuse a version taken since the snapshot (row_versions.hpp).
PG_FUNCTION_INFO_V1(zizq_claim);
Datum zizq_claim(PG_FUNCTION_ARGS) {
  RowVersion seen{};
  bool known = PG_NARGS() >= 5;
  if (known)
    seen = RowVersion{*reinterpret_cast<ItemPointer>(PG_GETARG_POINTER(3)), DatumGetTransactionId(PG_GETARG_DATUM(4))};
  TakeClaim c = claim_for_take(PG_GETARG_INT64(0), PG_GETARG_INT32(1), PG_GETARG_TEXT_PP(2), known ? &seen : nullptr);
  PG_RETURN_BOOL(c != TakeClaim::No);
}

}  // extern "C"

namespace zizq::pg {

TakeClaim claim_for_take(int64 id, int32 priority, const text *queue, const RowVersion *seen) {
  zizq::core::JobKey key{priority, id};
  note_examined(key);
  note_met_by_take(key);
  // As if another held its claim (Busy): the job is gone from the ready set.
  if (seen != nullptr && taken_since_snapshot(*seen)) return TakeClaim::No;
  if (batch == nullptr) {
    batch_capacity = 256;
    batch = static_cast<int64 *>(MemoryContextAlloc(TopMemoryContext, batch_capacity * sizeof(int64)));
  }
  if (batch_count == batch_capacity) {
    batch_capacity *= 2;
    batch = static_cast<int64 *>(repalloc(batch, batch_capacity * sizeof(int64)));
  }
  reserve_ops(1);
  ClaimKey claim_key{queue_hash(VARDATA_ANY(queue), VARSIZE_ANY_EXHDR(queue)), key.priority};
  Claim c = claim_job(id, claim_key);
  if (c == Claim::Busy) return TakeClaim::No;
  // Held under another key: its release will not lower the floor to where
  // the job is now. Raising past it could strand it.
  if (c == Claim::Moved) {
    stop_raising();
    return TakeClaim::No;
  }
  if (c == Claim::Untracked) stop_raising();
  if (c == Claim::Claimed) {
    record_claim(id, claim_key.queue_hash, key.priority);
    batch[batch_count++] = id;
    raise_past_claimed(key);
  }
  return c == Claim::Ours ? TakeClaim::Again : TakeClaim::Yes;
}

}  // namespace zizq::pg
