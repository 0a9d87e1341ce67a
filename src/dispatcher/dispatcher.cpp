// zizq dispatcher: the background worker (backend_type "zizq dispatcher")
// that keeps jobs moving without any worker polling (SPEC §2 "Wake-ups",
// §3 "Waking is lazy and exact").
//
// Its loop reads as a story:
//   wait on its latch until the next due instant (a scheduled job's ready_at,
//   a lease's end, a retention's end, a parked budget line's next token) or
//   until a commit wakes it;
//   then one writing transaction — requeue jobs of ended sessions and
//   expired leases, promote scheduled jobs, park the budgeted jobs dequeues
//   could not take, purge — committed without waiting for the WAL flush
//   (everything it does is redone after a crash);
//   then one reading transaction that evaluates the budgets whose lines
//   changed or whose tokens came due: the heads their budgets can pay become
//   offers in shared memory and the workers of their queues are woken; for
//   the others, the instant their tokens will suffice becomes a timer.
// Nothing is scanned periodically: every query is an index probe on behalf
// of an event or a due instant.
//
// Shared memory is a cache: on start (and after a crash, when it was
// re-created empty) the dispatcher rebuilds budgets, in-flight costs and
// parked counts from the tables before anything budgeted can be dispatched.
#include "dispatcher/tasks.hpp"
#include "pg/pg.hpp"
#include "pg/shmem.hpp"

#ifdef __linux__
#include <sys/timerfd.h>
#include <unistd.h>
#endif

extern "C" {
#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"

PGDLLEXPORT void zizq_dispatcher_main(Datum arg);
}

namespace zizq::dispatcher {
namespace {

using namespace zizq::pg;

// Upper bound on a sleep: a lost wake-up costs at most this much.
constexpr long kMaxSleepMs = 30000;

// zizq.database may name a database not created yet. Connecting to it ends
// the process with FATAL, and the postmaster starts it again a second later:
// two log lines a second for as long as the database is missing. So a start
// that could not connect leaves a note, and the next one connects to no
// database, looks for it in pg_database (a shared catalog) every few seconds
// and exits, to be started again, once it is there.
constexpr long kDatabasePollMs = 2000;
bool connected = false;

void note_failed_connection(int, Datum) {
  if (!connected && shared != nullptr) shared->database_missing = true;
}

// A heap scan, as autovacuum's launcher reads the list: without a database
// only the nailed catalogs are open, and pg_database's indexes are not.
bool database_exists(const char *name) {
  StartTransactionCommand();
  Relation rel = table_open(DatabaseRelationId, AccessShareLock);
  TableScanDesc scan = table_beginscan_catalog(rel, 0, nullptr);
  bool exists = false;
  for (HeapTuple tup; !exists && (tup = heap_getnext(scan, ForwardScanDirection)) != nullptr;)
    exists = strcmp(NameStr(reinterpret_cast<Form_pg_database>(GETSTRUCT(tup))->datname), name) == 0;
  table_endscan(scan);
  table_close(rel, AccessShareLock);
  CommitTransactionCommand();
  return exists;
}

void wait_for_database() {
  BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);
  // The connection may have failed for another reason (the database does
  // not allow connections, say): then it is tried again at once.
  if (!database_exists(guc_database))
    ereport(LOG, (errmsg("zizq dispatcher: waiting for database \"%s\" (zizq.database) to be created", guc_database)));
  while (!database_exists(guc_database)) {
    (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, kDatabasePollMs, PG_WAIT_EXTENSION);
    ResetLatch(MyLatch);
    CHECK_FOR_INTERRUPTS();
  }
  shared->database_missing = false;
  proc_exit(1);  // started again, it connects
}

void connect_to_database() {
  if (shared->database_missing) wait_for_database();
  before_shmem_exit(note_failed_connection, 0);
  BackgroundWorkerInitializeConnection(guc_database, nullptr, 0);
  connected = true;
}

void forget_latch(int, Datum) {
  if (shared == nullptr) return;
  LWLockAcquire(shared->waiter_lock, LW_EXCLUSIVE);
  if (shared->dispatcher_latch == MyLatch) shared->dispatcher_latch = nullptr;
  LWLockRelease(shared->waiter_lock);
}

void publish_latch() {
  LWLockAcquire(shared->waiter_lock, LW_EXCLUSIVE);
  shared->dispatcher_latch = MyLatch;
  shared->dispatcher_next_wake = 0;
  LWLockRelease(shared->waiter_lock);
  before_shmem_exit(forget_latch, 0);
}

// 0 while working: any hint (a new scheduled job, a new lease) must set the
// latch; afterwards the instant of the next planned wake.
void publish_next_wake(TimestampTz when) {
  LWLockAcquire(shared->waiter_lock, LW_EXCLUSIVE);
  shared->dispatcher_next_wake = when;
  LWLockRelease(shared->waiter_lock);
}

// The sleep until the next due instant (0: none, sleep kMaxSleepMs), ended
// early by the latch; an instant already past only checks for the
// postmaster's death.
// A latch wait's timeout counts whole milliseconds, rounded up so as never
// to wake early: the dispatcher woke 0.5 ms after a token came due on
// average, before any scheduling delay (`refill`, due to awake: p50
// 0.66 ms). On Linux a timerfd in the wait set ends the sleep at the
// microsecond; the millisecond timeout, one longer so that the timer ends
// the sleep, stays as a fallback. Other instants kept in microseconds (the
// NOTIFY spacing, the hand-off window) are now kept as given, not up to a
// millisecond longer.
class DueSleep {
 public:
  void init() {
    set_ = CreateWaitEventSet(TopMemoryContext, 3);
    AddWaitEventToSet(set_, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, nullptr);
    AddWaitEventToSet(set_, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, nullptr, nullptr);
#ifdef __linux__
    ReserveExternalFD();  // counted against max_files_per_process, as latch.c does for its own
    timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (timer_fd_ >= 0)
      AddWaitEventToSet(set_, WL_SOCKET_READABLE, timer_fd_, nullptr, nullptr);
    else
      ReleaseExternalFD();
#endif
  }

  void until(TimestampTz next) {
    TimestampTz now = GetCurrentTimestamp();
    int64 sleep_us = next == 0 ? kMaxSleepMs * 1000 : next <= now ? 0 : ZZ_MIN(next - now, kMaxSleepMs * 1000);
    bool precise = sleep_us > 0 && arm(sleep_us);
    long timeout_ms = static_cast<long>((sleep_us + 999) / 1000) + (precise ? 1 : 0);
    WaitEvent event;
    (void)WaitEventSetWait(set_, timeout_ms, &event, 1, PG_WAIT_EXTENSION);
    if (precise) disarm();
  }

 private:
  // Whether the timer will end the sleep.
  bool arm(int64 sleep_us) {
#ifdef __linux__
    if (timer_fd_ < 0) return false;
    struct itimerspec when = {};
    when.it_value.tv_sec = sleep_us / 1000000;
    when.it_value.tv_nsec = (sleep_us % 1000000) * 1000;
    return timerfd_settime(timer_fd_, 0, &when, nullptr) == 0;
#else
    (void)sleep_us;
    return false;
#endif
  }

  // Stops the timer, which also clears an expiry that would keep the
  // descriptor readable and end the next sleep at once; the read is a
  // safeguard (nothing to read, EAGAIN, is the usual outcome).
  void disarm() {
#ifdef __linux__
    struct itimerspec off = {};
    (void)timerfd_settime(timer_fd_, 0, &off, nullptr);
    uint64 expiries;
    ssize_t got = read(timer_fd_, &expiries, sizeof expiries);
    (void)got;
#endif
  }

  WaitEventSet *set_ = nullptr;
  [[maybe_unused]] int timer_fd_ = -1;
};

}  // namespace
}  // namespace zizq::dispatcher

void zizq_dispatcher_main(Datum) {
  using namespace zizq::dispatcher;
  pqsignal(SIGTERM, die);
  pqsignal(SIGHUP, SignalHandlerForConfigReload);
  BackgroundWorkerUnblockSignals();
  connect_to_database();
  // Everything the dispatcher writes is rebuilt after a crash: do not wait
  // for WAL flushes.
  SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);
  // It runs as the bootstrap superuser. With the database's search_path
  // ("$user", public, or whatever ALTER DATABASE set), a role that may
  // create objects in such a schema could put there an exact match for a
  // polymorphic function its statements call (array_agg(bigint) beats
  // pg_catalog.array_agg(anynonarray)) and run code as superuser. The
  // internal SQL functions it calls are parsed under this path too.
  SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
  // Its statements are written for READ COMMITTED (each sees what committed
  // before it; the load sets REPEATABLE READ itself): a database or role
  // default of SERIALIZABLE made them fail with serialization errors, each
  // ending the dispatcher until its restart a second later. Other database
  // defaults would end it the same way: read-only transactions, and
  // timeouts (the load waits for older writers; a large load takes time).
  SetConfigOption("default_transaction_isolation", "read committed", PGC_SUSET, PGC_S_OVERRIDE);
  SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
  SetConfigOption("statement_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
  SetConfigOption("lock_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
  SetConfigOption("idle_in_transaction_session_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
  // Generic plans of index-shaped statements, whatever the table's size now
  // (see sql/zizq--1.0.sql, part 5).
  SetConfigOption("enable_seqscan", "off", PGC_SUSET, PGC_S_OVERRIDE);
  SetConfigOption("enable_bitmapscan", "off", PGC_SUSET, PGC_S_OVERRIDE);
  publish_latch();
  DueSleep due_sleep;
  due_sleep.init();
  Dispatcher d;
  start(d);
  for (;;) {
    publish_next_wake(0);
    ResetLatch(MyLatch);
    CHECK_FOR_INTERRUPTS();
    if (ConfigReloadPending) {
      ConfigReloadPending = false;
      ProcessConfigFile(PGC_SIGHUP);
    }
    TimestampTz next = run_cycle(d);
    publish_next_wake(next == 0 ? GetCurrentTimestamp() + kMaxSleepMs * 1000 : next);
    due_sleep.until(next);
  }
}
