// zizq scan floors in shared memory: where a dequeue of one queue starts its
// scans of ready jobs, unbudgeted and budgeted (the rule is in
// core/scan_floor.hpp).
//
// Lowered after every commit that made such jobs ready (enqueue, and the
// job_update trigger for every other path), before its waiters are woken,
// and when a claim ends without its job taken (claims.hpp). A free floor
// is raised by the dequeue's single-statement take (dequeue.cpp), past each
// job it claims while it runs and to the first ready job it met when it
// ends, and by the admission walk's free read, past every key when it met
// no job at all; a budgeted floor by the budgeted read, to the first ready
// job it met, and by the admission walk, past the claimed jobs it went
// through. A floor above every key spares the read altogether.
#pragma once

#include "core/scan_floor.hpp"

#include "pg/pg.hpp"

namespace zizq::pg {

Size floors_size();
void attach_floors(char *base);

core::FloorView floor_of(const char *queue, core::FloorKind kind);
// The count of readying commits and released claims of the queues that
// share `queue`'s slot (read without the lock: a stale value only refuses
// a raise or makes one that raise_floor_of refuses).
uint64 floor_seq_of(const char *queue);
void raise_floor_of(const char *queue, core::FloorKind kind, uint64 seen_seq, core::JobKey key);
// Applies lowerings of committed transactions (xact.cpp), under one lock.
void lower_floors(const char *const *queues, const core::FloorKind *kinds, const core::JobKey *keys, int n);
// Claims released without their jobs taken (claims.cpp): the floors of
// their queues, known by hash, come down to them.
void lower_floors_of_hashes(const uint32 *hashes, const core::JobKey *keys, int n);
// The floors of this database's queues, for zizq.scan_floors(): up to
// `max` into `out`, those at the bottom (no floor) left out; returns how
// many.
struct FloorRow {
  char queue[core::kMaxNameBytes + 1];
  core::FloorKind kind;
  core::JobKey floor;
};
int copy_floors(FloorRow *out, int max);
// After rows were written to zizq._jobs around zizq's functions (COPY,
// pg_restore, a plain INSERT), and when shared state is reset.
void clear_all_floors();

// Around zizq's own INSERT into zizq._jobs (enqueue.cpp), which lowers the
// floors itself: the statement trigger for other INSERTs stays quiet.
void begin_own_insert();
void end_own_insert();
// A (sub)transaction at nest level `level` aborts: the insert ends if it
// began at that level or deeper (not for a user trigger's subtransaction
// inside the insert, which aborts while the insert goes on).
void abort_own_insert(int level);
bool in_own_insert();

// Around complete's DELETE, which removes in-flight jobs only: the
// statement trigger for other DELETEs notes hidden ready jobs of all kinds.
void begin_own_delete();
void end_own_delete();
bool in_own_delete();

// This transaction has hidden a ready job of the kind from its own later
// statements (took, moved or deleted it): it must not raise floors of that
// kind, since its rollback would make the job ready again below them.
// Forgotten when the transaction ends.
void note_hidden_ready_job(core::FloorKind kind);
void note_hidden_ready_jobs_of_all_kinds();  // a TRUNCATE, a DELETE other than complete's
bool hid_ready_jobs(core::FloorKind kind);
void forget_hidden_ready_jobs();

// This transaction has made jobs ready that only it sees: their floors are
// lowered at its commit, so its own dequeues scan from the bottom.
void note_readied_jobs();
bool readied_jobs();
void forget_readied_jobs();

// Live raises: while a single-statement take of one queue (of free jobs,
// or of budgeted ones: dequeue.cpp, budgeted_fast_attempt) runs, each job it
// claims moves the queue's floor just past the job (core/scan_floor.hpp,
// "claimed jobs count as gone"), so that dequeues starting meanwhile begin
// after the jobs open dequeues hold instead of walking them. A floor may
// pass only claimed jobs: a claim table too full to claim a row
// (Claim::Untracked) stops the raises; a key met out of dispatch order, or
// an error in the statement, also gives the floor back to where the
// statement found it.
void begin_live_raises(const char *queue, core::FloorKind kind, core::FloorView from);
void note_met_by_take(core::JobKey key);  // every key zizq._claim() meets
void raise_past_claimed(core::JobKey key);
void stop_raising();       // a row could not be claimed
void end_live_raises();    // the statement ended
void abort_live_raises(int level);  // a (sub)transaction at `level` aborts (as abort_own_insert)

// The smallest key zizq._claim() or zizq._unclaimed() was asked about
// since begin_examined(): the first ready job the statement met in its
// snapshot, or kAboveAllKeys when it met none (no job's key reaches it).
void begin_examined();
void note_examined(core::JobKey key);
core::JobKey examined_min();
// How many keys have been noted so far (never reset): a read that left it
// unchanged met no ready job at all.
uint64 examined_count();
// Since begin_examined(), the read skipped a job another dequeue claimed at
// another key (claims.hpp, Moved): no raise may pass it.
void note_moved_claim();
bool met_moved_claim();

}  // namespace zizq::pg
