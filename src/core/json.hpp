// zizq core: a small JSON value type with a strict parser and a serializer
// that writes PostgreSQL jsonb's text style. Core code works on jsonb through
// its text form (the PostgreSQL boundary converts), so this is all it needs.
#pragma once

#include "core/cpp_only.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zizq::core::json {

enum class Type { Null, Bool, Number, String, Array, Object };

class Value {
 public:
  Type type = Type::Null;
  bool boolean = false;
  // Number: the literal exactly as written (e.g. "1.50", "-3e2"), so that
  // values round-trip without float rounding. String: decoded UTF-8.
  std::string text;
  std::vector<Value> items;                            // Array
  std::vector<std::pair<std::string, Value>> members;  // Object, input order

  static Value null() { return Value(); }
  static Value boolean_(bool b);
  // Throws InvalidParameterValue unless `literal` is a JSON number.
  static Value number(std::string literal);
  static Value number(int64_t n);
  static Value string(std::string s);
  static Value array();
  static Value object();

  bool is_null() const { return type == Type::Null; }
  bool is_bool() const { return type == Type::Bool; }
  bool is_number() const { return type == Type::Number; }
  bool is_string() const { return type == Type::String; }
  bool is_array() const { return type == Type::Array; }
  bool is_object() const { return type == Type::Object; }

  // Object member lookup; nullptr if absent or if this is not an object.
  const Value *find(std::string_view key) const;
  Value *find(std::string_view key);
  // Object: replace the member in place (keeping its position) or append.
  void set(std::string key, Value v);
  // Object: remove the member; returns whether it existed.
  bool erase(std::string_view key);

  // True iff this is a Number whose value is an integer that fits in int64.
  // "5.0", "5e0" and "50e-1" are integral; "5.5" is not.
  bool integral(int64_t *out) const;

  // "null", "boolean", "number", "string", "array" or "object".
  const char *type_name() const;
};

// Strict RFC 8259 parse. Duplicate object keys: the last value wins, at the
// position of the first. Nesting deeper than 100 containers is refused.
// Throws Error(InvalidParameterValue, "malformed JSON: <what> at offset N").
Value parse(std::string_view text);

// Compact text in jsonb output style: {"a": 1, "b": [1, 2]}.
std::string serialize(const Value &v);

}  // namespace zizq::core::json
