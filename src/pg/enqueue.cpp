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
#include "pg/job_insert.hpp"
#include "pg/job_row.hpp"
#include "pg/jsonb_text.hpp"
#include "pg/lines.hpp"
#include "pg/pg.hpp"
#include "pg/shmem.hpp"
#include "pg/spi.hpp"
#include "pg/floors.hpp"
#include "pg/xact.hpp"

extern "C" {
#include "catalog/pg_proc.h"
#include "utils/acl.h"
#include "utils/syscache.h"
#include "utils/fmgroids.h"
}

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

// `context` ("jobs[3]"), when given, says which element of enqueue_many.
void check_text_name(const char *kind, const char *value, const char *context = nullptr) {
  run_core([&] {
    try {
      core::check_name(kind, value);
    } catch (const core::Error &e) {
      if (context == nullptr) throw;
      throw core::Error(e.state(), std::string(context) + ": " + e.message(), e.hint());
    }
  });
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
  if (checked) run_core([&] { snprintf(what, sizeof what, "%s.%s", label, core::job_field_name(field)); });
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
        char *text = jsonb_value_text(v);
        run_core([&] { core::check_iso8601_timestamp(text, what); });
        job.has_ready_at = true;
        job.ready_at = parse_timestamp(text, what);
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
  check_text_name("queue", job.queue, job.label);
  check_text_name("type", job.type, job.label);
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

template <typename T>
T *alloc_n(int n) {
  return static_cast<T *>(palloc0(sizeof(T) * ZZ_MAX(n, 1)));
}

// The columns an enqueue gives; the others take the table's defaults (id,
// attempts, created_at) or stay NULL.
struct RowColumn {
  const char *name;
  Oid type;
};
constexpr RowColumn kRowColumns[] = {
    {"queue", TEXTOID},          {"type", TEXTOID},          {"payload", JSONBOID},
    {"priority", INT4OID},       {"status", TEXTOID},        {"ready_at", TIMESTAMPTZOID},
    {"retry_limit", INT4OID},    {"backoff", JSONBOID},      {"retention", JSONBOID},
    {"unique_key", TEXTOID},     {"unique_while", TEXTOID},  {"unique_hold", TEXTOID},
    {"budgets", JSONBOID},       {"budget_ids", INT4ARRAYOID}, {"budget_costs", INT4ARRAYOID},
    {"parked", BOOLOID},         {"enqueued_by", OIDOID}};
constexpr int kRowColumnCount = sizeof kRowColumns / sizeof kRowColumns[0];

// Job j's row: values[k] and nulls[k] for kRowColumns[k].
void row_values(const JobInput &j, Oid enqueued_by, Datum *values, bool *nulls) {
  auto text = [](const char *s) { return s == nullptr ? Datum(0) : CStringGetTextDatum(s); };
  int32 ids[core::kMaxBindings], costs[core::kMaxBindings];
  for (int k = 0; k < j.bindings.n; ++k) ids[k] = j.bindings.ids[k], costs[k] = j.bindings.items[k].cost;
  bool budgeted = j.bindings.n > 0;
  const Datum v[kRowColumnCount] = {
      text(j.queue),
      text(j.type),
      j.payload,
      Int32GetDatum(j.priority),
      text(j.scheduled ? "scheduled" : "ready"),
      TimestampTzGetDatum(j.ready_at),
      Int32GetDatum(j.retry_limit),
      j.backoff,
      j.retention,
      text(j.unique_key),
      text(j.unique_while),
      text(j.unique_key),
      budgeted ? jsonb_from_text(bindings_json(j.bindings)) : Datum(0),
      budgeted ? int4_array(ids, j.bindings.n) : Datum(0),
      budgeted ? int4_array(costs, j.bindings.n) : Datum(0),
      BoolGetDatum(j.parked),
      ObjectIdGetDatum(enqueued_by)};
  const bool n[kRowColumnCount] = {
      false, false, false, false, false, false, !j.has_retry_limit, j.backoff == 0, j.retention == 0,
      j.unique_key == nullptr, false, j.unique_key == nullptr, !budgeted, !budgeted, !budgeted, false, false};
  memcpy(values, v, sizeof v);
  memcpy(nulls, n, sizeof n);
}

// ---- insert through an INSERT statement -----------------------------------------
// For jobs with unique keys (ON CONFLICT) and while the table has INSERT
// triggers besides zizq's own (see job_insert.hpp): INSERT ... SELECT FROM
// unnest of one array per column.
// budget_ids and budget_costs travel as text (arrays of arrays cannot be
// ragged) and are cast back.

const char *insert_sql(bool unique_keys) {
  StringInfoData s;
  initStringInfo(&s);
  appendStringInfoString(&s, "INSERT INTO zizq._jobs (");
  for (int k = 0; k < kRowColumnCount; ++k) appendStringInfo(&s, "%s%s", k ? ", " : "", kRowColumns[k].name);
  appendStringInfoString(&s, ") SELECT ");
  for (int k = 0; k < kRowColumnCount; ++k)
    appendStringInfo(&s, "%sc%d%s", k ? ", " : "", k + 1, kRowColumns[k].type == INT4ARRAYOID ? "::integer[]" : "");
  appendStringInfoString(&s, " FROM unnest(");
  for (int k = 0; k < kRowColumnCount; ++k) appendStringInfo(&s, "%s$%d", k ? ", " : "", k + 1);
  appendStringInfoString(&s, ") AS u(");
  for (int k = 0; k < kRowColumnCount; ++k) appendStringInfo(&s, "%sc%d", k ? ", " : "", k + 1);
  appendStringInfoString(&s, ") ");
  if (unique_keys) appendStringInfoString(&s, "ON CONFLICT (unique_hold) WHERE unique_hold IS NOT NULL DO NOTHING ");
  appendStringInfoString(&s, "RETURNING " ZIZQ_JOB_COLUMNS);
  return s.data;
}

Oid spi_element_type(Oid type) { return type == INT4ARRAYOID ? TEXTOID : type; }

SPIPlanPtr insert_plan(bool unique_keys) {
  SPIPlanPtr &slot = unique_keys ? insert_unique_plan : insert_plain_plan;
  if (slot != nullptr) return slot;
  Oid types[kRowColumnCount];
  for (int k = 0; k < kRowColumnCount; ++k) types[k] = get_array_type(spi_element_type(kRowColumns[k].type));
  return prepared(slot, insert_sql(unique_keys), types, kRowColumnCount);
}

uint64 insert_rows_by_statement(JobInput *jobs, int n, bool unique_keys, Oid caller) {
  Datum *column_values[kRowColumnCount];
  bool *column_nulls[kRowColumnCount];
  for (int k = 0; k < kRowColumnCount; ++k) column_values[k] = alloc_n<Datum>(n), column_nulls[k] = alloc_n<bool>(n);
  for (int i = 0; i < n; ++i) {
    Datum v[kRowColumnCount];
    bool nl[kRowColumnCount];
    row_values(jobs[i], caller, v, nl);
    for (int k = 0; k < kRowColumnCount; ++k) {
      if (kRowColumns[k].type == INT4ARRAYOID && !nl[k])
        v[k] = CStringGetTextDatum(OidOutputFunctionCall(F_ARRAY_OUT, v[k]));
      column_values[k][i] = v[k];
      column_nulls[k][i] = nl[k];
    }
  }
  Datum args[kRowColumnCount];
  for (int k = 0; k < kRowColumnCount; ++k) {
    Oid type = spi_element_type(kRowColumns[k].type);
    int16 len;
    bool byval;
    char align;
    get_typlenbyvalalign(type, &len, &byval, &align);
    int dims[1] = {n}, lbs[1] = {1};
    args[k] = PointerGetDatum(
        construct_md_array(column_values[k], column_nulls[k], 1, dims, lbs, type, len, byval, align));
  }
  return run_plan(insert_plan(unique_keys), args, nullptr, false);
}

// Whether `caller` could read a job that `enqueued_by` enqueued: the row
// security of zizq._jobs (its current_user is the caller), asked in C since
// this call reads the table as its owner.
bool caller_may_read(Oid caller, Oid enqueued_by) {
  if (caller == enqueued_by || superuser_arg(caller)) return true;
  Oid admin = get_role_oid("zizq_admin", true);
  return OidIsValid(admin) && has_privs_of_role(caller, admin);
}

// The job holding `unique_key`, as a zizq.job with duplicate = true; only
// its id and unique key when the caller may not read it (another
// producer's job: its payload is not the caller's to see).
HeapTuple unique_holder(const char *unique_key, Oid caller, MemoryContext out) {
  prepared(holder_plan, "SELECT " ZIZQ_JOB_COLUMNS ", enqueued_by FROM zizq._jobs WHERE unique_hold = $1",
           {TEXTOID});
  Datum args[1] = {CStringGetTextDatum(unique_key)};
  if (run_plan(holder_plan, args, nullptr, false, 1) == 0) return nullptr;
  bool isnull = false;
  Datum owner = column(0, kJobColumns + 1, &isnull);
  bool readable = !isnull && caller_may_read(caller, DatumGetObjectId(owner));
  MemoryContext old = MemoryContextSwitchTo(out);
  HeapTuple t = job_tuple_from_spi(0, 1, true);
  if (!readable) t = job_tuple_id_only(t);
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

// Up to this many rows are built before each table_multi_insert.
constexpr int kInsertBatch = 1000;

// Inserts the jobs (none with a unique key) through `ins`; results[i] gets
// job i's row, formed in `out`.
void insert_directly(JobInsert *ins, JobInput *jobs, int n, HeapTuple *results, bool *inserted, MemoryContext out,
                     Oid caller) {
  AttrNumber job_columns[kJobColumns];
  job_columns_of(job_insert_desc(ins), job_columns);
  const AttrNumber id_column = job_columns[0];  // ZIZQ_JOB_COLUMNS starts with id
  int first = 0;
  for (int i = 0; i < n; ++i) {
    Datum values[kRowColumnCount];
    bool nulls[kRowColumnCount];
    row_values(jobs[i], caller, values, nulls);
    add_job_row(ins, values, nulls);
    if (!job_insert_full(ins) && i < n - 1) continue;
    int stored = flush_job_rows(ins);
    for (int r = 0; r < stored; ++r) {
      TupleTableSlot *row = job_insert_row(ins, r);
      jobs[first + r].id = DatumGetInt64(row->tts_values[id_column - 1]);
      MemoryContext old = MemoryContextSwitchTo(out);
      results[first + r] = job_tuple_from_row(row->tts_values, row->tts_isnull, job_columns, false);
      MemoryContextSwitchTo(old);
      inserted[first + r] = true;
    }
    first += stored;
  }
  end_job_insert(ins);
}

// The rows an INSERT statement returned, in insertion (id) order: a job
// skipped as a duplicate is the one whose unique key does not come next.
void take_returned_rows(JobInput *jobs, int n, uint64 rows, HeapTuple *results, bool *inserted, MemoryContext out) {
  uint64 r = 0;
  for (int i = 0; i < n && r < rows; ++i) {
    char *key = column_text(r, 12);
    bool match = (jobs[i].unique_key == nullptr) || (key != nullptr && strcmp(key, jobs[i].unique_key) == 0);
    if (!match) continue;
    MemoryContext old = MemoryContextSwitchTo(out);
    results[i] = job_tuple_from_spi(r, 1, false);
    MemoryContextSwitchTo(old);
    jobs[i].id = column_int64(r, 1);
    inserted[i] = true;
    ++r;
  }
  // A job without a unique key is always stored, unless a BEFORE trigger
  // on zizq._jobs skipped its row: then rows and jobs no longer pair up.
  bool all_paired = r == rows;
  for (int i = 0; i < n && all_paired; ++i) all_paired = inserted[i] || jobs[i].unique_key != nullptr;
  if (!all_paired)
    ereport(ERROR, (errcode(ERRCODE_TRIGGERED_ACTION_EXCEPTION),
                    errmsg("a trigger on zizq._jobs skipped rows of this enqueue: %d of its %d jobs were stored",
                           static_cast<int>(rows), n),
                    errhint("INSERT triggers on zizq._jobs must store every job (return NEW)")));
}

// Inserts the jobs as enqueued by `caller`; results[i] gets job i's row
// (inserted, or the existing unique job as a duplicate), formed in `out`.
void insert_jobs(JobInput *jobs, int n, HeapTuple *results, MemoryContext out, Oid caller) {
  require_shared();
  if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "zizq: SPI_connect failed");
  Bindings *all = alloc_n<Bindings>(n);
  for (int i = 0; i < n; ++i) all[i] = jobs[i].bindings;
  resolve_bindings(all, n, describe_input, jobs);
  Promised *promised = alloc_n<Promised>(n * core::kMaxBindings);
  int npromised = 0;
  bool unique_keys = false;
  TimestampTz now = GetCurrentTimestamp();
  for (int i = 0; i < n; ++i) {
    JobInput &j = jobs[i];
    j.bindings = all[i];
    if (!j.has_ready_at) j.ready_at = now;
    j.scheduled = j.ready_at > now;
    j.parked = !j.scheduled && j.bindings.n > 0 && must_park(j, promised, &npromised);
    unique_keys = unique_keys || j.unique_key != nullptr;
  }
  bool *inserted = alloc_n<bool>(n);
  begin_own_insert();
  const char *names[kRowColumnCount];
  for (int k = 0; k < kRowColumnCount; ++k) names[k] = kRowColumns[k].name;
  bool by_statement = unique_keys || !guc_direct_enqueue;
  JobInsert *direct = by_statement ? nullptr : begin_job_insert(names, kRowColumnCount, ZZ_MIN(n, kInsertBatch));
  if (direct != nullptr)
    insert_directly(direct, jobs, n, results, inserted, out, caller);
  else
    take_returned_rows(jobs, n, insert_rows_by_statement(jobs, n, unique_keys, caller), results, inserted, out);
  end_own_insert();
  after_insert(jobs, inserted, n);
  for (int i = 0; i < n; ++i) {
    if (inserted[i]) continue;
    results[i] = unique_holder(jobs[i].unique_key, caller, out);
    if (results[i] == nullptr)
      ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                      errmsg("the job holding unique key \"%s\" changed while %s was enqueued", jobs[i].unique_key,
                             jobs[i].label),
                      errhint("retry the enqueue")));
  }
  SPI_finish();
}

// enqueue and enqueue_many are SECURITY INVOKER so that they know who
// called: current_user at entry, the role the row security of zizq._jobs
// sees (the job's owner, and whose jobs a duplicate may show). They then
// run as the function's owner, as SECURITY DEFINER would (GetOuterUserId
// is the session's role, not the caller inside another SECURITY DEFINER
// function). An error needs no switch back: the (sub)transaction's abort
// restores the user, as it does for SECURITY DEFINER.
struct Caller {
  Oid user;
  int sec_context;
};

Caller become_function_owner(FunctionCallInfo fcinfo) {
  Caller caller;
  GetUserIdAndSecContext(&caller.user, &caller.sec_context);
  HeapTuple proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(fcinfo->flinfo->fn_oid));
  if (!HeapTupleIsValid(proc)) elog(ERROR, "zizq: function %u not found", fcinfo->flinfo->fn_oid);
  Oid owner = reinterpret_cast<Form_pg_proc>(GETSTRUCT(proc))->proowner;
  ReleaseSysCache(proc);
  SetUserIdAndSecContext(owner, caller.sec_context | SECURITY_LOCAL_USERID_CHANGE);
  return caller;
}

void back_to_caller(const Caller &caller) { SetUserIdAndSecContext(caller.user, caller.sec_context); }

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
    // 'infinity' would schedule the job for never; '-infinity' reads as now
    // nowhere else either.
    if (TIMESTAMP_NOT_FINITE(job.ready_at))
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("ready_at must be a finite timestamp, not %s", timestamptz_to_str(job.ready_at)),
                      errhint("pass NULL to run the job now")));
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
  Caller caller = become_function_owner(fcinfo);
  insert_jobs(&job, 1, &result, CurrentMemoryContext, caller.user);
  back_to_caller(caller);
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
  Caller caller = become_function_owner(fcinfo);
  insert_jobs(jobs, n, results, rsinfo->econtext->ecxt_per_query_memory, caller.user);
  back_to_caller(caller);
  for (int i = 0; i < n; ++i) tuplestore_puttuple(rsinfo->setResult, results[i]);
  return (Datum)0;
}

}  // extern "C"
