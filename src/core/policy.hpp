// zizq core: a budget's policy — strategy, allocation, duration, burst — and
// every rule that decides whether a policy is valid (SPEC §3).
//
// The JSON form is the one create_with and update_budget use:
//   {"allocation": 3, "strategy": {"type": "time_based", "duration_ms": 60000, "burst": 5}}
#pragma once

#include "core/cpp_only.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/json.hpp"

namespace zizq::core {

enum class Strategy : int32_t { WhileInFlight = 1, TimeBased = 2 };

inline constexpr int64_t kMaxAllocation = 1000000;
inline constexpr int64_t kMaxBurst = 1000000;
// Ten years as PostgreSQL counts an interval's epoch (365.25 days each, so
// that duration => '10 years' passes): long enough for any quota, short
// enough that the interval arithmetic of the SQL layer stays exact.
inline constexpr int64_t kMaxDurationMs = 315576000000;

// A plain value type: it is stored in shared memory as it is.
struct Policy {
  Strategy strategy = Strategy::WhileInFlight;
  int64_t allocation = 0;
  int64_t duration_ms = 0;  // time_based only; 0 for while_in_flight
  int64_t burst = 0;        // time_based only; 0 = not set (the allocation caps the pool)

  bool time_based() const { return strategy == Strategy::TimeBased; }
  // The most a job may cost: the burst where one is set, else the allocation.
  int64_t capacity() const { return burst > 0 ? burst : allocation; }
  bool operator==(const Policy &o) const {
    return strategy == o.strategy && allocation == o.allocation && duration_ms == o.duration_ms &&
           burst == o.burst;
  }
};

const char *strategy_name(Strategy s);
// Parses "while_in_flight" / "time_based"; throws 22023 naming the budget otherwise.
Strategy parse_strategy(std::string_view text, std::string_view budget_key);

// Builds a policy from define_budget's arguments; nullopt is "not given" (a
// negative value is given, and refused). Throws 22023 with a message naming
// the budget.
Policy make_policy(std::string_view budget_key, int64_t allocation, std::string_view strategy,
                   std::optional<int64_t> duration_ms, std::optional<int64_t> burst);

// Parses the JSON form (create_with). Unknown fields, wrong types and invalid
// values are refused with 22023.
Policy policy_from_json(const json::Value &form, std::string_view budget_key);

// The JSON form of a policy.
json::Value policy_to_json(const Policy &p);

// update_budget: RFC 7386 merge patch into the JSON form, recursing into
// "strategy"; a patch that changes strategy.type replaces the whole strategy
// object; "burst": null clears the cap. Returns the validated new policy.
Policy patch_policy(const Policy &current, const json::Value &patch, std::string_view budget_key);

}  // namespace zizq::core
