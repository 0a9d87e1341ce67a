// zizq module: what PostgreSQL loads. _PG_init defines the GUCs, asks for
// shared memory, installs the transaction callbacks and registers the
// dispatcher background worker. It does nothing unless the library is
// preloaded (shared_preload_libraries), because shared memory and the
// dispatcher exist only then.
#include "pg/pg.hpp"
#include "pg/shmem.hpp"
#include "pg/xact.hpp"

#include <malloc.h>

extern "C" {
#include "postmaster/bgworker.h"

PG_MODULE_MAGIC;
void _PG_init(void);
}

namespace zizq::pg {

char *guc_database = nullptr;
int guc_max_budgets = 8192;
int guc_retry_limit = 25;
int guc_backoff_base_ms = 15000;
double guc_backoff_exponent = 4;
int guc_backoff_jitter_ms = 30000;
int guc_completed_retention_ms = 0;
bool guc_direct_enqueue = true;
bool guc_direct_take = true;
int guc_dead_retention_ms = 7 * 24 * 3600 * 1000;
int guc_dispatch_grace_ms = 5;
bool guc_fixed_malloc_thresholds = true;

bool in_zizq_database() {
  const char *current = get_database_name(MyDatabaseId);
  return current != nullptr && strcmp(current, guc_database) == 0;
}

void refuse_other_database() {
  const char *here = get_database_name(MyDatabaseId);
  ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                  errmsg("zizq serves database \"%s\", not \"%s\"", guc_database, here ? here : "?"),
                  errhint("set zizq.database = '%s' in postgresql.conf and restart, or use zizq in database \"%s\"",
                          here ? here : "?", guc_database)));
}

namespace {

// An empty name would send the dispatcher into a restart loop of "database
// "" does not exist".
bool check_database_name(char **value, void **, GucSource) {
  if (*value != nullptr && (*value)[0] != '\0') return true;
  GUC_check_errmsg("zizq.database must name a database");
  return false;
}

shmem_request_hook_type prev_shmem_request = nullptr;
shmem_startup_hook_type prev_shmem_startup = nullptr;

void request_hook() {
  if (prev_shmem_request) prev_shmem_request();
  shmem_request();
}

void startup_hook() {
  if (prev_shmem_startup) prev_shmem_startup();
  shmem_startup();
}

void define_gucs() {
  DefineCustomStringVariable("zizq.database", "Database the zizq dispatcher serves.",
                             "zizq can be installed in this database only.", &guc_database, "postgres",
                             PGC_POSTMASTER, 0, check_database_name, nullptr, nullptr);
  DefineCustomIntVariable("zizq.max_budgets", "Most budgets that can exist at once.",
                          "Sizes the shared memory that holds token state.", &guc_max_budgets, 8192, 16, 1000000,
                          PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
  DefineCustomIntVariable("zizq.retry_limit", "Failures a job may retry after, unless the job sets its own.",
                          nullptr, &guc_retry_limit, 25, 0, INT_MAX, PGC_SUSET, 0, nullptr, nullptr, nullptr);
  DefineCustomIntVariable("zizq.backoff_base_ms", "Base delay before a retry, in milliseconds.", nullptr,
                          &guc_backoff_base_ms, 15000, 0, INT_MAX, PGC_SUSET, GUC_UNIT_MS, nullptr, nullptr,
                          nullptr);
  DefineCustomRealVariable("zizq.backoff_exponent", "Exponent of the attempt number in the retry delay.", nullptr,
                           &guc_backoff_exponent, 4, 0, 100, PGC_SUSET, 0, nullptr, nullptr, nullptr);
  DefineCustomIntVariable("zizq.backoff_jitter_ms", "Random delay per attempt added to a retry, in milliseconds.",
                          nullptr, &guc_backoff_jitter_ms, 30000, 0, INT_MAX, PGC_SUSET, GUC_UNIT_MS, nullptr,
                          nullptr, nullptr);
  DefineCustomIntVariable("zizq.completed_retention_ms", "How long completed jobs are kept (0: removed at once).",
                          nullptr, &guc_completed_retention_ms, 0, 0, INT_MAX, PGC_SUSET, GUC_UNIT_MS, nullptr,
                          nullptr, nullptr);
  DefineCustomIntVariable("zizq.dead_retention_ms", "How long dead jobs are kept.", nullptr, &guc_dead_retention_ms,
                          7 * 24 * 3600 * 1000, 0, INT_MAX, PGC_SUSET, GUC_UNIT_MS, nullptr, nullptr, nullptr);
  DefineCustomIntVariable("zizq.dispatch_grace", "Lateness of a hand-off that a time_based budget forgives.",
                          "Tokens that came due less than this long ago are charged at their due instant, "
                          "so wake-up latency does not slow a rate limit (never more than one token's drip).",
                          &guc_dispatch_grace_ms, 5, 0, 1000, PGC_SIGHUP, GUC_UNIT_MS, nullptr, nullptr, nullptr);
  DefineCustomBoolVariable("zizq.fixed_malloc_thresholds", "Keeps freed memory of statements in the heap.",
                           "Fixes glibc's mmap and trim thresholds in every server process (see module.cpp).",
                           &guc_fixed_malloc_thresholds, true, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
  DefineCustomBoolVariable("zizq.direct_enqueue", "Stores enqueued jobs as COPY FROM does, without an INSERT statement.",
                           "Off: every enqueue runs an INSERT statement, which executor hooks see (pgaudit, "
                           "pg_stat_statements with track = all, auto_explain).",
                           &guc_direct_enqueue, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
  DefineCustomBoolVariable("zizq.direct_take", "Takes a hand-off's job without an UPDATE statement.",
                           "Off: every dequeue takes its jobs with UPDATE statements, which executor hooks see "
                           "(pgaudit, pg_stat_statements with track = all, auto_explain).",
                           &guc_direct_take, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
  MarkGUCPrefixReserved("zizq");
}

// glibc serves blocks of 128 kB and more with mmap and gives the top of the
// heap back to the kernel once 128 kB lie free there, moving both
// thresholds as it goes. The executor state of a single-row INSERT into
// zizq._jobs (14 indexes, 13 of them partial) can straddle them: each
// enqueue then pays brk or munmap calls, page faults and TLB shootdowns,
// which on a VM cost more than the INSERT (measured: 16 producers fell from
// ~3,700 to ~1,400 enqueues/s once their sessions had run a dequeue). Fixed
// thresholds keep such memory in the heap. The price: each server process
// may keep up to 8 MB of freed heap instead of returning it. Set in the
// postmaster, inherited by every process it forks.
void fix_malloc_thresholds() {
  if (!guc_fixed_malloc_thresholds) return;
  mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, 8 * 1024 * 1024);
}

void register_dispatcher() {
  BackgroundWorker worker;
  memset(&worker, 0, sizeof worker);
  worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
  worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
  worker.bgw_restart_time = 1;
  strlcpy(worker.bgw_library_name, "zizq", BGW_MAXLEN);
  strlcpy(worker.bgw_function_name, "zizq_dispatcher_main", BGW_MAXLEN);
  strlcpy(worker.bgw_name, "zizq dispatcher", BGW_MAXLEN);
  strlcpy(worker.bgw_type, "zizq dispatcher", BGW_MAXLEN);
  RegisterBackgroundWorker(&worker);
}

}  // namespace
}  // namespace zizq::pg

void _PG_init(void) {
  using namespace zizq::pg;
  if (!process_shared_preload_libraries_in_progress) return;
  define_gucs();
  fix_malloc_thresholds();
  prev_shmem_request = shmem_request_hook;
  shmem_request_hook = request_hook;
  prev_shmem_startup = shmem_startup_hook;
  shmem_startup_hook = startup_hook;
  register_xact_callbacks();
  register_dispatcher();
}
