-- Budget functions, their validation and SQLSTATEs (SPEC §3, §4).
\i test/regress/sql/helpers.psql

SELECT key, allocation, strategy, duration_ms, burst, created_at = updated_at AS fresh
  FROM zizq.define_budget('stripe', 3, 'while_in_flight');
SELECT key, allocation, strategy, duration_ms, burst
  FROM zizq.define_budget('emails', 100, 'time_based', duration => '1 minute');
SELECT key, allocation, strategy, duration_ms, burst
  FROM zizq.define_budget('images', 10000, 'time_based', duration => '1 hour', burst => 500);
-- Durations are kept in whole milliseconds.
SELECT duration_ms FROM zizq.define_budget('fine', 1, 'time_based', duration => '1.9 ms');

-- Refusals: SQLSTATE and message, and nothing stored.
SELECT pg_temp.try(sql) FROM (VALUES
  ($$SELECT zizq.define_budget('stripe', 5, 'while_in_flight')$$),
  ($$SELECT zizq.define_budget('x', 0, 'while_in_flight')$$),
  ($$SELECT zizq.define_budget('x', 1000001, 'while_in_flight')$$),
  ($$SELECT zizq.define_budget('x', 5, 'concurrency')$$),
  ($$SELECT zizq.define_budget('x', 5, 'while_in_flight', duration => '1 s')$$),
  ($$SELECT zizq.define_budget('x', 5, 'while_in_flight', burst => 2)$$),
  ($$SELECT zizq.define_budget('x', 5, 'time_based')$$),
  ($$SELECT zizq.define_budget('x', 5, 'time_based', duration => '0.5 ms')$$),
  ($$SELECT zizq.define_budget('x', 5, 'time_based', duration => '-1 s')$$),
  ($$SELECT zizq.define_budget('x', 5, 'time_based', duration => '1 s', burst => 0)$$),
  ($$SELECT zizq.define_budget('x', 5, 'time_based', duration => '1 s', burst => 1000001)$$),
  ($$SELECT zizq.define_budget('x', 5, 'time_based', duration => '1 s', burst => -3)$$),
  ($$SELECT zizq.define_budget('x', 5, 'while_in_flight', duration => '-1 s')$$),
  ($$SELECT zizq.define_budget('x', 5, 'while_in_flight', burst => -3)$$),
  ($$SELECT zizq.define_budget('x', 5, 'time_based', duration => '10 years 1 day')$$),
  ($$SELECT zizq.define_budget('', 5, 'while_in_flight')$$),
  ($$SELECT zizq.define_budget('a,b', 5, 'while_in_flight')$$),
  ($$SELECT zizq.define_budget(NULL, 5, 'while_in_flight')$$),
  ($$SELECT zizq.define_budget('x', NULL, 'while_in_flight')$$),
  ($$SELECT zizq.get_budget('nope')$$),
  ($$SELECT zizq.update_budget('nope', '{"allocation": 1}')$$),
  ($$SELECT zizq.delete_budget('nope')$$)
) AS t(sql);
SELECT key FROM zizq.list_budgets();

-- replace overwrites the policy and keeps created_at.
SELECT created_at AS stripe_created FROM zizq.get_budget('stripe') \gset
SELECT pg_temp.wait_for('clock_timestamp() > ' || quote_literal(:'stripe_created') || '::timestamptz + interval ''2 ms''');
SELECT key, allocation, strategy, created_at = :'stripe_created' AS kept_created_at, updated_at > created_at AS updated
  FROM zizq.define_budget('stripe', 5, 'while_in_flight', replace => true);
SELECT key, allocation, strategy, duration_ms, burst
  FROM zizq.define_budget('stripe', 5, 'time_based', duration => '1 second', replace => true);

-- update_budget: a merge patch recursing into the strategy.
SELECT allocation, strategy, duration_ms, burst FROM zizq.update_budget('emails', '{"strategy": {"burst": 5}}');
SELECT allocation, strategy, duration_ms, burst FROM zizq.update_budget('emails', '{"allocation": 60}');
SELECT allocation, strategy, duration_ms, burst FROM zizq.update_budget('emails', '{"strategy": {"burst": null}}');
SELECT allocation, strategy, duration_ms, burst
  FROM zizq.update_budget('emails', '{"strategy": {"type": "while_in_flight"}}');
SELECT allocation, strategy, duration_ms, burst
  FROM zizq.update_budget('emails', '{"allocation": 6, "strategy": {"type": "time_based", "duration_ms": 600}}');
SELECT pg_temp.try(sql) FROM (VALUES
  ($$SELECT zizq.update_budget('emails', '{"allocation": 0}')$$),
  ($$SELECT zizq.update_budget('emails', '{"allocation": "5"}')$$),
  ($$SELECT zizq.update_budget('emails', '{"allocation": null}')$$),
  ($$SELECT zizq.update_budget('emails', '{"strategy": null}')$$),
  ($$SELECT zizq.update_budget('emails', '{"strategy": {"duration_ms": 0}}')$$),
  ($$SELECT zizq.update_budget('emails', '{"strategy": {"burst": -7}}')$$),
  ($$SELECT zizq.update_budget('emails', '{"strategy": {"duration_ms": -1}}')$$),
  ($$SELECT zizq.update_budget('emails', '{"strategy": {"type": "while_in_flight", "burst": 2}}')$$),
  ($$SELECT zizq.update_budget('emails', '{"strategy": {"type": "bucket"}}')$$),
  ($$SELECT zizq.update_budget('emails', '{"key": "renamed"}')$$),
  ($$SELECT zizq.update_budget('emails', '{"strategy": {"period": 5}}')$$),
  ($$SELECT zizq.update_budget('emails', '[]')$$),
  ($$SELECT zizq.update_budget('emails', NULL)$$)
) AS t(sql);
SELECT key, allocation, strategy, duration_ms, burst FROM zizq.get_budget('emails');

-- The live state: a fresh bucket is full.
SELECT key, strategy, allocation, capacity, tokens, in_flight_cost, debt, parked_jobs, next_token_at
  FROM zizq.budget_state;

-- The capacity rule (23514) against bound unfinished jobs.
SELECT id FROM zizq.enqueue('pay', 'charge', budgets => '[{"key": "images", "cost": 400}]');
SELECT pg_temp.try(sql) FROM (VALUES
  ($$SELECT zizq.update_budget('images', '{"strategy": {"burst": 300}}')$$),
  ($$SELECT zizq.define_budget('images', 399, 'while_in_flight', replace => true)$$),
  ($$SELECT zizq.enqueue('pay', 'charge', budgets => '[{"key": "images", "cost": 501}]')$$),
  ($$SELECT zizq.enqueue('pay', 'charge', budgets => '[{"key": "stripe", "cost": 6}]')$$)
) AS t(sql);
SELECT key, allocation, strategy, burst FROM zizq.get_budget('images');
SELECT allocation, burst FROM zizq.update_budget('images', '{"strategy": {"burst": 400}}');

-- delete_budget refuses while unfinished jobs are bound (2BP01).
SELECT pg_temp.try($$SELECT zizq.delete_budget('images')$$);
SELECT id AS deleted_job FROM zizq.delete_job(1);
SELECT key FROM zizq.delete_budget('images');
SELECT key FROM zizq.list_budgets();

-- The budget limit (zizq.max_budgets = 64 in the test configuration): 53400.
SELECT count(*) AS defined FROM generate_series(1, 61) i, zizq.define_budget('b' || i, 1, 'while_in_flight');
SELECT count(*) AS budgets FROM zizq.list_budgets();
SELECT pg_temp.try($$SELECT zizq.define_budget('one-too-many', 1, 'while_in_flight')$$);
SELECT pg_temp.try($$SELECT zizq.enqueue('q', 't', budgets => '[{"key": "lazy", "create_with": {"allocation": 1, "strategy": {"type": "while_in_flight"}}}]')$$);
SELECT count(*) AS budgets, (SELECT count(*) FROM zizq.jobs) AS jobs FROM zizq.list_budgets();
SELECT key FROM zizq.delete_budget('b61');
SELECT key FROM zizq.define_budget('one-more', 1, 'while_in_flight');
