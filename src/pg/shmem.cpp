// zizq shared memory: allocation and the small operations on it (see
// shmem.hpp for what is shared and which lock protects it).
#include "pg/shmem.hpp"

#include "pg/claims.hpp"
#include "pg/floors.hpp"

#include <ctime>

namespace zizq::pg {

Shared *shared = nullptr;
HTAB *budget_hash = nullptr;
int32 *dirty_ring = nullptr;
int64 *park_requests = nullptr;
Offer *offers = nullptr;
int max_offers = 0;
Waiter *waiters = nullptr;
uint64 *sessions = nullptr;
ReplayEntry *replay_log = nullptr;
TransactionId *deferred_xids = nullptr;
QueueName *notify_queues = nullptr;

namespace {

// One tranche per kind of lock, so that pg_stat_activity.wait_event names
// the one a backend waits for.
constexpr const char *kBudgetTranche = "zizq_budgets";
constexpr const char *kWaiterTranche = "zizq_waiters";
constexpr const char *kClaimTranche = "zizq_claims";
constexpr const char *kFloorTranche = "zizq_floors";

int offer_slots() { return ZZ_MAX(1024, 2 * guc_max_budgets); }

Size fixed_size() {
  Size size = MAXALIGN(sizeof(Shared));
  size = add_size(size, MAXALIGN(mul_size(guc_max_budgets, sizeof(int32))));
  size = add_size(size, MAXALIGN(mul_size(kParkRequestSlots, sizeof(int64))));
  size = add_size(size, MAXALIGN(mul_size(offer_slots(), sizeof(Offer))));
  size = add_size(size, MAXALIGN(mul_size(MaxBackends, sizeof(Waiter))));
  size = add_size(size, MAXALIGN(mul_size(MaxBackends, sizeof(uint64))));
  size = add_size(size, MAXALIGN(claims_size()));
  size = add_size(size, MAXALIGN(mul_size(kReplaySlots, sizeof(ReplayEntry))));
  size = add_size(size, MAXALIGN(mul_size(MaxBackends, sizeof(TransactionId))));
  size = add_size(size, MAXALIGN(mul_size(kNotifySlots, sizeof(QueueName))));
  size = add_size(size, MAXALIGN(floors_size()));
  return size;
}

// The high half of this server's session ids. Random, not the time: a crash
// restart within the same second as the start (or a standby set up in the
// same second as its primary, then promoted) would hand out the ids of the
// sessions before it again, counter included, and a job of a killed
// session would look held by a new one until that one ended.
uint32 new_session_epoch() {
  uint32 epoch = 0;
  while (epoch == 0)
    if (!pg_strong_random(&epoch, sizeof epoch)) epoch = static_cast<uint32>(time(nullptr)) ^ static_cast<uint32>(MyProcPid);
  return epoch;
}

void init_shared(char *base) {
  memset(base, 0, fixed_size());
  shared = reinterpret_cast<Shared *>(base);
  shared->budget_lock = &GetNamedLWLockTranche(kBudgetTranche)[0].lock;
  shared->waiter_lock = &GetNamedLWLockTranche(kWaiterTranche)[0].lock;
  shared->claim_locks = GetNamedLWLockTranche(kClaimTranche);
  shared->floor_lock = &GetNamedLWLockTranche(kFloorTranche)[0].lock;
  shared->epoch = new_session_epoch();
  // Born loading: every change is logged until the dispatcher has read the
  // tables, so it never needs to wait for older transactions.
  shared->loading = true;
  pg_atomic_init_u64(&shared->next_session, 1);
}

void carve(char *base) {
  char *p = base + MAXALIGN(sizeof(Shared));
  dirty_ring = reinterpret_cast<int32 *>(p);
  p += MAXALIGN(guc_max_budgets * sizeof(int32));
  park_requests = reinterpret_cast<int64 *>(p);
  p += MAXALIGN(kParkRequestSlots * sizeof(int64));
  offers = reinterpret_cast<Offer *>(p);
  max_offers = offer_slots();
  p += MAXALIGN(max_offers * sizeof(Offer));
  waiters = reinterpret_cast<Waiter *>(p);
  p += MAXALIGN(MaxBackends * sizeof(Waiter));
  sessions = reinterpret_cast<uint64 *>(p);
  p += MAXALIGN(MaxBackends * sizeof(uint64));
  attach_claims(p);
  p += MAXALIGN(claims_size());
  replay_log = reinterpret_cast<ReplayEntry *>(p);
  p += MAXALIGN(kReplaySlots * sizeof(ReplayEntry));
  deferred_xids = reinterpret_cast<TransactionId *>(p);
  p += MAXALIGN(MaxBackends * sizeof(TransactionId));
  notify_queues = reinterpret_cast<QueueName *>(p);
  p += MAXALIGN(kNotifySlots * sizeof(QueueName));
  attach_floors(p);
}

void on_session_exit(int, Datum) {
  if (shared == nullptr || MyProc == nullptr) return;
  LWLockAcquire(shared->waiter_lock, LW_EXCLUSIVE);
  bool held = sessions[MyProc->pgprocno] != 0;
  sessions[MyProc->pgprocno] = 0;
  waiters[MyProc->pgprocno].latch = nullptr;
  if (held) shared->sessions_ended = true;
  Latch *dispatcher = shared->dispatcher_latch;
  LWLockRelease(shared->waiter_lock);
  // The dispatcher requeues the jobs this session held (SPEC §2: within a
  // second of the session's end).
  if (held && dispatcher != nullptr) SetLatch(dispatcher);
}

bool waits_for(const Waiter &w, uint32 hash) {
  if (w.all_queues) return true;
  for (int i = 0; i < w.nqueues; ++i)
    if (w.queues[i] == hash) return true;
  return false;
}

}  // namespace

int64_t monotonic_us() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

TimestampTz wall_time_of(int64_t mono_us) { return GetCurrentTimestamp() + (mono_us - monotonic_us()); }

void shmem_request() {
  RequestAddinShmemSpace(add_size(fixed_size(), hash_estimate_size(guc_max_budgets, sizeof(BudgetEntry))));
  RequestNamedLWLockTranche(kBudgetTranche, 1);
  RequestNamedLWLockTranche(kWaiterTranche, 1);
  RequestNamedLWLockTranche(kClaimTranche, kClaimStripes);
  RequestNamedLWLockTranche(kFloorTranche, 1);
}

void shmem_startup() {
  bool found = false;
  LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
  char *base = static_cast<char *>(ShmemInitStruct("zizq shared state", fixed_size(), &found));
  if (!found) init_shared(base);
  shared = reinterpret_cast<Shared *>(base);
  carve(base);
  if (!found)
    for (int i = 0; i < MaxBackends; ++i) pg_atomic_init_u64(&waiters[i].woken, 0);
  HASHCTL info;
  memset(&info, 0, sizeof info);
  info.keysize = sizeof(int32);
  info.entrysize = sizeof(BudgetEntry);
  budget_hash = ShmemInitHash("zizq budgets", guc_max_budgets, guc_max_budgets, &info,
                              HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
  LWLockRelease(AddinShmemInitLock);
}

void require_shared() {
  if (shared == nullptr)
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("zizq is not loaded through shared_preload_libraries"),
                    errhint("add zizq to shared_preload_libraries in postgresql.conf and restart the server")));
  // Shared memory holds one database's budgets and waiters, by id: an
  // install left in another database (zizq.database changed since) would
  // mix its budgets with the served one's. zizq.database is fixed at server
  // start, so one check per backend is enough.
  static Oid served = InvalidOid;
  if (MyDatabaseId == served) return;
  if (!in_zizq_database()) refuse_other_database();
  served = MyDatabaseId;
}

void reset_shared_state(bool wait_writers) {
  LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
  reset_budgets_in_place();
  shared->budgets_loaded = false;
  shared->loading = true;
  shared->replay_count = 0;
  shared->replay_overflow = false;
  shared->wait_writers = shared->wait_writers || wait_writers;
  // No transaction can be on the list here: it fills only as a load ends
  // (budgets loaded), an overflow resets only while loading, and CREATE
  // EXTENSION follows a DROP EXTENSION that waited for every writer.
  shared->deferred_count = 0;
  LWLockRelease(shared->budget_lock);
  // CREATE EXTENSION: the floors of an earlier zizq._jobs mean nothing now.
  clear_all_floors();
}

void log_replay(ReplayEntry::Kind kind, int32 budget, int32 value, const core::Policy *policy, bool at_pre_commit) {
  if (shared->replay_count >= kReplaySlots) {
    shared->replay_overflow = true;
    return;
  }
  ReplayEntry &e = replay_log[shared->replay_count++];
  e.kind = kind;
  e.xid = GetTopTransactionIdIfAny();
  e.budget = budget;
  e.value = value;
  e.at_pre_commit = at_pre_commit;
  if (policy != nullptr) e.policy = *policy;
}

bool is_deferred(TransactionId xid) {
  for (int i = 0; i < shared->deferred_count; ++i)
    if (deferred_xids[i] == xid) return true;
  return false;
}

bool defer_to_committer(TransactionId xid) {
  if (is_deferred(xid)) return true;
  if (shared->deferred_count == MaxBackends) return false;  // cannot happen
  deferred_xids[shared->deferred_count++] = xid;
  return true;
}

bool take_deferred(TransactionId xid) {
  for (int i = 0; i < shared->deferred_count; ++i)
    if (deferred_xids[i] == xid) {
      deferred_xids[i] = deferred_xids[--shared->deferred_count];
      return true;
    }
  return false;
}

BudgetEntry *find_budget(int32 id) {
  return static_cast<BudgetEntry *>(hash_search(budget_hash, &id, HASH_FIND, nullptr));
}

BudgetEntry *add_budget(int32 id, const core::Policy &p) {
  bool found = false;
  auto *b = static_cast<BudgetEntry *>(hash_search(budget_hash, &id, HASH_ENTER_NULL, &found));
  if (b == nullptr) return nullptr;
  if (!found) {
    memset(reinterpret_cast<char *>(b) + sizeof(int32), 0, sizeof(BudgetEntry) - sizeof(int32));
    b->tokens = core::fresh_state(p, monotonic_us());
    b->standby_slot = -1;
  }
  b->policy = p;
  return b;
}

namespace {

// Takes a budget's entry out of the dirty ring. Left there, a dropped
// budget's entry would still count: with every budget of a full table dirty,
// the next one marked would overwrite a live budget's entry, whose flag
// would then stay set and keep it from ever being marked (and evaluated)
// again.
void forget_dirty(int32 id) {
  int kept = 0;
  for (int i = 0; i < shared->dirty_count; ++i) {
    int32 entry = dirty_ring[(shared->dirty_head + i) % guc_max_budgets];
    if (entry != id) dirty_ring[(shared->dirty_head + kept++) % guc_max_budgets] = entry;
  }
  shared->dirty_count = kept;
}

}  // namespace

void remove_budget(int32 id) {
  BudgetEntry *b = find_budget(id);
  if (b != nullptr && b->dirty) forget_dirty(id);
  hash_search(budget_hash, &id, HASH_REMOVE, nullptr);
  for (int i = 0; i < shared->offer_high; ++i)
    if (offers[i].job_id != 0 && offers[i].line_budget == id) remove_offer(i);
}

void reset_budgets_in_place() {
  HASH_SEQ_STATUS scan;
  hash_seq_init(&scan, budget_hash);
  for (auto *b = static_cast<BudgetEntry *>(hash_seq_search(&scan)); b != nullptr;
       b = static_cast<BudgetEntry *>(hash_seq_search(&scan)))
    hash_search(budget_hash, &b->id, HASH_REMOVE, nullptr);
  for (int i = 0; i < shared->offer_high; ++i) offers[i].job_id = 0;
  shared->offer_count = shared->offer_high = 0;
  shared->offers_full = false;
  shared->park_count = shared->dirty_count = shared->dirty_head = 0;
}

// TRUNCATE zizq._jobs committed. It held the table exclusively until now,
// so no other transaction has a job of it in flight or parked: every count
// of jobs is 0. Tokens of time_based buckets stay as they are (no refund).
void clear_job_state_in_place() {
  HASH_SEQ_STATUS scan;
  hash_seq_init(&scan, budget_hash);
  for (auto *b = static_cast<BudgetEntry *>(hash_seq_search(&scan)); b != nullptr;
       b = static_cast<BudgetEntry *>(hash_seq_search(&scan))) {
    b->tokens.in_flight = 0;
    for (int32 &p : b->parked) p = 0;
    b->offered_cost = 0;
    b->standby_slot = -1;
    b->starved = b->starved_any_queue = false;
  }
  for (int i = 0; i < shared->offer_high; ++i) offers[i].job_id = 0;
  shared->offer_count = shared->offer_high = 0;
  shared->offers_full = false;
}

bool count_now_or_reload() {
  if (shared->budgets_loaded) return true;
  if (shared->loading) shared->replay_overflow = true;
  return false;
}

void mark_dirty(BudgetEntry *b) {
  if (b->dirty) return;
  b->dirty = true;
  int tail = (shared->dirty_head + shared->dirty_count) % guc_max_budgets;
  dirty_ring[tail] = b->id;
  shared->dirty_count++;
  shared->dirty_marks++;
}

int32 pop_dirty() {
  while (shared->dirty_count > 0) {
    int32 id = dirty_ring[shared->dirty_head];
    shared->dirty_head = (shared->dirty_head + 1) % guc_max_budgets;
    shared->dirty_count--;
    BudgetEntry *b = find_budget(id);
    if (b != nullptr && b->dirty) {
      b->dirty = false;
      return id;
    }
  }
  return 0;
}

void mark_starved(const core::Binding *bindings, int n, uint32 queue_hash) {
  for (int k = 0; k < n; ++k) {
    BudgetEntry *b = find_budget(bindings[k].budget);
    if (b == nullptr) continue;
    if (b->starved && b->starved_queue != queue_hash) b->starved_any_queue = true;
    b->starved = true;
    b->starved_queue = queue_hash;
  }
}

bool request_park(int64 job_id) {
  for (int i = 0; i < shared->park_count; ++i)
    if (park_requests[i] == job_id) return true;
  if (shared->park_count >= kParkRequestSlots) return false;
  park_requests[shared->park_count++] = job_id;
  return true;
}

int take_park_requests(int64 *out, int max) {
  int n = ZZ_MIN(max, shared->park_count);
  memcpy(out, park_requests, n * sizeof(int64));
  memmove(park_requests, park_requests + n, (shared->park_count - n) * sizeof(int64));
  shared->park_count -= n;
  return n;
}

bool post_offer(const Offer &o) {
  if (has_offer(o.job_id)) return true;
  int slot = 0;
  while (slot < max_offers && offers[slot].job_id != 0) ++slot;
  if (slot == max_offers) {
    shared->offers_full = true;
    return false;
  }
  offers[slot] = o;
  shared->offer_count++;
  if (slot >= shared->offer_high) shared->offer_high = slot + 1;
  if (o.standby) {
    BudgetEntry *line = find_budget(o.line_budget);
    if (line != nullptr && line->standby_slot < 0) line->standby_slot = slot;
    return true;
  }
  for (int k = 0; k < o.nbindings; ++k)
    if (BudgetEntry *b = find_budget(o.bindings[k].budget)) b->offered_cost += o.bindings[k].cost;
  return true;
}

void remove_offer(int slot) {
  const Offer &o = offers[slot];
  if (o.job_id == 0) return;
  if (o.standby) {
    BudgetEntry *line = find_budget(o.line_budget);
    if (line != nullptr && line->standby_slot == slot) line->standby_slot = -1;
  } else {
    for (int k = 0; k < o.nbindings; ++k)
      if (BudgetEntry *b = find_budget(o.bindings[k].budget))
        b->offered_cost = ZZ_MAX(0, b->offered_cost - o.bindings[k].cost);
  }
  offers[slot].job_id = 0;
  shared->offer_count--;
  shared->offers_full = false;
  while (shared->offer_high > 0 && offers[shared->offer_high - 1].job_id == 0) shared->offer_high--;
}

bool offer_affordable(const Offer &o, int64 now) {
  for (int k = 0; k < o.nbindings; ++k) {
    const BudgetEntry *b = find_budget(o.bindings[k].budget);
    if (b == nullptr || !core::can_pay(b->policy, b->tokens, o.bindings[k].cost + b->offered_cost, now)) return false;
  }
  return true;
}

const Offer *affordable_standby(const BudgetEntry *b, int64 now) {
  if (b->standby_slot < 0) return nullptr;
  const Offer &o = offers[b->standby_slot];
  return o.job_id != 0 && offer_affordable(o, now) ? &o : nullptr;
}

bool has_offer(int64 job_id) {
  for (int i = 0; i < shared->offer_high; ++i)
    if (offers[i].job_id == job_id) return true;
  return false;
}

bool offered_now(int64 job_id, int64 now) {
  for (int i = 0; i < shared->offer_high; ++i)
    if (offers[i].job_id == job_id) return !offers[i].standby || offer_affordable(offers[i], now);
  return false;
}

uint32 queue_hash(const char *queue, int len) {
  return hash_bytes(reinterpret_cast<const unsigned char *>(queue), len);
}

namespace {

bool take_wake(Waiter &w, uint32 hash) {
  uint64 expected = 0;
  return pg_atomic_compare_exchange_u64(&w.woken, &expected, kWokenBit | hash);
}

}  // namespace

int wake_waiters(uint32 hash, int count) {
  if (count <= 0) return 0;
  int woken = 0;
  LWLockAcquire(shared->waiter_lock, LW_SHARED);
  if (count == 1) {
    // One job: the waiter that began looking last.
    for (;;) {
      Waiter *best = nullptr;
      for (int i = 0; i < MaxBackends; ++i) {
        Waiter &w = waiters[i];
        if (w.latch != nullptr && pg_atomic_read_u64(&w.woken) == 0 && waits_for(w, hash) &&
            (best == nullptr || w.since > best->since))
          best = &w;
      }
      if (best == nullptr) break;
      if (take_wake(*best, hash)) {
        SetLatch(best->latch);
        woken = 1;
        break;
      }
    }
  } else {
    for (int i = 0; i < MaxBackends && woken < count; ++i) {
      Waiter &w = waiters[i];
      if (w.latch != nullptr && waits_for(w, hash) && take_wake(w, hash)) {
        SetLatch(w.latch);
        ++woken;
      }
    }
  }
  LWLockRelease(shared->waiter_lock);
  return woken;
}

void pass_on_wake(uint64 woken) {
  if (woken != 0) (void)wake_waiters(static_cast<uint32>(woken), 1);
}

void wake_all_waiters() {
  LWLockAcquire(shared->waiter_lock, LW_SHARED);
  for (int i = 0; i < MaxBackends; ++i)
    if (waiters[i].latch != nullptr) SetLatch(waiters[i].latch);
  LWLockRelease(shared->waiter_lock);
}

void wake_dispatcher() {
  LWLockAcquire(shared->waiter_lock, LW_SHARED);
  Latch *latch = shared->dispatcher_latch;
  if (latch != nullptr) SetLatch(latch);
  LWLockRelease(shared->waiter_lock);
}

void wake_dispatcher_before(TimestampTz when) {
  LWLockAcquire(shared->waiter_lock, LW_SHARED);
  Latch *latch = shared->dispatcher_latch;
  TimestampTz planned = shared->dispatcher_next_wake;
  if (latch != nullptr && (planned == 0 || when < planned)) SetLatch(latch);
  LWLockRelease(shared->waiter_lock);
}

void note_notify(const char *queue) {
  bool added = false;
  LWLockAcquire(shared->waiter_lock, LW_EXCLUSIVE);
  bool pending = shared->notify_overflow;
  for (int i = 0; i < shared->notify_count && !pending; ++i) pending = strcmp(notify_queues[i].name, queue) == 0;
  if (!pending) {
    if (shared->notify_count < kNotifySlots)
      strlcpy(notify_queues[shared->notify_count++].name, queue, sizeof(QueueName));
    else
      shared->notify_overflow = true;
    added = true;
  }
  Latch *dispatcher = shared->dispatcher_latch;
  LWLockRelease(shared->waiter_lock);
  if (added && dispatcher != nullptr) SetLatch(dispatcher);
}

int take_notifies(QueueName *out, int max, bool *overflow) {
  LWLockAcquire(shared->waiter_lock, LW_EXCLUSIVE);
  int n = ZZ_MIN(max, shared->notify_count);
  memcpy(out, notify_queues, n * sizeof(QueueName));
  memmove(notify_queues, notify_queues + n, (shared->notify_count - n) * sizeof(QueueName));
  shared->notify_count -= n;
  *overflow = shared->notify_overflow;
  shared->notify_overflow = false;
  LWLockRelease(shared->waiter_lock);
  return n;
}

uint64 my_session_id() {
  static uint64 session = 0;
  if (session != 0) return session;
  uint64 n = pg_atomic_fetch_add_u64(&shared->next_session, 1);
  uint64 id = (static_cast<uint64>(shared->epoch) << 32) | (n & 0xffffffffu);
  LWLockAcquire(shared->waiter_lock, LW_EXCLUSIVE);
  sessions[MyProc->pgprocno] = id;
  LWLockRelease(shared->waiter_lock);
  before_shmem_exit(on_session_exit, 0);
  session = id;
  return session;
}

}  // namespace zizq::pg
