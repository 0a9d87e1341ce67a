# A commit can still fail after zizq's PRE_COMMIT callback logged its budget
# changes for a load under way (here: a serialization failure, checked after
# the callbacks). A load that runs in between must not apply them: it leaves
# them to the transaction, which applies them once committed, or drops them
# when it fails. Applied, the release of a complete that never happened
# would let a while_in_flight budget admit more than its allocation.
#
# gdb holds the committing backend in PostgreSQL's serialization check while
# a load runs; the load is held back until then by a prepared transaction
# that keeps zizq.budgets locked across a restart.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my ($gdb) = grep { -x } map { "$_/gdb" } split /:/, $ENV{PATH};
die 'gdb is needed (scripts/setup installs it)' unless $gdb;
my $patience = 120;  # no harness here may hang CI; each counts from its start

my $node = ZizqNode::start('commit_fails', "max_prepared_transactions = 2\n");
my $q = sub { $node->safe_psql('postgres', $_[0]) };

$q->(q{SELECT zizq.define_budget('two', 2, 'while_in_flight')});
$q->(q{SELECT count(*) FROM zizq.enqueue_many('[{"queue": "r", "type": "a", "budgets": [{"key": "two"}]},
                                                {"queue": "r", "type": "b", "budgets": [{"key": "two"}]}]')});
my $first = (split /\n/, $q->(q{SELECT id FROM zizq.dequeue(ARRAY['r'], 2, lease => '1 hour') ORDER BY id}))[0];
$q->(q{CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0), (2, 0)});

$q->(q{BEGIN; LOCK TABLE zizq.budgets IN ACCESS EXCLUSIVE MODE; PREPARE TRANSACTION 'hold'});
$node->restart;
$node->poll_query_until('postgres', q{SELECT running FROM zizq.dispatcher_state()})
  or die 'the dispatcher did not start';
is($q->('SELECT budgets_loaded FROM zizq.dispatcher_state()'), 'f', 'the load waits for the lock');

sub session
{
	my ($name) = @_;
	my %s = (in => '', out => '', err => '');
	$s{h} = IPC::Run::start(
		[ $node->installed_command('psql'), '-X', '-A', '-t',
		  '-h', $node->host, '-p', $node->port, '-d', 'postgres' ],
		'<', \$s{in}, '>', \$s{out}, '2>', \$s{err}, IPC::Run::timeout($patience));
	$s{in} .= "SET application_name = '$name';\n";
	return \%s;
}

sub run_until
{
	my ($s, $sql, $marker) = @_;
	$s->{in} .= "$sql\nSELECT '$marker';\n";
	$s->{h}->pump until $s->{out} =~ /$marker/;
}

# Write skew: the second to commit fails, at commit, after the callbacks.
my $t1 = session('t1');
my $t2 = session('t2');
run_until($t1, 'BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT sum(v) FROM t; UPDATE t SET v = v + 1 WHERE id = 1;', 't1 ready');
run_until($t2, "BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT sum(v) FROM t; UPDATE t SET v = v + 1 WHERE id = 2;
               SELECT zizq.complete($first);", 't2 ready');
run_until($t1, 'COMMIT;', 't1 committed');

# Attaches gdb to a session's backend with a breakpoint on `$function`;
# returns once the backend runs again. The hold ends when `$go` exists.
my $go = "$PostgreSQL::Test::Utils::tmp_check/commit_fails_go";
sub hold_at
{
	my ($name, $function) = @_;
	my $pid = $q->("SELECT pid FROM pg_stat_activity WHERE application_name = '$name'");
	unlink $go;
	my %g = (out => '', err => '');
	$g{h} = IPC::Run::start(
		[ $gdb, '-p', $pid, '-batch', '-nx',
		  '-ex', "break $function",
		  '-ex', 'continue',
		  '-ex', 'echo HELD\n',
		  '-ex', "shell for i in \$(seq 1500); do [ -e $go ] && break; sleep 0.02; done",
		  '-ex', 'detach' ],
		'>', \$g{out}, '2>', \$g{err}, IPC::Run::timeout($patience));
	$g{h}->pump until $g{out} =~ /Breakpoint 1 at/ || !$g{h}->pumpable;
	like($g{out}, qr/Breakpoint 1 at/, "gdb has its breakpoint in the backend of $name") or diag($g{err});
	# In tracing stop (state t) while gdb holds it.
	for (my $waited = 0; backend_state($pid) eq 't'; ++$waited)
	{
		die 'gdb did not let the backend run' if $waited > 3000;
		select(undef, undef, undef, 0.01);
	}
	return \%g;
}

sub backend_state
{
	my ($pid) = @_;
	open my $stat, '<', "/proc/$pid/stat" or return '';
	my $line = <$stat>;
	return $line =~ /\) (\S)/ ? $1 : '';
}

sub release_hold
{
	my ($g) = @_;
	open my $fh, '>', $go or die;
	close $fh;
	$g->{h}->finish;
}

my $held = hold_at('t2', 'PreCommit_CheckForSerializationFailure');
# Its PRE_COMMIT has logged the release; it is held before failing.
$t2->{in} .= "COMMIT;\n";
$t2->{h}->pump_nb while length $t2->{in};
$held->{h}->pump until $held->{out} =~ /HELD/ || !$held->{h}->pumpable;
like($held->{out}, qr/HELD/, 'the commit is held after zizq logged its release');

$q->(q{COMMIT PREPARED 'hold'});
ZizqNode::wait_loaded($node);

release_hold($held);
$t2->{in} .= "\\q\n";
$t2->{h}->finish;
like($t2->{err}, qr/could not serialize access/, 'the commit failed');

is($q->("SELECT status FROM zizq._jobs WHERE id = $first"), 'in_flight', 'the job it completed is still in flight');
is($q->(q{SELECT in_flight_cost FROM zizq.budget_state WHERE key = 'two'}), '2',
	'both jobs count as in flight: the failed release was not applied');
$q->(q{SELECT zizq.enqueue('r', 'c', budgets => '[{"key": "two"}]')});
is($q->(q{SELECT count(*) FROM zizq.dequeue(ARRAY['r'], 5)}), '0', 'no third job runs beside the two');

$t1->{in} .= "\\q\n";
$t1->{h}->finish;

# The same hold on a commit that goes through: the load leaves the release
# to it, and it applies it once committed.
my $second = $q->(q{SELECT id FROM zizq._jobs WHERE type = 'b'});
$q->(q{BEGIN; LOCK TABLE zizq.budgets IN ACCESS EXCLUSIVE MODE; PREPARE TRANSACTION 'hold'});
$node->restart;
$node->poll_query_until('postgres', q{SELECT running FROM zizq.dispatcher_state()})
  or die 'the dispatcher did not start';
my $t3 = session('t3');
run_until($t3, "BEGIN; SELECT zizq.complete($second);", 't3 ready');
$held = hold_at('t3', 'PreCommit_Notify');
$t3->{in} .= "COMMIT;\nSELECT 't3 committed';\n";
$t3->{h}->pump_nb while length $t3->{in};
$held->{h}->pump until $held->{out} =~ /HELD/ || !$held->{h}->pumpable;
like($held->{out}, qr/HELD/, 'the second commit is held after zizq logged its release');
$q->(q{COMMIT PREPARED 'hold'});
ZizqNode::wait_loaded($node);
release_hold($held);
$t3->{h}->pump until $t3->{out} =~ /t3 committed/;
is($q->(q{SELECT in_flight_cost FROM zizq.budget_state WHERE key = 'two'}), '1',
	'the committed release applied by its transaction');
is($q->(q{SELECT type FROM zizq.dequeue(ARRAY['r'], 5, wait => '10 s')}), 'c', 'the freed slot runs the waiting job');
$t3->{in} .= "\\q\n";
$t3->{h}->finish;

$node->stop;
done_testing();
