# The dispatcher runs its statements with a fixed search_path.
#
# It runs as the bootstrap superuser. It took the database's search_path
# ("$user", public), and its statements (and the internal SQL functions they
# call) use polymorphic functions such as array_agg(anynonarray): an
# aggregate array_agg(bigint) in public is an exact match and wins over
# pg_catalog's. A role allowed to create objects in public (the owner of a
# database created by a non-superuser, or anyone where public is writable)
# could so run code as superuser, triggered by nothing more than a lease
# running out (a helper's security audit made itself superuser that way).
# Here a trojan in public records who called it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use ZizqNode;

my $node = ZizqNode::start('search_path');
$node->safe_psql('postgres', q{
	CREATE TABLE public.trojan_calls (who text, superuser text);
	GRANT INSERT ON public.trojan_calls TO PUBLIC;
	CREATE FUNCTION public.trojan_step(bigint[], bigint) RETURNS bigint[] LANGUAGE plpgsql AS $$
	BEGIN
	  INSERT INTO public.trojan_calls VALUES (current_user, current_setting('is_superuser'));
	  RETURN pg_catalog.array_append($1, $2);
	END $$;
	CREATE AGGREGATE public.array_agg(bigint) (sfunc = public.trojan_step, stype = bigint[]);
	CREATE FUNCTION public.cardinality(bigint[]) RETURNS int LANGUAGE plpgsql AS $$
	BEGIN
	  INSERT INTO public.trojan_calls VALUES (current_user, current_setting('is_superuser'));
	  RETURN pg_catalog.cardinality($1);
	END $$;
});
# A dispatcher started after the trojan: plans made before it stay cached.
ZizqNode::restart_dispatcher($node);

# A lease that runs out, and a session that ends holding a job: both are
# requeued by the dispatcher's statements.
$node->safe_psql('postgres', q{SELECT zizq.enqueue('q', 't'); SELECT zizq.enqueue('q', 't')});
$node->safe_psql('postgres', q{SELECT id FROM zizq.dequeue(ARRAY['q'], 1, '0', '100 milliseconds')});
$node->safe_psql('postgres', q{SELECT id FROM zizq.dequeue(ARRAY['q'])});
ok($node->poll_query_until('postgres', q{SELECT count(*) FROM zizq.jobs WHERE status = 'ready'}, '2'),
	'the expired lease and the ended session gave their jobs back');
is($node->safe_psql('postgres', 'SELECT count(*) FROM public.trojan_calls'), '0',
	'no function the dispatcher called came from public');

$node->stop;
done_testing();
