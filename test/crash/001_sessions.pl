# Dead workers (SPEC §2 "Delivery, leases and dead workers"): a session that
# ends, cleanly or killed, gives its in-flight jobs back within a second;
# leased jobs belong to their lease; after a crash restart or a server
# restart the jobs of dead sessions are ready again and budgets are rebuilt.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('sessions');
my $q = sub { $node->safe_psql('postgres', $_[0]) };

$q->(q{SELECT zizq.define_budget('conc', 3, 'while_in_flight')});
$q->(q{SELECT zizq.define_budget('rate', 2, 'time_based', duration => '1 hour')});
sub enqueue
{
	my ($queue, $n, $budgets) = @_;
	$budgets = $budgets ? "'$budgets'" : 'NULL';
	$q->("SELECT count(zizq.enqueue('$queue', 't', budgets => $budgets)) FROM generate_series(1, $n)");
}
sub count_status
{
	my ($queue, $status) = @_;
	return $q->("SELECT count(*) FROM zizq.jobs WHERE queue = '$queue' AND status = '$status'");
}

# A clean disconnect.
enqueue('a', 3, '[{"key": "conc"}]');
my $worker = $node->background_psql('postgres');
is($worker->query_safe(q{SELECT count(*) FROM zizq.dequeue(ARRAY['a'], 10)}), '3', 'worker takes 3 jobs');
is($q->(q{SELECT count(*) FROM zizq.dequeue(ARRAY['a'], 10)}), '0', 'jobs a worker holds are not delivered again');
is($q->(q{SELECT in_flight_cost FROM zizq.budget_state WHERE key = 'conc'}), '3', 'their budget is debited');
$worker->quit;
my $took = ZizqNode::seconds_until($node, q{SELECT count(*) FROM zizq.jobs WHERE queue = 'a' AND status = 'ready'}, '3');
ok(defined $took && $took < 1.0, 'a disconnect gives the jobs back within a second (' . ($took // 'never') . ' s)');
is($q->(q{SELECT attempts FROM zizq.jobs WHERE queue = 'a' LIMIT 1}), '0', 'attempts unchanged');
is($q->(q{SELECT in_flight_cost FROM zizq.budget_state WHERE key = 'conc'}), '0', 'and the budget its tokens');

# pg_terminate_backend.
$worker = $node->background_psql('postgres');
$worker->query_safe(q{SELECT count(*) FROM zizq.dequeue(ARRAY['a'], 2)});
my $pid = $worker->query_safe('SELECT pg_backend_pid()');
$q->("SELECT pg_terminate_backend($pid)");
$took = ZizqNode::seconds_until($node, q{SELECT count(*) FROM zizq.jobs WHERE queue = 'a' AND status = 'ready'}, '3');
ok(defined $took && $took < 1.0, 'a terminated session gives its jobs back within a second (' . ($took // 'never') . ' s)');
eval { $worker->quit };

# A lease outlives its session and runs out without a heartbeat.
enqueue('l', 1, '[{"key": "conc", "cost": 2}]');
$worker = $node->background_psql('postgres');
$worker->query_safe(q{SELECT count(*) FROM zizq.dequeue(ARRAY['l'], 1, lease => '1 hour')});
$worker->quit;
is($q->(q{SELECT count(*) FROM zizq.jobs WHERE queue = 'l' AND status = 'in_flight'}), '1',
	'a leased job stays in flight when its session ends');
$q->(q{SELECT zizq.enqueue('short', 't')});
$q->(q{SELECT count(*) FROM zizq.dequeue(ARRAY['short'], 1, lease => '300 ms')});
$took = ZizqNode::seconds_until($node, q{SELECT status FROM zizq.jobs WHERE queue = 'short'}, 'ready');
ok(defined $took && $took < 2, 'a lease without heartbeat runs out and the job is ready again');

# Drain the time_based budget so that its refill after a restart shows.
enqueue('r', 2, '[{"key": "rate"}]');
is($q->(q{SELECT count(*) FROM zizq.dequeue(ARRAY['r'], 10)}), '2', 'rate budget drained');
$q->(q{SELECT zizq.complete(array_agg(id)) FROM zizq.jobs WHERE queue = 'r'});
is($q->(q{SELECT tokens < 1 FROM zizq.budget_state WHERE key = 'rate'}), 't', 'rate budget empty');

# SIGKILL of a backend holding jobs: a crash restart of the whole server.
$worker = $node->background_psql('postgres', on_error_stop => 0);
$worker->query_safe(q{SELECT count(*) FROM zizq.dequeue(ARRAY['a'], 3)});
$pid = $worker->query_safe('SELECT pg_backend_pid()');
kill 'KILL', $pid;
eval { $worker->quit };
$node->poll_query_until('postgres', 'SELECT true') or die 'server did not come back';
ZizqNode::wait_loaded($node);
is(count_status('a', 'ready'), '3', 'after a crash restart the jobs of the killed session are ready');
is(count_status('l', 'in_flight'), '1', 'the leased job is still in flight');
is($q->(q{SELECT in_flight_cost FROM zizq.budget_state WHERE key = 'conc'}), '2',
	'shared memory rebuilt: in-flight cost of the leased job only');
is($q->(q{SELECT tokens FROM zizq.budget_state WHERE key = 'rate'}), '2', 'a time_based bucket is full after a restart');
is($q->(q{SELECT count(*) FROM zizq.dequeue(ARRAY['a'], 10)}), '1', 'only the one token left is spent');

# A clean restart.
$node->restart;
ZizqNode::wait_loaded($node);
is(count_status('a', 'ready'), '3', 'after a restart the jobs of dead sessions are ready');
is($q->(q{SELECT in_flight_cost FROM zizq.budget_state WHERE key = 'conc'}), '2', 'in-flight cost rebuilt after a restart');

# The lease still counts: completing it releases its tokens.
is($q->(q{SELECT zizq.complete(id) FROM zizq.jobs WHERE queue = 'l'}), 't', 'the leased job completes after the restart');
is($q->(q{SELECT in_flight_cost FROM zizq.budget_state WHERE key = 'conc'}), '0', 'and releases its cost');

$node->stop;
done_testing();
