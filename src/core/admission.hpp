// zizq core: the order rule of a dequeue (SPEC §3 "Ordering").
//
// A dequeue walks candidate jobs in priority-then-id order. An unbudgeted job
// is always taken. A budgeted job is taken only if
//   - no earlier candidate of this walk was refused on any of its budgets
//     (within a budget a cheap job never overtakes an unaffordable one ahead
//     of it, and a job bound to several budgets heads each of their lines),
//   - no parked job is ahead of it in any of its budgets' lines, and
//   - every one of its budgets can pay its cost at once.
// A refused job blocks all of its budgets for the rest of the walk.
//
// Everything here is plain data so that the PostgreSQL boundary can run it
// with palloc'd buffers and call SQL from the callbacks: an ereport crossing
// these frames skips no destructor.
#pragma once

#include "core/cpp_only.hpp"

#include <cstdint>

namespace zizq::core {

struct Binding {
  int32_t budget;
  int32_t cost;
};

struct Candidate {
  int64_t id;
  int32_t priority;
  const Binding *bindings;  // nullptr when unbudgeted
  int nbindings;
};

// Candidates compare by priority (lower first), then id (FIFO).
inline bool runs_before(const Candidate &a, const Candidate &b) {
  return a.priority != b.priority ? a.priority < b.priority : a.id < b.id;
}

// Budgets blocked so far in one walk. The caller provides the storage
// (capacity: every budget the walk may meet, at most 4 per candidate).
struct BlockedBudgets {
  int32_t *ids;
  int count;
  int capacity;

  bool contains(int32_t budget) const {
    for (int i = 0; i < count; ++i)
      if (ids[i] == budget) return true;
    return false;
  }
  bool any_of(const Candidate &c) const {
    for (int i = 0; i < c.nbindings; ++i)
      if (contains(c.bindings[i].budget)) return true;
    return false;
  }
  void add_all(const Candidate &c) {
    for (int i = 0; i < c.nbindings; ++i)
      if (!contains(c.bindings[i].budget) && count < capacity) ids[count++] = c.bindings[i].budget;
  }
};

enum class Verdict {
  Take,          // debited: hand it to the worker
  Blocked,       // behind an earlier refused job or a parked job in a line
  Unaffordable,  // at the head of its lines, but a budget cannot pay
};

// parked_ahead(const Candidate&, const Binding&) -> bool
// debit_all(const Candidate&) -> bool   (all-or-nothing)
template <typename ParkedAhead, typename DebitAll>
Verdict admit(BlockedBudgets &blocked, const Candidate &c, ParkedAhead &&parked_ahead, DebitAll &&debit_all) {
  if (c.nbindings == 0) return Verdict::Take;
  if (blocked.any_of(c)) {
    blocked.add_all(c);
    return Verdict::Blocked;
  }
  for (int i = 0; i < c.nbindings; ++i) {
    if (parked_ahead(c, c.bindings[i])) {
      blocked.add_all(c);
      return Verdict::Blocked;
    }
  }
  if (debit_all(c)) return Verdict::Take;
  blocked.add_all(c);
  return Verdict::Unaffordable;
}

}  // namespace zizq::core
