// Names, bindings, backoff, retention and job patches (SPEC §2, §3, §4).
#include <map>
#include <set>

#include "check.hpp"
#include "core/admission.hpp"
#include "core/backoff.hpp"
#include "core/bindings.hpp"
#include "core/error.hpp"
#include "core/job_spec.hpp"
#include "core/json.hpp"
#include "core/names.hpp"

using namespace zizq::core;
using json::parse;

namespace {
const Sqlstate kInvalid = Sqlstate::InvalidParameterValue;
std::vector<BindingSpec> bindings(const char *text) { return parse_bindings(parse(text), "budgets"); }
}  // namespace

TEST(names_refuse_reserved_characters) {
  check_name("queue", "emails");
  check_name("queue", "emails.high priority-1");
  CHECK_THROWS(check_name("queue", ""), kInvalid);
  for (const char *bad : {"a,b", "a*", "a?", "[a", "a]", "{a", "a}", "a\\b"})
    CHECK_THROWS(check_name("queue", bad), kInvalid);
  CHECK_THROWS(check_name("type", std::string(256, 'x')), kInvalid);
  check_name("type", std::string(255, 'x'));
}

TEST(bindings_parse_with_defaults) {
  auto specs = bindings(R"([{"key": "emails"}, {"key": "stripe", "cost": 2,
      "create_with": {"allocation": 3, "strategy": {"type": "while_in_flight"}}}])");
  CHECK_EQ(specs.size(), size_t(2));
  CHECK_EQ(specs[0].key, std::string("emails"));
  CHECK_EQ(specs[0].cost, 1);
  CHECK(!specs[0].has_create_with);
  CHECK_EQ(specs[1].cost, 2);
  CHECK(specs[1].has_create_with);
  CHECK_EQ(specs[1].create_with.allocation, 3);
  CHECK(bindings("null").empty());
  CHECK(bindings("[]").empty());
}

TEST(bindings_refuse_bad_input) {
  CHECK_THROWS(bindings(R"({"key": "a"})"), kInvalid);
  CHECK_THROWS(bindings(R"(["a"])"), kInvalid);
  CHECK_THROWS(bindings(R"([{"cost": 1}])"), kInvalid);
  CHECK_THROWS(bindings(R"([{"key": 1}])"), kInvalid);
  CHECK_THROWS(bindings(R"([{"key": "a,b"}])"), kInvalid);
  CHECK_THROWS(bindings(R"([{"key": "a", "cost": 0}])"), kInvalid);
  CHECK_THROWS(bindings(R"([{"key": "a", "cost": "2"}])"), kInvalid);
  CHECK_THROWS(bindings(R"([{"key": "a", "cost": 3000000000}])"), Sqlstate::CheckViolation);
  CHECK_EQ(bindings(R"([{"key": "a", "cost": 1000000}])")[0].cost, 1000000);
  CHECK_THROWS(bindings(R"([{"key": "a", "weight": 2}])"), kInvalid);
  CHECK_THROWS(bindings(R"([{"key": "a"}, {"key": "a"}])"), kInvalid);
  CHECK_THROWS(bindings(R"([{"key":"a"},{"key":"b"},{"key":"c"},{"key":"d"},{"key":"e"}])"), kInvalid);
  CHECK_THROWS(bindings(R"([{"key": "a", "create_with": {"allocation": 1}}])"), kInvalid);
  // A create_with is validated, but the cost is not checked against it here:
  // an existing budget ignores it (checked once resolved, against the policy
  // that applies).
  CHECK_THROWS(bindings(R"([{"key": "a", "create_with": {"allocation": 0, "strategy": {"type": "while_in_flight"}}}])"),
               kInvalid);
  CHECK_EQ(bindings(R"([{"key": "a", "cost": 4,
      "create_with": {"allocation": 3, "strategy": {"type": "while_in_flight"}}}])")[0].cost, 4);
}

TEST(capacity_rule_uses_burst_when_set) {
  Policy p = make_policy("k", 10, "time_based", 1000, 2);
  check_fits(2, p, "k", "job 1");
  CHECK_THROWS(check_fits(3, p, "k", "job 1"), Sqlstate::CheckViolation);
  check_fits(10, make_policy("k", 10, "time_based", 1000, std::nullopt), "k", "job 1");
}

TEST(backoff_formula) {
  Backoff b;  // 15000 + attempts^4 * 1000 + rand * 30000 * attempts
  CHECK_EQ(backoff_delay_ms(b, 1, 0.0), 16000);
  CHECK_EQ(backoff_delay_ms(b, 2, 0.0), 31000);
  CHECK_EQ(backoff_delay_ms(b, 2, 0.5), 61000);
  json::Value flat_json = parse(R"({"base_ms": 100, "exponent": 0, "jitter_ms": 0})");
  Backoff flat = backoff_with(b, &flat_json);
  CHECK_EQ(backoff_delay_ms(flat, 7, 0.99), 1100);
  CHECK_EQ(backoff_delay_ms(b, 1000000, 0.0), 315360000000);  // capped
  CHECK(!retries_exhausted(2, 2));
  CHECK(retries_exhausted(3, 2));
  CHECK(retries_exhausted(1, 0));
}

TEST(backoff_and_retention_objects_are_validated) {
  check_backoff(parse(R"({"base_ms": 1, "exponent": 1.5})"), "backoff");
  CHECK_THROWS(check_backoff(parse(R"({"base": 1})"), "backoff"), kInvalid);
  CHECK_THROWS(check_backoff(parse(R"({"base_ms": -1})"), "backoff"), kInvalid);
  CHECK_THROWS(check_backoff(parse(R"({"jitter_ms": "1"})"), "backoff"), kInvalid);
  CHECK_THROWS(check_backoff(parse("[]"), "backoff"), kInvalid);
  check_retention(parse(R"({"completed_ms": 60000})"), "retention");
  CHECK_THROWS(check_retention(parse(R"({"completed_ms": 1.5})"), "retention"), kInvalid);
  CHECK_THROWS(check_retention(parse(R"({"failed_ms": 1})"), "retention"), kInvalid);
  // Ten years at most: a complete or fail adds it to a timestamp.
  check_retention(parse(R"({"completed_ms": 315576000000, "dead_ms": 0})"), "retention");
  CHECK_THROWS(check_retention(parse(R"({"completed_ms": 315576000001})"), "retention"), kInvalid);
  CHECK_THROWS(check_retention(parse(R"({"dead_ms": 9223372036854775807})"), "retention"), kInvalid);
  json::Value stored = parse(R"({"dead_ms": 9223372036854775807})");  // stored before the bound
  CHECK_EQ(retention_with(Retention{}, &stored).dead_ms, kMaxRetentionMs);
  Retention r = retention_with(Retention{}, nullptr);
  CHECK_EQ(r.completed_ms, 0);
  CHECK_EQ(r.dead_ms, 604800000);
}

TEST(job_fields_and_types) {
  CHECK(job_field("queue", "jobs[0]") == JobField::Queue);
  CHECK_THROWS(job_field("queues", "jobs[0]"), kInvalid);
  check_job_field_type(JobField::Priority, json::Type::Number, "jobs[0]");
  // null: what SQL NULL is for enqueue's argument; never a silent default.
  CHECK_THROWS(check_job_field_type(JobField::Priority, json::Type::Null, "jobs[0]"), kInvalid);
  CHECK_THROWS(check_job_field_type(JobField::UniqueWhile, json::Type::Null, "jobs[0]"), kInvalid);
  for (JobField optional : {JobField::ReadyAt, JobField::Budgets, JobField::UniqueKey, JobField::RetryLimit,
                            JobField::Backoff, JobField::Retention})
    check_job_field_type(optional, json::Type::Null, "jobs[0]");
  check_job_field_type(JobField::Payload, json::Type::Null, "jobs[0]");
  CHECK_THROWS(check_job_field_type(JobField::Priority, json::Type::String, "jobs[0]"), kInvalid);
  CHECK_THROWS(check_job_field_type(JobField::Queue, json::Type::Null, "jobs[0]"), kInvalid);
  check_job_field_type(JobField::Payload, json::Type::String, "jobs[0]");
  CHECK_THROWS(check_priority(65536, "priority"), kInvalid);
  CHECK_THROWS(check_priority(-1, "priority"), kInvalid);
  check_priority(0, "priority");
  CHECK(parse_unique_while("active", "unique_while") == UniqueWhile::Active);
  CHECK_THROWS(parse_unique_while("always", "unique_while"), kInvalid);
}

TEST(job_patch_parses_every_field) {
  JobPatch p = parse_job_patch(parse(
      R"({"queue": "q2", "priority": 5, "ready_at": null, "retry_limit": 3, "backoff": {"base_ms": 1}, "retention": null})"));
  CHECK_EQ(*p.queue, std::string("q2"));
  CHECK_EQ(*p.priority, 5);
  CHECK(p.ready_at == JobPatch::Change::Reset);
  CHECK(p.retry_limit == JobPatch::Change::Set);
  CHECK_EQ(p.retry_limit_value, 3);
  CHECK(p.backoff == JobPatch::Change::Set);
  CHECK(p.retention == JobPatch::Change::Reset);
  CHECK(parse_job_patch(parse("{}")).ready_at == JobPatch::Change::Keep);
  CHECK_THROWS(parse_job_patch(parse(R"({"status": "ready"})")), kInvalid);
  CHECK_THROWS(parse_job_patch(parse(R"({"queue": "a*"})")), kInvalid);
  CHECK_THROWS(parse_job_patch(parse(R"({"priority": 70000})")), kInvalid);
  CHECK_THROWS(parse_job_patch(parse(R"({"ready_at": 5})")), kInvalid);
  CHECK_THROWS(parse_job_patch(parse(R"({"backoff": 5})")), kInvalid);
}

TEST(timestamps_must_be_iso8601) {
  for (const char *good : {"2027-01-31", "2027-01-31T09:30", "2027-01-31T09:30:00Z", "2027-01-31 09:30:00.123456+01:00",
                           "2028-02-29T00:00:00-0530", "2027-12-31t23:59:59z", "0001-01-01 00:00+15",
                           "1890-01-01 00:00:00+00:53:28", "2026-12-02T03:20:44.123Z", "2026-12-31T23:59:60Z"})
    check_iso8601_timestamp(good, "ready_at");
  for (const char *bad : {"", "now", "tomorrow", "infinity", "-infinity", "2027-1-31", "27-01-31", "2027-13-01",
                          "2027-02-29", "2027-04-31", "0000-01-01", "2027-01-31T24:00", "2027-01-31T09:60",
                          "2027-01-31T09:30:61", "2027-01-31T09", "2027-01-31T09:30:00.", "2027-01-31T09:30+16",
                          "2027-01-31T09:30+01:6", "2027-01-31T09:30Zulu", "2027-01-31T09:30+01:00:6", "2027-01-31 09:30:00 UTC",
                          "Jan 31 2027", "2027-01-31x", "12027-01-31"})
    CHECK_THROWS(check_iso8601_timestamp(bad, "ready_at"), kInvalid);
  CHECK_THROWS(parse_job_patch(parse(R"({"ready_at": "tomorrow"})")), kInvalid);
  CHECK(parse_job_patch(parse(R"({"ready_at": "2027-01-31T09:30:00Z"})")).ready_at == JobPatch::Change::Set);
}

TEST(job_patch_merges_backoff_objects) {
  json::Value merged = merged_backoff(parse(R"({"base_ms": 1, "jitter_ms": 2})"), parse(R"({"jitter_ms": null, "exponent": 2})"));
  CHECK_EQ(json::serialize(merged), std::string(R"({"base_ms": 1, "exponent": 2})"));
  CHECK(merged_backoff(parse(R"({"base_ms": 1})"), parse(R"({"base_ms": null})")).is_null());
  CHECK_THROWS(merged_backoff(json::Value::null(), parse(R"({"base_ms": -5})")), kInvalid);
}

// --- dispatch order (admission) ------------------------------------------------

namespace {

struct FakeBudgets {
  std::map<int32_t, int64_t> tokens;
  std::set<std::pair<int32_t, int64_t>> parked_ahead;  // (budget, candidate id)
  bool debit(const Candidate &c) {
    for (int i = 0; i < c.nbindings; ++i)
      if (tokens[c.bindings[i].budget] < c.bindings[i].cost) return false;
    for (int i = 0; i < c.nbindings; ++i) tokens[c.bindings[i].budget] -= c.bindings[i].cost;
    return true;
  }
};

std::vector<Verdict> walk(FakeBudgets &budgets, const std::vector<Candidate> &candidates) {
  int32_t storage[64];
  BlockedBudgets blocked{storage, 0, 64};
  std::vector<Verdict> out;
  for (const Candidate &c : candidates)
    out.push_back(admit(
        blocked, c,
        [&](const Candidate &cand, const Binding &b) { return budgets.parked_ahead.count({b.budget, cand.id}) > 0; },
        [&](const Candidate &cand) { return budgets.debit(cand); }));
  return out;
}

}  // namespace

TEST(admission_takes_unbudgeted_jobs_past_a_blocked_budget) {
  FakeBudgets budgets;
  budgets.tokens[1] = 0;
  Binding b1[] = {{1, 1}};
  auto v = walk(budgets, {{1, 0, b1, 1}, {2, 0, nullptr, 0}, {3, 0, b1, 1}});
  CHECK(v[0] == Verdict::Unaffordable);
  CHECK(v[1] == Verdict::Take);
  CHECK(v[2] == Verdict::Blocked);
}

TEST(admission_keeps_fifo_within_a_budget) {
  FakeBudgets budgets;
  budgets.tokens[1] = 2;
  Binding costly[] = {{1, 3}};
  Binding cheap[] = {{1, 1}};
  auto v = walk(budgets, {{1, 0, costly, 1}, {2, 0, cheap, 1}});
  CHECK(v[0] == Verdict::Unaffordable);
  CHECK(v[1] == Verdict::Blocked);  // the cheap job does not overtake
  CHECK_EQ(budgets.tokens[1], 2);
}

TEST(admission_a_multi_budget_job_heads_each_line) {
  FakeBudgets budgets;
  budgets.tokens[1] = 0;  // exhausted
  budgets.tokens[2] = 5;
  Binding both[] = {{1, 1}, {2, 1}};
  Binding only2[] = {{2, 1}};
  Binding only3[] = {{3, 1}};
  budgets.tokens[3] = 1;
  auto v = walk(budgets, {{1, 0, both, 2}, {2, 0, only2, 1}, {3, 0, only3, 1}});
  CHECK(v[0] == Verdict::Unaffordable);
  CHECK(v[1] == Verdict::Blocked);  // behind job 1 in budget 2's line
  CHECK(v[2] == Verdict::Take);     // other budgets are not held back
  CHECK_EQ(budgets.tokens[2], 5);   // all or nothing: nothing debited for job 1
}

TEST(admission_respects_parked_jobs_ahead) {
  FakeBudgets budgets;
  budgets.tokens[1] = 10;
  budgets.parked_ahead.insert({1, 7});
  Binding b1[] = {{1, 1}};
  auto v = walk(budgets, {{7, 0, b1, 1}, {8, 0, b1, 1}});
  CHECK(v[0] == Verdict::Blocked);
  CHECK(v[1] == Verdict::Blocked);
  CHECK_EQ(budgets.tokens[1], 10);
}

TEST(admission_order_is_priority_then_id) {
  Candidate a{5, 10, nullptr, 0}, b{3, 20, nullptr, 0}, c{4, 10, nullptr, 0};
  CHECK(runs_before(c, a));
  CHECK(runs_before(a, b));
  CHECK(!runs_before(b, c));
}
