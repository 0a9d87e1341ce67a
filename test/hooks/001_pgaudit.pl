# An enqueue stores its jobs without an INSERT statement (as COPY FROM
# does): no executor runs for it, so executor hooks (pgaudit,
# pg_stat_statements, auto_explain) do not see it, and zizq calls none of
# them from there. A hook called outside a statement of its own misleads
# its module: pgaudit's ExecutorCheckPerms_hook, called by an earlier build
# from the direct path, wrote the insert into the record of the caller's
# statement and, on the next enqueue of that statement, logged a freed
# object name. With zizq.direct_enqueue = off, enqueues run an INSERT
# statement, and pgaudit's session and object logs show each one.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $libdir = `pg_config --pkglibdir`;
chomp $libdir;
plan skip_all => 'pgaudit is not installed (apt-get install postgresql-15-pgaudit)'
  unless -e "$libdir/pgaudit.so";

my $node = ZizqNode::start('pgaudit', qq{
shared_preload_libraries = 'zizq, pgaudit'
pgaudit.log = 'write'
pgaudit.log_level = 'log'
});
$node->safe_psql('postgres', q{
	CREATE EXTENSION pgaudit;
	CREATE ROLE auditor;
	GRANT INSERT ON zizq._jobs TO auditor;
});

# The audit lines of the server log that $sql adds.
sub audit_lines_of
{
	my ($sql) = @_;
	my $offset = -s $node->logfile;
	my $marker = "marker " . int(rand(1e9));
	$node->safe_psql('postgres', $sql);
	# A statement after it that always logs: once it is in the log, so is
	# everything the statement logged.
	$node->safe_psql('postgres', "DO \$\$ BEGIN RAISE LOG '$marker'; END \$\$");
	$node->wait_for_log(qr/$marker/, $offset);
	my $log = slurp_file($node->logfile, $offset);
	return grep { /AUDIT:/ } split /\n/, $log;
}

# Two enqueues in one statement, each of one job and of two.
my $twice = q{SELECT count(*) FROM generate_series(1, 2) i,
	LATERAL (SELECT zizq.enqueue('audited', 'one-' || i)) a,
	LATERAL (SELECT zizq.enqueue_many(jsonb_build_array(jsonb_build_object('queue', 'audited', 'type', 'a-' || i),
		jsonb_build_object('queue', 'audited', 'type', 'b-' || i)))) m};

my @direct = audit_lines_of($twice);
is(scalar(@direct), 0, 'the direct path calls no executor hook') or diag join("\n", @direct);

# Object logging too, for the statement.
$node->safe_psql('postgres', q{ALTER SYSTEM SET pgaudit.role = 'auditor'; SELECT pg_reload_conf()});
$node->poll_query_until('postgres', q{SELECT current_setting('pgaudit.role') = 'auditor'})
  or die 'pgaudit.role was not reloaded';

my @statement = audit_lines_of("SET zizq.direct_enqueue = off; $twice");
is(scalar(grep { /AUDIT: SESSION,\d+,\d+,WRITE,INSERT,,,"INSERT INTO zizq\._jobs/ } @statement),
	4, 'with zizq.direct_enqueue off, the session log shows the INSERT of each enqueue')
  or diag join("\n", @statement);
is(scalar(grep { /AUDIT: OBJECT,\d+,\d+,WRITE,INSERT,TABLE,zizq\._jobs,"INSERT INTO zizq\._jobs/ } @statement),
	4, 'and so does the object log');

is($node->safe_psql('postgres', q{SELECT count(*) FROM zizq.jobs WHERE queue = 'audited'}),
	'12', 'every enqueue stored its jobs');

# A hand-off's take (job_take.cpp) runs no UPDATE statement either, unless
# zizq.direct_take is off. One token, three jobs: the first runs, a look
# parks the others, and each complete makes the next one the line's offer
# (leased: each psql call is a session of its own, and the jobs of ended
# sessions go back to ready).
$node->safe_psql('postgres', q{
	SELECT zizq.define_budget('audited-one', 1, 'while_in_flight');
	SELECT zizq.enqueue_many((SELECT jsonb_agg(jsonb_build_object('queue', 'handed', 'type', 't' || i,
		'budgets', jsonb_build_array(jsonb_build_object('key', 'audited-one')))) FROM generate_series(1, 3) i));
});
my $first = $node->safe_psql('postgres', q{SELECT id FROM zizq.dequeue(ARRAY['handed'], lease => '1 hour')});
$node->safe_psql('postgres', q{SELECT count(*) FROM zizq.dequeue(ARRAY['handed'], lease => '1 hour')});

sub offer_after
{
	my ($done) = @_;
	$node->poll_query_until('postgres', "SELECT parked FROM zizq._jobs WHERE id = $done + 1")
	  or die "job $done + 1 was not parked";
	$node->safe_psql('postgres', "SELECT zizq.complete($done)");
	$node->poll_query_until('postgres', "SELECT zizq._offered($done + 1)")
	  or die "job $done + 1 was not offered";
}

my $take = q{SELECT zizq._direct_takes() AS before \gset
	SELECT id FROM zizq.dequeue(ARRAY['handed'], lease => '1 hour');
	SELECT format('DO $d$ BEGIN RAISE LOG %L; END $d$', 'direct takes: ' || zizq._direct_takes() - :before) \gexec};
offer_after($first);
my @take = audit_lines_of($take);
is(scalar(grep { /UPDATE zizq\._jobs/ } @take), 0, 'a direct take calls no executor hook')
  or diag join("\n", @take);
offer_after($first + 1);
@take = audit_lines_of("SET zizq.direct_take = off;\n$take");
is(scalar(grep { /AUDIT: SESSION,\d+,\d+,WRITE,UPDATE,,,"UPDATE zizq\._jobs/ } @take),
	1, "with zizq.direct_take off, the session log shows the take's UPDATE")
  or diag join("\n", @take);
like(slurp_file($node->logfile), qr/direct takes: 1.*direct takes: 0/s, 'the first take was direct, the second not');

$node->stop;
done_testing();
