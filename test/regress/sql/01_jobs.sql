-- Enqueue, dequeue and complete: the basic life of a job (SPEC §2).
\i test/regress/sql/helpers.psql
SELECT :'dispatcher_ready' AS dispatcher_ready;

-- enqueue returns the job, ready at once, with the defaults.
SELECT id, queue, type, payload, priority, status, attempts, retry_limit, unique_while, budgets, duplicate,
       ready_at <= clock_timestamp() AS ready_now, created_at IS NOT NULL AS has_created_at
  FROM zizq.enqueue('emails', 'send', '{"to": "a@example.com"}');

-- Every field can be given.
SELECT id, priority, status, retry_limit, backoff, retention, unique_key, unique_while
  FROM zizq.enqueue('emails', 'send', '{}', priority => 5, retry_limit => 3,
                    backoff => '{"base_ms": 100, "exponent": 1, "jitter_ms": 0}',
                    retention => '{"completed_ms": 60000}', unique_key => 'welcome-42', unique_while => 'active');

-- A future ready_at makes a scheduled job.
SELECT id, status FROM zizq.enqueue('emails', 'send', ready_at => now() + interval '1 hour');

-- enqueue_many: all or nothing, rows in input order.
SELECT id, queue, type, payload, priority, status
  FROM zizq.enqueue_many('[{"queue": "reports", "type": "daily", "priority": 10},
                           {"queue": "reports", "type": "weekly", "payload": [1, 2, 3]},
                           {"queue": "emails", "type": "digest", "ready_at": "2999-01-01T00:00:00Z"}]');
SELECT count(*) AS after_many FROM zizq.jobs;
SELECT pg_temp.try($$SELECT zizq.enqueue_many('[{"queue": "a", "type": "b"}, {"queue": "a,b", "type": "b"}]')$$);
SELECT count(*) AS unchanged FROM zizq.jobs;
SELECT count(*) AS empty_array FROM zizq.enqueue_many('[]');

-- The queues view.
SELECT * FROM zizq.queues;

-- dequeue: priority then FIFO, over all queues or some.
SELECT id, queue, priority, status, dequeued_at IS NOT NULL AS dequeued
  FROM zizq.dequeue(max_jobs => 2);
SELECT id, queue, priority FROM zizq.dequeue(ARRAY['reports'], 10);
SELECT id FROM zizq.dequeue(ARRAY['nothing-here']);
SELECT id, queue FROM zizq.dequeue(ARRAY['emails', 'reports'], 10);
SELECT count(*) AS nothing_left FROM zizq.dequeue(NULL, 10);

-- complete: true once, then false; the bulk form returns what it did not apply.
SELECT zizq.complete(1) AS first, zizq.complete(1) AS again;
SELECT count(*) AS job_1_gone FROM zizq.jobs WHERE id = 1;
SELECT zizq.complete(ARRAY[4, 5, 999, 1]) AS not_applied;
-- Job 2 keeps completed jobs for a minute (its retention).
SELECT zizq.complete(2);
SELECT id, status, completed_at IS NOT NULL AS completed FROM zizq.jobs WHERE id = 2;
SELECT pg_temp.try($$SELECT zizq.update_job(2, '{"priority": 1}')$$);

-- get_job.
SELECT id, status FROM zizq.get_job(3);
SELECT pg_temp.try('SELECT zizq.get_job(12345)');

-- Priorities and FIFO within a priority, across 3 enqueues and a batch.
SELECT count(*) FROM zizq.enqueue_many('[{"queue": "order", "type": "t", "priority": 3},
                                          {"queue": "order", "type": "t", "priority": 1},
                                          {"queue": "order", "type": "t", "priority": 3},
                                          {"queue": "order", "type": "t", "priority": 2}]');
SELECT id, priority FROM zizq.dequeue(ARRAY['order'], 10);

-- enqueue_many stores jobs without an INSERT statement, 1,000 rows at a time
-- (src/pg/job_insert.cpp). 2,500 jobs span three of those batches: every row
-- comes back in input order with its own id, defaults and payload.
CREATE TEMP TABLE many AS
  SELECT row_number() OVER () AS n, j.*
  FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', 'many', 'type', 't', 'payload',
                                                               jsonb_build_object('i', i)) ORDER BY i)
                          FROM generate_series(1, 2500) i)) j;
SELECT count(*) AS returned, count(DISTINCT id) AS ids,
       bool_and((payload->>'i')::int = n) AS input_order,
       bool_and(id - n = (SELECT min(id) - 1 FROM many)) AS consecutive_ids,
       bool_and(status = 'ready' AND attempts = 0 AND priority = 32768 AND NOT duplicate) AS defaults,
       bool_and(created_at IS NOT NULL) AS created
  FROM many;
-- The stored rows are the returned ones, and the transaction sees them.
SELECT count(*) AS stored_as_returned
  FROM many m JOIN zizq.jobs j USING (id)
  WHERE j.payload = m.payload AND j.created_at = m.created_at AND j.status = 'ready';
-- Their index entries exist: the queue's ready jobs come in order.
SELECT count(*) AS taken, min((payload->>'i')::int) AS first, max((payload->>'i')::int) AS last
  FROM zizq.dequeue(ARRAY['many'], 2500);
-- ... and an index of the user's own gets them too.
CREATE INDEX jobs_by_i ON zizq._jobs (((payload->>'i')::int)) WHERE queue = 'many-indexed';
SELECT count(*) FROM zizq.enqueue_many('[{"queue": "many-indexed", "type": "t", "payload": {"i": 1}},
                                         {"queue": "many-indexed", "type": "t", "payload": {"i": 2}}]');
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM zizq._jobs WHERE queue = 'many-indexed' AND (payload->>'i')::int = 2;
SELECT payload FROM zizq._jobs WHERE queue = 'many-indexed' AND (payload->>'i')::int = 2;
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP INDEX zizq.jobs_by_i;
-- A backend keeps what its direct inserts make each time (the indexes'
-- IndexInfo with their predicates and expressions compiled, the columns'
-- defaults) until the table or one of its indexes changes: a default
-- changed, an index created and one dropped since the last enqueue take
-- effect at the next one.
SELECT (zizq.enqueue('kept', 't')).attempts AS default_attempts;
ALTER TABLE zizq._jobs ALTER COLUMN attempts SET DEFAULT 3;
SELECT (zizq.enqueue('kept', 't')).attempts AS new_default_attempts;
ALTER TABLE zizq._jobs ALTER COLUMN attempts SET DEFAULT 0;
CREATE INDEX jobs_kept ON zizq._jobs (type, (payload->>'k')) WHERE queue = 'kept';
SELECT (zizq.enqueue('kept', 'indexed', '{"k": "v"}')).type;
SELECT count(*) FROM zizq.enqueue_many('[{"queue": "kept", "type": "indexed", "payload": {"k": "w"}}]');
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM zizq._jobs WHERE queue = 'kept' AND type = 'indexed';
SELECT payload->>'k' AS k FROM zizq._jobs WHERE queue = 'kept' AND type = 'indexed' ORDER BY 1;
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP INDEX zizq.jobs_kept;
SELECT (zizq.enqueue('kept', 'after-drop')).type;
-- An index that keeps its OID and becomes ready: a unique index built
-- concurrently fails on a duplicate and is left not ready (enqueues pass
-- it by); rebuilt, it takes the next enqueue's row.
SELECT (zizq.enqueue('kept-u', 'dup')).type, (zizq.enqueue('kept-u', 'dup')).type;
CREATE UNIQUE INDEX CONCURRENTLY jobs_kept_unique ON zizq._jobs (type) WHERE queue = 'kept-u';
SELECT indisready, indisvalid FROM pg_index WHERE indexrelid = 'zizq.jobs_kept_unique'::regclass;
SELECT (zizq.enqueue('kept-u', 'while-not-ready')).type;
SELECT zizq.delete_jobs(array_agg(id)) AS duplicates_gone FROM zizq._jobs WHERE queue = 'kept-u' AND type = 'dup';
REINDEX INDEX zizq.jobs_kept_unique;
SELECT indisready, indisvalid FROM pg_index WHERE indexrelid = 'zizq.jobs_kept_unique'::regclass;
SELECT (zizq.enqueue('kept-u', 'once-ready')).type;
SELECT pg_temp.try($$SELECT zizq.enqueue('kept-u', 'once-ready')$$) AS refused_by_the_rebuilt_index;
-- An index on the whole row: its expression is compiled per call (a
-- whole-row reference keeps the row's descriptor in the statement's memory).
CREATE FUNCTION public.kept_row_type(j zizq._jobs) RETURNS text IMMUTABLE LANGUAGE plpgsql AS $$BEGIN RETURN j.type; END$$;
CREATE INDEX jobs_kept_row ON zizq._jobs (public.kept_row_type(_jobs)) WHERE queue = 'kept';
SELECT (zizq.enqueue('kept', 'row-1')).type, (zizq.enqueue('kept', 'row-2')).type;
-- Every index holds every row its predicate admits (amcheck reads the heap
-- and looks each such row up), through enqueues that reused the compiled
-- predicates and expressions of the one before.
CREATE EXTENSION amcheck;
SELECT count(*) FROM zizq.enqueue_many('[{"queue": "kept", "type": "b", "budgets": [{"key": "kept-b", "create_with": {"allocation": 1, "strategy": {"type": "while_in_flight"}}}]},
                                         {"queue": "kept", "type": "b", "budgets": [{"key": "kept-b"}]},
                                         {"queue": "kept", "type": "s", "ready_at": "2100-01-01T00:00:00Z"}]');
SELECT (zizq.enqueue('kept', 'b', budgets => '[{"key": "kept-b"}]')).status;
SELECT c.relname AS checked
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam,
       LATERAL bt_index_check(c.oid, true)
  WHERE i.indrelid = 'zizq._jobs'::regclass AND a.amname = 'btree' ORDER BY 1;
DROP EXTENSION amcheck;
DROP INDEX zizq.jobs_kept_unique, zizq.jobs_kept_row;
DROP FUNCTION public.kept_row_type(zizq._jobs);
SELECT zizq.delete_jobs(array_agg(id)) AS cleaned FROM zizq._jobs WHERE queue IN ('kept', 'kept-u');
SELECT (zizq.delete_budget('kept-b')).key AS deleted;
-- The rows reach the table as COPY's do: one WAL record per heap page
-- (MULTI_INSERT) rather than one per row (INSERT).
CREATE EXTENSION pg_walinspect;
CREATE FUNCTION pg_temp.heap_records_since(lsn pg_lsn) RETURNS TABLE (record text, count bigint)
  LANGUAGE sql AS $$
  SELECT split_part(record_type, '+', 1), count(*)
  FROM pg_get_wal_records_info(lsn, pg_current_wal_flush_lsn())
  WHERE resource_manager LIKE 'Heap%' AND block_ref LIKE '%/' || pg_relation_filenode('zizq._jobs') || ' %'
  GROUP BY 1 ORDER BY 1
$$;
SELECT pg_current_wal_insert_lsn() AS before_many \gset
SELECT count(*) FROM zizq.enqueue_many('[{"queue": "wal", "type": "t"}, {"queue": "wal", "type": "t"}]');
SELECT * FROM pg_temp.heap_records_since(:'before_many');
-- zizq.direct_enqueue = off: an INSERT statement, which executor hooks see
-- (pgaudit's session log, pg_stat_statements with track = all).
SET zizq.direct_enqueue = off;
SELECT pg_current_wal_insert_lsn() AS before_statement \gset
SELECT count(*) FROM zizq.enqueue_many('[{"queue": "wal", "type": "t"}, {"queue": "wal", "type": "t"}]');
SELECT * FROM pg_temp.heap_records_since(:'before_statement');
RESET zizq.direct_enqueue;
-- A CHECK constraint on the table holds for these rows too, and a refused
-- batch stores nothing.
ALTER TABLE zizq._jobs ADD CONSTRAINT no_forbidden CHECK (type <> 'forbidden');
SELECT pg_temp.try($$SELECT zizq.enqueue_many('[{"queue": "chk", "type": "fine"}, {"queue": "chk", "type": "forbidden"}]')$$);
SELECT count(*) AS unchanged FROM zizq.jobs WHERE queue = 'chk';
-- An enqueue that failed that way inside a subtransaction does not stop a
-- later INSERT of the transaction from bringing the queue's scan floor down
-- (the job would stay hidden from dequeues of its queue).
SELECT count(*) AS none_yet FROM zizq.dequeue(ARRAY['chk']);
BEGIN;
SELECT pg_temp.try($$SELECT zizq.enqueue('chk', 'forbidden')$$);
INSERT INTO zizq._jobs (queue, type, status, ready_at) VALUES ('chk', 'inserted', 'ready', now());
COMMIT;
SELECT type FROM zizq.dequeue(ARRAY['chk']);
ALTER TABLE zizq._jobs DROP CONSTRAINT no_forbidden;
-- A row trigger on INSERT must fire: with one, the jobs go through an INSERT
-- statement instead (zizq's own statement trigger, jobs_inserted, does not
-- count: enqueue does its work).
CREATE TABLE inserted_log (id bigint);
CREATE FUNCTION pg_temp.log_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.inserted_log VALUES (NEW.id);
  RETURN NULL;
END
$$;
CREATE TRIGGER log_insert AFTER INSERT ON zizq._jobs FOR EACH ROW EXECUTE FUNCTION pg_temp.log_insert();
SELECT pg_current_wal_insert_lsn() AS before_trg \gset
SELECT count(*) AS enqueued FROM zizq.enqueue_many('[{"queue": "trg", "type": "t"}, {"queue": "trg", "type": "t"}]');
SELECT count(*) AS logged FROM inserted_log l JOIN zizq.jobs j USING (id) WHERE j.queue = 'trg';
SELECT * FROM pg_temp.heap_records_since(:'before_trg');
DROP TRIGGER log_insert ON zizq._jobs;
-- So must a statement trigger.
CREATE FUNCTION pg_temp.log_statement() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.inserted_log VALUES (0);
  RETURN NULL;
END
$$;
CREATE TRIGGER log_statement AFTER INSERT ON zizq._jobs FOR EACH STATEMENT
  EXECUTE FUNCTION pg_temp.log_statement();
SELECT count(*) AS enqueued FROM zizq.enqueue_many('[{"queue": "trg", "type": "t"}, {"queue": "trg", "type": "t"}]');
SELECT count(*) AS statements_logged FROM inserted_log WHERE id = 0;
DROP TRIGGER log_statement ON zizq._jobs;
DROP TABLE inserted_log;
-- A BEFORE trigger that skips a job's row fails the whole enqueue.
CREATE FUNCTION pg_temp.skip_odd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RETURN CASE WHEN NEW.type = 'odd' THEN NULL ELSE NEW END;
END
$$;
CREATE TRIGGER skip_odd BEFORE INSERT ON zizq._jobs FOR EACH ROW EXECUTE FUNCTION pg_temp.skip_odd();
SELECT pg_temp.try($$SELECT zizq.enqueue_many('[{"queue": "skip", "type": "odd"}, {"queue": "skip", "type": "even"}]')$$);
SELECT count(*) AS unchanged FROM zizq.jobs WHERE queue = 'skip';
DROP TRIGGER skip_odd ON zizq._jobs;
-- A stored generated column takes the INSERT statement too (its expression
-- reads the row).
ALTER TABLE zizq._jobs ADD COLUMN customer text GENERATED ALWAYS AS (payload->>'customer') STORED;
SELECT count(*) AS enqueued FROM zizq.enqueue_many('[{"queue": "gen", "type": "t", "payload": {"customer": "acme"}}]');
SELECT customer FROM zizq._jobs WHERE queue = 'gen';
ALTER TABLE zizq._jobs DROP COLUMN customer;
DROP EXTENSION pg_walinspect;
-- A read-only transaction refuses an enqueue as it refuses an INSERT.
BEGIN READ ONLY;
SELECT pg_temp.try($$SELECT zizq.enqueue('ro', 't')$$);
ROLLBACK;

-- Every table, view, type and function an operator sees in psql (no
-- leading underscore, or one of the tables) has a description.
CREATE VIEW pg_temp.undescribed AS
SELECT c.oid::regclass::text AS undescribed FROM pg_class c
 WHERE c.relnamespace = 'zizq'::regnamespace AND c.relkind IN ('r', 'v')
   AND (c.relname !~ '^_' OR c.relkind = 'r') AND obj_description(c.oid, 'pg_class') IS NULL
UNION ALL
SELECT t.oid::regtype::text FROM pg_type t JOIN pg_class c ON c.oid = t.typrelid AND c.relkind = 'c'
 WHERE t.typnamespace = 'zizq'::regnamespace AND obj_description(t.oid, 'pg_type') IS NULL
UNION ALL
SELECT p.oid::regprocedure::text FROM pg_proc p
 WHERE p.pronamespace = 'zizq'::regnamespace AND p.proname !~ '^_' AND obj_description(p.oid, 'pg_proc') IS NULL;
SELECT * FROM pg_temp.undescribed;
-- (The check sees a missing one.)
BEGIN;
COMMENT ON FUNCTION zizq.reset() IS NULL;
COMMENT ON TYPE zizq.budget IS NULL;
SELECT * FROM pg_temp.undescribed;
ROLLBACK;
-- What psql's \df+ shows for one of them.
SELECT obj_description('zizq.complete(bigint[])'::regprocedure, 'pg_proc') AS complete_many;
