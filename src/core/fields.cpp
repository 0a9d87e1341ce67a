// zizq core: typed access to JSON input (see fields.hpp).
#include "core/fields.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/error.hpp"

namespace zizq::core {
namespace {

std::string got(const json::Value &v) {
  switch (v.type) {
    case json::Type::String: return "the string " + json::serialize(v);
    case json::Type::Number: return v.text;
    default: return std::string(v.type_name());
  }
}

}  // namespace

void expect_object(const json::Value &v, const std::string &context) {
  if (!v.is_object()) invalid(context + " must be a JSON object, not " + got(v));
}

void expect_array(const json::Value &v, const std::string &context) {
  if (!v.is_array()) invalid(context + " must be a JSON array, not " + got(v));
}

void reject_unknown_members(const json::Value &object, std::initializer_list<std::string_view> allowed,
                            const std::string &context) {
  for (const auto &member : object.members) {
    bool known = false;
    for (std::string_view name : allowed) known = known || member.first == name;
    if (known) continue;
    std::string list;
    for (std::string_view name : allowed) list += (list.empty() ? "" : ", ") + std::string(name);
    invalid("unknown field \"" + member.first + "\" in " + context, "known fields: " + list);
  }
}

int64_t integer_value(const json::Value &v, const std::string &what) {
  int64_t out = 0;
  if (!v.integral(&out)) invalid(what + " must be an integer, not " + got(v));
  return out;
}

double number_value(const json::Value &v, const std::string &what) {
  if (!v.is_number()) invalid(what + " must be a number, not " + got(v));
  errno = 0;
  double d = std::strtod(v.text.c_str(), nullptr);
  if (errno == ERANGE || !std::isfinite(d)) invalid(what + " is out of range: " + v.text);
  return d;
}

std::string string_value(const json::Value &v, const std::string &what) {
  if (!v.is_string()) invalid(what + " must be a string, not " + got(v));
  return v.text;
}

bool boolean_value(const json::Value &v, const std::string &what) {
  if (!v.is_bool()) invalid(what + " must be true or false, not " + got(v));
  return v.boolean;
}

}  // namespace zizq::core
