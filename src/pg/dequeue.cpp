// zizq dequeue (SPEC §2 dequeue, §3 "Ordering").
//
// A dequeue merges, in priority-then-id order, three streams of ready jobs
// in the worker's queues:
//   free     unbudgeted jobs, read with FOR UPDATE SKIP LOCKED: every row
//            read is taken (SKIP LOCKED never blocks, rows another worker
//            holds are passed over);
//   budgeted budgeted jobs not parked, read without locks, so that a job
//            the worker may not take is never left locked;
//   offered  parked jobs the dispatcher found affordable (shared memory).
// Budgeted and offered candidates go through core::admit (blocked lines,
// parked jobs ahead, all-or-nothing debit). One statement then locks the
// taken ones (SKIP LOCKED, and only while still the row version the walk
// read) and makes them in_flight with the free ones (a hand-off's one job
// goes without a statement where it may: job_take.hpp); one another worker
// got first, or that changed meanwhile, is refunded. Budgeted jobs refused are
// handed to the dispatcher to park, so later dequeues do not walk them again.
//
// With nothing budgeted in sight (the common case) the whole dequeue is one
// UPDATE ... FROM (SELECT ... FOR UPDATE SKIP LOCKED LIMIT n). So is a
// dequeue of one queue that holds budgeted jobs only, with no offer
// standing: its statement pays for each row as the scan meets it
// (budgeted_fast_attempt), and the walk runs only when that takes nothing.
//
// dequeue(wait) registers the backend as a waiter and sleeps on its latch
// between attempts; enqueue commits, releases and the dispatcher's offers
// set it. Between attempts it holds no row locks: each attempt runs in a
// subtransaction, rolled back when it took nothing (attempt_releasing_locks).
#include <algorithm>

#include "core/admission.hpp"
#include "core/names.hpp"
#include "core/scan_floor.hpp"
#include "core/token_bucket.hpp"

#include "pg/errors.hpp"
#include "pg/job_row.hpp"
#include "pg/job_take.hpp"
#include "pg/lines.hpp"
#include "pg/pg.hpp"
#include "pg/claims.hpp"
#include "pg/floors.hpp"
#include "pg/shmem.hpp"
#include "pg/spi.hpp"
#include "pg/xact.hpp"

extern "C" {
#include "executor/instrument.h"
}

namespace zizq::pg {
namespace {

constexpr int kMaxJobs = 10000;

// ---- the request -----------------------------------------------------------------

struct Request {
  int nqueues;      // 0: all queues
  char **queues;
  uint32 *hashes;
  Datum queue_array;  // text[] of the queues (when nqueues > 0)
  int32 max_jobs;
  int64 wait_ms;
  bool leased;
  int64 lease_ms;
  int64 session;
};

bool wants_queue(const Request &r, const char *queue) {
  if (r.nqueues == 0) return true;
  for (int i = 0; i < r.nqueues; ++i)
    if (strcmp(r.queues[i], queue) == 0) return true;
  return false;
}

bool wants_hash(const Request &r, uint32 hash) {
  if (r.nqueues == 0) return true;
  for (int i = 0; i < r.nqueues; ++i)
    if (r.hashes[i] == hash) return true;
  return false;
}

// How many candidates one look considers at most (refusals included).
int max_considered(const Request &r) { return r.max_jobs * 4 + 256; }

// ---- candidates --------------------------------------------------------------------

enum class Source : uint8 { Free, Budgeted, Offered };

struct Cand {
  int64 id;
  int32 priority;
  Source source;
  char *queue;
  int nbindings;
  core::Binding bindings[core::kMaxBindings];
  int offer_slot;          // Offered: its slot in shared memory
  uint32 versions[core::kMaxBindings];  // Offered: park versions when offered
  TransactionId seen_xmin;  // Budgeted, Offered: the row version read (take checks it is still current)
  TimestampTz debited_at;  // taken: when its budgets paid
  bool unread;             // Offered: taken as the offer says, its row not read (read_offers)
};

bool cand_before(const Cand &a, const Cand &b) {
  return a.priority != b.priority ? a.priority < b.priority : a.id < b.id;
}

TransactionId column_xid(uint64 row, int col) {
  bool isnull = false;
  Datum d = column(row, col, &isnull);
  return isnull ? InvalidTransactionId : DatumGetTransactionId(d);
}

// A job's budget_ids and budget_costs as its candidate's bindings; false
// (and none) when the two arrays do not pair up.
bool set_bindings(Datum ids, Datum costs, Cand &c) {
  int32 *id_values, *cost_values;
  int n = array_int4(ids, &id_values);
  bool paired = array_int4(costs, &cost_values) == n && n <= core::kMaxBindings;
  c.nbindings = paired ? n : 0;
  for (int i = 0; i < c.nbindings; ++i) c.bindings[i] = core::Binding{id_values[i], cost_values[i]};
  return paired;
}

void read_bindings(uint64 row, int ids_col, int costs_col, Cand &c) {
  bool isnull = false;
  Datum ids = column(row, ids_col, &isnull);
  c.nbindings = 0;
  if (isnull) return;
  Datum costs = column(row, costs_col, &isnull);
  if (isnull) return;  // (a row written around zizq)
  (void)set_bindings(ids, costs, c);
}

// A stream of candidates in order, refilled by a query on demand.
struct Stream {
  Cand *rows;
  int count, pos;
  bool exhausted;
  const Cand *peek() const { return pos < count ? &rows[pos] : nullptr; }
};

// ---- plans ---------------------------------------------------------------------------

// What the take statements return: a zizq.job row as dequeue returns it
// (`duplicate` false), so that emit_taken can pass the rows on unchanged.
#define ZIZQ_TAKEN_COLUMNS ZIZQ_JOB_COLUMNS ", false"

// The columns a dequeue sets (dequeued_at aside: see take()).
#define ZIZQ_TAKE_SET                                                                                   \
  "status = 'in_flight', parked = false, session_id = $2, "                                             \
  "lease_ms = $3, lease_until = CASE WHEN $3 IS NULL THEN NULL "                                        \
  "ELSE clock_timestamp() + $3 * interval '1 millisecond' END, "                                        \
  "unique_hold = CASE WHEN unique_while = 'queued' THEN NULL ELSE unique_hold END"

SPIPlanPtr fast_one = nullptr, fast_all = nullptr, take_plan = nullptr;
SPIPlanPtr free_one = nullptr, free_all = nullptr;
SPIPlanPtr budgeted_one = nullptr, budgeted_all = nullptr;
SPIPlanPtr offered_plan = nullptr;

// One statement when nothing budgeted is in sight. The ids are chosen in a
// sub-select (FOR UPDATE SKIP LOCKED) whose array the UPDATE finds by primary
// key: a shape whose generic plan cannot turn into a join over the table.
//
// For one queue there are two forms (see choose_one_queue_form). `queue = $4`
// lets the planner drop `queue` from the ORDER BY (it is a constant) and
// use the across-queue index (priority, id) with the queue as a filter: the
// fastest plan while the queue holds most ready jobs (it drains 10-15 %
// faster than the per-queue index here), and a scan of every other queue's
// ready jobs when it does not (a dequeue of an empty queue beside 50,000
// ready jobs of another read all 50,000: 9 ms instead of 0.2). The second
// form bounds the queue as a range, `queue >= $4 AND queue <= $4`, which
// keeps `queue` in the order, so that only the per-queue index serves it.
#define ZIZQ_ONE_QUEUE(n) "queue >= $" #n " AND queue <= $" #n " "
#define ZIZQ_FAST_TAKE(queue_qual, order)                                                                     \
  "UPDATE zizq._jobs SET " ZIZQ_TAKE_SET ", dequeued_at = clock_timestamp() WHERE id = ANY (ARRAY(SELECT id " \
  "FROM zizq._jobs WHERE status = 'ready' AND budget_ids IS NULL " queue_qual                                 \
  "AND zizq._claim(id, priority, queue, ctid, xmax) "                                                         \
  "ORDER BY " order " LIMIT $1 FOR UPDATE SKIP LOCKED)) RETURNING " ZIZQ_TAKEN_COLUMNS

enum class FastForm { AllQueues, OneQueue, OneQueueIndex };

SPIPlanPtr fast_one_index = nullptr;

SPIPlanPtr fast_plan(FastForm form) {
  if (form == FastForm::AllQueues)
    return prepared(fast_all, ZIZQ_FAST_TAKE("", "priority, id"), {INT4OID, INT8OID, INT8OID});
  if (form == FastForm::OneQueue)
    return prepared(fast_one, ZIZQ_FAST_TAKE("AND queue = $4 AND (priority, id) >= ($5, $6) ", "queue, priority, id"),
                    {INT4OID, INT8OID, INT8OID, TEXTOID, INT4OID, INT8OID});
  return prepared(fast_one_index,
                  ZIZQ_FAST_TAKE("AND " ZIZQ_ONE_QUEUE(4) "AND (queue, priority, id) >= ($4, $5, $6) ",
                                 "queue, priority, id"),
                  {INT4OID, INT8OID, INT8OID, TEXTOID, INT4OID, INT8OID});
}

// Queues a backend remembers for a while, by name hash: up to 16, the one
// due to be forgotten first making room.
class QueueMemo {
 public:
  explicit QueueMemo(int64 hold_us) : hold_us_(hold_us) {}
  bool holds(uint32 hash) const {
    TimestampTz now = GetCurrentTimestamp();
    for (const Entry &e : entries_)
      if (e.hash == hash && e.until > now) return true;
    return false;
  }
  void note(uint32 hash) {
    Entry *slot = &entries_[0];
    for (Entry &e : entries_) {
      if (e.hash == hash) {
        slot = &e;
        break;
      }
      if (e.until < slot->until) slot = &e;
    }
    slot->hash = hash;
    slot->until = GetCurrentTimestamp() + hold_us_;
  }

 private:
  struct Entry {
    uint32 hash;
    TimestampTz until;
  };
  Entry entries_[16] = {};
  int64 hold_us_;
};

// Queues whose `queue = $4` form read far more than it took: they use the
// per-queue index form for a while, then the other is tried again (the
// queue may hold most ready jobs again by then).
QueueMemo index_form_queues(10 * USECS_PER_SEC);

FastForm choose_one_queue_form(uint32 hash) {
  return index_form_queues.holds(hash) ? FastForm::OneQueueIndex : FastForm::OneQueue;
}

// The statement read `buffers` pages and took `rows` of the `wanted` jobs.
// Short of them, its scan went to the end of the across-queue index: past
// every other queue's ready jobs. That costs little while this queue holds
// most ready jobs (a drain's end reads a few dozen pages), and much when
// another queue holds a backlog (an empty queue's look past 20,000 ready
// jobs of another read 366 pages: heap tuples in a row share a page; a
// drain's takes of 100 jobs read 1,000-2,400 pages, so the pages alone do
// not tell the two apart).
void note_one_queue_reads(uint32 hash, uint64 rows, int wanted, int64 buffers) {
  if (rows >= static_cast<uint64>(wanted) || buffers <= 16 * static_cast<int64>(rows) + 128) return;
  index_form_queues.note(hash);
}

int64 buffers_read_so_far() { return pgBufferUsage.shared_blks_hit + pgBufferUsage.shared_blks_read; }

SPIPlanPtr free_plan(bool all) {
  if (all)
    return prepared(free_all,
                    "SELECT id, priority, queue FROM zizq._jobs WHERE status = 'ready' AND budget_ids IS NULL "
                    "AND zizq._claim(id, priority, queue, ctid, xmax) ORDER BY priority, id FOR UPDATE SKIP LOCKED",
                    {});
  return prepared(free_one,
                  "SELECT id, priority, queue FROM zizq._jobs WHERE status = 'ready' AND budget_ids IS NULL "
                  "AND " ZIZQ_ONE_QUEUE(1) "AND zizq._claim(id, priority, queue, ctid, xmax) "
                  "ORDER BY queue, priority, id FOR UPDATE SKIP LOCKED",
                  {TEXTOID});
}

SPIPlanPtr budgeted_plan(bool all) {
  if (all)
    return prepared(budgeted_all,
                    "SELECT id, priority, queue, budget_ids, budget_costs, xmin FROM zizq._jobs WHERE status = 'ready' "
                    "AND budget_ids IS NOT NULL AND NOT parked AND (priority, id) >= ($1, $2) "
                    "AND zizq._unclaimed(id, priority, queue) ORDER BY priority, id LIMIT $3",
                    {INT4OID, INT8OID, INT4OID});
  // One queue: `queue <= $4` and the row comparison, not `queue = $4`.
  // With an equality on `queue` beside it, the btree starts at the queue's
  // first entry and checks the comparison entry by entry (a scan from the
  // floor of a queue with 100,000 budgeted jobs read 50,000 entries to
  // reach it); alone, the comparison positions the scan at the floor, and
  // the bound ends it at the queue's last entry. An equality with
  // `(priority, id) >= ($1, $2)` positions as well, but its generic plan
  // takes the across-queue index (see fast_plan).
  return prepared(budgeted_one,
                  "SELECT id, priority, queue, budget_ids, budget_costs, xmin FROM zizq._jobs WHERE status = 'ready' "
                  "AND budget_ids IS NOT NULL AND NOT parked AND queue <= $4 AND (queue, priority, id) >= ($4, $1, $2) "
                  "AND zizq._unclaimed(id, priority, queue) ORDER BY queue, priority, id LIMIT $3",
                  {INT4OID, INT8OID, INT4OID, TEXTOID});
}

// Statements that look rows up by id keep their other conditions on
// `_jobs` short of a partial index's whole predicate (here `status =
// 'ready'` alone), or read them as columns (offers_plan): a generic plan
// made on stale statistics would otherwise scan that partial index whole.
SPIPlanPtr take_statement() {
  return prepared(take_plan,
                  "UPDATE zizq._jobs SET " ZIZQ_TAKE_SET ", dequeued_at = COALESCE(zizq._paid_at(id), clock_timestamp()) "
                  "WHERE id = ANY (ARRAY(SELECT l.id FROM unnest($1::bigint[], $4::xid[]) AS t(job_id, seen) "
                  "CROSS JOIN LATERAL (SELECT x.id FROM zizq._jobs x WHERE x.id = t.job_id AND x.status = 'ready' "
                  "AND (t.seen = '0'::xid OR x.xmin = t.seen) FOR UPDATE SKIP LOCKED) l)) RETURNING " ZIZQ_TAKEN_COLUMNS,
                  {INT8ARRAYOID, INT8OID, INT8OID, XIDARRAYOID});
}

SPIPlanPtr take_one_plan = nullptr;

// The take of one job, a hand-off's: take_statement's locks and checks
// without its arrays, function scan and join. p50 153 us against 184 for
// the same takes through take_statement (`limited`, alternate takes timed
// in one run).
SPIPlanPtr take_one_statement() {
  return prepared(take_one_plan,
                  "UPDATE zizq._jobs SET " ZIZQ_TAKE_SET ", dequeued_at = COALESCE($5, clock_timestamp()) "
                  "WHERE id = (SELECT x.id FROM zizq._jobs x WHERE x.id = $1 AND x.status = 'ready' "
                  "AND ($4 = '0'::xid OR x.xmin = $4) FOR UPDATE SKIP LOCKED) RETURNING " ZIZQ_TAKEN_COLUMNS,
                  {INT8OID, INT8OID, INT8OID, XIDOID, TIMESTAMPTZOID});
}

SPIPlanPtr still_free_plan = nullptr;

// Claims that ended without their jobs taken: rows a statement claimed and
// did not take, candidates another worker locked first. Such a job may be
// ready below floors that scans raised past it while it was claimed
// (floors.hpp, live raises): the floors come down to the jobs still ready
// and not parked, at the keys the claims were made at. One a FOR UPDATE
// re-check found taken by a commit the statement's snapshot missed is not
// ready (and a commit that makes it ready again lowers the floor itself):
// most dropped claims are of that kind in a busy drain, and lowering for
// them would refuse every live raise in progress in the queues of the
// slot. A job moved meanwhile was
// lowered at its new key by the move's commit, and no scan passed it there
// while it was claimed (claims.hpp, Moved). It runs a query: SPI_tuptable
// is not the caller's afterwards.
void release_dropped_claims(const int64 *ids, int n) {
  if (n == 0) return;
  // Asked while the jobs are still claimed and their claims recorded: an
  // error here leaves the abort to release them, lowering for each.
  Datum args[1] = {int8_array(ids, n)};
  // By id: no `budget_ids` condition beside these (see take_statement).
  uint64 got = run_plan(prepared(still_free_plan,
                                 "SELECT id FROM zizq._jobs WHERE id = ANY ($1) AND status = 'ready' "
                                 "AND NOT parked",
                                 {INT8ARRAYOID}),
                        args, nullptr, false);
  bool *ready = static_cast<bool *>(palloc0(sizeof(bool) * n));
  for (uint64 r = 0; r < got; ++r) {
    int64 id = column_int64(r, 1);
    for (int i = 0; i < n; ++i) ready[i] = ready[i] || ids[i] == id;
  }
  int64 *forgotten = static_cast<int64 *>(palloc(sizeof(int64) * n));
  uint32 *hashes = static_cast<uint32 *>(palloc(sizeof(uint32) * n));
  core::JobKey *keys = static_cast<core::JobKey *>(palloc(sizeof(core::JobKey) * n));
  int k = 0, nready = 0;
  for (int i = 0; i < n; ++i) {
    ClaimedJob job;
    if (!forget_claim(ids[i], &job)) continue;
    forgotten[k++] = job.id;
    if (!ready[i]) continue;
    hashes[nready] = job.queue_hash;
    keys[nready++] = core::JobKey{job.priority, job.id};
  }
  // Unclaimed first: a scan that meets a job after its floor came down
  // must find it free.
  unclaim_jobs(forgotten, k);
  lower_floors_of_hashes(hashes, keys, nready);
}

// Whether each offered job is still ready and parked is read, not asked
// for in WHERE: with `status = 'ready' AND parked` there, those clauses
// imply the predicate of the lines' partial index, and a generic plan made
// while the table looked small (statistics of a queue table are often
// stale) scanned that whole index, filtering on the ids: 995 entries and
// ~90 us for one offered job in `limited`. With only the ids to go on, the
// primary key is the one index that serves.
SPIPlanPtr offers_plan() {
  return prepared(offered_plan,
                  "SELECT id, priority, queue, budget_ids, budget_costs, xmin, status = 'ready' AND parked "
                  "FROM zizq._jobs WHERE id = ANY ($1) ORDER BY priority, id",
                  {INT8ARRAYOID});
}

// ---- the free stream: one FOR UPDATE SKIP LOCKED cursor per queue ---------------------

// Where a read of one queue's ready jobs of a kind starts, and whether the
// dequeue may raise that floor (core/scan_floor.hpp). The floor is read
// before the read takes its snapshot. A snapshot older than the statement
// (REPEATABLE READ) may miss jobs whose floors were lowered before the
// read, and a transaction that hid ready jobs from itself would bring them
// back below the floor if it rolled back: neither raises. A transaction
// that made jobs ready sees them before their floors are lowered (at its
// commit): it reads from the bottom. Every queue at once: no floor.
struct FloorStart {
  core::FloorView view;
  bool may_raise;
  // The queue holds no ready job of the kind: a read from the floor would
  // find nothing, so none is made.
  bool nothing_ready() const { return view.floor == core::kAboveAllKeys; }
};

FloorStart floor_start(const char *queue, core::FloorKind kind) {
  if (queue == nullptr) return FloorStart{core::FloorView{core::kBottomKey, 0}, false};
  FloorStart f{floor_of(queue, kind), !IsolationUsesXactSnapshot() && !hid_ready_jobs(kind)};
  if (readied_jobs()) f.view.floor = core::kBottomKey;
  return f;
}

struct FreeCursor {
  Portal portal;
  bool has_head, done;
  Cand head;
};

struct FreeStreams {
  int n;
  FreeCursor *cursors;
};

// One row at a time; each fetch's result table is freed once read (they
// stayed until the dequeue returned: 8 kB a job in a walk of 10,000), and
// the caller's context is current again after the fetch (see spi.cpp).
void advance(FreeCursor &c) {
  MemoryContext caller = CurrentMemoryContext;
  SPI_cursor_fetch(c.portal, true, 1);
  MemoryContextSwitchTo(caller);
  if (SPI_processed == 0) {
    c.has_head = false;
    c.done = true;
  } else {
    c.has_head = true;
    c.head.id = column_int64(0, 1);
    c.head.priority = column_int32(0, 2);
    c.head.queue = column_text(0, 3);
    c.head.source = Source::Free;
    c.head.nbindings = 0;
  }
  SPI_freetuptable(SPI_tuptable);
  SPI_tuptable = nullptr;  // (not reset by SPI_freetuptable)
}

// One cursor per queue. A queue whose free floor is above every key has no
// cursor (it would find nothing); one whose cursor meets no job at all
// raises its floor there, as fast_attempt's statement would, so that the
// looks of a queue of budgeted jobs skip the read after the first.
FreeStreams open_free(const Request &r) {
  FreeStreams fs;
  fs.n = r.nqueues == 0 ? 1 : r.nqueues;
  fs.cursors = static_cast<FreeCursor *>(palloc0(sizeof(FreeCursor) * fs.n));
  for (int i = 0; i < fs.n; ++i) {
    FreeCursor &c = fs.cursors[i];
    const char *queue = r.nqueues == 0 ? nullptr : r.queues[i];
    FloorStart start = floor_start(queue, core::FloorKind::Free);
    if (start.nothing_ready()) {
      c.done = true;
      continue;
    }
    Datum args[1] = {queue == nullptr ? 0 : CStringGetTextDatum(queue)};
    uint64 noted = examined_count();
    MemoryContext caller = CurrentMemoryContext;
    c.portal = SPI_cursor_open(nullptr, free_plan(queue == nullptr), args, nullptr, false);
    MemoryContextSwitchTo(caller);
    advance(c);
    if (start.may_raise && !c.has_head && examined_count() == noted)
      raise_floor_of(queue, core::FloorKind::Free, start.view.seq, core::kAboveAllKeys);
  }
  return fs;
}

FreeCursor *free_head(FreeStreams &fs) {
  FreeCursor *best = nullptr;
  for (int i = 0; i < fs.n; ++i)
    if (fs.cursors[i].has_head && (best == nullptr || cand_before(fs.cursors[i].head, best->head)))
      best = &fs.cursors[i];
  return best;
}

// Closes the cursors; a head row it had locked but did not take is ready
// for others once this transaction ends. (A look that took nothing and left
// a head behind stopped at max_considered refused budgeted jobs; its rolled
// back subtransaction frees the head at once, but a wake then would only
// send another worker, or this one, into the same refusals until the
// dispatcher parks them: none is sent, as none was before.)
void close_free(FreeStreams &fs) {
  for (int i = 0; i < fs.n; ++i) {
    if (fs.cursors[i].has_head)
      at_commit_wake_queue(queue_hash(fs.cursors[i].head.queue, strlen(fs.cursors[i].head.queue)), 1);
    if (fs.cursors[i].portal != nullptr) SPI_cursor_close(fs.cursors[i].portal);
  }
}

// ---- the budgeted stream: keyset pages, merged across queues ----------------------------

struct BudgetedStream {
  Stream s;
  core::JobKey from;    // where the next page starts
  bool raising;         // may still raise the queue's budgeted floor
  uint64 seq;           // the floor's seq read before the first page
  core::JobKey passed;  // past the rows the walk went through, all claimed
};

void refill_budgeted(const Request &r, BudgetedStream &b, int page) {
  int n = r.nqueues == 0 ? 1 : r.nqueues;
  Cand *rows = static_cast<Cand *>(palloc0(sizeof(Cand) * page * n));
  int count = 0;
  for (int q = 0; q < n; ++q) {
    Datum args[4] = {Int32GetDatum(b.from.priority), Int64GetDatum(b.from.id), Int32GetDatum(page),
                     r.nqueues == 0 ? 0 : CStringGetTextDatum(r.queues[q])};
    uint64 got = run_plan(budgeted_plan(r.nqueues == 0), args, nullptr, false);
    for (uint64 i = 0; i < got; ++i) {
      Cand &c = rows[count++];
      c.id = column_int64(i, 1);
      c.priority = column_int32(i, 2);
      c.queue = column_text(i, 3);
      c.source = Source::Budgeted;
      read_bindings(i, 4, 5, c);
      c.seen_xmin = column_xid(i, 6);
    }
  }
  std::sort(rows, rows + count, cand_before);
  // With several queues, only rows before the first queue's page end are
  // known to be complete in order; keep it simple: a short page from every
  // queue means the stream is done.
  if (n > 1 && count > page) count = page;
  b.s.rows = rows;
  b.s.count = count;
  b.s.pos = 0;
  b.s.exhausted = count < page;
  if (count > 0) b.from = core::past_key(core::JobKey{rows[count - 1].priority, rows[count - 1].id});
  // The read skipped a job claimed at another key: the walk must not pass it.
  if (met_moved_claim()) b.raising = false;
}

// The budgeted stream of a dequeue of one queue starts at the queue's
// budgeted floor, and its first page raises the floor to the first ready
// job the read met, claimed or not (zizq._unclaimed notes them): the jobs
// below are taken for good. The same rule as fast_attempt's; the walk may
// then raise it past the jobs it claims (raise_past_walk). Several queues,
// or every queue, are read from the bottom.
BudgetedStream open_budgeted(const Request &r, int page) {
  FloorStart start = floor_start(r.nqueues == 1 ? r.queues[0] : nullptr, core::FloorKind::Budgeted);
  BudgetedStream b{{nullptr, 0, 0, true}, start.view.floor, start.may_raise, start.view.seq, core::kBottomKey};
  if (start.nothing_ready()) return b;  // exhausted: the read would find nothing
  begin_examined();
  refill_budgeted(r, b, page);
  // (Only when it would move: the raise takes the floors' lock exclusively.)
  if (start.may_raise && start.view.floor < examined_min())
    raise_floor_of(r.queues[0], core::FloorKind::Budgeted, start.view.seq, examined_min());
  return b;
}

// The walk went through a row of the budgeted stream. Every ready job below
// the stream's next row is taken for good or claimed at the key it has: the
// rows the walk passed (claimed by it and admitted, or held by another open
// dequeue, whose release would lower the floor to them) and those the read
// skipped as claimed (one claimed at another key stops the raises: see
// refill_budgeted). A row held at another key, ours already or beyond the
// claim table, ends the run: the floor may rise past the rows before it.
// One the walk refused does too, and its release lowers the floor and
// bumps the slot's seq, which refuses the walk's raise altogether.
void pass_budgeted(BudgetedStream &b, const Cand &c, bool claimed) {
  if (!claimed) b.raising = false;
  if (b.raising) b.passed = core::past_key(core::JobKey{c.priority, c.id});
}

// Claimed jobs count as gone (core/scan_floor.hpp): dequeues that start
// while this one takes its jobs begin after them.
void raise_past_walk(const Request &r, const BudgetedStream &b) {
  if (b.raising && core::kBottomKey < b.passed && floor_seq_of(r.queues[0]) == b.seq)
    raise_floor_of(r.queues[0], core::FloorKind::Budgeted, b.seq, b.passed);
}

// ---- the offered stream ------------------------------------------------------------------

// The slot of a job's offer: where it was read unless the dispatcher has
// re-posted its line since (budget_lock held); -1 when gone.
int offer_slot_of(int64 job_id, int read_at) {
  if (read_at >= 0 && read_at < shared->offer_high && offers[read_at].job_id == job_id) return read_at;
  for (int i = 0; i < shared->offer_high; ++i)
    if (offers[i].job_id == job_id) return i;
  return -1;
}

// Offers whose job is no longer ready and parked (taken, unbound, gone)
// leave the board, and their lines are evaluated again: a stale offer
// would hold its cost off the budget. `live[j]`: ids[j] still is.
void drop_stale_offers(const int64 *ids, const int *slots, int n, const bool *live) {
  // A transaction snapshot does not see jobs parked since it began.
  if (IsolationUsesXactSnapshot()) return;
  LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
  for (int j = 0; j < n; ++j) {
    int slot = live[j] ? -1 : offer_slot_of(ids[j], slots[j]);
    if (slot < 0) continue;
    if (BudgetEntry *b = find_budget(offers[slot].line_budget)) mark_dirty(b);
    remove_offer(slot);
  }
  LWLockRelease(shared->budget_lock);
  wake_dispatcher();
}

// Reads offered rows by id: those still ready and parked join the stream;
// the others' offers leave the board.
void read_offered_rows(const Request &r, int64 *ids, int *slots, uint32 (*versions)[core::kMaxBindings], int n,
                       Stream &s) {
  Datum args[1] = {int8_array(ids, n)};
  uint64 got = run_plan(offers_plan(), args, nullptr, false);
  bool *live = static_cast<bool *>(palloc0(sizeof(bool) * n));
  int nlive = 0;
  Cand *rows = static_cast<Cand *>(palloc0(sizeof(Cand) * ZZ_MAX(got, 1)));
  int count = 0;
  for (uint64 i = 0; i < got; ++i) {
    if (!column_bool(i, 7)) continue;
    Cand &c = rows[count];
    c.id = column_int64(i, 1);
    for (int j = 0; j < n; ++j)
      if (ids[j] == c.id) {
        live[j] = true;
        c.offer_slot = slots[j];
        memcpy(c.versions, versions[j], sizeof c.versions);
      }
    ++nlive;
    c.priority = column_int32(i, 2);
    c.queue = column_text(i, 3);
    c.source = Source::Offered;
    read_bindings(i, 4, 5, c);
    c.seen_xmin = column_xid(i, 6);
    if (!wants_queue(r, c.queue)) continue;  // a queue-hash collision
    ++count;
  }
  if (nlive < n) drop_stale_offers(ids, slots, n, live);
  if (count > 0) {
    s.rows = static_cast<Cand *>(repalloc(s.rows, sizeof(Cand) * (s.count + count + 1)));
    memcpy(s.rows + s.count, rows, sizeof(Cand) * count);
    s.count += count;
  }
}

// Offers whose take failed in this backend while taken unread (below):
// the next look reads their rows, as it reads offers that carry no row
// version, and so drops the stale ones.
constexpr int kMaxSuspects = 16;
int64 suspect_offers[kMaxSuspects];
int nsuspects = 0;

bool is_suspect(int64 job_id) {
  for (int i = 0; i < nsuspects; ++i)
    if (suspect_offers[i] == job_id) return true;
  return false;
}

// (When full, the oldest suspect goes: at worst it fails one more take.)
void suspect_offer(int64 job_id) {
  if (is_suspect(job_id)) return;
  if (nsuspects == kMaxSuspects) memmove(suspect_offers, suspect_offers + 1, sizeof(int64) * --nsuspects);
  suspect_offers[nsuspects++] = job_id;
}

void forget_suspect(int64 job_id) {
  for (int i = 0; i < nsuspects; ++i)
    if (suspect_offers[i] == job_id) {
      suspect_offers[i] = suspect_offers[--nsuspects];
      return;
    }
}

// Can the offer be taken as it stands, without reading its row? It must
// name the row version the dispatcher read and its queue, and this
// transaction must see committed changes as they come (a transaction
// snapshot goes the reading way, as drop_stale_offers does).
bool take_unread(const Offer &o) {
  return TransactionIdIsValid(o.xmin) && o.queue[0] != '\0' && !is_suspect(o.job_id) && !IsolationUsesXactSnapshot();
}

// An offered job as a candidate, from the offer alone. The take locks the
// row only while it is still the version the dispatcher read (seen_xmin),
// so the bindings, priority and queue here are the row's.
Cand unread_candidate(const Offer &o, int slot, const uint32 *versions) {
  Cand c{};
  c.id = o.job_id;
  c.priority = o.priority;
  c.queue = pstrdup(o.queue);
  c.source = Source::Offered;
  c.nbindings = o.nbindings;
  memcpy(c.bindings, o.bindings, sizeof(core::Binding) * o.nbindings);
  c.offer_slot = slot;
  memcpy(c.versions, versions, sizeof c.versions);
  c.seen_xmin = o.xmin;
  c.unread = true;
  return c;
}

// The offers a look may take: most straight from shared memory (the woken
// worker of a hand-off saves the read by id, p50 41 us and p90 94 of its
// look in `limited`), the others read by id.
Stream read_offers(const Request &r) {
  Stream s{nullptr, 0, 0, true};
  int64 *ids = nullptr;
  int *slots = nullptr;
  uint32(*versions)[core::kMaxBindings] = nullptr;
  Cand *unread = nullptr;
  int n = 0, nunread = 0;
  LWLockAcquire(shared->budget_lock, LW_SHARED);
  if (shared->offer_count > 0) {
    ids = static_cast<int64 *>(palloc(sizeof(int64) * shared->offer_high));
    slots = static_cast<int *>(palloc(sizeof(int) * shared->offer_high));
    versions = static_cast<uint32(*)[core::kMaxBindings]>(palloc(sizeof(uint32) * core::kMaxBindings * shared->offer_high));
    unread = static_cast<Cand *>(palloc(sizeof(Cand) * shared->offer_high));
    int64 now = monotonic_us();
    for (int i = 0; i < shared->offer_high; ++i) {
      const Offer &o = offers[i];
      if (o.job_id == 0 || !wants_hash(r, o.queue_hash)) continue;
      if (o.standby && !offer_affordable(o, now)) continue;
      uint32 v[core::kMaxBindings] = {};
      for (int k = 0; k < o.nbindings; ++k) {
        BudgetEntry *b = find_budget(o.bindings[k].budget);
        // The version the offer was made at, for its line budget; any change
        // of the others is caught by their own versions recorded here now.
        v[k] = (o.bindings[k].budget == o.line_budget) ? o.park_version : (b ? b->park_version : 0);
      }
      if (take_unread(o)) {
        if (wants_queue(r, o.queue)) unread[nunread++] = unread_candidate(o, i, v);  // else a queue-hash collision
        continue;
      }
      forget_suspect(o.job_id);  // read now
      ids[n] = o.job_id;
      slots[n] = i;
      memcpy(versions[n], v, sizeof v);
      ++n;
    }
  }
  LWLockRelease(shared->budget_lock);
  s.rows = static_cast<Cand *>(palloc0(sizeof(Cand) * (n + nunread + 1)));
  for (int i = 0; i < nunread; ++i) s.rows[s.count++] = unread[i];
  if (n > 0) read_offered_rows(r, ids, slots, versions, n, s);
  std::sort(s.rows, s.rows + s.count, cand_before);
  return s;
}

// ---- admission callbacks ------------------------------------------------------------------

struct Walk {
  const Request *req;
  int64 grace_us;
};

bool offered_line_unchanged(const Cand &c) {
  bool same = true;
  LWLockAcquire(shared->budget_lock, LW_SHARED);
  for (int k = 0; k < c.nbindings && same; ++k) {
    BudgetEntry *b = find_budget(c.bindings[k].budget);
    same = b != nullptr && b->park_version == c.versions[k];
  }
  LWLockRelease(shared->budget_lock);
  return same;
}

bool candidate_parked_ahead(const Cand &c, const core::Binding &binding) {
  int32 counts[core::kMaxBindings];
  parked_counts(binding.budget, counts);
  if (!any_parked(counts)) return false;
  return parked_ahead(binding.budget, counts, c.queue, c.priority, c.id);
}

// Debits every budget of the candidate or none, as of now: the instant
// recorded as the job's dequeued_at. Not as of the look's start: a look
// that waited since (for a lock, for the CPU) would be charged for tokens
// as they were then, and the tokens that dripped meanwhile would go to the
// next dequeue as well: two jobs at once where the budget allows one
// (test/isolation/specs/debit_instant.spec).
bool debit_all(const Cand &c, const Walk &w, TimestampTz *paid_at) {
  reserve_ops(c.nbindings);
  bool ok = true;
  LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
  int64 now = monotonic_us();
  BudgetEntry *entries[core::kMaxBindings];
  for (int k = 0; k < c.nbindings && ok; ++k) {
    entries[k] = find_budget(c.bindings[k].budget);
    ok = entries[k] != nullptr && core::can_pay(entries[k]->policy, entries[k]->tokens, c.bindings[k].cost, now);
  }
  if (ok) {
    for (int k = 0; k < c.nbindings; ++k) {
      core::debit(entries[k]->policy, entries[k]->tokens, c.bindings[k].cost, now, w.grace_us);
      record_debit(c.bindings[k].budget, c.bindings[k].cost);
    }
    *paid_at = GetCurrentTimestamp();  // under the lock: in the order the tokens went
  }
  LWLockRelease(shared->budget_lock);
  return ok;
}

// ---- one attempt ----------------------------------------------------------------------------

struct Taken {
  int64 *ids;
  int n;
};

// Whether rows of `from` can stand for rows of `to` as they are: the same
// column types in the same order.
bool same_row_type(TupleDesc from, TupleDesc to) {
  if (from->natts != to->natts) return false;
  for (int i = 0; i < from->natts; ++i) {
    Form_pg_attribute a = TupleDescAttr(from, i), b = TupleDescAttr(to, i);
    if (a->attisdropped || b->attisdropped || a->atttypid != b->atttypid) return false;
  }
  return true;
}

// The rows of the final UPDATE go out in dispatch order. The take
// statements return zizq.job's columns (ZIZQ_TAKEN_COLUMNS), so each row is
// stored as it came: forming a new tuple from 19 columns read one by one
// cost ~8 % of a budgeted batch dequeue.
void emit_taken(uint64 rows, Tuplestorestate *store, TupleDesc desc) {
  if (!same_row_type(SPI_tuptable->tupdesc, desc)) elog(ERROR, "zizq: a take statement's row is not a zizq.job");
  struct Row {
    int32 priority;
    int64 id;
    HeapTuple tuple;
  };
  Row *sorted = static_cast<Row *>(palloc(sizeof(Row) * ZZ_MAX(rows, 1)));
  for (uint64 i = 0; i < rows; ++i) {
    sorted[i].id = column_int64(i, 1);
    sorted[i].priority = column_int32(i, 5);
    sorted[i].tuple = SPI_tuptable->vals[i];
  }
  std::sort(sorted, sorted + rows,
            [](const Row &a, const Row &b) { return a.priority != b.priority ? a.priority < b.priority : a.id < b.id; });
  for (uint64 i = 0; i < rows; ++i) tuplestore_puttuple(store, sorted[i].tuple);
}

// A job gone in_flight: its queue's workers are woken if this rolls back.
void note_taken_job(const char *queue) { record_wake_on_abort(queue_hash(queue, strlen(queue)), 1); }

// Jobs taken under a lease: the dispatcher wakes by its end.
void note_lease(const Request &r) {
  if (r.leased) at_commit_wake_dispatcher_before(GetCurrentTimestamp() + r.lease_ms * 1000);
}

// After the in_flight UPDATE: undo-on-abort wakes and lease hints.
void note_taken(const Request &r, uint64 rows) {
  for (uint64 i = 0; i < rows; ++i) note_taken_job(column_text(i, 2));
  if (rows > 0) note_lease(r);
}

// The jobs to take: free ones (locked by their cursors already, seen 0)
// and budgeted or offered ones (debited; locked here, SKIP LOCKED, and only
// if the row is still the version the walk read).
struct TakeList {
  int64 *ids;
  TimestampTz *paid_at;  // DT_NOBEGIN: free
  TransactionId *seen;   // InvalidTransactionId: free
  int n;
};

// Runs a take statement whose SQL functions read state of this file while
// `active` is set; clears it however the statement ends.
uint64 run_plan_while(SPIPlanPtr plan, Datum *args, const char *nulls, bool &active) {
  uint64 rows = 0;
  PG_TRY();
  {
    rows = run_plan(plan, args, nulls, false);
  }
  PG_FINALLY();
  {
    active = false;
  }
  PG_END_TRY();
  return rows;
}

// The debit instants of the list being taken, in id order, for
// zizq._paid_at() in the take statement.
struct TakeTimes {
  bool active;
  int level;  // the transaction nest level it was armed at
  int64 *ids;
  TimestampTz *paid_at;
  int n;
};
TakeTimes take_times{};

void begin_take_times(const TakeList &list) {
  TakeTimes &t = take_times;
  int *order = static_cast<int *>(palloc(sizeof(int) * (list.n + 1)));
  for (int i = 0; i < list.n; ++i) order[i] = i;
  std::sort(order, order + list.n, [&](int a, int b) { return list.ids[a] < list.ids[b]; });
  t.ids = static_cast<int64 *>(palloc(sizeof(int64) * (list.n + 1)));
  t.paid_at = static_cast<TimestampTz *>(palloc(sizeof(TimestampTz) * (list.n + 1)));
  for (int i = 0; i < list.n; ++i) {
    t.ids[i] = list.ids[order[i]];
    t.paid_at[i] = list.paid_at[order[i]];
  }
  t.n = list.n;
  t.level = GetCurrentTransactionNestLevel();
  t.active = true;
}

// NULL for a free job: the UPDATE's clock stands.
bool take_time_of(int64 id, TimestampTz *paid_at) {
  const TakeTimes &t = take_times;
  const int64 *it = std::lower_bound(t.ids, t.ids + t.n, id);
  if (it == t.ids + t.n || *it != id || t.paid_at[it - t.ids] == DT_NOBEGIN) return false;
  *paid_at = t.paid_at[it - t.ids];
  return true;
}

// The rows a take statement returned: which of the list went in_flight,
// and the rows out in dispatch order.
uint64 record_taken(const Request &r, const TakeList &list, uint64 rows, bool *taken, Tuplestorestate *store,
                    TupleDesc desc) {
  int64 *got = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(rows, 1)));
  for (uint64 i = 0; i < rows; ++i) got[i] = column_int64(i, 1);
  std::sort(got, got + rows);
  for (int i = 0; i < list.n; ++i) taken[i] = std::binary_search(got, got + rows, list.ids[i]);
  reserve_ops(static_cast<int>(rows) + 1);
  note_taken(r, rows);
  emit_taken(rows, store, desc);
  return rows;
}

// A job take_job_directly decided on, taken or not.
uint64 record_taken_directly(const Request &r, DirectTake outcome, HeapTuple job, const char *queue, bool *taken,
                             Tuplestorestate *store) {
  taken[0] = outcome == DirectTake::kTaken;
  if (!taken[0]) return 0;
  reserve_ops(2);
  note_taken_job(queue);
  note_lease(r);
  tuplestore_puttuple(store, job);
  return 1;
}

// One job: its debit instant is a parameter (NULL for a free job). A paid
// one at a known row version goes without the statement where it may
// (job_take.hpp).
uint64 take_one(const Request &r, const TakeList &list, bool *taken, Tuplestorestate *store, TupleDesc desc) {
  bool paid = list.paid_at[0] != DT_NOBEGIN;
  if (paid) {
    HeapTuple job = nullptr;
    char *queue = nullptr;
    TakeRequest req{list.ids[0], list.seen[0], list.paid_at[0], r.leased, r.lease_ms, r.session};
    DirectTake outcome = take_job_directly(req, &job, &queue);
    if (outcome != DirectTake::kByStatement) return record_taken_directly(r, outcome, job, queue, taken, store);
  }
  Datum args[5] = {Int64GetDatum(list.ids[0]), Int64GetDatum(r.session), Int64GetDatum(r.lease_ms),
                   TransactionIdGetDatum(list.seen[0]), paid ? TimestampTzGetDatum(list.paid_at[0]) : 0};
  char nulls[5] = {' ', r.leased ? 'n' : ' ', r.leased ? ' ' : 'n', ' ', paid ? ' ' : 'n'};
  uint64 rows = run_plan(take_one_statement(), args, nulls, false);
  return record_taken(r, list, rows, taken, store, desc);
}

// Locks and takes the list in one statement; taken[i] tells which went
// in_flight. dequeued_at of a budgeted job is the instant its budgets paid
// (zizq._paid_at; the UPDATE's clock for the others), so that it orders as
// the tokens did. Each id is locked in a LATERAL sub-select of its own, a
// primary-key probe whatever the table's statistics say; the UPDATE finds
// the locked rows by primary key as the fast statements do. (A join of the
// ids with the table got a generic plan that hashed them and read every
// ready job to take one: 0.24 ms a take in `limited`, against 0.12.) One
// job, a hand-off's, goes through take_one_statement.
uint64 take(const Request &r, const TakeList &list, bool *taken, Tuplestorestate *store, TupleDesc desc) {
  if (list.n == 0) return 0;
  if (list.n == 1) return take_one(r, list, taken, store, desc);
  Datum args[4] = {int8_array(list.ids, list.n), Int64GetDatum(r.session), Int64GetDatum(r.lease_ms),
                   xid_array(list.seen, list.n)};
  char nulls[4] = {' ', r.leased ? 'n' : ' ', r.leased ? ' ' : 'n', ' '};
  // Planned before the state its SQL functions read is armed: a failed
  // prepare would otherwise leave it armed (run_plan_while disarms it).
  SPIPlanPtr plan = take_statement();
  begin_take_times(list);
  uint64 rows = run_plan_while(plan, args, nulls, take_times.active);
  return record_taken(r, list, rows, taken, store, desc);
}

// A dequeue of one queue scans from the queue's floor (floor_start), and
// raises it to the first ready job its scan met (see floors.hpp for why
// this is safe).
uint64 fast_attempt(const Request &r, Tuplestorestate *store, TupleDesc desc) {
  bool one = r.nqueues == 1;
  FloorStart start = floor_start(one ? r.queues[0] : nullptr, core::FloorKind::Free);
  if (start.nothing_ready()) return 0;  // the statement would find nothing
  core::FloorView floor = start.view;
  bool may_raise = start.may_raise;
  Datum args[6] = {Int32GetDatum(r.max_jobs), Int64GetDatum(r.session), Int64GetDatum(r.lease_ms),
                   one ? CStringGetTextDatum(r.queues[0]) : 0, Int32GetDatum(floor.floor.priority),
                   Int64GetDatum(floor.floor.id)};
  char nulls[6] = {' ', r.leased ? 'n' : ' ', r.leased ? ' ' : 'n', ' ', ' ', ' '};
  FastForm form = r.nqueues == 0 ? FastForm::AllQueues : choose_one_queue_form(r.hashes[0]);
  int64 buffers_before = buffers_read_so_far();
  begin_examined();
  if (may_raise) begin_live_raises(r.queues[0], core::FloorKind::Free, floor);
  uint64 rows = run_plan(fast_plan(form), args, nulls, false);
  end_live_raises();
  if (may_raise && floor.floor < examined_min())
    raise_floor_of(r.queues[0], core::FloorKind::Free, floor.seq, examined_min());
  if (form == FastForm::OneQueue)
    note_one_queue_reads(r.hashes[0], rows, r.max_jobs, buffers_read_so_far() - buffers_before);
  int64 *taken = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(rows, 1)));
  for (uint64 i = 0; i < rows; ++i) taken[i] = column_int64(i, 1);
  int nunused = 0;
  int64 *unused = unused_claims(taken, static_cast<int>(rows), &nunused);
  reserve_ops(static_cast<int>(rows) + 1);
  note_taken(r, rows);
  emit_taken(rows, store, desc);
  release_dropped_claims(unused, nunused);  // after the rows are read: it runs a query
  return rows;
}

// Offers taken unread that the take did not get: their rows changed since
// the dispatcher read them, or another transaction holds them. The next
// look reads them (and drops the stale ones) rather than try again blind.
void suspect_unread_lost(const Cand *cands, int n, const bool *taken) {
  for (int i = 0; i < n; ++i)
    if (cands[i].unread && !taken[i]) suspect_offer(cands[i].id);
}

// Refunds the debited candidates the take statement did not get (another
// worker locked them first, or they changed since the walk read them).
// Returns how many remain, compacted at the front of `cands`.
int settle_taken(Cand *cands, int n, const bool *taken) {
  int64 *lost = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(n, 1)));
  int nlost = 0;
  for (int i = 0; i < n; ++i)
    if (!taken[i]) lost[nlost++] = cands[i].id;
  // Unclaimed first: the dispatcher the refund wakes must not find the
  // job still claimed (a claimed head holds its line back).
  release_dropped_claims(lost, nlost);
  int kept = 0;
  for (int i = 0; i < n; ++i) {
    if (taken[i]) {
      cands[kept++] = cands[i];
      continue;
    }
    for (int k = 0; k < cands[i].nbindings; ++k) refund_debit_now(cands[i].bindings[k].budget, cands[i].bindings[k].cost);
  }
  return kept;
}

// A refused budgeted job goes to the dispatcher to be parked (budget_lock
// held exclusively). Not handed over (the requests are full): it stays in
// the stream, and its budgets are marked starved.
void request_park_or_starve(int64 id, const core::Binding *bindings, int n, uint32 queue_hash) {
  if (!request_park(id)) mark_starved(bindings, n, queue_hash);
}

void mark_lines_dirty(const core::Binding *bindings, int n) {
  for (int k = 0; k < n; ++k)
    if (BudgetEntry *b = find_budget(bindings[k].budget)) mark_dirty(b);
}

// Refused budgeted jobs go to the dispatcher to be parked; stale offers are
// withdrawn and their budgets re-evaluated.
void hand_back(const Cand *refused, int n) {
  if (n == 0) return;
  LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
  for (int i = 0; i < n; ++i) {
    const Cand &c = refused[i];
    if (c.source == Source::Budgeted) {
      request_park_or_starve(c.id, c.bindings, c.nbindings, queue_hash(c.queue, strlen(c.queue)));
    } else if (c.source == Source::Offered) {
      int slot = offer_slot_of(c.id, c.offer_slot);
      if (slot >= 0) remove_offer(slot);
    }
    mark_lines_dirty(c.bindings, c.nbindings);
  }
  LWLockRelease(shared->budget_lock);
  wake_dispatcher();
}

// Taken offers leave the board. Their lines then need their next heads
// offered: the dispatcher looks at them once this commits.
void withdraw_offers(const Cand *taken, int n) {
  bool any = false;
  for (int i = 0; i < n && !any; ++i) any = taken[i].source == Source::Offered;
  if (!any) return;
  reserve_ops(n);
  int32 *lines = static_cast<int32 *>(palloc(sizeof(int32) * n));
  int nlines = 0;
  LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
  for (int i = 0; i < n; ++i) {
    if (taken[i].source != Source::Offered) continue;
    int slot = offer_slot_of(taken[i].id, taken[i].offer_slot);
    if (slot < 0) continue;
    lines[nlines++] = offers[slot].line_budget;
    remove_offer(slot);
  }
  LWLockRelease(shared->budget_lock);
  for (int i = 0; i < nlines; ++i) at_commit_dirty(lines[i]);
}

// A job taken from the budgeted stream may have been ahead of parked jobs
// of its budgets (the dispatcher offers none of them while it waits): have
// the dispatcher look at those lines again once this commits.
void revisit_lines_behind(const Cand *taken, int n) {
  for (int i = 0; i < n; ++i) {
    if (taken[i].source != Source::Budgeted) continue;
    for (int k = 0; k < taken[i].nbindings; ++k) {
      int32 counts[core::kMaxBindings];
      parked_counts(taken[i].bindings[k].budget, counts);
      if (!any_parked(counts)) continue;
      reserve_ops(1);
      at_commit_dirty(taken[i].bindings[k].budget);
    }
  }
}

// ---- the single-statement take of budgeted jobs ------------------------------------------
// A dequeue of one queue whose ready jobs are all budgeted, in budgets
// without parked jobs, and no offer standing: the common case of budgets
// with room (a large while_in_flight allocation, a fast time_based rate).
// One statement, like fast_attempt's, takes the jobs: zizq._claim_paid()
// claims each row the scan meets and debits its budgets there and then,
// all or none, by the admission rule (core/admission.hpp: a refused job
// blocks its budgets for the rest of the scan). It passes only the rows it
// paid for, so FOR UPDATE SKIP LOCKED locks no job the worker does not
// take, and each taken job's dequeued_at is the instant its budgets paid
// (zizq._paid_at), as the walk records it. Rows paid for and then not
// taken (the FOR UPDATE re-check found them changed, or a transaction
// around zizq held the row lock) are refunded after the statement, as the
// walk refunds its lost races; refused jobs are handed back to be parked.
// A row of a budget with parked jobs (one of them may be ahead of it) ends
// the admissions: the statement keeps what it paid for before, and the
// walk serves the queue for 10 s. So does a statement that refused more
// rows than a walk considers: rows it does not pass do not count toward
// the LIMIT, so the rest of its scan (to the queue's end) is left to the
// walk at the least cost, without a claim or a debit. When the statement
// takes nothing, the walk runs instead.

struct PaidJob {
  int64 id;
  uint32 queue_hash;
  TimestampTz paid_at;
  int nbindings;
  core::Binding bindings[core::kMaxBindings];
};

// What zizq._claim_paid() did in the running statement.
struct PaidTake {
  bool active;
  int level;  // the transaction nest level it was armed at
  const Walk *walk;
  PaidJob *paid, *refused;  // refused: claimed, and refused for want of tokens
  int npaid, nrefused, capacity;
  int nrefusals;  // rows not passed: refused, blocked, or left to the walk
  int most_paid;  // a plan that read past its LIMIT (a sort) pays no more
  int most_refusals;  // past as many as a walk considers, rows go to the walk
  bool met_parked;  // a row's budget had parked jobs: admissions ended
  core::BlockedBudgets blocked;
  bool sorted;  // paid[] in id order (find_paid)
  int64 last_paid;  // the id paid for last
};
PaidTake paid_take{};

PaidJob *find_paid(int64 id) {
  PaidTake &t = paid_take;
  if (!t.sorted) {
    std::sort(t.paid, t.paid + t.npaid, [](const PaidJob &a, const PaidJob &b) { return a.id < b.id; });
    t.sorted = true;
  }
  PaidJob *end = t.paid + t.npaid;
  PaidJob *it = std::lower_bound(t.paid, end, id, [](const PaidJob &a, int64 v) { return a.id < v; });
  return it != end && it->id == id ? it : nullptr;
}

bool same_bindings(const PaidJob &j, const Cand &c) {
  if (j.nbindings != c.nbindings) return false;
  for (int k = 0; k < c.nbindings; ++k)
    if (j.bindings[k].budget != c.bindings[k].budget || j.bindings[k].cost != c.bindings[k].cost) return false;
  return true;
}

bool any_binding_parked(const Cand &c) {
  for (int k = 0; k < c.nbindings; ++k) {
    int32 counts[core::kMaxBindings];
    parked_counts(c.bindings[k].budget, counts);
    if (any_parked(counts)) return true;
  }
  return false;
}

PaidJob paid_job(const Cand &c, const text *queue, TimestampTz paid_at) {
  PaidJob j{c.id, queue_hash(VARDATA_ANY(queue), VARSIZE_ANY_EXHDR(queue)), paid_at, c.nbindings, {}};
  memcpy(j.bindings, c.bindings, sizeof(core::Binding) * c.nbindings);
  return j;
}

void grow_paid_take() {
  PaidTake &t = paid_take;
  int wanted = t.capacity * 2;
  t.paid = static_cast<PaidJob *>(repalloc(t.paid, sizeof(PaidJob) * wanted));
  t.refused = static_cast<PaidJob *>(repalloc(t.refused, sizeof(PaidJob) * wanted));
  t.blocked.ids = static_cast<int32 *>(repalloc(t.blocked.ids, sizeof(int32) * core::kMaxBindings * wanted));
  t.blocked.capacity = core::kMaxBindings * wanted;
  t.capacity = wanted;
}

// A row not passed blocks its budgets for the rest of the scan
// (core/admission.hpp). One refused for want of tokens (`claimed` by this
// statement, then let go) goes to be parked after it, as the walk hands
// back its refusals.
void refuse(PaidTake &t, const Cand &c, const text *queue, bool claimed) {
  if (t.npaid + t.nrefusals >= t.capacity) grow_paid_take();
  t.blocked.add_all(core::Candidate{c.id, c.priority, c.bindings, c.nbindings});
  if (claimed) t.refused[t.nrefused++] = paid_job(c, queue, 0);
  t.nrefusals++;
}

Cand row_candidate(int64 id, int32 priority, Datum ids, Datum costs, bool *ok) {
  Cand c{};
  c.id = id;
  c.priority = priority;
  *ok = set_bindings(ids, costs, c);
  return c;
}

// A row the statement's scan met: whether it is passed on (paid for). A
// row already paid for is met again by a FOR UPDATE re-check of a version
// changed since the snapshot (the row lock is taken as soon as the scan
// passes the row: it is the last one paid for, or, should a plan ever lock
// later, one this attempt holds the claim of): passed if still bound as
// paid, else left to the refund. A row behind a refusal in one of its
// budgets is refused unclaimed; one of a budget with parked jobs, and every
// row after it, is left to the walk. One whose budgets cannot pay is let go
// at once, as the walk does, so that no other worker skips it meanwhile.
bool claim_paid_row(int64 id, int32 priority, const text *queue, Datum ids, Datum costs, const RowVersion *seen) {
  PaidTake &t = paid_take;
  bool well_formed;
  if (t.npaid > 0 && id == t.last_paid) {
    Cand c = row_candidate(id, priority, ids, costs, &well_formed);
    const PaidJob *j = find_paid(id);
    return well_formed && same_bindings(*j, c);
  }
  // The walk's share of the queue: the rest of the scan, at the least cost.
  if (t.met_parked || t.nrefusals > t.most_refusals) {
    t.nrefusals++;
    return false;
  }
  Cand c = row_candidate(id, priority, ids, costs, &well_formed);
  core::JobKey key{priority, id};
  t.met_parked = t.met_parked || any_binding_parked(c);
  if (!well_formed || t.met_parked || t.npaid >= t.most_paid ||
      t.blocked.any_of(core::Candidate{c.id, c.priority, c.bindings, c.nbindings})) {
    note_examined(key);
    stop_raising();  // the floor must not pass a job left ready
    refuse(t, c, queue, /*claimed=*/false);
    return false;
  }
  TakeClaim claim = claim_for_take(id, priority, queue, seen);
  if (claim == TakeClaim::No) return false;
  if (claim == TakeClaim::Again) {
    const PaidJob *j = find_paid(id);
    return j != nullptr && same_bindings(*j, c);
  }
  TimestampTz paid_at;
  if (debit_all(c, *t.walk, &paid_at)) {
    if (t.npaid + t.nrefusals >= t.capacity) grow_paid_take();
    t.paid[t.npaid++] = paid_job(c, queue, paid_at);
    t.last_paid = id;
    t.sorted = false;
    return true;
  }
  ClaimedJob claimed;
  if (forget_claim(id, &claimed)) release_claimed_jobs(&claimed, 1, /*taken=*/false);
  stop_raising();
  refuse(t, c, queue, /*claimed=*/true);
  return false;
}

SPIPlanPtr budgeted_fast_plan = nullptr;

// The read of budgeted_plan's one-queue form (see there for its bounds).
SPIPlanPtr budgeted_take_plan() {
  return prepared(budgeted_fast_plan,
                  "UPDATE zizq._jobs SET " ZIZQ_TAKE_SET ", dequeued_at = COALESCE(zizq._paid_at(id), clock_timestamp()) "
                  "WHERE id = ANY (ARRAY(SELECT id FROM zizq._jobs WHERE status = 'ready' AND budget_ids IS NOT NULL "
                  "AND NOT parked AND " ZIZQ_ONE_QUEUE(4) "AND (queue, priority, id) >= ($4, $5, $6) "
                  "AND zizq._claim_paid(id, priority, queue, budget_ids, budget_costs, ctid, xmax) "
                  "ORDER BY queue, priority, id LIMIT $1 FOR UPDATE SKIP LOCKED)) RETURNING " ZIZQ_TAKEN_COLUMNS,
                  {INT4OID, INT8OID, INT8OID, TEXTOID, INT4OID, INT8OID});
}

// Refunds what the statement paid for and did not take.
void refund_untaken(const int64 *taken, uint64 rows) {
  int64 *sorted = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(rows, 1)));
  std::copy(taken, taken + rows, sorted);
  std::sort(sorted, sorted + rows);
  for (int i = 0; i < paid_take.npaid; ++i) {
    const PaidJob &j = paid_take.paid[i];
    if (std::binary_search(sorted, sorted + rows, j.id)) continue;
    for (int k = 0; k < j.nbindings; ++k) refund_debit_now(j.bindings[k].budget, j.bindings[k].cost);
  }
}

// Refused jobs go to the dispatcher to be parked (hand_back's rule), and
// the lines behind the taken jobs are looked at again at commit
// (revisit_lines_behind's).
void settle_budget_lines(const int64 *taken, uint64 rows) {
  if (paid_take.nrefused > 0) {
    LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
    for (int i = 0; i < paid_take.nrefused; ++i) {
      const PaidJob &j = paid_take.refused[i];
      request_park_or_starve(j.id, j.bindings, j.nbindings, j.queue_hash);
      mark_lines_dirty(j.bindings, j.nbindings);
    }
    LWLockRelease(shared->budget_lock);
    wake_dispatcher();
  }
  Cand *cands = static_cast<Cand *>(palloc0(sizeof(Cand) * ZZ_MAX(rows, 1)));
  int n = 0;
  for (uint64 i = 0; i < rows; ++i) {
    const PaidJob *j = find_paid(taken[i]);
    if (j == nullptr) continue;
    Cand &c = cands[n++];
    c.id = j->id;
    c.source = Source::Budgeted;
    c.nbindings = j->nbindings;
    memcpy(c.bindings, j->bindings, sizeof(core::Binding) * j->nbindings);
  }
  revisit_lines_behind(cands, n);
}

void begin_paid_take(const Walk *walk, int max_jobs, int most_refusals) {
  PaidTake &t = paid_take;
  t.walk = walk;
  t.most_refusals = most_refusals;
  t.capacity = max_jobs + 16;
  t.most_paid = 2 * max_jobs + 16;
  t.paid = static_cast<PaidJob *>(palloc(sizeof(PaidJob) * t.capacity));
  t.refused = static_cast<PaidJob *>(palloc(sizeof(PaidJob) * t.capacity));
  t.blocked = core::BlockedBudgets{static_cast<int32 *>(palloc(sizeof(int32) * core::kMaxBindings * t.capacity)), 0,
                                   core::kMaxBindings * t.capacity};
  t.npaid = t.nrefused = t.nrefusals = 0;
  t.last_paid = 0;
  t.met_parked = false;
  t.sorted = true;
  t.level = GetCurrentTransactionNestLevel();
  t.active = true;
}

// Queues the statement left to the walk (see above), for 10 s: a statement
// that meets a budget with parked jobs reads the rest of the queue's
// budgeted jobs before it ends.
QueueMemo walk_only_queues(10 * USECS_PER_SEC);

// Returns how many jobs it took: 0 also when the statement does not apply
// (the walk runs then).
uint64 budgeted_fast_attempt(const Request &r, Tuplestorestate *store, TupleDesc desc) {
  if (r.nqueues != 1 || walk_only_queues.holds(r.hashes[0])) return 0;
  if (!floor_start(r.queues[0], core::FloorKind::Free).nothing_ready()) return 0;
  FloorStart start = floor_start(r.queues[0], core::FloorKind::Budgeted);
  if (start.nothing_ready()) return 0;
  Walk walk{&r, int64(guc_dispatch_grace_ms) * 1000};
  Datum args[6] = {Int32GetDatum(r.max_jobs), Int64GetDatum(r.session), Int64GetDatum(r.lease_ms),
                   CStringGetTextDatum(r.queues[0]), Int32GetDatum(start.view.floor.priority),
                   Int64GetDatum(start.view.floor.id)};
  char nulls[6] = {' ', r.leased ? 'n' : ' ', r.leased ? ' ' : 'n', ' ', ' ', ' '};
  begin_examined();
  // Its arrays live in the caller's context: palloc'd here, grown in the
  // SQL functions with repalloc (which keeps a chunk's context).
  SPIPlanPtr plan = budgeted_take_plan();  // before arming, as in take()
  begin_paid_take(&walk, r.max_jobs, max_considered(r));
  if (start.may_raise) begin_live_raises(r.queues[0], core::FloorKind::Budgeted, start.view);
  uint64 rows = run_plan_while(plan, args, nulls, paid_take.active);
  end_live_raises();  // (after an error, the abort gives the floor back)
  if (start.may_raise && paid_take.nrefusals == 0 && start.view.floor < examined_min())
    raise_floor_of(r.queues[0], core::FloorKind::Budgeted, start.view.seq, examined_min());
  if (paid_take.met_parked || paid_take.nrefusals > max_considered(r)) walk_only_queues.note(r.hashes[0]);
  int64 *taken = static_cast<int64 *>(palloc(sizeof(int64) * ZZ_MAX(rows, 1)));
  for (uint64 i = 0; i < rows; ++i) taken[i] = column_int64(i, 1);
  int nunused = 0;
  int64 *unused = unused_claims(taken, static_cast<int>(rows), &nunused);
  if (rows > 0) {
    reserve_ops(static_cast<int>(rows) + 1);
    note_taken(r, rows);
    emit_taken(rows, store, desc);
  }
  // Unclaimed before refunded: the dispatcher a refund wakes must not find
  // the job still claimed (as in settle_taken). After the rows are read:
  // it runs a query.
  release_dropped_claims(unused, nunused);
  refund_untaken(taken, rows);
  // With nothing taken, the walk that follows refuses the jobs itself.
  if (rows > 0) settle_budget_lines(taken, rows);
  return rows;
}

TakeList take_list(const int64 *free_ids, int nfree, const Cand *taken, int ntaken) {
  int n = nfree + ntaken;
  TakeList list{static_cast<int64 *>(palloc(sizeof(int64) * (n + 1))),
                static_cast<TimestampTz *>(palloc(sizeof(TimestampTz) * (n + 1))),
                static_cast<TransactionId *>(palloc(sizeof(TransactionId) * (n + 1))), n};
  for (int i = 0; i < nfree; ++i) {
    list.ids[i] = free_ids[i];
    list.paid_at[i] = DT_NOBEGIN;
    list.seen[i] = InvalidTransactionId;
  }
  for (int i = 0; i < ntaken; ++i) {
    list.ids[nfree + i] = taken[i].id;
    list.paid_at[nfree + i] = taken[i].debited_at;
    list.seen[nfree + i] = taken[i].seen_xmin;
  }
  return list;
}

uint64 attempt(const Request &r, Tuplestorestate *store, TupleDesc desc, bool *lost_race) {
  *lost_race = false;
  bool loaded;
  LWLockAcquire(shared->budget_lock, LW_SHARED);
  loaded = shared->budgets_loaded;
  LWLockRelease(shared->budget_lock);

  begin_claim_batch();
  // Read about what is wanted, and page on when refusals use it up.
  const int page = ZZ_MIN(r.max_jobs + 8, 1000);
  Stream offered = loaded ? read_offers(r) : Stream{nullptr, 0, 0, true};
  if (loaded && offered.count == 0) {
    uint64 got = budgeted_fast_attempt(r, store, desc);
    if (got > 0) return got;
    begin_claim_batch();
  }
  BudgetedStream budgeted =
      loaded ? open_budgeted(r, page) : BudgetedStream{{nullptr, 0, 0, true}, core::kBottomKey, false, 0, core::kBottomKey};
  if (offered.count == 0 && budgeted.s.count == 0 && r.nqueues <= 1) return fast_attempt(r, store, desc);

  const int most_considered = max_considered(r);
  int32 *blocked_ids = static_cast<int32 *>(palloc(sizeof(int32) * core::kMaxBindings * most_considered));
  core::BlockedBudgets blocked{blocked_ids, 0, core::kMaxBindings * most_considered};
  int64 *free_ids = static_cast<int64 *>(palloc(sizeof(int64) * r.max_jobs));
  Cand *taken = static_cast<Cand *>(palloc(sizeof(Cand) * r.max_jobs));
  Cand *refused = static_cast<Cand *>(palloc(sizeof(Cand) * most_considered));
  int nfree = 0, ntaken = 0, nrefused = 0, considered = 0;
  Walk walk{&r, int64(guc_dispatch_grace_ms) * 1000};
  FreeStreams fs = open_free(r);

  while (nfree + ntaken < r.max_jobs && considered < most_considered) {
    if (budgeted.s.peek() == nullptr && !budgeted.s.exhausted) refill_budgeted(r, budgeted, page);
    FreeCursor *fc = free_head(fs);
    const Cand *best = fc ? &fc->head : nullptr;
    for (const Cand *c : {budgeted.s.peek(), offered.peek()})
      if (c != nullptr && (best == nullptr || cand_before(*c, *best))) best = c;
    if (best == nullptr) break;
    ++considered;
    if (best->source == Source::Free) {
      free_ids[nfree++] = best->id;
      advance(*fc);
      continue;
    }
    Cand c = *best;
    (c.source == Source::Budgeted ? budgeted.s.pos : offered.pos)++;
    // A job an uncommitted dequeue has taken still looks ready here: skip
    // it rather than spend tokens on it (and block its line). Only the
    // candidates considered are claimed: a row read ahead stays free for
    // the other workers, in its place in line.
    reserve_ops(1);
    ClaimKey key{queue_hash(c.queue, strlen(c.queue)), c.priority};
    Claim claim = claim_job(c.id, key);
    if (c.source == Source::Budgeted && claim != Claim::Claimed) pass_budgeted(budgeted, c, claim == Claim::Busy);
    // Ours: a row this walk met twice (another stream had it); taken once.
    if (claim == Claim::Busy || claim == Claim::Moved || claim == Claim::Ours) continue;
    // Recorded at once: an error in the admission below (its queries, a
    // cancel) leaves the abort to release it.
    if (claim == Claim::Claimed) record_claim(c.id, key.queue_hash, key.priority);
    core::Candidate cand{c.id, c.priority, c.bindings, c.nbindings};
    bool offer_fresh = c.source == Source::Offered && offered_line_unchanged(c);
    core::Verdict v = core::admit(
        blocked, cand,
        [&](const core::Candidate &, const core::Binding &b) { return !offer_fresh && candidate_parked_ahead(c, b); },
        [&](const core::Candidate &) { return debit_all(c, walk, &c.debited_at); });
    if (v == core::Verdict::Take) {
      taken[ntaken++] = c;
    } else {
      refused[nrefused++] = c;
      ClaimedJob claimed;
      if (claim == Claim::Claimed && forget_claim(c.id, &claimed)) release_claimed_jobs(&claimed, 1, /*taken=*/false);
    }
    if (c.source == Source::Budgeted && claim == Claim::Claimed) pass_budgeted(budgeted, c, v == core::Verdict::Take);
  }
  raise_past_walk(r, budgeted);
  close_free(fs);
  TakeList list = take_list(free_ids, nfree, taken, ntaken);
  int nunused = 0;
  int64 *unused = unused_claims(list.ids, list.n, &nunused);  // rows read ahead or refused
  release_dropped_claims(unused, nunused);
  bool *got = static_cast<bool *>(palloc0(sizeof(bool) * (list.n + 1)));
  uint64 rows = take(r, list, got, store, desc);
  suspect_unread_lost(taken, ntaken, got + nfree);
  int debited = ntaken;
  ntaken = settle_taken(taken, ntaken, got + nfree);
  *lost_race = ntaken < debited;
  // Paid and locked by this transaction's UPDATE: as good as taken, so the
  // dispatcher may offer the jobs behind them (not before the take: a row
  // changed since the walk read it is refunded, and must keep its place).
  for (int i = 0; i < ntaken; ++i) mark_claim_paid(taken[i].id);
  withdraw_offers(taken, ntaken);
  revisit_lines_behind(taken, ntaken);
  hand_back(refused, nrefused);
  return rows;
}

// An attempt whose take lost a job it had paid for (another worker's take
// committed after this one read the row) stopped walking at that job: jobs
// behind it may be ready, with nobody else woken for them. Look again at
// once rather than sleep; each lost race is another worker's progress.
uint64 attempt_settled(const Request &r, Tuplestorestate *store, TupleDesc desc, MemoryContext scratch) {
  constexpr int kMaxLooks = 8;
  uint64 got = 0;
  bool lost_race = true;
  for (int look = 0; look < kMaxLooks && got == 0 && lost_race; ++look) {
    MemoryContext old = MemoryContextSwitchTo(scratch);
    got = attempt(r, store, desc, &lost_race);
    MemoryContextSwitchTo(old);
    MemoryContextReset(scratch);
  }
  return got;
}

// Runs body() in a subtransaction, kept when it returns true and rolled
// back otherwise, which releases the locks it took; an error rolls it back.
template <typename Body>
void in_subtransaction(Body body) {
  MemoryContext caller = CurrentMemoryContext;
  ResourceOwner owner = CurrentResourceOwner;
  BeginInternalSubTransaction(nullptr);
  MemoryContextSwitchTo(caller);
  bool keep = false;
  PG_TRY();
  {
    keep = body();
  }
  PG_CATCH();
  {
    // Ours to end before the error goes on: a caller's exception block
    // rolls back the innermost subtransaction, and that must be its own.
    MemoryContextSwitchTo(caller);
    ErrorData *error = CopyErrorData();
    FlushErrorState();
    RollbackAndReleaseCurrentSubTransaction();
    MemoryContextSwitchTo(caller);
    CurrentResourceOwner = owner;
    ReThrowError(error);
  }
  PG_END_TRY();
  if (keep)
    ReleaseCurrentSubTransaction();
  else
    RollbackAndReleaseCurrentSubTransaction();
  MemoryContextSwitchTo(caller);
  CurrentResourceOwner = owner;
}

// A look that takes nothing must not keep row locks while its caller waits.
// In READ COMMITTED, FOR UPDATE SKIP LOCKED that meets a row another worker
// took after this statement's snapshot locks the row's newest version (the
// job now in flight) before rechecking it, and keeps that lock when the
// recheck fails. The job's owner would then block in complete or fail until
// this transaction ends: for the whole wait. So a dequeue that may wait runs
// each look in a subtransaction, rolled back (its locks with it) when it
// took nothing. The price: a look that takes jobs commits a subxid beside
// the top xid, and one that locked rows and took nothing writes an abort
// record. A transaction that keeps more than 64 such subxids (dequeue(wait)
// called that often without a commit) overflows its PGPROC subxid cache.
uint64 attempt_releasing_locks(const Request &r, Tuplestorestate *store, TupleDesc desc, MemoryContext scratch) {
  uint64 got = 0;
  in_subtransaction([&] {
    got = attempt_settled(r, store, desc, scratch);
    return got > 0;
  });
  return got;
}

// ---- waiting ------------------------------------------------------------------------------

// Plans the statements of the budgeted path before this backend first
// sleeps, so that the job that wakes it does not also pay for the planning:
// a backend's first budgeted dequeue measured ~8 ms before, ~6 ms after
// (~1 ms warm; the rest is first-touch costs of a new backend). Planning
// locks zizq._jobs and its indexes until the transaction ends, and a
// waiting dequeue holds no locks (SPEC §2): a TRUNCATE, reset() or DROP
// EXTENSION queued behind them blocked every enqueue for the whole wait.
// So it plans in a subtransaction rolled back at once: the plans stay
// cached, the locks go.
void plan_before_first_sleep(const Request &r) {
  static bool planned = false;
  if (planned) return;
  planned = true;
  bool all = r.nqueues == 0;
  in_subtransaction([&] {
    for (SPIPlanPtr p : {budgeted_plan(all), free_plan(all), take_statement(), take_one_statement(), offers_plan()})
      plan_now(p);
    return false;
  });
}

void register_waiter(const Request &r) {
  LWLockAcquire(shared->waiter_lock, LW_EXCLUSIVE);
  Waiter &w = waiters[MyProc->pgprocno];
  w.all_queues = r.nqueues == 0 || r.nqueues > kMaxWaiterQueues;
  w.nqueues = w.all_queues ? 0 : r.nqueues;
  for (int i = 0; i < w.nqueues; ++i) w.queues[i] = r.hashes[i];
  w.latch = MyLatch;
  LWLockRelease(shared->waiter_lock);
}

// Before each look: wakeable again, and the latest to look.
void rearm_waiter() {
  LWLockAcquire(shared->waiter_lock, LW_EXCLUSIVE);
  Waiter &w = waiters[MyProc->pgprocno];
  w.since = ++shared->waiter_seq;
  pg_atomic_write_u64(&w.woken, 0);
  LWLockRelease(shared->waiter_lock);
}

// A wake that came during the last look may have been for a job that look
// did not see (it read before the job was offered or committed, or it took
// another one): it is passed on rather than lost with this waiter.
void unregister_waiter() {
  LWLockAcquire(shared->waiter_lock, LW_EXCLUSIVE);
  Waiter &w = waiters[MyProc->pgprocno];
  w.latch = nullptr;
  uint64 woken = pg_atomic_exchange_u64(&w.woken, 0);
  LWLockRelease(shared->waiter_lock);
  pass_on_wake(woken);
}

// ---- arguments ------------------------------------------------------------------------------

int64 interval_ms(Interval *i) {
  return i->time / 1000 + int64(i->day) * 86400000 + int64(i->month) * 30 * 86400000;
}

// Ten years, as for a budget's duration: the deadline and the lease's end
// are timestamps, which a longer interval could overflow.
void refuse_above_ten_years(const char *what, int64 ms) {
  if (ms > core::kMaxDurationMs)
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("%s must be at most 10 years, not %lld ms", what, static_cast<long long>(ms))));
}

// A lease in milliseconds (a month is 30 days), positive and at most ten
// years; dequeue's and heartbeat's alike.
int64 lease_ms_of(Interval *lease) {
  int64 ms = interval_ms(lease);
  if (ms <= 0)
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("lease must be positive"),
                    errhint("omit the lease to tie the jobs to this session instead")));
  refuse_above_ten_years("lease", ms);
  return ms;
}

Request read_request(FunctionCallInfo fcinfo) {
  Request r;
  memset(&r, 0, sizeof r);
  if (!PG_ARGISNULL(0)) {
    ArrayType *a = PG_GETARG_ARRAYTYPE_P(0);
    Datum *elems;
    bool *nulls;
    int n;
    deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
    if (n == 0)
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("queues must not be empty"),
                      errhint("pass NULL to take jobs from every queue")));
    r.nqueues = 0;
    r.queues = static_cast<char **>(palloc(sizeof(char *) * n));
    r.hashes = static_cast<uint32 *>(palloc(sizeof(uint32) * n));
    for (int i = 0; i < n; ++i) {
      if (nulls[i]) ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("queues must not contain NULL")));
      char *q = TextDatumGetCString(elems[i]);
      run_core([&] { core::check_name("queue", q); });
      // A queue named twice is read once (two cursors on it would meet the
      // same jobs, and a claim answers its own transaction yes).
      if (wants_queue(r, q) && r.nqueues > 0) continue;
      r.queues[r.nqueues] = q;
      r.hashes[r.nqueues++] = queue_hash(q, strlen(q));
    }
  }
  if (PG_ARGISNULL(1)) ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("max_jobs must not be NULL")));
  r.max_jobs = PG_GETARG_INT32(1);
  if (r.max_jobs < 1 || r.max_jobs > kMaxJobs)
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("max_jobs must be between 1 and %d, not %d", kMaxJobs, r.max_jobs)));
  if (!PG_ARGISNULL(2)) {
    r.wait_ms = interval_ms(PG_GETARG_INTERVAL_P(2));
    if (r.wait_ms < 0)
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("wait must not be negative")));
    refuse_above_ten_years("wait", r.wait_ms);
  }
  if (!PG_ARGISNULL(3)) {
    r.leased = true;
    r.lease_ms = lease_ms_of(PG_GETARG_INTERVAL_P(3));
  } else {
    r.session = static_cast<int64>(my_session_id());
  }
  return r;
}

}  // namespace

void abort_take_statements(int level) {
  // A subtransaction inside the statement (a user's trigger with an
  // exception block) may abort while the statement goes on.
  if (level <= take_times.level) take_times.active = false;
  if (level <= paid_take.level) paid_take.active = false;
}

}  // namespace zizq::pg

using namespace zizq;
using namespace zizq::pg;

extern "C" {

PG_FUNCTION_INFO_V1(zizq_dequeue);
Datum zizq_dequeue(PG_FUNCTION_ARGS) {
  require_shared();
  Request r = read_request(fcinfo);
  ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
  InitMaterializedSRF(fcinfo, 0);
  MemoryContext scratch = AllocSetContextCreate(CurrentMemoryContext, "zizq dequeue", ALLOCSET_DEFAULT_SIZES);
  TimestampTz deadline = GetCurrentTimestamp() + r.wait_ms * 1000;
  bool only_own_before = only_own_changes_so_far();
  if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "zizq: SPI_connect failed");
  // First attempt without registering: a busy queue never pays for the
  // waiter bookkeeping (only for the look's subtransaction).
  auto look = r.wait_ms > 0 ? attempt_releasing_locks : attempt_settled;
  uint64 got = look(r, rsinfo->setResult, rsinfo->setDesc, scratch);
  if (got == 0 && r.wait_ms > 0) {
    // Registered before each look, so that a commit between the look and the
    // sleep sets the latch: no wake-up is lost.
    register_waiter(r);
    PG_TRY();
    {
      for (;;) {
        ResetLatch(MyLatch);
        rearm_waiter();
        got = look(r, rsinfo->setResult, rsinfo->setDesc, scratch);
        if (got > 0) break;
        long remaining = (deadline - GetCurrentTimestamp() + 999) / 1000;
        if (remaining <= 0) break;
        plan_before_first_sleep(r);
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, remaining, PG_WAIT_EXTENSION);
        CHECK_FOR_INTERRUPTS();
      }
    }
    PG_FINALLY();
    {
      unregister_waiter();
    }
    PG_END_TRY();
  }
  SPI_finish();
  if (got > 0) note_own_change(only_own_before, r.leased ? OwnChange::Durable : OwnChange::Volatile);
  return (Datum)0;
}

// zizq._lease_ms(interval): heartbeat's lease, checked and counted as
// dequeue's.
PG_FUNCTION_INFO_V1(zizq_lease_ms);
Datum zizq_lease_ms(PG_FUNCTION_ARGS) { PG_RETURN_INT64(lease_ms_of(PG_GETARG_INTERVAL_P(0))); }

// zizq._claim_paid(id, priority, queue, budget_ids, budget_costs, ctid,
// xmax): the filter of budgeted_fast_attempt's statement (see there; ctid
// and xmax as in zizq._claim).
PG_FUNCTION_INFO_V1(zizq_claim_paid);
Datum zizq_claim_paid(PG_FUNCTION_ARGS) {
  if (!paid_take.active) elog(ERROR, "zizq._claim_paid is for zizq.dequeue's own statement");
  RowVersion seen{};
  bool known = PG_NARGS() >= 7;
  if (known)
    seen = RowVersion{*reinterpret_cast<ItemPointer>(PG_GETARG_POINTER(5)), DatumGetTransactionId(PG_GETARG_DATUM(6))};
  PG_RETURN_BOOL(claim_paid_row(PG_GETARG_INT64(0), PG_GETARG_INT32(1), PG_GETARG_TEXT_PP(2), PG_GETARG_DATUM(3),
                                PG_GETARG_DATUM(4), known ? &seen : nullptr));
}

// zizq._paid_at(id): when the job's budgets paid, for the UPDATE's
// dequeued_at: in the take statement, from the walk's list; in
// budgeted_fast_attempt's, when its zizq._claim_paid() paid (NULL: not
// paid for, a free job).
PG_FUNCTION_INFO_V1(zizq_paid_at);
Datum zizq_paid_at(PG_FUNCTION_ARGS) {
  if (take_times.active) {
    TimestampTz paid_at;
    if (!take_time_of(PG_GETARG_INT64(0), &paid_at)) PG_RETURN_NULL();
    PG_RETURN_TIMESTAMPTZ(paid_at);
  }
  if (!paid_take.active) elog(ERROR, "zizq._paid_at is for zizq.dequeue's own statements");
  const PaidJob *j = find_paid(PG_GETARG_INT64(0));
  if (j == nullptr) PG_RETURN_NULL();
  PG_RETURN_TIMESTAMPTZ(j->paid_at);
}

}  // extern "C"
