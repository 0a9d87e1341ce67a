# Session ids stay unique across crash restarts, restarts and failovers.
#
# A job in flight without a lease belongs to its session's id; the
# dispatcher returns it to ready once no live session has that id. Ids used
# to be (the second shared memory was set up) << 32 | a counter from 1: a
# crash restart within the same second as the start (or a standby started in
# the same second as its primary, then promoted) handed out the old ids
# again, from the same counter, so a job of a killed session could look
# held by a new, live session, and stay in flight until that one ended.
# The high half is now random at every set-up of shared memory.
#
# Here: crash restarts in quick succession, each under a session that holds
# a job; every session id differs in its high half from the others.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('session_ids');
# One queue per round, so that a round's worker cannot take the job of the
# round before (ready again, it would come first).
$node->safe_psql('postgres', q{SELECT count(zizq.enqueue('q' || i, 't')) FROM generate_series(1, 5) i});

my %epochs;
my $prev;
my $rounds = 5;
for my $round (1 .. $rounds)
{
	my $worker = $node->background_psql('postgres', on_error_stop => 0);
	my $id = $worker->query_safe(qq{SELECT id FROM zizq.dequeue(ARRAY['q$round'])});
	my $epoch = $worker->query_safe(qq{SELECT session_id >> 32 FROM zizq._jobs WHERE id = $id});
	$epochs{$epoch}++;
	# The job of the session killed in the round before is not held by
	# this one, which may have been given the same id.
	ok(defined ZizqNode::seconds_until($node, "SELECT status FROM zizq.jobs WHERE id = $prev", 'ready', 30),
		"round $round: the killed session's job is ready again while a new session holds a job")
	  if defined $prev;
	$prev = $id;
	my $pid = $worker->query_safe('SELECT pg_backend_pid()');
	kill 'KILL', $pid;
	eval { $worker->quit };
	# A SIGKILLed backend leaves its entry behind until the crash restart
	# sets up shared memory again: its pid gone means the restart is done.
	$node->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid")
	  or die 'server did not come back';
}
is(scalar(keys %epochs), $rounds, "$rounds shared-memory set-ups, $rounds different session-id epochs")
  or diag(join(', ', map { "$_ x $epochs{$_}" } sort keys %epochs));
ZizqNode::wait_loaded($node);
ok(defined ZizqNode::seconds_until($node, q{SELECT count(*) FROM zizq.jobs WHERE status = 'in_flight'}, '0', 10),
	'no job of a killed session stays in flight');

$node->stop;
done_testing();
