// Unit tests for src/core/json: parsing, serialization, number helpers and
// object member access.
#include "check.hpp"

#include "core/error.hpp"
#include "core/json.hpp"

#include <cstdint>
#include <string>

namespace json = zizq::core::json;
using zizq::core::Sqlstate;

namespace {

std::string round_trip(const std::string &text) { return json::serialize(json::parse(text)); }

std::string nested_arrays(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

std::string nested_objects(int depth) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += "{\"a\":";
  text += "1";
  return text + std::string(depth, '}');
}

// integral() as a checkable value: the int64, or a marker when not integral.
std::string integral_of(const std::string &text) {
  int64_t n = 0;
  return json::parse(text).integral(&n) ? std::to_string(n) : "not integral";
}

std::string error_of(const std::string &text) {
  try {
    json::parse(text);
  } catch (const zizq::core::Error &e) {
    return e.message();
  }
  return "no error";
}

}  // namespace

TEST(json_parses_scalars) {
  CHECK(json::parse("null").is_null());
  CHECK(json::parse("true").is_bool());
  CHECK(json::parse("true").boolean);
  CHECK(!json::parse("false").boolean);
  CHECK(json::parse("12").is_number());
  CHECK_EQ(json::parse("12").text, std::string("12"));
  CHECK(json::parse("\"x\"").is_string());
  CHECK_EQ(json::parse("\"x\"").text, std::string("x"));
  CHECK(json::parse("[]").is_array());
  CHECK(json::parse("{}").is_object());
}

TEST(json_round_trips_containers_in_jsonb_style) {
  CHECK_EQ(round_trip("{\"a\":1,\"b\":[1,2]}"), std::string("{\"a\": 1, \"b\": [1, 2]}"));
  CHECK_EQ(round_trip("[]"), std::string("[]"));
  CHECK_EQ(round_trip("{}"), std::string("{}"));
  CHECK_EQ(round_trip(" \t\r\n{ \"a\" : [ ] , \"b\" : { } }\n "), std::string("{\"a\": [], \"b\": {}}"));
  CHECK_EQ(round_trip("[null,true,false,\"s\",0]"), std::string("[null, true, false, \"s\", 0]"));
  CHECK_EQ(round_trip("{\"x\":{\"y\":[{\"z\":[[1],[2,3]]}]}}"),
           std::string("{\"x\": {\"y\": [{\"z\": [[1], [2, 3]]}]}}"));
}

TEST(json_keeps_member_order) {
  CHECK_EQ(round_trip("{\"b\":1,\"a\":2,\"c\":3}"), std::string("{\"b\": 1, \"a\": 2, \"c\": 3}"));
}

TEST(json_keeps_number_literals_verbatim) {
  for (const char *literal : {"1.50", "-0", "1e400", "-3e2", "0.0", "1E+2", "1e-5", "-0.000", "123456789012345678901234567890"})
    CHECK_EQ(round_trip(literal), std::string(literal));
  CHECK_EQ(round_trip("[1.50, -0, 1e400]"), std::string("[1.50, -0, 1e400]"));
}

TEST(json_decodes_and_reencodes_escapes) {
  json::Value v = json::parse("\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t\"");
  CHECK_EQ(v.text, std::string("q\" b\\ s/ \b\f\n\r\t"));
  // "/" needs no escape on output, matching jsonb.
  CHECK_EQ(json::serialize(v), std::string("\"q\\\" b\\\\ s/ \\b\\f\\n\\r\\t\""));
}

TEST(json_escapes_other_control_characters_as_u00xx) {
  std::string s = "a";
  s += '\x01';
  s += '\x1f';
  s += '\x7f';  // DEL is not a control character for JSON
  CHECK_EQ(json::serialize(json::Value::string(s)), std::string("\"a\\u0001\\u001f\x7f\""));
  json::Value nul = json::parse("\"\\u0000\"");
  CHECK_EQ(nul.text.size(), size_t{1});
  CHECK_EQ(static_cast<int>(nul.text[0]), 0);
  CHECK_EQ(json::serialize(nul), std::string("\"\\u0000\""));
}

TEST(json_decodes_unicode_escapes_to_utf8) {
  CHECK_EQ(json::parse("\"\\u0041\"").text, std::string("A"));
  CHECK_EQ(json::parse("\"\\u00e9\"").text, std::string("\xc3\xa9"));
  CHECK_EQ(json::parse("\"\\u00E9\"").text, std::string("\xc3\xa9"));
  CHECK_EQ(json::parse("\"\\u20ac\"").text, std::string("\xe2\x82\xac"));
  CHECK_EQ(json::parse("\"\\uffff\"").text, std::string("\xef\xbf\xbf"));
}

TEST(json_joins_surrogate_pairs) {
  CHECK_EQ(json::parse("\"\\ud83d\\ude00\"").text, std::string("\xf0\x9f\x98\x80"));  // U+1F600
  CHECK_EQ(json::parse("\"\\uD834\\uDD1E\"").text, std::string("\xf0\x9d\x84\x9e"));  // U+1D11E
  CHECK_EQ(json::parse("\"\\udbff\\udfff\"").text, std::string("\xf4\x8f\xbf\xbf"));  // U+10FFFF
}

TEST(json_passes_non_ascii_utf8_through) {
  const std::string text = "{\"caf\xc3\xa9\": \"\xe2\x82\xac \xf0\x9f\x98\x80\"}";
  CHECK_EQ(round_trip(text), text);
  CHECK_EQ(json::serialize(json::parse("\"\\u00e9\"")), std::string("\"\xc3\xa9\""));
}

TEST(json_rejects_malformed_input) {
  const char *bad[] = {
      "", "   ", "{\"a\":1,}", "[1,]", "[,1]", "'a'", "{'a':1}", "\"abc", "\"abc\\",
      "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"", "01", "-01", "00", "1.", ".5", "+1", "-", "1e", "1e+",
      "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\ud800x\"", "\"\\ud800\\\"",
      "1 2", "{} x", "[1]]", "nullx", "tru", "nul", "True", "NaN", "Infinity", "\"a\nb\"",
      "{\"a\" 1}", "{1:2}", "{\"a\"}", "[1 2]", "{\"a\":1 \"b\":2}", "[", "{", "{\"a\":", "\xc3\xa9"};
  for (const char *text : bad) {
    CHECK_THROWS(json::parse(text), Sqlstate::InvalidParameterValue);
    CHECK_EQ(error_of(text).rfind("malformed JSON: ", 0), size_t{0});
  }
}

TEST(json_error_names_what_and_where) {
  CHECK_EQ(error_of("[1,]"), std::string("malformed JSON: unexpected character at offset 3"));
  CHECK_EQ(error_of(""), std::string("malformed JSON: unexpected end of input at offset 0"));
  CHECK_EQ(error_of("[1] x"), std::string("malformed JSON: unexpected text after the value at offset 4"));
  CHECK_EQ(error_of("\"ab\\q\""), std::string("malformed JSON: invalid escape at offset 3"));
  CHECK_EQ(error_of("[\"\\ud800\"]"), std::string("malformed JSON: lone high surrogate at offset 2"));
  CHECK_EQ(error_of("01"), std::string("malformed JSON: leading zero in number at offset 1"));
}

TEST(json_limits_nesting_depth_to_100) {
  CHECK_EQ(round_trip(nested_arrays(100)), nested_arrays(100));
  CHECK(json::parse(nested_objects(100)).is_object());
  CHECK_THROWS(json::parse(nested_arrays(101)), Sqlstate::InvalidParameterValue);
  CHECK_THROWS(json::parse(nested_objects(101)), Sqlstate::InvalidParameterValue);
  CHECK_THROWS(json::parse(nested_arrays(100000)), Sqlstate::InvalidParameterValue);
}

TEST(json_integral_accepts_integers_however_written) {
  CHECK_EQ(integral_of("5"), std::string("5"));
  CHECK_EQ(integral_of("5.0"), std::string("5"));
  CHECK_EQ(integral_of("5e0"), std::string("5"));
  CHECK_EQ(integral_of("50e-1"), std::string("5"));
  CHECK_EQ(integral_of("0.5e1"), std::string("5"));
  CHECK_EQ(integral_of("100e-2"), std::string("1"));
  CHECK_EQ(integral_of("-3e2"), std::string("-300"));
  CHECK_EQ(integral_of("1E+2"), std::string("100"));
  CHECK_EQ(integral_of("0"), std::string("0"));
  CHECK_EQ(integral_of("-0"), std::string("0"));
  CHECK_EQ(integral_of("0.000e99999999999999999999"), std::string("0"));
  CHECK_EQ(integral_of("9223372036854775807"), std::string("9223372036854775807"));
  CHECK_EQ(integral_of("-9223372036854775808"), std::string("-9223372036854775808"));
  CHECK_EQ(integral_of("9.223372036854775807e18"), std::string("9223372036854775807"));
  CHECK_EQ(integral_of("1e18"), std::string("1000000000000000000"));
}

TEST(json_integral_rejects_fractions_overflow_and_non_numbers) {
  CHECK_EQ(integral_of("5.5"), std::string("not integral"));
  CHECK_EQ(integral_of("0.5"), std::string("not integral"));
  CHECK_EQ(integral_of("1e-400"), std::string("not integral"));
  CHECK_EQ(integral_of("5.0000000000000000000001"), std::string("not integral"));
  CHECK_EQ(integral_of("1e30"), std::string("not integral"));
  CHECK_EQ(integral_of("1e19"), std::string("not integral"));
  CHECK_EQ(integral_of("1e400"), std::string("not integral"));
  CHECK_EQ(integral_of("1e99999999999999999999"), std::string("not integral"));
  CHECK_EQ(integral_of("9223372036854775808"), std::string("not integral"));
  CHECK_EQ(integral_of("-9223372036854775809"), std::string("not integral"));
  CHECK_EQ(integral_of("99999999999999999999"), std::string("not integral"));
  CHECK_EQ(integral_of("\"5\""), std::string("not integral"));
  CHECK_EQ(integral_of("true"), std::string("not integral"));
  CHECK_EQ(integral_of("null"), std::string("not integral"));
  CHECK_EQ(integral_of("[5]"), std::string("not integral"));
  CHECK(json::parse("7").integral(nullptr));
}

TEST(json_number_factories) {
  CHECK_EQ(json::Value::number(int64_t{-42}).text, std::string("-42"));
  CHECK_EQ(json::Value::number(INT64_MIN).text, std::string("-9223372036854775808"));
  CHECK_EQ(json::Value::number(0).text, std::string("0"));
  CHECK_EQ(json::Value::number("1.50").text, std::string("1.50"));
  CHECK(json::Value::number("1.50").is_number());
  int64_t n = 0;
  CHECK(json::Value::number(INT64_MAX).integral(&n));
  CHECK_EQ(n, INT64_MAX);
  CHECK_THROWS(json::Value::number("abc"), Sqlstate::InvalidParameterValue);
  CHECK_THROWS(json::Value::number("\"5\""), Sqlstate::InvalidParameterValue);
  CHECK_THROWS(json::Value::number("01"), Sqlstate::InvalidParameterValue);
  CHECK_THROWS(json::Value::number(""), Sqlstate::InvalidParameterValue);
}

TEST(json_type_names_and_predicates) {
  CHECK_EQ(std::string(json::Value::null().type_name()), std::string("null"));
  CHECK_EQ(std::string(json::Value::boolean_(true).type_name()), std::string("boolean"));
  CHECK_EQ(std::string(json::Value::number(1).type_name()), std::string("number"));
  CHECK_EQ(std::string(json::Value::string("x").type_name()), std::string("string"));
  CHECK_EQ(std::string(json::Value::array().type_name()), std::string("array"));
  CHECK_EQ(std::string(json::Value::object().type_name()), std::string("object"));
  CHECK(json::Value().is_null());
  CHECK(!json::Value::null().is_object());
  CHECK(json::Value::boolean_(false).is_bool());
  CHECK(!json::Value::boolean_(false).boolean);
  CHECK(json::Value::string("").is_string());
  CHECK(!json::Value::string("1").is_number());
}

TEST(json_duplicate_keys_last_wins_at_first_position) {
  json::Value v = json::parse("{\"a\":1,\"b\":2,\"a\":3}");
  CHECK_EQ(v.members.size(), size_t{2});
  CHECK_EQ(json::serialize(v), std::string("{\"a\": 3, \"b\": 2}"));
  CHECK_EQ(round_trip("{\"a\":{\"x\":1},\"a\":[]}"), std::string("{\"a\": []}"));
}

TEST(json_find_set_erase) {
  json::Value v = json::parse("{\"a\":1,\"b\":\"two\",\"c\":null}");
  CHECK(v.find("a") != nullptr);
  CHECK_EQ(v.find("b")->text, std::string("two"));
  CHECK(v.find("c")->is_null());  // present with a null value, unlike absent
  CHECK(v.find("z") == nullptr);
  const json::Value &cv = v;
  CHECK(cv.find("a") != nullptr);
  CHECK(cv.find("") == nullptr);

  v.set("a", json::Value::string("one"));  // replaced in place
  v.set("d", json::Value::array());        // appended
  CHECK_EQ(json::serialize(v), std::string("{\"a\": \"one\", \"b\": \"two\", \"c\": null, \"d\": []}"));

  v.find("d")->items.push_back(json::Value::number(7));
  CHECK_EQ(json::serialize(*v.find("d")), std::string("[7]"));

  CHECK(v.erase("b"));
  CHECK(!v.erase("b"));
  CHECK(!v.erase("zz"));
  CHECK_EQ(json::serialize(v), std::string("{\"a\": \"one\", \"c\": null, \"d\": [7]}"));
}

TEST(json_member_access_on_non_objects) {
  json::Value arr = json::parse("[1]");
  CHECK(arr.find("a") == nullptr);
  CHECK(!arr.erase("a"));
  CHECK_THROWS(arr.set("a", json::Value::null()), Sqlstate::InternalError);
}

TEST(json_serializes_built_values) {
  json::Value v = json::Value::object();
  v.set("name", json::Value::string("say \"hi\"\n"));
  v.set("n", json::Value::number(-5));
  json::Value list = json::Value::array();
  list.items.push_back(json::Value::boolean_(true));
  list.items.push_back(json::Value::null());
  v.set("list", list);
  CHECK_EQ(json::serialize(v), std::string("{\"name\": \"say \\\"hi\\\"\\n\", \"n\": -5, \"list\": [true, null]}"));
  CHECK_EQ(round_trip(json::serialize(v)), json::serialize(v));
}
