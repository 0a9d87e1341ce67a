# A PostgreSQL::Test::Cluster with zizq preloaded and installed, for the
# TAP tests (crash tests, wake-ups). Crash restarts are on: PostgreSQL::Test::Cluster turns them
# off by default.
package ZizqNode;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

sub start
{
	my ($name, $extra_conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
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

1;
