// zizq scan floors in shared memory: where a dequeue of one queue starts its
// scan of ready unbudgeted jobs (the rule is in core/scan_floor.hpp).
//
// Lowered after every commit that made such jobs ready (enqueue, and the
// job_update trigger for every other path), before its waiters are woken;
// raised by the dequeue's single-statement take (dequeue.cpp).
#pragma once

#include "core/scan_floor.hpp"

#include "pg/pg.hpp"

namespace zizq::pg {

Size floors_size();
void attach_floors(char *base);

core::FloorView floor_of(const char *queue);
void raise_floor_of(const char *queue, uint64 seen_seq, core::JobKey key);
// Applies lowerings of committed transactions (xact.cpp), under one lock.
void lower_floors(const char *const *queues, const core::JobKey *keys, int n);
// After rows were written to zizq._jobs around zizq's functions (COPY,
// pg_restore, a plain INSERT), and when shared state is reset.
void clear_all_floors();

// Around zizq's own INSERT into zizq._jobs (enqueue.cpp), which lowers the
// floors itself: the statement trigger for other INSERTs stays quiet.
void begin_own_insert();
void end_own_insert();
bool in_own_insert();

// This transaction has hidden a ready unbudgeted job from its own later
// statements (took, moved or deleted it): it must not raise floors, since
// its rollback would make the job ready again below them. Forgotten when
// the transaction ends.
void note_hidden_ready_job();
bool hid_ready_jobs();
void forget_hidden_ready_jobs();

// This transaction has made jobs ready that only it sees: their floors are
// lowered at its commit, so its own dequeues scan from the bottom.
void note_readied_jobs();
bool readied_jobs();
void forget_readied_jobs();

// The smallest key zizq._claim() was asked about since begin_examined():
// the first ready job the take statement met in its snapshot, or
// kAboveAllKeys when it met none (no job's key reaches it).
void begin_examined();
void note_examined(core::JobKey key);
core::JobKey examined_min();

}  // namespace zizq::pg
