// Scan floors: a floor only rises for a dequeue that saw every readying
// commit, and falls for every job made ready.
#include <memory>

#include "check.hpp"
#include "core/scan_floor.hpp"

using namespace zizq::core;

namespace {

std::unique_ptr<FloorTable> empty_table() { return std::make_unique<FloorTable>(FloorTable{}); }

constexpr uint32_t kHashQ = 7, kHashR = 7 + kFloorSlots;  // same slot, different queues

}  // namespace

TEST(no_floor_until_a_dequeue_raises_one) {
  auto t = empty_table();
  CHECK(read_floor(*t, "q", kHashQ).floor == kBottomKey);
  FloorView v = read_floor(*t, "q", kHashQ);
  CHECK(raise_floor(*t, "q", kHashQ, v.seq, JobKey{32768, 40}));
  CHECK(read_floor(*t, "q", kHashQ).floor == (JobKey{32768, 40}));
}

TEST(a_readying_commit_between_read_and_raise_refuses_the_raise) {
  auto t = empty_table();
  FloorView v = read_floor(*t, "q", kHashQ);
  lower_floor(*t, "q", kHashQ, JobKey{32768, 12});  // committed after the dequeue's snapshot
  CHECK(!raise_floor(*t, "q", kHashQ, v.seq, kAboveAllKeys));
  CHECK(read_floor(*t, "q", kHashQ).floor == kBottomKey);
}

TEST(a_readying_commit_of_another_queue_also_refuses_it) {
  auto t = empty_table();
  FloorView v = read_floor(*t, "q", kHashQ);
  lower_floor(*t, "other", 3, JobKey{1, 1});
  CHECK(!raise_floor(*t, "q", kHashQ, v.seq, kAboveAllKeys));
}

TEST(lowering_takes_the_smaller_key) {
  auto t = empty_table();
  CHECK(raise_floor(*t, "q", kHashQ, read_floor(*t, "q", kHashQ).seq, kAboveAllKeys));
  lower_floor(*t, "q", kHashQ, JobKey{32768, 90});
  lower_floor(*t, "q", kHashQ, JobKey{32768, 95});
  CHECK(read_floor(*t, "q", kHashQ).floor == (JobKey{32768, 90}));
  lower_floor(*t, "q", kHashQ, JobKey{5, 200});  // a higher priority sorts first
  CHECK(read_floor(*t, "q", kHashQ).floor == (JobKey{5, 200}));
}

TEST(a_raise_never_lowers) {
  auto t = empty_table();
  CHECK(raise_floor(*t, "q", kHashQ, t->seq, JobKey{32768, 50}));
  CHECK(!raise_floor(*t, "q", kHashQ, t->seq, JobKey{32768, 20}));
  CHECK(read_floor(*t, "q", kHashQ).floor == (JobKey{32768, 50}));
}

TEST(a_queue_sharing_the_slot_evicts_and_the_evicted_queue_scans_everything) {
  auto t = empty_table();
  CHECK(raise_floor(*t, "q", kHashQ, t->seq, JobKey{32768, 50}));
  CHECK(raise_floor(*t, "r", kHashR, t->seq, JobKey{32768, 70}));
  CHECK(read_floor(*t, "q", kHashQ).floor == kBottomKey);
  CHECK(read_floor(*t, "r", kHashR).floor == (JobKey{32768, 70}));
  lower_floor(*t, "q", kHashQ, JobKey{1, 1});  // no slot: r's floor stays
  CHECK(read_floor(*t, "r", kHashR).floor == (JobKey{32768, 70}));
}

TEST(queues_with_the_same_hash_are_told_apart_by_name) {
  auto t = empty_table();
  CHECK(raise_floor(*t, "q", kHashQ, t->seq, JobKey{32768, 50}));
  CHECK(read_floor(*t, "q2", kHashQ).floor == kBottomKey);
}
