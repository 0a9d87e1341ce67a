# Crashes under load: workers dequeue and complete jobs while backends are
# killed (SIGKILL: crash restart) and the postmaster itself is killed. No job
# is lost, and no job is delivered twice while a worker holds it: a job runs
# a second time only after the session that held it died.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZizqNode;

my $node = ZizqNode::start('load');
my $q = sub { $node->safe_psql('postgres', $_[0]) };
my $jobs = 6000;

# Workers are pgbench clients: each transaction dequeues one job, records the
# run, works 10 ms and completes it.
# Every run of a job is recorded in its own committed transaction before the
# job is completed: (job, worker pid, when).
$q->(q{CREATE TABLE runs (job bigint, pid int, at timestamptz DEFAULT clock_timestamp())});
$q->(q{SELECT zizq.define_budget('conc', 6, 'while_in_flight')});
$q->("SELECT count(*) FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', 'load', 'type', 't',
        'budgets', CASE WHEN i % 2 = 0 THEN '[{\"key\": \"conc\"}]'::jsonb END)) FROM generate_series(1, $jobs) i))");

my $script = "$PostgreSQL::Test::Utils::tmp_check/worker.sql";
open my $fh, '>', $script or die;
print $fh <<'SQL';
SELECT COALESCE((SELECT id FROM zizq.dequeue(ARRAY['load'], 1, wait => '100 ms')), 0) AS job \gset
\if :job > 0
INSERT INTO runs (job, pid) VALUES (:job, pg_backend_pid());
SELECT pg_sleep(0.01);
SELECT zizq.complete(:job);
\endif
SQL
close $fh;

sub start_workers
{
	my ($seconds) = @_;
	my ($out, $err) = ('', '');
	my @cmd = ($node->installed_command('pgbench'), '-n', '-c', '8', '-j', '2', '-T', $seconds,
		'-f', $script, '-h', $node->host, '-p', $node->port, 'postgres');
	my $h = IPC::Run::start(\@cmd, '>', \$out, '2>', \$err);
	return $h;
}

sub random_backend
{
	return $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'
		   AND query ~ '(zizq|runs|pg_sleep)' ORDER BY random() LIMIT 1");
}

my %terminated;
my @crashes;  # [just before the kill, once the server is back] of each crash
for my $round (1 .. 3)
{
	my $h = start_workers(30);
	usleep(700_000);
	# A worker terminated cleanly, then one killed: the server restarts.
	my $pid = random_backend();
	if ($pid)
	{
		$q->("SELECT pg_terminate_backend($pid)");
		$terminated{$pid} = 1;
	}
	usleep(500_000);
	$pid = random_backend();
	die 'no worker to kill' unless $pid;
	my $start = $q->('SELECT clock_timestamp()');
	kill 'KILL', $pid;
	eval { $h->finish };
	$node->poll_query_until('postgres', 'SELECT true') or die 'server did not come back';
	ZizqNode::wait_loaded($node);
	push @crashes, [ $start, $q->('SELECT clock_timestamp()') ];
}

# The postmaster itself, killed under load.
my $h = start_workers(30);
usleep(800_000);
my $start = $q->('SELECT clock_timestamp()');
$node->kill9;
eval { $h->finish };
# The old postmaster's children notice its death and exit; until then the
# data directory is busy.
for (1 .. 100)
{
	$node->{_pid} = undef;  # a failed start reads the dead postmaster's pid file
	last if $node->start(fail_ok => 1);
	usleep(200_000);
}
ZizqNode::wait_loaded($node);
push @crashes, [ $start, $q->('SELECT clock_timestamp()') ];

# Drain what is left.
$h = start_workers(120);
$node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM zizq.jobs}) or diag 'jobs left';
$h->kill_kill;
eval { $h->finish };

is($q->(q{SELECT count(*) FROM zizq.jobs}), '0', 'every job completed');
is($q->(q{SELECT count(DISTINCT job) FROM runs}), $jobs, 'every job ran');
# A job ran twice only if the session holding it died in between: a crash
# (all sessions die) or a terminated worker.
$q->('CREATE TABLE crashes (started timestamptz, ended timestamptz)');
$q->('INSERT INTO crashes VALUES ' . join(', ', map { "('$_->[0]', '$_->[1]')" } @crashes));
my $reruns = $q->(q{SELECT count(*) FROM runs a JOIN runs b ON a.job = b.job AND a.at < b.at});
my $unexplained = $q->("SELECT count(*) FROM runs a JOIN runs b ON a.job = b.job AND a.at < b.at
	 WHERE NOT EXISTS (SELECT 1 FROM crashes c WHERE c.started <= b.at AND c.ended >= a.at)
	   AND a.pid NOT IN (" . join(',', 0, keys %terminated) . ')');
is($unexplained, '0', "no job delivered twice while its worker held it ($reruns re-runs, each after its worker died)")
  or diag($q->("SELECT a.job, a.pid, a.at, b.pid, b.at FROM runs a JOIN runs b ON a.job = b.job AND a.at < b.at
	 WHERE NOT EXISTS (SELECT 1 FROM crashes c WHERE c.started <= b.at AND c.ended >= a.at)
	   AND a.pid NOT IN (" . join(',', 0, keys %terminated) . ') ORDER BY a.at LIMIT 10')
	  . "\nterminated: " . join(',', keys %terminated));
is($q->(q{SELECT in_flight_cost FROM zizq.budget_state WHERE key = 'conc'}), '0', 'no token leaked');
is($q->(q{SELECT count(*) FROM crashes c WHERE EXISTS (SELECT 1 FROM runs WHERE at < c.started)
                                       AND EXISTS (SELECT 1 FROM runs WHERE at > c.ended)}), '4',
	'the server crashed 4 times with work before and after');

$node->stop;
done_testing();
