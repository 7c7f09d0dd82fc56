# 023_hook_chains.pl — the hook chains (bpf/pgt_chain.bpf.h): the probe
# sets' programs for sys_enter, sys_exit and sched_switch are not attached
# but tail-called by the foundation's dispatchers, slot by slot (exact 0,
# syscall/network 1, sched 2).  Each member must hand the hook on to the
# slots after it, and one leaving (a tiered window closing) must not stop
# the others.  Ground truth: the time this script measures around
# pg_sleep, and the size of the file a backend reads.
#
#   - the statuses say the programs run in the hook chains
#   - inside an exact window (every slot filled): pg_sleep(1.5) is timed by
#     exact (slot 0), the backend's off-CPU time (sched, slot 2, reached
#     only through slots 0 and 1) covers the sleep, and the bytes of the
#     file it reads (syscall, slot 1) under that statement's query id are
#     the file's size
#   - after the window (slot 0 empty): syscall and sched still see the same
#     work, exact no longer counts
#   - the sched_switch dispatcher hands on switches to a tracked process
#     only while a member needs them: sched on the run queue's clock closes
#     its periods at switch-outs, exact needs switch-ins (the helper's
#     debug log says which, each time it changes)
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

plan skip_all => 'root helper not reachable (run through scripts/test.sh)'
  unless helper_available();

my ($node, $rt) = tracer_node('chains', conf => "compute_query_id = on\n");
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
sub q1 { return $node->safe_psql('postgres', $_[0]); }

my $helper = start_helper($node, $rt, '--probes', 'exact,syscall,network,sched', '--mode', 'tiered');
ok(wait_connected($node), 'helper connected (exact tiered, syscall, network, sched)');

my %reason = map { split /\|/, $_, 2 } split /\n/,
  q1("SELECT probe_set, state || ': ' || reason FROM pg_tracer_probes
      WHERE probe_set IN ('exact', 'syscall', 'network', 'sched')");
like($reason{exact}, qr/^available: .*; programs in the hook chains$/,
	"exact: programs in the hook chains ($reason{exact})");
# sysio: sys_enter, sys_exit (chained), tcp_retransmit_skb, sched_process_exit
# (a task's own rows into the maps), the task iterator (the helper's read of
# them) and the TCP socket iterator (retransmits the kernel did not report);
# sched: sched_switch (chained), sched_process_exit, the iterator
like($reason{$_}, qr/^available: 6 programs attached \(2 in the hook chains\)/,
	"$_: the shared sys_enter/sys_exit pair in the hook chains, retransmits, exit, iterators")
  for qw(syscall network);
like($reason{sched}, qr/^available: 3 programs attached \(1 in the hook chains\)/,
	'sched: sched_switch in the hook chain, exit and iterator on their own');

# the last word of the helper's log on the sched_switch dispatcher
my $log = $node->basedir . '/helper.log';
sub switch_ins
{
	my @said = slurp_file($log)
	  =~ /sched_switch: switches to a tracked process (handed on|not handed on)/g;
	return @said ? $said[-1] : 'nothing';
}
ok(defined wait_until(sub { switch_ins() eq 'not handed on' }, 5),
	'outside a window, switches to a backend are not handed on (sched needs switch-outs only): '
	  . switch_ins());

my $s = $node->background_psql('postgres');
my $pid = $s->query_safe('SELECT pg_backend_pid()');
my $file = 'postgresql.conf';
my $size = -s $node->data_dir . "/$file";
my $read_sql = "SELECT length(pg_read_binary_file('$file'))";
wait_mapped($node, $pid);    # exact reads the wait event in its status slot
my ($qid) = $s->query_safe("EXPLAIN VERBOSE $read_sql") =~ /Query Identifier: (-?\d+)/;
ok(defined $qid && $qid ne '0', "the file-reading statement has a query id ($qid)");

# figures of one backend, now
sub figures
{
	return {
		sleep_ms => q1("SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_exact_waits()
			WHERE pid = $pid AND wait_event = 'PgSleep'"),
		offcpu_ms => q1("SELECT coalesce(sum(offcpu_ms), 0) FROM pg_tracer_kernel_sched
			WHERE pid = $pid"),
		read_bytes => q1("SELECT coalesce(sum(bytes), 0) FROM pg_tracer_kernel_io
			WHERE pid = $pid AND queryid = $qid AND layer = 'syscall' AND op = 'read'"),
	};
}

# sleep 1.5 s and read the file in that backend; returns (figure deltas,
# the sleep as this script measured it, the wall time between the end of
# the idle time before and the last copy: the most the backend can have
# been off CPU, idle included)
sub work
{
	# end the session's idle time (off CPU, counted once it has run
	# again: at its next switch-out, right after the result is sent) and
	# let that be copied, so that the off-CPU time this returns starts
	# after $start
	my $start = time();
	$s->query_safe('SELECT 1');
	ok(defined wait_kernel_copy($node), 'a copy after the idle time ended');
	my $before = figures();
	my $t0 = time();
	$s->query_safe('SELECT pg_sleep(1.5)');
	my $slept = (time() - $t0) * 1000;
	is($s->query_safe($read_sql), $size, "the backend read $file ($size bytes)");
	$s->query_safe('SELECT 1');
	ok(defined wait_kernel_copy($node), 'a copy after the work');
	# the idle time after SELECT 1 may count in part too: an idle backend
	# wakes to flush its statistics (PostgreSQL's idle stats timeout)
	my $span = (time() - $start) * 1000;
	my $after = figures();
	return ({ map { $_ => $after->{$_} - $before->{$_} } keys %$after }, $slept, $span);
}

is(q1('SELECT granted_s FROM pg_tracer_escalate(60)'), '60', 'exact window open (slot 0 filled)');
ok(defined wait_until(sub { switch_ins() eq 'handed on' }, 5),
	'in the window, switches to a backend are handed on (exact needs them): ' . switch_ins());
my ($d, $slept, $span) = work();
ok(within($d->{sleep_ms}, 1500, 0.05),
	"in the window, exact (slot 0): PgSleep $d->{sleep_ms} ms (1500 +-5%; psql saw $slept)");
ok($d->{offcpu_ms} >= 1500 * 0.95 && $d->{offcpu_ms} <= $span,
	sprintf('in the window, sched (slot 2): off CPU %.0f ms covers the sleep (%.0f ms span)',
		$d->{offcpu_ms}, $span));
is($d->{read_bytes}, $size, "in the window, syscall (slot 1): read bytes under the query id = file size");

q1('SELECT pg_tracer_deescalate()');
ok(defined wait_until(sub { q1('SELECT active FROM pg_tracer_exact_budget()') eq 'f' }, 5),
	'window closed (slot 0 empty)');
ok(defined wait_until(sub { switch_ins() eq 'not handed on' }, 5),
	'after the window, switches to a backend are not handed on again: ' . switch_ins());
($d, $slept, $span) = work();
is($d->{sleep_ms}, 0, 'after the window, exact counts nothing');
ok($d->{offcpu_ms} >= 1500 * 0.95 && $d->{offcpu_ms} <= $span,
	sprintf('after the window, sched: off CPU %.0f ms covers the sleep (%.0f ms span)',
		$d->{offcpu_ms}, $span));
is($d->{read_bytes}, $size, 'after the window, syscall: read bytes = file size');

# A backend waiting for its client sleeps in the kernel (epoll_wait after
# a receive found nothing).  PostgreSQL keeps the last statement's id in
# st_query_id while the session is idle (as pg_stat_activity shows it), but
# sched sees the wait event at that switch-out (Client:ClientRead): the
# idle time is no statement's and goes to query id 0.
my $idle_q = "SELECT coalesce(sum(offcpu_ms) FILTER (WHERE queryid = 0), 0) || '|' ||
                     coalesce(sum(offcpu_ms) FILTER (WHERE queryid = $qid), 0)
                FROM pg_tracer_kernel_sched WHERE pid = $pid";
# The baseline is read before the statement: an idle backend wakes to
# flush its statistics (PostgreSQL's idle stats timeout), and the part of
# the idle time before that wake is counted at once, so a baseline read
# during the idle time could already hold it.  Query id 0 also gets the idle
# time before the statement (from the SELECT 1 here), counted when the
# statement wakes the backend: the span starts with that SELECT 1.
$s->query_safe('SELECT 1');
my $t_idle = time();
wait_kernel_copy($node);
my ($idle0, $stmt0) = split /\|/, q1($idle_q);
is($s->query_safe($read_sql), $size, 'the statement ran before an idle time');
my $idle_from = time();
sleep(2.7);
my $idle_least = (time() - $idle_from) * 1000;    # idle at least this long
$s->query_safe('SELECT 1');    # ends it
my $idle_span = (time() - $t_idle) * 1000;
my ($idle, $stmt);
wait_until(sub {
	my ($i, $t) = split /\|/, q1($idle_q);
	($idle, $stmt) = ($i - $idle0, $t - $stmt0);
	$idle >= $idle_least * 0.95
}, 5);
# (+50 ms: the backend went idle when it sent SELECT 1's result, a moment
# before psql returned it and the span began)
ok($idle >= $idle_least * 0.95 && $idle <= $idle_span + 50,
	sprintf('idle time waiting for the client goes to query id 0 (%.0f ms of %.0f since the SELECT 1; idle at least %.0f)',
		$idle, $idle_span, $idle_least));
cmp_ok($stmt, '<', $idle_least * 0.5,
	sprintf('not to the last statement\'s id (%.0f ms there)', $stmt));

$s->quit;
signal_helper($helper, 'TERM');
$node->stop;
done_testing();
