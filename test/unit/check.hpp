// A minimal unit-test harness for the pure C++ core: no server, no framework.
// TEST(name) { ... } registers a test; CHECK* record failures and go on.
#pragma once

#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace unit {

struct Test {
  const char *name;
  std::function<void()> body;
};

inline std::vector<Test> &registry() {
  static std::vector<Test> tests;
  return tests;
}

inline int &failures() {
  static int count = 0;
  return count;
}

struct Register {
  Register(const char *name, std::function<void()> body) { registry().push_back({name, std::move(body)}); }
};

inline void fail(const char *file, int line, const std::string &what) {
  ++failures();
  std::fprintf(stderr, "  FAIL %s:%d: %s\n", file, line, what.c_str());
}

template <typename A, typename B>
std::string describe(const A &a, const B &b) {
  std::ostringstream out;
  out << a << " != " << b;
  return out.str();
}

}  // namespace unit

#define UNIT_CAT2(a, b) a##b
#define UNIT_CAT(a, b) UNIT_CAT2(a, b)
#define TEST(name)                                                            \
  static void UNIT_CAT(test_, name)();                                        \
  static unit::Register UNIT_CAT(register_, name)(#name, UNIT_CAT(test_, name)); \
  static void UNIT_CAT(test_, name)()

#define CHECK(cond)                                              \
  do {                                                           \
    if (!(cond)) unit::fail(__FILE__, __LINE__, "CHECK(" #cond ")"); \
  } while (0)

#define CHECK_EQ(a, b)                                                             \
  do {                                                                             \
    const auto unit_a = (a);                                                       \
    const auto unit_b = (b);                                                       \
    if (!(unit_a == unit_b))                                                       \
      unit::fail(__FILE__, __LINE__, "CHECK_EQ(" #a ", " #b "): " + unit::describe(unit_a, unit_b)); \
  } while (0)

// Expects `expr` to throw zizq::core::Error with the given Sqlstate.
#define CHECK_THROWS(expr, sqlstate)                                                   \
  do {                                                                                 \
    bool unit_thrown = false;                                                          \
    try {                                                                              \
      (void)(expr);                                                                    \
    } catch (const zizq::core::Error &unit_e) {                                        \
      unit_thrown = true;                                                              \
      if (unit_e.state() != (sqlstate))                                                \
        unit::fail(__FILE__, __LINE__, "wrong sqlstate from " #expr ": " + unit_e.message()); \
    }                                                                                  \
    if (!unit_thrown) unit::fail(__FILE__, __LINE__, "expected an error from " #expr);   \
  } while (0)
