// zizq core: budget bindings (see bindings.hpp).
#include "core/bindings.hpp"

#include "core/error.hpp"
#include "core/fields.hpp"
#include "core/names.hpp"

namespace zizq::core {

void check_cost(int64_t cost, std::string_view key) {
  if (cost < 1)
    invalid("cost for budget \"" + std::string(key) + "\" must be at least 1, not " + std::to_string(cost));
  // No budget holds more (allocation and burst are at most 1,000,000): refused
  // here with the number given, before it would be narrowed to an integer.
  if (cost > kMaxAllocation)
    throw Error(Sqlstate::CheckViolation,
                "cost " + std::to_string(cost) + " for budget \"" + std::string(key) +
                    "\" is more than any budget's capacity (at most 1000000)",
                "a job whose cost exceeds a budget's capacity could never run");
}

void check_fits(int64_t cost, const Policy &policy, std::string_view key, const std::string &job) {
  if (cost <= policy.capacity()) return;
  std::string cap = policy.burst > 0 ? "burst" : "allocation";
  throw Error(Sqlstate::CheckViolation,
              job + " would cost " + std::to_string(cost) + " tokens, more than the capacity " +
                  std::to_string(policy.capacity()) + " (" + cap + ") of budget \"" + std::string(key) + "\"",
              "a job whose cost exceeds a budget's capacity could never run; lower the cost or raise the " + cap);
}

std::vector<BindingSpec> parse_bindings(const json::Value &budgets, const std::string &what) {
  std::vector<BindingSpec> specs;
  if (budgets.is_null()) return specs;
  expect_array(budgets, what);
  if (budgets.items.size() > static_cast<std::size_t>(kMaxBindings))
    invalid(what + " names " + std::to_string(budgets.items.size()) + " budgets; a job can be bound to at most " +
            std::to_string(kMaxBindings));
  for (std::size_t i = 0; i < budgets.items.size(); ++i) {
    const json::Value &item = budgets.items[i];
    const std::string context = what + "[" + std::to_string(i) + "]";
    expect_object(item, context);
    reject_unknown_members(item, {"key", "cost", "create_with"}, context);
    BindingSpec spec;
    const json::Value *key = item.find("key");
    if (key == nullptr) invalid(context + " needs a \"key\"");
    spec.key = string_value(*key, context + ".key");
    check_name("budget key", spec.key);
    for (const BindingSpec &earlier : specs)
      if (earlier.key == spec.key)
        invalid("budget \"" + spec.key + "\" is named twice in " + what, "a job names a budget at most once");
    if (const json::Value *cost = item.find("cost"); cost != nullptr && !cost->is_null()) {
      spec.cost = integer_value(*cost, context + ".cost");
      check_cost(spec.cost, spec.key);
    }
    if (const json::Value *create_with = item.find("create_with"); create_with != nullptr && !create_with->is_null()) {
      // Only validated here: whether the cost fits is asked of the policy
      // that applies, the stored one or the call's first definition, once
      // the budget is resolved (an existing budget ignores create_with).
      spec.create_with = policy_from_json(*create_with, spec.key);
      spec.has_create_with = true;
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace zizq::core
