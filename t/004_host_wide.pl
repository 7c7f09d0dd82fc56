# 004_host_wide.pl — the helper without --pgdata, as its systemd unit runs
# it: it serves every postmaster of the host.
#
# Two clusters running before the helper starts are attached.  A third,
# started later, is found within a second: the helper scans /proc once, and
# then looks only at the processes that exec a postgres binary (noted by a
# BPF program on sched_process_exec), so with 300 more processes on the
# host it makes far fewer than 300 read calls in 3 s (a scan reads each
# process's /proc/<pid>/stat), while the first cluster has a dozen sessions
# open.  A restarted cluster is attached to its new postmaster; a stopped
# one is let go, and the others stay served.  pg_tracer_reset() in one
# cluster leaves the other's kernel rows.  With exec notes lost
# (--miss-events 1), the helper says so, scans /proc, and still finds a
# cluster that starts.  A cluster stopped for --forget-after seconds is
# dropped, with its segment and lock file; started again, it is served.
# The kernel's own rows stay when another cluster resets; --max-clusters
# caps what a host-wide helper serves.  Escalation windows are one for the
# host, and each cluster has a share of them.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use POSIX ();
use Test::More;

plan skip_all => 'root helper not reachable (run through scripts/test.sh)'
  unless helper_available();

# one runtime directory for every cluster: a host-wide helper writes there
my ($node_a, $rt) = tracer_node('host_a');
my ($node_b) = tracer_node('host_b', conf => "pg_tracer.runtime_dir = '$rt'\n");
$_->safe_psql('postgres', 'CREATE EXTENSION pg_tracer') for ($node_a, $node_b);

sub served_pm
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT helper_connected AND postmaster_pid = $node->{_pid} FROM pg_tracer_status()")
	  eq 't';
}

# a session of $node shows in its own pg_tracer_backends
sub session_tracked
{
	my ($node, $bg) = @_;
	my $pid = $bg->query_safe('SELECT pg_backend_pid()');
	return defined wait_until(sub {
		$node->safe_psql('postgres', "SELECT count(*) FROM pg_tracer_backends WHERE pid = $pid")
		  eq '1' }, 5);
}

# Postmasters of this host that are not the test's (Debian's own "main",
# which installing postgresql starts): the helper serves them too, so the
# checks that count on the test's clusters being the only ones are skipped
# while one runs, with its pid named.
sub comm_ppid
{
	my ($pid) = @_;
	my $stat = eval { slurp_file("/proc/$pid/stat") } // return;
	return $stat =~ /^\d+ \((.*)\) (\S) (\d+)/s ? ($1, $3, $2) : ();
}
# (the test's postmasters, running or just stopped, are named by their pids)
sub foreign_postmasters
{
	my %ours = map { $_ => 1 } @_;
	my @found;
	opendir(my $d, '/proc') or return;
	for my $pid (grep { /^\d+$/ } readdir($d))
	{
		my ($comm, $ppid, $state) = comm_ppid($pid);
		next unless defined $comm && $comm eq 'postgres' && !$ours{$pid} && $state !~ /[ZX]/;
		my ($pcomm) = comm_ppid($ppid);
		push @found, $pid unless defined $pcomm && $pcomm eq 'postgres';
	}
	closedir($d);
	return @found;
}

my $log = "$PostgreSQL::Test::Utils::log_path/004_helper_host.log";    # kept after the run
my $helper = start_host_helper($rt, $log);
ok(defined wait_until(sub { served_pm($node_a) && served_pm($node_b) }, 20),
	'both clusters running before the helper are served');
like(slurp_file($log), qr/discovery: \/proc is scanned once; then only the processes that exec/,
	'the helper finds new postmasters from exec notes');

# pg_tracer_reset() empties the probe sets' rows of its own cluster only:
# a live session's (kept in its task storage) and those of the many
# short-lived readers above (in the shared maps since they exited)
my @bgs = map { $_->background_psql('postgres') } ($node_a, $node_b);
my @pids = map { $_->query_safe('SELECT pg_backend_pid()') } @bgs;
$_->query_safe("SELECT length(pg_read_binary_file('postgresql.conf'))") for @bgs;
sub io_calls
{
	my ($node, $which) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce(sum(calls), 0) FROM pg_tracer_kernel_io WHERE $which");
}
ok(defined wait_until(sub {
	io_calls($node_a, "pid = $pids[0]") > 0 && io_calls($node_b, "pid = $pids[1]") > 0 }, 10),
	'sessions of both clusters have kernel-io rows');
# the readers' rows: their pids for --keep-exited, then pid NULL
my $b_readers = "pid IS DISTINCT FROM $pids[1] AND pid IS DISTINCT FROM 0";
my $b_session = io_calls($node_b, "pid = $pids[1]");
my $b_others = io_calls($node_b, $b_readers);
cmp_ok($b_others, '>', 0, "the other cluster's exited readers have rows ($b_others calls)");
# the kernel's own rows (pid 0: writeback by kernel threads) are every
# cluster's: with two served, a's reset must leave them to b
$node_b->safe_psql('postgres', 'CREATE TABLE wb AS SELECT g FROM generate_series(1, 200000) g');
system('sync');
ok(defined wait_until(sub { io_calls($node_b, 'pid = 0') > 0 }, 10),
	"the kernel's own writeback shows in b");
my $b_kernel = io_calls($node_b, 'pid = 0');
$node_a->safe_psql('postgres', 'SELECT pg_tracer_reset()');
is(io_calls($node_a, "pid = $pids[0]"), '0',
	"pg_tracer_reset() on one cluster empties its session's rows");
# the reset returns once its own cluster's copy is published, not b's
wait_kernel_copy($node_b);
cmp_ok(io_calls($node_b, "pid = $pids[1]"), '>=', $b_session,
	"the other cluster's session keeps its rows ($b_session calls)");
cmp_ok(io_calls($node_b, $b_readers), '>=', $b_others,
	"and so do its exited readers ($b_others calls)");
cmp_ok(io_calls($node_b, 'pid = 0'), '>=', $b_kernel,
	"and the kernel's own rows stay ($b_kernel calls)");
$_->quit for @bgs;

# Escalation windows: one at a time for the host (the probes are
# host-wide), but a cluster cannot close or shorten another's, and sees it
# without who asked or why.
is($node_a->safe_psql('postgres', 'SELECT granted_s FROM pg_tracer_escalate(30)'), '30',
	'cluster a opens a 30 s window');
is($node_b->safe_psql('postgres', 'SELECT pg_tracer_deescalate()'), 'f',
	"cluster b's de-escalation does not close a's window");
$node_b->safe_psql('postgres', 'SELECT pg_tracer_escalate(1)');
sleep(1.5);
my $open = "SELECT reason || '|' || coalesce(requested_by, '') FROM pg_tracer_escalations
	WHERE end_time IS NULL";
is($node_b->safe_psql('postgres', $open), 'other cluster|',
	"b sees a's window, still open after b asked for 1 s, without who or why");
like($node_a->safe_psql('postgres', $open), qr/^manual\|\S+$/, 'a sees its own with both');
is($node_a->safe_psql('postgres', 'SELECT pg_tracer_deescalate()'), 't', 'a closes its window');

# With two clusters each may open a third of the 64 windows of an hour:
# a cannot lock b out by opening many short ones.  a has one claim above,
# b one; a's 21st claim is its last.
my ($granted, $err) = (0, '');
for (1 .. 25)
{
	my ($rc, $out, $stderr) = $node_a->psql('postgres',
		'SELECT pg_tracer_escalate(1); SELECT pg_tracer_deescalate()');
	if ($rc != 0) { $err = $stderr; last; }
	$granted++;
}
is($granted, 20, 'cluster a makes 21 claims in the hour, then is refused');
like($err, qr/too many windows opened in the last hour.*for each of 2 clusters/s,
	'the refusal names the share of the windows');
is($node_b->safe_psql('postgres', 'SELECT granted_s FROM pg_tracer_escalate(2)'), '2',
	'cluster b still opens a window');
$node_b->safe_psql('postgres', 'SELECT pg_tracer_deescalate()');

# 300 processes that are not PostgreSQL's: a scan of /proc each second
# would read each one's stat file three times in 3 s.  The helper's own
# reads in 3 s without them first: each second it reads the status of each
# process whose memory it reads (each cluster's postmaster: the anomaly
# rules' sample, the status arrays), and a backend's cmdline every 10 s, so
# its reads follow the clusters and the backends, not the host.
sleep(1);
my $base0 = helper_read_calls($helper);
sleep(3);
my $base = helper_read_calls($helper) - $base0;
my @sleepers;
for (1 .. 300)
{
	my $pid = fork() // die "fork: $!";
	if ($pid == 0) { exec('sleep', '60') or POSIX::_exit(1); }
	push @sleepers, $pid;
}
sleep(1);
my $reads0 = helper_read_calls($helper);
sleep(3);
my $reads = helper_read_calls($helper) - $reads0;
kill 'TERM', @sleepers;
waitpid($_, 0) for @sleepers;
cmp_ok($reads - $base, '<', 300,
	"with 300 more processes, the helper made $reads read calls in 3 s ($base without them)");

my @sessions = map { $node_a->background_psql('postgres') } 1 .. 12;
ok(session_tracked($node_a, $sessions[11]), 'a session of the first cluster is tracked');

my ($node_c) = tracer_node('host_c', conf => "pg_tracer.runtime_dir = '$rt'\n");
$node_c->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
ok(defined wait_until(sub { served_pm($node_c) }, 10),
	'a cluster started after the helper is found by the next scan');
my $bg_c = $node_c->background_psql('postgres');
ok(session_tracked($node_c, $bg_c), 'its sessions are tracked');
$bg_c->quit;
ok(session_tracked($node_a, $sessions[0]), 'the first cluster stays served');
$_->quit for @sessions;

$node_a->restart;
ok(defined wait_until(sub { served_pm($node_a) }, 20),
	'a restarted cluster is attached to its new postmaster');
my $bg_a = $node_a->background_psql('postgres');
ok(session_tracked($node_a, $bg_a), 'and its new sessions are tracked');
$bg_a->quit;

my $pm_b = $node_b->{_pid};
$node_b->stop;
ok(defined wait_until(sub { slurp_file($log) =~ /: detached from postmaster $pm_b \(postmaster exited\)/ }, 10),
	'a stopped cluster is let go');
ok(served_pm($node_a) && served_pm($node_c), 'the others stay served');
unlike(slurp_file($log), qr/ error: /, 'the helper logged no error');
stop_helper($node_a, $helper);

# every exec note lost: the helper must notice and scan /proc instead
$helper = start_host_helper($rt, $log, '--miss-events', '1', '--forget-after', '3');
ok(defined wait_until(sub { served_pm($node_a) && served_pm($node_c) }, 20),
	'a helper losing its exec notes serves the running clusters');
$node_b->start;
ok(defined wait_until(sub { served_pm($node_b) }, 10),
	'and finds a cluster started meanwhile');
like(slurp_file($log), qr/discovery: exec notes were lost .*: scanning \/proc/,
	'saying that it scanned /proc for the lost notes');

# Once no cluster runs a binary any more, its engine probes are detached
# (ten seconds on: a restart keeps them); a cluster started on it again
# gets them back.
my $log_len = length(slurp_file($log));
my @stopped = map { $_->{_pid} } ($node_a, $node_b, $node_c);
$_->stop for ($node_a, $node_b, $node_c);
SKIP:
{
	my @others = foreign_postmasters(@stopped);
	skip "other postmasters run on this host (@others): the binary stays in use", 1 if @others;
	ok(defined wait_until(sub {
		substr(slurp_file($log), $log_len) =~ /engine: \S+ runs no served postmaster: detached/ }, 30),
		'the engine probes of a binary no cluster runs are detached');
}

# --forget-after 3: a cluster whose postmaster is gone that long is dropped,
# its segment, socket and lock file removed
sub cluster_files
{
	my ($node) = @_;
	my ($dev, $ino) = (stat($node->data_dir))[ 0, 1 ];
	my $base = sprintf('%s/pgt-%x-%x', $rt, $dev, $ino);
	return grep { -e $_ } map { "$base$_" } ('.seg', '.lock', '.sock');
}
ok(defined wait_until(sub { !cluster_files($node_a) && !cluster_files($node_b) && !cluster_files($node_c) }, 15),
	'the segments and lock files of clusters gone for 3 s are removed')
  or diag(join(' ', cluster_files($node_a), cluster_files($node_b), cluster_files($node_c)));
like(substr(slurp_file($log), $log_len), qr/postmaster gone for 3 s, forgetting it and its segment/,
	'the helper says it forgot them');
$node_a->start;
ok(defined wait_until(sub {
	served_pm($node_a) && $node_a->safe_psql('postgres',
		"SELECT state || ' ' || mechanism FROM pg_tracer_probes WHERE probe_set = 'pg-locks'")
	  eq 'available usdt+uprobe' }, 20),
	'a cluster started on it again has them back');
is(scalar(grep { /\.(seg|lock)$/ } cluster_files($node_a)), 2,
	'a forgotten cluster started again has a segment and a lock file again');
unlike(slurp_file($log), qr/ error: /, 'the helper logged no error');

signal_helper($helper, 'TERM');

# --max-clusters 1: of two running clusters one is served, the other not,
# with a warning that names the limit
$node_b->start;
SKIP:
{
	my @others = foreign_postmasters($node_a->{_pid}, $node_b->{_pid});
	skip "other postmasters run on this host (@others): the one served may be theirs", 4 if @others;
	$log_len = length(slurp_file($log));
	$helper = start_host_helper($rt, $log, '--max-clusters', '1');
	ok(defined wait_until(sub { served_pm($node_a) || served_pm($node_b) }, 20),
		'with --max-clusters 1 a cluster is served');
	ok(defined wait_until(sub {
		substr(slurp_file($log), $log_len) =~ /not serving \S+: 1 clusters are served already \(--max-clusters\)/ }, 10),
		'the other is not, and the helper says why');
	ok(!(served_pm($node_a) && served_pm($node_b)), 'only one of the two is served');
	# the skipped cluster's record goes with its postmaster: restarted, it is
	# a new one, warned about again
	my $skipped = served_pm($node_a) ? $node_b : $node_a;
	$log_len = length(slurp_file($log));
	$skipped->restart;
	ok(defined wait_until(sub {
		substr(slurp_file($log), $log_len) =~ /not serving \S+: 1 clusters are served already/ }, 10),
		'a skipped cluster restarted is noted again');
	signal_helper($helper, 'TERM');
}
$_->stop for ($node_a, $node_b);
done_testing();
