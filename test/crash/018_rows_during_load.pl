# Jobs and their budget written around zizq's functions (pg_restore's COPY
# into a running server) while the dispatcher loads budget state are
# counted: the load's snapshot, taken before those rows committed, does not
# see them, and the replay log has no entry for them. The budget row's
# trigger then makes the load start over from the tables, as an overflow of
# the log does. Before, the budget came out of the replay with nothing in
# flight: a limit of 1 with a leased job in flight let one more run.
#
# The window is forced with gdb: the dispatcher is held inside its load,
# after it took its snapshot, while the rows are written.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('rows_during_load', "max_prepared_transactions = 2\n");
my $q = sub { $node->safe_psql('postgres', $_[0]) };

# The load reads each budget's policy through a function of its own (the
# load itself is inlined): with one budget in the table, the breakpoint
# there holds the load after its snapshot.
$q->(q{SELECT zizq.define_budget('other', 1, 'while_in_flight')});
ZizqNode::restart_holding_load($node, '_job_errors');
my $dispatcher = { pid => ZizqNode::dispatcher_pid($node) };
my $held = ZizqNode::hold_at($dispatcher,
	"'zizq::pg::run_core<zizq::dispatcher::(anonymous namespace)::load_state()::<lambda()> >'");
$q->(q{COMMIT PREPARED 'hold'});
ok(ZizqNode::wait_held($held), 'the dispatcher is held inside its load, its snapshot taken');

# As pg_restore writes them: the jobs first, then their budget.
$q->(q{
	INSERT INTO zizq._jobs (queue, type, status, ready_at, dequeued_at, lease_until, lease_ms,
	                        budget_ids, budget_costs, budgets)
	VALUES ('r', 'leased', 'in_flight', now(), now(), now() + interval '1 hour', 3600000,
	        '{1000}', '{1}', '[{"key": "one", "cost": 1}]');
	INSERT INTO zizq._jobs (queue, type, status, ready_at, parked, budget_ids, budget_costs, budgets)
	SELECT 'r', 'parked', 'ready', now(), true, '{1000}', '{1}', '[{"key": "one", "cost": 1}]'
	  FROM generate_series(1, 2);
	INSERT INTO zizq.budgets (id, key, allocation, strategy) VALUES (1000, 'one', 1, 'while_in_flight');});
ZizqNode::release_held($held);
ZizqNode::wait_loaded($node);

ok(defined ZizqNode::seconds_until($node,
		q{SELECT l.in_flight_cost || '/' || l.parked_hint FROM zizq._budget_live() l JOIN zizq.budgets b USING (id) WHERE b.key = 'one'}, '1/2', 30),
	'the budget counts its leased job in flight and its two parked jobs');
is($q->(q{SELECT count(*) FROM zizq.dequeue(ARRAY['r'], 2, lease => '1 hour')}), '0',
	'its one token is held by the leased job: nothing more runs');
$q->(q{SELECT zizq.complete(id) FROM zizq.jobs WHERE type = 'leased'});
is($q->(q{SELECT count(*) FROM zizq.dequeue(ARRAY['r'], 2, wait => '30 s', lease => '1 hour')}), '1',
	'once it completes, one parked job runs, and only one');

$node->stop;
done_testing();
