# The dispatcher sleeps when nothing is due (SPEC §2 "Wake-ups": no
# periodic scan). A reviewer once saw it spin after a rate-limited run; this
# test runs such a workload, leaves work it cannot serve yet (parked jobs
# behind a held token, a job scheduled an hour ahead, a job leased for an
# hour), and then measures the CPU time the dispatcher process uses while
# nothing happens. The 3-second window is a measurement, not a wait for
# something to happen: a dispatcher that polls, or loops, burns far more than
# the bound in it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use POSIX ();
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZizqNode;

my $node = ZizqNode::start('idle');

# CPU time (user + system) of a process, in seconds, from /proc.
sub cpu_seconds
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/stat") or die "cannot read /proc/$pid/stat: $!";
	my $stat = <$fh>;
	close $fh;
	my @fields = split ' ', substr($stat, rindex($stat, ')') + 2);
	# utime and stime are fields 14 and 15 of the line; 12 and 13 after comm.
	return ($fields[11] + $fields[12]) / POSIX::sysconf(POSIX::_SC_CLK_TCK);
}

# A rate-limited run: 20 jobs paced at one every 10 ms, taken by a worker
# blocked in dequeue(wait), as the `rate` bench does.
$node->safe_psql('postgres', q{
	SELECT zizq.define_budget('drip', 20, 'time_based', duration => '200 ms', burst => 1);
	SELECT count(*) FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', 'paced', 'type', 't',
		'budgets', jsonb_build_array(jsonb_build_object('key', 'drip')))) FROM generate_series(1, 20)));
});
my $worker = $node->background_psql('postgres');
for (1 .. 20)
{
	$worker->query_safe(
		q{SELECT zizq.complete(id) FROM zizq.dequeue(ARRAY['paced'], 1, wait => '5 s')});
}
is($node->safe_psql('postgres', q{SELECT count(*) FROM zizq.jobs WHERE queue = 'paced'}),
	'0', 'the paced jobs all ran');

# Work the dispatcher cannot serve yet: a token held by a live session with
# jobs parked behind it, a job an hour ahead, a job leased for an hour.
$node->safe_psql('postgres', q{
	SELECT zizq.define_budget('one', 1, 'while_in_flight');
	SELECT count(*) FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', 'held', 'type', 't',
		'budgets', jsonb_build_array(jsonb_build_object('key', 'one')))) FROM generate_series(1, 4)));
	SELECT zizq.enqueue('later', 't', ready_at => clock_timestamp() + interval '1 hour');
	SELECT zizq.enqueue('leased', 't');
});
is($worker->query_safe(q{SELECT count(*) FROM zizq.dequeue(ARRAY['held'], 1)}), '1', 'the token is taken');
is($worker->query_safe(q{SELECT count(*) FROM zizq.dequeue(ARRAY['leased'], 1, lease => '1 hour')}),
	'1', 'a job is leased for an hour');
is($worker->query_safe(q{SELECT count(*) FROM zizq.dequeue(ARRAY['held'], 1)}), '0',
	'the other held jobs wait for the token');
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) = 3 FROM zizq._jobs WHERE queue = 'held' AND status = 'ready' AND parked}),
	'they are parked');

my $pid = ZizqNode::dispatcher_pid($node);
# Let the last hand-offs and parks settle: the dispatcher's CPU time stops
# growing (a busy dispatcher never gets here within the poll's time).
my $settled = 0;
for (1 .. 100)
{
	my $before = cpu_seconds($pid);
	usleep(200_000);
	if (cpu_seconds($pid) - $before < 0.015) { $settled = 1; last; }
}
ok($settled, 'the dispatcher goes quiet after the work');

my $before = cpu_seconds($pid);
sleep 3;
my $used = cpu_seconds($pid) - $before;
cmp_ok($used, '<=', 0.05, "the dispatcher sleeps while nothing is due (${used}s of CPU in 3 s)");
is(ZizqNode::dispatcher_pid($node), $pid, 'and it is the same dispatcher');

$worker->quit;
$node->stop;
done_testing();
