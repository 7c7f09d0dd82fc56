# 043_exact_watch.pl — the hardware-watchpoint source of exact wait timing
# (--exact-source watchpoint|auto) and pg_tracer_reset() of the exact
# counters, against ground truth measured independently of the helper:
#
#   - source selection follows the helper's breakpoint self-test: where a
#     breakpoint fires the watchpoint source runs ("hardware watchpoints"),
#     where it does not the status says why and syscall tagging is used
#   - a session connected after the helper started gets its breakpoint
#     (fork race) and loses it when it exits
#   - pg_sleep(2): Timeout:PgSleep exact total = the sleep (±5%)
#   - cold reads: IO:DataFileRead count close to the read system calls
#     /proc/<pid>/io counted (syscr)
#   - a transition that blocks in no system call is counted: pg_sleep()
#     entered with the process latch already set (it was set by the
#     SIGUSR1 of pg_log_backend_memory_contexts on the backend itself)
#     returns from WaitLatch without epoll_wait: watchpoints count two
#     PgSleep waits where syscall tagging counts one
#   - pg_tracer_reset() empties the exact counters before it returns
#   - a backend whose 4 debug registers this script holds: ENOSPC reported
#   - --exact-source auto: watchpoints in tiered mode (only inside windows:
#     breakpoints come and go with them), syscall tagging in full mode; a
#     wait in progress counts mid-window and, once the window closes, as
#     far as the window covered it
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

my ($node, $rt) = tracer_node('watch',
	conf => "compute_query_id = on\nshared_buffers = 16MB\n");
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
sub q1 { return $node->safe_psql('postgres', $_[0]); }
sub connected { return wait_connected($node); }
sub probe
{
	return q1("SELECT mechanism || '|' || reason FROM pg_tracer_probes WHERE probe_set = 'exact'");
}
sub watched
{
	my ($n) = probe() =~ /(\d+) watched/;
	return $n // -1;
}
sub sleep_stats
{
	my ($pid) = @_;
	return split /\|/, q1("SELECT coalesce(sum(waits), 0), coalesce(sum(total_ms), 0)
		FROM pg_tracer_exact_waits() WHERE pid = $pid AND wait_event = 'PgSleep'");
}

# twice shared_buffers, stored uncompressed (PLAIN): a scan reads through
# a small ring, one read call per page
q1("CREATE TABLE big(id int, pad text); ALTER TABLE big ALTER pad SET STORAGE PLAIN;
	INSERT INTO big SELECT g, repeat('x', 500) FROM generate_series(1, 60000) g");

my ($rc, $out, $err) = run_helper('daemon', '--exact-source', 'bogus', '--runtime-dir', $rt);
is($rc, 2, 'daemon --exact-source bogus: refused (exit 2, a usage error)');
like($err, qr/--exact-source: bogus: use auto, syscall or watchpoint/, 'with a clear error');

my $helper = start_helper($node, $rt, '--mode', 'full', '--exact-source', 'watchpoint',
	'--probes', 'exact');
ok(connected(), 'helper connected (full mode, watchpoint source)');
my $p = probe();
my $fires = $p =~ /watchpoints fire \(\d+\/100 writes\)/;
if ($fires)
{
	like($p, qr/^hardware watchpoints\|mode full, budget \d+ s\/h; source watchpoint \(--exact-source watchpoint; watchpoints fire \(\d+\/100 writes\)\)/,
		"breakpoints fire: the watchpoint source runs ($p)");
}
else
{
	like($p, qr/^syscall tagging\|.*source syscall \(--exact-source watchpoint, but watchpoints unavailable: .+\)/,
		"breakpoints do not fire here: status says why, syscall tagging is used ($p)");
	# counted as not run in the suite's summary (scripts/test.sh)
  SKIP: { skip "the watchpoint source's checks: breakpoints do not fire here", 1; }
	signal_helper($helper, 'TERM');
	$node->stop;
	done_testing();
	exit 0;
}

# a session forked after the helper started: it gets its breakpoint
my $w0 = -1;
ok(defined wait_until(sub { ($w0 = watched()) > 0 }, 10), 'the status counts watched backends');
sleep(1.5);    # the background processes are all mapped by now
$w0 = watched();
my $s = $node->background_psql('postgres');
my $pid = $s->query_safe('SELECT pg_backend_pid()');
ok(defined wait_until(sub { watched() > $w0 }, 10),
	sprintf('a new backend gets a breakpoint (%d -> %d watched)', $w0, watched()));

# pg_sleep(2)
my ($n0, $t0ms) = sleep_stats($pid);
my $t0 = time();
$s->query_safe('SELECT pg_sleep(2)');
my $truth = (time() - $t0) * 1000;
wait_exact_copy($node);
my ($n1, $t1ms) = sleep_stats($pid);
ok(within($t1ms - $t0ms, 2000, 0.05),
	sprintf('pg_sleep(2): Timeout:PgSleep %.1f ms (2000 +-5%%; psql saw %.0f)', $t1ms - $t0ms, $truth));
is($n1 - $n0, 1, 'one PgSleep wait');

# a transition without a system call: the latch is already set when
# pg_sleep() waits the first time
$s->query_safe('SELECT pg_log_backend_memory_contexts(pg_backend_pid()), pg_sleep(0.3)');
wait_exact_copy($node);
my ($n2, $t2ms) = sleep_stats($pid);
is($n2 - $n1, 2, 'pg_sleep entered with the latch set: two PgSleep waits (one without epoll_wait)');
ok(within($t2ms - $t1ms, 300, 0.10), sprintf('their total is the sleep: %.1f ms', $t2ms - $t1ms));

# cold reads vs read calls
sub syscr { return proc_field("/proc/$pid/io", qr/^syscr: (\d+)/m); }
my $d0 = q1("SELECT coalesce(sum(waits), 0) FROM pg_tracer_exact_waits()
	WHERE pid = $pid AND wait_event = 'DataFileRead'");
my $r0 = syscr();
$s->query_safe('SET max_parallel_workers_per_gather = 0; SELECT count(*) FROM big');
my $r1 = syscr();
wait_exact_copy($node);
my $d1 = q1("SELECT coalesce(sum(waits), 0) FROM pg_tracer_exact_waits()
	WHERE pid = $pid AND wait_event = 'DataFileRead'");
my ($reads, $dfr) = ($r1 - $r0, $d1 - $d0);
cmp_ok($reads, '>', 2000, "the scan made $reads read calls");
ok(within($dfr, $reads, 0.10), "IO:DataFileRead exact count $dfr ~ read calls $reads (+-10%)");

# reset: empty on return, counting again afterwards
is(q1('SELECT pg_tracer_reset()'), 't', 'pg_tracer_reset()');
is(q1("SELECT count(*) FROM pg_tracer_exact_waits() WHERE wait_event IN ('PgSleep', 'DataFileRead')"),
	'0', 'the exact counters are empty right after pg_tracer_reset()');
($rc, $out, $err) = $node->psql('postgres', "SELECT * FROM pg_tracer_histogram('PgSleep')");
like($err, qr/needs exact data/, 'and so is the PgSleep histogram');
$s->query_safe('SELECT pg_sleep(0.5)');
wait_exact_copy($node);
my ($n3, $t3ms) = sleep_stats($pid);
ok($n3 == 1 && within($t3ms, 500, 0.05), "after the reset: one PgSleep of $t3ms ms");
is(q1("SELECT fidelity FROM pg_tracer_wait_events_since('1 minute') WHERE wait_event = 'PgSleep'"),
	'sampled', 'the windowed form stays sampled (no exact time series)');

# the backend exits: its breakpoint goes
my $w1 = watched();
$s->quit;
ok(defined wait_until(sub { watched() < $w1 }, 10),
	sprintf('an exited backend loses its breakpoint (%d -> %d watched)', $w1, watched()));
like(probe(), qr/, 0 failed$/, 'no breakpoint creation failed');

# auto picks watchpoints where they fire; syscall stays the default
ok(stop_helper($node, $helper), 'helper stopped');
$helper = start_helper($node, $rt, '--mode', 'full', '--exact-source', 'auto', '--probes', 'exact');
ok(connected(), 'helper restarted with --exact-source auto, --mode full');
like(probe(), qr/^syscall tagging\|.*source syscall \(--exact-source auto: watchpoints only in tiered windows; watchpoints fire/,
	'auto in full mode: syscall tagging (always on: the cheaper source)');
ok(stop_helper($node, $helper), 'helper stopped');
$helper = start_helper($node, $rt, '--mode', 'tiered', '--exact-source', 'auto', '--probes', 'exact');
ok(connected(), 'helper restarted with --exact-source auto, --mode tiered');
like(probe(), qr/^hardware watchpoints\|.*source watchpoint \(--exact-source auto; /,
	'auto in tiered mode: watchpoints, since they fire');
my $s2 = $node->background_psql('postgres');
my $pid2 = $s2->query_safe('SELECT pg_backend_pid()');
# a backend whose 4 debug registers are all taken (as by a debugger):
# this script holds 4 write breakpoints on it, the helper's gets ENOSPC
my $s3 = $node->background_psql('postgres');
my $pid3 = $s3->query_safe('SELECT pg_backend_pid()');
my @bp_fh;
for my $i (0 .. 3)
{
	# perf_event_attr (PERF_ATTR_SIZE_VER1, 72 bytes): BREAKPOINT, sample
	# period 1, disabled|exclude_kernel|exclude_hv, HW_BREAKPOINT_W, len 4
	my $attr = pack('LLQQQQQLLQQ', 5, 72, 0, 1, 0, 0, 1 | 32 | 64, 0, 2, 0x10000 + 8 * $i, 4);
	my $fd = syscall(298, $attr, $pid3 + 0, -1, -1, 0);
	last if $fd < 0;
	open(my $fh, '<&=', $fd) or last;
	push @bp_fh, $fh;
}
is(scalar(@bp_fh), 4, "this script holds the 4 debug registers of backend $pid3");
sleep(1);
is(q1('SELECT granted_s FROM pg_tracer_escalate(30)'), '30', 'a window opens');
ok(defined wait_until(sub { watched() > 0 }, 10), 'breakpoints exist inside the window (' . watched() . ')');
$s2->query_safe('SELECT pg_sleep(1)');
wait_exact_copy($node);
my (undef, $w2ms) = sleep_stats($pid2);
ok(within($w2ms, 1000, 0.05), "pg_sleep(1) inside the window: $w2ms ms");
like(probe(), qr/, 1 failed \(last: pid \d+: No space left on device\)$/,
	'the backend without a free debug register: reported (ENOSPC)');
close($_) for @bp_fh;
$s3->quit;
# a sleep in progress: counted mid-window (time so far), and when the window
# closes as far as it covered it; nothing when it ends outside the window
my ($wn0, $wt0) = sleep_stats($pid2);
$s2->query_until(qr/sent/, "\\echo sent\nSELECT pg_sleep(4);\n");
my $ws_start = time();
sleep(1.5);
wait_publications($node, 1);    # rows as of a moment ago, not up to 250 ms
my ($wn1, $wt1) = sleep_stats($pid2);
my $wmid = (time() - $ws_start) * 1000;
ok(within($wt1 - $wt0, $wmid, 0.2) && $wn1 - $wn0 == 1,
	sprintf('watchpoints: a sleep in progress counts mid-window, %.0f ms (%.0f +-20%%)', $wt1 - $wt0, $wmid));
my $w_closed = time();
is(q1('SELECT pg_tracer_deescalate()'), 't', 'the window closes');
ok(defined wait_until(sub { watched() == 0 }, 10), 'no breakpoint outside windows');
wait_exact_copy($node);
my ($wn2, $wt2) = sleep_stats($pid2);
my $wpart = ($w_closed - $ws_start) * 1000;
ok(within($wt2 - $wt0, $wpart, 0.15) && $wn2 - $wn0 == 1,
	sprintf('... and once it closed, the part it covered: %.0f ms (%.0f), one wait', $wt2 - $wt0, $wpart));
$s2->query_safe('SELECT 1');
wait_exact_copy($node);
my (undef, $wt3) = sleep_stats($pid2);
is(sprintf('%.0f', $wt3), sprintf('%.0f', $wt2), 'the sleep ended outside the window: nothing more');
$s2->quit;
ok(stop_helper($node, $helper), 'helper stopped');
$helper = start_helper($node, $rt, '--mode', 'full', '--probes', 'exact');
ok(connected(), 'helper restarted without --exact-source');
like(probe(), qr/^syscall tagging\|.*source syscall \(default; watchpoints fire/,
	'default: syscall tagging, the self-test still reported');
my $s4 = $node->background_psql('postgres');
my $pid4 = $s4->query_safe('SELECT pg_backend_pid()');
sleep(1);
my ($m0) = sleep_stats($pid4);
$s4->query_safe('SELECT pg_log_backend_memory_contexts(pg_backend_pid()), pg_sleep(0.3)');
wait_exact_copy($node);
my ($m1, $mt) = sleep_stats($pid4);
is($m1 - $m0, 1, 'the same latch-set pg_sleep under syscall tagging: one PgSleep wait (the other made no system call)');
$s4->quit;

signal_helper($helper, 'TERM');
$node->stop;
done_testing();
