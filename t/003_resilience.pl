# 003_resilience.pl — nothing the helper does or fails to do may hurt
# PostgreSQL.
#
# SIGKILL the helper while pgbench runs: no client error, no crash recovery
# (postmaster start time unchanged), status says disconnected.  Restart it:
# it reconnects with a new generation.  Restart PostgreSQL: the helper
# re-attaches to the new postmaster.  Replace the segment with a truncated,
# zeroed, random or other-version file: status reports it, no backend dies.
# The background worker, which reads only the header, logs the damage too.
# A --pgdata path moved to another cluster (a symlink, after pg_upgrade) is
# followed: the same helper serves the new cluster.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes ();

plan skip_all => 'root helper not reachable (run through scripts/test.sh)'
  unless helper_available();

my ($node, $rt) = tracer_node('resilience');
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
my $start_time = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

sub connected
{
	return $node->safe_psql('postgres', 'SELECT helper_connected FROM pg_tracer_status()') eq 't';
}

sub generation
{
	return $node->safe_psql('postgres', 'SELECT segment_generation FROM pg_tracer_status()');
}

my $helper = start_helper($node, $rt);
ok(defined wait_until(\&connected, 15), 'helper connected');
my $gen1 = generation();

# --- SIGKILL while pgbench runs
$node->command_ok([ 'pgbench', '-i', '-s', '2', '-q', '-p', $node->port, '-h', $node->host, 'postgres' ],
	'pgbench init');
my ($bout, $berr) = ('', '');
my $bench = IPC::Run::start(
	[ 'pgbench', '-c', '4', '-T', '8', '-p', $node->port, '-h', $node->host, 'postgres' ],
	'>', \$bout, '2>', \$berr);
sleep 2;
signal_helper($helper, 'KILL');
$bench->finish;
is(harness_exit($bench), 0, 'pgbench survives the helper being killed');
unlike($berr, qr/error|abort/i, 'pgbench reports no client error');
like($bout, qr/actually processed: [1-9]\d*/, 'pgbench completed transactions');
like($bout, qr/number of failed transactions: 0 /, '... and none failed');
is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'), $start_time,
	'postmaster start time unchanged: no crash recovery');
ok(defined wait_until(sub { !connected() }, 10), 'status says disconnected after SIGKILL');
like($node->safe_psql('postgres', 'SELECT segment_state || \': \' || reason FROM pg_tracer_status()'),
	qr/stale|gone|not running|exited/i, 'and why');

# --- restart the helper: it reconnects with a new generation
$helper = start_helper($node, $rt);
ok(defined wait_until(\&connected, 15), 'restarted helper reconnects');
cmp_ok(generation(), '>', $gen1, 'generation increased');
is($node->safe_psql('postgres', 'SELECT helper_pid FROM pg_tracer_status()'), $helper,
	'status shows the new helper pid');

# --- restart PostgreSQL: the helper re-attaches to the new postmaster
my $gen2 = generation();
$node->restart;
# Before the helper attaches the new postmaster (its discovery ticks once a
# second), the changing requests get their own answers: no window to
# close, nothing to empty.  Before, each was refused as from a stranger
# ("not a process of this cluster"), a privilege error.
my ($rc_d, $out_d, $err_d) = $node->psql('postgres',
	"SELECT pg_tracer_deescalate() || '|' || pg_tracer_reset()");
is($out_d, 'false|true', 'just after a restart: deescalate false, reset true')
  or diag($err_d);
unlike($err_d, qr/refused|WARNING/, '... with no refusal or warning');
ok(defined wait_until(sub {
	connected() && $node->safe_psql('postgres', 'SELECT postmaster_pid FROM pg_tracer_status()') eq $node->{_pid}
}, 20), 'helper re-attaches after a PostgreSQL restart');
cmp_ok(generation(), '>', $gen2, 'new generation after the restart');
my $bg = $node->background_psql('postgres');
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
ok(defined wait_until(sub {
	$node->safe_psql('postgres', "SELECT count(*) FROM pg_tracer_backends WHERE pid = $pid") eq '1'
}, 5), 'backends of the new postmaster are tracked');
$bg->quit;
$start_time = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

# --- a helper that does not answer: pg_tracer_reset() says so and returns
# false (before: true, silently, while the helper's rows kept their totals);
# the requests it gave up on are dropped when the helper wakes, not done
signal_helper($helper, 'STOP');
my ($rc_r, $out_r, $err_r) = $node->psql('postgres', 'SELECT pg_tracer_reset()');
signal_helper($helper, 'CONT');
is($out_r, 'f', 'reset with a stopped helper: false');
like($err_r, qr/WARNING:.*the helper did not reset/s,
	'... and a warning says what the helper did not reset');
ok(defined wait_until(sub { slurp_file($node->basedir . '/helper.log') =~ /PROBERESET" from pid \d+ dropped: the client closed/ }, 5),
	'the helper drops the requests whose client gave up');

# --- foreign segments: stop the helper, then plant damaged files
signal_helper($helper, 'TERM');
ok(defined wait_until(sub { !connected() }, 10), 'helper stopped');
my $seg = segment_path($node, $rt, '.seg');
my $good = slurp_file($seg);
my $log_offset = -s $node->logfile;

sub plant
{
	my ($bytes) = @_;
	my $tmp = "$seg.test";
	open my $fh, '>:raw', $tmp or die "$tmp: $!";
	print $fh $bytes;
	close $fh;
	rename $tmp, $seg or die "rename: $!";
}

my $ver2 = $good;
substr($ver2, 8, 4) = pack('V', 2);    # layout_version
my $big_count = $good;
# first section descriptor: header offset 224+32+256 = 512; count at +20
substr($big_count, 512 + 20, 4) = pack('V', 0xffffffff);
srand(42);
my %cases = (
	'truncated' => [ substr($good, 0, 700), qr/truncated/ ],
	'zeroed' => [ "\0" x length($good), qr/bad magic/ ],
	'random bytes' => [ join('', map { chr(int(rand(256))) } 1 .. length($good)), qr/bad magic/ ],
	'other layout version' => [ $ver2, qr/other layout version/ ],
	'impossible count' => [ $big_count, qr/corrupt/ ],
	'empty' => [ '', qr/truncated/ ],);
for my $case (sort keys %cases)
{
	my ($bytes, $expect) = @{ $cases{$case} };
	plant($bytes);
	my $row = $node->safe_psql('postgres',
		'SELECT helper_connected, segment_state FROM pg_tracer_status()');
	like($row, qr/^f\|/, "$case segment: not connected");
	like($row, $expect, "$case segment: reported as such");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_tracer_backends'), '0',
		"$case segment: backends view answers, empty");
	is($node->safe_psql('postgres', "SELECT state FROM pg_tracer_probes WHERE probe_set = 'helper'"),
		'unavailable', "$case segment: probes view answers, the helper unavailable");
}
# A writer stopped inside an update (seq odd): "stale", after a few more
# tries spread over a fifth of a second (a helper the host deschedules
# mid-publication must not read as gone), not a long wait at every call.
{
	my $odd = $good;
	substr($odd, 32, 8) = pack('Q<', 1001);
	plant($odd);
	my $t0 = Time::HiRes::time();
	my $row = $node->safe_psql('postgres', 'SELECT helper_connected, segment_state FROM pg_tracer_status()');
	my $took = Time::HiRes::time() - $t0;
	is($row, 'f|stale', 'a segment left mid-update: stale');
	ok($took > 0.15 && $took < 1.5, sprintf('... after tries spread over %.2f s', $took));
	# once the worker (every 250 ms) has found it so, calls answer at once:
	# a function a view calls per row must not wait a quarter of a second
	# each time (ten calls took 2.5 s before)
	sleep 1;
	$t0 = Time::HiRes::time();
	is($node->safe_psql('postgres', "SELECT count(*) FROM generate_series(1, 10) g
		WHERE pg_tracer_exact_coverage(now() - g * interval '1 min') = 0"), '10',
		'ten calls on it: no coverage');
	$took = Time::HiRes::time() - $t0;
	ok($took < 0.5, sprintf('... and no waits: %.2f s for the ten', $took));
}
sleep 1;    # let the background worker import the last one too
is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'), $start_time,
	'no backend crashed on any damaged segment');
ok(!$node->log_contains('terminated by signal', $log_offset), 'server log shows no crashed process');

# A helper started over the damaged file replaces it cleanly.
$helper = start_helper($node, $rt);
ok(defined wait_until(\&connected, 15), 'a new helper recovers from a damaged segment');

# --- the background worker judges the segment four times a second from its
# header alone: it must still see a file cut inside its tables and a table
# that would end past the file, and log each transition.
sub logged
{
	my ($re, $offset) = @_;
	return defined wait_until(sub { $node->log_contains($re, $offset) }, 10);
}
ok(logged(qr/pg_tracer: helper connected \(pid $helper,/, $log_offset),
	'the worker logs the connection');
$log_offset = -s $node->logfile;
plant(substr(slurp_file($seg), 0, 2048));
ok(logged(qr/pg_tracer: helper disconnected: truncated: segment is 2048 bytes/, $log_offset),
	'the worker finds a segment cut inside its tables');
stop_helper($node, $helper);
$helper = start_helper($node, $rt);
ok(logged(qr/pg_tracer: helper connected \(pid $helper,/, $log_offset),
	'the worker logs the reconnection');
my $past_end = slurp_file($seg);
substr($past_end, 512 + 8, 8) = pack('Q<', length($past_end));    # first table's offset
substr($past_end, 32, 8) = pack('Q<', 2);    # seq even, as between two updates
plant($past_end);
ok(logged(qr/pg_tracer: helper disconnected: corrupt: /, $log_offset),
	'the worker finds a table that would end past the file');
signal_helper($helper, 'TERM');
ok(defined wait_until(sub { !connected() }, 10), 'helper stopped again');

# --- --pgdata through a symlink that is moved to another cluster while the
# first is down (pg_upgrade's last step; a restore renamed into place is the
# same to the helper): the helper follows the path, not the old directory
my $node2 = PostgreSQL::Test::Cluster->new('resilience_new');
$node2->init;
$node2->append_conf('postgresql.conf',
	"shared_preload_libraries = 'pg_tracer'\npg_tracer.runtime_dir = '$rt'\n");
my $link = $node->basedir . '/current';
symlink($node->data_dir, $link) or die "symlink: $!";
my $link_log = $node->basedir . '/helper_link.log';
$helper = start_host_helper($rt, $link_log, '--pgdata', $link);    # the path, as a unit names it
ok(defined wait_until(\&connected, 15), 'a helper given a symlink serves the cluster it names');
my $old_seg = segment_path($node, $rt, '.seg');
$node->stop;
unlink($link) or die "unlink: $!";
symlink($node2->data_dir, $link) or die "symlink: $!";
$node2->start;
$node2->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
ok(defined wait_until(sub {
	$node2->safe_psql('postgres', 'SELECT helper_connected, helper_pid FROM pg_tracer_status()')
	  eq "t|$helper"
}, 15), 'the same helper serves the new cluster the symlink names');
ok(!-e $old_seg, "the old directory's segment is gone");
ok(-e segment_path($node2, $rt, '.seg'), "the new directory's segment is built");
like(slurp_file($link_log), qr/--pgdata \Q$link\E names another data directory now \(\Q@{[$node2->data_dir]}\E/,
	'the helper logs the move');
$bg = $node2->background_psql('postgres');
$pid = $bg->query_safe('SELECT pg_backend_pid()');
ok(defined wait_until(sub {
	$node2->safe_psql('postgres', "SELECT count(*) FROM pg_tracer_backends WHERE pid = $pid") eq '1'
}, 5), "the new cluster's backends are tracked");
$bg->quit;
signal_helper($helper, 'TERM');
$node2->stop;
done_testing();
