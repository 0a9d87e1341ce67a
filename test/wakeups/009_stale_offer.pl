# A parked job's offer carries the row version the dispatcher read, and a
# worker takes the job without reading its row again (dequeue.cpp,
# read_offers): the take locks the row only while it is still that version.
# A write around zizq that changes the row and leaves it ready and parked
# (here its payload) makes the offer's version stale, and nothing tells the
# dispatcher. The take then finds nothing; the worker must read the row and
# take the job, not give up: the stale offer would otherwise stand, and the
# job wait, until some other change made the dispatcher look at the line.
#
# First a standby offer made stale while a worker waits for the token (the
# release that wakes the worker also has the dispatcher post the line
# again); then an offer made stale after the dispatcher's last look, taken
# by a dequeue that does not wait (nothing posts it again: a build that
# retried the offer blind returned no job).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use ZizqNode;

my $node = ZizqNode::start('stale_offer');
$node->safe_psql('postgres', q{
	SELECT zizq.define_budget('one', 1, 'while_in_flight');
	SELECT count(*) FROM zizq.enqueue_many(jsonb_build_array(
		jsonb_build_object('queue', 'q', 'type', 'first', 'budgets', '[{"key": "one"}]'::jsonb),
		jsonb_build_object('queue', 'q', 'type', 'second', 'budgets', '[{"key": "one"}]'::jsonb)));
});

# The holder takes the first job and keeps it in flight (its session holds it).
my $holder = ZizqNode::session($node, 'holder');
ZizqNode::run_until($holder, q{SELECT 'took ' || type FROM zizq.dequeue(ARRAY['q']);}, 'took first');

# A look that cannot pay for the second job hands it to the dispatcher, which
# parks it and posts it as the budget's standby offer.
is($node->safe_psql('postgres', q{SELECT count(*) FROM zizq.dequeue(ARRAY['q'])}), '0', 'no token for the second job');
ok(defined ZizqNode::seconds_until($node,
		q{SELECT parked AND (SELECT offers FROM zizq.dispatcher_state()) = 1 FROM zizq._jobs WHERE type = 'second'}, 't'),
	'the second job is parked and offered');

# A write around zizq: a new row version, still ready and parked.
my $xmin_offered = $node->safe_psql('postgres', q{SELECT xmin FROM zizq._jobs WHERE type = 'second'});
$node->safe_psql('postgres', q{UPDATE zizq._jobs SET payload = '{"touched": true}' WHERE type = 'second'});
isnt($node->safe_psql('postgres', q{SELECT xmin FROM zizq._jobs WHERE type = 'second'}), $xmin_offered,
	'the row is another version now');
is($node->safe_psql('postgres',
		q{SELECT status || ' ' || parked || ' ' || (SELECT offers FROM zizq.dispatcher_state()) FROM zizq._jobs WHERE type = 'second'}),
	'ready true 1', 'still ready, parked and offered');

# A worker waits; the holder completes, and the token goes to the worker.
my $worker = ZizqNode::session($node, 'worker');
ZizqNode::send_only($worker, q{SELECT 'worker took ' || type FROM zizq.dequeue(ARRAY['q'], 1, wait => '20 s');});
ok(defined ZizqNode::seconds_until($node, q{SELECT waiting_workers FROM zizq.dispatcher_state()}, '1'),
	'the worker waits');
my $started = time;
ZizqNode::run_until($holder, q{SELECT zizq.complete(id) FROM zizq._jobs WHERE type = 'first';}, 'completed');
ZizqNode::run_until($worker, '', 'worker done');
my $seconds = time - $started;
note(sprintf('complete -> the worker had the job: %.3f s', $seconds));
like($worker->{out}, qr/worker took second/, 'the worker took the second job');
cmp_ok($seconds, '<', 5, 'when the token came back, not at the end of its wait');
is($node->safe_psql('postgres', q{SELECT status FROM zizq._jobs WHERE type = 'second'}), 'in_flight',
	'the second job is in flight');
is($node->safe_psql('postgres', q{SELECT in_flight_cost FROM zizq.budget_state WHERE key = 'one'}), '1',
	'one token in flight');

# Now with nobody waiting: a third job is parked behind the second; the
# second completes, and the dispatcher offers the third once it has looked
# at the line again (its dirty ring empty, the offer standing).
$node->safe_psql('postgres', q{
	SELECT count(*) FROM zizq.enqueue('q', 'third', budgets => '[{"key": "one"}]'::jsonb);
	SELECT count(*) FROM zizq.dequeue(ARRAY['q']);
});
ok(defined ZizqNode::seconds_until($node,
		q{SELECT parked AND (SELECT offers FROM zizq.dispatcher_state()) = 1 FROM zizq._jobs WHERE type = 'third'}, 't'),
	'the third job is parked and offered');
ZizqNode::run_until($worker, q{SELECT zizq.complete(id) FROM zizq._jobs WHERE type = 'second';}, 'second completed');
ok(defined ZizqNode::seconds_until($node,
		q{SELECT dirty_budgets = 0 AND offers = 1 FROM zizq.dispatcher_state()}, 't'),
	'the dispatcher looked at the line again');
$node->safe_psql('postgres', q{UPDATE zizq._jobs SET payload = '{"touched": true}' WHERE type = 'third'});
is($node->safe_psql('postgres', q{SELECT type FROM zizq.dequeue(ARRAY['q'])}), 'third',
	'a dequeue takes the job of a stale offer');

for my $s ($holder, $worker)
{
	$s->{in} .= "\\q\n";
	$s->{h}->finish;
}
$node->stop;
done_testing();
