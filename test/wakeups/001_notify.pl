# LISTEN zizq (SPEC §2 "Wake-ups"): a queue is notified once the enqueue
# commits, never before and never for a rolled-back enqueue. The dispatcher
# sends the notifications, so they arrive asynchronously: every wait here
# polls the listener until a marker queue's notification shows up. The
# marker's enqueue commits after the step under test, and the dispatcher
# drains pending notifications in commit order, so a notification the step
# had wrongly queued would have arrived by then.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('notify');
my $listener = $node->background_psql('postgres');
$listener->query_safe('LISTEN zizq');
my $producer = $node->background_psql('postgres');

my $heard = '';

# Polls the listener until queue $queue is notified; returns everything
# heard meanwhile.
sub hear_until
{
	my ($queue) = @_;
	my $log = '';
	for (1 .. 3000)
	{
		$log .= $listener->query_safe('SELECT 1');
		return $log if $log =~ /notification "zizq" with payload "\Q$queue\E"/;
		select(undef, undef, undef, 0.01);
	}
	die "no notification for queue $queue; heard: $log";
}

sub notified
{
	my ($log, $queue) = @_;
	return $log =~ /notification "zizq" with payload "\Q$queue\E"/;
}

sub enqueue_marker
{
	my ($name) = @_;
	$node->safe_psql('postgres', "SELECT zizq.enqueue('$name', 't')");
}

# Not before commit.
$producer->query_safe('BEGIN');
$producer->query_safe(q{SELECT count(*) FROM zizq.enqueue_many(jsonb_build_array(
	jsonb_build_object('queue', 'mail', 'type', 'a'), jsonb_build_object('queue', 'mail', 'type', 'b'),
	jsonb_build_object('queue', 'sms', 'type', 'c')))});
enqueue_marker('marker1');
my $log = hear_until('marker1');
ok(!notified($log, 'mail') && !notified($log, 'sms'), 'no notification before the enqueue commits');

# At commit, once per queue.
$producer->query_safe('COMMIT');
$log = hear_until('sms');
$log .= hear_until('mail') unless notified($log, 'mail');
enqueue_marker('marker2');
$log .= hear_until('marker2');
my $mails = () = $log =~ /payload "mail"/g;
is($mails, 1, 'two jobs of one queue in one transaction: one notification');

# Never for a rolled-back enqueue.
$producer->query_safe('BEGIN');
$producer->query_safe(q{SELECT zizq.enqueue('gone', 't')});
$producer->query_safe('ROLLBACK');
enqueue_marker('marker3');
$log = hear_until('marker3');
ok(!notified($log, 'gone'), 'no notification for a rolled-back enqueue');

# A scheduled job's queue is notified when the dispatcher promotes it.
$node->safe_psql('postgres',
	q{SELECT zizq.enqueue('later', 't', ready_at => clock_timestamp() + interval '200 milliseconds')});
$log = hear_until('later');
is($node->safe_psql('postgres', q{SELECT status FROM zizq.jobs WHERE queue = 'later'}),
	'ready', 'a promoted job is notified once it is ready');

# A job parked on a budget is notified when its token is due.
# (One transaction: two enqueue commits more than the dispatcher's spacing
# apart are two notifications, and the second could arrive after this
# reads the first.)
$node->safe_psql('postgres', q{
	SELECT zizq.define_budget('one', 1, 'while_in_flight');
	BEGIN;
	SELECT zizq.enqueue('held', 't', budgets => '[{"key": "one"}]');
	SELECT zizq.enqueue('held', 't', budgets => '[{"key": "one"}]');
	COMMIT;
});
hear_until('held');    # the enqueue's own notification
# Jobs of a session stay taken while it lives: the worker is $producer.
my $first = $producer->query_safe(q{SELECT id FROM zizq.dequeue(ARRAY['held'], 1)});
is($producer->query_safe(q{SELECT count(*) FROM zizq.dequeue(ARRAY['held'], 1)}),
	'0', 'the second job waits for the token');
enqueue_marker('marker4');
$log = hear_until('marker4');
ok(!notified($log, 'held'), 'no notification while the token is out');
$producer->query_safe("SELECT zizq.complete($first)");
hear_until('held');
is($producer->query_safe(q{SELECT count(*) FROM zizq.dequeue(ARRAY['held'], 1)}),
	'1', 'the notified job can be taken');

# A burst of commits: 300 enqueues into one queue, each its own transaction.
# The dispatcher spaces the NOTIFYs of noted queues a millisecond apart, so
# the queue is notified at most about once per millisecond of the burst (one
# notification per commit without the spacing), and still after the last
# commit. The burst's duration is measured inside the server, from its first
# commit to its last.
$node->safe_psql('postgres', q{
	CREATE PROCEDURE burst(n int, INOUT ms float8 DEFAULT NULL) LANGUAGE plpgsql AS $$
	DECLARE started timestamptz;
	BEGIN
		FOR i IN 1 .. n LOOP
			PERFORM zizq.enqueue('burst', 't');
			COMMIT;
			IF i = 1 THEN started := clock_timestamp(); END IF;
		END LOOP;
		ms := 1000 * extract(epoch FROM clock_timestamp() - started);
	END $$;
});
my $burst_ms = $node->safe_psql('postgres', 'SET synchronous_commit = off; CALL burst(300)');
# Nothing else commits now: the notes the spacing held back go out by
# themselves once it ends (a marker's enqueue would wake the dispatcher
# and send them along with it). Within 5 s: the dispatcher's longest sleep
# (30 s) would send them too, late.
my $sent_in = ZizqNode::seconds_until($node,
	'SELECT pending_notifications = 0 FROM zizq.dispatcher_state()', 't', 5);
ok(defined $sent_in, 'notes held back by the spacing go out with no further commit');
enqueue_marker('marker5');
$log = hear_until('marker5');
my $bursts = () = $log =~ /payload "burst"/g;
ok($bursts >= 1, 'a burst of enqueues is notified');
SKIP:
{
	# At 1 ms or more per commit the bound is no lower than the commits.
	skip "the burst took $burst_ms ms: too slow to show the spacing", 1 if $burst_ms > 150;
	cmp_ok($bursts, '<=', int($burst_ms) + 2,
		"at most one notification per millisecond of the burst ($bursts for 300 commits in $burst_ms ms)");
}

$listener->quit;
$producer->quit;
$node->stop;
done_testing();
