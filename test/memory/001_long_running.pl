# Memory of the long-lived processes stays flat under load: the dispatcher,
# which runs as long as the server, and a worker's backend waiting in
# dequeue(wait) through thousands of wake-ups that find nothing.
#
# A helper's audit measured both growing: the dispatcher lost 24 bytes of
# TopMemoryContext a cycle (an array of its standby hand-offs never freed:
# ~130 MB an hour under load), and a waiting dequeue kept what each look
# allocated after its first SPI call (SPI leaves its own context current,
# so the look's scratch context, reset after each look, got nothing after
# that): ~35 kB per empty wake-up of a two-queue wait.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZizqNode;

my $node = ZizqNode::start('memory', "log_min_messages = log\n");

# Bytes in use by a process: its memory contexts logged, the last Grand
# total line of that pid in the server log read back.
sub grand_total
{
	my ($pid, $context) = @_;
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres', "SELECT pg_log_backend_memory_contexts($pid)");
	my $found;
	for (1 .. 500)
	{
		my $log = slurp_file($node->logfile, $offset);
		($found) = $log =~ /\[$pid\][^\n]*? LOG:\s+$context:[^\n]*?(\d+) used/;
		last if defined $found;
		usleep(10_000);
	}
	die "no memory context line for $pid" unless defined $found;
	return $found;
}

# Every transaction below enqueues a job of queue w, takes it and completes
# it: its commit wakes the workers of w, which find nothing.
my $script = PostgreSQL::Test::Utils::tempdir() . '/churn.sql';
open my $fh, '>', $script or die;
print $fh "BEGIN;\nSELECT zizq.enqueue('w', 't');\nSELECT zizq.complete(id) FROM zizq.dequeue(ARRAY['w']);\nCOMMIT;\n";
close $fh;
sub churn
{
	my ($transactions) = @_;
	$node->command_ok(
		[ 'pgbench', '-n', '-c', '2', '-t', $transactions, '-f', $script, '-h', $node->host, '-p', $node->port,
		  'postgres' ],
		"$transactions transactions on each of 2 connections");
}

# A worker waits on two queues (the admission walk's path) for the whole test.
my $waiter = ZizqNode::session($node, 'waiter');
ZizqNode::send_only($waiter, "SELECT count(*) FROM zizq.dequeue(ARRAY['w', 'x'], 10, '300 s');");
$node->poll_query_until('postgres',
	"SELECT wait_event = 'Extension' FROM pg_stat_activity WHERE pid = $waiter->{pid}")
  or die 'the waiter does not wait';

# CPU ticks a process has used (utime + stime), to see that the waiter
# really looked again and again.
sub cpu_ticks
{
	my ($pid) = @_;
	my @f = split ' ', (slurp_file("/proc/$pid/stat") =~ s/^.*\) //sr);
	return $f[11] + $f[12];
}

my $dispatcher = ZizqNode::dispatcher_pid($node);
churn(500);    # warm: plans, caches
my $top_before = grand_total($dispatcher, 'level: 0; TopMemoryContext');
my $waiter_before = grand_total($waiter->{pid}, 'Grand total');
my $ticks_before = cpu_ticks($waiter->{pid});
churn(3000);
my $top_after = grand_total($dispatcher, 'level: 0; TopMemoryContext');
my $waiter_after = grand_total($waiter->{pid}, 'Grand total');
cmp_ok(cpu_ticks($waiter->{pid}) - $ticks_before, '>=', 5,
	'the waiter was woken and looked meanwhile (CPU time used)');

cmp_ok($top_after - $top_before, '<', 16384,
	"the dispatcher's TopMemoryContext stays flat ($top_before -> $top_after bytes used)");
cmp_ok($waiter_after - $waiter_before, '<', 4 * 1024 * 1024,
	"the waiting worker's memory stays flat ($waiter_before -> $waiter_after bytes used)");
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE pid = $waiter->{pid} AND wait_event = 'Extension'"),
	'1', 'the worker still waits');

$waiter->{h}->kill_kill;
$node->stop;
done_testing();
