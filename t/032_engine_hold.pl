# 032_engine_hold.pl — lock hold times on a real server: heavyweight locks
# (pg-lock-hold: uprobes on the exported lock manager) and LWLocks
# (pg-lwlock-hold: USDT), against ground truth measured by the client (the
# time between LOCK TABLE returning and COMMIT returning), pgbench's own
# transaction count, and the subtransaction rules (ROLLBACK TO releases).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;
use Time::HiRes qw(time sleep);

plan skip_all => 'root helper not reachable (run through scripts/test.sh)'
  unless helper_available();

my ($node, $rt) = tracer_node('hold', conf => "compute_query_id = on\nautovacuum = off\n");
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
$node->safe_psql('postgres', 'CREATE TABLE hold_t (a int); CREATE TABLE hold_s (a int)');
my $helper = start_helper($node, $rt, '--engine-probes', 'pg-lock-hold,pg-lwlock-hold');

my %sets;
ok(defined wait_until(sub {
	%sets = map { my @f = split /\|/, $_, 3; ($f[0] => "$f[1] $f[2]") }
	  split /\n/, $node->safe_psql('postgres',
		"SELECT probe_set, state, mechanism FROM pg_tracer_probes WHERE probe_set LIKE 'pg-%hold'");
	($sets{'pg-lock-hold'} // '') =~ /^available/ && ($sets{'pg-lwlock-hold'} // '') =~ /^available/
}, 20), 'hold-time sets attach');
is($sets{'pg-lock-hold'}, 'available uprobe', 'pg-lock-hold: uprobes (no USDT marks grants)');
is($sets{'pg-lwlock-hold'}, 'available usdt', 'pg-lwlock-hold: USDT');
like($node->safe_psql('postgres',
		"SELECT state || ': ' || reason FROM pg_tracer_probes WHERE probe_set = 'pg-lwlock'"),
	qr/^unavailable: off in the daemon/, 'sets not named stay off');

my $relid = $node->safe_psql('postgres', "SELECT 'hold_t'::regclass::oid");
my $srelid = $node->safe_psql('postgres', "SELECT 'hold_s'::regclass::oid");
my $dbid = $node->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = 'postgres'");

# --- a table lock held ~2 s: hold time = LOCK TABLE returned .. COMMIT returned
my $s = $node->background_psql('postgres');
my $pid = $s->query_safe('SELECT pg_backend_pid()');
wait_mapped($node, $pid);    # its query id is read in its status slot
$s->query_safe('BEGIN');
$s->query_safe('LOCK TABLE hold_t IN ACCESS EXCLUSIVE MODE');
my $t0 = time();
# the statement's query id as the server reports it, idle in transaction
my $lock_qid = $node->safe_psql('postgres', "SELECT query_id FROM pg_stat_activity WHERE pid = $pid");
$s->query_safe('SELECT pg_sleep(2)');
$s->query_safe('COMMIT');
my $held_ms = (time() - $t0) * 1000;
my $row;
ok(defined wait_until(sub {
	$row = $node->safe_psql('postgres',
		"SELECT lock_type, lock_mode, lock_field1, lock_field2, calls, total_ms, max_us, queryid
		   FROM pg_tracer_engine_events
		  WHERE pid = $pid AND probe = 'lock-hold' AND lock_field2 = $relid");
	$row ne ''
}, 5), "hold of hold_t published ($row)");
my @h = split /\|/, $row;
is("$h[0]|$h[1]|$h[2]|$h[3]|$h[4]", "relation|AccessExclusiveLock|$dbid|$relid|1",
	'one hold: relation lock, AccessExclusiveLock, on hold_t in this database');
cmp_ok(abs($h[5] - $held_ms), '<=', 0.1 * $held_ms,
	"hold $h[5] ms within 10% of $held_ms ms measured by the client");
cmp_ok($h[5], '>=', 2000, 'at least the sleep inside the transaction');
is($h[7], $lock_qid, "counted under the query id of the statement that took the lock ($lock_qid in pg_stat_activity)");
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_tracer_engine_histogram('lock-hold')
		  WHERE bucket_lo_us <= $h[6] AND bucket_hi_us > $h[6] AND count > 0"),
	'1', 'lock-hold histogram has the hold in its bucket');

# --- an object lock keeps its three fields: database, class, object (a
# DROP FUNCTION locks the function; before, the object's id was lost and
# every object of a class shared one row)
$s->query_safe('CREATE FUNCTION hold_f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$');
my $fid = $s->query_safe("SELECT 'hold_f()'::regprocedure::oid");
$s->query_safe('BEGIN');
$s->query_safe('DROP FUNCTION hold_f()');
$s->query_safe('SELECT pg_sleep(0.3)');
$s->query_safe('COMMIT');
ok(defined wait_until(sub {
	$row = $node->safe_psql('postgres',
		"SELECT lock_field1, lock_field2, lock_mode FROM pg_tracer_engine_events
		  WHERE pid = $pid AND probe = 'lock-hold' AND lock_type = 'object' AND lock_field3 = $fid");
	$row ne ''
}, 5), "the object lock of DROP FUNCTION names the function ($row)");
is($row, "$dbid|1255|AccessExclusiveLock", 'in this database, of pg_proc, AccessExclusiveLock');

# --- subtransaction abort releases (LockReleaseCurrentOwner), commit does not
$s->query_safe('BEGIN');
$s->query_safe('SAVEPOINT sp');
$s->query_safe('LOCK TABLE hold_s IN SHARE MODE');
$t0 = time();
$s->query_safe('SELECT pg_sleep(0.6)');
$s->query_safe('ROLLBACK TO sp');
my $sub_ms = (time() - $t0) * 1000;
$s->query_safe('SELECT pg_sleep(1)');
$s->query_safe('COMMIT');
ok(defined wait_until(sub {
	$row = $node->safe_psql('postgres',
		"SELECT lock_mode, calls, total_ms FROM pg_tracer_engine_events
		  WHERE pid = $pid AND probe = 'lock-hold' AND lock_field2 = $srelid");
	$row ne ''
}, 5), "hold inside a rolled-back savepoint published ($row)");
@h = split /\|/, $row;
is("$h[0]|$h[1]", 'ShareLock|1', 'ShareLock, once');
cmp_ok(abs($h[2] - $sub_ms), '<=', 0.1 * $sub_ms + 20,
	"ends at ROLLBACK TO: $h[2] ms ~ $sub_ms ms, not at COMMIT 1 s later");
$s->quit;

# --- pgbench -S: one AccessShareLock hold on pgbench_accounts per transaction
# (fast-path locks included); LWLock holds with their tranche names
$node->command_ok([ 'pgbench', '-i', '-s', '1', '-q', 'postgres' ], 'pgbench -i');
my $acc = $node->safe_psql('postgres', "SELECT 'pgbench_accounts'::regclass::oid");
my $sql_acc = "SELECT coalesce(sum(calls), 0) FROM pg_tracer_engine_events
                WHERE probe = 'lock-hold' AND lock_field2 = $acc AND lock_mode = 'AccessShareLock'";
wait_kernel_copy($node);
my $c0 = $node->safe_psql('postgres', $sql_acc);
my ($out, $err) = ('', '');
$node->run_log([ 'pgbench', '-S', '-c', '2', '-j', '2', '-t', '500', '-n', 'postgres' ], '>', \$out);
my ($ntx) = $out =~ /number of transactions actually processed: (\d+)/;
is($ntx, 1000, 'pgbench ran 1000 transactions');
my $c1;
ok(defined wait_until(sub {
	$c1 = $node->safe_psql('postgres', $sql_acc);
	$c1 - $c0 >= $ntx
}, 5), 'holds on pgbench_accounts counted');
is($c1 - $c0, $ntx, "one hold per transaction (" . ($c1 - $c0) . " = $ntx)");

my %tr = map { my @f = split /\|/; ($f[0] => $f[1]) } split /\n/, $node->safe_psql('postgres',
	"SELECT detail, sum(calls) FROM pg_tracer_engine_events WHERE probe = 'lwlock-hold' GROUP BY 1");
cmp_ok(($tr{'BufferContent LW_SHARED'} // 0), '>=', $ntx, 'BufferContent shared holds >= transactions');
cmp_ok(($tr{'BufferMapping LW_SHARED'} // 0) + ($tr{'LockManager LW_EXCLUSIVE'} // 0)
	  + ($tr{'LockFastPath LW_EXCLUSIVE'} // 0), '>', 0, 'buffer mapping / lock manager tranches');
my @bad = grep { !/^[A-Za-z][A-Za-z0-9_ ]* LW_(EXCLUSIVE|SHARED|WAIT_UNTIL_FREE)$/ } keys %tr;
is("@bad", '', 'every row names its tranche and mode');
is($node->safe_psql('postgres',
		"SELECT count(*) > 0 FROM pg_tracer_engine_histogram('lwlock-hold')"), 't',
	'lwlock-hold histogram');

# a tranche a backend registered itself, in a library it loaded after the
# fork (pg_prewarm's "autoprewarm": autoprewarm_dump_now() takes its lock
# once): named from the backend's own memory, and still named after the
# backend exited (before, its rows then read "?").  The cluster's rows are
# emptied first: every psql above left some 50 LWLock rows, and once half
# the engine table is in use the helper folds an exited process's rows at
# once (pid_retire.c, "pressed"), which read as this backend's rows gone.
$node->safe_psql('postgres', 'SELECT pg_tracer_reset()');
wait_kernel_copy($node);
my $apw = $node->background_psql('postgres');
my $apw_pid = $apw->query_safe('SELECT pg_backend_pid()');
$apw->query_safe('CREATE EXTENSION pg_prewarm');
$apw->query_safe('SELECT autoprewarm_dump_now()') for 1 .. 2;
my $sql_apw = "SELECT string_agg(detail || ' ' || calls, ',' ORDER BY detail) FROM pg_tracer_engine_events
                WHERE probe = 'lwlock-hold' AND pid = $apw_pid AND (detail LIKE 'autoprewarm%' OR detail LIKE '?%')";
my $apw_rows = '';
wait_until(sub { ($apw_rows = $node->safe_psql('postgres', $sql_apw)) eq 'autoprewarm LW_EXCLUSIVE 2' }, 5);
is($apw_rows, 'autoprewarm LW_EXCLUSIVE 2', 'a tranche the backend registered: autoprewarm, held twice');
$apw->quit;
wait_kernel_copy($node);    # the helper names its rows again at each copy
is($node->safe_psql('postgres', $sql_apw), 'autoprewarm LW_EXCLUSIVE 2',
	'... still named once that backend has exited');
# a backend that takes that lock once and exits within the helper's copy
# interval: its rows are first named after it has gone.  The name is the
# address's latest read (the backend above, when the library lies at the
# same address) or "?", never what the postmaster, which never loaded the
# library, holds there: before, whatever string was there (an unrelated
# one, or an empty one) named the row, and was cached for every backend
# after it.
my $short_pid = $node->safe_psql('postgres',
	'SELECT pg_backend_pid() FROM (SELECT autoprewarm_dump_now()) d');
wait_kernel_copy($node);
my %short = map { my @f = split /\|/; ($f[0] => $f[1]) } split /\n/, $node->safe_psql('postgres',
	"SELECT detail, calls FROM pg_tracer_engine_events WHERE probe = 'lwlock-hold' AND pid = $short_pid");
my @apw = grep { /^(autoprewarm|\?) LW_EXCLUSIVE$/ && $short{$_} == 1 } keys %short;
is(scalar(@apw), 1, 'a backend gone before its rows were named: its autoprewarm hold, once, named '
	  . 'autoprewarm or "?" (' . join(', ', map { "$_ $short{$_}" } sort keys %short) . ')');
@bad = grep { !/^([A-Za-z][A-Za-z0-9_ ]*|\?) LW_(EXCLUSIVE|SHARED|WAIT_UNTIL_FREE)$/ } keys %short;
is("@bad", '', '... and every row of it names a tranche or says "?"');

# --- trace: a hold as an event
my $bg = $node->background_psql('postgres');
my $bg_pid = $bg->query_safe('SELECT pg_backend_pid()');
# (taken once the probes are attached: start_trace waits for the status)
my ($th, $tout, $terr) = start_trace(qr/"set":"pg-lock-hold"/, '--probes', 'pg-lock-hold',
	'--pgdata', $node->data_dir, '--duration', '60s', '--format', 'json');
$bg->query_safe($_) for ('BEGIN', 'LOCK TABLE hold_t', 'SELECT pg_sleep(0.5)', 'COMMIT');
my ($ev, @recs);
wait_until(sub {
	$th->pump_nb;
	@recs = map { eval { decode_json($_) } // () } grep { /^\{/ } split /\n/, $$tout;
	($ev) = grep { $_->{event} eq 'lock-hold' && $_->{pid} == $bg_pid
		  && ($_->{lock_field2} // 0) == $relid } @recs;
	$ev }, 10);
end_trace($th);
is(harness_exit($th), 0, 'trace --probes pg-lock-hold exits 0') or diag($$terr);
ok($ev, 'trace: lock-hold event of hold_t');
SKIP:
{
	skip 'no event', 2 unless $ev;
	is("$ev->{lock_type} $ev->{lock_mode}", 'relation AccessExclusiveLock', 'event lock type and mode');
	cmp_ok(abs($ev->{latency_us} - 500_000), '<=', 100_000, "event hold $ev->{latency_us} us ~ 0.5 s");
}
# VACUUM holds its table for its transaction and for its session: the hold
# ends at the session's release (before, the transaction's end left it
# counted as held: the hold was never recorded, and the slot stayed taken)
$node->safe_psql('postgres', 'CREATE TABLE vac_t AS SELECT g FROM generate_series(1, 1000) g');
my $vac_rel = $node->safe_psql('postgres', "SELECT 'vac_t'::regclass::oid");
$bg->query_safe('VACUUM vac_t');
my $vac = '';
wait_until(sub {
	$vac = $node->safe_psql('postgres',
		"SELECT lock_mode || '|' || calls FROM pg_tracer_engine_events
		  WHERE pid = $bg_pid AND probe = 'lock-hold' AND lock_field2 = $vac_rel
		    AND lock_mode = 'ShareUpdateExclusiveLock'");
	$vac ne '' }, 5);
is($vac, 'ShareUpdateExclusiveLock|1', 'VACUUM: its hold of the table (transaction and session) is timed, once');

# more locks held at once than a backend's slots (32): those beyond are not
# timed, and the set's pg_tracer_probes row says how many (before, only a
# BPF counter nobody read knew)
$node->safe_psql('postgres', join('', map { "CREATE TABLE many_$_ (a int);" } 1 .. 40));
$node->safe_psql('postgres', 'BEGIN;' . join('', map { "LOCK TABLE many_$_;" } 1 .. 40) . 'COMMIT;');
my $note = '';
wait_until(sub {
	$note = $node->safe_psql('postgres',
		"SELECT reason FROM pg_tracer_probes WHERE probe_set = 'pg-lock-hold'");
	$note =~ /locks held beyond/ }, 5);
like($note, qr/^([1-9]\d*) locks held beyond a backend's slots not timed; uprobes/,
	"40 tables locked at once: pg-lock-hold says how many holds it could not time ($note)");
$bg->quit;

signal_helper($helper, 'TERM');
$node->stop;
done_testing();
