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
  ($$SELECT zizq.heartbeat(ARRAY[1], '-1 s')$$),
  ($$SELECT zizq.fail(NULL)$$),
  ($$SELECT zizq.update_job(1, NULL)$$),
  ($$SELECT zizq.update_job(1, '[]')$$),
  ($$SELECT zizq.update_job(1, '{"status": "ready"}')$$),
  ($$SELECT zizq.update_job(1, '{"priority": "1"}')$$),
  ($$SELECT zizq.update_job(1, '{"priority": 99999}')$$),
  ($$SELECT zizq.update_job(1, '{"queue": "a]"}')$$),
  ($$SELECT zizq.update_job(1, '{"queue": null}')$$),
  ($$SELECT zizq.update_job(1, '{"ready_at": "not a time"}')$$),
  ($$SELECT zizq.update_job(1, '{"backoff": {"exponent": -1}}')$$),
  ($$SELECT zizq.update_job(1, '{"retention": 7}')$$),
  ($$SELECT zizq.update_job(1, '{"retry_limit": -1}')$$),
  ($$SELECT zizq.update_jobs(ARRAY[]::bigint[], '{"nope": 1}')$$),
  ($$SELECT zizq.update_job(2, '{}')$$)
) AS t(sql);
SELECT id, queue, priority, status FROM zizq.jobs;
SELECT count(*) AS empty_queues_array_not_taken FROM zizq.jobs WHERE status = 'in_flight';
