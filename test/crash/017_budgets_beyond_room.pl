# Budgets beyond the room zizq.max_budgets gives shared memory (the setting
# lowered below the number of budgets, then a restart): explain_job names
# the cause and the remedy. Before, it said 'budget "b17" has  of the 1
# tokens the job costs; it runs when a job bound to it stops running', an
# empty number and a promise that never came true.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('beyond_room');
$node->safe_psql('postgres', q{
	SELECT zizq.define_budget('b' || i, 1, 'while_in_flight') FROM generate_series(1, 20) i;
	SELECT zizq.enqueue('q' || i, 't', budgets => jsonb_build_array(jsonb_build_object('key', 'b' || i)))
	  FROM generate_series(1, 20) i;});
$node->append_conf('postgresql.conf', 'zizq.max_budgets = 16');
$node->restart;
ZizqNode::wait_loaded($node);

my $unloaded = $node->safe_psql('postgres',
	q{SELECT min(b.key) FROM zizq.budget_state b WHERE b.tokens IS NULL});
like($unloaded, qr/^b\d+$/, 'budgets beyond the room have no live state');
my $reason = $node->safe_psql('postgres',
	qq{SELECT reason FROM zizq.explain_job((SELECT id FROM zizq.jobs WHERE budgets->0->>'key' = '$unloaded'))});
like($reason, qr/budget "$unloaded" has no room in shared memory \(20 budgets exist, zizq.max_budgets = 16\); raise zizq.max_budgets/,
	'explain_job names the cause and the remedy');

$node->stop;
done_testing();
