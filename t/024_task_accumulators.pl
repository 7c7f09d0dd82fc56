# 024_task_accumulators.pl — the rows a backend keeps in its own task
# storage (bpf/kernel_tacc.bpf.h: 8 query ids, 8 I/O rows, 4 histograms a
# task) add up exactly, however often they are evicted into the maps, and
# survive the backend's exit.
#
# One psql session over TCP runs 100 statements under some 25 query ids,
# each writing, reading or sending something, so its tables overflow many
# times over.  Ground truth, read beside the views while the backend is
# idle: /proc/<pid>/io (syscr, syscw, rchar, wchar: the read and write
# family's calls and bytes), the socket's tcp_info (bytes_sent less
# bytes_retrans, bytes_received, from `ss -ti`), /proc/<pid>/status
# (context switches).
# The views' change over the workload must equal the kernel's own counts,
# exactly.  Then the session quits: its rows, folded at exit, must reach
# the exited processes' row with nothing lost.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run ();
use Time::HiRes qw(usleep);

plan skip_all => 'root helper not reachable (run through scripts/test.sh)'
  unless helper_available();
my ($ss) = grep { -x $_ } map { "$_/ss" } (split(/:/, $ENV{PATH}), '/usr/sbin', '/sbin', '/usr/bin');
plan skip_all => 'ss (iproute2) is not installed: no ground truth' unless $ss;

my ($node, $rt) = tracer_node('tacc',
	conf => "compute_query_id = on\nlisten_addresses = '127.0.0.1'\nautovacuum = off\n");
my $port = $node->port;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
my $helper = start_helper($node, $rt, '--probes', 'syscall,network,sched', '--keep-exited', '3');
ok(wait_connected($node), 'helper connected (syscall, network, sched)');
# every read of the views from one session: a backend that exits would add
# to the exited processes' row (autovacuum is off for the same reason)
my $poll = $node->background_psql('postgres');
sub q1 { my ($sql) = @_; return $poll->query_safe($sql); }

# The TCP session
my ($in, $out, $err) = ('', '', '');
my $psql = IPC::Run::start(
	[ 'psql', '-XAtq', '-h', '127.0.0.1', '-p', $port, '-d', 'postgres' ],
	'<', \$in, '>', \$out, '2>', \$err, IPC::Run::timeout(180));
$in .= "SELECT pg_backend_pid();\n";
$psql->pump until $out =~ /^(\d+)\n/;
my $pid = $1;
$out = '';

# Run SQL in the session and wait for its marker line.
my $marks = 0;
sub session_run
{
	my ($sql) = @_;
	$marks++;
	$in .= "$sql\nSELECT 'done $marks';\n";
	$psql->pump until $out =~ /done $marks\n/;
	$out = '';
}

# The kernel's counts for the backend, as one string.
sub truth
{
	my $io = do { local (@ARGV, $/) = ("/proc/$pid/io"); <> };
	my $st = do { local (@ARGV, $/) = ("/proc/$pid/status"); <> };
	my $tcp = `$ss -tinH state established '( sport = :$port )'`;
	my %t;
	$t{$1} = $2 while $io =~ /^(syscr|syscw|rchar|wchar): (\d+)$/mg;
	($t{sent}) = $tcp =~ /\bbytes_sent:(\d+)/;
	($t{received}) = $tcp =~ /\bbytes_received:(\d+)/;
	# bytes_sent counts retransmitted bytes again: what send() took is the rest
	my ($retrans) = $tcp =~ /\bbytes_retrans:(\d+)/;
	$t{sent} -= $retrans // 0 if defined $t{sent};
	my ($v) = $st =~ /^voluntary_ctxt_switches:\s+(\d+)/m;
	my ($n) = $st =~ /^nonvoluntary_ctxt_switches:\s+(\d+)/m;
	$t{switches} = $v + $n;
	return \%t;
}

# The views' figures for the backend (pid IS NULL: the exited processes').
sub views
{
	my ($where) = @_;
	my %v;
	@v{qw(syscr rchar syscw wchar)} = split /\|/, q1("
		SELECT coalesce(sum(calls) FILTER (WHERE op IN ('read', 'pread64', 'readv', 'preadv', 'preadv2')), 0),
		       coalesce(sum(bytes) FILTER (WHERE op IN ('read', 'pread64', 'readv', 'preadv', 'preadv2')), 0),
		       coalesce(sum(calls) FILTER (WHERE op IN ('write', 'pwrite64', 'writev', 'pwritev', 'pwritev2')), 0),
		       coalesce(sum(bytes) FILTER (WHERE op IN ('write', 'pwrite64', 'writev', 'pwritev', 'pwritev2')), 0)
		  FROM pg_tracer_kernel_io WHERE layer = 'syscall' AND pid $where");
	@v{qw(sent received)} = split /\|/, q1(
		"SELECT coalesce(sum(send_bytes), 0), coalesce(sum(recv_bytes), 0)
		   FROM pg_tracer_kernel_net WHERE pid $where");
	$v{switches} = q1(
		"SELECT coalesce(sum(voluntary_switches + involuntary_switches), 0)
		   FROM pg_tracer_kernel_sched WHERE pid $where");
	return \%v;
}

my @keys = qw(syscr rchar syscw wchar sent received switches);
sub fmt { my ($h) = @_; return join(' ', map { "$_=" . ($h->{$_} // '?') } @keys); }

# A baseline while the backend is idle: its own counts unchanged around a
# read of views that have stopped moving (the helper copies once a second).
sub baseline
{
	for (1 .. 20)
	{
		my $t0 = truth();
		my $v = views("= $pid");
		usleep(1_300_000);
		my $v2 = views("= $pid");
		my $t1 = truth();
		return ($t1, $v2) if fmt($t0) eq fmt($t1) && fmt($v) eq fmt($v2);
	}
	BAIL_OUT('the idle backend never held still');
}

usleep(500_000);
my ($ta, $va) = baseline();
note 'baseline: kernel ' . fmt($ta) . '; views ' . fmt($va);

# 50 statements, 20 of them with query ids of their own (COPY's text,
# SELECT's width): files written and read back, results of various widths,
# short sleeps.
my $dir = $node->basedir;
for my $i (1 .. 10)
{
	my $cols = join(', ', map { "g * $_" } 1 .. $i);
	session_run("COPY (SELECT $cols FROM generate_series(1, 2000 * $i) g) TO '$dir/f$i.csv';");
	session_run("SELECT " . join(', ', map { "repeat('x', $_ * 100) AS c$_" } 1 .. $i) . ";");
	session_run("SELECT pg_sleep(0.01 * $i) AS s$i;");
	session_run("SELECT length(pg_read_file('$dir/f$i.csv')) AS len$i;");
}

my ($tb, $vb);
my $same = wait_until(sub {
	($tb) = baseline();
	$vb = views("= $pid");
	!grep { ($vb->{$_} - $va->{$_}) != ($tb->{$_} - $ta->{$_}) } @keys
}, 20);
note 'after: kernel ' . fmt($tb) . '; views ' . fmt($vb);
ok(defined $tb->{sent} && defined $tb->{received}, "the socket's tcp_info was read");
for my $k (@keys)
{
	is($vb->{$k} - $va->{$k}, $tb->{$k} - $ta->{$k},
		"$k over the workload: views = kernel (" . ($tb->{$k} - $ta->{$k}) . ')');
}
cmp_ok(q1(
		"SELECT count(DISTINCT queryid) FROM pg_tracer_kernel_net WHERE pid = $pid"),
	'>', 16, 'network rows under more than 16 query ids: the 8-row tables overflowed');
cmp_ok(q1(
		"SELECT count(*) FROM pg_tracer_kernel_io WHERE pid = $pid AND layer = 'syscall'"),
	'>', 16, 'kernel-io rows: more than twice a task\'s table');
is(q1("
	SELECT (SELECT sum(count) FROM pg_tracer_kernel_histogram('runq') WHERE pid = $pid)
	     = (SELECT sum(runq_count) FROM pg_tracer_kernel_sched WHERE pid = $pid)"),
	't', 'run-queue histogram and counters agree');

# The session quits: its rows are folded into the maps at exit, then (the
# helper keeps exited pids 3 s) into the exited processes' row.
my $last = views("= $pid");
my $exited0 = views('IS NULL');
$in .= "\\q\n";
$psql->finish;
ok(defined wait_until(sub {
	q1("SELECT count(*) FROM pg_tracer_kernel_net WHERE pid = $pid") eq '0'
}, 20), 'its rows left its pid after it exited');
my $exited1 = views('IS NULL');
is($exited1->{sent} - $exited0->{sent}, $last->{sent},
	"bytes it sent reached the exited processes' row, none lost ($last->{sent})");
cmp_ok($exited1->{wchar} - $exited0->{wchar}, '>=', $last->{wchar},
	"bytes it wrote too, and any log line of its exit ($last->{wchar})");
cmp_ok($exited1->{switches} - $exited0->{switches}, '>=', $last->{switches},
	"its context switches too, and those of its exit ($last->{switches})");

$poll->quit;
signal_helper($helper, 'TERM');
$node->stop;
done_testing();
