// Unit tests for src/core/merge_patch: the RFC 7386 Appendix A examples and
// the nested cases zizq relies on.
#include "check.hpp"

#include "core/json.hpp"
#include "core/merge_patch.hpp"

#include <string>

namespace json = zizq::core::json;

namespace {

std::string patched(const std::string &target, const std::string &patch) {
  return json::serialize(json::merge_patch(json::parse(target), json::parse(patch)));
}

// Expected results are written compactly; compare in canonical output form.
std::string canonical(const std::string &text) { return json::serialize(json::parse(text)); }

}  // namespace

TEST(merge_patch_rfc7386_appendix_a) {
  struct Row {
    const char *target, *patch, *result;
  };
  const Row rows[] = {
      {"{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
      {"{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}"},
      {"{\"a\":\"b\"}", "{\"a\":null}", "{}"},
      {"{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}"},
      {"{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
      {"{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}"},
      {"{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}"},
      {"{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}"},
      {"[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]"},
      {"{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]"},
      {"{\"a\":\"foo\"}", "null", "null"},
      {"{\"a\":\"foo\"}", "\"bar\"", "\"bar\""},
      {"{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}"},
      {"[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}"},
      {"{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}"},
  };
  for (const Row &row : rows) CHECK_EQ(patched(row.target, row.patch), canonical(row.result));
}

TEST(merge_patch_removes_a_nested_member) {
  CHECK_EQ(patched("{\"strategy\":{\"type\":\"time_based\",\"duration_ms\":1000,\"burst\":5}}",
                   "{\"strategy\":{\"burst\":null}}"),
           canonical("{\"strategy\":{\"type\":\"time_based\",\"duration_ms\":1000}}"));
}

TEST(merge_patch_updates_nested_members_in_place) {
  CHECK_EQ(patched("{\"strategy\":{\"type\":\"time_based\",\"burst\":5},\"name\":\"q\"}",
                   "{\"strategy\":{\"burst\":10,\"jitter\":true}}"),
           canonical("{\"strategy\":{\"type\":\"time_based\",\"burst\":10,\"jitter\":true},\"name\":\"q\"}"));
}

TEST(merge_patch_replaces_a_sub_object_with_a_non_object) {
  CHECK_EQ(patched("{\"strategy\":{\"type\":\"time_based\",\"burst\":5},\"name\":\"q\"}", "{\"strategy\":\"none\"}"),
           canonical("{\"strategy\":\"none\",\"name\":\"q\"}"));
  CHECK_EQ(patched("{\"strategy\":{\"type\":\"time_based\"}}", "{\"strategy\":[1,2]}"),
           canonical("{\"strategy\":[1,2]}"));
  CHECK_EQ(patched("{\"strategy\":{\"type\":\"time_based\"}}", "{\"strategy\":0}"), canonical("{\"strategy\":0}"));
}

TEST(merge_patch_replaces_a_non_object_with_a_cleaned_object) {
  // Nulls inside a patch object mean "remove", so they never land in the result.
  CHECK_EQ(patched("{\"a\":1}", "{\"a\":{\"b\":null,\"c\":2}}"), canonical("{\"a\":{\"c\":2}}"));
}

TEST(merge_patch_empty_patch_and_missing_keys) {
  CHECK_EQ(patched("{\"a\":1}", "{}"), canonical("{\"a\":1}"));
  CHECK_EQ(patched("{\"a\":1}", "{\"zz\":null}"), canonical("{\"a\":1}"));
  CHECK_EQ(patched("\"text\"", "{}"), canonical("{}"));
  CHECK_EQ(patched("null", "{\"a\":1}"), canonical("{\"a\":1}"));
}

TEST(merge_patch_leaves_inputs_untouched) {
  const json::Value target = json::parse("{\"a\":{\"b\":1}}");
  const json::Value patch = json::parse("{\"a\":{\"b\":null}}");
  json::Value result = json::merge_patch(target, patch);
  CHECK_EQ(json::serialize(result), std::string("{\"a\": {}}"));
  CHECK_EQ(json::serialize(target), std::string("{\"a\": {\"b\": 1}}"));
  CHECK_EQ(json::serialize(patch), std::string("{\"a\": {\"b\": null}}"));
}
