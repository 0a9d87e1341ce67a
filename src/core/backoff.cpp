// zizq core: backoff and retention (see backoff.hpp).
#include "core/backoff.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/fields.hpp"

namespace zizq::core {
namespace {

constexpr double kMaxDelayMs = 315360000000.0;  // ten years

double non_negative(const json::Value &object, std::string_view name, const std::string &what, double absent) {
  const json::Value *v = object.find(name);
  if (v == nullptr) return absent;
  std::string field = what + "." + std::string(name);
  double d = number_value(*v, field);
  if (d < 0) invalid(field + " must not be negative, not " + v->text);
  return d;
}

int64_t non_negative_integer(const json::Value &object, std::string_view name, const std::string &what,
                             int64_t absent) {
  const json::Value *v = object.find(name);
  if (v == nullptr) return absent;
  std::string field = what + "." + std::string(name);
  int64_t n = integer_value(*v, field);
  if (n < 0) invalid(field + " must not be negative, not " + v->text);
  return n;
}

}  // namespace

void check_backoff(const json::Value &v, const std::string &what) {
  expect_object(v, what);
  reject_unknown_members(v, {"base_ms", "exponent", "jitter_ms"}, what);
  Backoff b = backoff_with(Backoff{}, &v, what);
  if (b.exponent > 100) invalid(what + ".exponent must be at most 100");
}

Backoff backoff_with(const Backoff &defaults, const json::Value *job_backoff, const std::string &what) {
  if (job_backoff == nullptr || job_backoff->is_null()) return defaults;
  Backoff b;
  b.base_ms = non_negative(*job_backoff, "base_ms", what, defaults.base_ms);
  b.exponent = non_negative(*job_backoff, "exponent", what, defaults.exponent);
  b.jitter_ms = non_negative(*job_backoff, "jitter_ms", what, defaults.jitter_ms);
  return b;
}

void check_retention(const json::Value &v, const std::string &what) {
  expect_object(v, what);
  reject_unknown_members(v, {"completed_ms", "dead_ms"}, what);
  Retention r = retention_with(Retention{}, &v, what, /*clamp=*/false);
  // Refused at enqueue and patch, not at the complete or fail that adds it
  // to a timestamp and would overflow.
  for (auto [name, ms] : {std::pair{"completed_ms", r.completed_ms}, std::pair{"dead_ms", r.dead_ms}})
    if (ms > kMaxRetentionMs)
      invalid(what + "." + name + " must be at most " + std::to_string(kMaxRetentionMs) + " (ten years), not " +
              std::to_string(ms));
}

Retention retention_with(const Retention &defaults, const json::Value *job_retention, const std::string &what,
                         bool clamp) {
  if (job_retention == nullptr || job_retention->is_null()) return defaults;
  Retention r;
  r.completed_ms = non_negative_integer(*job_retention, "completed_ms", what, defaults.completed_ms);
  r.dead_ms = non_negative_integer(*job_retention, "dead_ms", what, defaults.dead_ms);
  if (clamp) {  // a job stored before the bound existed still finishes
    r.completed_ms = std::min(r.completed_ms, kMaxRetentionMs);
    r.dead_ms = std::min(r.dead_ms, kMaxRetentionMs);
  }
  return r;
}

int64_t backoff_delay_ms(const Backoff &b, int64_t attempts, double random01) {
  double n = static_cast<double>(std::max<int64_t>(attempts, 0));
  double delay = std::pow(n, b.exponent) * 1000.0 + b.base_ms + random01 * b.jitter_ms * n;
  if (!std::isfinite(delay) || delay > kMaxDelayMs) delay = kMaxDelayMs;
  return static_cast<int64_t>(delay);
}

bool retries_exhausted(int64_t attempts, int64_t retry_limit) { return attempts > retry_limit; }

}  // namespace zizq::core
