// zizq boundary: budgets (see budgets.hpp) and the SQL-callable budget
// helpers the plpgsql budget functions use.
#include <string>
#include <vector>

#include "core/bindings.hpp"
#include "core/json.hpp"
#include "core/names.hpp"
#include "core/policy.hpp"
#include "core/token_bucket.hpp"

#include "pg/budgets.hpp"
#include "pg/errors.hpp"
#include "pg/jsonb_text.hpp"
#include "pg/shmem.hpp"
#include "pg/spi.hpp"
#include "pg/xact.hpp"

namespace zizq::pg {
namespace {

// The advisory lock space of budget keys (pg_advisory_xact_lock(int, int)
// form): class "zq" and the key's hash.
constexpr uint32 kLockClass = 0x7a71;

SPIPlanPtr find_plan = nullptr;
SPIPlanPtr create_plan = nullptr;
SPIPlanPtr count_plan = nullptr;

struct KeySlot {
  const char *key;
  // Its first appearance with a create_with (the first definition in the
  // call wins, wherever plain references to it stand), else its first.
  int first_job, first_binding;
  int32 id;
  core::Policy policy;
};

int compare_keys(const void *a, const void *b) {
  return strcmp(static_cast<const KeySlot *>(a)->key, static_cast<const KeySlot *>(b)->key);
}

bool find_budget_row(const char *key, KeySlot *slot) {
  prepared(find_plan, "SELECT id, allocation, strategy, duration_ms, burst FROM zizq.budgets WHERE key = $1",
           {TEXTOID});
  Datum args[1] = {CStringGetTextDatum(key)};
  if (run_plan(find_plan, args, nullptr, false, 1) == 0) return false;
  slot->id = column_int32(0, 1);
  bool isnull = false;
  Datum duration = column(0, 4, &isnull);
  std::optional<int64_t> duration_ms;
  if (!isnull) duration_ms = DatumGetInt64(duration);
  Datum burst = column(0, 5, &isnull);
  std::optional<int64_t> burst_v;
  if (!isnull) burst_v = DatumGetInt32(burst);
  char *strategy = column_text(0, 3);
  int64 allocation = column_int32(0, 2);
  run_core([&] { slot->policy = core::make_policy(key, allocation, strategy, duration_ms, burst_v); });
  return true;
}

void check_budget_limit() {
  // A level of its own: zizq._budget_created (called from SQL) reaches here
  // with nothing connected, and its SPI calls crashed the backend.
  if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "zizq: SPI_connect failed");
  prepared(count_plan, "SELECT count(*) FROM zizq.budgets", {});
  run_plan(count_plan, nullptr, nullptr, false, 1);
  int64 count = column_int64(0, 1);
  SPI_finish();
  if (count >= guc_max_budgets)
    ereport(ERROR, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
                    errmsg("budget limit reached: zizq.max_budgets = %d budgets exist", guc_max_budgets),
                    errhint("delete unused budgets, or raise zizq.max_budgets and restart the server")));
}

// Whether zizq.budgets has the trigger budget_written (install scripts from
// 00bed16 on). Asked once per backend: the catalog changes only with the
// extension, and a backend that saw one install keeps to it.
bool budgets_have_write_trigger() {
  static int known = -1;
  static SPIPlanPtr plan = nullptr;
  if (known >= 0) return known == 1;
  prepared(plan,
           "SELECT count(*) FROM pg_catalog.pg_trigger WHERE tgrelid = 'zizq.budgets'::pg_catalog.regclass "
           "AND tgname = 'budget_written'",
           {});
  run_plan(plan, nullptr, nullptr, false, 1);
  known = column_int64(0, 1) > 0 ? 1 : 0;
  return known == 1;
}

// Inserts the budget unless a concurrent transaction did first; returns
// whether this transaction created it.
bool create_budget_row(const char *key, const core::Policy &p, KeySlot *slot) {
  prepared(create_plan,
           "INSERT INTO zizq.budgets (key, allocation, strategy, duration_ms, burst) VALUES ($1, $2, $3, $4, $5) "
           "ON CONFLICT (key) DO NOTHING RETURNING id",
           {TEXTOID, INT4OID, TEXTOID, INT8OID, INT4OID});
  Datum args[5] = {CStringGetTextDatum(key), Int32GetDatum(static_cast<int32>(p.allocation)),
                   CStringGetTextDatum(core::strategy_name(p.strategy)), Int64GetDatum(p.duration_ms),
                   Int32GetDatum(static_cast<int32>(p.burst))};
  char nulls[5] = {' ', ' ', ' ', p.time_based() ? ' ' : 'n', p.burst > 0 ? ' ' : 'n'};
  if (run_plan(create_plan, args, nulls, false, 1) == 0) return false;
  slot->id = column_int32(0, 1);
  slot->policy = p;
  // The trigger budget_written registered it; an install script older than
  // this library has no such trigger.
  if (!budgets_have_write_trigger()) register_new_budget(slot->id, p);
  return true;
}

SPIPlanPtr bound_in_flight_plan = nullptr;
SPIPlanPtr bound_parked_plan = nullptr;

// The in-flight cost and the parked jobs (by binding position) already bound
// to a budget this transaction created, added to its live state as a load
// counts them (count_now_or_reload). Nothing to undo on abort: the budget's
// entry goes then.
void count_bound_jobs(int32 id, const char *key) {
  if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "zizq: SPI_connect failed");
  // In-flight jobs through the partial indexes that hold them (the two arms;
  // they are not in the GIN index: see _jobs_budgets in the install script),
  // parked ones by key through that GIN index; then by budget id.
  prepared(bound_in_flight_plan,
           "SELECT COALESCE(sum(c.cost), 0)::bigint FROM zizq._jobs j, "
           "unnest(j.budget_ids, j.budget_costs) AS c(budget_id, cost) "
           "WHERE j.budgets @> pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object('key', $2::text)) "
           "AND j.status = 'in_flight' AND (j.lease_until IS NULL OR j.lease_until IS NOT NULL) "
           "AND c.budget_id = $1",
           {INT4OID, TEXTOID});
  prepared(bound_parked_plan,
           "SELECT k, count(*)::bigint FROM zizq._jobs j, generate_series(1, cardinality(j.budget_ids)) AS k "
           "WHERE j.budgets @> pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object('key', $2::text)) "
           "AND j.status = 'ready' AND j.parked AND j.budget_ids[k] = $1 GROUP BY k",
           {INT4OID, TEXTOID});
  Datum args[2] = {Int32GetDatum(id), CStringGetTextDatum(key)};
  run_plan(bound_in_flight_plan, args, nullptr, false, 1);
  int64 in_flight = column_int64(0, 1);
  uint64 rows = run_plan(bound_parked_plan, args, nullptr, false);
  int32 parked[core::kMaxBindings] = {};
  bool any_parked = false;
  for (uint64 i = 0; i < rows; ++i) {
    int k = column_int32(i, 1);
    if (k < 1 || k > core::kMaxBindings) continue;
    parked[k - 1] = static_cast<int32>(column_int64(i, 2));
    any_parked = true;
  }
  SPI_finish();
  if (in_flight == 0 && !any_parked) return;
  LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
  BudgetEntry *b = count_now_or_reload() ? find_budget(id) : nullptr;
  if (b != nullptr) {
    b->tokens.in_flight += in_flight;
    for (int k = 0; k < core::kMaxBindings; ++k) b->parked[k] += parked[k];
    b->park_version++;
  }
  LWLockRelease(shared->budget_lock);
  reserve_ops(1);
  at_commit_dirty(id);
}

}  // namespace

void lock_budget_key(const char *key, int len, bool exclusive) {
  LOCKTAG tag;
  uint32 hash = hash_bytes(reinterpret_cast<const unsigned char *>(key), len);
  SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, hash, kLockClass, 2);
  (void)LockAcquire(&tag, exclusive ? ExclusiveLock : ShareLock, false, false);
}

bool register_new_budget(int32 id, const core::Policy &policy) {
  reserve_ops(1);
  LWLockAcquire(shared->budget_lock, LW_EXCLUSIVE);
  if (!shared->budgets_loaded) {
    // The dispatcher is rebuilding shared memory: it loads this budget from
    // the table, or replays its creation if its snapshot missed it.
    if (shared->loading) {
      log_replay(ReplayEntry::Created, id, 0, &policy);
      record_budget_created(id);  // removed again if this rolls back after the load
    }
    LWLockRelease(shared->budget_lock);
    check_budget_limit();
    return true;
  }
  bool existed = find_budget(id) != nullptr;
  if (existed && cancel_pending_drop(id)) {
    // Deleted and inserted again in this transaction: its live state stays,
    // under the policy inserted.
    LWLockRelease(shared->budget_lock);
    at_commit_policy(id, policy);
    return false;
  }
  BudgetEntry *b = add_budget(id, policy);
  if (b != nullptr && !existed) record_budget_created(id);
  LWLockRelease(shared->budget_lock);
  if (b == nullptr)
    ereport(ERROR, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
                    errmsg("budget limit reached: zizq.max_budgets = %d budgets are in use", guc_max_budgets),
                    errhint("delete unused budgets, or raise zizq.max_budgets and restart the server")));
  return !existed;
}

core::Policy policy_from_jsonb_text(const char *json_text, const char *key) {
  core::Policy p;
  run_core([&] { p = core::policy_from_json(core::json::parse(json_text), key); });
  return p;
}

void parse_bindings(const char *json_text, const char *what, Bindings *out) {
  *out = Bindings{};
  if (json_text == nullptr) return;
  run_core([&] {
    std::vector<core::BindingSpec> specs = core::parse_bindings(core::json::parse(json_text), what);
    out->n = static_cast<int>(specs.size());
    for (int i = 0; i < out->n; ++i) {
      strlcpy(out->items[i].key, specs[i].key.c_str(), sizeof out->items[i].key);
      out->items[i].cost = static_cast<int32>(specs[i].cost > INT32_MAX ? INT32_MAX : specs[i].cost);
      out->items[i].has_create_with = specs[i].has_create_with;
      out->items[i].create_with = specs[i].create_with;
    }
  });
}

[[noreturn]] static void refuse_missing_budget(const char *key) {
  ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT), errmsg("budget \"%s\" does not exist", key),
                  errhint("create it with zizq.define_budget, or give the binding a create_with")));
}

void resolve_bindings(Bindings *jobs, int njobs, const char *(*describe)(int, void *), void *ctx) {
  int total = 0;
  for (int j = 0; j < njobs; ++j) total += jobs[j].n;
  if (total == 0) return;
  KeySlot *keys = static_cast<KeySlot *>(palloc0(sizeof(KeySlot) * total));
  int nkeys = 0;
  for (int j = 0; j < njobs; ++j)
    for (int i = 0; i < jobs[j].n; ++i) {
      const BindingInput &item = jobs[j].items[i];
      KeySlot *slot = nullptr;
      for (int k = 0; k < nkeys && slot == nullptr; ++k)
        if (strcmp(keys[k].key, item.key) == 0) slot = &keys[k];
      if (slot == nullptr) {
        keys[nkeys++] = KeySlot{item.key, j, i, 0, core::Policy{}};
      } else if (item.has_create_with && !jobs[slot->first_job].items[slot->first_binding].has_create_with) {
        slot->first_job = j;
        slot->first_binding = i;
      }
    }
  // A fixed lock order: two binders never wait on each other in a cycle.
  qsort(keys, nkeys, sizeof(KeySlot), compare_keys);
  for (int k = 0; k < nkeys; ++k) {
    KeySlot &slot = keys[k];
    lock_budget_key(slot.key, strlen(slot.key), false);
    if (find_budget_row(slot.key, &slot)) continue;
    const BindingInput &first = jobs[slot.first_job].items[slot.first_binding];
    if (!first.has_create_with) refuse_missing_budget(slot.key);
    if (!create_budget_row(slot.key, first.create_with, &slot) && !find_budget_row(slot.key, &slot))
      elog(ERROR, "zizq: budget \"%s\" vanished while it was being created", slot.key);
  }
  for (int j = 0; j < njobs; ++j)
    for (int i = 0; i < jobs[j].n; ++i) {
      const KeySlot *slot = nullptr;
      for (int k = 0; k < nkeys && slot == nullptr; ++k)
        if (strcmp(keys[k].key, jobs[j].items[i].key) == 0) slot = &keys[k];
      jobs[j].ids[i] = slot->id;
      jobs[j].policies[i] = slot->policy;
      const char *who = describe(j, ctx);
      int64 cost = jobs[j].items[i].cost;
      core::Policy policy = slot->policy;
      const char *key = slot->key;
      run_core([&] { core::check_fits(cost, policy, key, who); });
    }
}

char *bindings_json(const Bindings &b) {
  size_t room = 64;
  for (int i = 0; i < b.n; ++i) room += 6 * strlen(b.items[i].key) + 48;
  char *out = static_cast<char *>(palloc(room));
  run_core([&] {
    core::json::Value array = core::json::Value::array();
    for (int i = 0; i < b.n; ++i) {
      core::json::Value item = core::json::Value::object();
      item.set("key", core::json::Value::string(b.items[i].key));
      item.set("cost", core::json::Value::number(static_cast<int64_t>(b.items[i].cost)));
      array.items.push_back(std::move(item));
    }
    strlcpy(out, core::json::serialize(array).c_str(), room);
  });
  return out;
}

}  // namespace zizq::pg

using namespace zizq;
using namespace zizq::pg;

namespace {

const char *describe_job_arg(int, void *ctx) { return static_cast<const char *>(ctx); }

// The (budgets jsonb, job text) arguments of zizq._bindings and
// zizq._check_bindings: the bindings parsed, *job the job's description.
Bindings *bindings_args(FunctionCallInfo fcinfo, char **job) {
  require_shared();
  char *json_text = PG_ARGISNULL(0) ? nullptr : jsonb_datum_text(PG_GETARG_DATUM(0));
  *job = PG_ARGISNULL(1) ? pstrdup("the job") : text_to_cstring(PG_GETARG_TEXT_PP(1));
  Bindings *b = static_cast<Bindings *>(palloc(sizeof(Bindings)));
  parse_bindings(json_text, "budgets", b);
  return b;
}

char *policy_json_text(const core::Policy &p) {
  char *out = static_cast<char *>(palloc(256));
  run_core([&] { strlcpy(out, core::json::serialize(core::policy_to_json(p)).c_str(), 256); });
  return out;
}

int32 budget_id_arg(FunctionCallInfo fcinfo) {
  require_shared();
  return PG_GETARG_INT32(0);
}

}  // namespace

extern "C" {

// The JSON form of define_budget's arguments, validated.
PG_FUNCTION_INFO_V1(zizq_policy);
Datum zizq_policy(PG_FUNCTION_ARGS) {
  char *key = text_to_cstring(PG_GETARG_TEXT_PP(0));
  if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("allocation and strategy must not be NULL")));
  int64 allocation = PG_GETARG_INT32(1);
  char *strategy = text_to_cstring(PG_GETARG_TEXT_PP(2));
  std::optional<int64_t> duration_ms, burst;
  if (!PG_ARGISNULL(3)) duration_ms = PG_GETARG_INT64(3);
  if (!PG_ARGISNULL(4)) burst = PG_GETARG_INT32(4);
  core::Policy p;
  run_core([&] { p = core::make_policy(key, allocation, strategy, duration_ms, burst); });
  PG_RETURN_DATUM(jsonb_from_text(policy_json_text(p)));
}

// update_budget: the current JSON form merge-patched and validated.
PG_FUNCTION_INFO_V1(zizq_policy_patch);
Datum zizq_policy_patch(PG_FUNCTION_ARGS) {
  char *key = text_to_cstring(PG_GETARG_TEXT_PP(0));
  char *current = jsonb_datum_text(PG_GETARG_DATUM(1));
  char *patch = jsonb_datum_text(PG_GETARG_DATUM(2));
  core::Policy p;
  run_core([&] {
    core::Policy now = core::policy_from_json(core::json::parse(current), key);
    p = core::patch_policy(now, core::json::parse(patch), key);
  });
  PG_RETURN_DATUM(jsonb_from_text(policy_json_text(p)));
}

// A budget row inserted (the trigger budget_written): registered in shared
// memory, with the jobs already bound to it counted, as a load counts them.
// There are such jobs only when the rows came around zizq's functions:
// pg_restore copies zizq._jobs before zizq.budgets.
PG_FUNCTION_INFO_V1(zizq_budget_created);
Datum zizq_budget_created(PG_FUNCTION_ARGS) {
  int32 id = budget_id_arg(fcinfo);
  core::Policy p = policy_from_jsonb_text(jsonb_datum_text(PG_GETARG_DATUM(1)), "");
  bool fresh = register_new_budget(id, p);
  // An install script older than this library declares two arguments and
  // calls this from define_budget itself, with no jobs bound yet.
  if (fresh && PG_NARGS() > 2) count_bound_jobs(id, text_to_cstring(PG_GETARG_TEXT_PP(2)));
  PG_RETURN_VOID();
}

// A replaced or updated policy: applied to the live token state at commit
// (elapsed time settled at the old rate, then capped).
PG_FUNCTION_INFO_V1(zizq_budget_changed);
Datum zizq_budget_changed(PG_FUNCTION_ARGS) {
  int32 id = budget_id_arg(fcinfo);
  core::Policy p = policy_from_jsonb_text(jsonb_datum_text(PG_GETARG_DATUM(1)), "");
  at_commit_policy(id, p);
  PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(zizq_budget_dropped);
Datum zizq_budget_dropped(PG_FUNCTION_ARGS) {
  at_commit_drop_budget(budget_id_arg(fcinfo));
  PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(zizq_budgets_reset);
Datum zizq_budgets_reset(PG_FUNCTION_ARGS) {
  require_shared();
  at_commit_reset_budgets();
  at_commit_wake_dispatcher();
  PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(zizq_lock_budget_key);
Datum zizq_lock_budget_key(PG_FUNCTION_ARGS) {
  text *key = PG_GETARG_TEXT_PP(0);
  lock_budget_key(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key), PG_GETARG_BOOL(1));
  PG_RETURN_VOID();
}

// Resolves a `budgets` array for one job: (display jsonb, ids, costs), or
// NULLs when the array is empty.
PG_FUNCTION_INFO_V1(zizq_bindings);
Datum zizq_bindings(PG_FUNCTION_ARGS) {
  char *job;
  Bindings *b = bindings_args(fcinfo, &job);
  if (b->n > 0) {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "zizq: SPI_connect failed");
    resolve_bindings(b, 1, describe_job_arg, job);
    SPI_finish();
  }
  TupleDesc desc;
  if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE) elog(ERROR, "record type expected");
  desc = BlessTupleDesc(desc);
  Datum values[3] = {0, 0, 0};
  bool nulls[3] = {true, true, true};
  if (b->n > 0) {
    int32 costs[core::kMaxBindings];
    for (int i = 0; i < b->n; ++i) costs[i] = b->items[i].cost;
    values[0] = jsonb_from_text(bindings_json(*b));
    values[1] = int4_array(b->ids, b->n);
    values[2] = int4_array(costs, b->n);
    nulls[0] = nulls[1] = nulls[2] = false;
  }
  PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

// zizq._check_bindings(budgets, job): raises what binding `budgets` would
// refuse, creating nothing: each budget must exist or come with a
// create_with, and each cost must fit the policy that would apply. The bulk
// binding functions ask it up front, so that a bad call is refused even when
// no job matches, while a create_with creates its budget only with a job
// (SPEC §3).
PG_FUNCTION_INFO_V1(zizq_check_bindings);
Datum zizq_check_bindings(PG_FUNCTION_ARGS) {
  char *job;
  Bindings *b = bindings_args(fcinfo, &job);
  if (b->n == 0) PG_RETURN_VOID();
  if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "zizq: SPI_connect failed");
  for (int i = 0; i < b->n; ++i) {
    const BindingInput &item = b->items[i];
    KeySlot slot{item.key, 0, i, 0, core::Policy{}};
    core::Policy policy = item.create_with;
    if (find_budget_row(item.key, &slot))
      policy = slot.policy;
    else if (!item.has_create_with)
      refuse_missing_budget(item.key);
    int64 cost = item.cost;
    run_core([&] { core::check_fits(cost, policy, item.key, job); });
  }
  SPI_finish();
  PG_RETURN_VOID();
}

// Live token state of every budget in shared memory.
PG_FUNCTION_INFO_V1(zizq_budget_live);
Datum zizq_budget_live(PG_FUNCTION_ARGS) {
  require_shared();
  ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
  InitMaterializedSRF(fcinfo, 0);
  LWLockAcquire(shared->budget_lock, LW_SHARED);
  long n = hash_get_num_entries(budget_hash);
  BudgetEntry *copy = static_cast<BudgetEntry *>(palloc(sizeof(BudgetEntry) * ZZ_MAX(n, 1)));
  int count = 0;
  HASH_SEQ_STATUS scan;
  hash_seq_init(&scan, budget_hash);
  for (auto *b = static_cast<BudgetEntry *>(hash_seq_search(&scan)); b != nullptr;
       b = static_cast<BudgetEntry *>(hash_seq_search(&scan)))
    if (count < n) copy[count++] = *b;
    else {
      hash_seq_term(&scan);
      break;
    }
  LWLockRelease(shared->budget_lock);

  int64 now = monotonic_us();
  for (int i = 0; i < count; ++i) {
    const BudgetEntry &b = copy[i];
    char tokens[64];
    int64 whole = 0, debt = 0, next = 0;
    bool has_next = false;
    run_core([&] {
      strlcpy(tokens, core::tokens_text(b.policy, b.tokens, now).c_str(), sizeof tokens);
      whole = core::whole_tokens(b.policy, b.tokens, now);
      debt = core::debt(b.policy, b.tokens);
      auto t = core::next_token_time(b.policy, b.tokens, now);
      has_next = t.has_value();
      next = t.value_or(0);
    });
    Datum values[7];
    bool nulls[7] = {false, false, false, false, false, !has_next, false};
    values[0] = Int32GetDatum(b.id);
    values[1] = DirectFunctionCall3(numeric_in, CStringGetDatum(tokens), ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
    values[2] = Int64GetDatum(whole);
    values[3] = Int64GetDatum(b.tokens.in_flight);
    values[4] = Int64GetDatum(debt);
    values[5] = has_next ? TimestampTzGetDatum(wall_time_of(next)) : 0;
    values[6] = Int64GetDatum(b.parked[0] + b.parked[1] + b.parked[2] + b.parked[3]);
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
  }
  return (Datum)0;
}

// zizq._due_at(budget_id, cost, ahead_cost): when the budget can pay `cost`
// behind jobs costing `ahead_cost` in its line (NULL: only a release helps).
PG_FUNCTION_INFO_V1(zizq_due_at);
Datum zizq_due_at(PG_FUNCTION_ARGS) {
  int32 id = budget_id_arg(fcinfo);
  int64 cost = PG_GETARG_INT32(1);
  int64 ahead_cost = PG_NARGS() > 2 ? PG_GETARG_INT64(2) : 0;  // a catalog from before the argument
  LWLockAcquire(shared->budget_lock, LW_SHARED);
  BudgetEntry *b = find_budget(id);
  BudgetEntry copy;
  bool found = b != nullptr;
  if (found) copy = *b;
  LWLockRelease(shared->budget_lock);
  if (!found) PG_RETURN_NULL();
  int64 now = monotonic_us(), due = 0;
  bool has_due = false;
  run_core([&] {
    auto t = core::due_time_behind(copy.policy, copy.tokens, ahead_cost, cost, now);
    has_due = t.has_value();
    due = t.value_or(0);
  });
  if (!has_due) PG_RETURN_NULL();
  PG_RETURN_TIMESTAMPTZ(due <= now ? GetCurrentTimestamp() : wall_time_of(due));
}

}  // extern "C"
