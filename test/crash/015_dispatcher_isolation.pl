# The dispatcher runs its transactions in READ COMMITTED whatever the
# database's default isolation.
#
# With `ALTER DATABASE ... SET default_transaction_isolation =
# 'serializable'` (an application that wants its own transactions
# serializable), the dispatcher's transactions were serializable too: under
# load they failed with serialization errors, each ending the dispatcher
# until its restart a second later (an operator's audit saw 7-9 exits in
# 15 s and scheduled jobs promoted 0.4 s late on average). Serializable
# transactions take SIRead predicate locks, kept after their commit while a
# serializable transaction that overlaps them runs: one held open here
# shows whether the dispatcher's promotion of a scheduled job took any.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('isolation');
$node->safe_psql('postgres', q{ALTER DATABASE postgres SET default_transaction_isolation = 'serializable'});
# A new dispatcher reads the database's settings when it connects.
ZizqNode::restart_dispatcher($node);
my $pid = ZizqNode::dispatcher_pid($node);

my $overlap = $node->background_psql('postgres');
$overlap->query_safe('BEGIN ISOLATION LEVEL SERIALIZABLE');
$overlap->query_safe('SELECT count(*) FROM zizq._jobs');
$node->safe_psql('postgres', q{SELECT zizq.enqueue('q', 't', ready_at => now() + interval '200 milliseconds')});
ok($node->poll_query_until('postgres', q{SELECT count(*) FROM zizq.jobs WHERE status = 'ready'}, '1'),
	'the dispatcher promotes the scheduled job');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_locks WHERE pid = $pid AND mode = 'SIReadLock'"),
	'0', 'its transactions took no predicate locks: they were not serializable');
is(ZizqNode::dispatcher_pid($node), $pid, 'the same dispatcher runs');
$overlap->quit;

$node->stop;
done_testing();
