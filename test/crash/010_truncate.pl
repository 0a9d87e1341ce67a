# TRUNCATE zizq._jobs gives back the tokens of the in-flight jobs it removes.
#
# Budget state lives in shared memory; each job's way out of in_flight
# (complete, fail, delete, release, requeue) gives its tokens back through a
# trigger. TRUNCATE fires no row trigger: an operator's audit truncated the
# table under two in-flight jobs of a while_in_flight budget of 2, and the
# budget stayed at 0 tokens for good (new jobs parked for ever). A TRUNCATE
# now clears, at commit, what shared memory counts of jobs (in-flight costs,
# parked jobs, offers); time_based buckets keep their tokens (no refund, no
# refill). A TRUNCATE rolled back changes nothing.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('truncate');
$node->safe_psql('postgres', q{
	SELECT zizq.define_budget('hourly', 1, 'time_based', duration => '1 hour', burst => 1);
	SELECT zizq.enqueue('r', 't', budgets => '[{"key": "hourly"}]');
	SELECT count(*) FROM zizq.dequeue(ARRAY['r'], 1, lease => '1 hour');
	SELECT zizq.define_budget('conc', 2, 'while_in_flight');
	SELECT zizq.enqueue('q', 't', budgets => '[{"key": "conc"}]') FROM generate_series(1, 2);
	SELECT count(*) FROM zizq.dequeue(ARRAY['q'], 2, lease => '1 hour');});
my $state = q{SELECT tokens::int || '/' || in_flight_cost FROM zizq.budget_state WHERE key = 'conc'};
is($node->safe_psql('postgres', $state), '0/2', 'both tokens are in flight');

$node->safe_psql('postgres', 'BEGIN; TRUNCATE zizq._jobs; ROLLBACK;');
ZizqNode::wait_loaded($node);
is($node->safe_psql('postgres', $state), '0/2', 'a TRUNCATE rolled back changes nothing');

$node->safe_psql('postgres', 'TRUNCATE zizq._jobs');
ok(defined ZizqNode::seconds_until($node, $state, '2/0', 10), 'after TRUNCATE the budget has its 2 tokens back');
is($node->safe_psql('postgres', q{SELECT tokens < 1 FROM zizq.budget_state WHERE key = 'hourly'}),
	't', 'a time_based bucket is not refilled by the TRUNCATE');

$node->safe_psql('postgres', q{SELECT zizq.enqueue('q', 't', budgets => '[{"key": "conc"}]')});
is($node->safe_psql('postgres', q{SELECT count(*) FROM zizq.dequeue(ARRAY['q'], 1, wait => '5 s')}),
	'1', 'a new job bound to the budget runs');

$node->stop;
done_testing();
