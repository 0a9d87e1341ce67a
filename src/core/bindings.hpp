// zizq core: a job's budget bindings — the `budgets` argument of enqueue,
// enqueue_many and replace_budgets, and the capacity rule every binding obeys.
//
//   [{"key": "emails"}, {"key": "stripe", "cost": 2,
//     "create_with": {"allocation": 3, "strategy": {"type": "while_in_flight"}}}]
#pragma once

#include "core/cpp_only.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/policy.hpp"

namespace zizq::core {

// A job names at most this many budgets: every position has its own parked-
// line index (sql/zizq--1.0.sql, "parked lines").
inline constexpr int kMaxBindings = 4;

struct BindingSpec {
  std::string key;
  int64_t cost = 1;
  bool has_create_with = false;
  Policy create_with;  // valid when has_create_with
};

// Validates the array; null means no budgets. Refuses (22023) a non-array,
// non-object elements, unknown fields, bad keys, costs below 1, a budget
// named twice and more than kMaxBindings budgets. `what` names the argument.
std::vector<BindingSpec> parse_bindings(const json::Value &budgets, const std::string &what);

void check_cost(int64_t cost, std::string_view key);

// The capacity rule: a job whose cost exceeds a budget's capacity could never
// run (23514). `job` describes the job for the message ("job 42", "the job").
void check_fits(int64_t cost, const Policy &policy, std::string_view key, const std::string &job);

}  // namespace zizq::core
