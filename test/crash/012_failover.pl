# A streaming standby of a zizq primary, promoted when the primary dies,
# carries on the queue: no job is lost, the jobs in flight on the old
# primary are ready again (their sessions died with it), the limits hold,
# and the new primary's dispatcher promotes scheduled jobs.
#
# The dispatcher starts only once recovery has finished
# (BgWorkerStart_RecoveryFinished): a hot standby runs none, and its
# read-only sessions can read the queue but not take jobs. On promotion the
# dispatcher starts and rebuilds budget state from the replicated rows, as
# after a restart (in-flight cost from the jobs in flight, time_based full).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $primary = ZizqNode::start('primary', undef, allows_streaming => 1);
$primary->safe_psql('postgres', q{
	SELECT zizq.define_budget('two', 2, 'while_in_flight');
	SELECT zizq.define_budget('hourly', 1, 'time_based', duration => '1 hour', burst => 1);
	SELECT zizq.enqueue('q', 'limited', budgets => '[{"key": "two"}]') FROM generate_series(1, 5);
	SELECT zizq.enqueue('h', 'hourly', budgets => '[{"key": "hourly"}]') FROM generate_series(1, 2);
	SELECT count(*) FROM zizq.dequeue(ARRAY['h'], 2, lease => '1 hour');});

$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;

# Two jobs in flight, held on the primary when it dies; a job scheduled a
# few seconds ahead, for the new primary's dispatcher to promote.
my $holder = ZizqNode::session($primary, 'holder');
ZizqNode::run_until($holder, q{SELECT count(*) FROM zizq.dequeue(ARRAY['q'], 2);}, 'two jobs taken');
$primary->safe_psql('postgres', q{SELECT zizq.enqueue('later', 'scheduled', ready_at => now() + interval '3 seconds')});
$primary->wait_for_catchup($standby);

my $jobs = q{SELECT string_agg(id || ':' || type || ':' || status, ',' ORDER BY id) FROM zizq.jobs WHERE type <> 'scheduled'};
my $on_primary = $primary->safe_psql('postgres', $jobs);
like($on_primary, qr/in_flight.*in_flight/, 'two jobs are in flight on the primary');
is($standby->safe_psql('postgres', $jobs), $on_primary, 'the standby has every job');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'zizq dispatcher'}),
	'0', 'a hot standby runs no dispatcher');
my ($rc, $out, $err) = $standby->psql('postgres', q{SELECT * FROM zizq.dequeue(ARRAY['q'])});
like($err, qr/read-only transaction/, 'a dequeue on the standby is refused: it cannot write');

$primary->stop('immediate');
$standby->promote;
ZizqNode::wait_loaded($standby);

# The leased hourly job stays in flight: its lease, not its session, holds it.
(my $expected = $on_primary) =~ s/limited:in_flight/limited:ready/g;
ok(defined ZizqNode::seconds_until($standby, $jobs, $expected, 30),
	'after the promotion the jobs of the old primary\'s dead session are ready again')
  or diag($standby->safe_psql('postgres', $jobs) . "\nexpected $expected");
is($standby->safe_psql('postgres', q{SELECT count(*) FROM zizq.dequeue(ARRAY['q'], 5, lease => '1 hour')}),
	'2', 'the while_in_flight budget of 2 lets 2 jobs run, not more');
ok(defined ZizqNode::seconds_until($standby,
		q{SELECT in_flight_cost || '/' || parked_jobs FROM zizq.budget_state WHERE key = 'two'}, '2/3', 30),
	'its state: 2 in flight, the 3 others parked');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM zizq.dequeue(ARRAY['h'], 2)}),
	'1', 'the time_based budget is full after the promotion: one token, one job');
ok(defined ZizqNode::seconds_until($standby, q{SELECT count(*) FROM zizq.dequeue(ARRAY['later'])}, '1', 30),
	'the new primary\'s dispatcher promotes the scheduled job');

$standby->stop;
done_testing();
