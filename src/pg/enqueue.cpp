// zizq enqueue and enqueue_many (SPEC §2, §3 "Binding jobs").
//
// Both build plain JobInput records (validated by core rules), then insert
// them with one INSERT ... SELECT FROM unnest(...) so that a batch costs one
// statement. A job whose budgets cannot pay now, or that would queue behind
// a parked job of one of its budgets, is inserted parked: dequeues never see
// it until the dispatcher offers it.
#include <string>

#include "core/backoff.hpp"
#include "core/job_spec.hpp"
#include "core/json.hpp"
#include "core/names.hpp"
#include "core/token_bucket.hpp"

#include "pg/budgets.hpp"
#include "pg/errors.hpp"
#include "pg/job_row.hpp"
#include "pg/jsonb_text.hpp"
#include "pg/lines.hpp"
#include "pg/pg.hpp"
#include "pg/shmem.hpp"
#include "pg/spi.hpp"
#include "pg/floors.hpp"
#include "pg/xact.hpp"

namespace zizq::pg {
namespace {

struct JobInput {
  char *queue;
  char *type;
  Datum payload;  // jsonb
  bool payload_null;
  int32 priority;
  bool has_ready_at;
  TimestampTz ready_at;
  char *unique_key;  // nullptr: none
  const char *unique_while;
  bool has_retry_limit;
  int32 retry_limit;
  Datum backoff;  // jsonb, 0: none
  Datum retention;
  Bindings bindings;
  // decided while inserting
  bool scheduled;
  bool parked;
  int64 id;  // once inserted
  char *label;  // "jobs[3]" or "the job", for messages
};

// ---- validation --------------------------------------------------------------

void check_text_name(const char *kind, const char *value) {
  run_core([&] { core::check_name(kind, value); });
}

void check_priority_value(int64 priority, const char *what) {
  run_core([&] { core::check_priority(priority, what); });
}

const char *unique_while_value(const char *text, const char *what) {
  const char *name = nullptr;
  run_core([&] { name = core::unique_while_name(core::parse_unique_while(text, what)); });
  return name;
}

// Validates a backoff / retention object given as JSON text.
void check_policy_object(const char *text, bool is_backoff, const char *what) {
  run_core([&] {
    core::json::Value v = core::json::parse(text);
    if (is_backoff)
      core::check_backoff(v, what);
    else
      core::check_retention(v, what);
  });
}

[[noreturn]] void refuse_null(const char *what) {
  ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s must not be NULL", what)));
  pg_unreachable();
}

// ---- enqueue_many elements ----------------------------------------------------

char *jsonb_value_text(JsonbValue *v) {
  if (v->type == jbvString) return pnstrdup(v->val.string.val, v->val.string.len);
  Jsonb *jb = JsonbValueToJsonb(v);
  return jsonb_text(jb);
}

core::json::Type json_type_of(const JsonbValue *v) {
  switch (v->type) {
    case jbvNull: return core::json::Type::Null;
    case jbvString: return core::json::Type::String;
    case jbvNumeric: return core::json::Type::Number;
    case jbvBool: return core::json::Type::Bool;
    case jbvBinary:
      return JsonContainerIsArray(v->val.binary.data) ? core::json::Type::Array : core::json::Type::Object;
    default: return core::json::Type::Object;
  }
}

int64 jsonb_integer(JsonbValue *v, const char *what) {
  char *text = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
  int64 out = 0;
  run_core([&] {
    core::json::Value n = core::json::Value::number(text);
    if (!n.integral(&out)) core::invalid(std::string(what) + " must be an integer, not " + text);
  });
  return out;
}

TimestampTz parse_timestamp(const char *text, const char *what) {
  TimestampTz result = 0;
  MemoryContext context = CurrentMemoryContext;
  PG_TRY();
  {
    result = DatumGetTimestampTz(
        DirectFunctionCall3(timestamptz_in, CStringGetDatum(text), ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
  }
  PG_CATCH();
  {
    MemoryContextSwitchTo(context);
    FlushErrorState();
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("%s must be an ISO 8601 timestamp, not \"%s\"", what, text)));
  }
  PG_END_TRY();
  return result;
}

void read_field(JobInput &job, core::JobField field, JsonbValue *v, const char *label) {
  // "jobs[3].priority", for the messages of the fields that check values
  // (formatted only for those: the common queue, type and payload need none).
  char what[64] = "";
  bool checked = field != core::JobField::Queue && field != core::JobField::Type && field != core::JobField::Payload;
  if (checked) snprintf(what, sizeof what, "%s.%s", label, core::job_field_name(field));
  core::json::Type type = json_type_of(v);
  run_core([&] { core::check_job_field_type(field, type, label); });
  bool is_null = v->type == jbvNull;
  switch (field) {
    case core::JobField::Queue: job.queue = jsonb_value_text(v); break;
    case core::JobField::Type: job.type = jsonb_value_text(v); break;
    case core::JobField::Payload:
      job.payload = JsonbPGetDatum(JsonbValueToJsonb(v));
      job.payload_null = false;
      break;
    case core::JobField::Priority:
      if (!is_null) {
        job.priority = static_cast<int32>(ZZ_MAX(ZZ_MIN(jsonb_integer(v, what), INT32_MAX), INT32_MIN));
        check_priority_value(jsonb_integer(v, what), what);
      }
      break;
    case core::JobField::ReadyAt:
      if (!is_null) {
        job.has_ready_at = true;
        job.ready_at = parse_timestamp(jsonb_value_text(v), what);
      }
      break;
    case core::JobField::Budgets:
      if (!is_null) parse_bindings(jsonb_value_text(v), what, &job.bindings);
      break;
    case core::JobField::UniqueKey:
      if (!is_null) job.unique_key = jsonb_value_text(v);
      break;
    case core::JobField::UniqueWhile:
      if (!is_null) job.unique_while = unique_while_value(jsonb_value_text(v), what);
      break;
    case core::JobField::RetryLimit:
      if (!is_null) {
        int64 limit = jsonb_integer(v, what);
        run_core([&] { core::check_retry_limit(limit, what); });
        job.has_retry_limit = true;
        job.retry_limit = static_cast<int32>(ZZ_MIN(limit, INT32_MAX));
      }
      break;
    case core::JobField::Backoff:
    case core::JobField::Retention:
      if (!is_null) {
        bool is_backoff = field == core::JobField::Backoff;
        char *text = jsonb_value_text(v);
        check_policy_object(text, is_backoff, what);
        (is_backoff ? job.backoff : job.retention) = jsonb_from_text(text);
      }
      break;
  }
}

// `empty` is the default payload, '{}' parsed once per call (an
// enqueue_many of 1,000 jobs without payloads need not parse it 1,000 times).
void default_job(JobInput &job, Datum empty) {
  job = JobInput{};
  job.priority = static_cast<int32>(core::kDefaultPriority);
  job.unique_while = "queued";
  job.payload = empty;
}

void read_element(JobInput &job, JsonbContainer *element, int index, Datum empty) {
  default_job(job, empty);
  job.label = psprintf("jobs[%d]", index);
  if (!JsonContainerIsObject(element))
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s must be a JSON object", job.label)));
  JsonbIterator *it = JsonbIteratorInit(element);
  JsonbValue v;
  JsonbIteratorToken tok;
  bool seen_queue = false, seen_type = false;
  while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE) {
    if (tok != WJB_KEY) continue;
    char *name = pnstrdup(v.val.string.val, v.val.string.len);
    core::JobField field = core::JobField::Queue;
    const char *label = job.label;
    run_core([&] { field = core::job_field(name, label); });
    tok = JsonbIteratorNext(&it, &v, true);
    read_field(job, field, &v, job.label);
    seen_queue = seen_queue || field == core::JobField::Queue;
    seen_type = seen_type || field == core::JobField::Type;
  }
  if (!seen_queue || !seen_type)
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("%s needs a \"%s\"", job.label, seen_queue ? "type" : "queue")));
  check_text_name("queue", job.queue);
  check_text_name("type", job.type);
  if (job.unique_key != nullptr && job.unique_key[0] == '\0')
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s.unique_key must not be empty", job.label)));
}

// ---- parking decision -----------------------------------------------------------

struct Promised {
  int32 budget;
  int64 cost;
};

// Whether a ready budgeted job must be inserted parked: one of its budgets
// cannot pay now (counting the jobs of this call already promised to it),
// or a parked job of one of its budgets is ahead of it in the queue.
bool must_park(const JobInput &job, Promised *promised, int *npromised) {
  const Bindings &b = job.bindings;
  int32 counts[core::kMaxBindings][core::kMaxBindings];
  bool affordable = true;
  int64 now = monotonic_us();
  LWLockAcquire(shared->budget_lock, LW_SHARED);
  if (!shared->budgets_loaded) {
    LWLockRelease(shared->budget_lock);
    return false;  // a dequeue decides once the dispatcher has loaded budgets
  }
  for (int i = 0; i < b.n; ++i) {
    BudgetEntry *e = find_budget(b.ids[i]);
    int64 already = 0;
    for (int p = 0; p < *npromised; ++p)
      if (promised[p].budget == b.ids[i]) already = promised[p].cost;
    if (e == nullptr) {
      memset(counts[i], 0, sizeof counts[i]);
      continue;
    }
    memcpy(counts[i], e->parked, sizeof counts[i]);
    affordable = affordable && core::can_pay(e->policy, e->tokens, already + b.items[i].cost, now);
  }
  LWLockRelease(shared->budget_lock);
  if (!affordable) return true;
  for (int i = 0; i < b.n; ++i)
    if (any_parked(counts[i]) && parked_ahead(b.ids[i], counts[i], job.queue, job.priority, INT64_MAX)) return true;
  for (int i = 0; i < b.n; ++i) {
    int p = 0;
    while (p < *npromised && promised[p].budget != b.ids[i]) ++p;
    if (p == *npromised) promised[(*npromised)++] = Promised{b.ids[i], 0};
    promised[p].cost += b.items[i].cost;
  }
  return false;
}

// ---- insert --------------------------------------------------------------------

SPIPlanPtr insert_plain_plan = nullptr, insert_unique_plan = nullptr;
SPIPlanPtr holder_plan = nullptr;

const char *describe_input(int j, void *ctx) { return static_cast<JobInput *>(ctx)[j].label; }

Datum text_array(char **values, const bool *nulls, int n) {
  Datum *elems = static_cast<Datum *>(palloc(sizeof(Datum) * ZZ_MAX(n, 1)));
  for (int i = 0; i < n; ++i) elems[i] = nulls[i] ? 0 : CStringGetTextDatum(values[i]);
  int dims[1] = {n}, lbs[1] = {1};
  return PointerGetDatum(construct_md_array(elems, const_cast<bool *>(nulls), 1, dims, lbs, TEXTOID, -1, false,
                                            TYPALIGN_INT));
}

Datum datum_array(Datum *values, bool *nulls, int n, Oid type, int16 typlen, bool byval, char align) {
  int dims[1] = {n}, lbs[1] = {1};
  return PointerGetDatum(construct_md_array(values, nulls, 1, dims, lbs, type, typlen, byval, align));
}

char *int_list(const int32 *values, int n) {
  StringInfoData s;
  initStringInfo(&s);
  appendStringInfoChar(&s, '{');
  for (int i = 0; i < n; ++i) appendStringInfo(&s, "%s%d", i ? "," : "", values[i]);
  appendStringInfoChar(&s, '}');
  return s.data;
}

// Column arrays for the INSERT: one element per job.
struct Columns {
  char **queue, **type, **status, **unique_key, **unique_while, **budget_ids, **budget_costs;
  bool *no_unique_key, *no_budgets, *no_retry_limit, *no_backoff, *no_retention, *none;
  Datum *payload, *priority, *ready_at, *retry_limit, *backoff, *retention, *budgets, *parked;
};

template <typename T>
T *alloc_n(int n) {
  return static_cast<T *>(palloc0(sizeof(T) * ZZ_MAX(n, 1)));
}

Columns build_columns(JobInput *jobs, int n) {
  Columns c;
  c.queue = alloc_n<char *>(n), c.type = alloc_n<char *>(n), c.status = alloc_n<char *>(n);
  c.unique_key = alloc_n<char *>(n), c.unique_while = alloc_n<char *>(n);
  c.budget_ids = alloc_n<char *>(n), c.budget_costs = alloc_n<char *>(n);
  c.no_unique_key = alloc_n<bool>(n), c.no_budgets = alloc_n<bool>(n), c.no_retry_limit = alloc_n<bool>(n);
  c.no_backoff = alloc_n<bool>(n), c.no_retention = alloc_n<bool>(n), c.none = alloc_n<bool>(n);
  c.payload = alloc_n<Datum>(n), c.priority = alloc_n<Datum>(n), c.ready_at = alloc_n<Datum>(n);
  c.retry_limit = alloc_n<Datum>(n), c.backoff = alloc_n<Datum>(n), c.retention = alloc_n<Datum>(n);
  c.budgets = alloc_n<Datum>(n), c.parked = alloc_n<Datum>(n);
  for (int i = 0; i < n; ++i) {
    JobInput &j = jobs[i];
    c.queue[i] = j.queue;
    c.type[i] = j.type;
    c.status[i] = const_cast<char *>(j.scheduled ? "scheduled" : "ready");
    c.unique_key[i] = j.unique_key;
    c.no_unique_key[i] = j.unique_key == nullptr;
    c.unique_while[i] = const_cast<char *>(j.unique_while);
    c.payload[i] = j.payload;
    c.priority[i] = Int32GetDatum(j.priority);
    c.ready_at[i] = TimestampTzGetDatum(j.ready_at);
    c.retry_limit[i] = Int32GetDatum(j.retry_limit);
    c.no_retry_limit[i] = !j.has_retry_limit;
    c.backoff[i] = j.backoff;
    c.no_backoff[i] = j.backoff == 0;
    c.retention[i] = j.retention;
    c.no_retention[i] = j.retention == 0;
    c.no_budgets[i] = j.bindings.n == 0;
    if (j.bindings.n > 0) {
      int32 costs[core::kMaxBindings];
      for (int k = 0; k < j.bindings.n; ++k) costs[k] = j.bindings.items[k].cost;
      c.budgets[i] = jsonb_from_text(bindings_json(j.bindings));
      c.budget_ids[i] = int_list(j.bindings.ids, j.bindings.n);
      c.budget_costs[i] = int_list(costs, j.bindings.n);
    }
    c.parked[i] = BoolGetDatum(j.parked);
  }
  return c;
}

#define ZIZQ_INSERT_JOBS                                                                                      \
  "INSERT INTO zizq._jobs (queue, type, payload, priority, status, ready_at, retry_limit, backoff, "          \
  "retention, unique_key, unique_while, unique_hold, budgets, budget_ids, budget_costs, parked, enqueued_by) " \
  "SELECT q, t, p, pr, st, ra, rl, bo, re, uk, uw, uk, bu, bi::integer[], bc::integer[], pk, $16 "            \
  "FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::integer[], $5::text[], $6::timestamptz[], "           \
  "$7::integer[], $8::jsonb[], $9::jsonb[], $10::text[], $11::text[], $12::jsonb[], $13::text[], "            \
  "$14::text[], $15::boolean[]) AS u(q, t, p, pr, st, ra, rl, bo, re, uk, uw, bu, bi, bc, pk) "
#define ZIZQ_INSERT_RETURNING "RETURNING " ZIZQ_JOB_COLUMNS ", parked"

// Jobs with unique keys go through ON CONFLICT; the others through a plain
// INSERT, which spares each row a speculative insertion (a lock on a
// speculative token and a second WAL record to confirm it).
SPIPlanPtr insert_plan(bool unique_keys) {
  const std::initializer_list<Oid> types = {
      TEXTARRAYOID,  TEXTARRAYOID, JSONBARRAYOID, INT4ARRAYOID, TEXTARRAYOID, TIMESTAMPTZARRAYOID,
      INT4ARRAYOID,  JSONBARRAYOID, JSONBARRAYOID, TEXTARRAYOID, TEXTARRAYOID, JSONBARRAYOID,
      TEXTARRAYOID,  TEXTARRAYOID, BOOLARRAYOID, OIDOID};
  if (unique_keys)
    return prepared(insert_unique_plan,
                    ZIZQ_INSERT_JOBS "ON CONFLICT (unique_hold) WHERE unique_hold IS NOT NULL DO NOTHING "
                                     ZIZQ_INSERT_RETURNING,
                    types);
  return prepared(insert_plain_plan, ZIZQ_INSERT_JOBS ZIZQ_INSERT_RETURNING, types);
}

uint64 insert_rows(JobInput *jobs, int n) {
  bool unique_keys = false;
  for (int i = 0; i < n && !unique_keys; ++i) unique_keys = jobs[i].unique_key != nullptr;
  SPIPlanPtr plan = insert_plan(unique_keys);
  Columns c = build_columns(jobs, n);
  Datum args[16] = {
      text_array(c.queue, c.none, n),
      text_array(c.type, c.none, n),
      datum_array(c.payload, c.none, n, JSONBOID, -1, false, TYPALIGN_INT),
      datum_array(c.priority, c.none, n, INT4OID, 4, true, TYPALIGN_INT),
      text_array(c.status, c.none, n),
      datum_array(c.ready_at, c.none, n, TIMESTAMPTZOID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE),
      datum_array(c.retry_limit, c.no_retry_limit, n, INT4OID, 4, true, TYPALIGN_INT),
      datum_array(c.backoff, c.no_backoff, n, JSONBOID, -1, false, TYPALIGN_INT),
      datum_array(c.retention, c.no_retention, n, JSONBOID, -1, false, TYPALIGN_INT),
      text_array(c.unique_key, c.no_unique_key, n),
      text_array(c.unique_while, c.none, n),
      datum_array(c.budgets, c.no_budgets, n, JSONBOID, -1, false, TYPALIGN_INT),
      text_array(c.budget_ids, c.no_budgets, n),
      text_array(c.budget_costs, c.no_budgets, n),
      datum_array(c.parked, c.none, n, BOOLOID, 1, true, TYPALIGN_CHAR),
      ObjectIdGetDatum(GetOuterUserId()),
  };
  return run_plan(plan, args, nullptr, false);
}

// The job holding `unique_key`, as a zizq.job with duplicate = true.
HeapTuple unique_holder(const char *unique_key, MemoryContext out) {
  prepared(holder_plan, "SELECT " ZIZQ_JOB_COLUMNS " FROM zizq._jobs WHERE unique_hold = $1", {TEXTOID});
  Datum args[1] = {CStringGetTextDatum(unique_key)};
  if (run_plan(holder_plan, args, nullptr, false, 1) == 0) return nullptr;
  MemoryContext old = MemoryContextSwitchTo(out);
  HeapTuple t = job_tuple_from_spi(0, 1, true);
  MemoryContextSwitchTo(old);
  return t;
}

// Wake-ups and parked counts for the rows this call inserted.
void after_insert(JobInput *jobs, const bool *inserted, int n) {
  TimestampTz earliest = 0;
  for (int i = 0; i < n; ++i) {
    JobInput &j = jobs[i];
    if (!inserted[i]) continue;
    if (j.scheduled) {
      if (earliest == 0 || j.ready_at < earliest) earliest = j.ready_at;
    } else if (j.parked) {
      note_parked(j.bindings.ids, j.bindings.n);
    } else {
      int count = 0;
      bool first = true;
      for (int p = 0; p < i && first; ++p) first = !(inserted[p] && !jobs[p].scheduled && !jobs[p].parked &&
                                                    strcmp(jobs[p].queue, j.queue) == 0);
      if (!first) continue;
      // The lowest key of each kind among the queue's ready jobs.
      core::JobKey lowest[core::kFloorKinds] = {core::kAboveAllKeys, core::kAboveAllKeys};
      for (int q = i; q < n; ++q) {
        if (!inserted[q] || jobs[q].scheduled || jobs[q].parked || strcmp(jobs[q].queue, j.queue) != 0) continue;
        ++count;
        core::FloorKind kind = jobs[q].bindings.n > 0 ? core::FloorKind::Budgeted : core::FloorKind::Free;
        core::JobKey key{jobs[q].priority, jobs[q].id};
        if (key < lowest[static_cast<int>(kind)]) lowest[static_cast<int>(kind)] = key;
      }
      for (core::FloorKind kind : {core::FloorKind::Free, core::FloorKind::Budgeted}) {
        const core::JobKey &low = lowest[static_cast<int>(kind)];
        if (low < core::kAboveAllKeys) at_commit_lower_floor(j.queue, kind, low.priority, low.id);
      }
      at_commit_wake_queue(queue_hash(j.queue, strlen(j.queue)), count);
      at_commit_notify(j.queue);
    }
  }
  if (earliest != 0) at_commit_wake_dispatcher_before(earliest);
}

// Inserts the jobs; results[i] gets job i's row (inserted, or the existing
// unique job as a duplicate), formed in `out`.
void insert_jobs(JobInput *jobs, int n, HeapTuple *results, MemoryContext out) {
  require_shared();
  if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "zizq: SPI_connect failed");
  resolve_bindings(&jobs[0].bindings, 0, describe_input, jobs);  // (no-op; keeps the signature honest)
  Bindings *all = alloc_n<Bindings>(n);
  for (int i = 0; i < n; ++i) all[i] = jobs[i].bindings;
  resolve_bindings(all, n, describe_input, jobs);
  Promised *promised = alloc_n<Promised>(n * core::kMaxBindings);
  int npromised = 0;
  TimestampTz now = GetCurrentTimestamp();
  for (int i = 0; i < n; ++i) {
    JobInput &j = jobs[i];
    j.bindings = all[i];
    if (!j.has_ready_at) j.ready_at = now;
    j.scheduled = j.ready_at > now;
    j.parked = !j.scheduled && j.bindings.n > 0 && must_park(j, promised, &npromised);
  }
  begin_own_insert();
  uint64 rows = insert_rows(jobs, n);
  end_own_insert();
  // RETURNING comes in insertion (id) order; a job skipped as a duplicate
  // is the one whose unique key does not come next.
  SPITupleTable *table = SPI_tuptable;
  bool *inserted = alloc_n<bool>(n);
  uint64 r = 0;
  for (int i = 0; i < n; ++i) {
    if (r < rows) {
      SPI_tuptable = table;
      char *key = column_text(r, 12);
      bool match = (jobs[i].unique_key == nullptr) || (key != nullptr && strcmp(key, jobs[i].unique_key) == 0);
      if (match) {
        MemoryContext old = MemoryContextSwitchTo(out);
        results[i] = job_tuple_from_spi(r, 1, false);
        MemoryContextSwitchTo(old);
        jobs[i].id = column_int64(r, 1);
        inserted[i] = true;
        ++r;
        continue;
      }
    }
  }
  after_insert(jobs, inserted, n);
  for (int i = 0; i < n; ++i) {
    if (inserted[i]) continue;
    results[i] = unique_holder(jobs[i].unique_key, out);
    if (results[i] == nullptr)
      ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                      errmsg("the job holding unique key \"%s\" changed while %s was enqueued", jobs[i].unique_key,
                             jobs[i].label),
                      errhint("retry the enqueue")));
  }
  SPI_finish();
}

}  // namespace
}  // namespace zizq::pg

using namespace zizq;
using namespace zizq::pg;

extern "C" {

PG_FUNCTION_INFO_V1(zizq_enqueue);
Datum zizq_enqueue(PG_FUNCTION_ARGS) {
  JobInput job;
  default_job(job, 0);  // the payload is an argument
  job.label = pstrdup("the job");
  if (PG_ARGISNULL(0)) refuse_null("queue");
  if (PG_ARGISNULL(1)) refuse_null("type");
  if (PG_ARGISNULL(2)) refuse_null("payload");
  if (PG_ARGISNULL(3)) refuse_null("priority");
  job.queue = text_to_cstring(PG_GETARG_TEXT_PP(0));
  job.type = text_to_cstring(PG_GETARG_TEXT_PP(1));
  check_text_name("queue", job.queue);
  check_text_name("type", job.type);
  job.payload = PG_GETARG_DATUM(2);
  job.priority = PG_GETARG_INT32(3);
  check_priority_value(job.priority, "priority");
  if (!PG_ARGISNULL(4)) {
    job.has_ready_at = true;
    job.ready_at = PG_GETARG_TIMESTAMPTZ(4);
  }
  if (!PG_ARGISNULL(5)) parse_bindings(jsonb_datum_text(PG_GETARG_DATUM(5)), "budgets", &job.bindings);
  if (!PG_ARGISNULL(6)) {
    job.unique_key = text_to_cstring(PG_GETARG_TEXT_PP(6));
    if (job.unique_key[0] == '\0')
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("unique_key must not be empty")));
  }
  if (PG_ARGISNULL(7)) refuse_null("unique_while");
  job.unique_while = unique_while_value(text_to_cstring(PG_GETARG_TEXT_PP(7)), "unique_while");
  if (!PG_ARGISNULL(8)) {
    int64 limit = PG_GETARG_INT32(8);
    run_core([&] { core::check_retry_limit(limit, "retry_limit"); });
    job.has_retry_limit = true;
    job.retry_limit = PG_GETARG_INT32(8);
  }
  if (!PG_ARGISNULL(9)) {
    check_policy_object(jsonb_datum_text(PG_GETARG_DATUM(9)), true, "backoff");
    job.backoff = PG_GETARG_DATUM(9);
  }
  if (!PG_ARGISNULL(10)) {
    check_policy_object(jsonb_datum_text(PG_GETARG_DATUM(10)), false, "retention");
    job.retention = PG_GETARG_DATUM(10);
  }
  HeapTuple result = nullptr;
  insert_jobs(&job, 1, &result, CurrentMemoryContext);
  PG_RETURN_DATUM(HeapTupleGetDatum(result));
}

PG_FUNCTION_INFO_V1(zizq_enqueue_many);
Datum zizq_enqueue_many(PG_FUNCTION_ARGS) {
  if (PG_ARGISNULL(0)) refuse_null("jobs");
  Jsonb *array = PG_GETARG_JSONB_P(0);
  ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
  InitMaterializedSRF(fcinfo, 0);
  if (!JB_ROOT_IS_ARRAY(array) || JB_ROOT_IS_SCALAR(array))
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("jobs must be a JSON array of job objects"),
                    errhint("e.g. '[{\"queue\": \"emails\", \"type\": \"send\", \"payload\": {}}]'")));
  int n = JB_ROOT_COUNT(array);
  if (n == 0) return (Datum)0;
  JobInput *jobs = alloc_n<JobInput>(n);
  JsonbIterator *it = JsonbIteratorInit(&array->root);
  JsonbValue v;
  JsonbIteratorToken tok;
  int index = 0;
  Datum empty = jsonb_from_text("{}");
  while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE) {
    if (tok != WJB_ELEM) continue;
    if (v.type != jbvBinary)
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("jobs[%d] must be a JSON object", index)));
    read_element(jobs[index], v.val.binary.data, index, empty);
    ++index;
  }
  HeapTuple *results = alloc_n<HeapTuple>(n);
  insert_jobs(jobs, n, results, rsinfo->econtext->ecxt_per_query_memory);
  for (int i = 0; i < n; ++i) tuplestore_puttuple(rsinfo->setResult, results[i]);
  return (Datum)0;
}

}  // extern "C"
