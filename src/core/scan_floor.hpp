// zizq core: scan floors, where a dequeue of one queue starts its scans of
// the ready jobs: one floor for the unbudgeted jobs (the take statement's
// scan) and one for the budgeted jobs not parked (the budgeted read).
//
// Why: a dequeue scans the index of ready jobs in (priority, id) order, and
// the entries of jobs taken a moment ago are still there: the btree marks an
// entry dead only when the page it sits on has not changed since the scan
// read it, and new jobs keep changing the last page. In a steady flow every
// look read ~460 such entries and fetched their heap tuples to take one job.
// A floor is a key below which the queue holds no ready job, so the scan
// starts there.
//
// The rule that keeps a floor honest (the PostgreSQL side applies it; see
// src/pg/floors.cpp):
//   * lower: a transaction that made jobs ready (enqueue, release, requeue,
//     a priority or binding change...) lowers its queues' floors to their
//     keys after its commit became visible, and bumps `seq` (its queue's
//     slot's);
//   * raise: a READ COMMITTED dequeue reads (floor, seq) before its
//     statement's snapshot, scans from the floor, and may raise the floor to
//     the smallest key its scan met among jobs ready in that snapshot (or
//     past everything when it met none), but only if `seq` is unchanged:
//     no readying commit ran its lowering in between;
//   * a dequeue whose own transaction has already hidden ready jobs from
//     itself (took, deleted, moved them) never raises: a rollback would
//     bring them back below the floor;
//   * claimed jobs count as gone: while its take statement runs, a dequeue
//     raises the floor just past each job it claims (past_key), so that
//     dequeues starting meanwhile begin after the jobs open dequeues hold
//     rather than walk them. Every ready job the scan met below was
//     claimed, by it or by another open dequeue; a claim released without
//     its job taken (a rollback, a row the statement skipped) lowers the
//     floor again (lower_floor_of_hash), as a readying commit does.
// The budgeted floor follows the same rule. Its read notes the keys it
// meets (zizq._unclaimed) and raises the floor to the first; the admission
// walk then goes through the read rows in order and, at its end, raises
// the floor past the longest run of them, from the first, that were all
// claimed (taken by it, or held by another open dequeue); a refusal in the
// walk releases its claim, which refuses the raise. Parked jobs are
// in neither set: the dispatcher offers them; unparking one is a readying
// change.
//
// A claim keeps the key its claimer found the job at, and its release
// lowers the floor to that key. A job moved while claimed (a priority or
// queue change committed meanwhile) lowers the floor at its new key when
// the move commits; a scan that then meets it claimed at another key must
// not pass it, since the claim's release will not come back down to it.
// A queue without a slot has no floor (scans start at the bottom), so
// evicting a slot, or clearing them all, is always safe. Slots belong to a
// database: queues of the same name in two databases are two queues.
#pragma once

#include "core/cpp_only.hpp"

#include <cstdint>
#include <string_view>

#include "core/names.hpp"

namespace zizq::core {

// A ready job's place in dispatch order: priority, then id.
struct JobKey {
  int32_t priority;
  int64_t id;
};

inline bool operator<(const JobKey &a, const JobKey &b) {
  return a.priority != b.priority ? a.priority < b.priority : a.id < b.id;
}
inline bool operator==(const JobKey &a, const JobKey &b) { return a.priority == b.priority && a.id == b.id; }

inline constexpr JobKey kBottomKey{INT32_MIN, INT64_MIN};  // no floor: scan everything
inline constexpr JobKey kAboveAllKeys{INT32_MAX, INT64_MAX};  // the queue holds no ready job

inline constexpr int kFloorSlots = 128;

// Which of a queue's ready jobs a floor is for.
enum class FloorKind : uint8_t { Free, Budgeted };
inline constexpr int kFloorKinds = 2;

struct FloorSlot {
  // Readying commits and released claims of the queues that map to this
  // slot, whichever holds it: a raise checks only its own slot's count, so
  // traffic on other queues does not refuse it. Kept when the slot changes
  // hands or is cleared.
  uint64_t seq;
  bool used;
  uint32_t database;
  uint32_t hash;
  JobKey floors[kFloorKinds];  // by FloorKind
  char queue[kMaxNameBytes + 1];
};

// Plain data: it lives in shared memory, zeroed at start (no floors).
struct FloorTable {
  FloorSlot slots[kFloorSlots];
};

struct FloorView {
  JobKey floor;
  uint64_t seq;
};

// The `seq` a raise for a queue whose name hashes to `hash` must find
// unchanged: its slot's.
uint64_t seq_of(const FloorTable &t, uint32_t hash);

// A queue: its database, name and the name's hash.
struct FloorQueue {
  uint32_t database;
  std::string_view name;
  uint32_t hash;
};

FloorView read_floor(const FloorTable &t, const FloorQueue &q, FloorKind kind);
// A commit made a job of `q` with `key` ready.
void lower_floor(FloorTable &t, const FloorQueue &q, FloorKind kind, JobKey key);
// Jobs may have become ready without their keys being known (rows written
// around zizq's functions): every floor goes.
void clear_floors(FloorTable &t);
// A claim on the job with `key` of the queue whose name hashes to `hash`
// was released without the job being taken: both floors of its queue come
// down (a claim does not record whether the job is budgeted). Only the
// hash is kept with a claim: a queue sharing it is lowered too, which is
// safe.
void lower_floor_of_hash(FloorTable &t, uint32_t database, uint32_t hash, JobKey key);
// A dequeue that read `seen_seq` found no job of the kind ready below
// `key`; returns whether the floor moved.
bool raise_floor(FloorTable &t, const FloorQueue &q, FloorKind kind, uint64_t seen_seq, JobKey key);
// The smallest key after `key`: where a scan that claimed `key` may start.
JobKey past_key(JobKey key);

}  // namespace zizq::core
