// zizq core: the rule for queue, type and budget key names (SPEC §2, §3):
// non-empty, at most 255 bytes, none of , * ? [ ] { } \ (reserved for
// patterns and lists).
#pragma once

#include "core/cpp_only.hpp"

#include <string_view>

namespace zizq::core {

inline constexpr std::size_t kMaxNameBytes = 255;

// `kind` is "queue", "type" or "budget key"; throws 22023 naming the value.
void check_name(std::string_view kind, std::string_view name);

}  // namespace zizq::core
