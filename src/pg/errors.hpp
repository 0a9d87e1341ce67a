// zizq boundary: running pure C++ from code that PostgreSQL calls.
//
// run_core(fn) runs fn inside try/catch. A core::Error (or any C++
// exception) is copied into plain buffers, the catch scope ends, and only
// then is the ERROR raised, so no C++ frame is unwound by a longjmp and no
// exception ever reaches PostgreSQL. fn must not call PostgreSQL functions
// that can ereport; it hands results out through captured plain variables.
#pragma once

#include <exception>
#include <new>

#include "core/error.hpp"

#include "pg/pg.hpp"

namespace zizq::pg {

struct CoreFailure {
  bool failed;
  int sqlerrcode;
  char message[2048];
  char hint[1024];
};

void capture_failure(CoreFailure &out, const core::Error &e);
void capture_failure(CoreFailure &out, const char *what, int sqlerrcode);
[[noreturn]] void raise_failure(const CoreFailure &f);

// The ERRCODE_* of a core SQLSTATE (one mapping for the whole extension).
int sqlerrcode_of(core::Sqlstate state);

template <typename Fn>
void run_core(Fn &&fn) {
  CoreFailure failure;
  failure.failed = false;
  try {
    fn();
  } catch (const core::Error &e) {
    capture_failure(failure, e);
  } catch (const std::bad_alloc &) {
    capture_failure(failure, "out of memory", ERRCODE_OUT_OF_MEMORY);
  } catch (const std::exception &e) {
    capture_failure(failure, e.what(), ERRCODE_INTERNAL_ERROR);
  } catch (...) {
    capture_failure(failure, "unknown C++ exception", ERRCODE_INTERNAL_ERROR);
  }
  if (failure.failed) raise_failure(failure);
}

}  // namespace zizq::pg
