-- A hand-off's take without an UPDATE statement (src/pg/job_take.hpp): the
-- row it leaves, its index entries, the triggers it fires, and when the
-- statement is used instead.
\i test/regress/sql/helpers.psql

-- Every index holds every row its predicate admits (amcheck reads the heap
-- and looks each live row up): run while directly taken jobs are in flight.
CREATE EXTENSION amcheck;
CREATE FUNCTION pg_temp.indexes_checked() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam,
       LATERAL bt_index_check(c.oid, true)
  WHERE i.indrelid = 'zizq._jobs'::regclass AND a.amname = 'btree'
$$;

-- One token, three jobs. The first runs; a look parks the other two; the
-- first's complete makes the second the line's offer.
SELECT key FROM zizq.define_budget('dt', 1, 'while_in_flight');
CREATE FUNCTION pg_temp.line_up(queue text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE first bigint;
BEGIN
  PERFORM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', queue, 'type', 't' || i,
    'budgets', jsonb_build_array(jsonb_build_object('key', 'dt')))) FROM generate_series(1, 3) i));
  SELECT id INTO first FROM zizq.dequeue(ARRAY[queue]);
  PERFORM zizq.dequeue(ARRAY[queue]);  -- refused: the dispatcher parks the rest
  RETURN first;
END $$;
-- Completes `done` once the job after it is parked, and waits for that job's
-- offer (a warning if it does not come).
CREATE PROCEDURE pg_temp.offer_next(done bigint) LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_temp.wait_for(format('(SELECT parked FROM zizq._jobs WHERE id = %s)', done + 1));
  PERFORM zizq.complete(done);
  COMMIT;
  PERFORM pg_temp.wait_for(format('zizq._offered(%s)', done + 1));
END $$;

SELECT pg_temp.line_up('dt') AS first \gset
CALL pg_temp.offer_next(:first);
-- The row as the statement leaves it: in flight, no longer parked, owned by
-- the session, dequeued at its debit; the job returned is that row.
SELECT zizq._direct_takes() AS takes \gset
SELECT id - :first AS taken, type, status, attempts, dequeued_at IS NOT NULL AS dequeued, lease_until, duplicate
  FROM zizq.dequeue(ARRAY['dt']);
SELECT zizq._direct_takes() - :takes AS without_statement;
SELECT status, parked, session_id IS NOT NULL AS owned, lease_ms, lease_until, dequeued_at <= clock_timestamp() AS paid
  FROM zizq._jobs WHERE id = :first + 1;
SELECT key, tokens, in_flight_cost, parked_jobs FROM zizq.budget_state;
SELECT pg_temp.indexes_checked();

-- zizq.direct_take = off: the statement takes the next one.
SET zizq.direct_take = off;
CALL pg_temp.offer_next(:first + 1);
SELECT zizq._direct_takes() AS takes \gset
SELECT id - :first AS taken, status FROM zizq.dequeue(ARRAY['dt']);
SELECT zizq._direct_takes() - :takes AS without_statement;
RESET zizq.direct_take;
SELECT zizq.complete(:first + 2);

-- A lease: the lease's end instead of the session; a unique key held
-- while queued is free once the job runs.
SELECT id AS first FROM zizq.enqueue('dt-lease', 't1', budgets => '[{"key": "dt"}]') \gset
SELECT unique_while FROM zizq.enqueue('dt-lease', 't2', budgets => '[{"key": "dt"}]', unique_key => 'dt-k',
                                      unique_while => 'queued');
SELECT type FROM zizq.enqueue('dt-lease', 't3', budgets => '[{"key": "dt"}]');
SELECT id - :first AS taken FROM zizq.dequeue(ARRAY['dt-lease']);
SELECT count(*) AS refused FROM zizq.dequeue(ARRAY['dt-lease']);
SELECT unique_hold FROM zizq._jobs WHERE id = :first + 1;
CALL pg_temp.offer_next(:first);
SELECT id - :first AS taken, lease_until BETWEEN clock_timestamp() + interval '50 s' AND clock_timestamp() + interval '60 s'
       AS leased_a_minute
  FROM zizq.dequeue(ARRAY['dt-lease'], lease => '1 minute');
SELECT session_id, lease_ms, unique_hold FROM zizq._jobs WHERE id = :first + 1;
SELECT pg_temp.indexes_checked();
SELECT duplicate FROM zizq.enqueue('dt-k', 'again', unique_key => 'dt-k', unique_while => 'queued');

-- A take rolled back: the job is parked again, its token back, and it is
-- offered and taken once more.
SELECT zizq.complete(:first + 1);
SELECT pg_temp.wait_for(format('zizq._offered(%s)', :first + 2)) AS offered;
BEGIN;
SELECT id - :first AS taken FROM zizq.dequeue(ARRAY['dt-lease']);
ROLLBACK;
SELECT status, parked FROM zizq._jobs WHERE id = :first + 2;
SELECT pg_temp.wait_for(format('zizq._offered(%s)', :first + 2)) AS offered_again;
-- In REPEATABLE READ the statement takes it (its serialization checks).
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT zizq._direct_takes() AS takes \gset
SELECT id - :first AS taken FROM zizq.dequeue(ARRAY['dt-lease']);
SELECT zizq._direct_takes() - :takes AS without_statement;
COMMIT;
SELECT zizq.complete(:first + 2);

-- AFTER row triggers fire as after the statement: once per take, with the
-- old and new rows, their WHEN clause and column list honoured; the take
-- stays direct.
CREATE TABLE public.take_log (job bigint, was text, now text, parked_before boolean, parked_after boolean);
CREATE FUNCTION public.log_take() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.take_log VALUES (NEW.id, OLD.status, NEW.status, OLD.parked, NEW.parked);
  RETURN NULL;
END $$;
CREATE TRIGGER log_take AFTER UPDATE ON zizq._jobs FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION public.log_take();
CREATE TRIGGER log_priority AFTER UPDATE OF priority ON zizq._jobs FOR EACH ROW EXECUTE FUNCTION public.log_take();
CREATE TRIGGER log_never AFTER UPDATE ON zizq._jobs FOR EACH ROW
  WHEN (NEW.status = 'never') EXECUTE FUNCTION public.log_take();
SELECT pg_temp.line_up('dt-after') AS first \gset
CALL pg_temp.offer_next(:first);
TRUNCATE public.take_log;
SELECT zizq._direct_takes() AS takes \gset
SELECT id - :first AS taken FROM zizq.dequeue(ARRAY['dt-after']);
SELECT zizq._direct_takes() - :takes AS without_statement;
SELECT job - :first AS job, was, now, parked_before, parked_after FROM public.take_log;
-- A BEFORE row trigger (it may change the row) needs the statement, and
-- fires: the job's payload is as the trigger left it.
CREATE FUNCTION public.tag_take() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status = 'in_flight' THEN NEW.payload := '{"tagged": true}'; END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER tag_take BEFORE UPDATE ON zizq._jobs FOR EACH ROW EXECUTE FUNCTION public.tag_take();
CALL pg_temp.offer_next(:first + 1);
TRUNCATE public.take_log;
SELECT zizq._direct_takes() AS takes \gset
SELECT id - :first AS taken, payload FROM zizq.dequeue(ARRAY['dt-after']);
SELECT zizq._direct_takes() - :takes AS without_statement;
SELECT job - :first AS job, was, now FROM public.take_log;
DROP TRIGGER tag_take ON zizq._jobs;
DROP TRIGGER log_take ON zizq._jobs;
DROP TRIGGER log_priority ON zizq._jobs;
DROP TRIGGER log_never ON zizq._jobs;
DROP FUNCTION public.tag_take(), public.log_take();
DROP TABLE public.take_log;
SELECT zizq.complete(:first + 2);

SELECT pg_temp.indexes_checked();
DROP EXTENSION amcheck;
SELECT key, tokens, in_flight_cost, parked_jobs FROM zizq.budget_state;
