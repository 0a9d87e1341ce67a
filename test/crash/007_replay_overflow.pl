# While the dispatcher cannot load budgets yet, committed budget changes go to
# a replay log of fixed size. When more arrive than it holds, the dispatcher
# starts over: it resets the state, waits for every transaction that was
# writing zizq's tables, then loads from the tables. It waits holding no
# lock on them (a DDL statement or zizq.reset() in such a transaction would
# otherwise wait for the dispatcher while the dispatcher waits for it), and
# the state it loads is right.
#
# The load is held back by a prepared transaction that keeps zizq.budgets
# locked across a restart; one complete of more leased jobs than the log
# holds overflows it meanwhile.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $jobs = 16_500;  # more than the replay log's 16,384 entries
my $node = ZizqNode::start('replay_overflow', "max_prepared_transactions = 2\n");
my $q = sub { $node->safe_psql('postgres', $_[0]) };

$q->(q{SELECT zizq.define_budget('w', 20000, 'while_in_flight')});
$q->("SELECT count(*) FROM zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', 'o', 'type', 't',
        'budgets', '[{\"key\": \"w\"}]'::jsonb)) FROM generate_series(1, $jobs)))");
my $taken = 0;
$taken += $q->(q{SELECT count(*) FROM zizq.dequeue(ARRAY['o'], 1000, lease => '1 hour')}) while $taken < $jobs;
is($q->(q{SELECT in_flight_cost FROM zizq.budget_state WHERE key = 'w'}), $jobs, 'every job in flight, leased');

ZizqNode::restart_holding_load($node, 'budgets');
is($q->('SELECT budgets_loaded FROM zizq.dispatcher_state()'), 'f', 'the load waits for the lock');

# An older writer, still open when the log overflows.
my $writer = ZizqNode::session($node, 'writer');
ZizqNode::run_until($writer, q{BEGIN; SELECT count(*) FROM zizq.enqueue('other', 't');}, 'open');

# One release per job: more than the log holds.
is($q->(q{SELECT cardinality(zizq.complete(array(SELECT id FROM zizq._jobs WHERE queue = 'o')))}), '0',
	'every job completed');

$q->(q{COMMIT PREPARED 'hold'});
my $dispatcher = ZizqNode::dispatcher_pid($node);
$node->poll_query_until('postgres',
	"SELECT wait_event = 'virtualxid' FROM pg_stat_activity WHERE pid = $dispatcher")
  or die 'the dispatcher did not wait for the older writer';
is( $q->(
		"SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
		  WHERE l.pid = $dispatcher AND c.relname IN ('_jobs', 'budgets')"),
	'0',
	'the dispatcher waits holding no lock on the tables');
is($q->('SELECT budgets_loaded FROM zizq.dispatcher_state()'), 'f', 'not loaded while it waits');

# A dispatcher that ends while it waits (terminated here) waits again once
# restarted: the reset that dropped the log is behind it, the older writer
# is not.
$q->("SELECT pg_terminate_backend($dispatcher)");
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'zizq dispatcher'
	    AND pid <> $dispatcher AND wait_event = 'virtualxid'")
  or die 'the restarted dispatcher did not wait for the older writer';
is($q->('SELECT budgets_loaded FROM zizq.dispatcher_state()'), 'f', 'not loaded by the restarted dispatcher either');

ZizqNode::send_only($writer, "COMMIT;\n\\q");
$writer->{h}->finish;
ZizqNode::wait_loaded($node);
is($q->(q{SELECT in_flight_cost FROM zizq.budget_state WHERE key = 'w'}), '0',
	'loaded from the tables: nothing in flight');
$q->(q{SELECT count(*) FROM zizq.enqueue_many('[{"queue": "o", "type": "t", "budgets": [{"key": "w"}]},
                                                {"queue": "o", "type": "t", "budgets": [{"key": "w"}]}]')});
is($q->(q{SELECT count(*) FROM zizq.dequeue(ARRAY['o'], 5)}), '2', 'budgeted jobs run again');

$node->stop;
done_testing();
