# The ring of budgets the dispatcher must evaluate holds one entry per budget
# (zizq.max_budgets). A budget dropped while in the ring used to leave its
# entry there, still counted: with every budget of a full table marked, the
# next mark overwrote a live budget's entry, and that budget, its flag left
# set, was never evaluated again (its parked jobs never offered).
#
# The dispatcher is stopped (SIGSTOP) while the ring fills, so that nothing is
# taken out of it meanwhile.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZizqNode;

my $max = 16;  # the least zizq.max_budgets allows
my $node = ZizqNode::start('dirty_ring', "zizq.max_budgets = $max\n");
my $q = sub { $node->safe_psql('postgres', $_[0]) };

# b1 lets one job run: x runs (leased), y and z wait in b1's line.
$q->(q{SELECT zizq.define_budget('b1', 1, 'while_in_flight')});
$q->(q{SELECT count(*) FROM zizq.enqueue_many('[{"queue": "q", "type": "x", "budgets": [{"key": "b1"}]},
                                                {"queue": "q", "type": "y", "budgets": [{"key": "b1"}]},
                                                {"queue": "q", "type": "z", "budgets": [{"key": "b1"}]}]')});
is($q->(q{SELECT type FROM zizq.dequeue(ARRAY['q'], 3, lease => '1 hour')}), 'x', 'x runs alone');
$node->poll_query_until('postgres', q{SELECT parked_jobs = 2 FROM zizq.budget_state WHERE key = 'b1'})
  or die 'y and z were not parked';
$q->("SELECT zizq.define_budget('b$_', 1, 'while_in_flight')") for 2 .. $max;

# Every budget of the full table marked, in the order b1, b2, ..., b16; then
# b2 dropped and b17 marked: the seventeenth mark lands where b1's entry is.
$node->poll_query_until('postgres', 'SELECT dirty_budgets = 0 FROM zizq.dispatcher_state()')
  or die 'the dispatcher did not evaluate the new budgets';
# Stopped only while idle in its latch wait: stopped while holding
# budget_lock, it would hold every commit below.
my $dispatcher = ZizqNode::dispatcher_pid($node);
END { kill 'CONT', $dispatcher if $dispatcher; }
for (my $tries = 0;; ++$tries)
{
	die 'the dispatcher was never idle' if $tries > 1000;
	kill 'STOP', $dispatcher;
	last if $q->("SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $dispatcher") eq 't';
	kill 'CONT', $dispatcher;
	usleep(10_000);
}
$q->(q{SELECT zizq.update_budget('b1', '{"allocation": 3}')});
$q->("SELECT zizq.update_budget('b$_', '{\"allocation\": 2}')") for 2 .. $max;
$q->(q{SELECT zizq.delete_budget('b2')});
my $last = $max + 1;
$q->("SELECT zizq.define_budget('b$last', 1, 'while_in_flight')");
$q->("SELECT zizq.update_budget('b$last', '{\"allocation\": 2}')");
is($q->('SELECT dirty_budgets FROM zizq.dispatcher_state()'), $max, 'every budget is marked');
kill 'CONT', $dispatcher;

# b1 now lets 3 run: y and z both run once b1's line is evaluated (leased,
# so that they stay in flight when each psql session ends).
my $seen = '';
for my $attempt (1 .. 50)
{
	$seen .= $q->(q{SELECT string_agg(type, '' ORDER BY id)
	                  FROM zizq.dequeue(ARRAY['q'], 5, wait => '200 ms', lease => '1 hour')});
	last if length $seen >= 2;
}
is($seen, 'yz', 'y and z run: b1 is evaluated again');

$node->stop;
done_testing();
