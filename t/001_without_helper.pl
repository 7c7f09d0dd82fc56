# 001_without_helper.pl — the extension on its own.
#
# With no helper running every view must answer (empty, or one row saying
# why), status must say "not connected" with a reason, and ping must fail
# with a clear error.  Without shared_preload_libraries, every function must
# refuse with a hint saying how to preload.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;
use IO::Socket::UNIX;
use Socket qw(SOCK_STREAM);
use Time::HiRes qw(time);

my ($node, $rt) = tracer_node('no_helper');
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');

is($node->safe_psql('postgres',
		'SELECT helper_connected, segment_state FROM pg_tracer_status()'),
	'f|missing', 'status: helper not connected, no segment');
like($node->safe_psql('postgres', 'SELECT reason FROM pg_tracer_status()'),
	qr/\S/, 'status gives a reason');

is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_tracer_backends'),
	'0', 'backends view answers, empty');
is($node->safe_psql('postgres',
		"SELECT probe_set, state FROM pg_tracer_probes"),
	'helper|unavailable', 'probes view says the helper is unavailable');

my ($rc, $out, $err) = $node->psql('postgres', 'SELECT pg_tracer_ping()');
is($rc, 3, 'ping fails without a helper (an ERROR, psql exits 3)');
like($err, qr/helper/i, 'ping error names the helper');
like($err, qr/HINT:.*pg-tracer daemon/, 'ping error hints how to start it');

# The hints name the data directory only to roles that may read
# data_directory (pg_read_all_settings); the others read "$PGDATA".
my $dd = $node->data_dir;
like($err, qr/HINT:.*--pgdata \Q$dd\E/, 'a superuser is told the data directory');
$node->safe_psql('postgres', 'CREATE ROLE carol LOGIN');
for my $q ('SELECT * FROM pg_tracer_exact_budget()')
{
	($rc, $out, $err) = $node->psql('postgres', $q, extra_params => [ '-U', 'carol' ]);
	ok($err =~ /HINT:.*--pgdata \$PGDATA/ && index($err, $dd) < 0,
		"'$q' as an unprivileged role: the hint does not give the path ($err)");
}

# pg_tracer_exact_coverage: infinity is the future (NULL), -infinity all of
# time; no helper: nothing covered
is($node->safe_psql('postgres',
		"SELECT pg_tracer_exact_coverage('infinity') IS NULL,
		        pg_tracer_exact_coverage('-infinity'),
		        pg_tracer_exact_coverage(now() - interval '1 hour')"),
	't|0|0', 'exact coverage: infinity NULL, -infinity and an hour ago 0 without a helper');

# A socket that accepts and never answers (a helper hung mid-request): a
# cancel (statement_timeout) ends the call at once, not after the
# protocol's 2 s.
{
	my $sock = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Local => segment_path($node, $rt, '.sock'),
		Listen => 4) or die "cannot listen: $!";
	my $t0 = time();
	($rc, $out, $err) = $node->psql('postgres', "SET statement_timeout = '300ms'; SELECT pg_tracer_ping()");
	my $took = time() - $t0;
	like($err, qr/canceling statement due to statement timeout/, 'a hung helper: the call is cancellable');
	cmp_ok($took, '<', 1.5, sprintf('... and ends with the timeout (%.2f s)', $took));
	close $sock;
	unlink segment_path($node, $rt, '.sock');
}

# A runtime directory its group may write: anyone in the group could plant
# a segment or a socket there, so nothing in it is trusted.
chmod 0770, $rt or die "chmod $rt: $!";
($rc, $out, $err) = $node->psql('postgres', 'SELECT pg_tracer_ping()');
like($err, qr/runtime directory .* is group-writable \(mode 0770\): not trusting/i,
	'a group-writable runtime directory: ping refuses it');
like($node->safe_psql('postgres', 'SELECT reason FROM pg_tracer_status()'),
	qr/group-writable/, '... and status says why');
chmod 0700, $rt or die "chmod $rt: $!";

# The layout file the helper will need is written by the background worker.
my $layout = $node->data_dir . '/pg_tracer.layout';
ok(defined wait_until(sub { -s $layout }, 10), 'layout file written');
my $text = slurp_file($layout);
like($text, qr/^pg_tracer_layout 1$/m, 'layout: header');
like($text, qr/^pg_version_num 150\d\d\d$/m, 'layout: PG_VERSION_NUM');
like($text, qr/^wait_event 0x0a[0-9a-f]{6} IO DataFileRead$/mi, 'layout: IO event from the server');
like($text, qr/^wait_event 0x09[0-9a-f]{6} Timeout PgSleep$/mi, 'layout: Timeout event');
like($text, qr/^wait_event 0x03[0-9a-f]{6} Lock relation$/mi, 'layout: Lock event');
like($text, qr/^end$/m, 'layout: complete');
my $mode = (stat($layout))[2] & 07777;
is(sprintf('%o', $mode), '600', 'layout file is private to the cluster owner');

# Not preloaded: every function refuses with a hint.
my ($plain) = tracer_node('not_preloaded', preload => 0);
$plain->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
for my $q ('SELECT * FROM pg_tracer_status()', 'SELECT * FROM pg_tracer_backends',
	'SELECT pg_tracer_ping()', 'SELECT * FROM pg_tracer_probes')
{
	($rc, $out, $err) = $plain->psql('postgres', $q);
	is($rc, 3, "not preloaded: '$q' fails with an ERROR");
	like($err, qr/HINT:.*shared_preload_libraries/, "not preloaded: '$q' hints at preloading");
}

$plain->stop;
$node->stop;
done_testing();
