// zizq core: the fields of a job as callers give them — enqueue arguments,
// enqueue_many elements and update_job patches — and their rules (SPEC §2).
#pragma once

#include "core/cpp_only.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/json.hpp"

namespace zizq::core {

inline constexpr int64_t kMinPriority = 0;
inline constexpr int64_t kMaxPriority = 65535;
inline constexpr int64_t kDefaultPriority = 32768;

enum class UniqueWhile { Queued, Active, Exists };

// The fields an enqueue_many element may carry, with the JSON type each wants.
enum class JobField { Queue, Type, Payload, Priority, ReadyAt, Budgets, UniqueKey, UniqueWhile, RetryLimit, Backoff, Retention };

// Looks up an element field by name; unknown names are refused (22023).
JobField job_field(std::string_view name, const std::string &context);
const char *job_field_name(JobField f);
// Refuses a value of the wrong JSON type for the field. A null means what
// SQL NULL means for enqueue's argument: "not given" where the argument
// defaults to NULL (ready_at, budgets, unique_key, retry_limit, backoff,
// retention); refused where enqueue refuses NULL (queue, type, priority,
// unique_while), never a silent default. A payload may be any JSON value,
// null included, as enqueue's jsonb argument may.
void check_job_field_type(JobField f, json::Type actual, const std::string &context);

// Refuses text that is not an ISO 8601 date or date and time (SPEC §2:
// timestamps in enqueue_many and patches are ISO 8601 text):
// YYYY-MM-DD, then optionally "T" (or a space) and hh:mm[:ss[.fraction]],
// then optionally Z or an offset +hh[[:]mm[[:]ss]]. Each part is range-checked
// (the day against its month), so what passes PostgreSQL can read; words
// PostgreSQL also reads ("now", "tomorrow", "infinity") are refused.
void check_iso8601_timestamp(std::string_view text, const std::string &what);

void check_priority(int64_t priority, const std::string &what);
void check_retry_limit(int64_t retry_limit, const std::string &what);
UniqueWhile parse_unique_while(std::string_view text, const std::string &what);
const char *unique_while_name(UniqueWhile u);

// An update_job patch, validated. Absent fields stay as they are.
struct JobPatch {
  enum class Change { Keep, Reset, Set };
  std::optional<std::string> queue;
  std::optional<int64_t> priority;
  Change ready_at = Change::Keep;  // Reset = now
  std::string ready_at_text;       // ISO 8601 (checked), converted by the caller (Set)
  Change retry_limit = Change::Keep;
  int64_t retry_limit_value = 0;
  Change backoff = Change::Keep;   // Set: merge `backoff_patch` into the job's backoff
  json::Value backoff_patch;
  Change retention = Change::Keep;
  json::Value retention_patch;
};

JobPatch parse_job_patch(const json::Value &patch);

// Merges a patch into a job's backoff/retention object (null = no override)
// and validates the result; returns null when nothing is left to override.
json::Value merged_backoff(const json::Value &current, const json::Value &patch);
json::Value merged_retention(const json::Value &current, const json::Value &patch);

}  // namespace zizq::core
