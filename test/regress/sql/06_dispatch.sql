-- Dispatch with budgets: debits at hand-off, parking, order, releases,
-- rollbacks, explain_job and budget_state (SPEC §3).
\i test/regress/sql/helpers.psql

-- A while_in_flight budget of 2: two run, the third waits in the database.
SELECT key FROM zizq.define_budget('conc', 2, 'while_in_flight');
SELECT count(*) FROM zizq.enqueue_many('[
  {"queue": "c", "type": "t", "budgets": [{"key": "conc"}]},
  {"queue": "c", "type": "t", "budgets": [{"key": "conc"}]},
  {"queue": "c", "type": "t", "budgets": [{"key": "conc"}]},
  {"queue": "c", "type": "free"}]');
SELECT id, type FROM zizq.dequeue(ARRAY['c'], 10);
SELECT key, tokens, in_flight_cost, debt, parked_jobs FROM zizq.budget_state;
SELECT status, runnable, reason, budget, tokens, cost, next_run_at FROM zizq.explain_job(3);
SELECT count(*) AS nothing_dispatchable FROM zizq.dequeue(ARRAY['c'], 10);
-- A completion gives the token back; the parked job is offered and runs.
SELECT zizq.complete(1);
SELECT pg_temp.wait_for($$zizq._offered(3)$$) AS offered;
SELECT runnable, reason FROM zizq.explain_job(3);
SELECT id FROM zizq.dequeue(ARRAY['c'], 10);
SELECT key, tokens, in_flight_cost, parked_jobs FROM zizq.budget_state;

-- Every exit from in_flight releases: fail (retry and dead), release, delete.
SELECT status FROM zizq.fail(2, retry_at => '2999-01-01');
SELECT in_flight_cost FROM zizq.budget_state;
SELECT zizq.release(ARRAY[3]);
SELECT in_flight_cost FROM zizq.budget_state;
SELECT id FROM zizq.dequeue(ARRAY['c']);
SELECT status FROM zizq.fail(3, kill => true);
SELECT in_flight_cost FROM zizq.budget_state;
UPDATE zizq._jobs SET status = 'ready', ready_at = now() WHERE id = 2;
SELECT id FROM zizq.dequeue(ARRAY['c']);
SELECT id FROM zizq.delete_job(2);
SELECT in_flight_cost FROM zizq.budget_state;

-- A rolled-back dequeue refunds; so does a rolled-back savepoint.
SELECT id AS r FROM zizq.enqueue('r', 't', budgets => '[{"key": "conc", "cost": 2}]') \gset
BEGIN;
SELECT id FROM zizq.dequeue(ARRAY['r']);
SELECT in_flight_cost FROM zizq.budget_state;
ROLLBACK;
SELECT in_flight_cost, tokens FROM zizq.budget_state;
BEGIN;
SAVEPOINT s;
SELECT id FROM zizq.dequeue(ARRAY['r']);
ROLLBACK TO SAVEPOINT s;
SELECT in_flight_cost, tokens FROM zizq.budget_state;
COMMIT;
-- A complete that rolls back leaves the job in flight and its tokens spent.
SELECT id FROM zizq.dequeue(ARRAY['r']);
BEGIN;
SELECT zizq.complete(:r);
ROLLBACK;
SELECT status, (SELECT in_flight_cost FROM zizq.budget_state) FROM zizq.jobs WHERE id = :r;
SELECT zizq.complete(:r);

-- Order within a budget: a cheap job does not overtake an unaffordable one
-- ahead of it; unbudgeted and other budgets' jobs are not held back.
SELECT key FROM zizq.define_budget('pool', 3, 'while_in_flight');
SELECT key FROM zizq.define_budget('other', 5, 'while_in_flight');
SELECT id AS hold FROM zizq.enqueue('o', 'hold', budgets => '[{"key": "pool", "cost": 2}]') \gset
SELECT id FROM zizq.dequeue(ARRAY['o']);
SELECT array_agg(id ORDER BY id) FROM zizq.enqueue_many('[
  {"queue": "o", "type": "big", "budgets": [{"key": "pool", "cost": 3}]},
  {"queue": "o", "type": "small", "budgets": [{"key": "pool", "cost": 1}]},
  {"queue": "o", "type": "free"},
  {"queue": "o", "type": "other", "budgets": [{"key": "other", "cost": 1}]}]');
SELECT id, type FROM zizq.dequeue(ARRAY['o'], 10);
SELECT id, type, status FROM zizq.jobs WHERE queue = 'o' AND status = 'ready' ORDER BY id;
SELECT reason FROM zizq.explain_job(:hold + 2);
-- Releasing the holder lets the big job run first, then the small one.
SELECT zizq.complete(:hold);
SELECT pg_temp.wait_for(format('zizq._offered(%s)', :hold + 1)) AS offered;
SELECT id, type FROM zizq.dequeue(ARRAY['o'], 10);
SELECT zizq.complete(:hold + 1);
SELECT pg_temp.wait_for(format('zizq._offered(%s)', :hold + 2)) AS offered;
SELECT id, type FROM zizq.dequeue(ARRAY['o'], 10);

-- Priority across budgeted and unbudgeted jobs holds when affordable.
SELECT count(*) FROM zizq.enqueue_many('[
  {"queue": "p", "type": "free-low", "priority": 50},
  {"queue": "p", "type": "budgeted-high", "priority": 10, "budgets": [{"key": "other"}]},
  {"queue": "p", "type": "free-mid", "priority": 20}]');
SELECT type FROM zizq.dequeue(ARRAY['p'], 3);

-- A job bound to several budgets must be paid by all at once, and heads
-- each of their lines.
SELECT key FROM zizq.define_budget('a', 1, 'while_in_flight');
SELECT key FROM zizq.define_budget('b', 1, 'while_in_flight');
SELECT id AS blocker FROM zizq.enqueue('m', 'blocker', budgets => '[{"key": "a"}]') \gset
SELECT id FROM zizq.dequeue(ARRAY['m']);
SELECT array_agg(id ORDER BY id) FROM zizq.enqueue_many('[
  {"queue": "m", "type": "both", "budgets": [{"key": "a"}, {"key": "b"}]},
  {"queue": "m", "type": "b-only", "budgets": [{"key": "b"}]}]');
SELECT id, type FROM zizq.dequeue(ARRAY['m'], 10);
SELECT key, tokens, in_flight_cost FROM zizq.budget_state WHERE key IN ('a', 'b') ORDER BY key;
SELECT zizq.complete(:blocker);
SELECT pg_temp.wait_for(format('zizq._offered(%s)', :blocker + 1)) AS offered;
SELECT id, type FROM zizq.dequeue(ARRAY['m'], 10);

-- Unbinding a parked job lets it run at once.
SELECT id AS stuck FROM zizq.enqueue('m', 'stuck', budgets => '[{"key": "b"}]') \gset
SELECT count(*) AS none FROM zizq.dequeue(ARRAY['m']);
SELECT budgets FROM zizq.unbind_budget(:stuck, 'b');
SELECT id = :stuck AS runs FROM zizq.dequeue(ARRAY['m']);

-- time_based: full at creation, no refund on completion, explain names the
-- next token.
SELECT key FROM zizq.define_budget('rate', 2, 'time_based', duration => '1 hour');
SELECT count(*) FROM zizq.enqueue_many('[
  {"queue": "t", "type": "t", "budgets": [{"key": "rate"}]},
  {"queue": "t", "type": "t", "budgets": [{"key": "rate"}]},
  {"queue": "t", "type": "t", "budgets": [{"key": "rate"}]}]');
SELECT count(*) AS two_of_three FROM zizq.dequeue(ARRAY['t'], 10);
SELECT zizq.complete(array_agg(id)) FROM zizq.jobs WHERE queue = 't' AND status = 'in_flight';
SELECT key, tokens < 1 AS empty, in_flight_cost, next_token_at BETWEEN now() + interval '29 min' AND now() + interval '31 min' AS in_30_min
  FROM zizq.budget_state WHERE key = 'rate';
SELECT runnable, budget, cost, next_run_at BETWEEN now() + interval '29 min' AND now() + interval '31 min' AS in_30_min
  FROM zizq.explain_job((SELECT id FROM zizq.jobs WHERE queue = 't' AND status = 'ready'));

-- A job behind others in its budget's line runs when the budget has paid
-- for them too: one token an hour, two parked jobs, the second an hour
-- after the first.
SELECT key FROM zizq.define_budget('hourly', 1, 'time_based', duration => '1 hour', burst => 1);
SELECT count(*) FROM zizq.enqueue('ln', 't', budgets => '[{"key": "hourly"}]');
SELECT count(*) AS took_the_token FROM zizq.dequeue(ARRAY['ln']);
SELECT count(*) FROM zizq.enqueue_many('[
  {"queue": "ln", "type": "t", "budgets": [{"key": "hourly"}]},
  {"queue": "ln", "type": "t", "budgets": [{"key": "hourly"}]}]');
SELECT j.id - min(j.id) OVER () AS nth, e.runnable, e.budget,
       e.next_run_at BETWEEN now() + interval '59 min' AND now() + interval '61 min' AS in_1_hour,
       e.next_run_at BETWEEN now() + interval '119 min' AND now() + interval '121 min' AS in_2_hours,
       e.reason LIKE '%behind 1 parked job(s) in budget "hourly"''s line%' AS says_behind,
       e.budgets->0->'parked_ahead' AS parked_ahead
  FROM zizq.jobs j, zizq.explain_job(j.id) e
 WHERE j.queue = 'ln' AND j.status = 'ready' ORDER BY j.id;

-- Shrinking a concurrency budget below what is in flight creates a debt
-- that completions pay off first.
SELECT key FROM zizq.define_budget('shrink', 3, 'while_in_flight');
SELECT count(*) FROM zizq.enqueue_many('[
  {"queue": "s", "type": "t", "budgets": [{"key": "shrink"}]},
  {"queue": "s", "type": "t", "budgets": [{"key": "shrink"}]},
  {"queue": "s", "type": "t", "budgets": [{"key": "shrink"}]},
  {"queue": "s", "type": "t", "budgets": [{"key": "shrink"}]}]');
SELECT array_agg(id ORDER BY id) AS running FROM zizq.dequeue(ARRAY['s'], 10) \gset
SELECT allocation FROM zizq.update_budget('shrink', '{"allocation": 1}');
SELECT tokens, in_flight_cost, debt FROM zizq.budget_state WHERE key = 'shrink';
SELECT zizq.complete((:'running'::bigint[])[1]);
SELECT tokens, in_flight_cost, debt FROM zizq.budget_state WHERE key = 'shrink';
SELECT count(*) AS still_held FROM zizq.dequeue(ARRAY['s']);
SELECT zizq.complete((:'running'::bigint[])[2]);
SELECT zizq.complete((:'running'::bigint[])[3]);
SELECT tokens, in_flight_cost, debt FROM zizq.budget_state WHERE key = 'shrink';
SELECT pg_temp.wait_for(format('zizq._offered(%s)', (:'running'::bigint[])[3] + 1)) AS offered;
SELECT count(*) AS runs_now FROM zizq.dequeue(ARRAY['s']);

-- An offered job is read by its primary key whatever the statistics say.
-- Asked for as ready and parked, it was read through the lines' index
-- while the table had no statistics yet (or those of an empty table, as a
-- queue table often has): the whole line, a thousand entries, for the one job
-- offered. A worker's plans are generic once it has run them a few times:
-- forced here; autovacuum is kept off the table meanwhile, so that its
-- statistics stay those of no table at all.
ALTER TABLE zizq._jobs SET (autovacuum_enabled = off);
SELECT zizq.reset();
SELECT key FROM zizq.define_budget('offer_line', 1, 'while_in_flight');
SELECT count(*) FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', 'lined', 'type', 't',
  'budgets', jsonb_build_array(jsonb_build_object('key', 'offer_line')))) FROM generate_series(1, 1000)));
SELECT id AS first_lined FROM zizq.dequeue(ARRAY['lined']) \gset
SELECT zizq.complete(:first_lined);
SELECT pg_temp.wait_for(format('zizq._offered(%s)', :first_lined + 1)) AS offered;
SET plan_cache_mode = force_generic_plan;
BEGIN;
SELECT id - :first_lined AS offered_job_taken FROM zizq.dequeue(ARRAY['lined']);
SELECT pg_stat_get_xact_tuples_returned('zizq._jobs_line_1'::regclass) < 100 AS reads_a_few_line_entries;
ROLLBACK;
RESET plan_cache_mode;
ALTER TABLE zizq._jobs RESET (autovacuum_enabled);

-- A dequeue of one queue reads that queue's jobs only: beside 20,000 ready
-- jobs of another queue, a dequeue of an empty queue touches a handful of
-- buffers (its own range of the per-queue index), not the other queue's
-- jobs. The count is the buffers of the dequeue's whole execution, its
-- statements included. The reset leaves one queue in the statistics: the
-- case where the across-queue index looks as good as the per-queue one to
-- the planner. The first look takes that plan and reads far more than it
-- finds; the backend then uses the per-queue form for this queue (planned
-- by the look after). A look that met no job at all raised the queue's
-- floors above every key: until a job of the queue is made ready, looks
-- run no statement (and read no buffer). A job enqueued and deleted leaves
-- the free floor at its key, so that the look after reads again.
SELECT zizq.reset();
SELECT count(*) FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', 'crowded', 'type', 't'))
  FROM generate_series(1, 20000)));
ANALYZE zizq._jobs;
CREATE FUNCTION pg_temp.dequeue_buffers(queue text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
  EXECUTE format('EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM zizq.dequeue(ARRAY[%L], 1)', queue) INTO plan;
  RETURN (plan->0->'Plan'->>'Shared Hit Blocks')::bigint + (plan->0->'Plan'->>'Shared Read Blocks')::bigint;
END $$;
SELECT pg_temp.dequeue_buffers('idle') > 0 AS planned;
SELECT pg_temp.dequeue_buffers('idle') AS known_empty_reads;
SELECT (zizq.delete_job((zizq.enqueue('idle', 't')).id)).id > 0 AS floor_lowered;
SELECT pg_temp.dequeue_buffers('idle') > 0 AS planned_per_queue;
SELECT (zizq.delete_job((zizq.enqueue('idle', 't')).id)).id > 0 AS floor_lowered;
SELECT pg_temp.dequeue_buffers('idle') < 50 AS reads_only_its_queue;
SELECT count(*) AS crowded_still_served FROM zizq.dequeue(ARRAY['crowded'], 3);
SELECT zizq.delete_jobs(array_agg(id)) AS cleaned_up FROM zizq._jobs WHERE queue = 'crowded';

-- Whether a budgeted job has parked jobs ahead in its budget's line is one
-- look at the line's head, however long the line: a dequeue of the one
-- unparked job ahead of 19,999 parked ones reads a few dozen buffers (more
-- than a hundred when the check walked the line).
SELECT zizq.reset();
SELECT key FROM zizq.define_budget('line', 1, 'while_in_flight');
SELECT count(*) FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', 'lined', 'type', 't',
  'budgets', jsonb_build_array(jsonb_build_object('key', 'line')))) FROM generate_series(1, 20000)));
SELECT count(*) AS parked FROM zizq._jobs WHERE parked;
ANALYZE zizq._jobs;
BEGIN;
SELECT pg_temp.dequeue_buffers('lined') > 0 AS planned;
ROLLBACK;
BEGIN;
SELECT pg_temp.dequeue_buffers('lined') < 60 AS looks_at_the_head_only;
SELECT count(*) AS in_flight FROM zizq._jobs WHERE status = 'in_flight';
ROLLBACK;
SELECT zizq.reset();

-- Scan floors (src/core/scan_floor.hpp). A transaction that truncated the
-- jobs (zizq.reset) and then found nothing must not raise its queue's floor
-- past the job its rollback brings back.
SELECT id AS fl_id FROM zizq.enqueue('fl', 't') \gset
BEGIN;
SELECT zizq.reset();
SELECT count(*) AS none_after_reset FROM zizq.dequeue(ARRAY['fl']);
ROLLBACK;
SELECT id = :fl_id AS found_after_rollback FROM zizq.dequeue(ARRAY['fl']);
-- A claim asked about again by the transaction that holds it (as a FOR
-- UPDATE re-check does) is granted to it. (Other workers skip it: the
-- isolation spec dequeue_race.)
SELECT id AS fl2_id FROM zizq.enqueue('fl', 't') \gset
BEGIN;
SELECT zizq._claim(:fl2_id, 0, 'fl') AS first, zizq._claim(:fl2_id, 0, 'fl') AS again;
ROLLBACK;
-- Rows written around zizq's functions (here a plain INSERT, as COPY or
-- pg_restore would) drop every floor when they commit: the dequeue below
-- follows one that raised queue cp's floor past everything.
SELECT count(*) AS none_yet FROM zizq.dequeue(ARRAY['cp']);
INSERT INTO zizq._jobs (queue, type, status, ready_at) VALUES ('cp', 'restored', 'ready', now());
SELECT type FROM zizq.dequeue(ARRAY['cp']);
-- With triggers off (session_replication_role = replica) nothing lowers the
-- floor: the job stays hidden from dequeues of its queue until an admin
-- runs zizq.forget_scan_floors().
SELECT count(*) AS none_yet FROM zizq.dequeue(ARRAY['cp']);
SET session_replication_role = replica;
INSERT INTO zizq._jobs (queue, type, status, ready_at) VALUES ('cp', 'replicated', 'ready', now());
RESET session_replication_role;
SELECT count(*) AS hidden FROM zizq.dequeue(ARRAY['cp']);
-- zizq.scan_floors() shows where the dequeues of 'cp' start: past every
-- job (NULL), which hides the replicated one.
SELECT queue, kind, priority, id FROM zizq.scan_floors() WHERE queue = 'cp';
SELECT zizq.forget_scan_floors();
SELECT count(*) AS floors_left FROM zizq.scan_floors();
SELECT type FROM zizq.dequeue(ARRAY['cp']);
-- A queue named twice is read once: both jobs come in one call.
SELECT count(*) AS enqueued FROM zizq.enqueue_many('[{"queue": "dup", "type": "t"}, {"queue": "dup", "type": "t"}]');
SELECT count(*) AS both_taken FROM zizq.dequeue(ARRAY['dup', 'dup'], 5);
SELECT zizq.reset();
-- A queue of budgeted jobs only, none parked and no offer standing, is
-- taken by one statement that pays for each row as its scan meets it
-- (dequeue.cpp, budgeted_fast_attempt). Jobs of 'two' were enqueued while
-- it had room for four; shrunk to 2, it pays for two and refuses the
-- third, which blocks the fourth behind it (FIFO within a budget), while
-- the jobs of 'ten' behind them are taken in the same call. (The look at
-- the empty queue first tells its dequeues that it holds no unbudgeted
-- job: its free floor goes above every key.)
SELECT count(*) AS nothing_yet FROM zizq.dequeue(ARRAY['bt']);
SELECT key FROM zizq.define_budget('two', 4, 'while_in_flight');
SELECT key FROM zizq.define_budget('ten', 10, 'while_in_flight');
SELECT count(*) AS enqueued FROM zizq.enqueue_many(
  (SELECT jsonb_agg(jsonb_build_object('queue', 'bt', 'type', 'two' || i, 'budgets', '[{"key": "two"}]'::jsonb)) FROM generate_series(1, 4) i)
  || (SELECT jsonb_agg(jsonb_build_object('queue', 'bt', 'type', 'ten' || i, 'budgets', '[{"key": "ten"}]'::jsonb)) FROM generate_series(1, 2) i));
SELECT count(*) FILTER (WHERE parked) AS parked_at_enqueue FROM zizq._jobs WHERE queue = 'bt';
SELECT allocation FROM zizq.update_budget('two', '{"allocation": 2}');
SET track_functions = 'all';
BEGIN;
SELECT type FROM zizq.dequeue(ARRAY['bt'], 10) ORDER BY id;
SELECT pg_stat_get_xact_function_calls('zizq._claim_paid(bigint, integer, text, integer[], integer[], tid, xid)'::regprocedure) > 0
  AS one_statement;
COMMIT;
RESET track_functions;
SELECT key, in_flight_cost FROM zizq.budget_state WHERE key IN ('two', 'ten') ORDER BY key;
-- The refused jobs were handed to the dispatcher to be parked; once
-- 'two' has room they run in order.
SELECT zizq.complete(array_agg(id)) FROM zizq._jobs WHERE queue = 'bt' AND status = 'in_flight';
CREATE TEMP TABLE bt_taken (id bigint, type text);
DO $$
BEGIN
  FOR i IN 1..20 LOOP
    INSERT INTO bt_taken SELECT id, type FROM zizq.dequeue(ARRAY['bt'], 10, wait => '5 s');
    EXIT WHEN (SELECT count(*) FROM bt_taken) >= 2;
  END LOOP;
END $$;
SELECT type FROM bt_taken ORDER BY id;
SELECT key, in_flight_cost FROM zizq.budget_state WHERE key IN ('two', 'ten') ORDER BY key;
DROP TABLE bt_taken;
-- The statement passes only the rows it paid for (FOR UPDATE SKIP LOCKED
-- locks no job the worker does not take), so a queue of jobs its budgets
-- cannot pay is read to its end: once. A statement that refused more rows
-- than a walk considers (max_jobs * 4 + 256) leaves the queue to the walk
-- for 10 s, and the next look does not run it. Nothing stays locked.
SELECT count(*) AS nothing_yet FROM zizq.dequeue(ARRAY['bs']);
SELECT key FROM zizq.define_budget('full', 1000, 'while_in_flight');
SELECT count(*) AS enqueued FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', 'bs', 'type', 't',
  'budgets', '[{"key": "full"}]'::jsonb)) FROM generate_series(1, 1000) i));
SELECT count(*) AS taken FROM zizq.dequeue(ARRAY['bs']);
SELECT allocation FROM zizq.update_budget('full', '{"allocation": 1}');
SET track_functions = 'all';
BEGIN;
SELECT count(*) AS none FROM zizq.dequeue(ARRAY['bs']);
SELECT pg_stat_get_xact_function_calls('zizq._claim_paid(bigint, integer, text, integer[], integer[], tid, xid)'::regprocedure)
  AS rows_met \gset
SELECT :rows_met >= 999 AS read_to_the_end;
SELECT count(*) AS none_again FROM zizq.dequeue(ARRAY['bs']);
SELECT pg_stat_get_xact_function_calls('zizq._claim_paid(bigint, integer, text, integer[], integer[], tid, xid)'::regprocedure)
  = :rows_met AS left_to_the_walk;
CREATE EXTENSION pgrowlocks;
SELECT count(*) AS rows_we_lock FROM pgrowlocks('zizq._jobs') WHERE pg_backend_pid() = ANY (pids);
COMMIT;
DROP EXTENSION pgrowlocks;
RESET track_functions;
SELECT zizq.reset();

-- A take statement whose first prepare fails (here: a function it calls
-- is gone) leaves nothing armed. The SQL functions the take statements call
-- then refuse a caller outside zizq.dequeue, rather than reading the state
-- of a statement that never ran (memory already freed). A fresh backend:
-- the statements are prepared on first use.
\c
SELECT key FROM zizq.define_budget('armed', 10, 'while_in_flight');
SELECT count(*) AS enqueued FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', 'armed', 'type', 't',
  'budgets', '[{"key": "armed"}]'::jsonb)) FROM generate_series(1, 3) i));
\set VERBOSITY terse
-- The admission walk's take (two queues) of two jobs (one job's take does
-- not call zizq._paid_at: its instant is a parameter).
BEGIN;
ALTER FUNCTION zizq._paid_at(bigint) RENAME TO _paid_at_gone;
DO $$ BEGIN PERFORM FROM zizq.dequeue(ARRAY['armed', 'elsewhere'], 2);
EXCEPTION WHEN undefined_function THEN RAISE NOTICE 'its take statement failed to prepare'; END $$;
ROLLBACK;
SELECT zizq._paid_at(1);
-- The single statement of a queue that holds budgeted jobs only: a first
-- dequeue finds no free job (and says so for the next), the second fails
-- to prepare its statement.
SELECT count(*) AS taken FROM zizq.dequeue(ARRAY['armed']);
BEGIN;
ALTER FUNCTION zizq._claim_paid(bigint, integer, text, integer[], integer[], tid, xid) RENAME TO _claim_paid_gone;
DO $$ BEGIN PERFORM FROM zizq.dequeue(ARRAY['armed']);
EXCEPTION WHEN undefined_function THEN RAISE NOTICE 'its take statement failed to prepare'; END $$;
ROLLBACK;
SELECT zizq._claim_paid(1, 1, 'armed', '{1}', '{1}');
SELECT zizq._paid_at(1);
\set VERBOSITY default
SELECT count(*) AS taken_now FROM zizq.dequeue(ARRAY['armed']);
-- A subtransaction that aborts inside a take statement (a user's trigger
-- with an exception block) leaves the statement armed for its next rows.
CREATE FUNCTION pg_temp.swallow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  BEGIN PERFORM 1 / 0; EXCEPTION WHEN division_by_zero THEN NULL; END;
  RETURN NEW;
END $$;
CREATE TRIGGER swallow BEFORE UPDATE ON zizq._jobs FOR EACH ROW EXECUTE FUNCTION pg_temp.swallow();
SELECT count(*) AS enqueued FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', 'armed', 'type', 't',
  'budgets', '[{"key": "armed"}]'::jsonb)) FROM generate_series(1, 2) i));
SELECT count(*) AS both_taken FROM zizq.dequeue(ARRAY['armed', 'elsewhere'], 2);
-- The same through the single statement of one queue of budgeted jobs.
SELECT count(*) AS enqueued FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', 'armed', 'type', 't',
  'budgets', '[{"key": "armed"}]'::jsonb)) FROM generate_series(1, 2) i));
SELECT count(*) AS both_taken_again FROM zizq.dequeue(ARRAY['armed'], 2);
DROP TRIGGER swallow ON zizq._jobs;
SELECT zizq.reset();

-- Rows written around zizq that carry live state (parked, in flight) must
-- have bindings zizq can read: at most 4 budgets, one cost each. Shared
-- memory keeps per-position counts of parked jobs; a fifth position would
-- be written past them.
SELECT key FROM zizq.define_budget('shape', 10, 'while_in_flight');
DO $$
DECLARE b int := (SELECT id FROM zizq.budgets WHERE key = 'shape');
BEGIN
  BEGIN
    INSERT INTO zizq._jobs (ready_at, status, queue, type, parked, budget_ids, budget_costs, budgets)
    VALUES (now(), 'ready', 'shape', 't', true, array_fill(b, ARRAY[5]), array_fill(1, ARRAY[5]), '[{"key": "shape"}]');
  EXCEPTION WHEN check_violation THEN RAISE WARNING 'five budgets, parked: %', regexp_replace(SQLERRM, '[0-9]+', 'N');
  END;
  BEGIN
    INSERT INTO zizq._jobs (ready_at, status, queue, type, session_id, budget_ids, budget_costs, budgets)
    VALUES (now(), 'in_flight', 'shape', 't', 1, ARRAY[b, b], ARRAY[1], '[{"key": "shape"}]');
  EXCEPTION WHEN check_violation THEN RAISE WARNING 'two budgets and one cost, in flight: %', regexp_replace(SQLERRM, '[0-9]+', 'N');
  END;
END $$;
SELECT count(*) AS no_rows FROM zizq._jobs WHERE queue = 'shape';
SELECT zizq.reset();

-- A ready row written around zizq with budget_ids and no costs (the
-- trigger above does not see ready rows) is read as unbound, not as a
-- NULL array: a dequeue's walk crashed the backend on it.
SELECT key FROM zizq.define_budget('nulls', 10, 'while_in_flight');
INSERT INTO zizq._jobs (ready_at, status, queue, type, budget_ids, budgets)
SELECT now(), 'ready', 'nulls', 't', ARRAY[b.id], '[{"key": "nulls"}]'::jsonb FROM zizq.budgets b WHERE b.key = 'nulls';
SELECT count(*) AS taken FROM zizq.dequeue(ARRAY['nulls', 'elsewhere']);
SELECT zizq.reset();

-- A user's trigger on zizq._jobs whose exception block catches an error
-- while an enqueue inserts (the insert then goes by statement) does not
-- end the enqueue's own insert: a job inserted parked is counted once.
CREATE FUNCTION pg_temp.swallow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  BEGIN PERFORM 1 / 0; EXCEPTION WHEN division_by_zero THEN NULL; END;
  RETURN NEW;
END $$;
SELECT key FROM zizq.define_budget('once', 1, 'while_in_flight');
SELECT count(*) AS first FROM zizq.enqueue('once', 't', budgets => '[{"key": "once"}]');
SELECT count(*) AS taken FROM zizq.dequeue(ARRAY['once']);
CREATE TRIGGER swallow_insert BEFORE INSERT ON zizq._jobs FOR EACH ROW EXECUTE FUNCTION pg_temp.swallow_insert();
SELECT count(*) AS second FROM zizq.enqueue('once', 't', budgets => '[{"key": "once"}]');
DROP TRIGGER swallow_insert ON zizq._jobs;
SELECT l.parked_hint AS parked_in_shared_memory FROM zizq._budget_live() l JOIN zizq.budgets b USING (id) WHERE b.key = 'once';
SELECT status, parked FROM zizq._jobs WHERE queue = 'once' ORDER BY id;
SELECT zizq.reset();
