// zizq core: name validation (see names.hpp).
#include "core/names.hpp"

#include <string>

#include "core/error.hpp"

namespace zizq::core {

void check_name(std::string_view kind, std::string_view name) {
  static constexpr std::string_view kReserved = ",*?[]{}\\";
  if (name.empty()) invalid(std::string(kind) + " name must not be empty");
  if (name.size() > kMaxNameBytes)
    invalid(std::string(kind) + " name is " + std::to_string(name.size()) + " bytes long; the limit is 255");
  std::size_t bad = name.find_first_of(kReserved);
  if (bad != std::string_view::npos)
    invalid("invalid " + std::string(kind) + " name \"" + std::string(name) + "\": it contains '" +
                std::string(1, name[bad]) + "'",
            "names cannot contain any of , * ? [ ] { } \\");
}

}  // namespace zizq::core
