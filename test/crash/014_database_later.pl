# zizq.database may name a database that does not exist yet: the dispatcher
# waits for it quietly and starts serving it once it is created.
#
# Connecting a background worker to a missing database ends it with FATAL,
# and the postmaster starts it again a second later: the log got two lines
# a second for as long as the database was missing. Now the start after a
# failed connection connects to no database, looks for the database in
# pg_database every 2 s, and exits to be started again when it is there.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use ZizqNode;

my $node = ZizqNode::start('later');
$node->append_conf('postgresql.conf', "zizq.database = 'later'");
$node->restart;

# The first start fails to connect; the next one waits (the build before
# failed again, every second).
my $offset = $node->wait_for_log(
	qr/waiting for database "later" \(zizq.database\) to be created|does not exist[\s\S]*does not exist/);
like(slurp_file($node->logfile), qr/waiting for database "later"/, 'the dispatcher waits for the database');
# A window of 4 s.
my $stop = time + 4;
usleep(100_000) while time < $stop;
my $window = slurp_file($node->logfile, $offset);
my $fatals = () = $window =~ /FATAL|exited with exit code/g;
is($fatals, 0, 'no FATAL and no restart while it waits') or diag($window);

$node->safe_psql('postgres', 'CREATE DATABASE later');
$node->safe_psql('later', 'CREATE EXTENSION zizq');
ok($node->poll_query_until('later', 'SELECT running AND budgets_loaded FROM zizq.dispatcher_state()'),
	'once the database is created, the dispatcher serves it');
$node->safe_psql('later', q{SELECT zizq.enqueue('q', 't', ready_at => now() + interval '1 second')});
ok($node->poll_query_until('later', q{SELECT count(*) FROM zizq.dequeue(ARRAY['q'])}, '1'),
	'and promotes scheduled jobs');

$node->stop;
done_testing();
