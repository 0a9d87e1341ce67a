// zizq core: typed access to JSON input with the error every caller owes the
// user — which field, what was expected, what arrived (22023).
#pragma once

#include "core/cpp_only.hpp"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "core/json.hpp"

namespace zizq::core {

// `context` names the thing being read, e.g. `budget "emails"` or `jobs[3]`.
void expect_object(const json::Value &v, const std::string &context);
void expect_array(const json::Value &v, const std::string &context);
void reject_unknown_members(const json::Value &object, std::initializer_list<std::string_view> allowed,
                            const std::string &context);

// `what` names the field, e.g. `jobs[3].priority`.
int64_t integer_value(const json::Value &v, const std::string &what);
double number_value(const json::Value &v, const std::string &what);
std::string string_value(const json::Value &v, const std::string &what);
bool boolean_value(const json::Value &v, const std::string &what);

}  // namespace zizq::core
