// zizq boundary: budgets as the job functions see them — the bindings a job
// names, resolved to budget ids and policies (creating budgets from
// create_with), with their keys locked against concurrent policy changes.
#pragma once

#include "core/bindings.hpp"
#include "core/policy.hpp"

#include "pg/pg.hpp"

namespace zizq::pg {

// One binding as parsed, in plain data.
struct BindingInput {
  char key[core::kMaxNameBytes + 1];
  int32 cost;
  bool has_create_with;
  core::Policy create_with;
};

struct Bindings {
  int n;
  BindingInput items[core::kMaxBindings];
  // Filled by resolve_bindings:
  int32 ids[core::kMaxBindings];
  core::Policy policies[core::kMaxBindings];
};

// Parses a `budgets` JSON text (NULL: none) into `out`. `what` names the
// argument in errors (e.g. "budgets", "jobs[3].budgets").
void parse_bindings(const char *json_text, const char *what, Bindings *out);

// Resolves the bindings of `njobs` jobs at once, in one SPI connection the
// caller holds: locks every key (shared), looks the budgets up, creates the
// missing ones that carry create_with (the first definition in the call
// wins), refuses missing ones without (42704) and costs above a capacity
// (23514). describe(i) names job i in messages.
void resolve_bindings(Bindings *jobs, int njobs, const char *(*describe)(int job, void *ctx), void *ctx);

// The `budgets` column value: [{"key": .., "cost": ..}] (palloc'd JSON text).
char *bindings_json(const Bindings &b);

// Serializes with define_budget/update_budget: a shared lock lets bindings
// proceed together, an exclusive one waits for them and holds them off.
void lock_budget_key(const char *key, int len, bool exclusive);

// Adds a budget created by this transaction to shared memory (removed again
// if it aborts); raises 53400 when zizq.max_budgets are in use.
// Returns whether its live state is new: false when it was already in
// shared memory (deleted and inserted again in this transaction keeps it;
// see cancel_pending_drop).
bool register_new_budget(int32 id, const core::Policy &policy);

core::Policy policy_from_jsonb_text(const char *json_text, const char *key);

}  // namespace zizq::pg
