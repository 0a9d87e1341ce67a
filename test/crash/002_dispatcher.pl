# The dispatcher is restarted after its own failure, keeps promoting
# scheduled jobs and waking parked ones, and shows in pg_stat_activity as
# "zizq dispatcher" (SPEC §2).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('dispatcher');
my $q = sub { $node->safe_psql('postgres', $_[0]) };

my $pid = ZizqNode::dispatcher_pid($node);
like($pid, qr/^\d+$/, 'the dispatcher runs with backend_type "zizq dispatcher"');

# SIGTERM: the dispatcher exits and the postmaster starts a new one.
kill 'TERM', $pid;
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'zizq dispatcher' AND pid <> $pid")
  or die 'no new dispatcher';
isnt(ZizqNode::dispatcher_pid($node), $pid, 'restarted after SIGTERM');
$q->(q{SELECT zizq.enqueue('later', 't', ready_at => clock_timestamp() + interval '200 ms')});
ok(defined ZizqNode::seconds_until($node, q{SELECT status FROM zizq.jobs WHERE queue = 'later'}, 'ready', 10),
	'the new dispatcher promotes scheduled jobs');

# A parked job waits for a token while the dispatcher is killed.
$q->(q{SELECT zizq.define_budget('one', 1, 'while_in_flight')});
$q->(q{SELECT count(zizq.enqueue('p', 't', budgets => '[{"key": "one"}]')) FROM generate_series(1, 2)});
my $holder = $node->background_psql('postgres');
is($holder->query_safe(q{SELECT count(*) FROM zizq.dequeue(ARRAY['p'], 10, lease => '1 hour')}), '1', 'one job runs');

# SIGKILL: a crash restart of the whole server.
$pid = ZizqNode::dispatcher_pid($node);
kill 'KILL', $pid;
eval { $holder->quit };
$node->poll_query_until('postgres', 'SELECT true') or die 'server did not come back';
ZizqNode::wait_loaded($node);
isnt(ZizqNode::dispatcher_pid($node), $pid, 'restarted after SIGKILL (crash restart)');
is($q->(q{SELECT count(*) FROM zizq.jobs WHERE queue = 'p' AND status = 'in_flight'}), '1', 'the leased job is still held');
is($q->(q{SELECT count(*) FROM zizq.dequeue(ARRAY['p'], 10)}), '0', 'its token is still spent');
$q->(q{SELECT zizq.complete(id) FROM zizq.jobs WHERE queue = 'p' AND status = 'in_flight'});
ok(defined ZizqNode::seconds_until($node, q{SELECT count(*) FROM zizq.dequeue(ARRAY['p'], 10, wait => '5 s')}, '1', 10),
	'the completion wakes the parked job through the new dispatcher');

# The dispatcher waits for CREATE EXTENSION instead of failing.
$q->('DROP EXTENSION zizq');
my $logpos = -s $node->logfile;
$pid = $node->safe_psql('postgres', "SELECT pid FROM pg_stat_activity WHERE backend_type = 'zizq dispatcher'");
ok($pid =~ /^\d+$/, 'the dispatcher keeps running without the extension');
$q->('CREATE EXTENSION zizq');
ZizqNode::wait_loaded($node);
is($node->safe_psql('postgres', "SELECT pid FROM pg_stat_activity WHERE backend_type = 'zizq dispatcher'"), $pid,
	'the same dispatcher picks up the new extension');
unlike(slurp_file($node->logfile, $logpos), qr/zizq dispatcher.*(ERROR|FATAL)/, 'without errors');

$node->stop;
done_testing();
