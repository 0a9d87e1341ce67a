# A complete whose commit a synchronous standby must confirm commits as
# configured (src/pg/xact.cpp, "commits whose flush can wait"): its commit
# waits for the standby, as every other commit does, while an unleased
# dequeue, which needs no durable commit, does not. The standby here never
# connects, so a commit that waits for it waits until it is cancelled.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('sync_standby', "wal_level = replica\nmax_wal_senders = 2\nautovacuum = off");
$node->safe_psql('postgres', q{SELECT count(zizq.enqueue('q', 't')) FROM generate_series(1, 2)});
# Set at start-up, the standby list is in force in every process at once.
$node->append_conf('postgresql.conf', "synchronous_standby_names = 'nobody'");
$node->restart;
ZizqNode::wait_loaded($node);

my $worker = $node->background_psql('postgres');
my $id = $worker->query_safe(q{SELECT id FROM zizq.dequeue(ARRAY['q'], 1)});
like($id, qr/^\d+$/, 'an unleased dequeue commits without waiting for the standby');

$worker->query_until(qr/completing/, "\\echo completing\nSELECT zizq.complete($id);\n");
my $waiting = q{SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND query LIKE 'SELECT zizq.complete%'};
ok($node->poll_query_until('postgres', $waiting, '1'), 'a complete waits for the synchronous standby');
$node->safe_psql('postgres',
	q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND query LIKE 'SELECT zizq.complete%'});
# Cancelled, the wait ends with a warning; the commit itself was made before it.
my ($out) = $worker->query(q{SELECT 'next'});
like($out, qr/next/, 'the worker goes on after the cancelled wait');
like($worker->{stderr}, qr/canceling wait for synchronous replication/, 'its commit was waiting for the standby');
is($node->safe_psql('postgres', qq{SELECT count(*) FROM zizq.jobs WHERE id = $id}), '0', 'the job is completed');

$worker->quit;
$node->stop;
done_testing();
