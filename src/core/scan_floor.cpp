// zizq core: scan floors (see scan_floor.hpp).
#include "core/scan_floor.hpp"

#include <cstring>

namespace zizq::core {
namespace {

// Direct-mapped: a queue may only sit in its hash's slot, and a raise for
// another queue of the same slot evicts it.
const FloorSlot &slot_for(const FloorTable &t, uint32_t hash) { return t.slots[hash % kFloorSlots]; }
FloorSlot &slot_for(FloorTable &t, uint32_t hash) { return t.slots[hash % kFloorSlots]; }

JobKey floor_in(const FloorSlot &s, FloorKind kind) { return s.floors[static_cast<int>(kind)]; }
JobKey &floor_in(FloorSlot &s, FloorKind kind) { return s.floors[static_cast<int>(kind)]; }

bool holds(const FloorSlot &s, const FloorQueue &q) {
  return s.used && s.database == q.database && s.hash == q.hash && std::string_view(s.queue) == q.name;
}

}  // namespace

FloorView read_floor(const FloorTable &t, const FloorQueue &q, FloorKind kind) {
  const FloorSlot &s = slot_for(t, q.hash);
  return FloorView{holds(s, q) ? floor_in(s, kind) : kBottomKey, s.seq};
}

// Read without the lock by the PostgreSQL side (a hint; raise_floor checks
// again under it): volatile, so that each call reads memory.
uint64_t seq_of(const FloorTable &t, uint32_t hash) {
  return *static_cast<const volatile uint64_t *>(&slot_for(t, hash).seq);
}

void lower_floor(FloorTable &t, const FloorQueue &q, FloorKind kind, JobKey key) {
  FloorSlot &s = slot_for(t, q.hash);
  if (holds(s, q) && key < floor_in(s, kind)) floor_in(s, kind) = key;
  s.seq++;  // even when nothing moved: a dequeue scanning now may not see the job
}

void lower_floor_of_hash(FloorTable &t, uint32_t database, uint32_t hash, JobKey key) {
  FloorSlot &s = slot_for(t, hash);
  if (s.used && s.database == database && s.hash == hash)
    for (JobKey &floor : s.floors)
      if (key < floor) floor = key;
  s.seq++;  // a dequeue may be scanning past the job as claimed right now
}

JobKey past_key(JobKey key) {
  if (key.id < INT64_MAX) return JobKey{key.priority, key.id + 1};
  return key.priority < INT32_MAX ? JobKey{key.priority + 1, INT64_MIN} : kAboveAllKeys;
}

void clear_floors(FloorTable &t) {
  for (FloorSlot &s : t.slots) {
    s.used = false;
    s.seq++;
  }
}

bool raise_floor(FloorTable &t, const FloorQueue &q, FloorKind kind, uint64_t seen_seq, JobKey key) {
  FloorSlot &s = slot_for(t, q.hash);
  if (s.seq != seen_seq || q.name.size() > kMaxNameBytes) return false;
  if (holds(s, q)) {
    if (!(floor_in(s, kind) < key)) return false;
    floor_in(s, kind) = key;
    return true;
  }
  s.used = true;
  s.database = q.database;
  s.hash = q.hash;
  for (JobKey &floor : s.floors) floor = kBottomKey;  // the other kind: no floor yet
  floor_in(s, kind) = key;
  std::memcpy(s.queue, q.name.data(), q.name.size());
  s.queue[q.name.size()] = '\0';
  return true;
}

}  // namespace zizq::core
