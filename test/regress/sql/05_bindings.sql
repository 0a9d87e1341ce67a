-- Binding jobs to budgets: at enqueue (create_with), on one job and in bulk
-- (SPEC §3 "Binding jobs").
\i test/regress/sql/helpers.psql

SELECT key FROM zizq.define_budget('emails', 10, 'while_in_flight');
SELECT key FROM zizq.define_budget('stripe', 3, 'while_in_flight');

-- At enqueue; create_with creates the budget with the job, the stored policy
-- is authoritative once it exists, and the first definition in a call wins.
SELECT id, budgets FROM zizq.enqueue('mail', 'send', budgets => '[{"key": "emails"}, {"key": "stripe", "cost": 2}]');
SELECT id, budgets FROM zizq.enqueue('mail', 'send', budgets =>
  '[{"key": "lazy", "cost": 2, "create_with": {"allocation": 4, "strategy": {"type": "time_based", "duration_ms": 1000}}}]');
SELECT key, allocation, strategy, duration_ms FROM zizq.get_budget('lazy');
SELECT id, budgets FROM zizq.enqueue('mail', 'send', budgets =>
  '[{"key": "lazy", "create_with": {"allocation": 99, "strategy": {"type": "while_in_flight"}}}]');
SELECT allocation, strategy FROM zizq.get_budget('lazy');
SELECT id, budgets FROM zizq.enqueue_many('[
  {"queue": "mail", "type": "a", "budgets": [{"key": "first", "create_with": {"allocation": 2, "strategy": {"type": "while_in_flight"}}}]},
  {"queue": "mail", "type": "b", "budgets": [{"key": "first", "create_with": {"allocation": 7, "strategy": {"type": "while_in_flight"}}}]}]');
SELECT allocation FROM zizq.get_budget('first');
-- create_with is not stored on the job.
SELECT budgets FROM zizq.get_job(2);

-- Refusals at enqueue: nothing created, nothing enqueued.
SELECT count(*) AS jobs_before FROM zizq.jobs;
SELECT pg_temp.try(sql) FROM (VALUES
  ($$SELECT zizq.enqueue('mail', 's', budgets => '[{"key": "ghost"}]')$$),
  ($$SELECT zizq.enqueue('mail', 's', budgets => '[{"key": "emails"}, {"key": "emails"}]')$$),
  ($$SELECT zizq.enqueue('mail', 's', budgets => '[{"key": "stripe", "cost": 4}]')$$),
  ($$SELECT zizq.enqueue('mail', 's', budgets => '[{"key": "stripe", "cost": 0}]')$$),
  ($$SELECT zizq.enqueue('mail', 's', budgets => '[{"key": "new", "cost": 3, "create_with": {"allocation": 2, "strategy": {"type": "while_in_flight"}}}]')$$),
  ($$SELECT zizq.enqueue('mail', 's', budgets => '[{"key": "new", "create_with": {"allocation": 2, "strategy": {"type": "while_in_flight", "burst": 1}}}]')$$),
  ($$SELECT zizq.enqueue('mail', 's', budgets => '[{"key": "new", "create_with": {"allocation": 2}}]')$$),
  ($$SELECT zizq.enqueue('mail', 's', budgets => '[{"key": "new", "create_with": {"allocation": 2, "strategy": {"type": "while_in_flight", "burst": -1}}}]')$$),
  ($$SELECT zizq.enqueue('mail', 's', budgets => '[{"key": "new", "create_with": {"allocation": 2, "strategy": {"type": "while_in_flight"}}}, {"key": "ghost"}]')$$),
  ($$SELECT zizq.enqueue('mail', 's', budgets => '[{"key": "a"}, {"key": "b"}, {"key": "c"}, {"key": "d"}, {"key": "e"}]')$$),
  ($$SELECT zizq.enqueue_many('[{"queue": "m", "type": "t", "budgets": [{"key": "emails"}]}, {"queue": "m", "type": "t", "budgets": [{"key": "stripe", "cost": 9}]}]')$$)
) AS t(sql);
SELECT count(*) AS jobs_after FROM zizq.jobs;
SELECT count(*) AS budget_new_absent FROM zizq.budgets WHERE key = 'new';

-- The cost is checked against the policy that applies: an existing budget's
-- (create_with ignored), or the call's first definition, which a plain
-- reference earlier in the call also uses.
SELECT key FROM zizq.define_budget('roomy', 10, 'while_in_flight');
SELECT budgets FROM zizq.enqueue('mail', 'fits', budgets =>
  '[{"key": "roomy", "cost": 5, "create_with": {"allocation": 1, "strategy": {"type": "while_in_flight"}}}]');
SELECT type, budgets FROM zizq.enqueue_many('[
  {"queue": "mail", "type": "ref", "budgets": [{"key": "later", "cost": 2}]},
  {"queue": "mail", "type": "def", "budgets": [{"key": "later", "cost": 2, "create_with": {"allocation": 3, "strategy": {"type": "while_in_flight"}}}]},
  {"queue": "mail", "type": "other", "budgets": [{"key": "later", "cost": 2, "create_with": {"allocation": 1, "strategy": {"type": "while_in_flight"}}}]}]');
SELECT allocation FROM zizq.get_budget('later');
SELECT pg_temp.try($$SELECT zizq.enqueue('mail', 's', budgets => '[{"key": "roomy", "cost": 11, "create_with": {"allocation": 20, "strategy": {"type": "while_in_flight"}}}]')$$);

-- One job: bind, rebind, set_budget_cost, unbind, unbind_all, replace.
SELECT id FROM zizq.enqueue('mail', 'one') \gset
SELECT budgets FROM zizq.bind_budget(:id, 'emails');
SELECT pg_temp.try(format($$SELECT zizq.bind_budget(%s, 'emails')$$, :id));
SELECT budgets FROM zizq.bind_budget(:id, 'stripe', 2);
SELECT budgets FROM zizq.rebind_budget(:id, 'stripe', 3);
SELECT budgets FROM zizq.rebind_budget(:id, 'fresh', 1, '{"allocation": 5, "strategy": {"type": "while_in_flight"}}');
SELECT budgets FROM zizq.set_budget_cost(:id, 'emails', 4);
SELECT pg_temp.try(format($$SELECT zizq.set_budget_cost(%s, 'first', 1)$$, :id));
SELECT pg_temp.try(format($$SELECT zizq.set_budget_cost(%s, 'stripe', 4)$$, :id));
SELECT pg_temp.try(format($$SELECT zizq.set_budget_cost(%s, 'stripe', 0)$$, :id));
SELECT pg_temp.try(format($$SELECT zizq.bind_budget(%s, 'ghost')$$, :id));
SELECT pg_temp.try(format($$SELECT zizq.bind_budget(%s, 'a', 1, '{"allocation": 1, "strategy": {"type": "while_in_flight"}}')$$, :id));
SELECT budgets FROM zizq.get_job(:id);
SELECT budgets FROM zizq.unbind_budget(:id, 'fresh');
SELECT budgets FROM zizq.unbind_budget(:id, 'not-bound');
SELECT budgets FROM zizq.replace_budgets(:id, '[{"key": "emails", "cost": 2}]');
SELECT budgets FROM zizq.unbind_all_budgets(:id);
SELECT budgets FROM zizq.replace_budgets(:id, '[{"key": "stripe"}]');
SELECT budgets FROM zizq.replace_budgets(:id, '[]');
SELECT pg_temp.try(sql) FROM (VALUES
  ($$SELECT zizq.bind_budget(424242, 'emails')$$),
  ($$SELECT zizq.unbind_all_budgets(424242)$$),
  ($$SELECT zizq.replace_budgets(1, NULL)$$),
  ($$SELECT zizq.replace_budgets(1, '{"key": "emails"}')$$),
  ($$SELECT zizq.replace_budgets(1, '[{"key": "stripe", "cost": 9}]')$$),
  ($$SELECT zizq.enqueue('mail', 's', budgets => '[{"key": "stripe", "cost": 3000000000}]')$$),
  ($$SELECT zizq.bind_budget(1, NULL)$$),
  ($$SELECT zizq.bind_budget(1, 'bad*key')$$)
) AS t(sql);

-- In flight and terminal jobs cannot change (55000).
SELECT id AS flying FROM zizq.enqueue('fly', 't', budgets => '[{"key": "emails"}]') \gset
SELECT id FROM zizq.dequeue(ARRAY['fly']);
SELECT pg_temp.try(format($$SELECT zizq.unbind_budget(%s, 'emails')$$, :flying));
SELECT budgets FROM zizq.unbind_budget(:flying, 'not-bound');  -- no change asked: no refusal
SELECT zizq.complete(:flying);

-- Bulk: {"changed": n, "blocked": [in-flight ids that would have changed]}.
SELECT array_agg(id ORDER BY id) AS batch FROM zizq.enqueue_many('[
  {"queue": "bulk", "type": "t"},
  {"queue": "bulk", "type": "t", "budgets": [{"key": "stripe"}]},
  {"queue": "bulk", "type": "t", "budgets": [{"key": "emails"}]},
  {"queue": "bulk", "type": "t", "budgets": [{"key": "emails"}]}]') \gset
SELECT id AS inflight FROM zizq.dequeue(ARRAY['bulk']) \gset
SELECT zizq.bind_budget(:'batch'::bigint[], 'emails');
SELECT zizq.bind_budget(:'batch'::bigint[], 'stripe', 2);
SELECT zizq.set_budget_cost(:'batch'::bigint[], 'stripe', 3);
SELECT zizq.rebind_budget(:'batch'::bigint[], 'emails', 2);
SELECT zizq.unbind_budget(:'batch'::bigint[], 'stripe');
SELECT id, budgets FROM zizq.jobs WHERE id = ANY (:'batch'::bigint[]) ORDER BY id;
SELECT zizq.replace_budgets(:'batch'::bigint[], '[{"key": "first"}]');
SELECT zizq.unbind_all_budgets(:'batch'::bigint[]);
SELECT pg_temp.try(format($$SELECT zizq.set_budget_cost(%L::bigint[], 'stripe', 4)$$, :'batch'));

-- The same keys at the same costs, in any order, are no change: nothing is
-- rewritten, and an in-flight job is not listed as blocked.
SELECT id AS pair_flying FROM zizq.enqueue('pair', 't', budgets => '[{"key": "emails"}, {"key": "stripe"}]') \gset
SELECT id FROM zizq.dequeue(ARRAY['pair']);
SELECT id AS pair_ready FROM zizq.enqueue('pair', 't', budgets => '[{"key": "emails"}, {"key": "stripe"}]') \gset
SELECT zizq.rebind_budget(ARRAY[:pair_flying, :pair_ready], 'emails', 1) AS same_binding;
SELECT zizq.replace_budgets(ARRAY[:pair_flying, :pair_ready], '[{"key": "stripe"}, {"key": "emails"}]') AS same_set;
SELECT budgets FROM zizq.rebind_budget(:pair_flying, 'emails', 1);
SELECT budgets FROM zizq.rebind_budget(:pair_ready, 'emails', 2);  -- keeps its place
-- An in-flight job's refused change creates no budget for it.
SELECT zizq.bind_budget(ARRAY[:pair_flying], 'for-flying', 1, '{"allocation": 2, "strategy": {"type": "while_in_flight"}}') AS flying_blocked;
SELECT count(*) AS for_flying_not_created FROM zizq.budgets WHERE key = 'for-flying';
SELECT zizq.complete(:pair_flying);
SELECT zizq.bind_budget(ARRAY(SELECT id FROM zizq.jobs WHERE queue = 'nothing'), 'emails') AS empty_selection;
-- A create_with creates its budget with a job, not for an empty selection;
-- a bad call is refused all the same.
SELECT zizq.bind_budget(ARRAY[]::bigint[], 'unused', 1, '{"allocation": 2, "strategy": {"type": "while_in_flight"}}') AS no_job;
SELECT count(*) AS unused_not_created FROM zizq.budgets WHERE key = 'unused';
SELECT pg_temp.try(sql) FROM (VALUES
  ($$SELECT zizq.bind_budget(ARRAY[]::bigint[], 'unused', 3, '{"allocation": 2, "strategy": {"type": "while_in_flight"}}')$$),
  ($$SELECT zizq.rebind_budget(ARRAY[]::bigint[], 'unused')$$)
) AS t(sql);

-- Filtering jobs by budget key uses the index.
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM zizq.jobs WHERE budgets @> '[{"key": "emails"}]';
RESET enable_seqscan;
SELECT id FROM zizq.jobs WHERE budgets @> '[{"key": "emails"}]' ORDER BY id;

-- In-flight jobs are not in the GIN index (a take would insert each): the
-- filter finds them through the in-flight indexes, leased or not, and so do
-- delete_budget's refusal and the capacity rule.
SELECT key FROM zizq.define_budget('flying', 4, 'while_in_flight');
SELECT count(*) AS enqueued FROM zizq.enqueue_many('[
  {"queue": "fly-held", "type": "t", "budgets": [{"key": "flying", "cost": 3}]},
  {"queue": "fly-leased", "type": "t", "budgets": [{"key": "flying"}]},
  {"queue": "fly-ready", "type": "t", "budgets": [{"key": "flying"}]}]');
SELECT count(*) AS held FROM zizq.dequeue(ARRAY['fly-held']);
SELECT count(*) AS leased FROM zizq.dequeue(ARRAY['fly-leased'], lease => '1 hour');
SELECT queue, status, lease_until IS NOT NULL AS leased
  FROM zizq.jobs WHERE budgets @> '[{"key": "flying"}]' ORDER BY id;
SET enable_seqscan = off;
SELECT queue, status FROM zizq.jobs WHERE budgets @> '[{"key": "flying"}]' ORDER BY id;
RESET enable_seqscan;
SELECT pg_temp.try(sql) FROM (VALUES
  ($$SELECT zizq.update_budget('flying', '{"allocation": 2}')$$),
  ($$SELECT zizq.delete_budget('flying')$$)
) AS t(sql);
SELECT count(*) AS ready_deleted FROM zizq.delete_jobs(ARRAY(SELECT id FROM zizq.jobs WHERE queue = 'fly-ready'));
SELECT pg_temp.try($$SELECT zizq.delete_budget('flying')$$);
SELECT zizq.complete(ARRAY(SELECT id FROM zizq.jobs WHERE queue = 'fly-leased')) AS not_completed;
SELECT pg_temp.try($$SELECT zizq.delete_budget('flying')$$);
SELECT zizq.complete(ARRAY(SELECT id FROM zizq.jobs WHERE queue = 'fly-held')) AS not_completed;
SELECT allocation FROM zizq.update_budget('flying', '{"allocation": 2}');
SELECT key FROM zizq.delete_budget('flying');
