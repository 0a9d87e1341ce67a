// zizq boundary: core errors to PostgreSQL errors (see errors.hpp).
#include "pg/errors.hpp"

namespace zizq::pg {

int sqlerrcode_of(core::Sqlstate state) {
  switch (state) {
    case core::Sqlstate::InvalidParameterValue: return ERRCODE_INVALID_PARAMETER_VALUE;
    case core::Sqlstate::CheckViolation: return ERRCODE_CHECK_VIOLATION;
    case core::Sqlstate::UndefinedObject: return ERRCODE_UNDEFINED_OBJECT;
    case core::Sqlstate::DuplicateObject: return ERRCODE_DUPLICATE_OBJECT;
    case core::Sqlstate::NoDataFound: return ERRCODE_NO_DATA_FOUND;
    case core::Sqlstate::DependentObjectsStillExist: return ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST;
    case core::Sqlstate::ConfigurationLimitExceeded: return ERRCODE_CONFIGURATION_LIMIT_EXCEEDED;
    case core::Sqlstate::ObjectNotInPrerequisiteState: return ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
    case core::Sqlstate::InternalError: return ERRCODE_INTERNAL_ERROR;
  }
  return ERRCODE_INTERNAL_ERROR;
}

void capture_failure(CoreFailure &out, const core::Error &e) {
  out.failed = true;
  out.sqlerrcode = sqlerrcode_of(e.state());
  strlcpy(out.message, e.message().c_str(), sizeof out.message);
  strlcpy(out.hint, e.hint().c_str(), sizeof out.hint);
}

void capture_failure(CoreFailure &out, const char *what, int sqlerrcode) {
  out.failed = true;
  out.sqlerrcode = sqlerrcode;
  snprintf(out.message, sizeof out.message, "zizq internal error: %s", what);
  out.hint[0] = '\0';
}

// The buffers cut a long message at a byte count, maybe inside a character
// (a message may quote user text of any length): the clip drops a partial
// last character, so that the server never sends invalid UTF-8.
int whole_characters(const char *s) {
  int len = static_cast<int>(strlen(s));
  return pg_mbcliplen(s, len, len);
}

void raise_failure(const CoreFailure &f) {
  ereport(ERROR, (errcode(f.sqlerrcode), errmsg("%.*s", whole_characters(f.message), f.message),
                  f.hint[0] ? errhint("%.*s", whole_characters(f.hint), f.hint) : 0));
  pg_unreachable();
}

}  // namespace zizq::pg
