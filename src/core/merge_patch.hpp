// zizq core: RFC 7386 JSON Merge Patch over json::Value (used to apply
// partial updates, e.g. to a queue's settings).
#pragma once

#include "core/cpp_only.hpp"

#include "core/json.hpp"

namespace zizq::core::json {

// RFC 7386 JSON Merge Patch: returns target with patch applied.
Value merge_patch(const Value &target, const Value &patch);

}  // namespace zizq::core::json
