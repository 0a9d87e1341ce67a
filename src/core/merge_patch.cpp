// zizq core: RFC 7386 JSON Merge Patch, following the RFC's pseudocode
// (section 2) step for step so the two can be compared line by line.
#include "core/merge_patch.hpp"

namespace zizq::core::json {

Value merge_patch(const Value &target, const Value &patch) {
  if (!patch.is_object()) return patch;
  Value result = target.is_object() ? target : Value::object();
  const Value absent;  // null
  for (const auto &[key, value] : patch.members) {
    if (value.is_null()) {
      result.erase(key);
      continue;
    }
    // An absent member patches like null: a nested object patch then yields
    // the patch itself with its null members removed.
    const Value *current = result.find(key);
    result.set(key, merge_patch(current ? *current : absent, value));
  }
  return result;
}

}  // namespace zizq::core::json
