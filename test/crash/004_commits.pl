# Commits whose flush can wait (src/pg/xact.cpp): a transaction whose only
# changes are dequeues without a lease commits asynchronously; one whose only
# changes are zizq's completes and dequeues commits asynchronously too, and
# then flushes before the client hears of it (its wake-ups go first). Any
# other change, a lease, or synchronous_commit = off keeps the commit as
# configured. A dequeue whose commit is lost in a crash leaves its jobs ready,
# as a dead session's would be; a complete the client heard of is kept.
#
# The walwriter flushes every 10 s here, and nothing else flushes WAL, so a
# commit that did not flush leaves the flush position behind its commit
# record for long enough to see it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('commits', "wal_writer_delay = '10s'\nbgwriter_lru_maxpages = 0\nautovacuum = off");
my $q = sub { $node->safe_psql('postgres', $_[0]) };
$q->(q{SELECT count(zizq.enqueue('q', 't')) FROM generate_series(1, 10)});
$q->(q{CREATE TABLE public.audit (id bigint)});
$q->(q{CHECKPOINT});

my $worker = $node->background_psql('postgres');

# Runs the statements in one transaction of the worker; returns whether its
# commit was flushed: whether the flush position passed the WAL written
# before the commit record.
sub flushed_after
{
	my @statements = @_;
	$worker->query_safe('BEGIN');
	$worker->query_safe($_) for @statements;
	my $before_commit = $worker->query_safe(q{SELECT pg_current_wal_insert_lsn()});
	$worker->query_safe('COMMIT');
	# Read by another session, as soon as the COMMIT has returned.
	return $q->(qq{SELECT pg_current_wal_flush_lsn() > '$before_commit'}) eq 't';
}

# The walwriter hibernates when idle, and the first asynchronous commit
# wakes it with a flush: have that happen now.
$worker->query_safe(q{BEGIN; SET LOCAL synchronous_commit = off; INSERT INTO public.audit VALUES (-1); COMMIT;});
# Any WAL record after the dequeue keeps a commit synchronous, even one that
# pruning writes during a first catalog look-up: look the functions up now.
$worker->query_safe(q{SELECT pg_current_wal_insert_lsn(), pg_current_wal_flush_lsn()});

my $take = q{SELECT id FROM zizq.dequeue(ARRAY['q'], 1)};
ok(!flushed_after($take), 'a lone dequeue commits without a flush');
ok(flushed_after(q{SELECT id FROM zizq.dequeue(ARRAY['q'], 1, lease => '1 hour')}), 'a leased dequeue flushes');
ok(flushed_after(q{INSERT INTO public.audit SELECT id FROM zizq.dequeue(ARRAY['q'], 1)}),
	'a dequeue with another change in its statement flushes');
ok(flushed_after(q{INSERT INTO public.audit VALUES (0)}, $take), 'a dequeue after another change flushes');
ok(flushed_after($take, q{INSERT INTO public.audit VALUES (0)}), 'a dequeue before another change flushes');
ok(!flushed_after($take, $take), 'two dequeues in one transaction commit without a flush');
ok(flushed_after(q{SELECT zizq.enqueue('q', 't')}), 'an enqueue flushes');
# A complete of a job found beforehand: a statement that read zizq._jobs in
# the transaction could prune a page, whose WAL record would make the
# commit synchronous whatever zizq does.
sub complete_one
{
	my $id = $worker->query_safe(
		q{SELECT id FROM zizq.jobs WHERE status = 'in_flight' AND lease_until IS NULL ORDER BY id LIMIT 1});
	return "SELECT zizq.complete($id)";
}
ok(!flushed_after(q{SET LOCAL synchronous_commit = off}, complete_one()),
	'a complete under synchronous_commit = off commits as configured');
ok(flushed_after(complete_one()), 'a complete flushes before it returns');
ok(flushed_after($take, complete_one()), 'a dequeue and a complete in one transaction flush');

# A dequeue whose commit record never reached disk: after the crash its jobs
# are ready, like those of every session the crash ended (11 jobs, 3
# completed, 1 leased).
ok(!flushed_after(q{SELECT count(*) FROM zizq.dequeue(ARRAY['q'], 2)}), 'another lone dequeue, not flushed');
$node->stop('immediate');
$node->start;
ZizqNode::wait_loaded($node);
my $took = ZizqNode::seconds_until($node, q{SELECT count(*) FROM zizq.jobs WHERE status = 'ready'}, '7');
ok(defined $took, 'after a crash every job not completed or leased is ready again');
is($q->(q{SELECT count(*) FROM zizq.jobs WHERE status = 'in_flight' AND lease_until IS NOT NULL}), '1',
	'the leased job is still leased');

$node->stop;
done_testing();
