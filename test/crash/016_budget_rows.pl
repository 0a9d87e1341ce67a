# Writes to zizq.budgets around zizq's functions (an operator's UPDATE,
# DELETE or INSERT) reach the live state as define_budget, update_budget and
# delete_budget do, under the same checks.
#
# Before, the table and shared memory parted: an UPDATE lowering an
# allocation from 3 to 1 still let 3 jobs run (while budget_state said 1),
# and a DELETE of a budget with parked jobs let them all run at once.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('budget_rows');
$node->safe_psql('postgres', q{
	SELECT zizq.define_budget('w', 3, 'while_in_flight');
	SELECT zizq.enqueue('q', 't', budgets => '[{"key": "w"}]') FROM generate_series(1, 6);});
my $take = sub {
	my ($queue, $n) = @_;
	return $node->safe_psql('postgres', "SELECT count(*) FROM zizq.dequeue(ARRAY['$queue'], $n, lease => '1 hour')");
};
my $refused = sub {
	my ($sql, $sqlstate, $what) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	like($err, qr/ERROR:  $sqlstate/, $what);
};

$node->safe_psql('postgres', q{UPDATE zizq.budgets SET allocation = 1 WHERE key = 'w'});
is($take->('q', 6), '1', 'an UPDATE lowering the allocation to 1 lets 1 job run');
$node->safe_psql('postgres', q{UPDATE zizq.budgets SET allocation = 3 WHERE key = 'w'});
is($take->('q', 6), '2', 'raised again to 3, two more run');

$refused->(q{UPDATE zizq.budgets SET key = 'v' WHERE key = 'w'}, '0A000', 'the key cannot change');
$node->safe_psql('postgres', q{SELECT zizq.enqueue('c', 't', budgets => '[{"key": "w", "cost": 2}]')});
$refused->(q{UPDATE zizq.budgets SET allocation = 1 WHERE key = 'w'}, '23514',
	'nor the capacity fall below a bound job\'s cost');
$refused->(q{DELETE FROM zizq.budgets WHERE key = 'w'}, '2BP01', 'a budget with unfinished jobs is not deleted');
$refused->(q{INSERT INTO zizq.budgets (key, allocation, strategy) VALUES ('tb', 5, 'time_based')}, '22023',
	'an invalid policy is refused');
is($node->safe_psql('postgres', q{SELECT allocation || '/' || in_flight_cost FROM zizq.budget_state WHERE key = 'w'}),
	'3/3', 'after the refusals the budget is as it was');

$node->safe_psql('postgres', q{INSERT INTO zizq.budgets (key, allocation, strategy) VALUES ('ins', 1, 'while_in_flight')});
$node->safe_psql('postgres', q{SELECT zizq.enqueue('i', 't', budgets => '[{"key": "ins"}]') FROM generate_series(1, 2)});
is($take->('i', 2), '1', 'a budget INSERTed directly is enforced');
my $ins = $node->safe_psql('postgres', q{SELECT id FROM zizq.budgets WHERE key = 'ins'});
is($node->safe_psql('postgres', "SELECT count(*) FROM zizq._budget_live() WHERE id = $ins"), '1',
	'it has live state');
$node->safe_psql('postgres', q{
	SELECT zizq.complete(id) FROM zizq.jobs WHERE queue = 'i' AND status = 'in_flight';
	SELECT zizq.delete_job(id) FROM zizq.jobs WHERE queue = 'i';
	DELETE FROM zizq.budgets WHERE key = 'ins';});
is($node->safe_psql('postgres', "SELECT count(*) FROM zizq._budget_live() WHERE id = $ins"), '0',
	'a budget DELETEd directly leaves the live state too');
$node->safe_psql('postgres', q{SELECT zizq.define_budget('ins', 2, 'while_in_flight')});
is($node->safe_psql('postgres', q{SELECT tokens FROM zizq.budget_state WHERE key = 'ins'}), '2',
	'and its key can be defined again');
$node->safe_psql('postgres', q{
	BEGIN;
	CREATE TEMP TABLE keep AS SELECT * FROM zizq.budgets WHERE key = 'ins';
	DELETE FROM zizq.budgets WHERE key = 'ins';
	INSERT INTO zizq.budgets SELECT * FROM keep;
	COMMIT;});
is($node->safe_psql('postgres', q{SELECT tokens FROM zizq.budget_state WHERE key = 'ins'}), '2',
	'deleted and inserted again in one transaction, it keeps its live state');

# Jobs INSERTed in flight (as pg_restore copies them into a running
# server). One bound to a while_in_flight budget holds its cost; one of a
# session that does not exist is ready again soon, while other sessions,
# which hold jobs, go on (before, only a load or a session's end made the
# dispatcher look).
my $worker = ZizqNode::session($node, 'worker');
ZizqNode::run_until($worker, q{SELECT count(*) FROM zizq.dequeue(ARRAY['q'], 1);}, 'a job held');
$node->safe_psql('postgres', q{
	SELECT zizq.define_budget('f', 1, 'while_in_flight');
	INSERT INTO zizq._jobs (queue, type, status, ready_at, dequeued_at, lease_until, lease_ms,
	                        budget_ids, budget_costs, budgets)
	SELECT 'f', 'leased', 'in_flight', now(), now(), now() + interval '1 hour', 3600000,
	       ARRAY[id], '{1}', '[{"key": "f", "cost": 1}]' FROM zizq.budgets WHERE key = 'f';
	INSERT INTO zizq._jobs (queue, type, status, ready_at, dequeued_at, session_id)
	VALUES ('s', 'orphan', 'in_flight', now(), now(), 12345);
	SELECT zizq.enqueue('f', 'next', budgets => '[{"key": "f"}]');});
is($node->safe_psql('postgres', q{SELECT in_flight_cost FROM zizq.budget_state WHERE key = 'f'}), '1',
	'a job INSERTed in flight holds its cost');
is($take->('f', 1), '0', 'so the budget of 1 lets nothing more run');
$node->safe_psql('postgres', q{
	BEGIN;
	INSERT INTO zizq._jobs (queue, type, status, ready_at, dequeued_at, lease_until, lease_ms,
	                        budget_ids, budget_costs, budgets)
	SELECT 'f', 'undone', 'in_flight', now(), now(), now() + interval '1 hour', 3600000,
	       ARRAY[id], '{1}', '[{"key": "f", "cost": 1}]' FROM zizq.budgets WHERE key = 'f';
	ROLLBACK;});
is($node->safe_psql('postgres', q{SELECT in_flight_cost FROM zizq.budget_state WHERE key = 'f'}), '1',
	'an INSERT in flight rolled back takes its cost off again');
ok(defined ZizqNode::seconds_until($node, q{SELECT status FROM zizq.jobs WHERE type = 'orphan'}, 'ready', 30),
	'a job INSERTed in flight for a session that does not exist is ready again')
  or diag($node->safe_psql('postgres', q{SELECT row(d.*) FROM zizq.dispatcher_state() d})
	  . "\n" . $node->safe_psql('postgres', q{SELECT row(j.status, j.session_id, j.lease_until) FROM zizq._jobs j WHERE type = 'orphan'}));
ZizqNode::send_only($worker, '\q');
$worker->{h}->finish;

$node->stop;
done_testing();
