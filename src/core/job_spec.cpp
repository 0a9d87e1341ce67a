// zizq core: job field rules (see job_spec.hpp).
#include "core/job_spec.hpp"

#include "core/backoff.hpp"
#include "core/error.hpp"
#include "core/fields.hpp"
#include "core/merge_patch.hpp"
#include "core/names.hpp"

namespace zizq::core {
namespace {

// What a JSON null in the field means (see check_job_field_type).
enum class OnNull { Refused, NotGiven, Value };

struct FieldInfo {
  JobField field;
  const char *name;
  json::Type type;
  OnNull on_null;
  const char *null_hint;  // for OnNull::Refused
};

constexpr FieldInfo kFields[] = {
    {JobField::Queue, "queue", json::Type::String, OnNull::Refused, nullptr},
    {JobField::Type, "type", json::Type::String, OnNull::Refused, nullptr},
    {JobField::Payload, "payload", json::Type::Null, OnNull::Value, nullptr},  // any JSON
    {JobField::Priority, "priority", json::Type::Number, OnNull::Refused, "leave it out for the default, 32768"},
    {JobField::ReadyAt, "ready_at", json::Type::String, OnNull::NotGiven, nullptr},
    {JobField::Budgets, "budgets", json::Type::Array, OnNull::NotGiven, nullptr},
    {JobField::UniqueKey, "unique_key", json::Type::String, OnNull::NotGiven, nullptr},
    {JobField::UniqueWhile, "unique_while", json::Type::String, OnNull::Refused,
     "leave it out for the default, \"queued\""},
    {JobField::RetryLimit, "retry_limit", json::Type::Number, OnNull::NotGiven, nullptr},
    {JobField::Backoff, "backoff", json::Type::Object, OnNull::NotGiven, nullptr},
    {JobField::Retention, "retention", json::Type::Object, OnNull::NotGiven, nullptr},
};

const FieldInfo &info(JobField f) {
  for (const FieldInfo &fi : kFields)
    if (fi.field == f) return fi;
  throw Error(Sqlstate::InternalError, "unknown job field");
}

const char *type_name(json::Type t) {
  switch (t) {
    case json::Type::Null: return "null";
    case json::Type::Bool: return "boolean";
    case json::Type::Number: return "number";
    case json::Type::String: return "string";
    case json::Type::Array: return "array";
    case json::Type::Object: return "object";
  }
  return "value";
}

json::Value merged_object(const json::Value &current, const json::Value &patch) {
  if (patch.is_null()) return json::Value::null();
  json::Value merged = json::merge_patch(current.is_object() ? current : json::Value::object(), patch);
  return merged.members.empty() ? json::Value::null() : merged;
}

}  // namespace

JobField job_field(std::string_view name, const std::string &context) {
  for (const FieldInfo &fi : kFields)
    if (name == fi.name) return fi.field;
  std::string list;
  for (const FieldInfo &fi : kFields) list += (list.empty() ? "" : ", ") + std::string(fi.name);
  invalid("unknown field \"" + std::string(name) + "\" in " + context, "known fields: " + list);
}

const char *job_field_name(JobField f) { return info(f).name; }

void check_job_field_type(JobField f, json::Type actual, const std::string &context) {
  const FieldInfo &fi = info(f);
  if (fi.on_null == OnNull::Value) return;
  if (actual == json::Type::Null) {
    if (fi.on_null == OnNull::Refused)
      invalid(context + "." + fi.name + " must not be null", fi.null_hint ? fi.null_hint : "");
    return;
  }
  if (actual != fi.type)
    invalid(context + "." + fi.name + " must be " + (fi.type == json::Type::Array || fi.type == json::Type::Object ? "an " : "a ") +
            type_name(fi.type) + ", not " + type_name(actual));
}

void check_priority(int64_t priority, const std::string &what) {
  if (priority < kMinPriority || priority > kMaxPriority)
    invalid(what + " must be between 0 and 65535, not " + std::to_string(priority),
            "lower runs first; the default is 32768");
}

void check_retry_limit(int64_t retry_limit, const std::string &what) {
  if (retry_limit < 0) invalid(what + " must not be negative, not " + std::to_string(retry_limit));
}

UniqueWhile parse_unique_while(std::string_view text, const std::string &what) {
  if (text == "queued") return UniqueWhile::Queued;
  if (text == "active") return UniqueWhile::Active;
  if (text == "exists") return UniqueWhile::Exists;
  invalid(what + " must be \"queued\", \"active\" or \"exists\", not \"" + std::string(text) + "\"",
          "queued: while scheduled or ready; active: also while in flight; exists: until purged");
}

const char *unique_while_name(UniqueWhile u) {
  switch (u) {
    case UniqueWhile::Queued: return "queued";
    case UniqueWhile::Active: return "active";
    case UniqueWhile::Exists: return "exists";
  }
  return "queued";
}

namespace {

// Reads `width` digits at `pos` into `out`; false if any is not a digit.
bool digits(std::string_view s, size_t pos, size_t width, int &out) {
  if (pos + width > s.size()) return false;
  out = 0;
  for (size_t i = pos; i < pos + width; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

int days_in_month(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

// The time of day and zone after the date's separator, from `pos`.
bool iso8601_time(std::string_view s, size_t pos) {
  int hour, minute, second, zone_hour, zone_minute;
  if (!digits(s, pos, 2, hour) || hour > 23 || pos + 2 >= s.size() || s[pos + 2] != ':' ||
      !digits(s, pos + 3, 2, minute) || minute > 59)
    return false;
  pos += 5;
  if (pos < s.size() && s[pos] == ':') {
    if (!digits(s, pos + 1, 2, second) || second > 60) return false;  // 60: a leap second
    pos += 3;
    if (pos < s.size() && s[pos] == '.') {
      size_t first = ++pos;
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
      if (pos == first) return false;
    }
  }
  if (pos == s.size()) return true;  // local time: the session's TimeZone
  if ((s[pos] == 'Z' || s[pos] == 'z') && pos + 1 == s.size()) return true;
  if (s[pos] != '+' && s[pos] != '-') return false;
  if (!digits(s, pos + 1, 2, zone_hour) || zone_hour > 15) return false;  // PostgreSQL's widest offset
  pos += 3;
  if (pos == s.size()) return true;
  bool extended = s[pos] == ':';
  if (extended) ++pos;
  if (!digits(s, pos, 2, zone_minute) || zone_minute > 59) return false;
  pos += 2;
  if (pos == s.size()) return true;
  // Seconds of an offset, as PostgreSQL writes historical zones' (+00:53:28).
  int zone_second;
  if (extended && s[pos] == ':') ++pos;
  return digits(s, pos, 2, zone_second) && zone_second <= 59 && pos + 2 == s.size();
}

}  // namespace

void check_iso8601_timestamp(std::string_view s, const std::string &what) {
  int year, month, day;
  bool ok = digits(s, 0, 4, year) && year >= 1 && s.size() >= 10 && s[4] == '-' && digits(s, 5, 2, month) &&
            month >= 1 && month <= 12 && s[7] == '-' && digits(s, 8, 2, day) && day >= 1 &&
            day <= days_in_month(year, month) &&
            (s.size() == 10 || ((s[10] == 'T' || s[10] == 't' || s[10] == ' ') && iso8601_time(s, 11)));
  if (!ok)
    invalid(what + " must be an ISO 8601 timestamp, not \"" + std::string(s) + "\"",
            "for example \"2027-01-31T09:30:00Z\" or \"2027-01-31 09:30:00+01:00\"");
}

JobPatch parse_job_patch(const json::Value &patch) {
  const std::string context = "job patch";
  expect_object(patch, context);
  reject_unknown_members(patch, {"queue", "priority", "ready_at", "retry_limit", "backoff", "retention"}, context);
  JobPatch out;
  if (const json::Value *v = patch.find("queue")) {
    out.queue = string_value(*v, "patch.queue");
    check_name("queue", *out.queue);
  }
  if (const json::Value *v = patch.find("priority")) {
    out.priority = integer_value(*v, "patch.priority");
    check_priority(*out.priority, "patch.priority");
  }
  if (const json::Value *v = patch.find("ready_at")) {
    out.ready_at = v->is_null() ? JobPatch::Change::Reset : JobPatch::Change::Set;
    if (!v->is_null()) {
      out.ready_at_text = string_value(*v, "patch.ready_at");
      check_iso8601_timestamp(out.ready_at_text, "patch.ready_at");
    }
  }
  if (const json::Value *v = patch.find("retry_limit")) {
    out.retry_limit = v->is_null() ? JobPatch::Change::Reset : JobPatch::Change::Set;
    if (!v->is_null()) {
      out.retry_limit_value = integer_value(*v, "patch.retry_limit");
      check_retry_limit(out.retry_limit_value, "patch.retry_limit");
    }
  }
  if (const json::Value *v = patch.find("backoff")) {
    out.backoff = v->is_null() ? JobPatch::Change::Reset : JobPatch::Change::Set;
    if (!v->is_null()) {
      expect_object(*v, "patch.backoff");
      out.backoff_patch = *v;
    }
  }
  if (const json::Value *v = patch.find("retention")) {
    out.retention = v->is_null() ? JobPatch::Change::Reset : JobPatch::Change::Set;
    if (!v->is_null()) {
      expect_object(*v, "patch.retention");
      out.retention_patch = *v;
    }
  }
  return out;
}

json::Value merged_backoff(const json::Value &current, const json::Value &patch) {
  json::Value merged = merged_object(current, patch);
  if (!merged.is_null()) check_backoff(merged, "backoff");
  return merged;
}

json::Value merged_retention(const json::Value &current, const json::Value &patch) {
  json::Value merged = merged_object(current, patch);
  if (!merged.is_null()) check_retention(merged, "retention");
  return merged;
}

}  // namespace zizq::core
