# A commit that other sessions can see before the dispatcher's load of budgets
# takes its snapshot, but that reaches zizq's commit callback only after the
# load has ended, is counted once: the load's snapshot already left the
# completed job out of the in-flight cost, so the release must not be applied
# a second time (a while_in_flight budget would then admit more than its
# allocation).
#
# The window is forced with gdb: the completing backend is held at zizq's
# commit callback (PostgreSQL makes the commit visible before it runs the
# callbacks) while a load runs. The load is held back until then by a prepared
# transaction that keeps zizq.budgets locked across a restart.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZizqNode;

# The breakpoint's condition reads the first argument's register.
plan skip_all => 'the gdb breakpoint is written for x86-64' unless `uname -m` =~ /^x86_64/;
my ($gdb) = grep { -x } map { "$_/gdb" } split /:/, $ENV{PATH};
die 'gdb is needed (scripts/setup installs it)' unless $gdb;
# Nothing here may hang CI: every harness has a timeout, and so has the loop
# in which gdb holds the backend.
my $patience = 60;

my $node = ZizqNode::start('load_race', "max_prepared_transactions = 2\n");
my $q = sub { $node->safe_psql('postgres', $_[0]) };

# Two jobs of a budget of 2 in flight under a lease (they outlive a restart).
$q->(q{SELECT zizq.define_budget('two', 2, 'while_in_flight')});
$q->(q{SELECT count(*) FROM zizq.enqueue_many('[{"queue": "r", "type": "t", "budgets": [{"key": "two"}]},
                                                {"queue": "r", "type": "t", "budgets": [{"key": "two"}]}]')});
my ($first, $second) = split /\n/, $q->(q{SELECT id FROM zizq.dequeue(ARRAY['r'], 2, lease => '1 hour') ORDER BY id});
ok($first && $second, 'two leased jobs in flight');

# Budgets cannot be loaded after the restart while this holds the table.
$q->(q{BEGIN; LOCK TABLE zizq.budgets IN ACCESS EXCLUSIVE MODE; PREPARE TRANSACTION 'hold'});
$node->restart;
$node->poll_query_until('postgres', q{SELECT running FROM zizq.dispatcher_state()})
  or die 'the dispatcher did not start';
is($q->('SELECT budgets_loaded FROM zizq.dispatcher_state()'), 'f', 'the load waits for the lock');

# The session that completes the first job, held by gdb at zizq's commit
# callback for a commit: at its first instruction, the first argument (rdi)
# is the event, and XACT_EVENT_COMMIT is 0.
my ($in, $out, $err) = ('', '', '');
my $racer = IPC::Run::start(
	[ $node->installed_command('psql'), '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1',
	  '-h', $node->host, '-p', $node->port, '-d', 'postgres' ],
	'<', \$in, '>', \$out, '2>', \$err, IPC::Run::timeout($patience));
$in .= "SET application_name = 'racer';\n";
$racer->pump_nb while length $in;
$node->poll_query_until('postgres', "SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'racer'")
  or die 'the racing session did not connect';
my $pid = $q->("SELECT pid FROM pg_stat_activity WHERE application_name = 'racer'");

my $go = "$PostgreSQL::Test::Utils::tmp_check/load_race_go";
unlink $go;
my ($gout, $gerr) = ('', '');
my $held = IPC::Run::start(
	[ $gdb, '-p', $pid, '-batch', '-nx',
	  '-ex', "break *'zizq::pg::(anonymous namespace)::on_xact(XactEvent, void*)' if \$rdi == 0",
	  '-ex', 'continue',
	  '-ex', 'echo HELD\n',
	  '-ex', "shell for i in \$(seq 1500); do [ -e $go ] && break; sleep 0.02; done",
	  '-ex', 'detach' ],
	'>', \$gout, '2>', \$gerr, IPC::Run::timeout($patience));
# gdb has set its breakpoint, and inserted it once the backend runs again
# (it is in tracing stop, state t, while gdb holds it).
$held->pump until $gout =~ /Breakpoint 1 at/ || !$held->pumpable;
like($gout, qr/Breakpoint 1 at/, 'gdb has its breakpoint in the racing backend') or diag($gerr);
sub backend_state
{
	open my $stat, '<', "/proc/$pid/stat" or return '';
	my $line = <$stat>;
	return $line =~ /\) (\S)/ ? $1 : '';
}
for (my $waited = 0; backend_state() eq 't'; ++$waited)
{
	die 'gdb did not let the racing backend run' if $waited > 3000;
	usleep(10_000);
}

$in .= "SELECT zizq.complete($first);\n";
$racer->pump_nb while length $in;
# Its commit is visible: the job is gone (retention: none).
$node->poll_query_until('postgres', "SELECT count(*) = 0 FROM zizq._jobs WHERE id = $first")
  or die 'the complete did not commit';
$held->pump until $gout =~ /HELD/ || !$held->pumpable;
like($gout, qr/HELD/, 'the racing backend is held at its commit callback');

# The load runs now; its snapshot sees the first job completed.
$q->(q{COMMIT PREPARED 'hold'});
ZizqNode::wait_loaded($node);

# Let the held commit go on.
open my $fh, '>', $go or die;
close $fh;
$held->finish;
$in .= "SELECT 'done';\n";
$racer->pump until $out =~ /done/;
like($out, qr/^t$/m, 'the complete applied');
$in .= "\\q\n";
$racer->finish;

is($q->(q{SELECT in_flight_cost FROM zizq.budget_state WHERE key = 'two'}), '1',
	'the second job alone is in flight: the release counted once');
$q->(q{SELECT count(*) FROM zizq.enqueue_many('[{"queue": "r", "type": "t", "budgets": [{"key": "two"}]},
                                                {"queue": "r", "type": "t", "budgets": [{"key": "two"}]}]')});
is($q->(q{SELECT count(*) FROM zizq.dequeue(ARRAY['r'], 5)}), '1', 'one more job runs, not two');

# A budget created in a subtransaction that rolled back before the load, in
# a transaction still open during the load and committed after it, is not
# loaded: its creation was logged under the top-level transaction, which the
# load's snapshot saw running. The load is held back by a lock on
# zizq._job_errors this time, which leaves zizq.budgets writable.
# Also: a worker that looked while budgets were not loaded, and waits, is
# woken by the load to take the budgeted job it passed by.
$q->(q{SELECT zizq.define_budget('roomy', 10, 'while_in_flight')});
$q->(q{SELECT zizq.enqueue('wq', 'w1', budgets => '[{"key": "roomy"}]')});
$q->(q{BEGIN; LOCK TABLE zizq._job_errors IN ACCESS EXCLUSIVE MODE; PREPARE TRANSACTION 'hold'});
$node->restart;
$node->poll_query_until('postgres', q{SELECT running FROM zizq.dispatcher_state()})
  or die 'the dispatcher did not start';
is($q->('SELECT budgets_loaded FROM zizq.dispatcher_state()'), 'f', 'the second load waits for the lock');
my ($win, $wout, $werr) = ('', '', '');
my $waiter = IPC::Run::start(
	[ $node->installed_command('psql'), '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1',
	  '-h', $node->host, '-p', $node->port, '-d', 'postgres' ],
	'<', \$win, '>', \$wout, '2>', \$werr, my $waiting = IPC::Run::timeout($patience));
$win .= "SET application_name = 'waiter';\nSELECT type FROM zizq.dequeue(ARRAY['wq'], 1, wait => '60 s');\n";
$waiter->pump_nb while length $win;
$node->poll_query_until('postgres',
	"SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE application_name = 'waiter'")
  or die 'the worker did not wait';
($in, $out, $err) = ('', '', '');
my $creator = IPC::Run::start(
	[ $node->installed_command('psql'), '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1',
	  '-h', $node->host, '-p', $node->port, '-d', 'postgres' ],
	'<', \$in, '>', \$out, '2>', \$err, IPC::Run::timeout($patience));
$in .= q{BEGIN;
SAVEPOINT s; SELECT zizq.define_budget('ghost', 1, 'while_in_flight'); ROLLBACK TO s;
SELECT zizq.define_budget('kept', 1, 'while_in_flight');
SELECT 'created';
};
$creator->pump until $out =~ /created/ || !$creator->pumpable;
like($out, qr/created/, 'budgets created while the load waits') or diag($err);
$q->(q{COMMIT PREPARED 'hold'});
ZizqNode::wait_loaded($node);
$in .= "COMMIT;\n\\q\n";
$creator->finish;
is($q->(q{SELECT string_agg(key, ',' ORDER BY key) FROM zizq.budgets}), 'kept,roomy,two', 'the rolled-back budget is gone');
is($q->(q{SELECT budgets FROM zizq.dispatcher_state()}), '3', 'shared memory holds the same three budgets');
# Well before its 60 s wait ends.
$waiting->start(20);
eval { $waiter->pump until $wout =~ /w1/; };
like($wout, qr/^w1$/m, 'the waiting worker was woken by the load and took the job');
$waiter->kill_kill;

$node->stop;
done_testing();
