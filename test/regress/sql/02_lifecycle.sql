-- fail, retries, backoff, dead jobs, errors per attempt, heartbeat, leases,
-- release, update, delete, reset and unique jobs (SPEC §2).
\i test/regress/sql/helpers.psql

-- fail with the default backoff: scheduled 16..46 s later (attempt 1).
SELECT id FROM zizq.enqueue('q', 't');
SELECT id FROM zizq.dequeue();
SELECT id, status, attempts, failed_at IS NOT NULL AS failed,
       ready_at - failed_at BETWEEN interval '16 s' AND interval '46 s' AS backoff_in_range
  FROM zizq.fail(1, 'boom', 'RuntimeError', 'trace line 1');
SELECT zizq.fail(1) IS NULL AS not_in_flight_answers_null;
SELECT attempt, message, error_type, backtrace FROM zizq.job_errors(1);

-- A flat backoff, then an explicit retry_at (always reschedules), then kill.
SELECT id FROM zizq.enqueue('q', 't', backoff => '{"base_ms": 1000, "exponent": 0, "jitter_ms": 0}', retry_limit => 5);
SELECT id FROM zizq.dequeue(ARRAY['q']);
SELECT status, attempts, round(extract(epoch FROM ready_at - failed_at)::numeric, 1) AS delay_s
  FROM zizq.fail(2, 'first');
UPDATE zizq._jobs SET ready_at = now() WHERE id = 2;  -- skip the wait (test only)
SELECT pg_temp.wait_for($$(SELECT status = 'ready' FROM zizq.jobs WHERE id = 2)$$) AS promoted_by_dispatcher;
SELECT id FROM zizq.dequeue(ARRAY['q']);
SELECT status, attempts, ready_at = '2999-01-01'::timestamptz AS at_retry_at
  FROM zizq.fail(2, 'second', retry_at => '2999-01-01');
UPDATE zizq._jobs SET ready_at = now(), status = 'ready' WHERE id = 2;
SELECT id FROM zizq.dequeue(ARRAY['q']);
SELECT status, attempts FROM zizq.fail(2, 'third', kill => true);
SELECT purge_at > now() + interval '6 days' AS kept_a_week FROM zizq._jobs WHERE id = 2;
SELECT attempt, message FROM zizq.job_errors(2);

-- retry_limit: with 1, the second failure is fatal.
SELECT id FROM zizq.enqueue('q', 't', retry_limit => 1);
SELECT id FROM zizq.dequeue(ARRAY['q']);
SELECT status, attempts FROM zizq.fail(3);
UPDATE zizq._jobs SET ready_at = now(), status = 'ready' WHERE id = 3;
SELECT id FROM zizq.dequeue(ARRAY['q']);
SELECT status, attempts FROM zizq.fail(3);
-- retry_limit 0: the first failure is fatal; a retry_at still reschedules.
SELECT id FROM zizq.enqueue('q', 't', retry_limit => 0);
SELECT id FROM zizq.dequeue(ARRAY['q']);
SELECT status FROM zizq.fail(4, retry_at => now() + interval '1 hour');

-- Leases: heartbeat extends them; an expired lease puts the job back.
SELECT id FROM zizq.enqueue('leased', 't');
SELECT id, lease_until > clock_timestamp() AS leased FROM zizq.dequeue(ARRAY['leased'], lease => '1 hour');
SELECT zizq.heartbeat(ARRAY[5, 999], '2 hours') AS not_in_flight;
SELECT lease_until > clock_timestamp() + interval '90 minutes' AS extended FROM zizq.jobs WHERE id = 5;
SELECT zizq.heartbeat(ARRAY[5]) AS not_in_flight;  -- renews by the job's own lease: 2 hours now
SELECT lease_until > clock_timestamp() + interval '90 minutes' AS renewed_for_2h FROM zizq.jobs WHERE id = 5;
UPDATE zizq._jobs SET lease_until = clock_timestamp() WHERE id = 5;  -- let it run out
SELECT zizq._wake_dispatcher();
SELECT pg_temp.wait_for($$(SELECT status = 'ready' FROM zizq.jobs WHERE id = 5)$$) AS expired_lease_requeued;
SELECT attempts, lease_until FROM zizq.jobs WHERE id = 5;
SELECT zizq.complete(5) AS complete_after_expiry;

-- release hands jobs back unprocessed.
SELECT id FROM zizq.dequeue(ARRAY['leased']);
SELECT zizq.release(ARRAY[5, 998]) AS not_in_flight;
SELECT status, attempts FROM zizq.jobs WHERE id = 5;

-- update_job: a merge patch of the queued job.
SELECT id, queue, priority, status, retry_limit, backoff
  FROM zizq.update_job(5, '{"queue": "elsewhere", "priority": 7, "retry_limit": 9,
                            "backoff": {"base_ms": 5}}');
SELECT backoff FROM zizq.update_job(5, '{"backoff": {"exponent": 2}}');
SELECT backoff, retry_limit FROM zizq.update_job(5, '{"backoff": null, "retry_limit": null}');
SELECT status FROM zizq.update_job(5, '{"ready_at": "2999-01-01T00:00:00Z"}');
SELECT status FROM zizq.update_job(5, '{"ready_at": null}');
SELECT retention FROM zizq.update_job(5, '{"retention": {"dead_ms": 1000}}');
SELECT zizq.update_jobs(ARRAY[5, 3, 4, 12345], '{"priority": 1}') AS patched;  -- 3 is dead
SELECT id, priority FROM zizq.jobs WHERE id IN (3, 4, 5) ORDER BY id;

-- delete_job works in any status; a deleted in-flight job's complete answers false.
SELECT id FROM zizq.enqueue('q', 'd');
SELECT id FROM zizq.dequeue(ARRAY['q']);
SELECT id, status FROM zizq.delete_job(6);
SELECT zizq.complete(6) AS complete_after_delete;
SELECT pg_temp.try('SELECT zizq.delete_job(6)');
SELECT count(*) AS errors_of_2 FROM zizq.job_errors(2);
SELECT zizq.delete_jobs(ARRAY[2, 3, 12345]) AS deleted;
SELECT count(*) AS errors_gone FROM zizq._job_errors WHERE job_id IN (2, 3);

-- Unique jobs: a duplicate returns the existing job, no error.
SELECT id, duplicate FROM zizq.enqueue('u', 't', unique_key => 'k1');
SELECT id, duplicate FROM zizq.enqueue('u', 't', unique_key => 'k1');
SELECT id, duplicate FROM zizq.enqueue_many('[{"queue": "u", "type": "t", "unique_key": "k2"},
                                              {"queue": "u", "type": "t", "unique_key": "k1"},
                                              {"queue": "u", "type": "t", "unique_key": "k2"},
                                              {"queue": "u", "type": "t"}]');
-- 'queued': the key is free again once the job is in flight.
SELECT id FROM zizq.dequeue(ARRAY['u']);
SELECT id, duplicate FROM zizq.enqueue('u', 't', unique_key => 'k1');
-- 'active': held while in flight too, released at completion.
SELECT id AS active_id FROM zizq.enqueue('ua', 't', unique_key => 'k3', unique_while => 'active') \gset
SELECT id = :active_id AS taken FROM zizq.dequeue(ARRAY['ua']);
SELECT id = :active_id AS same_job, duplicate FROM zizq.enqueue('ua', 't', unique_key => 'k3');
SELECT zizq.complete(:active_id);
SELECT id = :active_id AS same_job, duplicate FROM zizq.enqueue('ua', 't', unique_key => 'k3');
-- 'exists': held until the job is purged, even once completed (when retained).
SELECT id AS exists_id FROM zizq.enqueue('ue', 't', unique_key => 'k4', unique_while => 'exists',
                                         retention => '{"completed_ms": 3600000}') \gset
SELECT id = :exists_id AS taken FROM zizq.dequeue(ARRAY['ue']);
SELECT zizq.complete(:exists_id);
SELECT id = :exists_id AS same_job, status, duplicate FROM zizq.enqueue('ue', 't', unique_key => 'k4');

-- explain_job for the statuses a job can be in.
SELECT status, runnable, reason LIKE 'completed: terminal since %' AS terminal FROM zizq.explain_job(:exists_id);
SELECT status, runnable, reason FROM zizq.explain_job(5);
SELECT status, runnable, reason LIKE 'scheduled: becomes ready at %' AS scheduled FROM zizq.explain_job(4);
SELECT id FROM zizq.dequeue(ARRAY['elsewhere']);
SELECT status, runnable, reason LIKE 'in flight since % (held by its session)' AS in_flight FROM zizq.explain_job(5);
SELECT pg_temp.try('SELECT zizq.explain_job(424242)');

-- An error inside a look of dequeue(wait) (each look runs in its own
-- subtransaction) reaches the caller's exception block with the caller's
-- subtransaction, not the look's, as the innermost one: no leaked SPI stack,
-- plan or snapshot (those would show as WARNINGs here), and the job stays ready.
SELECT id AS ro_id FROM zizq.enqueue('ro', 't') \gset
CREATE TEMP TABLE caught (sqlstate text, message text);
BEGIN READ ONLY;
DO $$
BEGIN
  BEGIN
    PERFORM zizq.dequeue(ARRAY['ro'], 1, wait => '10 ms');
  EXCEPTION WHEN read_only_sql_transaction THEN
    INSERT INTO caught VALUES (SQLSTATE, SQLERRM);  -- a temporary table: allowed here
  END;
END $$;
SELECT * FROM caught;
COMMIT;
SELECT status FROM zizq.jobs WHERE id = :ro_id;
SELECT count(*) AS taken_once FROM zizq.dequeue(ARRAY['ro'], 1, wait => '10 ms');

-- reset removes every job and budget.
SELECT key FROM zizq.define_budget('b', 1, 'while_in_flight');
SELECT zizq.reset();
SELECT (SELECT count(*) FROM zizq.jobs) AS jobs, (SELECT count(*) FROM zizq.list_budgets()) AS budgets;

-- A bulk complete over a retained job and one that is not, an id named
-- twice and one unknown: the retained job stays as completed, the other
-- goes with its errors, and only the unknown id comes back.
SELECT id AS kept_id FROM zizq.enqueue('mix', 't', retention => '{"completed_ms": 3600000}') \gset
SELECT id AS gone_id FROM zizq.enqueue('mix', 't') \gset
SELECT count(*) AS taken FROM zizq.dequeue(ARRAY['mix'], 2);
SELECT status FROM zizq.fail(:gone_id, 'once');
UPDATE zizq._jobs SET ready_at = now(), status = 'ready' WHERE id = :gone_id;  -- skip the wait (test only)
SELECT count(*) AS taken_again FROM zizq.dequeue(ARRAY['mix']);
SELECT zizq.complete(ARRAY[:gone_id, :kept_id, :gone_id, 424242]) AS not_applied;
SELECT id = :kept_id AS kept, status FROM zizq.jobs WHERE queue = 'mix';
SELECT count(*) AS errors_gone FROM zizq._job_errors WHERE job_id = :gone_id;

-- A complete writes its job's delete and its commit, no row lock before the
-- delete (a BEFORE ROW DELETE trigger made the executor lock each row
-- first: a WAL record more per job).
CREATE EXTENSION pg_walinspect;
SELECT id AS wal_job FROM zizq.enqueue('wal', 't') \gset
SELECT count(*) AS taken FROM zizq.dequeue(ARRAY['wal']);
SELECT pg_current_wal_insert_lsn() AS before_complete \gset
SELECT zizq.complete(:wal_job), pg_current_xact_id()::xid AS complete_xid \gset
SELECT resource_manager, record_type FROM pg_get_wal_records_info(:'before_complete', pg_current_wal_flush_lsn())
  WHERE xid = :'complete_xid' ORDER BY start_lsn;
DROP EXTENSION pg_walinspect;

-- The same with completed jobs kept by default (zizq.completed_retention_ms):
-- the UPDATE runs first, the DELETE gets a job whose retention is 0.
SET zizq.completed_retention_ms = 60000;
SELECT id AS default_kept FROM zizq.enqueue('mix2', 't') \gset
SELECT id AS zero_kept FROM zizq.enqueue('mix2', 't', retention => '{"completed_ms": 0}') \gset
SELECT count(*) AS taken FROM zizq.dequeue(ARRAY['mix2'], 2);
SELECT zizq.complete(ARRAY[:zero_kept, 424242, :default_kept]) AS not_applied;
SELECT id = :default_kept AS kept, status, purge_at > now() + interval '50 s' AS purged_in_a_minute
  FROM zizq._jobs WHERE queue = 'mix2';
SELECT zizq.complete(:zero_kept) AS again;
RESET zizq.completed_retention_ms;
