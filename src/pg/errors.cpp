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

void capture_failure(CoreFailure &out, const char *what) {
  out.failed = true;
  out.sqlerrcode = ERRCODE_INTERNAL_ERROR;
  snprintf(out.message, sizeof out.message, "zizq internal error: %s", what);
  out.hint[0] = '\0';
}

void raise_failure(const CoreFailure &f) {
  ereport(ERROR, (errcode(f.sqlerrcode), errmsg("%s", f.message), f.hint[0] ? errhint("%s", f.hint) : 0));
  pg_unreachable();
}

}  // namespace zizq::pg
