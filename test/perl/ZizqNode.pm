# A PostgreSQL::Test::Cluster with zizq preloaded and installed, for the
# TAP tests (crash tests, wake-ups). Crash restarts are on: PostgreSQL::Test::Cluster turns them
# off by default.
package ZizqNode;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;
use Time::HiRes qw(time usleep);

# start($name, $extra_conf, %init): %init goes to PostgreSQL::Test::Cluster's
# init (allows_streaming => 1 for a primary).
sub start
{
	my ($name, $extra_conf, %init) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%init);
	$node->append_conf('postgresql.conf', q(
shared_preload_libraries = 'zizq'
zizq.database = 'postgres'
zizq.max_budgets = 64
restart_after_crash = on
max_connections = 50
log_min_messages = warning
));
	$node->append_conf('postgresql.conf', $extra_conf) if $extra_conf;
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION zizq');
	wait_loaded($node);
	return $node;
}

# Waits until the dispatcher runs and has loaded budgets into shared memory.
sub wait_loaded
{
	my ($node) = @_;
	$node->poll_query_until('postgres',
		'SELECT running AND budgets_loaded FROM zizq.dispatcher_state()')
	  or die 'the dispatcher did not load budgets';
}

# Polls $query until it returns $expected; returns the seconds it took, or
# undef after $timeout seconds.
sub seconds_until
{
	my ($node, $query, $expected, $timeout) = @_;
	$timeout //= 30;
	my $start = time;
	while (time - $start < $timeout)
	{
		my ($rc, $out) = $node->psql('postgres', $query);
		return time - $start if $rc == 0 && $out eq $expected;
		usleep(10_000);
	}
	return undef;
}

sub dispatcher_pid
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'zizq dispatcher'");
}

# Ends the dispatcher and waits until a new one has loaded budgets: it reads
# the database's settings, and plans its statements, afresh.
sub restart_dispatcher
{
	my ($node) = @_;
	my $old = dispatcher_pid($node);
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($old)");
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'zizq dispatcher' AND pid <> $old")
	  or die 'the dispatcher did not come back';
	wait_loaded($node);
}

# Nothing in the tests below may hang CI: every harness has a timeout (from
# its start), and so has the loop in which gdb holds a backend.
our $patience = 120;

# Restarts the server with the dispatcher's load of budget state held back:
# a prepared transaction (max_prepared_transactions > 0) keeps `$table`
# locked across the restart until COMMIT PREPARED 'hold'. Returns once the
# dispatcher runs.
sub restart_holding_load
{
	my ($node, $table) = @_;
	$node->safe_psql('postgres', "BEGIN; LOCK TABLE zizq.$table IN ACCESS EXCLUSIVE MODE; PREPARE TRANSACTION 'hold'");
	$node->restart;
	$node->poll_query_until('postgres', 'SELECT running FROM zizq.dispatcher_state()')
	  or die 'the dispatcher did not start';
}

# A psql session fed through IPC::Run: {h, in, out, err, pid}.
sub session
{
	my ($node, $name) = @_;
	my %s = (in => '', out => '', err => '');
	$s{h} = IPC::Run::start(
		[ $node->installed_command('psql'), '-X', '-A', '-t',
		  '-h', $node->host, '-p', $node->port, '-d', 'postgres' ],
		'<', \$s{in}, '>', \$s{out}, '2>', \$s{err}, IPC::Run::timeout($patience));
	run_until(\%s, "SET application_name = '$name'; SELECT pg_backend_pid();", "$name connected");
	($s{pid}) = $s{out} =~ /^(\d+)$/m;
	return \%s;
}

# Sends `$sql` and waits until the session has run it.
sub run_until
{
	my ($s, $sql, $marker) = @_;
	$s->{in} .= "$sql\nSELECT '$marker';\n";
	$s->{h}->pump until $s->{out} =~ /$marker/;
}

# Sends `$sql` without waiting for it.
sub send_only
{
	my ($s, $sql) = @_;
	$s->{in} .= "$sql\n";
	$s->{h}->pump_nb while length $s->{in};
}

# gdb attached to a session's backend with `$breakpoint`; returns once the
# backend runs again (it is in tracing stop, state t, while gdb holds it).
# wait_held then waits until the breakpoint is hit; release_held lets the
# backend go on.
sub hold_at
{
	my ($s, $breakpoint) = @_;
	my ($gdb) = grep { -x } map { "$_/gdb" } split /:/, $ENV{PATH};
	die 'gdb is needed (scripts/setup installs it)' unless $gdb;
	my %g = (out => '', err => '', go => "$PostgreSQL::Test::Utils::tmp_check/go_$s->{pid}");
	unlink $g{go};
	$g{h} = IPC::Run::start(
		[ $gdb, '-p', $s->{pid}, '-batch', '-nx',
		  '-ex', "break $breakpoint",
		  '-ex', 'continue',
		  '-ex', 'echo HELD\n',
		  '-ex', "shell for i in \$(seq 1500); do [ -e $g{go} ] && break; sleep 0.02; done",
		  '-ex', 'detach' ],
		'>', \$g{out}, '2>', \$g{err}, IPC::Run::timeout($patience));
	$g{h}->pump until $g{out} =~ /Breakpoint 1 at/ || !$g{h}->pumpable;
	like($g{out}, qr/Breakpoint 1 at/, "gdb has its breakpoint in the backend of session $s->{pid}") or diag($g{err});
	for (my $waited = 0; process_state($s->{pid}) eq 't'; ++$waited)
	{
		die 'gdb did not let the backend run' if $waited > 3000;
		usleep(10_000);
	}
	return \%g;
}

sub wait_held
{
	my ($g) = @_;
	$g->{h}->pump until $g->{out} =~ /HELD/ || !$g->{h}->pumpable;
	return $g->{out} =~ /HELD/;
}

sub release_held
{
	my ($g) = @_;
	open my $fh, '>', $g->{go} or die;
	close $fh;
	$g->{h}->finish;
}

sub process_state
{
	my ($pid) = @_;
	open my $stat, '<', "/proc/$pid/stat" or return '';
	my $line = <$stat>;
	return $line =~ /\) (\S)/ ? $1 : '';
}

1;
