# 007_segment_growth.pl — a segment whose tables start small grows as the
# publications need, and no reader sees it grow.
#
# The helper starts each table with 16 rows (--segment-rows 16).  Thirty
# sessions come in while a reader polls pg_tracer_status() and
# pg_tracer_backends every 50 ms: the backends and kernel I/O tables grow
# (the log says which, from how many rows to how many), every row is
# published (the client backends match pg_stat_activity's, nothing is
# reported dropped), and the reader never finds the helper disconnected or
# the segment empty while the new files are renamed over the old ones.
# (That each is published before its rename, a gap of microseconds a poll
# would rarely hit, test_segment_writer checks.)
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

plan skip_all => 'root helper not reachable (run through scripts/test.sh)'
  unless helper_available();

my ($node, $rt) = tracer_node('seggrow', conf => "max_connections = 60\n");
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
my $helper = start_helper($node, $rt, '--segment-rows', '16');
ok(wait_connected($node), 'the helper connects');
my $log = $node->basedir . '/helper.log';
my $seg = segment_path($node, $rt);
my $size0 = -s $seg;

# thirty sessions, each reading a file, polled as they come
my $poll = $node->background_psql('postgres');
my ($polls, $bad) = (0, 0);
sub poll
{
	my $r = $poll->query_safe(
		"SELECT helper_connected::int || ' ' || (SELECT count(*) FROM pg_tracer_backends)
		   FROM pg_tracer_status()");
	$polls++;
	$bad++ unless $r =~ /^1 [1-9]/;
	note "poll: $r" unless $r =~ /^1 [1-9]/;
}
my @sessions;
for (1 .. 30)
{
	my $s = $node->background_psql('postgres');
	$s->query_safe("SELECT length(pg_read_binary_file('postgresql.conf'))");
	push @sessions, $s;
	poll();
	usleep(50_000);
}
my $backends = "SELECT (SELECT count(*) FROM pg_tracer_backends
		 WHERE backend_type = 'client backend' AND pid <> pg_backend_pid())
	= (SELECT count(*) FROM pg_stat_activity
		 WHERE backend_type = 'client backend' AND pid <> pg_backend_pid())";
ok(defined wait_until(sub { poll(); $node->safe_psql('postgres', $backends) eq 't' }, 10),
	'every client backend is published');
ok(defined wait_until(sub {
	poll();
	slurp_file($log) =~ /segment table "backends" grown from 16 to \d+ rows/ }, 10),
	'the backends table grew, and the log says so');
like(slurp_file($log), qr/segment table "kernel io" grown from 16 to \d+ rows/,
	'so did the kernel I/O table');
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM pg_tracer_kernel_io'), '>', 16,
	'pg_tracer_kernel_io has more rows than the table had at first');
cmp_ok(-s $seg, '>', $size0, "the segment grew ($size0 -> " . (-s $seg) . ' bytes)');
unlike(slurp_file($log), qr/do not fit in the segment|cannot grow the segment/,
	'no row was dropped');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_tracer_probes WHERE reason LIKE '%not published%'"), '0',
	'no probe row reports rows left out');
cmp_ok($polls, '>=', 30, "the reader polled throughout ($polls times)");
is($bad, 0, 'it never found the helper disconnected or the segment empty');
unlike(slurp_file($node->logfile), qr/helper disconnected/,
	'the server never logged the helper disconnected');

$_->quit for (@sessions, $poll);
stop_helper($node, $helper);
$node->stop;
done_testing();
