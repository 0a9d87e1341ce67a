// zizq shared memory: what every backend and the dispatcher share.
//
//   budget_lock (exclusive to write, shared to read) protects
//     - the budgets hash: policy, token state and parked counts per budget,
//       sized by zizq.max_budgets (HASH_FIXED_SIZE: full = limit reached);
//     - the dirty ring: budgets whose lines the dispatcher must re-evaluate;
//     - the offers: parked jobs the dispatcher found affordable, waiting for
//       a worker of their queue to take them;
//     - the park requests: budgeted ready jobs a dequeue could not take,
//       which the dispatcher moves into their budgets' lines.
//   claims (claims.hpp) have striped locks of their own.
//   floor_lock protects the scan floors (floors.hpp).
//   waiter_lock protects
//     - waiters: backends blocked in dequeue(wait), with their queues;
//     - sessions: the session id under which each backend holds jobs;
//     - the dispatcher's latch and its next planned wake;
//     - the queues to notify (NOTIFY zizq, '<queue>'): committing
//       transactions note them here and the dispatcher sends the NOTIFYs.
//       PostgreSQL serializes the commits of notifying transactions, so a
//       NOTIFY per enqueue would cap throughput at one WAL flush per job.
//
// Shared memory is a cache of the tables: after a crash it is re-created
// empty and the dispatcher rebuilds it. While it reads the tables (loading),
// changes that commit meanwhile are not applied but logged with their xid;
// the dispatcher replays those its snapshot did not see, then budgeted
// dispatch resumes (budgets_loaded). No table lock is taken, so no user
// transaction ever waits for a rebuild.
#pragma once

#include "core/admission.hpp"
#include "core/bindings.hpp"
#include "core/token_bucket.hpp"

#include "pg/pg.hpp"

namespace zizq::pg {

constexpr int kMaxWaiterQueues = 8;
constexpr int kParkRequestSlots = 4096;
constexpr int kReplaySlots = 16384;
constexpr int kNotifySlots = 128;
constexpr uint64 kWokenBit = uint64(1) << 32;

// A change to shared budget state made while the dispatcher was loading.
struct ReplayEntry {
  enum Kind : uint8 { Release, ParkedRaise, ParkedDrop, Policy, Created, Dropped, Reset, Dirty } kind;
  TransactionId xid;
  int32 budget;
  int32 value;  // cost or binding position
  bool at_pre_commit;  // a commit's change, logged before the commit was visible
  core::Policy policy;
};

struct BudgetEntry {
  int32 id;  // hash key: zizq.budgets.id
  core::Policy policy;
  core::TokenState tokens;
  // Parked jobs with this budget at each binding position. Raised before a
  // park becomes visible and lowered after an unpark commits, so it is never
  // below the truth: 0 means no parked job can be ahead of anyone.
  int32 parked[core::kMaxBindings];
  // Bumped whenever a job parks into this budget's lines: an offer made at
  // the same version is still the head of its line.
  uint32 park_version;
  bool dirty;  // on the dirty ring
  // A dequeue refused a job of this budget that it could not hand over for
  // parking: when tokens come back the dispatcher must wake the workers of
  // starved_queue (any queue if starved_any_queue) to walk it again.
  bool starved;
  bool starved_any_queue;
  uint32 starved_queue;
  // Cost of the offers standing on this budget: the dispatcher offers only
  // what the tokens can pay beyond it (standby offers excluded).
  int64 offered_cost;
  // The slot of a standby offer heading one of this budget's lines; -1: none.
  int32 standby_slot;
};

// An offer is a parked job a worker may take if its budgets can pay. The
// dispatcher posts affordable line heads; it also posts, as a standby, the
// first head its budgets cannot pay yet, so that the release or the refill
// that makes it affordable wakes a worker straight away, without waiting
// for the dispatcher to read the line.
//
// The offer also carries the row version the dispatcher read (its xmin) and
// the job's queue, so that a woken worker can take the job without reading
// it again: the take locks the row only while it is still that version,
// which was ready, parked and bound as the offer says (a later change is a
// later transaction's, with another xmin).
constexpr int kOfferQueueBytes = 64;

struct Offer {
  int64 job_id;  // 0: free slot
  bool standby;  // not affordable when posted; not counted in offered_cost
  int32 priority;
  uint32 queue_hash;
  int32 line_budget;      // the budget whose line it heads
  uint32 park_version;    // that budget's version when offered
  int32 nbindings;
  core::Binding bindings[core::kMaxBindings];
  TransactionId xmin;             // InvalidTransactionId: not known (read the row)
  char queue[kOfferQueueBytes];   // "" when the name does not fit (read the row)
};

struct Waiter {
  Latch *latch;  // nullptr: not waiting
  // Set by the waker that sets the latch, cleared when the waiter looks
  // again: a wake goes to a waiter not already woken. 0: not woken; else
  // kWokenBit | the hash of the queue it was woken for, so that a waiter
  // leaving with a wake it may not have used can pass it on.
  pg_atomic_uint64 woken;
  // When it last began to look (waiter_seq): the latest is woken first, as
  // its process is the likeliest to still be running and warm.
  uint64 since;
  bool all_queues;
  int nqueues;
  uint32 queues[kMaxWaiterQueues];
};

struct Shared {
  LWLock *budget_lock;
  LWLock *waiter_lock;
  LWLockPadded *claim_locks;  // one per claim stripe
  LWLock *floor_lock;

  // budget_lock
  bool budgets_loaded;  // budgeted dispatch may run
  bool loading;         // the dispatcher is rebuilding: log, do not apply
  int replay_count;
  bool replay_overflow;
  bool wait_writers;  // after an overflow: load only once older writers ended
  // Transactions whose logged commit changes a load left to them: they were
  // between PRE_COMMIT and commit, and may yet fail. Each applies its own
  // changes at commit, or drops its slot on abort.
  int deferred_count;  // in deferred_xids
  int dirty_head;
  int dirty_count;
  uint64 dirty_marks;  // budgets marked so far: has a section marked any?
  int park_count;
  int offer_count;
  int offer_high;  // slots [0, offer_high) may be in use
  bool offers_full;

  // waiter_lock
  int notify_count;
  bool notify_overflow;  // more queues than slots: notify every queue with ready jobs
  uint64 waiter_seq;
  Latch *dispatcher_latch;
  TimestampTz dispatcher_next_wake;  // 0: awake and working, any hint must wake it
  bool sessions_ended;

  uint32 epoch;  // distinguishes session ids across restarts
  // The dispatcher's last start could not connect to zizq.database (set
  // and read by the dispatcher alone, one process at a time).
  bool database_missing;
  pg_atomic_uint64 next_session;
};

extern Shared *shared;
extern HTAB *budget_hash;
extern int32 *dirty_ring;      // max_budgets slots
extern int64 *park_requests;   // kParkRequestSlots
extern Offer *offers;          // max_offers
extern int max_offers;
extern Waiter *waiters;        // MaxBackends, by pgprocno
extern uint64 *sessions;       // MaxBackends, by pgprocno
extern ReplayEntry *replay_log;  // kReplaySlots
// Transactions a load found between their PRE_COMMIT and their commit; a
// backend has at most one, so MaxBackends slots never run out.
extern TransactionId *deferred_xids;  // MaxBackends
struct QueueName {
  char name[core::kMaxNameBytes + 1];
};
extern QueueName *notify_queues;  // kNotifySlots

void shmem_request();
void shmem_startup();
// Errors out when the library was not preloaded (no shared memory).
void require_shared();
// Forgets every budget, offer and request and starts logging changes;
// budgeted dispatch stops until the dispatcher reloads from the tables
// (CREATE EXTENSION, a replay log that overflowed). After an overflow
// (`wait_writers`) the load first waits for every older writer, even
// across a restart of the dispatcher.
void reset_shared_state(bool wait_writers);

// --- budgets (caller holds budget_lock as stated) ---------------------------
BudgetEntry *find_budget(int32 id);                        // any mode
BudgetEntry *add_budget(int32 id, const core::Policy &p);  // exclusive; nullptr when full
void remove_budget(int32 id);                              // exclusive
void reset_budgets_in_place();                             // exclusive: zizq.reset()
void clear_job_state_in_place();                           // exclusive: TRUNCATE zizq._jobs
// Rows written around zizq's calls whose jobs the live state must count
// (exclusive): true when budgets are loaded, to count them now. While the
// dispatcher loads, its snapshot may or may not see them and its replay log
// has no entry for them: the load starts over from the tables (as after an
// overflow of the log), once the writer has ended; false then.
bool count_now_or_reload();
void mark_dirty(BudgetEntry *b);                           // exclusive
// While loading: logs a change for the dispatcher to replay (exclusive).
void log_replay(ReplayEntry::Kind kind, int32 budget, int32 value, const core::Policy *policy,
                bool at_pre_commit = false);
// Deferred commits (budget_lock exclusive): a load hands a transaction its
// own logged changes (false if the slots ran out: one per backend, so
// never); the transaction takes its slot back (whether it had one).
bool defer_to_committer(TransactionId xid);
bool is_deferred(TransactionId xid);
bool take_deferred(TransactionId xid);
int32 pop_dirty();                                         // exclusive; 0 when empty
bool request_park(int64 job_id);                           // exclusive; false when full
// A refused budgeted job stays unparked (no park request could be made or
// carried out): when tokens come back, the dispatcher wakes the workers of
// its queue to walk it again (exclusive). A parked job needs none of this:
// its line's offers wake one worker each.
void mark_starved(const core::Binding *bindings, int n, uint32 queue_hash);
int take_park_requests(int64 *out, int max);               // exclusive
bool post_offer(const Offer &o);                           // exclusive; false when full
void remove_offer(int slot);                               // exclusive
bool has_offer(int64 job_id);                              // any
// Offered and takeable now: an offer, or a standby its budgets can pay (any).
bool offered_now(int64 job_id, int64 now);
// Can every budget of the offer pay its cost beyond the other offers? (any)
bool offer_affordable(const Offer &o, int64 now);
// The budget's standby offer if it has become affordable, else nullptr (any).
const Offer *affordable_standby(const BudgetEntry *b, int64 now);

// --- waking -------------------------------------------------------------------
uint32 queue_hash(const char *queue, int len);
// Wakes up to `count` backends waiting in dequeue(wait) for this queue;
// returns how many it woke.
int wake_waiters(uint32 hash, int count);
// A waiter leaving dequeue(wait) with a wake that came while it was looking
// (it took a job, or its wait was over): the wake may have been meant for a
// job it did not see, so another waiter of that queue gets it.
void pass_on_wake(uint64 woken);
void wake_all_waiters();
void wake_dispatcher();
// Wakes the dispatcher if `when` is earlier than its planned wake.
void wake_dispatcher_before(TimestampTz when);

// --- notifications ------------------------------------------------------------
// Notes a queue that got dispatchable jobs; wakes the dispatcher if the queue
// was not pending already (waiter_lock is taken here).
void note_notify(const char *queue);
// Takes the pending queues (up to max); *overflow: notify all queues.
int take_notifies(QueueName *out, int max, bool *overflow);

// --- sessions -----------------------------------------------------------------
// This backend's session id, registering it (and its exit hook) on first use.
uint64 my_session_id();

}  // namespace zizq::pg
