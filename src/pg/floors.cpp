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

// The queue whose floor this backend's running take statement raises
// (nullptr: none), and the readying count it read before its snapshot.
const char *live_queue = nullptr;
uint64 live_seq = 0;

bool own_insert = false;
bool hidden = false;
bool readied = false;
core::JobKey examined_key = core::kAboveAllKeys;

}  // namespace

Size floors_size() { return sizeof(core::FloorTable); }

void attach_floors(char *base) { table = reinterpret_cast<core::FloorTable *>(base); }

core::FloorView floor_of(const char *queue) {
  LWLockAcquire(shared->floor_lock, LW_SHARED);
  core::FloorView v = core::read_floor(*table, queue_of(queue));
  LWLockRelease(shared->floor_lock);
  return v;
}

void raise_floor_of(const char *queue, uint64 seen_seq, core::JobKey key) {
  LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
  (void)core::raise_floor(*table, queue_of(queue), seen_seq, key);
  LWLockRelease(shared->floor_lock);
}

void lower_floors(const char *const *queues, const core::JobKey *keys, int n) {
  if (n == 0) return;
  LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
  for (int i = 0; i < n; ++i) core::lower_floor(*table, queue_of(queues[i]), keys[i]);
  LWLockRelease(shared->floor_lock);
}

void lower_floors_of_hashes(const uint32 *hashes, const core::JobKey *keys, int n) {
  if (n == 0) return;
  LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
  for (int i = 0; i < n; ++i) core::lower_floor_of_hash(*table, MyDatabaseId, hashes[i], keys[i]);
  LWLockRelease(shared->floor_lock);
}

void clear_all_floors() {
  LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
  core::clear_floors(*table);
  LWLockRelease(shared->floor_lock);
}

void begin_own_insert() { own_insert = true; }
void end_own_insert() { own_insert = false; }
bool in_own_insert() { return own_insert; }

void note_hidden_ready_job() { hidden = true; }
bool hid_ready_jobs() { return hidden; }
void forget_hidden_ready_jobs() { hidden = false; }

void note_readied_jobs() { readied = true; }
bool readied_jobs() { return readied; }
void forget_readied_jobs() { readied = false; }

void begin_live_raises(const char *queue, uint64 seen_seq) {
  live_queue = queue;
  live_seq = seen_seq;
}

void raise_past_claimed(core::JobKey key) {
  if (live_queue == nullptr) return;
  // A readying commit or a released claim since the statement began
  // refuses every later raise of it: stop asking. (Read without the lock:
  // a stale value costs a refused raise or one skipped, both safe.)
  if (*static_cast<volatile uint64 *>(&table->seq) != live_seq) {
    stop_live_raises();
    return;
  }
  raise_floor_of(live_queue, live_seq, core::past_key(key));
}

void stop_live_raises() { live_queue = nullptr; }

void begin_examined() { examined_key = core::kAboveAllKeys; }

void note_examined(core::JobKey key) {
  if (key < examined_key) examined_key = key;
}

core::JobKey examined_min() { return examined_key; }

}  // namespace zizq::pg
