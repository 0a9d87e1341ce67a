// zizq boundary: what became of a row version a dequeue's scan met (see
// row_versions.hpp).
#include "pg/row_versions.hpp"

#include "pg/job_row.hpp"

extern "C" {
#include "access/table.h"
#include "storage/bufmgr.h"
#include "storage/procarray.h"
}

namespace zizq::pg {
namespace {

// The header of the row version at `tid` (buffer share-locked by the
// caller); nullptr when the slot holds no tuple any more.
HeapTupleHeader tuple_at(Buffer buf, ItemPointer tid) {
  Page page = BufferGetPage(buf);
  OffsetNumber off = ItemPointerGetOffsetNumber(tid);
  if (off < FirstOffsetNumber || off > PageGetMaxOffsetNumber(page)) return nullptr;
  ItemId lp = PageGetItemId(page, off);
  return ItemIdIsNormal(lp) ? reinterpret_cast<HeapTupleHeader>(PageGetItem(page, lp)) : nullptr;
}

bool committed(TransactionId xid, bool hinted) {
  if (hinted) return true;
  if (TransactionIdIsCurrentTransactionId(xid) || TransactionIdIsInProgress(xid)) return false;
  return TransactionIdDidCommit(xid);
}

struct Successor {
  bool updated_by_commit;  // by a committed transaction (not a lock)
  bool deleted;            // no next version
  ItemPointerData next;
  TransactionId updater;
};

Successor successor_of(Relation rel, const RowVersion &seen) {
  Successor s{false, false, {}, InvalidTransactionId};
  ItemPointerData tid = seen.tid;
  // (ReadBuffer of InvalidBlockNumber would extend the table.)
  if (!BlockNumberIsValid(ItemPointerGetBlockNumber(&tid))) return s;
  Buffer buf = ReadBuffer(rel, ItemPointerGetBlockNumber(&tid));
  LockBuffer(buf, BUFFER_LOCK_SHARE);
  HeapTupleHeader h = tuple_at(buf, &tid);
  bool hinted = false;
  if (h != nullptr && !(h->t_infomask & HEAP_XMAX_INVALID) && !HEAP_XMAX_IS_LOCKED_ONLY(h->t_infomask)) {
    s.updater = HeapTupleHeaderGetUpdateXid(h);
    hinted = (h->t_infomask & HEAP_XMAX_COMMITTED) != 0;
    s.next = h->t_ctid;
    s.deleted = ItemPointerEquals(&s.next, &tid);
    // Moved to another partition (not zizq's table; a next version unknown).
    if (HeapTupleHeaderIndicatesMovedPartitions(h)) s.updater = InvalidTransactionId;
  }
  UnlockReleaseBuffer(buf);
  s.updated_by_commit = TransactionIdIsValid(s.updater) && committed(s.updater, hinted);
  return s;
}

// Whether the version at `tid`, made by `maker`, may be a ready job: true
// when it is, or when that cannot be told (the slot reused or pruned), or
// when it was updated or deleted in turn (by a running transaction: FOR
// UPDATE SKIP LOCKED passes it without a lock; by a committed one: the
// chain goes on, perhaps to a ready version, which the row lock takes).
bool ready_or_unknown(Relation rel, ItemPointer tid, TransactionId maker) {
  if (!BlockNumberIsValid(ItemPointerGetBlockNumber(tid))) return true;
  AttrNumber status = job_column(RelationGetDescr(rel), "status");
  Buffer buf = ReadBuffer(rel, ItemPointerGetBlockNumber(tid));
  LockBuffer(buf, BUFFER_LOCK_SHARE);
  HeapTupleHeader h = tuple_at(buf, tid);
  bool ready = true;
  bool settled = h != nullptr && ((h->t_infomask & HEAP_XMAX_INVALID) || HEAP_XMAX_IS_LOCKED_ONLY(h->t_infomask));
  if (settled && TransactionIdEquals(HeapTupleHeaderGetXmin(h), maker)) {
    HeapTupleData tuple;
    tuple.t_data = h;
    tuple.t_len = ItemIdGetLength(PageGetItemId(BufferGetPage(buf), ItemPointerGetOffsetNumber(tid)));
    tuple.t_self = *tid;
    tuple.t_tableOid = RelationGetRelid(rel);
    bool isnull = false;
    Datum d = heap_getattr(&tuple, status, RelationGetDescr(rel), &isnull);
    // Read in place: no detoasting under the buffer lock ("ready" is
    // always stored inline and uncompressed; anything else counts as not
    // known).
    Pointer v = DatumGetPointer(d);
    if (!isnull && !VARATT_IS_EXTERNAL(v) && !VARATT_IS_COMPRESSED(v))
      ready = VARSIZE_ANY_EXHDR(v) == 5 && memcmp(VARDATA_ANY(v), "ready", 5) == 0;
  }
  UnlockReleaseBuffer(buf);
  return ready;
}

}  // namespace

bool taken_since_snapshot(const RowVersion &seen) {
  // Never updated, deleted or locked: nearly every row a scan meets.
  if (!TransactionIdIsValid(seen.raw_xmax)) return false;
  Relation rel = table_open(jobs_relid(), NoLock);  // the scanning statement holds its lock
  Successor s = successor_of(rel, seen);
  bool taken = s.updated_by_commit && (s.deleted || !ready_or_unknown(rel, &s.next, s.updater));
  table_close(rel, NoLock);
  return taken;
}

}  // namespace zizq::pg
