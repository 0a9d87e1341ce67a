// Runs every TEST registered in test/unit/*.cpp; exit status 1 on any failure.
// An exception escaping a test fails that test only.
#include <exception>

#include "check.hpp"

int main() {
  int failed_tests = 0;
  for (const auto &test : unit::registry()) {
    int before = unit::failures();
    try {
      test.body();
    } catch (const std::exception &e) {
      unit::fail(__FILE__, __LINE__, std::string("unexpected exception: ") + e.what());
    }
    bool ok = unit::failures() == before;
    if (!ok) ++failed_tests;
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", test.name);
  }
  std::printf("%zu tests, %d failed\n", unit::registry().size(), failed_tests);
  return failed_tests == 0 ? 0 : 1;
}
