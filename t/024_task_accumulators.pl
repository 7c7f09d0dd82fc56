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
# (context switches), /proc/<pid>/schedstat (run-queue wait).
# The views' change over the workload must equal the kernel's own counts,
# exactly.  pg_tracer_reset() then empties its rows, and its counts start
# again from zero, as exact.  Then the session quits: its rows, folded at exit, must reach
# the exited processes' row with nothing lost.  Last, the helper is
# restarted with --miss-events 2 and a second session's counts must stay
# exact with every other switch-in unreported to the sched program.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;
use PgTracerSession;
use Time::HiRes qw(usleep);

plan skip_all => 'root helper not reachable (run through scripts/test.sh)'
  unless helper_available();
plan skip_all => 'ss (iproute2) is not installed: no ground truth'
  unless PgTracerSession::ss_path();

my ($node, $rt) = tracer_node('tacc',
	conf => "compute_query_id = on\nlisten_addresses = '127.0.0.1'\nautovacuum = off\n");
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
my $helper = start_helper($node, $rt, '--probes', 'syscall,network,sched', '--keep-exited', '3');
ok(wait_connected($node), 'helper connected (syscall, network, sched)');
# every read of the views from one session: a backend that exits would add
# to the exited processes' row (autovacuum is off for the same reason)
my $poll = $node->background_psql('postgres');
sub q1 { my ($sql) = @_; return $poll->query_safe($sql); }

# The run-queue wait over the workload (views in ms, schedstat in ns): the
# same to the microsecond (the views' sum of doubles rounds below that).
my ($ta, $va, $tb, $vb);
sub runq_same
{
	my ($when) = @_;
  SKIP:
	{
		skip 'the kernel keeps no run-queue times (/proc/<pid>/schedstat)', 1
		  unless defined $tb->{runq_ns} && defined $ta->{runq_ns};
		my $views_ns = ($vb->{runq_ms} - $va->{runq_ms}) * 1e6;
		my $kernel_ns = $tb->{runq_ns} - $ta->{runq_ns};
		cmp_ok(abs($views_ns - $kernel_ns), '<', 1000,
			sprintf('run-queue wait %s: views %.0f ns = schedstat %d ns', $when,
				$views_ns, $kernel_ns));
	}
}

# Once the views have caught up (at most 20 s), each count's change since
# ($ta, $va) must equal the kernel's, and so must the run-queue wait.
sub views_match_kernel
{
	my ($sess, $when) = @_;
	my @keys = @PgTracerSession::KEYS;
	wait_until(sub {
		($tb) = $sess->baseline;
		$vb = $sess->views('= ' . $sess->pid);
		!grep { ($vb->{$_} - $va->{$_}) != ($tb->{$_} - $ta->{$_}) } @keys
	}, 20);
	note "$when: kernel " . PgTracerSession::fmt($tb) . '; views ' . PgTracerSession::fmt($vb);
	is($vb->{$_} - $va->{$_}, $tb->{$_} - $ta->{$_},
		"$_ $when: views = kernel (" . ($tb->{$_} - $ta->{$_}) . ')')
	  for @keys;
	runq_same($when);
}

# The TCP session
my $sess = PgTracerSession->new($node, $poll);
my $pid = $sess->pid;
my @keys = @PgTracerSession::KEYS;
sub fmt { return PgTracerSession::fmt(@_); }

usleep(500_000);
($ta, $va) = $sess->baseline;
note 'baseline: kernel ' . fmt($ta) . '; views ' . fmt($va);

# 50 statements, 20 of them with query ids of their own (COPY's text,
# SELECT's width): files written and read back, results of various widths,
# short sleeps.
my $dir = $node->basedir;
for my $i (1 .. 10)
{
	my $cols = join(', ', map { "g * $_" } 1 .. $i);
	$sess->run("COPY (SELECT $cols FROM generate_series(1, 2000 * $i) g) TO '$dir/f$i.csv';");
	$sess->run("SELECT " . join(', ', map { "repeat('x', $_ * 100) AS c$_" } 1 .. $i) . ";");
	$sess->run("SELECT pg_sleep(0.01 * $i) AS s$i;");
	$sess->run("SELECT length(pg_read_file('$dir/f$i.csv')) AS len$i;");
}

views_match_kernel($sess, 'over the workload');
ok(defined $tb->{sent} && defined $tb->{received}, "the socket's tcp_info was read");
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

# pg_tracer_reset() while the session idles, with rows in its own task
# storage and many more evicted into the maps: they go at once (the kernel
# views read the publication after the reset on return), and what the
# session does next counts from zero, exactly as the kernel counts it.
my $exited_rows = "SELECT (SELECT count(*) FROM pg_tracer_kernel_io WHERE pid IS NULL)
	+ (SELECT count(*) FROM pg_tracer_kernel_net WHERE pid IS NULL)
	+ (SELECT count(*) FROM pg_tracer_kernel_sched WHERE pid IS NULL)";
note 'rows of exited processes before the reset: ' . q1($exited_rows);
is(q1('SELECT pg_tracer_reset()'), 't', 'pg_tracer_reset() returned');
my $zero = $sess->views("= $pid");
is(fmt($zero), fmt({ map { $_ => 0 } @keys }),
	"right after pg_tracer_reset(): nothing left of the session's rows");
is(q1($exited_rows), '0', "nor of the exited processes' rows");
($ta, $va) = $sess->baseline;
for my $i (1 .. 5)
{
	$sess->run("COPY (SELECT g FROM generate_series(1, 1000 * $i) g) TO '$dir/r$i.csv';");
	$sess->run("SELECT length(pg_read_file('$dir/r$i.csv')) AS r$i;");
}
views_match_kernel($sess, 'after the reset');

# The session quits: its rows are folded into the maps at exit, then (the
# helper keeps exited pids 3 s) into the exited processes' row.
my $last = $sess->views("= $pid");
my $exited0 = $sess->views('IS NULL');
$sess->quit;
# each set's map is copied, and its exited pids retired, at its own moment
# of a copy: wait until no view of the three keeps the pid
ok(defined wait_until(sub {
	q1("SELECT (SELECT count(*) FROM pg_tracer_kernel_io WHERE pid = $pid)
	         + (SELECT count(*) FROM pg_tracer_kernel_net WHERE pid = $pid)
	         + (SELECT count(*) FROM pg_tracer_kernel_sched WHERE pid = $pid)") eq '0'
}, 20), 'its rows left its pid after it exited');
my $exited1 = $sess->views('IS NULL');
is($exited1->{sent} - $exited0->{sent}, $last->{sent},
	"bytes it sent reached the exited processes' row, none lost ($last->{sent})");
cmp_ok($exited1->{wchar} - $exited0->{wchar}, '>=', $last->{wchar},
	"bytes it wrote too, and any log line of its exit ($last->{wchar})");
cmp_ok($exited1->{switches} - $exited0->{switches}, '>=', $last->{switches},
	"its context switches too, and those of its exit ($last->{switches})");

# The same counts on a kernel that leaves switch-ins unreported: restarted
# with --miss-events 2, the sched program closes periods at switch-ins (as
# with a stream) and ignores every other switch-in it sees, and those
# periods must close from the scheduler's own record
# (bpf/kernel_sched.bpf.c, close_from_record).  The session above ran with
# no switch-ins at all: every period closed from that record.
stop_helper($node, $helper);
$helper = start_helper($node, $rt, '--probes', 'syscall,network,sched', '--keep-exited', '3',
	'--miss-events', '2');
ok(wait_connected($node), 'helper restarted with --miss-events 2');
$sess = PgTracerSession->new($node, $poll);
$pid = $sess->pid;
usleep(500_000);
($ta, $va) = $sess->baseline;
for my $i (1 .. 5)
{
	$sess->run("SELECT pg_sleep(0.05 * $i) AS z$i;");
	$sess->run("SELECT length(pg_read_file('$dir/f$i.csv')) AS y$i;");
}
views_match_kernel($sess, 'with half the switch-ins unreported');
cmp_ok($vb->{offcpu_ms} - $va->{offcpu_ms}, '>=', 750,
	'off-CPU time still covers the 750 ms of sleeps ('
	  . sprintf('%.0f', $vb->{offcpu_ms} - $va->{offcpu_ms}) . ' ms)');
$sess->quit;

$poll->quit;
signal_helper($helper, 'TERM');
$node->stop;
done_testing();
