# The dispatcher does not wait for rows other transactions hold.
#
# It requeues jobs of ended sessions and expired leases. Its UPDATE used to
# wait for a row lock like any other: a worker completing a job whose lease
# had run out, inside a longer transaction, stopped every promotion, offer
# and NOTIFY until that transaction ended (an operator's audit: a scheduled
# job 12 s late). Now it skips held rows and comes back for them, without
# spinning meanwhile.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('held_rows');

# A job leased for 1 s, whose row a worker then holds in an open transaction
# (its complete, not yet committed) past the lease's end.
$node->safe_psql('postgres', q{SELECT zizq.enqueue('leased', 't')});
my $id = $node->safe_psql('postgres', q{SELECT id FROM zizq.dequeue(ARRAY['leased'], 1, lease => '1 s')});
my $worker = ZizqNode::session($node, 'worker');
ZizqNode::run_until($worker, "BEGIN; SELECT zizq.complete(${id}::bigint);", 'completing');

sleep 1.5;  # the lease has run out; the dispatcher meets the held row
my $dispatcher = ZizqNode::dispatcher_pid($node);
my $cpu_before = cpu_ticks($dispatcher);

# Meanwhile a job scheduled 1 s ahead must be promoted on time.
$node->safe_psql('postgres',
	q{SELECT zizq.enqueue('later', 't', ready_at => clock_timestamp() + interval '1 s')});
my $took = ZizqNode::seconds_until($node,
	q{SELECT status FROM zizq.jobs WHERE queue = 'later'}, 'ready', 10);
ok(defined $took && $took < 2.5,
	'a scheduled job is promoted while a worker holds an expired lease\'s row (after ' . ($took // 'never') . ' s)');
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'zizq dispatcher' AND wait_event_type = 'Lock'}),
	'0', 'the dispatcher is not waiting for the row');

sleep 2;  # the dispatcher comes back for the held row now and then, no more
my $used = cpu_ticks($dispatcher) - $cpu_before;
cmp_ok($used, '<=', 30, "the dispatcher does not spin on the held row ($used ticks of CPU in ~3.5 s)");

# The worker commits its complete: the job is completed, never requeued.
ZizqNode::run_until($worker, 'COMMIT;', 'committed');
is($node->safe_psql('postgres', qq{SELECT count(*) FROM zizq.jobs WHERE id = $id}),
	'0', 'the late complete applied; the job was not requeued under it');
$worker->{in} .= "\\q\n";
$worker->{h}->finish;

$node->stop;
done_testing();

# utime + stime of a process, in clock ticks.
sub cpu_ticks
{
	my ($pid) = @_;
	open my $stat, '<', "/proc/$pid/stat" or die "no process $pid";
	my @fields = split / /, (split /\) /, <$stat>)[1];
	return $fields[11] + $fields[12];
}
