# A commit can still fail after zizq's PRE_COMMIT callback logged its budget
# changes for a load under way (here: a serialization failure, checked after
# the callbacks). A load that runs in between must not apply them: it leaves
# them to the transaction, which applies them once committed, or drops them
# when it fails. Applied, the release of a complete that never happened
# would let a while_in_flight budget admit more than its allocation.
#
# gdb holds the committing backend in PostgreSQL's serialization check while
# a load runs; the load is held back until then by a prepared transaction
# that keeps zizq.budgets locked across a restart.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('commit_fails', "max_prepared_transactions = 2\n");
my $q = sub { $node->safe_psql('postgres', $_[0]) };

$q->(q{SELECT zizq.define_budget('two', 2, 'while_in_flight')});
$q->(q{SELECT count(*) FROM zizq.enqueue_many('[{"queue": "r", "type": "a", "budgets": [{"key": "two"}]},
                                                {"queue": "r", "type": "b", "budgets": [{"key": "two"}]}]')});
my ($first, $second) = split /\n/, $q->(q{SELECT id FROM zizq.dequeue(ARRAY['r'], 2, lease => '1 hour') ORDER BY id});
$q->(q{CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0), (2, 0)});

# Commits the session's open transaction while gdb holds it at `$function`,
# after zizq's PRE_COMMIT callback, and lets it go on once a load has run.
sub commit_across_load
{
	my ($s, $function) = @_;
	my $held = ZizqNode::hold_at($s, $function);
	ZizqNode::send_only($s, 'COMMIT;');
	ok(ZizqNode::wait_held($held), "the commit is held at $function, its release logged");
	$q->(q{COMMIT PREPARED 'hold'});
	ZizqNode::wait_loaded($node);
	ZizqNode::release_held($held);
}

ZizqNode::restart_holding_load($node, 'budgets');
is($q->('SELECT budgets_loaded FROM zizq.dispatcher_state()'), 'f', 'the load waits for the lock');

# Write skew: the second to commit fails, at commit, after the callbacks.
my $t1 = ZizqNode::session($node, 't1');
my $t2 = ZizqNode::session($node, 't2');
ZizqNode::run_until($t1, 'BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT sum(v) FROM t; UPDATE t SET v = v + 1 WHERE id = 1;', 't1 ready');
ZizqNode::run_until($t2, "BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT sum(v) FROM t; UPDATE t SET v = v + 1 WHERE id = 2;
                          SELECT zizq.complete($first);", 't2 ready');
ZizqNode::run_until($t1, 'COMMIT;', 't1 committed');
commit_across_load($t2, 'PreCommit_CheckForSerializationFailure');
ZizqNode::send_only($t2, '\q');
$t2->{h}->finish;
like($t2->{err}, qr/could not serialize access/, 'the commit failed');

is($q->("SELECT status FROM zizq._jobs WHERE id = $first"), 'in_flight', 'the job it completed is still in flight');
is($q->(q{SELECT in_flight_cost FROM zizq.budget_state WHERE key = 'two'}), '2',
	'both jobs count as in flight: the failed release was not applied');
$q->(q{SELECT zizq.enqueue('r', 'c', budgets => '[{"key": "two"}]')});
is($q->(q{SELECT count(*) FROM zizq.dequeue(ARRAY['r'], 5)}), '0', 'no third job runs beside the two');
ZizqNode::send_only($t1, '\q');
$t1->{h}->finish;

# The same hold on a commit that goes through: the load leaves the release
# to it, and it applies it once committed.
ZizqNode::restart_holding_load($node, 'budgets');
my $t3 = ZizqNode::session($node, 't3');
ZizqNode::run_until($t3, "BEGIN; SELECT zizq.complete($second);", 't3 ready');
commit_across_load($t3, 'PreCommit_Notify');
ZizqNode::run_until($t3, '', 't3 committed');
is($q->(q{SELECT in_flight_cost FROM zizq.budget_state WHERE key = 'two'}), '1',
	'the committed release applied by its transaction');
is($q->(q{SELECT type FROM zizq.dequeue(ARRAY['r'], 5, wait => '10 s')}), 'c', 'the freed slot runs the waiting job');
ZizqNode::send_only($t3, '\q');
$t3->{h}->finish;

$node->stop;
done_testing();
