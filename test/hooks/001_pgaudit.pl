# An enqueue stores its jobs without an INSERT statement (as COPY FROM
# does), so the executor's start-up hooks do not run for it. Its permission
# check does go through ExecCheckRTPerms, whose hook security and audit
# modules use: pgaudit's object log must show every enqueue as an INSERT
# into zizq._jobs. With zizq.direct_enqueue = off, enqueues run an INSERT
# statement, and pgaudit's session log (which needs the executor's start)
# shows it too.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('pgaudit', qq{
shared_preload_libraries = 'zizq, pgaudit'
pgaudit.role = 'auditor'
pgaudit.log_level = 'log'
});
$node->safe_psql('postgres', q{
	CREATE EXTENSION pgaudit;
	CREATE ROLE auditor;
	GRANT INSERT ON zizq._jobs TO auditor;
});

# The audit lines the statement $sql adds to the server log.
sub audit_lines_of
{
	my ($sql, %opts) = @_;
	my $offset = -s $node->logfile;
	my $marker = "marker " . int(rand(1e9));
	$node->safe_psql('postgres', $sql, %opts);
	# A statement after it that always logs: once it is in the log, so is
	# everything the statement logged.
	$node->safe_psql('postgres', "DO \$\$ BEGIN RAISE LOG '$marker'; END \$\$");
	$node->wait_for_log(qr/$marker/, $offset);
	my $log = slurp_file($node->logfile, $offset);
	return join("\n", grep { /AUDIT:/ } split /\n/, $log);
}

my $one = audit_lines_of(q{SELECT zizq.enqueue('audited', 't')});
like($one, qr/AUDIT: OBJECT,\d+,\d+,WRITE,INSERT,TABLE,zizq\._jobs,"SELECT zizq\.enqueue\('audited', 't'\)"/,
	'the object log shows an enqueue as an INSERT into zizq._jobs');

my $many = audit_lines_of(
	q{SELECT count(*) FROM zizq.enqueue_many('[{"queue": "audited", "type": "a"}, {"queue": "audited", "type": "b"}]')});
like($many, qr/AUDIT: OBJECT,\d+,\d+,WRITE,INSERT,TABLE,zizq\._jobs,"SELECT count\(\*\) FROM zizq\.enqueue_many/,
	'so does it an enqueue_many');

# Session logging of writes sees INSERT statements only.
$node->safe_psql('postgres', q{ALTER SYSTEM SET pgaudit.log = 'write'; SELECT pg_reload_conf()});
$node->poll_query_until('postgres', q{SELECT current_setting('pgaudit.log') = 'write'})
  or die 'pgaudit.log was not reloaded';
my $statement = audit_lines_of(q{SET zizq.direct_enqueue = off; SELECT zizq.enqueue('audited', 't')});
like($statement, qr/AUDIT: SESSION,\d+,\d+,WRITE,INSERT,,,"INSERT INTO zizq\._jobs/,
	'with zizq.direct_enqueue off, the session log shows the INSERT statement');
like($statement, qr/AUDIT: OBJECT,\d+,\d+,WRITE,INSERT,TABLE,zizq\._jobs/, 'and the object log still does');

is($node->safe_psql('postgres', q{SELECT count(*) FROM zizq.jobs WHERE queue = 'audited'}),
	'4', 'every audited enqueue stored its jobs');

$node->stop;
done_testing();
