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
