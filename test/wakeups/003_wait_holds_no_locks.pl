# A dequeue(wait) holds no locks on jobs while it waits (SPEC §2 "Delivery").
#
# The trap: in READ COMMITTED, FOR UPDATE SKIP LOCKED that meets a row
# another worker took after the statement's snapshot locks the row's newest
# version (the job, now in flight) and keeps that lock when the recheck
# fails. A dequeue that then found nothing and waited held such locks for its
# whole wait, and the jobs' owners blocked in complete until it ended.
#
# It shows at the tail of a drain: workers whose last look met jobs just
# taken by others go to sleep while those others complete. Sixteen workers
# drain 20,000 jobs in batches of 100 (the bench's drain) and wait up to 1 s
# when the queue is empty; every complete must return well before a
# waiter's second is up. The race needs timing, so the drain runs ten
# times: a build that kept the locks blocked a complete for the whole wait
# in 2 of 5 drains of this shape; at that rate ten drains all miss it
# about 0.6 % of the time.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('wait_locks');
my $workers = 16;
my $jobs = 20000;
my $wait_ms = 1000;

$node->safe_psql('postgres', qq{
	CREATE TABLE complete_times (round int, worker int, calls int, slowest_ms float8);
	CREATE PROCEDURE drain_worker(round int, worker int) LANGUAGE plpgsql AS \$\$
	DECLARE
		ids bigint[];
		started timestamptz;
		calls int := 0;
		slowest float8 := 0;
	BEGIN
		LOOP
			SELECT array_agg(id) INTO ids FROM zizq.dequeue(ARRAY['tail'], 100, wait => '$wait_ms ms');
			COMMIT;
			EXIT WHEN ids IS NULL;
			started := clock_timestamp();
			PERFORM zizq.complete(ids);
			COMMIT;
			calls := calls + 1;
			slowest := greatest(slowest, 1000 * extract(epoch FROM clock_timestamp() - started));
		END LOOP;
		INSERT INTO complete_times VALUES (round, worker, calls, slowest);
	END \$\$;
});

for my $round (1 .. 10)
{
	$node->safe_psql('postgres', qq{
		SELECT count(*) FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', 'tail', 'type', 't'))
			FROM generate_series(1, $jobs)));
		VACUUM ANALYZE zizq._jobs;
	});
	my @runs;
	for my $worker (1 .. $workers)
	{
		my ($out, $err) = ('', '');
		push @runs,
		  IPC::Run::start(
			[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
			  '-c', "CALL drain_worker($round, $worker)" ],
			'>', \$out, '2>', \$err);
	}
	for my $run (@runs)
	{
		$run->finish or die "a drain worker failed: " . ($? >> 8);
	}
	is($node->safe_psql('postgres', q{SELECT count(*) FROM zizq.jobs WHERE queue = 'tail'}),
		'0', "drain $round: every job completed");
	note "drain $round: slowest complete "
	  . $node->safe_psql('postgres', "SELECT round(max(slowest_ms)) FROM complete_times WHERE round = $round")
	  . ' ms';
}

my $slowest = $node->safe_psql('postgres',
	'SELECT round(max(slowest_ms)) FROM complete_times');
my $calls = $node->safe_psql('postgres', 'SELECT sum(calls) FROM complete_times');
cmp_ok($slowest, '<', $wait_ms / 2,
	"no complete waits for a sleeping dequeue (slowest of $calls: $slowest ms; a waiter sleeps $wait_ms ms)");

$node->stop;
done_testing();
