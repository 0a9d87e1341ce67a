-- Roles (SPEC §5): what each may and may not do.
\i test/regress/sql/helpers.psql

DO $$ BEGIN
  CREATE ROLE zq_producer LOGIN IN ROLE zizq_producer;
  CREATE ROLE zq_other_producer LOGIN IN ROLE zizq_producer;
  CREATE ROLE zq_worker LOGIN IN ROLE zizq_worker;
  CREATE ROLE zq_admin LOGIN IN ROLE zizq_admin;
  CREATE ROLE zq_nobody LOGIN;
EXCEPTION WHEN duplicate_object THEN NULL;
END $$;

SET ROLE zq_producer;
SELECT id FROM zizq.enqueue('roles', 'mine');
SELECT count(*) AS producer_batch FROM zizq.enqueue_many('[{"queue": "roles", "type": "mine"}]');
SELECT id, type FROM zizq.get_job(1);
SELECT pg_temp.try(sql) FROM (VALUES
  ($$SELECT zizq.dequeue()$$),
  ($$SELECT zizq.complete(1)$$),
  ($$SELECT zizq.define_budget('x', 1, 'while_in_flight')$$),
  ($$SELECT zizq.delete_job(1)$$),
  ($$SELECT zizq.reset()$$),
  ($$SELECT * FROM zizq.budget_state$$),
  ($$INSERT INTO zizq._jobs (queue, type, status, ready_at) VALUES ('x', 'y', 'ready', now())$$),
  ($$UPDATE zizq._jobs SET priority = 0$$),
  -- An audit setup that turned it off (so that enqueues run an INSERT
  -- statement) cannot be undone by the roles it audits.
  ($$SET zizq.direct_enqueue = on$$)
) AS t(sql);
RESET ROLE;

SET ROLE zq_other_producer;
SELECT id FROM zizq.enqueue('roles', 'theirs');
SELECT count(*) AS sees_only_own FROM zizq.jobs;
SELECT pg_temp.try('SELECT zizq.get_job(1)');
RESET ROLE;

SET ROLE zq_worker;
SELECT id, type FROM zizq.dequeue(ARRAY['roles']);
SELECT zizq.complete(1);
SELECT id FROM zizq.dequeue(ARRAY['roles']);
SELECT status FROM zizq.fail(2, 'oops', retry_at => now());
SELECT id FROM zizq.dequeue(ARRAY['roles']);
SELECT zizq.heartbeat(ARRAY[2]), zizq.release(ARRAY[2]);
SELECT pg_temp.try(sql) FROM (VALUES
  ($$SELECT zizq.enqueue('roles', 'x')$$),
  ($$SELECT count(*) FROM zizq.jobs$$),
  ($$SELECT zizq.get_job(2)$$),
  ($$SELECT zizq.update_job(2, '{"priority": 1}')$$),
  ($$SELECT zizq.define_budget('x', 1, 'while_in_flight')$$),
  ($$SELECT zizq.job_errors(2)$$)
) AS t(sql);
RESET ROLE;

SET ROLE zq_admin;
SELECT count(*) AS admin_sees_all FROM zizq.jobs;
SELECT key FROM zizq.define_budget('admin-budget', 1, 'while_in_flight');
SELECT budgets FROM zizq.bind_budget(2, 'admin-budget');
SELECT count(*) AS state_rows FROM zizq.budget_state;
SELECT priority FROM zizq.update_job(2, '{"priority": 1}');
SELECT count(*) AS errors FROM zizq.job_errors(2);
SELECT id FROM zizq.dequeue(ARRAY['roles']);
SELECT running FROM zizq.dispatcher_state();
RESET ROLE;

SET ROLE zq_nobody;
SELECT pg_temp.try(sql) FROM (VALUES
  ($$SELECT zizq.enqueue('roles', 'x')$$),
  ($$SELECT zizq.dequeue()$$),
  ($$SELECT count(*) FROM zizq.jobs$$),
  ($$SELECT zizq.list_budgets()$$)
) AS t(sql);
RESET ROLE;

-- A duplicate enqueue returns the job holding the key; of another
-- producer's job only its id and key (its payload is not theirs to read).
SET ROLE zq_producer;
SELECT type, payload, duplicate FROM zizq.enqueue('roles-unique', 'secret', '{"card": "4111"}', unique_key => 'shared');
RESET ROLE;
SET ROLE zq_other_producer;
SELECT id IS NOT NULL AS has_id, unique_key, unique_while, type, payload, status, duplicate
  FROM zizq.enqueue('roles-unique', 'mine', unique_key => 'shared');
SELECT id IS NOT NULL AS has_id, type, payload, duplicate
  FROM zizq.enqueue_many('[{"queue": "roles-unique", "type": "mine", "unique_key": "shared"}]');
RESET ROLE;
SET ROLE zq_producer;
SELECT type, payload, duplicate FROM zizq.enqueue('roles-unique', 'again', unique_key => 'shared');
RESET ROLE;
SET ROLE zq_admin;
SELECT type, payload, duplicate FROM zizq.enqueue('roles-unique', 'admin', unique_key => 'shared');
RESET ROLE;
-- Inside another role's SECURITY DEFINER function the caller is that
-- function's owner (current_user, as row security sees it), not the
-- session's role: it owns what it enqueues there and sees only the
-- duplicates it may read.
CREATE FUNCTION pg_temp.enqueue_as_other(t text, k text) RETURNS zizq.job
  LANGUAGE sql SECURITY DEFINER AS $$ SELECT * FROM zizq.enqueue('roles-unique', t, unique_key => k) $$;
ALTER FUNCTION pg_temp.enqueue_as_other(text, text) OWNER TO zq_other_producer;
SET ROLE zq_producer;
SELECT type, payload, duplicate FROM pg_temp.enqueue_as_other('nested', 'shared');
SELECT type, duplicate FROM pg_temp.enqueue_as_other('nested-new', 'nested-key');
SELECT count(*) AS session_role_sees_it FROM zizq.jobs WHERE type = 'nested-new';
RESET ROLE;
SET ROLE zq_other_producer;
SELECT count(*) AS function_owner_sees_it FROM zizq.jobs WHERE type = 'nested-new';
RESET ROLE;

-- The functions that write run with a fixed search_path (SECURITY DEFINER).
SELECT p.proname, p.prosecdef, p.proconfig
  FROM pg_proc p WHERE p.pronamespace = 'zizq'::regnamespace AND p.prosecdef
   AND NOT (p.proconfig @> ARRAY['search_path=pg_catalog, pg_temp'])
 ORDER BY 1;
