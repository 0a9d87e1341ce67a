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
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use ZizqNode;

# The breakpoint's condition reads the first argument's register.
plan skip_all => 'the gdb breakpoint is written for x86-64' unless `uname -m` =~ /^x86_64/;

my $node = ZizqNode::start('load_race', "max_prepared_transactions = 2\n");
my $q = sub { $node->safe_psql('postgres', $_[0]) };

# Two jobs of a budget of 2 in flight under a lease (they outlive a restart).
$q->(q{SELECT zizq.define_budget('two', 2, 'while_in_flight')});
$q->(q{SELECT count(*) FROM zizq.enqueue_many('[{"queue": "r", "type": "t", "budgets": [{"key": "two"}]},
                                                {"queue": "r", "type": "t", "budgets": [{"key": "two"}]}]')});
my ($first, $second) = split /\n/, $q->(q{SELECT id FROM zizq.dequeue(ARRAY['r'], 2, lease => '1 hour') ORDER BY id});
ok($first && $second, 'two leased jobs in flight');

ZizqNode::restart_holding_load($node, 'budgets');
is($q->('SELECT budgets_loaded FROM zizq.dispatcher_state()'), 'f', 'the load waits for the lock');

# The session that completes the first job, held by gdb at zizq's commit
# callback for a commit: at its first instruction, the first argument (rdi)
# is the event, and XACT_EVENT_COMMIT is 0.
my $racer = ZizqNode::session($node, 'racer');
my $held = ZizqNode::hold_at($racer, "*'zizq::pg::(anonymous namespace)::on_xact(XactEvent, void*)' if \$rdi == 0");
ZizqNode::send_only($racer, "SELECT zizq.complete($first);");
# Its commit is visible: the job is gone (retention: none).
$node->poll_query_until('postgres', "SELECT count(*) = 0 FROM zizq._jobs WHERE id = $first")
  or die 'the complete did not commit';
ok(ZizqNode::wait_held($held), 'the racing backend is held at its commit callback');

# The load runs now; its snapshot sees the first job completed.
$q->(q{COMMIT PREPARED 'hold'});
ZizqNode::wait_loaded($node);
ZizqNode::release_held($held);
ZizqNode::run_until($racer, '', 'done');
like($racer->{out}, qr/^t$/m, 'the complete applied');
ZizqNode::send_only($racer, '\q');
$racer->{h}->finish;

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
ZizqNode::restart_holding_load($node, '_job_errors');
is($q->('SELECT budgets_loaded FROM zizq.dispatcher_state()'), 'f', 'the second load waits for the lock');
my $waiter = ZizqNode::session($node, 'waiter');
ZizqNode::send_only($waiter, "SELECT type FROM zizq.dequeue(ARRAY['wq'], 1, wait => '60 s');");
$node->poll_query_until('postgres',
	"SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE application_name = 'waiter'")
  or die 'the worker did not wait';
my $creator = ZizqNode::session($node, 'creator');
ZizqNode::run_until($creator, q{BEGIN;
SAVEPOINT s; SELECT zizq.define_budget('ghost', 1, 'while_in_flight'); ROLLBACK TO s;
SELECT zizq.define_budget('kept', 1, 'while_in_flight');}, 'created');
unlike($creator->{err}, qr/ERROR/, 'budgets created while the load waits');
$q->(q{COMMIT PREPARED 'hold'});
ZizqNode::wait_loaded($node);
ZizqNode::send_only($creator, "COMMIT;\n\\q");
$creator->{h}->finish;
is($q->(q{SELECT string_agg(key, ',' ORDER BY key) FROM zizq.budgets}), 'kept,roomy,two', 'the rolled-back budget is gone');
is($q->(q{SELECT budgets FROM zizq.dispatcher_state()}), '3', 'shared memory holds the same three budgets');
# Well before its 60 s wait ends.
for (my $deadline = time + 20; $waiter->{out} !~ /^w1$/m && time < $deadline; usleep(10_000))
{
	$waiter->{h}->pump_nb;
}
like($waiter->{out}, qr/^w1$/m, 'the waiting worker was woken by the load and took the job');
$waiter->{h}->kill_kill;

$node->stop;
done_testing();
