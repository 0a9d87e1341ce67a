// zizq boundary: one job taken without an UPDATE statement (see
// job_take.hpp). The steps are those of take_one_statement's plan: a
// primary-key probe under a fresh snapshot, ExecLockRows's
// table_tuple_lock, ExecUpdate's BEFORE row rules, constraint check,
// table_tuple_update, ExecInsertIndexTuples and AFTER row triggers.
#include "pg/job_take.hpp"
#include "pg/job_row.hpp"
#include "pg/job_write.hpp"
#include "pg/triggers.hpp"

extern "C" {
#include "access/genam.h"
#include "access/stratnum.h"
#include "access/sysattr.h"
#include "access/tableam.h"
#include "access/xlog.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_trigger.h"
#include "executor/executor.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/rls.h"
#include "utils/syscache.h"
}

namespace zizq::pg {
namespace {

int64 direct_takes = 0;  // this backend's, rolled back or not (zizq._direct_takes)

// The zizq._jobs columns a take sets or reads, by attribute number, and
// those of the zizq.job row it returns.
struct TakeColumns {
  AttrNumber status, parked, session_id, lease_ms, lease_until, unique_hold, unique_while, dequeued_at, queue;
  AttrNumber job[kJobColumns];
};

TakeColumns take_columns(TupleDesc desc) {
  TakeColumns c{job_column(desc, "status"),      job_column(desc, "parked"),
                job_column(desc, "session_id"),  job_column(desc, "lease_ms"),
                job_column(desc, "lease_until"), job_column(desc, "unique_hold"),
                job_column(desc, "unique_while"), job_column(desc, "dequeued_at"),
                job_column(desc, "queue"),       {}};
  job_columns_of(desc, c.job);
  return c;
}

// The columns the statement's SET names, as the executor records them
// (for AFTER UPDATE OF triggers and the indexes' "unchanged" hints).
Bitmapset *set_columns(const TakeColumns &c) {
  Bitmapset *cols = nullptr;
  for (AttrNumber a : {c.status, c.parked, c.session_id, c.lease_ms, c.lease_until, c.unique_hold, c.dequeued_at})
    cols = bms_add_member(cols, a - FirstLowInvalidHeapAttributeNumber);
  return cols;
}

// Whether the columns the take sets, reads and returns have the types zizq
// gave them: a column altered to a domain (whose checks the statement's
// assignment would run) or to another type needs the statement (whose
// row a take checks against zizq.job's, raising if it differs).
bool columns_as_made(TupleDesc desc, const TakeColumns &c) {
  auto is = [&](AttrNumber a, Oid type) { return TupleDescAttr(desc, a - 1)->atttypid == type; };
  return is(c.status, TEXTOID) && is(c.parked, BOOLOID) && is(c.session_id, INT8OID) && is(c.lease_ms, INT8OID) &&
         is(c.lease_until, TIMESTAMPTZOID) && is(c.unique_hold, TEXTOID) && is(c.unique_while, TEXTOID) &&
         is(c.dequeued_at, TIMESTAMPTZOID) && is(c.queue, TEXTOID) && job_columns_match(desc, c.job);
}

// Whether the backend's state lets the take go without a statement: where
// the statement would raise (read-only, recovery, parallel mode) it must
// raise, and under a transaction snapshot the statement's serialization
// checks apply.
bool plain_read_committed_write() {
  return guc_direct_take && !XactReadOnly && !RecoveryInProgress() && !IsInParallelMode() &&
         !IsolationUsesXactSnapshot() && SessionReplicationRole == SESSION_REPLICATION_ROLE_ORIGIN;
}

// The statement's rights, checked without raising: a caller who lacks
// them goes to the statement, which raises as it always did.
bool has_take_rights(Oid relid) {
  AclMode wanted = ACL_SELECT | ACL_UPDATE;
  return pg_class_aclmask(relid, GetUserId(), wanted, ACLMASK_ALL) == wanted &&
         check_enable_rls(relid, InvalidOid, true) != RLS_ENABLED;
}

// Whether `t` is zizq's job_update, calling the C function whose rules
// job_update_rules are (not a user's trigger of that name). The function
// found last is remembered.
bool is_zizq_job_update(const Trigger &t) {
  static Oid known = InvalidOid;
  if (strcmp(t.tgname, "job_update") != 0) return false;
  if (t.tgfoid == known) return true;
  HeapTuple proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(t.tgfoid));
  if (!HeapTupleIsValid(proc)) return false;
  bool isnull = false;
  Datum src = SysCacheGetAttr(PROCOID, proc, Anum_pg_proc_prosrc, &isnull);
  bool ours = !isnull && reinterpret_cast<Form_pg_proc>(GETSTRUCT(proc))->prolang == ClanguageId &&
              strcmp(TextDatumGetCString(src), "zizq_trg_job_update") == 0;
  ReleaseSysCache(proc);
  if (ours) known = t.tgfoid;
  return ours;
}

// Triggers on UPDATE fire here as after the statement when they are zizq's
// job_update (its rules are applied in place, so it must be enabled as
// shipped) or AFTER row triggers without transition tables. Anything else
// an UPDATE would fire needs the statement.
bool triggers_fire_as_the_statement_would(const TriggerDesc *d) {
  if (d == nullptr) return false;  // zizq's own job_update is gone: the statement says what happens
  if (d->trig_update_before_statement || d->trig_update_after_statement || d->trig_update_instead_row ||
      d->trig_update_old_table || d->trig_update_new_table)
    return false;
  bool rules_trigger = false;
  for (int i = 0; i < d->numtriggers; ++i) {
    const Trigger &t = d->triggers[i];
    if (!TRIGGER_FOR_UPDATE(t.tgtype) || !TRIGGER_FOR_ROW(t.tgtype) || TRIGGER_FOR_AFTER(t.tgtype)) continue;
    if (!is_zizq_job_update(t) || t.tgenabled != TRIGGER_FIRES_ON_ORIGIN || t.tgqual != nullptr ||
        t.tgnattr != 0)
      return false;
    rules_trigger = true;
  }
  return rules_trigger;
}

// Whether an UPDATE of the opened table would do no more than the direct
// take does.
bool updated_as_the_statement_would(const ResultRelInfo *rri, const TakeColumns &cols) {
  Relation rel = rri->ri_RelationDesc;
  TupleDesc desc = RelationGetDescr(rel);
  return triggers_fire_as_the_statement_would(rri->ri_TrigDesc) && rel->rd_rules == nullptr &&
         !(desc->constr != nullptr && desc->constr->has_generated_stored) && columns_as_made(desc, cols);
}

// The open primary-key index, if it is the one-column bigint key zizq made.
Relation primary_key(const ResultRelInfo *rri) {
  Oid pk = RelationGetPrimaryKeyIndex(rri->ri_RelationDesc);
  for (int i = 0; i < rri->ri_NumIndices; ++i) {
    Relation index = rri->ri_IndexRelationDescs[i];
    if (RelationGetRelid(index) == pk && IndexRelationGetNumberOfKeyAttributes(index) == 1 &&
        TupleDescAttr(RelationGetDescr(index), 0)->atttypid == INT8OID)
      return index;
  }
  return nullptr;
}

// The job's row version visible to `snapshot`, into `slot`.
bool fetch_job(Relation rel, Relation pk, int64 id, Snapshot snapshot, TupleTableSlot *slot) {
  ScanKeyData key;
  ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(id));
  IndexScanDesc scan = index_beginscan(rel, pk, snapshot, 1, 0);
  index_rescan(scan, &key, 1, nullptr, 0);
  bool found = index_getnext_slot(scan, ForwardScanDirection, slot);
  index_endscan(scan);
  return found;
}

bool column_is(const TupleTableSlot *slot, AttrNumber att, const char *value) {
  return !slot->tts_isnull[att - 1] && text_is(slot->tts_values[att - 1], value);
}

// The version the offer or the walk read, still ready.
bool is_seen_ready_version(TupleTableSlot *slot, TransactionId seen, const TakeColumns &c) {
  bool isnull = false;
  Datum xmin = slot_getsysattr(slot, MinTransactionIdAttributeNumber, &isnull);
  if (isnull || DatumGetTransactionId(xmin) != seen) return false;
  slot_getallattrs(slot);
  return column_is(slot, c.status, "ready");
}

// FOR UPDATE SKIP LOCKED on that version: false when another transaction
// holds the row or a committed one changed it since.
bool lock_version(Relation rel, ItemPointer tid, EState *estate, TupleTableSlot *locked) {
  TM_FailureData tmfd;
  TM_Result r = table_tuple_lock(rel, tid, estate->es_snapshot, locked, estate->es_output_cid, LockTupleExclusive,
                                 LockWaitSkip, 0, &tmfd);
  switch (r) {
    case TM_Ok:
      return true;
    case TM_WouldBlock:
    case TM_Updated:
    case TM_Deleted:
    case TM_SelfModified:
      return false;
    default:
      elog(ERROR, "zizq: unexpected result %d locking job version", static_cast<int>(r));
  }
}

// The new version's values: the statement's SET (ZIZQ_TAKE_SET in
// dequeue.cpp) applied to the locked version's.
HeapTuple taken_version(TupleTableSlot *locked, const TakeColumns &c, const TakeRequest &req) {
  TupleDesc desc = locked->tts_tupleDescriptor;
  slot_getallattrs(locked);
  Datum *values = static_cast<Datum *>(palloc(sizeof(Datum) * desc->natts));
  bool *nulls = static_cast<bool *>(palloc(sizeof(bool) * desc->natts));
  memcpy(values, locked->tts_values, sizeof(Datum) * desc->natts);
  memcpy(nulls, locked->tts_isnull, sizeof(bool) * desc->natts);
  auto set = [&](AttrNumber a, Datum v, bool null) {
    values[a - 1] = null ? 0 : v;
    nulls[a - 1] = null;
  };
  set(c.status, CStringGetTextDatum("in_flight"), false);
  set(c.parked, BoolGetDatum(false), false);
  set(c.session_id, Int64GetDatum(req.session), req.leased);
  set(c.lease_ms, Int64GetDatum(req.lease_ms), !req.leased);
  set(c.lease_until, TimestampTzGetDatum(GetCurrentTimestamp() + req.lease_ms * 1000), !req.leased);
  if (column_is(locked, c.unique_while, "queued")) set(c.unique_hold, 0, true);
  set(c.dequeued_at, TimestampTzGetDatum(req.paid_at == DT_NOBEGIN ? GetCurrentTimestamp() : req.paid_at), false);
  return heap_form_tuple(desc, values, nulls);
}

bool has_after_row_triggers(const ResultRelInfo *rri) {
  return rri->ri_TrigDesc != nullptr && rri->ri_TrigDesc->trig_update_after_row;
}

// Stores the new version of the locked row as ExecUpdate would: BEFORE
// row rules, constraints, the heap update, index entries, AFTER row
// triggers queued. Returns the slot holding the stored version.
TupleTableSlot *update_version(ResultRelInfo *rri, EState *estate, TupleTableSlot *locked, HeapTuple new_tuple) {
  Relation rel = rri->ri_RelationDesc;
  bool should_free = false;
  HeapTuple old_tuple = ExecFetchSlotHeapTuple(locked, false, &should_free);
  new_tuple = job_update_rules(rel, old_tuple, new_tuple);
  TupleTableSlot *slot = ExecAllocTableSlot(&estate->es_tupleTable, RelationGetDescr(rel), &TTSOpsHeapTuple);
  ExecStoreHeapTuple(new_tuple, slot, false);
  slot->tts_tableOid = RelationGetRelid(rel);  // as ExecUpdate sets it, for a CHECK reading tableoid
  if (rel->rd_att->constr != nullptr) ExecConstraints(rri, slot, estate);
  ItemPointerData old_tid = locked->tts_tid;
  TM_FailureData tmfd;
  LockTupleMode lockmode;
  bool update_indexes = false;
  TM_Result r = table_tuple_update(rel, &old_tid, slot, estate->es_output_cid, estate->es_snapshot, InvalidSnapshot,
                                   true, &tmfd, &lockmode, &update_indexes);
  if (r != TM_Ok) elog(ERROR, "zizq: update of a locked job version failed (%d)", static_cast<int>(r));
  List *recheck = NIL;
  if (update_indexes && rri->ri_NumIndices > 0)
    recheck = ExecInsertIndexTuples(rri, slot, estate, true, false, nullptr, NIL);
  if (has_after_row_triggers(rri))
    ExecARUpdateTriggers(estate, rri, nullptr, nullptr, &old_tid, nullptr, slot, recheck, nullptr, false);
  list_free(recheck);
  return slot;
}

struct TakeContext {
  EState *estate;
  ResultRelInfo *rri;
  bool after_triggers;  // an AFTER trigger query level is open
};

TakeContext open_take(Oid relid) {
  begin_direct_write();
  EState *estate = CreateExecutorState();
  MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);
  ResultRelInfo *rri = open_result_relation(estate, relid, ACL_SELECT | ACL_UPDATE);
  MemoryContextSwitchTo(old);
  return TakeContext{estate, rri, false};
}

void close_take(TakeContext &t) {
  if (t.after_triggers) AfterTriggerEndQuery(t.estate);  // fires them
  close_executor_state(t.estate);
  end_direct_write();
}

}  // namespace

DirectTake take_job_directly(const TakeRequest &req, HeapTuple *job, char **queue) {
  if (req.seen == InvalidTransactionId || !plain_read_committed_write()) return DirectTake::kByStatement;
  Oid relid = jobs_relid();
  if (!has_take_rights(relid)) return DirectTake::kByStatement;
  MemoryContext caller = CurrentMemoryContext;
  TakeContext t = open_take(relid);
  Relation rel = t.rri->ri_RelationDesc;
  TakeColumns cols = take_columns(RelationGetDescr(rel));
  Relation pk = primary_key(t.rri);
  if (!updated_as_the_statement_would(t.rri, cols) || pk == nullptr) {
    close_take(t);
    return DirectTake::kByStatement;
  }
  // What ExecInitModifyTable refuses, refused as it does (an UPDATE of a
  // table published without a replica identity).
  CheckValidResultRel(t.rri, CMD_UPDATE);
  EState *estate = t.estate;
  MemoryContextSwitchTo(estate->es_query_cxt);
  exec_rt_fetch(1, estate)->updatedCols = set_columns(cols);
  // As SPI runs a statement that writes: the transaction's earlier
  // commands seen, a snapshot of its own.
  CommandCounterIncrement();
  PushActiveSnapshot(GetTransactionSnapshot());
  estate->es_snapshot = GetActiveSnapshot();
  estate->es_output_cid = GetCurrentCommandId(true);
  if (has_after_row_triggers(t.rri)) {
    AfterTriggerBeginQuery();
    t.after_triggers = true;
  }
  TupleTableSlot *seen = table_slot_create(rel, &estate->es_tupleTable);
  TupleTableSlot *locked = table_slot_create(rel, &estate->es_tupleTable);
  DirectTake outcome = DirectTake::kNotTaken;
  if (fetch_job(rel, pk, req.id, estate->es_snapshot, seen) && is_seen_ready_version(seen, req.seen, cols)) {
    ItemPointerData tid = seen->tts_tid;
    if (lock_version(rel, &tid, estate, locked)) {
      TupleTableSlot *stored = update_version(t.rri, estate, locked, taken_version(locked, cols, req));
      slot_getallattrs(stored);
      MemoryContextSwitchTo(caller);
      *job = job_tuple_from_row(stored->tts_values, stored->tts_isnull, cols.job, false);
      *queue = TextDatumGetCString(stored->tts_values[cols.queue - 1]);
      outcome = DirectTake::kTaken;
      ++direct_takes;
    }
  }
  MemoryContextSwitchTo(caller);
  close_take(t);
  PopActiveSnapshot();
  // Later commands of the transaction see the new version.
  CommandCounterIncrement();
  return outcome;
}

}  // namespace zizq::pg

// zizq._direct_takes(): how many jobs this backend has taken without a
// statement since it started (for tests and diagnosis).
extern "C" {
PG_FUNCTION_INFO_V1(zizq_direct_takes);
Datum zizq_direct_takes(PG_FUNCTION_ARGS) { PG_RETURN_INT64(zizq::pg::direct_takes); }
}
