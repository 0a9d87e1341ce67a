// zizq core: the one error type pure C++ code throws.
//
// Core code (src/core) never includes PostgreSQL headers. It reports a refusal
// by throwing zizq::core::Error with the SQLSTATE class the SQL surface must
// raise; the PostgreSQL boundary (src/pg/errors.cpp) catches it, copies the
// text out, leaves the catch scope and only then calls ereport.
#pragma once

#include "core/cpp_only.hpp"

#include <exception>
#include <string>
#include <utility>

namespace zizq::core {

// The SQLSTATEs of SPEC §4, named by condition rather than by code so that
// core code reads in domain terms. src/pg/errors.cpp maps them to ERRCODE_*.
enum class Sqlstate {
  InvalidParameterValue,       // 22023
  CheckViolation,              // 23514
  UndefinedObject,             // 42704
  DuplicateObject,             // 42710
  NoDataFound,                 // P0002
  DependentObjectsStillExist,  // 2BP01
  ConfigurationLimitExceeded,  // 53400
  ObjectNotInPrerequisiteState,// 55000
  InternalError,               // XX000
};

class Error : public std::exception {
 public:
  Error(Sqlstate state, std::string message, std::string hint = {})
      : state_(state), message_(std::move(message)), hint_(std::move(hint)) {}

  Sqlstate state() const noexcept { return state_; }
  const std::string &message() const noexcept { return message_; }
  const std::string &hint() const noexcept { return hint_; }
  const char *what() const noexcept override { return message_.c_str(); }

 private:
  Sqlstate state_;
  std::string message_;
  std::string hint_;
};

// Shorthand for the most common refusal.
[[noreturn]] inline void invalid(std::string message, std::string hint = {}) {
  throw Error(Sqlstate::InvalidParameterValue, std::move(message), std::move(hint));
}

}  // namespace zizq::core
