// Budget policy validation and update_budget's merge patch (SPEC §3, §4).
#include "check.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/policy.hpp"

using namespace zizq::core;
using json::parse;

namespace {
const Sqlstate kInvalid = Sqlstate::InvalidParameterValue;
Policy from(const char *text) { return policy_from_json(parse(text), "k"); }
Policy patched(const Policy &p, const char *patch) { return patch_policy(p, parse(patch), "k"); }
}  // namespace

TEST(make_policy_accepts_both_strategies) {
  Policy c = make_policy("c", 5, "while_in_flight", std::nullopt, std::nullopt);
  CHECK(!c.time_based());
  CHECK_EQ(c.capacity(), 5);
  Policy t = make_policy("t", 100, "time_based", 60000, 5);
  CHECK(t.time_based());
  CHECK_EQ(t.capacity(), 5);
  CHECK_EQ(make_policy("t", 100, "time_based", 60000, std::nullopt).capacity(), 100);
  CHECK_EQ(make_policy("t", 100, "time_based", 60000, 300).capacity(), 300);
}

TEST(make_policy_refuses_bad_values) {
  CHECK_THROWS(make_policy("k", 0, "while_in_flight", std::nullopt, std::nullopt), kInvalid);
  CHECK_THROWS(make_policy("k", 1000001, "while_in_flight", std::nullopt, std::nullopt), kInvalid);
  CHECK_THROWS(make_policy("k", 5, "concurrency", std::nullopt, std::nullopt), kInvalid);
  CHECK_THROWS(make_policy("k", 5, "while_in_flight", 1000, std::nullopt), kInvalid);  // duration given
  CHECK_THROWS(make_policy("k", 5, "while_in_flight", std::nullopt, 2), kInvalid);     // burst given
  CHECK_THROWS(make_policy("k", 5, "time_based", std::nullopt, std::nullopt), kInvalid);         // no duration
  CHECK_THROWS(make_policy("k", 5, "time_based", 0, std::nullopt), kInvalid);
  CHECK_THROWS(make_policy("k", 5, "time_based", 1000, 0), kInvalid);
  CHECK_THROWS(make_policy("k", 5, "time_based", 1000, 1000001), kInvalid);
  // A negative value is given, not "not given": refused, never dropped.
  CHECK_THROWS(make_policy("k", 5, "while_in_flight", -1000, std::nullopt), kInvalid);
  CHECK_THROWS(make_policy("k", 5, "while_in_flight", std::nullopt, -3), kInvalid);
  CHECK_THROWS(make_policy("k", 5, "time_based", -1000, std::nullopt), kInvalid);
  CHECK_THROWS(make_policy("k", 5, "time_based", 1000, -3), kInvalid);
  CHECK_THROWS(from(R"({"allocation": 1, "strategy": {"type": "while_in_flight", "burst": -1}})"), kInvalid);
  CHECK_THROWS(patched(from(R"({"allocation": 1, "strategy": {"type": "time_based", "duration_ms": 1000, "burst": 2}})"),
                       R"({"strategy": {"burst": -7}})"),
               kInvalid);
  // Ten years as an interval's epoch counts them ('10 years' = 3652.5 days).
  make_policy("k", 5, "time_based", 315576000000, std::nullopt);
  CHECK_THROWS(make_policy("k", 5, "time_based", 315576000001, std::nullopt), kInvalid);
}

TEST(policy_json_round_trip) {
  Policy p = from(R"({"allocation": 3, "strategy": {"type": "time_based", "duration_ms": 1000, "burst": 7}})");
  CHECK_EQ(json::serialize(policy_to_json(p)),
           std::string(R"({"allocation": 3, "strategy": {"type": "time_based", "duration_ms": 1000, "burst": 7}})"));
  CHECK(from(R"({"allocation": 3, "strategy": {"type": "while_in_flight"}})") ==
        make_policy("k", 3, "while_in_flight", std::nullopt, std::nullopt));
}

TEST(policy_json_refuses_bad_shapes) {
  CHECK_THROWS(from("[]"), kInvalid);
  CHECK_THROWS(from(R"({"allocation": 3})"), kInvalid);
  CHECK_THROWS(from(R"({"strategy": {"type": "while_in_flight"}})"), kInvalid);
  CHECK_THROWS(from(R"({"allocation": "3", "strategy": {"type": "while_in_flight"}})"), kInvalid);
  CHECK_THROWS(from(R"({"allocation": 2.5, "strategy": {"type": "while_in_flight"}})"), kInvalid);
  CHECK_THROWS(from(R"({"allocation": 3, "strategy": "while_in_flight"})"), kInvalid);
  CHECK_THROWS(from(R"({"allocation": 3, "strategy": {"type": "while_in_flight"}, "x": 1})"), kInvalid);
  CHECK_THROWS(from(R"({"allocation": 3, "strategy": {"type": "while_in_flight", "duration_ms": 5}})"), kInvalid);
  CHECK_THROWS(from(R"({"allocation": 3, "strategy": {"type": "time_based", "period": 5}})"), kInvalid);
}

TEST(patch_changes_one_field_inside_strategy) {
  Policy p = from(R"({"allocation": 100, "strategy": {"type": "time_based", "duration_ms": 60000}})");
  Policy q = patched(p, R"({"strategy": {"burst": 5}})");
  CHECK_EQ(q.burst, 5);
  CHECK_EQ(q.duration_ms, 60000);
  CHECK_EQ(q.allocation, 100);
  CHECK_EQ(patched(q, R"({"strategy": {"burst": null}})").burst, 0);
  CHECK_EQ(patched(q, R"({"allocation": 7})").allocation, 7);
}

TEST(patch_changing_type_replaces_the_strategy) {
  Policy p = from(R"({"allocation": 100, "strategy": {"type": "time_based", "duration_ms": 60000, "burst": 5}})");
  Policy q = patched(p, R"({"strategy": {"type": "while_in_flight"}})");
  CHECK(!q.time_based());
  CHECK_EQ(q.allocation, 100);
  Policy r = patched(q, R"({"allocation": 4, "strategy": {"type": "time_based", "duration_ms": 10}})");
  CHECK(r.time_based());
  CHECK_EQ(r.duration_ms, 10);
  CHECK_EQ(r.burst, 0);
  CHECK_THROWS(patched(q, R"({"strategy": {"type": "time_based"}})"), kInvalid);  // needs duration
}

TEST(patch_refuses_unknown_and_invalid_fields) {
  Policy p = from(R"({"allocation": 5, "strategy": {"type": "while_in_flight"}})");
  CHECK_THROWS(patched(p, R"({"allocations": 5})"), kInvalid);
  CHECK_THROWS(patched(p, R"({"strategy": {"colour": null}})"), kInvalid);
  CHECK_THROWS(patched(p, R"({"allocation": null})"), kInvalid);
  CHECK_THROWS(patched(p, R"({"allocation": 0})"), kInvalid);
  CHECK_THROWS(patched(p, R"({"strategy": {"burst": 3}})"), kInvalid);  // while_in_flight takes no burst
  CHECK_THROWS(patched(p, R"("x")"), kInvalid);
}
