# A database backed up with pg_dump and restored with pg_restore keeps its
# queue: every job, budget and recorded error, the job ids' sequence, the
# unique keys held, the scheduled times, and the limits.
#
# The extension's tables are marked with pg_extension_config_dump, so that a
# dump carries their rows (without it a dump holds CREATE EXTENSION alone and
# a restore silently loses every job). Jobs in flight when the dump was taken
# belong to sessions of the old server: after the restore they are ready
# again, as after a crash. Budget state is rebuilt from the restored rows
# (while_in_flight from the jobs in flight, time_based full), as after a
# restart.
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
	SELECT zizq.define_budget('hourly', 1, 'time_based', duration => '1 hour', burst => 1);
	SELECT zizq.enqueue('q', 'limited', budgets => '[{"key": "two"}]') FROM generate_series(1, 5);
	SELECT zizq.enqueue('later', 'scheduled', ready_at => '2100-01-01 00:00:00+00');
	SELECT zizq.enqueue('u', 'unique', unique_key => 'once', unique_while => 'exists');
	SELECT zizq.enqueue('d', 'dies', retry_limit => 0);
	SELECT zizq.fail(id, 'boom') FROM zizq.dequeue(ARRAY['d']);
	SELECT zizq.enqueue('h', 'hourly', budgets => '[{"key": "hourly"}]') FROM generate_series(1, 2);
	SELECT count(*) FROM zizq.dequeue(ARRAY['h'], 2);});

# Two jobs in flight, held by a session that is still open during the dump.
my $holder = ZizqNode::session($node, 'holder');
ZizqNode::run_until($holder, q{SELECT count(*) FROM zizq.dequeue(ARRAY['q'], 2);}, 'two jobs taken');

my $jobs = q{SELECT string_agg(id || ':' || type || ':' || status, ',' ORDER BY id) FROM zizq.jobs};
my $before = $node->safe_psql('postgres', $jobs);
like($before, qr/in_flight.*in_flight/, 'two jobs are in flight when the dump is taken');
my $errors = $node->safe_psql('postgres', 'SELECT count(*) FROM zizq._job_errors');
my $last_id = $node->safe_psql('postgres', 'SELECT max(id) FROM zizq._jobs');

my $dump = $node->basedir . '/zizq.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('postgres') ], 'pg_dump');
$node->safe_psql('template1', 'DROP DATABASE postgres WITH (FORCE)');
$node->safe_psql('template1', 'CREATE DATABASE postgres');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('postgres'), $dump ], 'pg_restore');
ZizqNode::wait_loaded($node);

# The old in-flight jobs come back to ready (their sessions are gone).
(my $expected = $before) =~ s/in_flight/ready/g;
ok(defined ZizqNode::seconds_until($node, $jobs, $expected, 10),
	'every job is back, the in-flight ones ready again');
is($node->safe_psql('postgres', 'SELECT count(*) FROM zizq._job_errors'), $errors, 'the recorded errors are back');
is($node->safe_psql('postgres', q{SELECT key || ' ' || strategy || ' ' || allocation FROM zizq.budgets ORDER BY key}),
	"hourly time_based 1\ntwo while_in_flight 2", 'the budgets are back');

is($node->safe_psql('postgres', q{SELECT count(*) FROM zizq.dequeue(ARRAY['q'], 5)}),
	'2', 'the while_in_flight budget of 2 still lets 2 jobs run, not more');
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
