# The dispatcher parks the budgeted jobs a dequeue refused by reading their
# rows by id. Its statements run thousands of times in a dispatcher's life,
# so PostgreSQL plans them once, generically; with the statistics of an
# empty table (a queue table's usual state), a statement whose conditions
# implied the predicate of `_jobs_budgeted` read that whole index for each
# batch of ids, one entry per ready budgeted job. Here the plans are generic
# from the start (plan_cache_mode), 2,000 budgeted jobs are ready, a dequeue
# refuses 655 of them, and the entries read from `_jobs_budgeted` are counted
# once the dispatcher's statistics reach the shared counters.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

# No autovacuum: an ANALYZE of the 2,000 jobs would hide the bad plan.
my $node = ZizqNode::start('park_reads', "plan_cache_mode = force_generic_plan\nautovacuum = off\n");

# 2,000 jobs under a budget that can pay them all: ready, none parked. Then
# the budget shrinks to 1, so that a dequeue takes one and refuses the rest
# it looks at; the refused go to the dispatcher to be parked.
$node->safe_psql('postgres', q{
	SELECT zizq.define_budget('wide', 100000, 'while_in_flight');
	SELECT count(*) FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', 'pq', 'type', 't',
		'budgets', jsonb_build_array(jsonb_build_object('key', 'wide')))) FROM generate_series(1, 2000)));
	SELECT zizq.update_budget('wide', '{"allocation": 1}');
});
is($node->safe_psql('postgres', 'SELECT count(*) FROM zizq._jobs WHERE parked'), '0', 'no job parked at first');

my $updates_before = $node->safe_psql('postgres',
	q{SELECT n_tup_upd FROM pg_stat_user_tables WHERE relid = 'zizq._jobs'::regclass});
my $dequeue_reads = $node->safe_psql('postgres', q{
	BEGIN;
	SELECT count(*) FROM zizq.dequeue(ARRAY['pq'], 100) \g /dev/null
	SELECT pg_stat_get_xact_tuples_returned('zizq._jobs_budgeted'::regclass);
	COMMIT;
});
ok($node->poll_query_until('postgres', q{SELECT count(*) > 100 FROM zizq._jobs WHERE parked}),
	'the dispatcher parks the refused jobs');
my $parked = $node->safe_psql('postgres', 'SELECT count(*) FROM zizq._jobs WHERE parked');

# The dispatcher sends its counters at the end of a cycle, at most once a
# second: wake it until its park updates show in the shared counters (the
# index reads of the same statements travel with them).
ok( $node->poll_query_until('postgres', qq{
		SELECT n_tup_upd >= $updates_before + $parked
		FROM zizq._wake_dispatcher(), pg_stat_user_tables WHERE relid = 'zizq._jobs'::regclass}),
	'the dispatcher reported its updates');
my $read = $node->safe_psql('postgres',
	q{SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelid = 'zizq._jobs_budgeted'::regclass});
note("parked $parked; _jobs_budgeted entries read: $read, of which the dequeue $dequeue_reads");
cmp_ok($read - $dequeue_reads, '<', 100, 'parking reads the refused jobs by id, not the budgeted index');

$node->stop;
done_testing();
