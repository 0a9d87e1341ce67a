// zizq core: job field rules (see job_spec.hpp).
#include "core/job_spec.hpp"

#include "core/backoff.hpp"
#include "core/error.hpp"
#include "core/fields.hpp"
#include "core/merge_patch.hpp"
#include "core/names.hpp"

namespace zizq::core {
namespace {

struct FieldInfo {
  JobField field;
  const char *name;
  json::Type type;
  bool required;
};

constexpr FieldInfo kFields[] = {
    {JobField::Queue, "queue", json::Type::String, true},
    {JobField::Type, "type", json::Type::String, true},
    {JobField::Payload, "payload", json::Type::Null, false},  // any JSON
    {JobField::Priority, "priority", json::Type::Number, false},
    {JobField::ReadyAt, "ready_at", json::Type::String, false},
    {JobField::Budgets, "budgets", json::Type::Array, false},
    {JobField::UniqueKey, "unique_key", json::Type::String, false},
    {JobField::UniqueWhile, "unique_while", json::Type::String, false},
    {JobField::RetryLimit, "retry_limit", json::Type::Number, false},
    {JobField::Backoff, "backoff", json::Type::Object, false},
    {JobField::Retention, "retention", json::Type::Object, false},
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
  if (f == JobField::Payload) return;
  if (actual == json::Type::Null) {
    if (fi.required) invalid(context + "." + fi.name + " must not be null");
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
    if (!v->is_null()) out.ready_at_text = string_value(*v, "patch.ready_at");
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
