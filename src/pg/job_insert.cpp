// zizq boundary: new zizq._jobs rows without an INSERT statement (see
// job_insert.hpp). The steps are those of COPY FROM's multi-insert buffer
// (src/backend/commands/copyfrom.c), for one table and without triggers.
#include "pg/job_insert.hpp"
#include "pg/job_row.hpp"
#include "pg/job_write.hpp"

extern "C" {
#include "access/genam.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_trigger.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "rewrite/rewriteHandler.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

namespace zizq::pg {

struct JobInsert {
  EState *estate;
  ResultRelInfo *rri;
  Relation rel;
  int ncolumns;
  AttrNumber *attnums;    // the caller's column k is attribute attnums[k]
  ExprState **defaults;   // per attribute the caller does not give: its default, or nullptr (NULL)
  TupleDesc slot_desc;    // the table's, not reference-counted
  TupleTableSlot **slots;
  int capacity;
  int used;
};

namespace {

// Triggers on INSERT other than zizq's own jobs_inserted and
// job_inserted_live (whose work the caller does) must fire, row or
// statement ones, a user's audit trigger as much as a foreign key's.
bool has_other_insert_triggers(const ResultRelInfo *rri) {
  const TriggerDesc *desc = rri->ri_TrigDesc;
  for (int i = 0; desc != nullptr && i < desc->numtriggers; ++i) {
    const Trigger &t = desc->triggers[i];
    if (TRIGGER_FOR_INSERT(t.tgtype) && strcmp(t.tgname, "jobs_inserted") != 0 &&
        strcmp(t.tgname, "job_inserted_live") != 0)
      return true;
  }
  return false;
}

// Whether rows built here would be stored as an INSERT would store them.
// Not when something a user added to the table acts on an INSERT: a
// trigger, a rule, forced row security, a stored generated column (its
// expression reads the row), or a column of a domain type left to its
// default (the planner would coerce the NULL through the domain's checks).
// Such a table takes its rows through an INSERT statement instead.
bool stored_as_an_insert_would(const ResultRelInfo *rri, const bool *given) {
  Relation rel = rri->ri_RelationDesc;
  if (has_other_insert_triggers(rri) || rel->rd_rules != nullptr || rel->rd_rel->relforcerowsecurity) return false;
  TupleDesc desc = RelationGetDescr(rel);
  if (desc->constr != nullptr && desc->constr->has_generated_stored) return false;
  for (int a = 0; a < desc->natts; ++a) {
    Form_pg_attribute att = TupleDescAttr(desc, a);
    if (!given[a] && !att->attisdropped && get_typtype(att->atttypid) == TYPTYPE_DOMAIN) return false;
  }
  return true;
}

// ---- what one call leaves to the next -------------------------------------------
// A single enqueue spent about a tenth of its CPU making again what the
// previous one had made: each index's IndexInfo (BuildIndexInfo copies its
// expressions and predicate), the partial indexes' predicates compiled
// (ExecPrepareQual, at the first row), the columns' defaults read from the
// catalog and parsed. They are kept per backend, in a context of their own,
// for the role that made them, until a relcache invalidation names
// zizq._jobs or one of its indexes (an index created, dropped, made ready
// or rebuilt, a default changed, the table altered) or everything. An
// invalidation only marks them stale: it may arrive while a call uses them
// (at a lock taken mid-call); the next call that starts with none in
// progress makes them anew. What an index AM caches per statement in an
// IndexInfo (ii_AmCache: GIN's, GiST's, BRIN's state) is still made per
// call, in the call's executor state, and so are the compiled expressions
// of an index whose expressions could cache per-statement data in them
// (compiled_per_call). A call that starts while another is in progress in
// this backend (a user's function run by the insert, calling enqueue), or
// after one that raised an error in the same transaction, makes its own,
// as before. Not seen: a function called by a default or an index
// expression redefined (the expressions are folded when compiled; an index
// whose function changes needs a REINDEX anyway, which is seen).
struct Kept {
  MemoryContext cxt;  // nullptr: nothing kept
  bool complete;      // made to the end (an error may stop the making)
  bool stale;
  Oid relid;
  Oid user;          // the role whose rights the compiling checked
  EState *compiled;  // its query context holds the compiled expressions
  int nindexes;
  Oid *index_oids;    // in the order of RelationGetIndexList
  IndexInfo **infos;  // predicates and expressions compiled where keep_states
  bool *keep_states;
  int natts;
  bool *given;           // the columns the defaults below were made for
  ExprState **defaults;  // as prepare_defaults makes them
};

Kept kept = {};
int writes_in_progress = 0;  // direct inserts and takes (job_write.hpp)

void on_relcache_invalidation(Datum, Oid relid) {
  if (kept.cxt == nullptr || kept.stale) return;
  bool ours = relid == InvalidOid || relid == kept.relid;
  for (int i = 0; i < kept.nindexes && !ours; ++i) ours = kept.index_oids[i] == relid;
  if (ours) kept.stale = true;
}

void register_invalidation_callback() {
  static bool registered = false;
  if (registered) return;
  CacheRegisterRelcacheCallback(on_relcache_invalidation, (Datum)0);
  registered = true;
}

void forget_kept() {
  if (kept.cxt != nullptr) MemoryContextDelete(kept.cxt);
  kept = Kept{};
}

// Whether this call is the only direct write in progress (and may use the
// kept state).
bool alone() { return writes_in_progress == 1; }

bool kept_usable(Relation rel) {
  return kept.cxt != nullptr && kept.complete && !kept.stale && kept.relid == RelationGetRelid(rel) &&
         kept.user == GetUserId();
}

// Whether the kept indexes are `rel`'s, in its index list's order.
bool kept_indexes_match(Relation rel, List *index_oids) {
  if (!kept_usable(rel) || list_length(index_oids) != kept.nindexes) return false;
  ListCell *cell;
  foreach (cell, index_oids)
    if (kept.index_oids[foreach_current_index(cell)] != lfirst_oid(cell)) return false;
  return true;
}

// Whether an index expression or predicate must be compiled per call
// rather than once for every later call: when it holds nodes whose
// evaluation keeps data in the statement's memory at the first row (a
// whole-row Var's descriptor, a row type conversion's map, a field of a
// composite) or reads a parameter or a sub-query. Only the plain kinds
// zizq's own indexes and most users' are made of are compiled once.
bool compiled_per_call(Node *node, void *) {
  if (node == nullptr) return false;  // (the walker's "go on")
  switch (nodeTag(node)) {
    case T_Var:
      return reinterpret_cast<Var *>(node)->varattno <= 0;
    case T_Const: case T_FuncExpr: case T_OpExpr: case T_DistinctExpr: case T_NullIfExpr:
    case T_ScalarArrayOpExpr: case T_BoolExpr: case T_NullTest: case T_BooleanTest: case T_RelabelType:
    case T_CoerceViaIO: case T_CaseExpr: case T_CaseWhen: case T_CoalesceExpr: case T_MinMaxExpr:
    case T_ArrayExpr: case T_SubscriptingRef: case T_List:
      // (PostgreSQL 15's walker type is an unprototyped C function.)
      return expression_tree_walker(
          node, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(compiled_per_call)), nullptr);
    default:
      return true;  // anything else: compiled per call
  }
}

bool may_keep_states(const IndexInfo *ii) {
  return !compiled_per_call(reinterpret_cast<Node *>(ii->ii_Predicate), nullptr) &&
         !compiled_per_call(reinterpret_cast<Node *>(ii->ii_Expressions), nullptr);
}

// The IndexInfo of each of rel's open indexes, made in the kept context
// with what ExecInsertIndexTuples would otherwise compile at each call.
void keep_indexes(Relation rel, List *index_oids, const RelationPtr descs) {
  forget_kept();
  kept.cxt = AllocSetContextCreate(TopMemoryContext, "zizq kept insert state", ALLOCSET_SMALL_SIZES);
  MemoryContext old = MemoryContextSwitchTo(kept.cxt);
  kept.relid = RelationGetRelid(rel);
  kept.user = GetUserId();
  kept.compiled = CreateExecutorState();
  int n = list_length(index_oids);
  kept.index_oids = static_cast<Oid *>(palloc0(sizeof(Oid) * ZZ_MAX(n, 1)));
  kept.infos = static_cast<IndexInfo **>(palloc0(sizeof(IndexInfo *) * ZZ_MAX(n, 1)));
  kept.keep_states = static_cast<bool *>(palloc0(sizeof(bool) * ZZ_MAX(n, 1)));
  kept.nindexes = n;
  ListCell *cell;
  foreach (cell, index_oids) {
    int i = foreach_current_index(cell);
    IndexInfo *ii = BuildIndexInfo(descs[i]);
    kept.keep_states[i] = may_keep_states(ii);
    if (kept.keep_states[i] && ii->ii_Predicate != NIL)
      ii->ii_PredicateState = ExecPrepareQual(ii->ii_Predicate, kept.compiled);
    if (kept.keep_states[i] && ii->ii_Expressions != NIL)
      ii->ii_ExpressionsState = ExecPrepareExprList(ii->ii_Expressions, kept.compiled);
    kept.index_oids[i] = lfirst_oid(cell);
    kept.infos[i] = ii;
  }
  kept.complete = true;  // last: an error above leaves it unusable
  MemoryContextSwitchTo(old);
}

// ExecOpenIndices, with the IndexInfos kept from call to call when it may.
void open_indexes(ResultRelInfo *rri) {
  Relation rel = rri->ri_RelationDesc;
  rri->ri_NumIndices = 0;
  if (!RelationGetForm(rel)->relhasindex) return;
  register_invalidation_callback();
  if (!alone()) {
    ExecOpenIndices(rri, false);
    return;
  }
  List *index_oids = RelationGetIndexList(rel);
  int n = list_length(index_oids);
  if (n == 0) return;
  RelationPtr descs = static_cast<RelationPtr>(palloc(sizeof(Relation) * n));
  ListCell *cell;
  foreach (cell, index_oids) descs[foreach_current_index(cell)] = index_open(lfirst_oid(cell), RowExclusiveLock);
  if (!kept_indexes_match(rel, index_oids)) keep_indexes(rel, index_oids, descs);
  IndexInfo **infos = static_cast<IndexInfo **>(palloc(sizeof(IndexInfo *) * n));
  for (int i = 0; i < n; ++i) {
    infos[i] = kept.infos[i];
    // What the executor and the AM make per statement goes with this
    // call's executor state.
    infos[i]->ii_AmCache = nullptr;
    infos[i]->ii_Context = CurrentMemoryContext;
    if (!kept.keep_states[i]) {
      infos[i]->ii_PredicateState = nullptr;
      infos[i]->ii_ExpressionsState = NIL;
    }
  }
  rri->ri_NumIndices = n;
  rri->ri_IndexRelationDescs = descs;
  rri->ri_IndexRelationInfo = infos;
  list_free(index_oids);
}

// attnums[k] is columns[k]'s attribute; given[a]: attribute a+1 is one of them.
void find_columns(TupleDesc desc, const char *const *columns, int ncolumns, AttrNumber *attnums, bool *given) {
  for (int k = 0; k < ncolumns; ++k) {
    attnums[k] = job_column(desc, columns[k]);
    given[attnums[k] - 1] = true;
  }
}

// The default of every attribute the caller does not give (nullptr: none).
ExprState **prepare_defaults(Relation rel, const bool *given, EState *estate) {
  TupleDesc desc = RelationGetDescr(rel);
  ExprState **defaults = static_cast<ExprState **>(palloc0(sizeof(ExprState *) * desc->natts));
  for (int a = 0; a < desc->natts; ++a) {
    if (given[a] || TupleDescAttr(desc, a)->attisdropped) continue;
    Node *expr = build_column_default(rel, a + 1);
    if (expr != nullptr) defaults[a] = ExecPrepareExpr(reinterpret_cast<Expr *>(expr), estate);
  }
  return defaults;
}

// prepare_defaults's, kept with the indexes (open_indexes made the kept
// state current for this relation) when this call may keep them.
ExprState **defaults_for(Relation rel, const bool *given, EState *estate) {
  int natts = RelationGetDescr(rel)->natts;
  if (!alone() || !kept_usable(rel)) return prepare_defaults(rel, given, estate);
  if (kept.defaults == nullptr || kept.natts != natts || memcmp(kept.given, given, sizeof(bool) * natts) != 0) {
    MemoryContext old = MemoryContextSwitchTo(kept.cxt);
    bool *kept_given = static_cast<bool *>(palloc(sizeof(bool) * natts));
    memcpy(kept_given, given, sizeof(bool) * natts);
    ExprState **defaults = prepare_defaults(rel, given, kept.compiled);
    MemoryContextSwitchTo(old);
    // Recorded once made: an error above leaves none kept.
    kept.natts = natts;
    kept.given = kept_given;
    kept.defaults = defaults;
  }
  return kept.defaults;
}

}  // namespace

void begin_direct_write() { ++writes_in_progress; }

void end_direct_write() { --writes_in_progress; }

// The result relation as the executor sets one up for an INSERT or an
// UPDATE: a range table of one entry, the relation locked and opened, its
// indexes opened.
ResultRelInfo *open_result_relation(EState *estate, Oid relid, AclMode perms) {
  LockRelationOid(relid, RowExclusiveLock);
  RangeTblEntry *rte = makeNode(RangeTblEntry);
  rte->rtekind = RTE_RELATION;
  rte->relid = relid;
  rte->relkind = RELKIND_RELATION;
  rte->rellockmode = RowExclusiveLock;
  rte->requiredPerms = perms;
  ExecInitRangeTable(estate, list_make1(rte));
  ResultRelInfo *rri = makeNode(ResultRelInfo);
  ExecInitResultRelation(estate, rri, 1);
  open_indexes(rri);
  return rri;
}

void close_executor_state(EState *estate) {
  ExecResetTupleTable(estate->es_tupleTable, false);
  ExecCloseResultRelations(estate);
  ExecCloseRangeTableRelations(estate);
  FreeExecutorState(estate);
}

JobInsert *begin_job_insert(const char *const *columns, int ncolumns, int capacity) {
  // What an INSERT statement checks before it runs.
  PreventCommandIfReadOnly("INSERT");
  PreventCommandDuringRecovery("INSERT");
  // The privilege is checked without ExecCheckRTPerms: its hook
  // (ExecutorCheckPerms_hook) expects a statement of its own around the
  // check, and pgaudit's, called from here, records this insert into the
  // caller's statement and later reads memory freed with this executor
  // state (see docs/engineering-notes.md). Audit setups turn
  // zizq.direct_enqueue off.
  Oid relid = jobs_relid();
  AclResult acl = pg_class_aclcheck(relid, GetUserId(), ACL_INSERT);
  if (acl != ACLCHECK_OK) aclcheck_error(acl, OBJECT_TABLE, get_rel_name(relid));
  begin_direct_write();
  EState *estate = CreateExecutorState();
  MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);
  ResultRelInfo *rri = open_result_relation(estate, relid, ACL_INSERT);
  TupleDesc desc = RelationGetDescr(rri->ri_RelationDesc);
  bool *given = static_cast<bool *>(palloc0(sizeof(bool) * desc->natts));
  AttrNumber *attnums = static_cast<AttrNumber *>(palloc(sizeof(AttrNumber) * ncolumns));
  find_columns(desc, columns, ncolumns, attnums, given);
  if (!stored_as_an_insert_would(rri, given)) {
    MemoryContextSwitchTo(old);
    close_executor_state(estate);
    end_direct_write();
    return nullptr;
  }
  JobInsert *ins = static_cast<JobInsert *>(palloc0(sizeof(JobInsert)));
  ins->estate = estate;
  ins->rri = rri;
  ins->rel = rri->ri_RelationDesc;
  ins->ncolumns = ncolumns;
  ins->attnums = attnums;
  ins->defaults = defaults_for(ins->rel, given, estate);
  // Slots of a reference-counted descriptor (the relation's) register
  // with the resource owner one by one, and forgetting 1,000 of them cost
  // as much as making their index entries.
  ins->slot_desc = CreateTupleDescCopy(desc);
  ins->capacity = capacity;
  ins->slots = static_cast<TupleTableSlot **>(palloc0(sizeof(TupleTableSlot *) * capacity));
  MemoryContextSwitchTo(old);
  return ins;
}

TupleDesc job_insert_desc(const JobInsert *ins) { return RelationGetDescr(ins->rel); }

bool job_insert_full(const JobInsert *ins) { return ins->used == ins->capacity; }

void add_job_row(JobInsert *ins, const Datum *values, const bool *nulls) {
  if (job_insert_full(ins)) elog(ERROR, "zizq: add_job_row on a full buffer");
  if (ins->slots[ins->used] == nullptr) {
    MemoryContext old = MemoryContextSwitchTo(ins->estate->es_query_cxt);
    ins->slots[ins->used] = MakeSingleTupleTableSlot(ins->slot_desc, table_slot_callbacks(ins->rel));
    MemoryContextSwitchTo(old);
  }
  TupleTableSlot *slot = ins->slots[ins->used];
  ExecClearTuple(slot);
  int natts = slot->tts_tupleDescriptor->natts;
  // Defaults are evaluated in the per-tuple context, which lives until the
  // flush has stored the rows (table_multi_insert copies them).
  ExprContext *econtext = GetPerTupleExprContext(ins->estate);
  for (int a = 0; a < natts; ++a) {
    slot->tts_isnull[a] = true;
    if (ins->defaults[a] != nullptr)
      slot->tts_values[a] = ExecEvalExprSwitchContext(ins->defaults[a], econtext, &slot->tts_isnull[a]);
  }
  for (int k = 0; k < ins->ncolumns; ++k) {
    slot->tts_values[ins->attnums[k] - 1] = values[k];
    slot->tts_isnull[ins->attnums[k] - 1] = nulls[k];
  }
  ExecStoreVirtualTuple(slot);
  slot->tts_tableOid = RelationGetRelid(ins->rel);
  if (ins->rel->rd_att->constr != nullptr) ExecConstraints(ins->rri, slot, ins->estate);
  ++ins->used;
}

int flush_job_rows(JobInsert *ins) {
  int n = ins->used;
  if (n == 0) return 0;
  EState *estate = ins->estate;
  // table_multi_insert may leak into the current context: use the
  // per-tuple one, reset once the rows are stored.
  MemoryContext old = MemoryContextSwitchTo(GetPerTupleMemoryContext(estate));
  table_multi_insert(ins->rel, ins->slots, n, GetCurrentCommandId(true), 0, nullptr);
  MemoryContextSwitchTo(old);
  for (int i = 0; i < n; ++i) {
    ResetPerTupleExprContext(estate);
    if (ins->rri->ri_NumIndices > 0)
      list_free(ExecInsertIndexTuples(ins->rri, ins->slots[i], estate, false, false, nullptr, NIL));
  }
  ResetPerTupleExprContext(estate);
  for (int i = 0; i < n; ++i) slot_getallattrs(ins->slots[i]);
  ins->used = 0;
  return n;
}

TupleTableSlot *job_insert_row(const JobInsert *ins, int i) { return ins->slots[i]; }

void end_job_insert(JobInsert *ins) {
  for (int i = 0; i < ins->capacity && ins->slots[i] != nullptr; ++i) ExecDropSingleTupleTableSlot(ins->slots[i]);
  close_executor_state(ins->estate);
  end_direct_write();
  // Later commands of the transaction (and of this function) see the rows.
  CommandCounterIncrement();
}

void end_of_transaction_job_inserts() {
  // A call that raised an error never reached end_job_insert (one caught in
  // a subtransaction leaves the later calls of the transaction to make
  // their own state, which is slower, not wrong).
  writes_in_progress = 0;
}

}  // namespace zizq::pg
