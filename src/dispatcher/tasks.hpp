// zizq dispatcher tasks: one cycle of the dispatcher (see dispatcher.cpp).
#pragma once

#include "pg/pg.hpp"

namespace zizq::dispatcher {

struct Dispatcher {
  bool started;          // the first cycle after the process started
  HTAB *timers;          // budget id -> monotonic µs its lines are next due
  TimestampTz next_scheduled, next_lease, next_purge;  // 0: none
  // A requeue that skipped jobs whose rows others held is tried again then
  // (0: none).
  TimestampTz requeue_retry;
  int64 notified_us;     // monotonic µs of the last NOTIFYs of noted queues; 0: none yet
};

void start(Dispatcher &d);

// Runs one cycle; returns when the dispatcher must wake next (0: only when
// woken).
TimestampTz run_cycle(Dispatcher &d);

}  // namespace zizq::dispatcher
