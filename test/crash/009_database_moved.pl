# zizq works in zizq.database only, also when an install was left behind in
# a database that zizq.database named before.
#
# Shared memory holds the served database's budgets by id. An operator's
# audit moved zizq.database away from a database with the extension
# installed: its functions went on working there, and a budget of the new
# database (same id) was charged for the old one's jobs, so a limit of 1
# let 2 jobs run. Every zizq function now refuses (55000) outside
# zizq.database, and so do its triggers (a DELETE or TRUNCATE there would
# give tokens back to the served database's budgets). An empty
# zizq.database (a dispatcher restart loop) is refused too.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('moved');

# An install in database "old", served while zizq.database named it.
$node->safe_psql('postgres', 'CREATE DATABASE old');
$node->append_conf('postgresql.conf', "zizq.database = 'old'");
$node->restart;
$node->safe_psql('old', q{
	CREATE EXTENSION zizq;
	SELECT zizq.define_budget('one', 1, 'while_in_flight');
	SELECT zizq.enqueue('q', 't', budgets => '[{"key": "one"}]') FROM generate_series(1, 2);});

# zizq.database moves back to "postgres", which has a budget with the same id.
$node->append_conf('postgresql.conf', "zizq.database = 'postgres'");
$node->restart;
ZizqNode::wait_loaded($node);
$node->safe_psql('postgres', q{SELECT zizq.define_budget('served', 5, 'while_in_flight')});

for my $call ('SELECT count(*) FROM zizq.dequeue(NULL, 10)', q{SELECT zizq.enqueue('q', 't')},
	q{SELECT zizq.define_budget('x', 1, 'while_in_flight')}, 'DELETE FROM zizq._jobs', 'TRUNCATE zizq._jobs')
{
	my ($rc, $out, $err) = $node->psql('old', $call);
	like($err, qr/zizq serves database "postgres", not "old"/, "refused in the old database: $call");
}
is($node->safe_psql('postgres', q{SELECT in_flight_cost FROM zizq.budget_state WHERE key = 'served'}),
	'0', 'the served budget was charged nothing');
is($node->safe_psql('old', q{SELECT count(*) FROM zizq._jobs WHERE status = 'ready'}),
	'2', "the old database's jobs did not move");

my ($rc, $out, $err) = $node->psql('postgres', q{ALTER SYSTEM SET zizq.database = ''});
like($err, qr/zizq.database must name a database/, 'an empty zizq.database is refused');

$node->stop;
done_testing();
