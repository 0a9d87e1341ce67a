// zizq boundary: what the writes to zizq._jobs made without a statement
// share (job_insert.cpp's inserts, job_take.cpp's takes): the result
// relation opened as the executor opens one, its index states kept from
// call to call while one such write alone is in progress in the backend.
#pragma once

#include "pg/pg.hpp"

extern "C" {
#include "nodes/execnodes.h"
}

namespace zizq::pg {

// Around every direct write: while more than one is in progress (a user's
// function called by one, calling zizq), each makes its own index states.
void begin_direct_write();
void end_direct_write();

// zizq._jobs (relid) locked in RowExclusiveLock and opened with its
// indexes, as the executor opens an INSERT's or UPDATE's target, in
// `estate`: range table entry 1, whose requiredPerms are `perms`.
ResultRelInfo *open_result_relation(EState *estate, Oid relid, AclMode perms);

// Closes what open_result_relation opened and frees the executor state.
void close_executor_state(EState *estate);

}  // namespace zizq::pg
