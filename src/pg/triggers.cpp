// zizq triggers on zizq._jobs: the rules every path that changes a job must
// obey, whoever runs the UPDATE or DELETE (see sql/zizq--1.0.sql, part 3).
#include "pg/pg.hpp"
#include "pg/shmem.hpp"
#include "pg/spi.hpp"
#include "pg/xact.hpp"

namespace zizq::pg {
namespace {

// Column numbers in zizq._jobs (1-based), looked up by name once per call.
struct JobAttrs {
  int queue, budget_ids, budget_costs, parked;
};

JobAttrs attrs_of(TupleDesc desc) {
  return JobAttrs{SPI_fnumber(desc, "queue"), SPI_fnumber(desc, "budget_ids"), SPI_fnumber(desc, "budget_costs"),
                  SPI_fnumber(desc, "parked")};
}

TriggerData *trigger_data(FunctionCallInfo fcinfo, const char *name) {
  if (!CALLED_AS_TRIGGER(fcinfo)) elog(ERROR, "%s: not called by trigger manager", name);
  return reinterpret_cast<TriggerData *>(fcinfo->context);
}

// The row's bindings; returns their number.
int row_bindings(HeapTuple row, TupleDesc desc, const JobAttrs &a, int32 **ids, int32 **costs) {
  bool isnull = false;
  Datum d = heap_getattr(row, a.budget_ids, desc, &isnull);
  if (isnull) return 0;
  int n = array_int4(d, ids);
  d = heap_getattr(row, a.budget_costs, desc, &isnull);
  if (isnull) return 0;
  array_int4(d, costs);
  return n;
}

HeapTuple old_row(TriggerData *td) { return td->tg_trigtuple; }

Datum trigger_result(TriggerData *td, HeapTuple row) {
  if (TRIGGER_FIRED_AFTER(td->tg_event)) return PointerGetDatum(nullptr);
  return PointerGetDatum(row);
}

}  // namespace
}  // namespace zizq::pg

using namespace zizq::pg;

extern "C" {

// A job left in_flight: its budgets get their in-flight cost back at commit.
PG_FUNCTION_INFO_V1(zizq_trg_flight_exit);
Datum zizq_trg_flight_exit(PG_FUNCTION_ARGS) {
  TriggerData *td = trigger_data(fcinfo, "zizq_trg_flight_exit");
  if (shared == nullptr) return PointerGetDatum(nullptr);
  TupleDesc desc = td->tg_relation->rd_att;
  JobAttrs a = attrs_of(desc);
  int32 *ids, *costs;
  int n = row_bindings(old_row(td), desc, a, &ids, &costs);
  reserve_ops(n);
  for (int i = 0; i < n; ++i) at_commit_release(ids[i], costs[i]);
  return PointerGetDatum(nullptr);
}

// A parked job is leaving its lines (dispatched, moved, rebound, deleted):
// its budgets' parked counts drop at commit and the dispatcher re-evaluates
// them. Before an UPDATE that changes its place, the row is unparked.
PG_FUNCTION_INFO_V1(zizq_trg_unpark);
Datum zizq_trg_unpark(PG_FUNCTION_ARGS) {
  TriggerData *td = trigger_data(fcinfo, "zizq_trg_unpark");
  TupleDesc desc = td->tg_relation->rd_att;
  JobAttrs a = attrs_of(desc);
  HeapTuple result = TRIGGER_FIRED_BY_UPDATE(td->tg_event) ? td->tg_newtuple : td->tg_trigtuple;
  if (shared != nullptr) {
    int32 *ids, *costs;
    int n = row_bindings(old_row(td), desc, a, &ids, &costs);
    reserve_ops(2 * n);
    for (int k = 0; k < n; ++k) {
      at_commit_parked_drop(ids[k], k);
      at_commit_dirty(ids[k]);
    }
  }
  if (TRIGGER_FIRED_BEFORE(td->tg_event) && TRIGGER_FIRED_BY_UPDATE(td->tg_event)) {
    bool isnull = false;
    if (DatumGetBool(heap_getattr(result, a.parked, desc, &isnull))) {
      int col = a.parked;
      Datum value = BoolGetDatum(false);
      bool null = false;
      result = heap_modify_tuple_by_cols(result, desc, 1, &col, &value, &null);
    }
  }
  return trigger_result(td, result);
}

// A job became dispatchable through an UPDATE: wake a worker of its queue at
// commit and notify LISTEN zizq.
PG_FUNCTION_INFO_V1(zizq_trg_ready);
Datum zizq_trg_ready(PG_FUNCTION_ARGS) {
  TriggerData *td = trigger_data(fcinfo, "zizq_trg_ready");
  TupleDesc desc = td->tg_relation->rd_att;
  bool isnull = false;
  Datum queue = heap_getattr(td->tg_newtuple, attrs_of(desc).queue, desc, &isnull);
  char *name = TextDatumGetCString(queue);
  if (shared != nullptr) at_commit_wake_queue(queue_hash(name, strlen(name)), 1);
  Async_Notify("zizq", name);
  return PointerGetDatum(nullptr);
}

}  // extern "C"
