# A database backed up with pg_dump and restored with pg_restore keeps its
# queue: every job, budget and recorded error, the job ids' sequence, the
# unique keys held, the scheduled times, and the limits.
#
# The extension's tables are marked with pg_extension_config_dump, so that a
# dump carries their rows (without it a dump holds CREATE EXTENSION alone and
# a restore silently loses every job).
#
# The restore here runs while the server and its dispatcher run (the
# extension dropped and restored in place): the dispatcher loads budget
# state as soon as the restore's CREATE EXTENSION commits, before the rows
# are copied. The copied rows reach shared memory through triggers: each
# budget row is registered with the in-flight cost and parked jobs already
# bound to it (pg_restore copies zizq._jobs first), and a parked job copied
# after its budget is counted as parked. Before, the restored budgets had no
# tokens and their parked jobs never ran, until a restart.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('dump_restore');
$node->safe_psql('postgres', q{
	SELECT zizq.define_budget('two', 2, 'while_in_flight');
	SELECT zizq.define_budget('one', 1, 'while_in_flight');
	SELECT zizq.define_budget('hourly', 1, 'time_based', duration => '1 hour', burst => 1);
	SELECT zizq.enqueue('q', 'limited', budgets => '[{"key": "two"}]') FROM generate_series(1, 5);
	SELECT zizq.enqueue('p', 'parked', budgets => '[{"key": "one"}]') FROM generate_series(1, 4);
	SELECT count(*) FROM zizq.dequeue(ARRAY['p'], 1, lease => '1 hour');
	SELECT zizq.enqueue('later', 'scheduled', ready_at => '2100-01-01 00:00:00+00');
	SELECT zizq.enqueue('u', 'unique', unique_key => 'once', unique_while => 'exists');
	SELECT zizq.enqueue('d', 'dies', retry_limit => 0);
	SELECT zizq.fail(id, 'boom') FROM zizq.dequeue(ARRAY['d']);
	SELECT zizq.enqueue('h', 'hourly', budgets => '[{"key": "hourly"}]') FROM generate_series(1, 2);
	SELECT count(*) FROM zizq.dequeue(ARRAY['h'], 2, lease => '1 hour');});
# A dequeue that cannot pay hands the other three jobs of "one" over to be
# parked.
$node->safe_psql('postgres', q{SELECT count(*) FROM zizq.dequeue(ARRAY['p'], 3)});
# The live counts (budget_state's parked_jobs counts the table).
my $parked = q{SELECT l.in_flight_cost || '/' || l.parked_hint FROM zizq._budget_live() l JOIN zizq.budgets b USING (id) WHERE b.key = 'one'};
ok(defined ZizqNode::seconds_until($node, $parked, '1/3', 30), 'one job of "one" in flight, three parked');

# Two jobs in flight, held by a session that stays open through the restore.
my $holder = ZizqNode::session($node, 'holder');
ZizqNode::run_until($holder, q{SELECT count(*) FROM zizq.dequeue(ARRAY['q'], 2);}, 'two jobs taken');

my $jobs = q{SELECT string_agg(id || ':' || type || ':' || status || ':' || parked, ',' ORDER BY id) FROM zizq._jobs};
my $before = $node->safe_psql('postgres', $jobs);
my $errors = $node->safe_psql('postgres', 'SELECT count(*) FROM zizq._job_errors');
my $last_id = $node->safe_psql('postgres', 'SELECT max(id) FROM zizq._jobs');

my $dump = $node->basedir . '/zizq.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('postgres') ], 'pg_dump');
$node->safe_psql('postgres', 'DROP EXTENSION zizq CASCADE; DROP SCHEMA zizq CASCADE;');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('postgres'), $dump ], 'pg_restore while the server runs');
ZizqNode::wait_loaded($node);

is($node->safe_psql('postgres', $jobs), $before, 'every job is back as it was');
is($node->safe_psql('postgres', 'SELECT count(*) FROM zizq._job_errors'), $errors, 'the recorded errors are back');
is($node->safe_psql('postgres', q{SELECT key || ' ' || strategy || ' ' || allocation FROM zizq.budgets ORDER BY key}),
	"hourly time_based 1\none while_in_flight 1\ntwo while_in_flight 2", 'the budgets are back');
is($node->safe_psql('postgres', $parked), '1/3', 'the restored budget counts its job in flight and its parked jobs');

$node->safe_psql('postgres', q{SELECT zizq.complete(id) FROM zizq.jobs WHERE queue = 'p' AND status = 'in_flight'});
is($node->safe_psql('postgres', q{SELECT count(*) FROM zizq.dequeue(ARRAY['p'], 3, wait => '30 s')}),
	'1', 'its token back, one parked job runs, and only one');

# The holder's session ends: its two jobs are ready again.
$holder->{in} .= "\\q\n";
$holder->{h}->finish;
ok(defined ZizqNode::seconds_until($node, q{SELECT count(*) FROM zizq.jobs WHERE queue = 'q' AND status = 'ready'}, '5', 30),
	'the jobs of the ended session are ready again');
is($node->safe_psql('postgres', q{SELECT count(*) FROM zizq.dequeue(ARRAY['q'], 5)}),
	'2', 'the while_in_flight budget of 2 lets 2 jobs run, not more');
is($node->safe_psql('postgres', q{SELECT count(*) FROM zizq.dequeue(ARRAY['h'], 2)}),
	'1', 'the time_based budget starts full after the restore: one token, one job');
is($node->safe_psql('postgres', q{SELECT count(*) FROM zizq.dequeue(ARRAY['later'])}),
	'0', 'the scheduled job keeps its time');
is($node->safe_psql('postgres', q{SELECT (zizq.enqueue('u', 'unique', unique_key => 'once', unique_while => 'exists')).duplicate}),
	't', 'a unique key held before the dump is held after the restore');
ok($node->safe_psql('postgres', q{SELECT (zizq.enqueue('new', 'fresh')).id}) > $last_id,
	'new jobs get ids after the restored ones');

$node->stop;
done_testing();
