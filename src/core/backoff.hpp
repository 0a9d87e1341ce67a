// zizq core: retry backoff and retention (SPEC §2 "Retries, backoff,
// retention").
//
// delay = attempts^exponent * 1000 + base_ms + random[0,1) * jitter_ms * attempts
// (milliseconds, attempts counted after the failure). A job's own backoff or
// retention object overrides the server defaults field by field.
#pragma once

#include "core/cpp_only.hpp"

#include <cstdint>
#include <string>

#include "core/json.hpp"

namespace zizq::core {

struct Backoff {
  double base_ms = 15000;
  double exponent = 4;
  double jitter_ms = 30000;
};

struct Retention {
  int64_t completed_ms = 0;
  int64_t dead_ms = 7LL * 24 * 3600 * 1000;
};

// Validates a per-job backoff object ({"base_ms", "exponent", "jitter_ms"},
// all optional, non-negative). `what` names the field in errors.
void check_backoff(const json::Value &v, const std::string &what);
Backoff backoff_with(const Backoff &defaults, const json::Value *job_backoff,
                     const std::string &what = "backoff");

// The longest retention a job may ask for: ten years, as a budget's
// duration (365.25 days each); far enough for "keep it", near enough for
// timestamp arithmetic.
inline constexpr int64_t kMaxRetentionMs = 315576000000;

// Validates a per-job retention object ({"completed_ms", "dead_ms"}, each
// 0..kMaxRetentionMs).
void check_retention(const json::Value &v, const std::string &what);
// A job's retention over the defaults, each at most kMaxRetentionMs unless
// `clamp` is false (check_retention refuses more instead).
Retention retention_with(const Retention &defaults, const json::Value *job_retention,
                         const std::string &what = "retention", bool clamp = true);

// Milliseconds before the next attempt; random01 in [0, 1). Capped at ten
// years so that the caller's timestamp arithmetic cannot overflow.
int64_t backoff_delay_ms(const Backoff &b, int64_t attempts, double random01);

// The attempt number a job dies after: with retry_limit 2 the third failure
// (attempts = 3) is fatal.
bool retries_exhausted(int64_t attempts, int64_t retry_limit);

}  // namespace zizq::core
