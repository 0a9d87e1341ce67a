// zizq boundary: the rules of the triggers on zizq._jobs, for the writes
// zizq makes without a statement (job_take.cpp).
#pragma once

#include "pg/pg.hpp"

namespace zizq::pg {

// The job_update trigger's work for an UPDATE of zizq._jobs (`rel`) from
// `old_tuple` to `new_tuple`: what happens at commit (tokens released,
// lines left, floors lowered, workers woken) is recorded, and the row to
// store is returned (`new_tuple`, or a copy no longer parked).
HeapTuple job_update_rules(Relation rel, HeapTuple old_tuple, HeapTuple new_tuple);

}  // namespace zizq::pg
