-- Bad input gets a clear error (22023 unless said otherwise) and changes
-- nothing (SPEC §4).
\i test/regress/sql/helpers.psql

SELECT id FROM zizq.enqueue('q', 't');
SELECT pg_temp.try(sql) FROM (VALUES
  ($$SELECT zizq.enqueue(NULL, 't')$$),
  ($$SELECT zizq.enqueue('q', NULL)$$),
  ($$SELECT zizq.enqueue('', 't')$$),
  ($$SELECT zizq.enqueue('q', '')$$),
  ($$SELECT zizq.enqueue('q*', 't')$$),
  ($$SELECT zizq.enqueue('q', 't{1}')$$),
  ($$SELECT zizq.enqueue('q\x', 't')$$),
  ($$SELECT zizq.enqueue(repeat('q', 256), 't')$$),
  ($$SELECT zizq.enqueue('q', 't', NULL)$$),
  ($$SELECT zizq.enqueue('q', 't', priority => -1)$$),
  ($$SELECT zizq.enqueue('q', 't', priority => 65536)$$),
  ($$SELECT zizq.enqueue('q', 't', priority => NULL)$$),
  ($$SELECT zizq.enqueue('q', 't', unique_key => '')$$),
  ($$SELECT zizq.enqueue('q', 't', unique_key => 'k', unique_while => 'forever')$$),
  ($$SELECT zizq.enqueue('q', 't', retry_limit => -1)$$),
  ($$SELECT zizq.enqueue('q', 't', backoff => '{"base_ms": -1}')$$),
  ($$SELECT zizq.enqueue('q', 't', backoff => '{"base": 1}')$$),
  ($$SELECT zizq.enqueue('q', 't', backoff => '[1]')$$),
  ($$SELECT zizq.enqueue('q', 't', retention => '{"completed_ms": "1"}')$$),
  ($$SELECT zizq.enqueue('q', 't', retention => '{"kept": 1}')$$),
  ($$SELECT zizq.enqueue('q', 't', retention => '{"completed_ms": 315576000001}')$$),
  ($$SELECT zizq.enqueue('q', 't', retention => '{"dead_ms": 9223372036854775807}')$$),
  ($$SELECT zizq.enqueue('q', 't', ready_at => 'infinity')$$),
  ($$SELECT zizq.enqueue('q', 't', budgets => '{"key": "x"}')$$),
  ($$SELECT zizq.enqueue('q', 't', budgets => '[{"key": "missing"}]')$$)
) AS t(sql);

-- enqueue_many: the element and field are named in the message.
SELECT pg_temp.try(sql) FROM (VALUES
  ($$SELECT zizq.enqueue_many('{"queue": "q"}')$$),
  ($$SELECT zizq.enqueue_many('"q"')$$),
  ($$SELECT zizq.enqueue_many('[1]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t"}, []]')$$),
  ($$SELECT zizq.enqueue_many('[{"type": "t"}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q"}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t", "colour": "red"}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": 1, "type": "t"}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": null, "type": "t"}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t", "priority": "high"}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t", "priority": 1.5}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t", "priority": 70000}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t", "ready_at": "tomorrow-ish"}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t", "ready_at": 5}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t", "ready_at": "tomorrow"}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t", "ready_at": "infinity"}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t", "ready_at": "2027-02-29T00:00:00Z"}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t", "priority": null}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t", "unique_key": "k", "unique_while": null}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t"}, {"queue": "", "type": "t"}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "a,b"}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t", "retention": {"completed_ms": 315576000001}}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t", "unique_while": "active"}, {"queue": "q", "type": "t", "unique_while": "always"}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t", "retry_limit": -2}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t", "budgets": {"key": "a"}}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "q", "type": "t", "backoff": {"jitter_ms": true}}]')$$),
  ($$SELECT zizq.enqueue_many(NULL)$$)
) AS t(sql);
SELECT count(*) AS still_one_job FROM zizq.jobs;

-- dequeue, complete, fail, heartbeat.
SELECT pg_temp.try(sql) FROM (VALUES
  ($$SELECT zizq.dequeue(max_jobs => 0)$$),
  ($$SELECT zizq.dequeue(max_jobs => NULL)$$),
  ($$SELECT zizq.dequeue(max_jobs => 10001)$$),
  ($$SELECT zizq.dequeue(ARRAY[]::text[])$$),
  ($$SELECT zizq.dequeue(ARRAY['q', NULL])$$),
  ($$SELECT zizq.dequeue(ARRAY['q?'])$$),
  ($$SELECT zizq.dequeue(wait => '-1 s')$$),
  ($$SELECT zizq.dequeue(lease => '0 s')$$),
  ($$SELECT zizq.dequeue(wait => '11 years')$$),
  ($$SELECT zizq.dequeue(lease => '300000 years')$$),
  ($$SELECT zizq.heartbeat(ARRAY[1], '-1 s')$$),
  ($$SELECT zizq.heartbeat(ARRAY[1], '300000 years')$$),
  ($$SELECT zizq.fail(NULL)$$),
  ($$SELECT zizq.fail(1, retry_at => 'infinity')$$),
  ($$SELECT zizq.fail(1, kill => NULL)$$),
  ($$SELECT zizq.get_job(NULL)$$),
  ($$SELECT zizq.delete_job(NULL)$$),
  ($$SELECT zizq.update_job(NULL, '{}')$$),
  ($$SELECT zizq.update_job(1, NULL)$$),
  ($$SELECT zizq.update_job(1, '[]')$$),
  ($$SELECT zizq.update_job(1, '{"status": "ready"}')$$),
  ($$SELECT zizq.update_job(1, '{"priority": "1"}')$$),
  ($$SELECT zizq.update_job(1, '{"priority": 99999}')$$),
  ($$SELECT zizq.update_job(1, '{"queue": "a]"}')$$),
  ($$SELECT zizq.update_job(1, '{"queue": null}')$$),
  ($$SELECT zizq.update_job(1, '{"ready_at": "not a time"}')$$),
  ($$SELECT zizq.update_job(1, '{"ready_at": "now"}')$$),
  ($$SELECT zizq.update_job(1, '{"ready_at": "2027-04-31"}')$$),
  ($$SELECT zizq.update_job(1, '{"retention": {"dead_ms": 315576000001}}')$$),
  ($$SELECT zizq.update_jobs(ARRAY[]::bigint[], '{"ready_at": "garbage"}')$$),
  ($$SELECT zizq.update_job(1, '{"backoff": {"exponent": -1}}')$$),
  ($$SELECT zizq.update_job(1, '{"retention": 7}')$$),
  ($$SELECT zizq.update_job(1, '{"retry_limit": -1}')$$),
  ($$SELECT zizq.update_jobs(ARRAY[]::bigint[], '{"nope": 1}')$$),
  ($$SELECT zizq.update_job(2, '{}')$$)
) AS t(sql);
SELECT id, queue, priority, status FROM zizq.jobs;
SELECT count(*) AS empty_queues_array_not_taken FROM zizq.jobs WHERE status = 'in_flight';

-- Accepted: ISO 8601 with a T or a space, Z or an offset; a JSON null where
-- enqueue's argument defaults to NULL means "not given"; a payload may be
-- JSON null, as enqueue's jsonb argument may.
SELECT status, ready_at = '2999-01-31 09:30:00+00' AS at_that_instant, payload
  FROM zizq.enqueue_many('[
    {"queue": "iso", "type": "t", "ready_at": "2999-01-31T09:30:00Z"},
    {"queue": "iso", "type": "t", "ready_at": "2999-01-31 10:30:00.000+01:00"},
    {"queue": "iso", "type": "t", "ready_at": null, "budgets": null, "unique_key": null,
     "retry_limit": null, "backoff": null, "retention": null, "payload": null}]');
SELECT status, ready_at = '2999-01-31 09:30:00+00' AS at_that_instant
  FROM zizq.update_job((SELECT max(id) FROM zizq.jobs WHERE queue = 'iso'), '{"ready_at": "2999-01-31T12:30+03"}');

-- Leases up to ten years, counted as dequeue counts them (30-day months).
SELECT zizq.heartbeat(ARRAY[424242], '120 months 40 days') AS not_in_flight;

-- A job stored before the ten-year bound (written here directly) still
-- finishes: its retention is read as ten years.
SELECT id AS old_job FROM zizq.enqueue('old', 't') \gset
UPDATE zizq._jobs SET retention = '{"dead_ms": 9223372036854775807}' WHERE id = :old_job;
SELECT count(*) AS taken FROM zizq.dequeue(ARRAY['old']);
SELECT status FROM zizq.fail(:old_job, kill => true);
SELECT purge_at BETWEEN now() + interval '3652 days' AND now() + interval '3653 days' AS kept_ten_years
  FROM zizq._jobs WHERE id = :old_job;

-- complete(bigint[]): a NULL id is never applied; it comes back as NULL in
-- its place, as from release and heartbeat.
SELECT zizq.complete(ARRAY[NULL, 424242, NULL]::bigint[]) AS not_applied;
SELECT count(*) AS taken FROM zizq.dequeue(ARRAY['q'], 10);
SELECT zizq.complete(ARRAY[NULL, (SELECT min(id) FROM zizq.jobs WHERE queue = 'q')]) AS not_applied;

-- A message longer than zizq's buffer (it quotes user text) is cut on a
-- whole character: the server never sends a partial UTF-8 sequence.
DO $$
DECLARE m text;
BEGIN
  PERFORM zizq.enqueue_many(jsonb_build_array(jsonb_build_object('queue', 'q', 'type', 't', 'x' || repeat('é', 1500), 1)));
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS m = MESSAGE_TEXT;
  RAISE WARNING 'cut to % bytes: %', octet_length(m),
    CASE WHEN convert_from(convert_to(m, 'UTF8'), 'UTF8') LIKE '%é' THEN 'whole characters' END;
END $$;
