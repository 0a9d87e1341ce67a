// zizq scan floors in shared memory (see floors.hpp).
#include "core/scan_floor.hpp"

#include "pg/floors.hpp"
#include "pg/shmem.hpp"

namespace zizq::pg {
namespace {

core::FloorTable *table = nullptr;

core::FloorQueue queue_of(const char *queue) {
  return core::FloorQueue{MyDatabaseId, queue, queue_hash(queue, strlen(queue))};
}

// The live raises of this backend's running take statement.
struct LiveRaises {
  bool active;                            // a take statement with live raises is running
  bool raising;                           // it may still raise
  bool raised;                            // it has moved the floor
  char queue[core::kMaxNameBytes + 1];    // a copy: no pointer outlives the statement
  core::FloorKind kind;                   // the floor it raises: of free or of budgeted jobs
  uint64 seq;                             // the readying count read before its snapshot
  core::JobKey start;                     // the floor it started from
  core::JobKey last;                      // the last key it met, for the order check
  int level;                              // the transaction nest level it began at
};
LiveRaises live{};

// Gives the floor back to where the statement found it (and refuses the
// raises of others in progress): its raises may have passed ready jobs.
void undo_live_raises() {
  bool raised = live.raised;
  live.active = live.raising = live.raised = false;
  if (!raised) return;
  const char *queue = live.queue;
  core::FloorKind kind = live.kind;
  lower_floors(&queue, &kind, &live.start, 1);
}

bool own_insert = false;
int own_insert_level = 0;  // the transaction nest level it began at
bool own_delete = false;
bool hidden[core::kFloorKinds] = {false, false};
bool readied = false;
core::JobKey examined_key = core::kAboveAllKeys;
uint64 examined_noted = 0;
bool moved_claim_met = false;

}  // namespace

Size floors_size() { return sizeof(core::FloorTable); }

void attach_floors(char *base) { table = reinterpret_cast<core::FloorTable *>(base); }

core::FloorView floor_of(const char *queue, core::FloorKind kind) {
  LWLockAcquire(shared->floor_lock, LW_SHARED);
  core::FloorView v = core::read_floor(*table, queue_of(queue), kind);
  LWLockRelease(shared->floor_lock);
  return v;
}

uint64 floor_seq_of(const char *queue) { return core::seq_of(*table, queue_hash(queue, strlen(queue))); }

void raise_floor_of(const char *queue, core::FloorKind kind, uint64 seen_seq, core::JobKey key) {
  LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
  (void)core::raise_floor(*table, queue_of(queue), kind, seen_seq, key);
  LWLockRelease(shared->floor_lock);
}

void lower_floors(const char *const *queues, const core::FloorKind *kinds, const core::JobKey *keys, int n) {
  if (n == 0) return;
  LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
  for (int i = 0; i < n; ++i) core::lower_floor(*table, queue_of(queues[i]), kinds[i], keys[i]);
  LWLockRelease(shared->floor_lock);
}

void lower_floors_of_hashes(const uint32 *hashes, const core::JobKey *keys, int n) {
  if (n == 0) return;
  LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
  for (int i = 0; i < n; ++i) core::lower_floor_of_hash(*table, MyDatabaseId, hashes[i], keys[i]);
  LWLockRelease(shared->floor_lock);
}

int copy_floors(FloorRow *out, int max) {
  int n = 0;
  LWLockAcquire(shared->floor_lock, LW_SHARED);
  for (const core::FloorSlot &slot : table->slots) {
    if (!slot.used || slot.database != MyDatabaseId) continue;
    for (core::FloorKind kind : {core::FloorKind::Free, core::FloorKind::Budgeted}) {
      core::JobKey floor = slot.floors[static_cast<int>(kind)];
      if (floor == core::kBottomKey || n == max) continue;
      memcpy(out[n].queue, slot.queue, sizeof slot.queue);
      out[n].kind = kind;
      out[n++].floor = floor;
    }
  }
  LWLockRelease(shared->floor_lock);
  return n;
}

void clear_all_floors() {
  LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
  core::clear_floors(*table);
  LWLockRelease(shared->floor_lock);
}

void begin_own_insert() {
  own_insert = true;
  own_insert_level = GetCurrentTransactionNestLevel();
}
void end_own_insert() { own_insert = false; }
void abort_own_insert(int level) {
  if (level <= own_insert_level) own_insert = false;
}
bool in_own_insert() { return own_insert; }

void begin_own_delete() { own_delete = true; }
void end_own_delete() { own_delete = false; }
bool in_own_delete() { return own_delete; }

void note_hidden_ready_job(core::FloorKind kind) { hidden[static_cast<int>(kind)] = true; }
void note_hidden_ready_jobs_of_all_kinds() { hidden[0] = hidden[1] = true; }
bool hid_ready_jobs(core::FloorKind kind) { return hidden[static_cast<int>(kind)]; }
void forget_hidden_ready_jobs() { hidden[0] = hidden[1] = false; }

void note_readied_jobs() { readied = true; }
bool readied_jobs() { return readied; }
void forget_readied_jobs() { readied = false; }

void begin_live_raises(const char *queue, core::FloorKind kind, core::FloorView from) {
  size_t len = strlen(queue);
  live.active = live.raising = len <= core::kMaxNameBytes;
  live.raised = false;
  if (!live.active) return;
  memcpy(live.queue, queue, len + 1);
  live.kind = kind;
  live.seq = from.seq;
  live.start = from.floor;
  live.last = core::kBottomKey;
  live.level = GetCurrentTransactionNestLevel();
}

void note_met_by_take(core::JobKey key) {
  if (!live.active) return;
  // A plan that does not read the index in dispatch order (a sort over a
  // sequential scan, on a nearly empty table) meets a key below one it
  // raised past: those raises did not pass only claimed jobs. (Watched to
  // the statement's end, also once it has stopped raising.)
  if (key < live.last) {
    undo_live_raises();
    return;
  }
  live.last = key;
}

void raise_past_claimed(core::JobKey key) {
  if (!live.raising) return;
  // A readying commit or a released claim since the statement began
  // refuses every later raise of it: stop asking. (Read without the lock:
  // a stale value costs a refused raise or one skipped, both safe.)
  if (floor_seq_of(live.queue) != live.seq) {
    live.raising = false;
    return;
  }
  raise_floor_of(live.queue, live.kind, live.seq, core::past_key(key));
  live.raised = true;
}

void stop_raising() { live.raising = false; }

void end_live_raises() { live.active = live.raising = live.raised = false; }

void abort_live_raises(int level) {
  if (live.active && level <= live.level) undo_live_raises();
}

void begin_examined() {
  examined_key = core::kAboveAllKeys;
  moved_claim_met = false;
}

void note_examined(core::JobKey key) {
  ++examined_noted;
  if (key < examined_key) examined_key = key;
}

core::JobKey examined_min() { return examined_key; }

uint64 examined_count() { return examined_noted; }

void note_moved_claim() { moved_claim_met = true; }
bool met_moved_claim() { return moved_claim_met; }

}  // namespace zizq::pg
