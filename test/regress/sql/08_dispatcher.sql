-- The dispatcher: scheduled jobs promoted at their ready_at, retention
-- purged, NOTIFY zizq on dispatchable jobs, dequeue(wait) (SPEC §2).
\i test/regress/sql/helpers.psql

SELECT backend_type FROM pg_stat_activity WHERE backend_type = 'zizq dispatcher';

-- A job scheduled 300 ms ahead becomes ready by itself, not before.
SELECT id FROM zizq.enqueue('later', 't', ready_at => clock_timestamp() + interval '300 ms');
SELECT status FROM zizq.jobs WHERE id = 1;
SELECT pg_temp.wait_for($$(SELECT status = 'ready' FROM zizq.jobs WHERE id = 1)$$) AS promoted;
SELECT ready_at <= clock_timestamp() AS on_time FROM zizq.jobs WHERE id = 1;

-- Retention: a completed job kept 200 ms is purged by the dispatcher.
SELECT id FROM zizq.enqueue('keep', 't', retention => '{"completed_ms": 200}');
SELECT id FROM zizq.dequeue(ARRAY['keep']);
SELECT zizq.complete(2);
SELECT status FROM zizq.jobs WHERE id = 2;
SELECT pg_temp.wait_for('NOT EXISTS (SELECT 1 FROM zizq.jobs WHERE id = 2)') AS purged;
-- Dead jobs too, with their errors.
SELECT id FROM zizq.enqueue('keep', 't', retention => '{"dead_ms": 100}');
SELECT id FROM zizq.dequeue(ARRAY['keep']);
SELECT status FROM zizq.fail(3, 'fatal', kill => true);
SELECT pg_temp.wait_for('NOT EXISTS (SELECT 1 FROM zizq._job_errors WHERE job_id = 3) AND NOT EXISTS (SELECT 1 FROM zizq.jobs WHERE id = 3)') AS purged;

SELECT id FROM zizq.enqueue('heard', 't');

-- dequeue(wait): returns as soon as a job is there; with nothing, waits
-- out the interval (here 200 ms) and returns nothing.
SELECT count(*) AS got FROM zizq.dequeue(ARRAY['heard'], 1, wait => '5 s');
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) AS got_nothing FROM zizq.dequeue(ARRAY['empty'], 1, wait => '200 ms');
SELECT clock_timestamp() - :'t0'::timestamptz >= interval '190 ms' AS waited;
-- A scheduled job wakes a waiting worker when it becomes ready.
SELECT id FROM zizq.enqueue('soon', 't', ready_at => clock_timestamp() + interval '100 ms');
SELECT id, clock_timestamp() >= ready_at AS after_ready_at FROM zizq.dequeue(ARRAY['soon'], 1, wait => '10 s');

-- The dispatcher waits for CREATE EXTENSION rather than failing.
DROP EXTENSION zizq;
SELECT pg_temp.wait_for($$EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'zizq dispatcher')$$) AS still_running;
CREATE EXTENSION zizq;
SELECT pg_temp.wait_for('(SELECT budgets_loaded FROM zizq.dispatcher_state())') AS loaded_again;
-- The reset of shared state belongs to the install script: called at any
-- other time, changes of transactions under way would be lost.
SELECT zizq._reset_shared();
SELECT budgets_loaded FROM zizq.dispatcher_state();
