# A backend's first dequeue(wait) that sleeps holds no table locks while it
# waits (SPEC §2: a waiting dequeue holds no locks).
#
# Before its first sleep a backend plans the statements of the budgeted
# path, so that the job that wakes it does not pay for the planning.
# Planning locks zizq._jobs and its indexes until the transaction ends: the
# first wait of each backend held them for the whole wait, and a TRUNCATE,
# zizq.reset() or DROP EXTENSION queued behind them made every later
# enqueue wait too (an operator's audit: reset() 13.5 s, an enqueue 12.5 s
# behind it). The planning now runs in a subtransaction rolled back at once.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('first_wait');

# A fresh backend whose first dequeue finds nothing and sleeps.
my ($out, $err) = ('', '');
my $waiter = IPC::Run::start(
	[ 'psql', '-X', '-q', '-A', '-t', '-d', $node->connstr('postgres'),
	  '-c', "SELECT count(*) FROM zizq.dequeue(ARRAY['empty'], 1, wait => '60 s')" ],
	'>', \$out, '2>', \$err);
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE query LIKE '%zizq.dequeue(ARRAY[''empty'']%' AND wait_event_type = 'Extension'}),
	'the dequeue sleeps');
my $pid = $node->safe_psql('postgres', q{
	SELECT pid FROM pg_stat_activity WHERE query LIKE '%zizq.dequeue(ARRAY[''empty'']%' AND wait_event_type = 'Extension'});

my $held = $node->safe_psql('postgres', qq{
	SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
	 WHERE l.pid = $pid AND c.relnamespace = 'zizq'::regnamespace});
is($held, '0', 'the sleeping dequeue holds no lock on zizq tables or indexes');

# What an operator would run meanwhile: it must not wait for the sleeper.
my ($ok, $stdout, $stderr) = $node->psql('postgres', q{
	SET statement_timeout = '5s';
	SELECT zizq.reset();
	SELECT count(*) FROM zizq.enqueue('after-reset', 't');});
is($ok, 0, 'reset() and an enqueue run while a dequeue sleeps') or diag($stderr);

# The sleeper takes the job enqueued for it, and the session is usable.
$node->safe_psql('postgres', q{SELECT zizq.enqueue('empty', 't')});
$waiter->finish;
like($out, qr/^\s*1\s*$/, 'the sleeping dequeue took the job enqueued for it');

$node->stop;
done_testing();
