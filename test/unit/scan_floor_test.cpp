// Scan floors: a floor only rises for a dequeue that saw every readying
// commit, and falls for every job made ready.
#include <memory>

#include "check.hpp"
#include "core/scan_floor.hpp"

using namespace zizq::core;

namespace {

std::unique_ptr<FloorTable> empty_table() { return std::make_unique<FloorTable>(FloorTable{}); }

constexpr uint32_t kDb = 5;
// q and r share a slot; q2 has q's hash but another name; q_other_db is q
// in another database.
const FloorQueue q{kDb, "q", 7}, r{kDb, "r", 7 + kFloorSlots}, q2{kDb, "q2", 7}, q_other_db{kDb + 1, "q", 7};
const FloorQueue other{kDb, "other", 3};
constexpr FloorKind kFree = FloorKind::Free, kBudgeted = FloorKind::Budgeted;

}  // namespace

TEST(no_floor_until_a_dequeue_raises_one) {
  auto t = empty_table();
  CHECK(read_floor(*t, q, kFree).floor == kBottomKey);
  FloorView v = read_floor(*t, q, kFree);
  CHECK(raise_floor(*t, q, kFree, v.seq, JobKey{32768, 40}));
  CHECK(read_floor(*t, q, kFree).floor == (JobKey{32768, 40}));
}

TEST(a_readying_commit_between_read_and_raise_refuses_the_raise) {
  auto t = empty_table();
  FloorView v = read_floor(*t, q, kFree);
  lower_floor(*t, q, kFree, JobKey{32768, 12});  // committed after the dequeue's snapshot
  CHECK(!raise_floor(*t, q, kFree, v.seq, kAboveAllKeys));
  CHECK(read_floor(*t, q, kFree).floor == kBottomKey);
}

TEST(a_readying_commit_of_a_queue_sharing_the_slot_also_refuses_it) {
  auto t = empty_table();
  FloorView v = read_floor(*t, q, kFree);
  lower_floor(*t, r, kFree, JobKey{1, 1});  // r maps to q's slot: the lowering cannot tell them apart
  CHECK(!raise_floor(*t, q, kFree, v.seq, kAboveAllKeys));
}

TEST(a_readying_commit_of_a_queue_of_another_slot_does_not) {
  auto t = empty_table();
  FloorView v = read_floor(*t, q, kFree);
  lower_floor(*t, other, kFree, JobKey{1, 1});
  lower_floor_of_hash(*t, kDb, other.hash, JobKey{1, 1});
  CHECK(raise_floor(*t, q, kFree, v.seq, kAboveAllKeys));
}

TEST(a_slot_keeps_counting_when_it_changes_hands) {
  auto t = empty_table();
  FloorView v = read_floor(*t, q, kFree);  // q has no slot yet
  CHECK(raise_floor(*t, r, kFree, seq_of(*t, r.hash), JobKey{32768, 5}));
  lower_floor(*t, q, kFree, JobKey{1, 1});  // q holds no slot: nothing moves, but the count does
  CHECK(!raise_floor(*t, q, kFree, v.seq, kAboveAllKeys));
}

TEST(lowering_takes_the_smaller_key) {
  auto t = empty_table();
  CHECK(raise_floor(*t, q, kFree, read_floor(*t, q, kFree).seq, kAboveAllKeys));
  lower_floor(*t, q, kFree, JobKey{32768, 90});
  lower_floor(*t, q, kFree, JobKey{32768, 95});
  CHECK(read_floor(*t, q, kFree).floor == (JobKey{32768, 90}));
  lower_floor(*t, q, kFree, JobKey{5, 200});  // a higher priority sorts first
  CHECK(read_floor(*t, q, kFree).floor == (JobKey{5, 200}));
}

TEST(a_raise_never_lowers) {
  auto t = empty_table();
  CHECK(raise_floor(*t, q, kFree, seq_of(*t, q.hash), JobKey{32768, 50}));
  CHECK(!raise_floor(*t, q, kFree, seq_of(*t, q.hash), JobKey{32768, 20}));
  CHECK(read_floor(*t, q, kFree).floor == (JobKey{32768, 50}));
}

TEST(a_queue_sharing_the_slot_evicts_and_the_evicted_queue_scans_everything) {
  auto t = empty_table();
  CHECK(raise_floor(*t, q, kFree, seq_of(*t, q.hash), JobKey{32768, 50}));
  CHECK(raise_floor(*t, r, kFree, seq_of(*t, r.hash), JobKey{32768, 70}));
  CHECK(read_floor(*t, q, kFree).floor == kBottomKey);
  CHECK(read_floor(*t, r, kFree).floor == (JobKey{32768, 70}));
  lower_floor(*t, q, kFree, JobKey{1, 1});  // no slot: r's floor stays
  CHECK(read_floor(*t, r, kFree).floor == (JobKey{32768, 70}));
}

TEST(queues_with_the_same_hash_are_told_apart_by_name) {
  auto t = empty_table();
  CHECK(raise_floor(*t, q, kFree, seq_of(*t, q.hash), JobKey{32768, 50}));
  CHECK(read_floor(*t, q2, kFree).floor == kBottomKey);
}

TEST(a_queue_of_the_same_name_in_another_database_is_another_queue) {
  auto t = empty_table();
  CHECK(raise_floor(*t, q, kFree, seq_of(*t, q.hash), kAboveAllKeys));
  CHECK(read_floor(*t, q_other_db, kFree).floor == kBottomKey);
}

TEST(clearing_drops_every_floor_and_refuses_raises_in_progress) {
  auto t = empty_table();
  CHECK(raise_floor(*t, q, kFree, seq_of(*t, q.hash), JobKey{32768, 50}));
  FloorView v = read_floor(*t, q, kFree);
  clear_floors(*t);
  CHECK(read_floor(*t, q, kFree).floor == kBottomKey);
  CHECK(!raise_floor(*t, q, kFree, v.seq, kAboveAllKeys));
}

TEST(a_released_claim_lowers_the_floor_of_its_queues_hash) {
  auto t = empty_table();
  CHECK(raise_floor(*t, q, kFree, seq_of(*t, q.hash), past_key(JobKey{32768, 60})));  // a dequeue claimed 60
  CHECK(read_floor(*t, q, kFree).floor == (JobKey{32768, 61}));
  FloorView v = read_floor(*t, q, kFree);
  lower_floor_of_hash(*t, kDb, q.hash, JobKey{32768, 60});  // its rollback
  CHECK(read_floor(*t, q, kFree).floor == (JobKey{32768, 60}));
  CHECK(!raise_floor(*t, q, kFree, v.seq, past_key(JobKey{32768, 80})));  // a scan that passed 60 as claimed
}

TEST(a_released_claim_lowers_a_queue_sharing_the_hash_but_not_another_database) {
  auto t = empty_table();
  CHECK(raise_floor(*t, q, kFree, seq_of(*t, q.hash), JobKey{32768, 50}));
  lower_floor_of_hash(*t, kDb + 1, q.hash, JobKey{32768, 10});
  CHECK(read_floor(*t, q, kFree).floor == (JobKey{32768, 50}));
  lower_floor_of_hash(*t, kDb, q.hash, JobKey{32768, 10});
  CHECK(read_floor(*t, q, kFree).floor == (JobKey{32768, 10}));
  lower_floor_of_hash(*t, kDb, r.hash, JobKey{1, 1});  // r has q's slot, not its hash
  CHECK(read_floor(*t, q, kFree).floor == (JobKey{32768, 10}));
}

TEST(past_key_is_the_next_key_in_dispatch_order) {
  CHECK(past_key(JobKey{32768, 7}) == (JobKey{32768, 8}));
  CHECK((JobKey{32768, 7} < past_key(JobKey{32768, 7})));
  CHECK(past_key(JobKey{3, INT64_MAX}) == (JobKey{4, INT64_MIN}));
  CHECK(past_key(JobKey{INT32_MAX, INT64_MAX}) == kAboveAllKeys);
}

TEST(a_queue_has_a_floor_per_kind_that_moves_alone) {
  auto t = empty_table();
  CHECK(raise_floor(*t, q, kBudgeted, seq_of(*t, q.hash), JobKey{32768, 50}));
  CHECK(read_floor(*t, q, kBudgeted).floor == (JobKey{32768, 50}));
  CHECK(read_floor(*t, q, kFree).floor == kBottomKey);  // the slot is new: no free floor yet
  CHECK(raise_floor(*t, q, kFree, seq_of(*t, q.hash), JobKey{32768, 80}));
  lower_floor(*t, q, kFree, JobKey{32768, 10});  // a free job made ready
  CHECK(read_floor(*t, q, kFree).floor == (JobKey{32768, 10}));
  CHECK(read_floor(*t, q, kBudgeted).floor == (JobKey{32768, 50}));
  lower_floor(*t, q, kBudgeted, JobKey{32768, 20});
  CHECK(read_floor(*t, q, kBudgeted).floor == (JobKey{32768, 20}));
  CHECK(read_floor(*t, q, kFree).floor == (JobKey{32768, 10}));
}

TEST(a_readying_commit_of_either_kind_refuses_raises_of_both) {
  auto t = empty_table();
  FloorView v = read_floor(*t, q, kBudgeted);
  lower_floor(*t, q, kFree, JobKey{32768, 12});
  CHECK(!raise_floor(*t, q, kBudgeted, v.seq, kAboveAllKeys));
  CHECK(read_floor(*t, q, kBudgeted).floor == kBottomKey);
}

TEST(a_released_claim_lowers_both_floors_of_its_queue) {
  auto t = empty_table();
  CHECK(raise_floor(*t, q, kBudgeted, seq_of(*t, q.hash), JobKey{32768, 50}));
  CHECK(raise_floor(*t, q, kFree, seq_of(*t, q.hash), JobKey{32768, 40}));
  lower_floor_of_hash(*t, kDb, q.hash, JobKey{32768, 45});
  CHECK(read_floor(*t, q, kFree).floor == (JobKey{32768, 40}));
  CHECK(read_floor(*t, q, kBudgeted).floor == (JobKey{32768, 45}));
}

TEST(clearing_drops_the_floors_of_both_kinds) {
  auto t = empty_table();
  CHECK(raise_floor(*t, q, kBudgeted, seq_of(*t, q.hash), JobKey{32768, 50}));
  CHECK(raise_floor(*t, q, kFree, seq_of(*t, q.hash), JobKey{32768, 50}));
  clear_floors(*t);
  CHECK(read_floor(*t, q, kBudgeted).floor == kBottomKey);
  CHECK(read_floor(*t, q, kFree).floor == kBottomKey);
}

TEST(a_slot_taken_over_keeps_no_floor_of_the_other_kind) {
  auto t = empty_table();
  CHECK(raise_floor(*t, q, kBudgeted, seq_of(*t, q.hash), JobKey{32768, 50}));
  CHECK(raise_floor(*t, r, kFree, seq_of(*t, r.hash), JobKey{32768, 70}));  // r evicts q from the slot
  CHECK(read_floor(*t, r, kBudgeted).floor == kBottomKey);     // not q's budgeted floor
  CHECK(raise_floor(*t, q, kFree, seq_of(*t, q.hash), JobKey{32768, 90}));  // and q takes it back
  CHECK(read_floor(*t, q, kBudgeted).floor == kBottomKey);
  CHECK(read_floor(*t, q, kFree).floor == (JobKey{32768, 90}));
}

TEST(a_released_claim_of_a_queue_sharing_the_slot_refuses_raises_in_progress) {
  auto t = empty_table();
  FloorView v = read_floor(*t, q, kFree);
  lower_floor_of_hash(*t, kDb, r.hash, JobKey{32768, 5});  // r's claim: q's floor stays, the count moves
  CHECK(read_floor(*t, q, kFree).floor == kBottomKey);
  CHECK(!raise_floor(*t, q, kFree, v.seq, kAboveAllKeys));
}
