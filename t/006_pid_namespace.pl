# 006_pid_namespace.pl — a cluster in a pid namespace of its own, as in a
# container: the helper runs outside it, PostgreSQL knows its processes by
# other pids than the helper does.
#
# The postmaster runs under `unshare --user --pid` (no privilege needed
# where unprivileged user namespaces are allowed; skipped elsewhere).
# Checked, with pg_backend_pid() as ground truth for the pid PostgreSQL
# knows and /proc's NSpid for the host's:
# - a backend's kernel rows carry the pid pg_stat_activity shows, not its
#   host pid;
# - after it exits, its rows stay under that pid for --keep-exited (they
#   were published under its host pid before, which in another pid
#   namespace may be a live backend's of another role: a leak), and
#   nothing is ever shown under its host pid;
# - `trace --pid` of a backend (by its host pid) follows its parallel
#   workers, whose titles name their leader by the namespace's pid;
# - an escalation window the cluster opens is its own: it sees who asked
#   and why, and closes it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run ();
use JSON::PP ();
use Time::HiRes qw(usleep);

plan skip_all => 'root helper not reachable (run through scripts/test.sh)'
  unless helper_available();
plan skip_all => 'unshare cannot make a user and pid namespace here'
  unless system('unshare --user --map-current-user --pid --fork true >/dev/null 2>&1') == 0;

my ($node, $rt) = tracer_node('pidns', no_start => 1, conf => "compute_query_id = on\n");

# postgres as the namespace's first process; its log to the node's log file
my $pg = IPC::Run::start(
	[ 'unshare', '--user', '--map-current-user', '--pid', '--fork', '--kill-child',
		'postgres', '-D', $node->data_dir ],
	'<', \undef, '>>', $node->logfile, '2>>', $node->logfile);
my $up = wait_until(sub { (eval { $node->safe_psql('postgres', 'SELECT 1') } // '') eq '1' }, 30);
ok(defined $up, 'the cluster runs in a pid namespace of its own') or BAIL_OUT('no cluster');

# the postmaster's host pid: the child of unshare (which, --kill-child,
# takes it down when it dies: so does a test that dies half-way; unshare
# ignores SIGTERM while it waits)
my $unshare_pid = $pg->{KIDS}[0]{PID};
END { kill 'KILL', $unshare_pid if $unshare_pid; }
# (a process may exit between the listing and the read: eval)
my ($pm_host) =
  grep { (eval { proc_field("/proc/$_/stat", qr/^\d+ \(.*\) \S (\d+)/) } // -1) == $unshare_pid }
  map { m{/proc/(\d+)$} ? $1 : () } glob('/proc/[0-9]*');
ok(defined $pm_host, "postmaster's host pid found (" . ($pm_host // 'none') . ')');

# host pid of a process PostgreSQL knows as $nspid (a child of the postmaster)
sub host_pid_of
{
	my ($nspid) = @_;
	for my $dir (glob('/proc/[0-9]*'))
	{
		my ($pid) = $dir =~ m{(\d+)$};
		my $ns = eval { proc_field("$dir/status", qr/^NSpid:\s+\d+\s+(\d+)\s*$/m) };
		my $ppid = eval { proc_field("$dir/stat", qr/^\d+ \(.*\) \S (\d+)/) };
		return $pid if defined $ns && $ns == $nspid && defined $ppid && $ppid == $pm_host;
	}
	return undef;
}

$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
my $helper = start_helper($node, $rt, '--probes', 'syscall,exact');
ok(wait_connected($node), 'helper connected to the namespaced cluster');

my $s = $node->background_psql('postgres');
my $nspid = $s->query_safe('SELECT pg_backend_pid()');
my $hostpid = host_pid_of($nspid);
ok(defined $hostpid && $hostpid != $nspid,
	"the backend is $nspid to PostgreSQL and " . ($hostpid // 'unknown') . ' to the host');

my $file = $node->basedir . '/written.csv';
$s->query_safe("COPY (SELECT g FROM generate_series(1, 20000) g) TO '$file'");

# "rows under the pid PostgreSQL knows | rows under the host pid"
sub rows_by_pid
{
	return $node->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE pid = $nspid) || '|' ||
		        count(*) FILTER (WHERE pid = $hostpid)
		   FROM pg_tracer_kernel_io WHERE layer = 'syscall'");
}
my $alive;
wait_until(sub { $alive = rows_by_pid(); $alive =~ /^[1-9]\d*\|0$/ }, 10);
like($alive, qr/^[1-9]\d*\|0$/, "while it runs: its rows under $nspid, none under $hostpid ($alive)");
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity a JOIN pg_tracer_kernel_io k USING (pid)
		  WHERE k.pid = $nspid AND k.op = 'write'") > 0 ? 1 : 0,
	1, 'and they join pg_stat_activity by pid');

$s->quit;
ok(defined wait_until(sub { !-e "/proc/$hostpid" }, 10), 'the backend exited');
sleep(2.5);    # the helper publishes once a second
my $gone = rows_by_pid();
like($gone, qr/^[1-9]\d*\|0$/,
	"after its exit: its rows still under $nspid (--keep-exited), none under the host pid ($gone)");

# trace --pid of a backend: its parallel workers come with it, though
# their titles ("parallel worker for PID N") name it by the namespace's pid
my $p = $node->background_psql('postgres');
my $p_host = host_pid_of($p->query_safe('SELECT pg_backend_pid()'));
$node->safe_psql('postgres',
	"CREATE TABLE big AS SELECT g, repeat('x', 200) AS pad FROM generate_series(1, 100000) g");
$p->query_safe($_) for ('SET max_parallel_workers_per_gather = 2', 'SET parallel_setup_cost = 0',
	'SET parallel_tuple_cost = 0', 'SET min_parallel_table_scan_size = 0');
my ($th, $tout, $terr) = start_trace(qr/"queryid-tagging"/, '--probes', 'syscall', '--pid', $p_host,
	'--stats', '--format', 'json', '--duration', '60s');
$p->query_safe('SELECT count(*) FROM big');
end_trace($th);
my %type_of;
for my $r (map { eval { JSON::PP::decode_json($_) } // () } split /\n/, $$tout)
{
	$type_of{ $r->{pid} } = $r->{backend_type} unless $r->{event} =~ /^(status|summary)$/;
}
my @workers = grep { $_ != $p_host } sort keys %type_of;
ok(@workers && !grep({ $type_of{$_} ne 'parallel worker' } @workers),
	"trace --pid $p_host: its parallel workers too (" . join(',', map { "$_ $type_of{$_}" } @workers)
	  . ')') or diag($$terr);
$p->quit;

# escalation knows a cluster by its postmaster's host pid, as the exact set
# does (before, by the namespace's pid: the cluster's own window was
# "other cluster" to it, and every namespace's postmaster 1 was one owner)
is($node->safe_psql('postgres', 'SELECT granted_s FROM pg_tracer_escalate(30)'), '30',
	'the namespaced cluster opens a window');
my $win = '';
wait_until(sub {
	$win = $node->safe_psql('postgres', "SELECT requested_by || '|' || reason
		FROM pg_tracer_escalations ORDER BY start_time DESC LIMIT 1");
	$win =~ /\|manual$/ }, 5);
like($win, qr/^\w+\|manual$/, "it sees its own window with who asked and why ($win)");
is($node->safe_psql('postgres', 'SELECT pg_tracer_deescalate()'), 't', 'and closes it');

ok(stop_helper($node, $helper), 'helper stopped');
kill 'INT', $pm_host;
$pg->finish;
undef $unshare_pid;    # gone: its pid may be another process's
done_testing();
