// zizq core: scan floors (see scan_floor.hpp).
#include "core/scan_floor.hpp"

#include <cstring>

namespace zizq::core {
namespace {

// Direct-mapped: a queue may only sit in its hash's slot, and a raise for
// another queue of the same slot evicts it.
const FloorSlot &slot_for(const FloorTable &t, uint32_t hash) { return t.slots[hash % kFloorSlots]; }
FloorSlot &slot_for(FloorTable &t, uint32_t hash) { return t.slots[hash % kFloorSlots]; }

bool holds(const FloorSlot &s, std::string_view queue, uint32_t hash) {
  return s.used && s.hash == hash && std::string_view(s.queue) == queue;
}

}  // namespace

FloorView read_floor(const FloorTable &t, std::string_view queue, uint32_t hash) {
  const FloorSlot &s = slot_for(t, hash);
  return FloorView{holds(s, queue, hash) ? s.floor : kBottomKey, t.seq};
}

void lower_floor(FloorTable &t, std::string_view queue, uint32_t hash, JobKey key) {
  FloorSlot &s = slot_for(t, hash);
  if (holds(s, queue, hash) && key < s.floor) s.floor = key;
  t.seq++;  // even when nothing moved: a dequeue scanning now may not see the job
}

bool raise_floor(FloorTable &t, std::string_view queue, uint32_t hash, uint64_t seen_seq, JobKey key) {
  if (t.seq != seen_seq || queue.size() > kMaxNameBytes) return false;
  FloorSlot &s = slot_for(t, hash);
  if (holds(s, queue, hash)) {
    if (!(s.floor < key)) return false;
    s.floor = key;
    return true;
  }
  s.used = true;
  s.hash = hash;
  s.floor = key;
  std::memcpy(s.queue, queue.data(), queue.size());
  s.queue[queue.size()] = '\0';
  return true;
}

}  // namespace zizq::core
