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

extern "C" {
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "tcop/tcopprot.h"

PGDLLEXPORT void zizq_dispatcher_main(Datum arg);
}

namespace zizq::dispatcher {
namespace {

using namespace zizq::pg;

// Upper bound on a sleep: a lost wake-up costs at most this much.
constexpr long kMaxSleepMs = 30000;

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

long sleep_ms(TimestampTz next) {
  if (next == 0) return kMaxSleepMs;
  TimestampTz now = GetCurrentTimestamp();
  if (next <= now) return 0;
  long ms = static_cast<long>((next - now + 999) / 1000);
  return ZZ_MIN(ms, kMaxSleepMs);
}

}  // namespace
}  // namespace zizq::dispatcher

void zizq_dispatcher_main(Datum) {
  using namespace zizq::dispatcher;
  pqsignal(SIGTERM, die);
  pqsignal(SIGHUP, SignalHandlerForConfigReload);
  BackgroundWorkerUnblockSignals();
  BackgroundWorkerInitializeConnection(zizq::pg::guc_database, nullptr, 0);
  // Everything the dispatcher writes is rebuilt after a crash: do not wait
  // for WAL flushes.
  SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);
  // Generic plans of index-shaped statements, whatever the table's size now
  // (see sql/zizq--1.0.sql, part 5).
  SetConfigOption("enable_seqscan", "off", PGC_SUSET, PGC_S_OVERRIDE);
  SetConfigOption("enable_bitmapscan", "off", PGC_SUSET, PGC_S_OVERRIDE);
  publish_latch();
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
    (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, sleep_ms(next), PG_WAIT_EXTENSION);
  }
}
