# 010_ash_waits.pl — the sampled wait-event tier against known waits.
#
# Ground truths are measured independently of the sampler: pg_sleep()'s own
# duration, a lock wait timed from this script (the locker's COMMIT ends it),
# an idle period timed by this script, pg_stat_activity's query_id.  Also:
# windows against cumulative totals, what a non-privileged role sees, the
# settings' validation, and the sampler's restart.  No helper is running.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

my ($node) = tracer_node('ash_waits');
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');

ok( $node->poll_query_until('postgres',
		'SELECT sampler_running AND ticks > 10 FROM pg_tracer_ash_status'),
	'sampler is running');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_tracer sampler'"),
	'1', 'sampler is its own background worker');
$node->safe_psql('postgres', 'SELECT pg_tracer_reset()');

# within(got, want, fraction)

sub q1 { return $node->safe_psql('postgres', $_[0]); }

# ---- pg_sleep(3): Timeout:PgSleep on that pid
my $s = $node->background_psql('postgres');
my $pid = $s->query_safe('SELECT pg_backend_pid()');
my $t0 = time();
$s->query_safe('SELECT pg_sleep(3)');
note sprintf('pg_sleep(3) took %.3f s in psql', time() - $t0);
my $slept = q1("SELECT total_ms FROM pg_tracer_session_events
	WHERE pid = $pid AND wait_event_type = 'Timeout' AND wait_event = 'PgSleep'");
ok(within($slept, 3000, 0.15), "pg_sleep(3): Timeout:PgSleep = $slept ms (3000 +-15%)");
is(q1("SELECT waits FROM pg_tracer_session_events WHERE pid = $pid AND wait_event = 'PgSleep'"),
	'1', 'one sampled wait');
my $maxus = q1("SELECT max_us FROM pg_tracer_session_events WHERE pid = $pid AND wait_event = 'PgSleep'");
ok(within($maxus, 3_000_000, 0.15), "its longest run is the whole sleep ($maxus us)");
is(q1("SELECT top_wait FROM pg_tracer_sessions WHERE pid = $pid"),
	'Timeout:PgSleep', 'sessions: top wait of that pid');
my $sys_sleep = q1("SELECT total_ms FROM pg_tracer_wait_events WHERE wait_event = 'PgSleep'");
ok(within($sys_sleep, 3000, 0.15), "wait_events: PgSleep $sys_sleep ms, fidelity "
	  . q1("SELECT fidelity FROM pg_tracer_wait_events WHERE wait_event = 'PgSleep'"));

# ---- an idle session adds no DB time (its ClientRead is visible, as idle)
my ($db1, $idle1) = split /\|/, q1("SELECT db_time_ms, idle_ms FROM pg_tracer_sessions WHERE pid = $pid");
$t0 = time();
sleep(3);
my ($db2, $idle2) = split /\|/, q1("SELECT db_time_ms, idle_ms FROM pg_tracer_sessions WHERE pid = $pid");
my $idle_truth = (time() - $t0) * 1000;
cmp_ok($db2 - $db1, '<', 30, sprintf('idle session: DB time grew %.1f ms in 3 s', $db2 - $db1));
ok(within($idle2 - $idle1, $idle_truth, 0.15),
	sprintf('idle session: idle time grew %.0f ms (%.0f +-15%%)', $idle2 - $idle1, $idle_truth));
is(q1("SELECT state || ' ' || wait_event_type || ':' || wait_event FROM pg_tracer_active WHERE pid = $pid"),
	'idle Client:ClientRead', 'active: the idle session is idle in ClientRead');
is(q1("SELECT idle AND pct_db_time IS NULL FROM pg_tracer_wait_events WHERE wait_event = 'ClientRead'"),
	't', 'ClientRead is listed, as idle, outside DB time');

# ---- a session blocked ~3 s behind LOCK TABLE
q1('CREATE TABLE locked(a int); INSERT INTO locked VALUES (1)');
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN; LOCK TABLE locked IN ACCESS EXCLUSIVE MODE');
my $blocked = $node->background_psql('postgres');
my $bpid = $blocked->query_safe('SELECT pg_backend_pid()');
my $sent = time();
$blocked->query_until(qr/sent/, "\\echo sent\nSELECT count(*) FROM locked;\n");
ok($node->poll_query_until('postgres',
		"SELECT wait_event = 'relation' FROM pg_stat_activity WHERE pid = $bpid"),
	'the select waits for the lock');
sleep(3 - (time() - $sent)) if time() - $sent < 3;
$locker->query_safe('COMMIT');
my $lock_truth = (time() - $sent) * 1000;
# its result, and nothing after it, so that pg_stat_activity still shows
# this statement's query id
$blocked->query_until(qr/^1$/m, '');
my $qid = q1("SELECT query_id FROM pg_stat_activity WHERE pid = $bpid");
# the wait came before the statement's query id existed (parse analysis
# opens the table), so its samples were held until it ended; they go to the
# seconds they were taken in: the last 2 s hold at most 2 s of it (before,
# all of it went to the second it ended in)
my ($held2s, $held1m) = split /\|/, q1("SELECT
	(SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_query_events_since('2 s') WHERE queryid = $qid AND wait_event = 'relation')
	|| '|' || (SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_query_events_since('1 min') WHERE queryid = $qid AND wait_event = 'relation')");
ok($held2s <= 2100 && within($held1m, $lock_truth, 0.15),
	"a held wait goes to the seconds it was taken in: $held2s ms in the last 2 s, $held1m ms in the last minute ($lock_truth)");
my $explained = q1('EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) FROM locked');
$explained =~ /Query Identifier: (-?\d+)/;
is($qid, $1, 'pg_stat_activity and EXPLAIN agree on the blocked statement\'s query id');
$blocked->query_safe('SELECT 1');
note "blocked pid $bpid, query id $qid, waited about $lock_truth ms";
my $lk = q1("SELECT total_ms FROM pg_tracer_session_events
	WHERE pid = $bpid AND wait_event_type = 'Lock' AND wait_event = 'relation'");
ok(within($lk, $lock_truth, 0.15), "blocked pid: Lock:relation = $lk ms ($lock_truth +-15%)");
isnt($qid, '', 'the blocked statement has a query id');
my $qlk = q1("SELECT total_ms FROM pg_tracer_query_events
	WHERE queryid = $qid AND wait_event_type = 'Lock' AND wait_event = 'relation'");
ok(within($qlk, $lock_truth, 0.15),
	"query_events: Lock:relation under the blocked statement's query id = $qlk ms");
my $q0 = q1("SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_query_events
	WHERE queryid = 0 AND wait_event = 'relation'");
cmp_ok($q0, '<', 0.05 * $lock_truth, "almost nothing of it under query id 0 ($q0 ms)");
my $next_qid = q1("SELECT query_id FROM pg_stat_activity WHERE pid = $bpid");
is(q1("SELECT count(*) FROM pg_tracer_query_events WHERE queryid = $next_qid AND wait_event = 'relation'"), '0',
	'the statement after it does not inherit the lock wait');
is(q1("SELECT top_wait FROM pg_tracer_sessions WHERE pid = $bpid"), 'Lock:relation',
	'sessions: top wait of the blocked pid');
my $tm = q1("SELECT time_ms FROM pg_tracer_time_model WHERE stat_name = 'Lock:relation' AND depth = 2");
ok(within($tm, $lock_truth, 0.15), "time model: Lock:relation under Lock ($tm ms)");

# ---- windows against cumulative totals
# The sleep and the lock wait ended; 6 s later the 5-second window has
# neither, the 1-minute window and the 5-minute window (every bucket since
# the reset) have all of it.
sleep(6);
is(q1("SELECT count(*) FROM pg_tracer_session_events_since('5 s')
	WHERE pid IN ($pid, $bpid) AND NOT idle"), '0',
	'5 s window: no DB time of the finished waits');
$s->query_safe('SELECT pg_sleep(1)');
my $w5s = q1("SELECT total_ms FROM pg_tracer_session_events_since('5 s') WHERE pid = $pid AND wait_event = 'PgSleep'");
ok(within($w5s, 1000, 0.15), "5 s window: only the latest pg_sleep(1) of that pid ($w5s ms)");
ok(within(q1("SELECT total_ms FROM pg_tracer_session_events WHERE pid = $pid AND wait_event = 'PgSleep'"), 4000, 0.15),
	'cumulative: both sleeps of that pid');
my $w1m = q1("SELECT total_ms FROM pg_tracer_wait_events_since('1 min') WHERE wait_event = 'relation'");
ok(within($w1m, $lk, 0.02), "1 min window: Lock:relation $w1m ms = cumulative $lk ms");
my $w5m = q1("SELECT total_ms FROM pg_tracer_wait_events_since('5 min') WHERE wait_event = 'PgSleep'");
my $cum = q1("SELECT total_ms FROM pg_tracer_wait_events WHERE wait_event = 'PgSleep'");
$cum += 0;
ok(within($w5m, $cum, 0.001), "5 min window (10 s buckets): PgSleep $w5m ms = cumulative $cum ms");
my ($db5, $db60) = split /\|/, q1("SELECT
	(SELECT time_ms FROM pg_tracer_time_model_since('5 s') WHERE stat_name = 'DB Time'),
	(SELECT time_ms FROM pg_tracer_time_model_since('1 min') WHERE stat_name = 'DB Time')");
cmp_ok($db5, '<', $db60 - 5000, "time model: DB time of the last 5 s ($db5) well below the last minute's ($db60)");
is(q1("SELECT string_agg(window_length || ' ' || (time_ms > 0), ', ' ORDER BY window_length) FROM pg_tracer_time_model_windows
	WHERE stat_name = 'Lock:relation'"), '00:01:00 true, 00:05:00 true',
	'time model windows: the lock wait is in the last minute and the last 5 minutes, not the last 5 s');

is(q1("SELECT count(*) FROM pg_tracer_query_events_since('1 min') WHERE queryid = $qid AND wait_event = 'relation'"),
	'1', 'query events over a window');
my ($rc, $out, $err) = $node->psql('postgres', "SELECT * FROM pg_tracer_wait_events_since('0 s')");
like($err, qr/window must be greater than 0 and at most 300 seconds/, 'empty window refused');
($rc, $out, $err) = $node->psql('postgres', "SELECT * FROM pg_tracer_time_model_since('1 hour')");
like($err, qr/at most 300 seconds.*\n.*HINT:/s, 'too long a window refused, with a hint');

# ---- visibility: a plain role sees its own sessions only
q1("CREATE ROLE alice LOGIN; CREATE ROLE mona LOGIN IN ROLE pg_monitor");
my $as = $node->background_psql('postgres', extra_params => [ '-U', 'alice' ]);
my $apid = $as->query_safe('SELECT pg_backend_pid()');
$as->query_safe('SELECT pg_sleep(1)');
sub as_user { return $node->safe_psql('postgres', $_[1], extra_params => [ '-U', $_[0] ]); }
is(as_user('alice', "SELECT count(*) FROM pg_tracer_sessions WHERE pid = $apid"), '1',
	'alice sees her session');
is(as_user('alice', "SELECT count(*) FROM pg_tracer_sessions WHERE usename IS DISTINCT FROM 'alice'"), '0',
	'alice sees no other session');
is(as_user('alice', "SELECT count(*) FROM pg_tracer_session_events WHERE pid IN ($pid, $bpid)"), '0',
	"alice sees none of the superuser's session events");
is(as_user('alice', "SELECT count(*) FROM pg_tracer_active WHERE usename IS DISTINCT FROM 'alice'"), '0',
	'alice: active shows only her sessions');
is(as_user('alice', "SELECT count(*) FROM pg_tracer_query_events WHERE queryid = $qid"), '0',
	"alice does not see the superuser's query");
my $asleep = as_user('alice', "SELECT total_ms FROM pg_tracer_wait_events WHERE wait_event = 'PgSleep'");
ok(within($asleep, 1000, 0.15), "alice's wait events are her own: PgSleep $asleep ms (1000 +-15%)");
is(as_user('alice', "SELECT count(*) FROM pg_tracer_wait_events WHERE wait_event = 'relation'"), '0',
	"alice's wait events do not include others' lock wait");
cmp_ok(as_user('mona', "SELECT count(*) FROM pg_tracer_sessions WHERE pid IN ($pid, $bpid, $apid)"), '==', 3,
	'a pg_monitor member sees every session');
ok(within(as_user('mona', "SELECT total_ms FROM pg_tracer_wait_events WHERE wait_event = 'PgSleep'"),
		$cum + 1000, 0.1), 'a pg_monitor member sees system-wide totals');
# a parallel query of alice's: its workers' time is in her query rows, and so
# in the DB time their shares are of (before, the workers' sessions were not
# hers: the shares summed to well over 100 %)
q1("CREATE TABLE par_t AS SELECT g FROM generate_series(1, 1500000) g; GRANT SELECT ON par_t TO alice");
$as->query_safe($_) for ('SET max_parallel_workers_per_gather = 2', 'SET parallel_setup_cost = 0',
	'SET parallel_tuple_cost = 0', 'SET min_parallel_table_scan_size = 0');
$as->query_safe("SELECT count(*) FROM par_t WHERE md5(g::text) LIKE '%abc%'") for 1 .. 2;
my $shares = as_user('alice', 'SELECT round(sum(pct_db_time)::numeric, 1) FROM pg_tracer_query_events');
ok($shares > 50 && $shares <= 101,
	"alice's query rows, her parallel workers' time included, share out her DB time: $shares %");
cmp_ok(as_user('mona', "SELECT count(*) FROM pg_tracer_sessions
		WHERE backend_type = 'parallel worker' AND usename = 'alice'"), '>=', 2,
	'her parallel workers are sessions of type "parallel worker", hers');
($rc, $out, $err) = $node->psql('postgres', 'SELECT pg_tracer_reset()', extra_params => [ '-U', 'alice' ]);
like($err, qr/permission denied for function pg_tracer_reset/, 'reset is not granted to PUBLIC');
$as->quit;

# a parallel scan inside a function: its workers' samples go to the
# top-level statement, as the leader's do (PostgreSQL keeps the top-level
# id in its entry) and as the kernel tier's events do; before, the workers
# reported the nested statement's own id, which pg_stat_statements with
# track = top never lists
q1(q{CREATE FUNCTION par_f() RETURNS SETOF bigint LANGUAGE plpgsql AS $f$
	BEGIN RETURN QUERY SELECT count(*) FROM par_t WHERE md5(g::text) LIKE '%abd%'; END $f$});
my $ps = $node->background_psql('postgres');
$ps->query_safe($_) for ('SET max_parallel_workers_per_gather = 2', 'SET parallel_setup_cost = 0',
	'SET parallel_tuple_cost = 0', 'SET min_parallel_table_scan_size = 0');
my ($outer_qid) = $ps->query_safe('EXPLAIN (VERBOSE, FORMAT JSON) SELECT * FROM par_f()')
  =~ /"Query Identifier": (-?\d+)/;
my ($inner_qid) = $ps->query_safe(
	q{EXPLAIN (VERBOSE, FORMAT JSON) SELECT count(*) FROM par_t WHERE md5(g::text) LIKE '%abd%'})
  =~ /"Query Identifier": (-?\d+)/;
my $workers_sql = "SELECT count(*) FROM pg_tracer_sessions WHERE backend_type = 'parallel worker'";
my $workers0 = q1($workers_sql);
# (EXPLAIN reports the explained statement's id to the hooks too: what it
# left there is the baseline)
sleep(1.5);
my $inner_sql = "SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_query_events WHERE queryid = $inner_qid";
my $inner0 = q1($inner_sql);
$ps->query_safe('SELECT * FROM par_f()') for 1 .. 2;
$ps->quit;
sleep(1.5);
cmp_ok(q1($workers_sql) - $workers0, '>=', 2, 'the nested scan ran in parallel workers');
is(q1($inner_sql), $inner0, 'no sample of it under the nested statement\'s id')
  or diag(q1("SELECT string_agg(wait_event || ':' || total_ms, ', ') FROM pg_tracer_query_events
		WHERE queryid = $inner_qid"));
cmp_ok(q1("SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_query_events WHERE queryid = $outer_qid"),
	'>', 0, 'the top-level statement has the time');

# ---- settings are validated
for my $bad ([ 'pg_tracer.sample_rate', '0', qr/0 is outside the valid range for parameter "pg_tracer.sample_rate" \(1 \.\. 1000\)/ ],
	[ 'pg_tracer.sample_rate', '1001', qr/1001 is outside the valid range/ ],
	[ 'pg_tracer.sample_rate', "'fast'", qr/invalid value for parameter "pg_tracer.sample_rate": "fast"/ ],
	[ 'pg_tracer.ash_max_entries', '10', qr/10 is outside the valid range for parameter "pg_tracer.ash_max_entries" \(256 \.\. 1000000\)/ ],
	[ 'pg_tracer.sampler_enabled', "'maybe'", qr/parameter "pg_tracer.sampler_enabled" requires a Boolean value/ ])
{
	($rc, $out, $err) = $node->psql('postgres', "ALTER SYSTEM SET $bad->[0] = $bad->[1]");
	like($err, $bad->[2], "ALTER SYSTEM SET $bad->[0] = $bad->[1] refused");
}
($rc, $out, $err) = $node->psql('postgres', 'SET pg_tracer.sample_rate = 50');
like($err, qr/parameter "pg_tracer.sample_rate" cannot be changed now/, 'sample_rate is not a session setting');

# a reload changes the rate: ticks per second follow it
q1('ALTER SYSTEM SET pg_tracer.sample_rate = 20');
$node->reload;
ok($node->poll_query_until('postgres', 'SELECT sample_rate = 20 FROM pg_tracer_ash_status'),
	'reload: rate 20');
sleep(0.3);
my ($k1, $t1) = split /\|/, q1('SELECT ticks, extract(epoch from clock_timestamp()) FROM pg_tracer_ash_status');
sleep(2);
my ($k2, $t2) = split /\|/, q1('SELECT ticks, extract(epoch from clock_timestamp()) FROM pg_tracer_ash_status');
my $hz = ($k2 - $k1) / ($t2 - $t1);
ok($hz > 14 && $hz < 22, sprintf('%.1f ticks per second at sample_rate = 20', $hz));
q1('ALTER SYSTEM SET pg_tracer.sampler_enabled = off');
$node->reload;
ok($node->poll_query_until('postgres', 'SELECT NOT sampler_enabled FROM pg_tracer_ash_status'),
	'reload: sampler disabled');
sleep(1.2);
$k1 = q1('SELECT ticks FROM pg_tracer_ash_status');
sleep(1.5);
is(q1('SELECT ticks FROM pg_tracer_ash_status'), $k1, 'a disabled sampler takes no samples');
q1('ALTER SYSTEM RESET pg_tracer.sample_rate; ALTER SYSTEM RESET pg_tracer.sampler_enabled');
$node->reload;

# ---- the sampler restarts; the counters survive it, and so does the DB
# time of a session that runs across the restart (before, it started again
# from 0)
my $across = $node->background_psql('postgres', on_error_stop => 0);
my $across_pid = $across->query_safe('SELECT pg_backend_pid()');
$across->query_until(qr/^$/, "SELECT pg_sleep(20);\n");
sleep(2);
my $db_before = q1("SELECT db_time_ms FROM pg_tracer_active WHERE pid = $across_pid");
my $spid = q1('SELECT sampler_pid FROM pg_tracer_ash_status');
kill 'TERM', $spid;
ok($node->poll_query_until('postgres',
		"SELECT sampler_running AND sampler_pid <> $spid AND ticks > $k1 + 5 FROM pg_tracer_ash_status"),
	'the sampler is restarted after it exits');
ok(within(q1("SELECT total_ms FROM pg_tracer_wait_events WHERE wait_event = 'relation'"), $lk, 0.001),
	'the totals survive a sampler restart');
sleep(0.5);    # the new sampler's first half second
my $db_after = q1("SELECT db_time_ms FROM pg_tracer_active WHERE pid = $across_pid");
cmp_ok($db_after, '>', $db_before + 100,
	"a session's DB time goes on across the restart ($db_before ms before, $db_after ms after)");
cmp_ok($db_before, '>', 1500, "... and was counted before it ($db_before ms of some 2,000)");
q1("SELECT pg_cancel_backend($across_pid)");
$across->quit;

# ---- pg_cancel_backend() on the sampler cancels nothing: it does not end
# it (an ERROR outside a statement would, losing its held samples)
my $cancel_pid = q1('SELECT sampler_pid FROM pg_tracer_ash_status');
my $cancel_log = -s $node->logfile;
is(q1("SELECT pg_cancel_backend($cancel_pid)"), 't', 'the sampler takes a cancel signal');
my $cancel_ticks = q1('SELECT ticks FROM pg_tracer_ash_status');
sleep(1);
is(q1("SELECT sampler_pid = $cancel_pid AND ticks > $cancel_ticks FROM pg_tracer_ash_status"), 't',
	'and goes on sampling, the same process');
unlike(slurp_file($node->logfile, $cancel_log), qr/FATAL|terminating background worker/,
	'the server log shows no error of it');

# ---- samples held for their query id across a sampler restart: a
# statement blocked in parse analysis (no query id yet) while the sampler
# is terminated.  The stopping sampler gives what it held to the query
# table (to query id 0 here); before, those samples went with it, from the
# per-query views only (the per-event totals count every sample at once):
# here some 2 s of the wait.
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN; LOCK TABLE locked IN ACCESS EXCLUSIVE MODE');
my $waiter = $node->background_psql('postgres');
my $waiter_pid = $waiter->query_safe('SELECT pg_backend_pid()');
my $rel_sql = "SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_query_events WHERE wait_event = 'relation'";
my $rel0 = q1($rel_sql);
my $t_sent = time();
$waiter->query_until(qr/sent/, "\\echo sent\nSELECT count(*) FROM locked;\n");
$node->poll_query_until('postgres', "SELECT wait_event = 'relation' FROM pg_stat_activity WHERE pid = $waiter_pid");
sleep(2);
my $held_sampler = q1('SELECT sampler_pid FROM pg_tracer_ash_status');
my $t_term = time();
q1("SELECT pg_terminate_backend($held_sampler)");
ok(defined wait_until(sub {
	my $p = q1('SELECT sampler_pid FROM pg_tracer_ash_status');
	$p ne '' && $p != 0 && $p != $held_sampler }, 15), 'the sampler is back (terminated while samples were held)');
my $t_back = time();
sleep(1);
$holder->query_safe('COMMIT');
my $t_free = time();
$waiter->query_until(qr/^1$/m, '');
sleep(0.3);
my $rel_grew = q1($rel_sql) - $rel0;
my $rel_truth = (($t_term - $t_sent) + ($t_free - $t_back)) * 1000;
ok(within($rel_grew, $rel_truth, 0.2),
	sprintf('a lock wait across the restart: %.0f ms in the query events, %.0f ms blocked while a sampler ran',
		$rel_grew, $rel_truth));
$holder->quit;
$waiter->quit;
is(q1("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_tracer helper link'"), '1',
	'the helper link worker keeps running');

# ---- reading never waits on the sampler, even a stopped one
$spid = q1('SELECT sampler_pid FROM pg_tracer_ash_status');
kill 'STOP', $spid;
my $tr = time();
my $n = q1("SELECT (SELECT count(*) FROM pg_tracer_wait_events) + (SELECT count(*) FROM pg_tracer_sessions)
	+ (SELECT count(*) FROM pg_tracer_time_model_since('5 min')) + (SELECT count(*) FROM pg_tracer_active)");
my $took = time() - $tr;
# pg_tracer_reset() waits 2 s for the sampler, by the clock (before: 2000
# polls, each up to 50 ms when the sampler stopped inside an update)
$tr = time();
my ($rrc, $rout, $rerr) = $node->psql('postgres', 'SELECT pg_tracer_reset()');
my $rtook = time() - $tr;
kill 'CONT', $spid;
ok($n > 0 && $took < 2, sprintf('views answer while the sampler is stopped (%.3f s)', $took));
ok($rout eq 'f' && $rerr =~ /has not confirmed the reset yet/ && $rtook < 3.5,
	sprintf('reset gives up after 2 s when the sampler is stopped (%.3f s), saying so', $rtook));

# ---- a disabled sampler serves pg_tracer_reset(), so that the sampled
# counters start again with the exact and kernel ones (before, the call
# waited 2 s, said false, and the reset came whenever the sampler was
# enabled again)
q1('ALTER SYSTEM SET pg_tracer.sampler_enabled = off');
$node->reload;
ok($node->poll_query_until('postgres', 'SELECT NOT sampler_enabled FROM pg_tracer_ash_status'),
	'reload: sampler disabled again');
my $reset_at0 = q1('SELECT reset_at FROM pg_tracer_ash_status');
is(q1('SELECT pg_tracer_reset()'), 't', 'a disabled sampler confirms a reset');
isnt(q1('SELECT reset_at FROM pg_tracer_ash_status'), $reset_at0, '... and reset_at moves');
q1('ALTER SYSTEM RESET pg_tracer.sampler_enabled');
$node->reload;
ok($node->poll_query_until('postgres', 'SELECT sampler_enabled FROM pg_tracer_ash_status'),
	'reload: sampler enabled');

# ---- reset empties counters and history
ok(q1('SELECT pg_tracer_reset()') eq 't', 'reset confirmed by the sampler');
my $t_reset = time();
is(q1("SELECT count(*) FROM pg_tracer_wait_events WHERE wait_event IN ('PgSleep', 'relation')"), '0',
	'reset: cumulative rows gone');
is(q1("SELECT count(*) FROM pg_tracer_wait_events_since('1 min') WHERE wait_event IN ('PgSleep', 'relation')"), '0',
	'reset: history gone');
# sessions idle since long before it: their ClientRead runs on, counted
# from the reset (before: 0 waits, and a max_us of the whole idle time)
sleep(1);
my ($cr_waits, $cr_max) = split /\|/,
  q1("SELECT waits, max_us FROM pg_tracer_wait_events WHERE wait_event = 'ClientRead'");
my $since_reset_us = (time() - $t_reset) * 1e6;
cmp_ok($cr_waits, '>=', 3, "reset: idle sessions' ClientRead runs count as waits again ($cr_waits)");
cmp_ok($cr_max, "<=", $since_reset_us + 200_000,
	sprintf('reset: their max_us (%d) is of the time since the reset (%.0f us)', $cr_max, $since_reset_us));
is(q1('SELECT overflow_rows + history_overflow_rows + session_overflow FROM pg_tracer_ash_status'), '0',
	'no overflow');

# ---- a statement that fails in parse analysis (lock_timeout while it
# opens its table) has no query id: its lock wait goes to query id 0, not
# to the ROLLBACK the client sends next in the same transaction
$locker->query_safe('BEGIN; LOCK TABLE locked IN ACCESS EXCLUSIVE MODE');
my $tx = $node->background_psql('postgres', on_error_stop => 0);
$tx->query_safe("BEGIN; SET LOCAL lock_timeout = '1500ms'");
# the ROLLBACK follows at once, before the sampler's next look
$tx->query("SELECT count(*) FROM locked;\nROLLBACK");
like($tx->{stderr}, qr/lock timeout/, 'a statement in a transaction fails on lock_timeout');
$tx->{stderr} = '';
$locker->query_safe('COMMIT');
sleep(0.5);
my ($lk0, $lk_other) = split /\|/, q1("SELECT
	(SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_query_events WHERE queryid = 0 AND wait_event = 'relation')
	|| '|' || (SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_query_events WHERE queryid <> 0 AND wait_event = 'relation')");
ok(within($lk0, 1500, 0.15) && $lk_other < 100,
	"its lock wait is under query id 0 ($lk0 ms), none under another statement's ($lk_other ms)");
$tx->quit;

# ---- the same inside a savepoint (psql's ON_ERROR_ROLLBACK, a driver's
# automatic savepoints): the failure aborts a subtransaction only, and the
# client's ROLLBACK TO SAVEPOINT is of the same transaction
my $relation_ms = "SELECT
	(SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_query_events WHERE queryid = 0 AND wait_event = 'relation')
	|| '|' || (SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_query_events WHERE queryid <> 0 AND wait_event = 'relation')";
my ($sp0_before, $sp_other_before) = split /\|/, q1($relation_ms);
$locker->query_safe('BEGIN; LOCK TABLE locked IN ACCESS EXCLUSIVE MODE');
my $sp = $node->background_psql('postgres', on_error_stop => 0);
$sp->query_safe("BEGIN; SET LOCAL lock_timeout = '1500ms'; SAVEPOINT s1");
$sp->query("SELECT count(*) FROM locked;\nROLLBACK TO SAVEPOINT s1");
like($sp->{stderr}, qr/lock timeout/, 'a statement in a savepoint fails on lock_timeout');
$sp->{stderr} = '';
$locker->query_safe('COMMIT');
$sp->query_safe('COMMIT');
sleep(0.5);
my ($sp0, $sp_other) = split /\|/, q1($relation_ms);
$sp0 -= $sp0_before;
$sp_other -= $sp_other_before;
ok(within($sp0, 1500, 0.15) && $sp_other < 100,
	"in a savepoint too: under query id 0 ($sp0 ms), none under ROLLBACK TO SAVEPOINT's ($sp_other ms)");
$sp->quit;

# ---- the sampler restarts (terminated here; an error in it does the same):
# a session that runs across the restart keeps its one directory entry, and
# is marked exited when it ends (before: a second entry, and the first one
# stayed "running" for good)
my $r = $node->background_psql('postgres');
my $rpid = $r->query_safe('SELECT pg_backend_pid()');
$r->query_safe('SELECT pg_sleep(0.2)');
my $old_sampler = q1('SELECT sampler_pid FROM pg_tracer_ash_status');
q1("SELECT pg_terminate_backend($old_sampler)");
ok(defined wait_until(sub {
	my $p = q1('SELECT sampler_pid FROM pg_tracer_ash_status');
	$p ne '' && $p != 0 && $p != $old_sampler }, 15), 'the sampler is back after it was terminated');
sleep(0.5);
is(q1("SELECT count(*) || '|' || bool_or(exited) FROM pg_tracer_sessions WHERE pid = $rpid"), '1|false',
	'a session running across the restart: one entry, not exited');
$r->quit;
sleep(1.5);
is(q1("SELECT count(*) || '|' || bool_and(exited) FROM pg_tracer_sessions WHERE pid = $rpid"), '1|true',
	'... marked exited once it ends');

# ---- a connection storm: more sessions within the five minutes exited ones
# are kept than the session directory has entries (2 x slots + 64), so
# entries are given to new sessions; the rows of the sessions they held go
# with them (before, they stayed for good, named by no session, until the
# table filled)
my $slots = q1('SELECT setting::int FROM pg_settings WHERE name = \'max_connections\'')
  + q1('SELECT setting::int FROM pg_settings WHERE name = \'autovacuum_max_workers\'')
  + q1('SELECT setting::int FROM pg_settings WHERE name = \'max_worker_processes\'')
  + q1('SELECT setting::int FROM pg_settings WHERE name = \'max_wal_senders\'') + 1
  + 6;    # MaxBackends and PostgreSQL 15's six auxiliary process types
my $storm = 2 * (2 * $slots + 64);
# alice sleeps 1 s in a session that ends before the storm, which takes its
# directory entry, and its rows
as_user('alice', 'SELECT pg_sleep(1)');
my $script = $node->basedir . '/short.sql';
open(my $fh, '>', $script) or die "$script: $!";
print $fh "SELECT pg_sleep(0.03);\n";
close($fh);
system('pgbench', '-n', '-C', '-c', '2', '-t', int($storm / 2) + 1, '-f', $script,
	'-h', $node->host, '-p', $node->port, 'postgres') == 0 or die 'pgbench failed';
sleep(2.5);    # a collection each second
my ($listed, $nameless, $rows) = split /\|/, q1("SELECT count(*) || '|' || count(*) FILTER (WHERE exited IS NULL)
	|| '|' || (SELECT session_rows FROM pg_tracer_ash_status) FROM pg_tracer_sessions");
ok($listed <= 2 * $slots + 64 && $listed > $storm / 4 && $nameless == 0,
	"after $storm short connections: $listed sessions listed (the directory holds "
	  . (2 * $slots + 64) . "), $nameless without a name");
cmp_ok($rows, '<=', 5 * $listed, "and the sampler keeps rows of those only ($rows rows)");
# the sessions forgotten before their five minutes are counted: some half
# of the storm's found the directory full of younger exited ones
my $forgotten = q1('SELECT session_overflow FROM pg_tracer_ash_status');
ok($forgotten >= $storm / 4 && $forgotten <= $storm,
	"sessions forgotten early are counted: session_overflow $forgotten of $storm connections");
# what alice sees since the reset still has her collected session's time
# (before, it went with the session's rows: her query rows' shares of her
# DB time grew past 100 %)
my ($asl, $ashares) = split /\|/, as_user('alice', "SELECT
	(SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_wait_events WHERE wait_event = 'PgSleep')
	|| '|' || (SELECT round(sum(pct_db_time)::numeric, 1) FROM pg_tracer_query_events)");
ok(within($asl, 1000, 0.15) && $ashares <= 100.1,
	"a role's totals outlive its sessions' rows: PgSleep $asl ms (1000 +-15%), query shares sum to $ashares %");

# avg_sessions divides by the time the window's samples stand for: a
# 5 s window read just after a second begins covers 4 whole seconds and a
# sliver, and one session sleeping all along is one session, not 0.8
my $sleeper = $node->background_psql('postgres');
$sleeper->query_until(qr/slept/, "\\echo slept\nSELECT pg_sleep(9);\n");
sleep(6.5);
sleep(1.05 - (time() - int(time())));    # 50 ms into a second
my ($aas, $covered) = split /\|/, q1("SELECT avg_sessions, covered_ms FROM pg_tracer_time_model_windows
	WHERE window_length = '5 s' AND stat_name = 'Timeout:PgSleep'");
ok(within($aas, 1, 0.03), "5 s window: a session sleeping throughout is $aas sessions (covered $covered ms)");
cmp_ok($covered, '>=', 4000, 'the 5 s window covers four whole seconds');
cmp_ok($covered, '<=', 5000, 'and part of the current one');
$sleeper->quit;

$s->quit;
$locker->quit;
$blocked->quit;
$node->stop;

done_testing();
