// zizq core: budget policy validation, JSON form and merge-patch updates.
#include "core/policy.hpp"

#include <initializer_list>

#include "core/error.hpp"
#include "core/fields.hpp"
#include "core/merge_patch.hpp"

namespace zizq::core {
namespace {

std::string quoted(std::string_view key) { return "\"" + std::string(key) + "\""; }

void check_allocation(int64_t allocation, std::string_view key) {
  if (allocation < 1 || allocation > kMaxAllocation)
    invalid("allocation of budget " + quoted(key) + " must be between 1 and 1000000, not " +
            std::to_string(allocation));
}

void check_burst(int64_t burst, std::string_view key) {
  if (burst < 1 || burst > kMaxBurst)
    invalid("burst of budget " + quoted(key) + " must be between 1 and 1000000, not " + std::to_string(burst),
            "omit the burst to let the allocation cap the pool");
}

void check_duration(int64_t duration_ms, std::string_view key) {
  if (duration_ms < 1)
    invalid("duration of time_based budget " + quoted(key) + " must be at least 1 ms, not " +
                std::to_string(duration_ms) + " ms",
            "a time_based budget drips its allocation over its duration, e.g. duration => '1 minute'");
  if (duration_ms > kMaxDurationMs)
    invalid("duration of time_based budget " + quoted(key) + " must be at most 10 years");
}

void refuse_extra(std::string_view what, std::string_view key) {
  invalid("a while_in_flight budget takes no " + std::string(what) + " (budget " + quoted(key) + ")",
          "while_in_flight limits concurrency: tokens come back when a job stops running");
}

// One integer member of a JSON object; nullopt when missing or null.
std::optional<int64_t> integer_member(const json::Value &object, std::string_view name, std::string_view context) {
  const json::Value *v = object.find(name);
  if (v == nullptr || v->is_null()) return std::nullopt;
  return integer_value(*v, std::string(context) + "." + std::string(name));
}

}  // namespace

const char *strategy_name(Strategy s) { return s == Strategy::TimeBased ? "time_based" : "while_in_flight"; }

Strategy parse_strategy(std::string_view text, std::string_view budget_key) {
  if (text == "while_in_flight") return Strategy::WhileInFlight;
  if (text == "time_based") return Strategy::TimeBased;
  invalid("unknown strategy \"" + std::string(text) + "\" for budget " + quoted(budget_key),
          "strategy is \"while_in_flight\" (concurrency) or \"time_based\" (rate)");
}

Policy make_policy(std::string_view key, int64_t allocation, std::string_view strategy,
                   std::optional<int64_t> duration_ms, std::optional<int64_t> burst) {
  Policy p;
  p.strategy = parse_strategy(strategy, key);
  check_allocation(allocation, key);
  p.allocation = allocation;
  if (!p.time_based()) {
    if (duration_ms) refuse_extra("duration", key);
    if (burst) refuse_extra("burst", key);
    return p;
  }
  if (!duration_ms)
    invalid("time_based budget " + quoted(key) + " needs a duration",
            "give the period over which the allocation drips back, e.g. duration => '1 minute'");
  check_duration(*duration_ms, key);
  p.duration_ms = *duration_ms;
  if (burst) {
    check_burst(*burst, key);
    p.burst = *burst;
  }
  return p;
}

Policy policy_from_json(const json::Value &form, std::string_view key) {
  const std::string context = "budget " + quoted(key);
  expect_object(form, context);
  reject_unknown_members(form, {"allocation", "strategy"}, context);
  const json::Value *strategy = form.find("strategy");
  if (strategy == nullptr || strategy->is_null())
    invalid(context + " needs a strategy", "e.g. {\"allocation\": 5, \"strategy\": {\"type\": \"while_in_flight\"}}");
  expect_object(*strategy, context + ".strategy");
  reject_unknown_members(*strategy, {"type", "duration_ms", "burst"}, context + ".strategy");
  const json::Value *type = strategy->find("type");
  if (type == nullptr || type->is_null()) invalid(context + ".strategy needs a type");
  std::string type_text = string_value(*type, context + ".strategy.type");
  if (form.find("allocation") == nullptr || form.find("allocation")->is_null())
    invalid(context + " needs an allocation");
  int64_t allocation = *integer_member(form, "allocation", context);
  return make_policy(key, allocation, type_text, integer_member(*strategy, "duration_ms", context + ".strategy"),
                     integer_member(*strategy, "burst", context + ".strategy"));
}

json::Value policy_to_json(const Policy &p) {
  json::Value strategy = json::Value::object();
  strategy.set("type", json::Value::string(strategy_name(p.strategy)));
  if (p.time_based()) {
    strategy.set("duration_ms", json::Value::number(p.duration_ms));
    if (p.burst > 0) strategy.set("burst", json::Value::number(p.burst));
  }
  json::Value form = json::Value::object();
  form.set("allocation", json::Value::number(p.allocation));
  form.set("strategy", std::move(strategy));
  return form;
}

Policy patch_policy(const Policy &current, const json::Value &patch, std::string_view key) {
  const std::string context = "patch for budget " + quoted(key);
  expect_object(patch, context);
  reject_unknown_members(patch, {"allocation", "strategy"}, context);
  json::Value merged = policy_to_json(current);
  const json::Value *strategy = patch.find("strategy");
  if (strategy != nullptr && strategy->is_object()) {
    reject_unknown_members(*strategy, {"type", "duration_ms", "burst"}, context + ".strategy");
    const json::Value *type = strategy->find("type");
    bool changes_type = type != nullptr && type->is_string() && type->text != strategy_name(current.strategy);
    if (changes_type) {
      // A new strategy type replaces the strategy object whole: fields of the
      // old type (a time_based duration) must not leak into the new one.
      json::Value rest = patch;
      rest.erase("strategy");
      merged = json::merge_patch(merged, rest);
      merged.set("strategy", json::merge_patch(json::Value::null(), *strategy));
      return policy_from_json(merged, key);
    }
  }
  return policy_from_json(json::merge_patch(merged, patch), key);
}

}  // namespace zizq::core
