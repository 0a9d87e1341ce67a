// zizq PostgreSQL boundary: the one place that includes PostgreSQL headers.
//
// Rules for every file under src/pg and src/dispatcher:
//  - C++ standard and core headers come first (postgres.h redefines printf &
//    co. and its ERROR/LOG macros break C++ enums);
//  - code that can ereport keeps only plain data in its frames (a longjmp
//    skips destructors); pure C++ work runs inside run_core (errors.hpp),
//    which turns a C++ exception into an ERROR after its scope has ended;
//  - memory handed to PostgreSQL is palloc'd.
#pragma once

// Standard and core headers first: postgres.h must come after them.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "core/admission.hpp"
#include "core/bindings.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/names.hpp"
#include "core/policy.hpp"
#include "core/token_bucket.hpp"

extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "common/pg_prng.h"
#include "commands/async.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

// PostgreSQL's own macros that collide with the C++ standard library.
#undef Min
#undef Max
#define ZZ_MIN(a, b) ((a) < (b) ? (a) : (b))
#define ZZ_MAX(a, b) ((a) > (b) ? (a) : (b))

namespace zizq::pg {

// Microseconds of CLOCK_MONOTONIC: the clock of all token arithmetic.
int64_t monotonic_us();

// A wall-clock timestamp for a monotonic instant (for display).
TimestampTz wall_time_of(int64_t mono_us);

// GUCs (module.cpp).
extern char *guc_database;
extern int guc_max_budgets;
extern int guc_retry_limit;
extern int guc_backoff_base_ms;
extern double guc_backoff_exponent;
extern int guc_backoff_jitter_ms;
extern int guc_completed_retention_ms;
extern bool guc_direct_enqueue;
extern bool guc_direct_take;
extern int guc_dead_retention_ms;
extern int guc_dispatch_grace_ms;

// True in the database the dispatcher serves (zizq.database).
bool in_zizq_database();
// Raises 55000: zizq is used in a database other than zizq.database.
[[noreturn]] void refuse_other_database();

}  // namespace zizq::pg
