// zizq core: scan floors (see scan_floor.hpp).
#include "core/scan_floor.hpp"

#include <cstring>

namespace zizq::core {
namespace {

// Direct-mapped: a queue may only sit in its hash's slot, and a raise for
// another queue of the same slot evicts it.
const FloorSlot &slot_for(const FloorTable &t, uint32_t hash) { return t.slots[hash % kFloorSlots]; }
FloorSlot &slot_for(FloorTable &t, uint32_t hash) { return t.slots[hash % kFloorSlots]; }

bool holds(const FloorSlot &s, const FloorQueue &q) {
  return s.used && s.database == q.database && s.hash == q.hash && std::string_view(s.queue) == q.name;
}

}  // namespace

FloorView read_floor(const FloorTable &t, const FloorQueue &q) {
  const FloorSlot &s = slot_for(t, q.hash);
  return FloorView{holds(s, q) ? s.floor : kBottomKey, t.seq};
}

void lower_floor(FloorTable &t, const FloorQueue &q, JobKey key) {
  FloorSlot &s = slot_for(t, q.hash);
  if (holds(s, q) && key < s.floor) s.floor = key;
  t.seq++;  // even when nothing moved: a dequeue scanning now may not see the job
}

void lower_floor_of_hash(FloorTable &t, uint32_t database, uint32_t hash, JobKey key) {
  FloorSlot &s = slot_for(t, hash);
  if (s.used && s.database == database && s.hash == hash && key < s.floor) s.floor = key;
  t.seq++;  // a dequeue may be scanning past the job as claimed right now
}

JobKey past_key(JobKey key) {
  if (key.id < INT64_MAX) return JobKey{key.priority, key.id + 1};
  return key.priority < INT32_MAX ? JobKey{key.priority + 1, INT64_MIN} : kAboveAllKeys;
}

void clear_floors(FloorTable &t) {
  for (FloorSlot &s : t.slots) s.used = false;
  t.seq++;
}

bool raise_floor(FloorTable &t, const FloorQueue &q, uint64_t seen_seq, JobKey key) {
  if (t.seq != seen_seq || q.name.size() > kMaxNameBytes) return false;
  FloorSlot &s = slot_for(t, q.hash);
  if (holds(s, q)) {
    if (!(s.floor < key)) return false;
    s.floor = key;
    return true;
  }
  s.used = true;
  s.database = q.database;
  s.hash = q.hash;
  s.floor = key;
  std::memcpy(s.queue, q.name.data(), q.name.size());
  s.queue[q.name.size()] = '\0';
  return true;
}

}  // namespace zizq::core
