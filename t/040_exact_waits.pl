# 040_exact_waits.pl — exact wait-event timing by the helper (system-call
# tagging), escalation windows and their budget, against ground truth
# measured independently of the helper:
#
#   - pg_sleep(2): Timeout:PgSleep exact total = the sleep (±5%)
#   - a ~2 s lock wait timed by this script: Lock:relation (±5%) on the
#     blocked pid and under its pg_stat_activity query id
#   - a table scan larger than shared_buffers: IO:DataFileRead count close
#     to the read system calls /proc/<pid>/io counted (syscr)
#   - histogram buckets sum to the exact count
#   - budget: a request clamped to the budget, the window ends when the
#     budget is spent, then a denial with budget_remaining_s = 0
#   - a wait already in progress when a window opens is timed from the
#     window's start (seeded)
#   - escalate/deescalate rights (superuser, pgtracer_admin, others
#     denied), idempotent deescalate, argument errors, --mode full fidelity
#   - hardware watchpoint self-test reported in pg_tracer_probes
#   - a new connection's first statement (pg_sleep(1.2)) timed although the
#     helper has not mapped its backend yet
#   - the exact time model of an idle session: CPU* steady from read to
#     read (its covered time ends at the helper's copy, as its waits do);
#     a role without pg_read_all_stats gets its own sessions' times
#   - after pg_tracer_reset() the exact time model counts from the reset
#     (before, the time covered until then came out as CPU*); with the
#     sampler off, pg_tracer_wait_events still has the exact tier's events
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use Time::HiRes qw(time sleep);

plan skip_all => 'root helper not reachable (run through scripts/test.sh)'
  unless helper_available();

my ($node, $rt) = tracer_node('exact',
	conf => "compute_query_id = on\nshared_buffers = 16MB\n");
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
sub q1 { return $node->safe_psql('postgres', $_[0]); }
sub connected { return wait_connected($node); }

# a table bigger than shared_buffers (16MB): every page is a read call
q1('CREATE TABLE big AS SELECT g AS id, repeat(\'x\', 500) AS pad FROM generate_series(1, 60000) g');
q1('CREATE TABLE locked(a int); INSERT INTO locked VALUES (1)');
q1('CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN IN ROLE pgtracer_admin');

# ---- no helper yet: clear errors
my ($rc, $out, $err) = $node->psql('postgres', "SELECT * FROM pg_tracer_histogram('PgSleep')");
like($err, qr/needs exact data: escalate.*not connected/s, 'histogram without a helper: needs exact data');

my $helper = start_helper($node, $rt, '--mode', 'tiered', '--exact-budget', '20');
ok(connected(), 'helper connected (tiered, budget 20 s)');

my $probe = q1("SELECT state || ': ' || reason FROM pg_tracer_probes WHERE probe_set = 'exact'");
like($probe, qr/^available: mode tiered, budget 20 s\/h; source syscall \(default; watchpoints (unavailable: .+|fire \(\d+\/100 writes\))\); programs (in the hook chains|attached on their own)$/,
	"exact set available, watchpoint self-test reported ($probe)");
is(q1('SELECT mode, budget_s, used_s, budget_remaining_s, active FROM pg_tracer_exact_budget()'),
	'tiered|20|0|20|f', 'budget before any window');

# ---- rights and arguments
($rc, $out, $err) = $node->psql('postgres', 'SELECT * FROM pg_tracer_escalate(5)',
	extra_params => [ '-U', 'alice' ]);
like($err, qr/permission denied to escalate exact wait timing.*HINT:.*pgtracer_admin/s,
	'a role outside pgtracer_admin is denied');
($rc, $out, $err) = $node->psql('postgres', 'SELECT pg_tracer_deescalate()',
	extra_params => [ '-U', 'alice' ]);
like($err, qr/permission denied/, 'deescalate denied too');
for my $bad ([ 'NULL', qr/seconds must not be NULL/ ], [ '0', qr/seconds must be positive/ ],
	[ '-5', qr/seconds must be positive/ ], [ '100000', qr/at most 86400/ ])
{
	($rc, $out, $err) = $node->psql('postgres', "SELECT * FROM pg_tracer_escalate($bad->[0])");
	like($err, $bad->[1], "escalate($bad->[0]) refused");
}
is(q1('SELECT active FROM pg_tracer_exact_budget()'), 'f', 'refusals opened no window');
($rc, $out, $err) = $node->psql('postgres', "SELECT * FROM pg_tracer_histogram('NoSuchEvent')");
like($err, qr/unknown wait event "NoSuchEvent".*HINT:.*pg_tracer_wait_events/s, 'histogram: unknown name');
($rc, $out, $err) = $node->psql('postgres', "SELECT * FROM pg_tracer_histogram('Timeout:PgSleep')");
like($err, qr/needs exact data: escalate/, 'histogram over sampled-only data: needs exact data');

# sessions connect before the window so the helper has mapped them
my $s = $node->background_psql('postgres');
my $pid = $s->query_safe('SELECT pg_backend_pid()');
my $locker = $node->background_psql('postgres');
my $blocked = $node->background_psql('postgres');
my $bpid = $blocked->query_safe('SELECT pg_backend_pid()');
sleep(2.5);

# ---- a window, clamped to the budget; bob is a pgtracer_admin member
my $t_open = time();
is($node->safe_psql('postgres', 'SELECT granted_s, budget_remaining_s FROM pg_tracer_escalate(25)',
		extra_params => [ '-U', 'bob' ]),
	'20|0', 'escalate(25) with a 20 s budget: granted 20, 0 remaining');

# pg_sleep(2)
my $t0 = time();
$s->query_safe('SELECT pg_sleep(2)');
my $slept_truth = (time() - $t0) * 1000;
$s->query_safe('SELECT 1');
wait_exact_copy($node);
my $slept = q1("SELECT total_ms FROM pg_tracer_exact_session_events
	WHERE pid = $pid AND wait_event_type = 'Timeout' AND wait_event = 'PgSleep'");
ok(within($slept, 2000, 0.05), "pg_sleep(2): exact Timeout:PgSleep = $slept ms (2000 +-5%; psql saw $slept_truth)");

# a ~2 s lock wait.  LOCK TABLE waits after its query id is set (a SELECT
# on the locked table would wait in parse analysis, before it has one).
$locker->query_safe('BEGIN; LOCK TABLE locked IN ACCESS EXCLUSIVE MODE');
$blocked->query_safe('BEGIN');
my $sent = time();
$blocked->query_until(qr/sent/, "\\echo sent\nLOCK TABLE locked IN ACCESS SHARE MODE;\n");
ok($node->poll_query_until('postgres',
		"SELECT wait_event = 'relation' FROM pg_stat_activity WHERE pid = $bpid"),
	'the LOCK TABLE waits for the lock');
my $waiting = time();
my $qid = q1("SELECT query_id FROM pg_stat_activity WHERE pid = $bpid");
sleep(2 - (time() - $sent)) if time() - $sent < 2;
$locker->query_safe('COMMIT');
my $lock_hi = (time() - $sent) * 1000;
my $lock_lo = (time() - $waiting) * 1000;
$blocked->query_safe('COMMIT');
wait_exact_copy($node);
my $lk = q1("SELECT total_ms FROM pg_tracer_exact_session_events
	WHERE pid = $bpid AND wait_event_type = 'Lock' AND wait_event = 'relation'");
ok(defined $lk && $lk ne '' && $lk >= $lock_lo * 0.95 && $lk <= $lock_hi * 1.05,
	sprintf('lock wait: exact Lock:relation = %s ms on the blocked pid (script saw %.0f..%.0f ms)',
		$lk, $lock_lo, $lock_hi));
ok($qid ne '' && $qid ne '0', "the waiting statement has a query id ($qid)");
my $qlk = q1("SELECT sum(total_ms) FROM pg_tracer_exact_waits()
	WHERE pid = $bpid AND queryid = $qid AND wait_event = 'relation'");
ok(within($qlk, $lk, 0.01), "the wait is under the statement's query id ($qlk ms)");
# the sampler saw the 2 s wait too (a collection each second): its row of
# the query id carries the exact time beside the sampled one
ok(defined wait_until(sub {
	q1("SELECT count(*) FROM pg_tracer_query_events WHERE queryid = $qid AND wait_event = 'relation'") > 0
}, 10), 'pg_tracer_query_events has the sampled lock wait under its query id');
is(q1("SELECT exact_total_ms FROM pg_tracer_query_events
	WHERE queryid = $qid AND wait_event = 'relation'"), $qlk,
	'pg_tracer_query_events: the exact columns of that query id');

# a scan of a table larger than shared_buffers: reads vs IO:DataFileRead
sub syscr { return proc_field("/proc/$pid/io", qr/^syscr: (\d+)/m); }
my $dfr0 = q1("SELECT coalesce(sum(waits), 0) FROM pg_tracer_exact_waits()
	WHERE pid = $pid AND wait_event = 'DataFileRead'");
my $r0 = syscr();
$s->query_safe('SELECT count(*) FROM big');
my $r1 = syscr();
wait_exact_copy($node);
my $dfr1 = q1("SELECT coalesce(sum(waits), 0) FROM pg_tracer_exact_waits()
	WHERE pid = $pid AND wait_event = 'DataFileRead'");
my ($reads, $dfr) = ($r1 - $r0, $dfr1 - $dfr0);
cmp_ok($reads, '>', 500, "the scan made $reads read calls");
ok(within($dfr, $reads, 0.10), "IO:DataFileRead exact count $dfr ~ read calls $reads (+-10%)");

# histogram buckets sum to the count
my ($hsum, $hcum) = split /\|/, q1("SELECT sum(waits), max(cumulative_pct) FROM pg_tracer_histogram('Timeout:PgSleep')");
my $cnt = q1("SELECT waits FROM pg_tracer_exact_wait_events WHERE wait_event = 'PgSleep'");
is($hsum, $cnt, "PgSleep histogram buckets sum to the exact count ($cnt)");
is($hcum, '100', 'cumulative_pct ends at 100');
like(q1("SELECT string_agg(bucket_lo_us || '-' || coalesce(bucket_hi_us::text, 'inf'), ',')
	FROM pg_tracer_histogram('PgSleep') WHERE waits > 0"), qr/1048576-2097152/,
	'the 2 s sleep is in the [1.05 s, 2.1 s) bucket');

# ---- the budget ends the window mid-way, then denies
ok(defined wait_until(sub { q1('SELECT active FROM pg_tracer_exact_budget()') eq 'f' }, 25),
	'the window ended when the budget was spent');
my $elapsed = time() - $t_open;
my ($used, $left) = split /\|/, q1('SELECT used_s, budget_remaining_s FROM pg_tracer_exact_budget()');
ok($used >= 19 && $used <= 21 && $left == 0, "budget spent: used $used s of 20, $left left (window lasted about $elapsed s)");
my $esc_row = '';
wait_until(sub {
	$esc_row = q1("SELECT reason || '|' || requested_by || '|' || coalesce(end_reason, 'open')
		|| '|' || granted_s FROM pg_tracer_escalations");
	return $esc_row ne 'manual|bob|open|20' }, 5);
is($esc_row, 'manual|bob|expired|20', 'the window in pg_tracer_escalations');
my $before = q1("SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_exact_waits() WHERE pid = $pid AND wait_event = 'PgSleep'");
$s->query_safe('SELECT pg_sleep(0.5)');
wait_exact_copy($node);
is(q1("SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_exact_waits() WHERE pid = $pid AND wait_event = 'PgSleep'"),
	$before, 'outside the window nothing is timed exactly');
($rc, $out, $err) = $node->psql('postgres', 'SELECT * FROM pg_tracer_escalate(10)');
like($err, qr/budget exhausted \(budget_remaining_s = 0\)/, 'exhausted budget: a clear denial');
is(q1('SELECT pg_tracer_deescalate()'), 'f', 'deescalate without a window: false');

# ---- a budget of 0: escalation disabled, said so (before: "budget exhausted")
ok(stop_helper($node, $helper), 'helper stopped');
$helper = start_helper($node, $rt, '--exact-budget', '0');
ok(connected(), 'helper restarted with a budget of 0');
($rc, $out, $err) = $node->psql('postgres', 'SELECT * FROM pg_tracer_escalate(10)');
like($err, qr/escalation is disabled.*HINT:.*--exact-budget 0/s, 'budget 0: "escalation is disabled", with a hint');

# ---- unlimited budget: idempotent deescalate, a wait in progress is seeded
ok(stop_helper($node, $helper), 'helper stopped');
$helper = start_helper($node, $rt, '--exact-budget', 'unlimited');
ok(connected(), 'helper restarted with an unlimited budget');
sleep(2.5);
$s->query_until(qr/sent/, "\\echo sent\nSELECT pg_sleep(3);\n");
my $sleep_start = time();
sleep(1);
my $esc_at = time();
is(q1('SELECT granted_s, budget_remaining_s IS NULL FROM pg_tracer_escalate(60)'), '60|t',
	'unlimited: all 60 s granted, no remaining budget to report');
# a second administrator's shorter request leaves the granted end alone
is($node->safe_psql('postgres', 'SELECT granted_s FROM pg_tracer_escalate(1)',
		extra_params => [ '-U', 'bob' ]), '1', "bob's 1 s request is granted");
$s->query_safe('SELECT 1');
my $seed_truth = (time() - $esc_at) * 1000;
wait_exact_copy($node);
my $seeded = q1("SELECT total_ms FROM pg_tracer_exact_session_events
	WHERE pid = $pid AND wait_event = 'PgSleep'");
ok(defined $seeded && $seeded ne '' && $seeded > 0.85 * (3000 - ($esc_at - $sleep_start) * 1000)
	  && $seeded <= $seed_truth * 1.05,
	sprintf('a sleep in progress at escalation is timed from the window start: %s ms (<= %.0f)',
		$seeded // 'none', $seed_truth));
sleep(1.5) while time() - $esc_at < 2;
is(q1("SELECT active || '|' || (window_end > now() + interval '50 s') FROM pg_tracer_exact_budget()"),
	'true|true', "bob's shorter request did not cut the 60 s window");
is(q1('SELECT pg_tracer_deescalate()'), 't', 'deescalate closes the window');
is(q1('SELECT pg_tracer_deescalate()'), 'f', 'deescalate again: false (idempotent)');
ok(defined wait_until(sub {
	q1("SELECT end_reason FROM pg_tracer_escalations ORDER BY start_time DESC LIMIT 1") eq 'deescalated' }, 5),
	'pg_tracer_escalations: the window ended by deescalation');

# ---- waits in progress: counted while the window is open (their time so
# far), and as far as the window covered them once it closes (before: a
# wait that outlasted its window was counted nowhere, and the time model
# read a session idle through the window as on CPU for all of it)
sub exact_of
{
	my ($p, $ev) = @_;
	return split /\|/, q1("SELECT coalesce(sum(total_ms), 0) || '|' || coalesce(sum(waits), 0)
		FROM pg_tracer_exact_waits() WHERE pid = $p AND wait_event = '$ev'");
}
my $idler = $node->background_psql('postgres');
my $idle_pid = $idler->query_safe('SELECT pg_backend_pid()');
# a window seeds the waits of the backends the helper has mapped (once a
# second): one connected just before it has no wait in progress to seed
sleep(1.5);
my ($sl0, $sn0) = exact_of($pid, 'PgSleep');
$s->query_until(qr/sent/, "\\echo sent\nSELECT pg_sleep(7);\n");
my $sleep7 = time();
sleep(0.5);
my $w_open = time();
q1('SELECT pg_tracer_escalate(60)');
sleep(2);
wait_publications($node, 1);    # rows as of a moment ago, not up to 250 ms
my ($sl1) = exact_of($pid, 'PgSleep');
my ($id1) = exact_of($idle_pid, 'ClientRead');
my $mid = (time() - $w_open) * 1000;
ok(within($sl1 - $sl0, $mid, 0.2) && within($id1, $mid, 0.2),
	sprintf('mid-window, waits in progress since its start: PgSleep %.0f ms, ClientRead %.0f ms (%.0f +-20%%)',
		$sl1 - $sl0, $id1, $mid));
my $w_close = time();
q1('SELECT pg_tracer_deescalate()');
my $wlen = ($w_close - $w_open) * 1000;
wait_exact_copy($node);
my ($sl2, $sn2) = exact_of($pid, 'PgSleep');
my ($id2) = exact_of($idle_pid, 'ClientRead');
ok(within($sl2 - $sl0, $wlen, 0.15) && $sn2 - $sn0 == 1 && within($id2, $wlen, 0.15),
	sprintf('window closed: the parts it covered count, %.0f ms of sleep (one wait), %.0f ms idle (window %.0f ms)',
		$sl2 - $sl0, $id2, $wlen));
my ($tm_cov, $tm_idle, $tm_cpu) = split /\|/, q1("SELECT covered_ms || '|' || idle_ms || '|' || cpu_ms
	FROM pg_tracer_exact_time_model WHERE pid = $idle_pid");
ok(within($tm_cov, $wlen, 0.15) && $tm_idle >= 0.9 * $tm_cov && $tm_cpu <= 0.1 * $tm_cov,
	sprintf('time model of the idle session: covered %.0f ms, idle %.0f ms, CPU* %.0f ms', $tm_cov, $tm_idle, $tm_cpu));
$s->query_safe('SELECT 1');    # the sleep ends outside any window
sleep(1.5);
my ($sl3) = exact_of($pid, 'PgSleep');
is(sprintf('%.0f', $sl3), sprintf('%.0f', $sl2),
	sprintf('the sleep ended %.1f s after it began, outside the window: nothing more', time() - $sleep7));
$idler->quit;

# ---- at most 64 windows an hour under a limited budget: the next is
# refused, and says why (before, the oldest was dropped, and with it its
# time from the budget); an unlimited budget has no time to free, and the
# oldest leaves the list (bench/toggle_ab.sh opens some 100 an hour)
my $many = 'DO $$ BEGIN FOR i IN 1..70 LOOP
	PERFORM pg_tracer_escalate(1); PERFORM pg_tracer_deescalate(); END LOOP; END $$';
($rc, $out, $err) = $node->psql('postgres', $many);
is($rc, 0, 'unlimited budget: 70 windows in a row open') or diag($err);
ok(defined wait_until(sub { q1('SELECT count(*) FROM pg_tracer_escalations') eq '64' }, 5),
	'pg_tracer_escalations lists the latest 64');
ok(stop_helper($node, $helper), 'helper stopped');
$helper = start_helper($node, $rt, '--exact-budget', '300');
ok(defined wait_until(sub {
	q1("SELECT state FROM pg_tracer_probes WHERE probe_set = 'exact'") eq 'available' }, 20),
	'a helper with a budget of 300 s');
($rc, $out, $err) = $node->psql('postgres', $many);
like($err, qr/too many windows opened in the last hour.*HINT:/s, 'the 65th window in an hour: refused, with a hint');
ok(defined wait_until(sub { q1('SELECT count(*) FROM pg_tracer_escalations') eq '64' }, 5),
	'pg_tracer_escalations lists the 64');

# ---- --mode full: exact always, fidelity exact
ok(stop_helper($node, $helper), 'helper stopped');
$helper = start_helper($node, $rt, '--mode', 'full');
ok(connected(), 'helper restarted in full mode');
sleep(1.5);
q1('SELECT pg_tracer_reset()');
$s->query_safe('SELECT pg_sleep(1.5)');
wait_exact_copy($node);
is(q1("SELECT fidelity FROM pg_tracer_wait_events WHERE wait_event = 'PgSleep'"), 'exact',
	'full mode: pg_tracer_wait_events fidelity exact');
# a role that sees only its own sessions: their exited ones' exact rows are
# folded where it cannot see them, while its sampled rows keep them, so its
# figures stay sampled, the exact ones beside them (0.5.6)
{
	my $a = $node->background_psql('postgres', extra_params => [ '-U', 'alice' ]);
	$a->query_safe('SELECT pg_sleep(0.5)');
	wait_exact_copy($node);
	is($a->query_safe("SELECT fidelity || '|' || (exact_waits > 0) FROM pg_tracer_wait_events
			WHERE wait_event = 'PgSleep'"), 'mixed|true',
		'a plain role: fidelity mixed, its exact figures in exact_*');
	$a->quit;
}
is(q1("SELECT reason || '|' || requested_by FROM pg_tracer_escalations"), 'full|helper',
	'full mode shows as one window');
# exact time model of the sleeping session: its waits grow by the 1 s sleep
my ($w0) = q1("SELECT wait_ms FROM pg_tracer_exact_time_model WHERE pid = $pid");
$s->query_safe('SELECT pg_sleep(1)');
wait_exact_copy($node);
my ($w1) = q1("SELECT wait_ms FROM pg_tracer_exact_time_model WHERE pid = $pid");
ok($w1 - $w0 >= 950 && $w1 - $w0 <= 1100, sprintf('time model: blocking waits grew %.0f ms (the 1 s sleep)', $w1 - $w0));
# ... and its CPU* with its covered time while it burns CPU (both of the
# helper's copy; the covered time itself with the wall clock).  Both reads
# are made while its loop runs, a copy after it began: no wait of it is in
# progress then.
my $burn = $node->background_psql('postgres', on_error_stop => 0);
my $burn_pid = $burn->query_safe('SELECT pg_backend_pid()');
wait_mapped($node, $burn_pid);    # exact reads the wait event in its status slot
$burn->query_until(qr/^$/,
	"DO \$\$ DECLARE x bigint := 0; BEGIN FOR i IN 1..200000000 LOOP x := x + i; END LOOP; END \$\$;\n");
my $cq = "SELECT cpu_ms, covered_ms, extract(epoch FROM clock_timestamp()) * 1000
            FROM pg_tracer_exact_time_model WHERE pid = $burn_pid";
wait_until(sub { q1("SELECT state FROM pg_stat_activity WHERE pid = $burn_pid") eq 'active' }, 5);
sleep(1.2);		# a copy after the ClientRead before the loop ended
# each read right after a publication: the covered time runs to the copy,
# the wall time to the read, and a read may come up to 250 ms after a copy
wait_publications($node, 1);
my ($c0, $cov0, $ct0) = split /\|/, q1($cq);
sleep(1.5);
wait_publications($node, 1);
my ($c1, $cov1, $ct1) = split /\|/, q1($cq);
q1("SELECT pg_cancel_backend($burn_pid)");
$burn->quit;
my ($grew, $wall) = ($cov1 - $cov0, $ct1 - $ct0);
ok($grew >= 1000 && abs(($c1 - $c0) - $grew) <= 0.05 * $grew + 20 && abs($grew - $wall) <= 300,
	sprintf('time model: CPU* grew %.0f ms in %.0f ms of covered time (%.0f ms of wall time) of a PL/pgSQL loop',
		$c1 - $c0, $grew, $wall));
# an idle session's CPU* does not grow between reads at any point of the
# helper's publication cycle (every 250 ms): the view counts its covered
# time to the copy its waits are of.  Before 0.5.4 it counted to now, and
# the ClientRead in progress only to the copy: CPU* went up and down by up
# to 250 ms from one read to the next.
my $quiet = $node->background_psql('postgres');
my $quiet_pid = $quiet->query_safe('SELECT pg_backend_pid()');
wait_mapped($node, $quiet_pid);    # mapped, and idle since
my @idle_cpu;
for (1 .. 9)
{
	push @idle_cpu, q1("SELECT cpu_ms FROM pg_tracer_exact_time_model WHERE pid = $quiet_pid");
	sleep(0.11);
}
my @sorted = sort { $a <=> $b } @idle_cpu;
ok(@sorted == 9 && !grep({ $_ eq '' } @idle_cpu) && $sorted[-1] - $sorted[0] <= 40,
	sprintf('an idle session: CPU* within %.0f ms over 9 reads 110 ms apart (%s)',
		$sorted[-1] - $sorted[0], join(' ', map { sprintf('%.0f', $_) } @idle_cpu)));
is(q1("SELECT count(*) = (SELECT count(*) FROM pg_stat_activity),
		bool_and(as_of <= clock_timestamp() AND as_of > clock_timestamp() - interval '1 s')
	  FROM pg_tracer_exact_session_totals() t JOIN pg_stat_activity a USING (pid)"),
	't|t', 'pg_tracer_exact_session_totals: a row per pg_stat_activity process, as of the latest copy');
# a role without pg_read_all_stats: its own idle session's times, nothing
# of another role's (pg_stat_activity gives no start time for it)
my $own = $node->background_psql('postgres', extra_params => [ '-U', 'alice' ]);
my $own_pid = $own->query_safe('SELECT pg_backend_pid()');
sleep(1.5);
is($node->safe_psql('postgres',
		"SELECT string_agg(format('%s %s %s', pid = $own_pid, idle_ms > 1000, cpu_ms < 200), ',')
		   FROM pg_tracer_exact_time_model WHERE pid IN ($own_pid, $quiet_pid)",
		extra_params => [ '-U', 'alice' ]),
	't t t', "a role without pg_read_all_stats: its own idle session's times, not another role's");
$own->quit;
$quiet->quit;

# a connection's first statement, before the helper has mapped its backend
# (it maps new backends about once a second): timed through the
# postmaster's my_wait_event_info (the indirect query-id slot)
my $ft0 = time();
my $fresh = q1('SELECT pg_backend_pid() FROM pg_sleep(1.2)');
my $fresh_truth = (time() - $ft0) * 1000;
sleep(1.3);
my $fslept = q1("SELECT sum(total_ms) FROM pg_tracer_exact_waits()
	WHERE pid = $fresh AND wait_event = 'PgSleep'");
ok(within($fslept, 1200, 0.05),
	"a new connection's first statement: exact PgSleep = $fslept ms (1200 +-5%; psql saw "
	  . sprintf('%.0f ms, connection included)', $fresh_truth));
is(q1("SELECT count(*) FROM pg_tracer_exact_waits() WHERE pid = $fresh AND wait_event = 'PgSleep'"),
	'1', 'that sleep is one row (one wait event, one query id)');
is(q1('SELECT granted_s || mode FROM pg_tracer_exact_budget(), pg_tracer_escalate(5)'), '5full',
	'escalate in full mode is granted without budget');

# after a reset the time model counts from it: the time covered before it
# (here a 1.5 s sleep, whose wait the reset emptied) is not CPU*
$s->query_safe('SELECT pg_sleep(1.5)');
my $reset_t = time();    # reset_at is taken as the call starts
q1('SELECT pg_tracer_reset()');
sleep(1.2);
my ($cov, $cpu) = split /\|/,
  q1("SELECT round(covered_ms), round(cpu_ms) FROM pg_tracer_exact_time_model WHERE pid = $pid");
my $since_reset = (time() - $reset_t) * 1000;
ok(defined $cpu && $cov <= $since_reset + 200 && $cpu < 300,
	sprintf('after a reset the time model counts from it: covered %s ms of %.0f, CPU* %s ms',
		$cov // 'none', $since_reset, $cpu // 'none'));

# an event only the exact tier timed (the sampler off) has its row, exact
q1('ALTER SYSTEM SET pg_tracer.sampler_enabled = off');
q1('SELECT pg_reload_conf()');
ok(defined wait_until(sub { q1('SELECT sampler_enabled FROM pg_tracer_ash_status()') eq 'f' }, 5),
	'sampler off');
q1('SELECT pg_tracer_reset()');
$s->query_safe('SELECT pg_sleep(0.3)');
sleep(1.3);
is(q1("SELECT fidelity || '|' || waits || '|' || samples FROM pg_tracer_wait_events
		WHERE wait_event = 'PgSleep'"), 'exact|1|0',
	'pg_tracer_wait_events: a wait the sampler never saw is there, timed exactly');
is(q1("SELECT sum(waits) FROM pg_tracer_histogram('PgSleep')"), '1',
	'the reset emptied the histogram too: the one wait since');
q1('ALTER SYSTEM RESET pg_tracer.sampler_enabled');
q1('SELECT pg_reload_conf()');

signal_helper($helper, 'TERM');
$s->quit;
$locker->quit;
$blocked->quit;
$node->stop;
done_testing();
