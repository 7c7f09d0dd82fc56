# 030_engine_probes.pl — engine probe sets on a real server, real helper,
# real USDT/uprobes in the real kernel, checked against ground truth
# measured independently: time around a statement, the time a lock is
# held, pg_stat_bgwriter, pg_stat_database.blks_read, pg_stat_wal.
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

# A small shared_buffers makes a freshly built table mostly cold.
my ($node, $rt) = tracer_node('engine', conf => "compute_query_id = on\n"
	  . "autovacuum = off\nshared_buffers = 16MB\n");
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
$node->safe_psql('postgres', 'CREATE DATABASE coldb');
# every set but pg-lwlock, whatever the defaults are
my $helper = start_helper($node, $rt, '--slow-ms', '300', '--engine-probes',
	'pg-query,pg-locks,pg-wal,pg-buffer,pg-checkpoint,pg-usdt');

my %sets;
ok(defined wait_until(sub {
	%sets = map { my @f = split /\|/, $_, 3; ($f[0] => [ $f[1], $f[2] ]) }
	  split /\n/, $node->safe_psql('postgres',
		"SELECT probe_set, state, mechanism FROM pg_tracer_probes WHERE probe_set LIKE 'pg-%'");
	($sets{'pg-query'}[0] // '') eq 'available'
}, 20), 'engine probe sets attach');
for my $s (qw(pg-query pg-locks pg-buffer pg-checkpoint pg-usdt))
{
	is_deeply($sets{$s}, [ 'available', 'usdt' ], "$s available through USDT");
}
is_deeply($sets{'pg-wal'}, [ 'available', 'usdt+uprobe' ],
	'pg-wal: USDT wal__insert plus a uprobe on the exported XLogFlush');
like($node->safe_psql('postgres',
		"SELECT state || ': ' || reason FROM pg_tracer_probes WHERE probe_set = 'pg-lwlock'"),
	qr/^unavailable: off in the daemon by default \(cost/, 'pg-lwlock off by default, says why');

# --- statement latency: within 10% of the time measured around it
my $bg = $node->background_psql('postgres');
my $bg_pid = $bg->query_safe('SELECT pg_backend_pid()');
sleep(1.5);		# let the helper map the backend's query-id slot
my $t0 = time();
$bg->query_safe('SELECT pg_sleep(0.8)');
my $around_ms = (time() - $t0) * 1000;
my $row;
ok(defined wait_until(sub {
	$row = $node->safe_psql('postgres',
		"SELECT queryid, calls, total_ms FROM pg_tracer_engine_events
		  WHERE pid = $bg_pid AND probe = 'query' ORDER BY max_us DESC LIMIT 1");
	$row ne '' && (split /\|/, $row)[2] > 700
}, 5), "statement latency published ($row)");
my ($qid, $calls, $lat_ms) = split /\|/, $row;
cmp_ok($lat_ms, '<=', $around_ms, "latency $lat_ms ms <= measured around it $around_ms ms");
cmp_ok($lat_ms, '>=', 0.9 * $around_ms, 'and within 10%');
isnt($qid, '0', 'statement carries its query id');
my $slow = $node->safe_psql('postgres',
	"SELECT queryid, query, round(duration_ms) FROM pg_tracer_slow_statements WHERE pid = $bg_pid");
like($slow, qr/^$qid\|SELECT pg_sleep\(0\.8\)\s*;?\|8\d\d$/,
	"slow statement streamed with its query id, text and duration ($slow)");
is($node->safe_psql('postgres',
		"SELECT count(*) > 0 FROM pg_tracer_engine_histogram('query') WHERE bucket_lo_us <= $lat_ms * 1000
		   AND bucket_hi_us > $lat_ms * 1000"), 't', 'query histogram has the statement in its bucket');

# --- lock conflict: waiter, lock type, mode, object, duration = blocking time
$node->safe_psql('postgres', 'CREATE TABLE lk (a int)');
my $holder = $node->background_psql('postgres');
my $waiter = $node->background_psql('postgres');
my $w_pid = $waiter->query_safe('SELECT pg_backend_pid()');
$holder->query_safe('BEGIN; LOCK TABLE lk IN ACCESS EXCLUSIVE MODE');
my $tw = time();
$waiter->query_until(qr/waiting/, "\\echo waiting\nSELECT count(*) FROM lk;\n");
ok(defined wait_until(sub {
	$node->safe_psql('postgres',
		"SELECT wait_event_type FROM pg_stat_activity WHERE pid = $w_pid") eq 'Lock'
}, 5), 'waiter blocked on the lock');
sleep(1.2);
$holder->query_safe('COMMIT');
my $blocked_ms = (time() - $tw) * 1000;
$waiter->query_safe('SELECT 1');
my $relid = $node->safe_psql('postgres', "SELECT 'lk'::regclass::oid");
my $dbid = $node->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = 'postgres'");
ok(defined wait_until(sub {
	$row = $node->safe_psql('postgres',
		"SELECT lock_type, lock_mode, lock_field1, lock_field2, calls, total_ms
		   FROM pg_tracer_engine_events WHERE pid = $w_pid AND probe = 'lock-wait'");
	$row ne ''
}, 5), "lock wait published ($row)");
my @l = split /\|/, $row;
is("$l[0]|$l[1]|$l[2]|$l[3]|$l[4]", "relation|AccessShareLock|$dbid|$relid|1",
	'waiter: relation lock, AccessShareLock, on lk in this database');
cmp_ok($l[5], '<=', $blocked_ms, "wait $l[5] ms <= blocking time $blocked_ms ms");
cmp_ok($l[5], '>=', 0.9 * $blocked_ms, 'and within 10%');
$holder->quit;
$waiter->quit;

# --- CHECKPOINT: an event with the buffers pg_stat_bgwriter counts
$node->safe_psql('postgres', 'CREATE TABLE ck AS SELECT g FROM generate_series(1, 20000) g');
my $bc0 = $node->safe_psql('postgres', 'SELECT buffers_checkpoint FROM pg_stat_bgwriter');
$node->safe_psql('postgres', 'CHECKPOINT');
my $bc1 = $node->safe_psql('postgres', 'SELECT buffers_checkpoint FROM pg_stat_bgwriter');
ok(defined wait_until(sub {
	$row = $node->safe_psql('postgres',
		"SELECT c.buffers_written, c.duration_ms > 0, c.pid = a.pid
		   FROM pg_tracer_checkpoints c JOIN pg_stat_activity a ON a.backend_type = 'checkpointer'
		  ORDER BY c.end_time DESC LIMIT 1");
	$row ne ''
}, 5), "checkpoint event published ($row)");
my ($ck_written, $ck_dur, $ck_pid) = split /\|/, $row;
is("$ck_dur|$ck_pid", 't|t', 'by the checkpointer, with a duration');
cmp_ok(abs($ck_written - ($bc1 - $bc0)), '<=', 0.1 * ($bc1 - $bc0) + 1,
	"buffers written $ck_written ~ pg_stat_bgwriter.buffers_checkpoint delta " . ($bc1 - $bc0));
cmp_ok($bc1 - $bc0, '>', 50, 'the checkpoint had real work');

# --- cold scan: buffer misses = pg_stat_database.blks_read delta (+-10%)
$node->safe_psql('coldb',
	"CREATE TABLE cold AS SELECT g, repeat('x', 100) AS pad FROM generate_series(1, 200000) g");
my $sc = $node->background_psql('coldb');
my $sc_pid = $sc->query_safe('SELECT pg_backend_pid()');
# one backend does the whole scan: parallel workers are other pids
$sc->query_safe('SET max_parallel_workers_per_gather = 0');
$sc->query_safe('SELECT count(*) FROM pg_class');	# warm the session's catalogs
$sc->query_safe('SELECT pg_stat_force_next_flush()');
sleep(1.5);
my $blk0 = $sc->query_safe(
	"SELECT pg_stat_clear_snapshot(), blks_read FROM pg_stat_database WHERE datname = 'coldb'");
my $miss0 = $node->safe_psql('postgres',
	"SELECT coalesce(sum(counter2), 0) FROM pg_tracer_engine_events WHERE pid = $sc_pid AND probe = 'buffer-read'");
$sc->query_safe('SELECT count(*) FROM cold');
$sc->query_safe('SELECT pg_stat_force_next_flush()');
my $blk1 = $sc->query_safe(
	"SELECT pg_stat_clear_snapshot(), blks_read FROM pg_stat_database WHERE datname = 'coldb'");
$blk0 =~ s/^\|//;
$blk1 =~ s/^\|//;
sleep(1.5);
my $miss1 = $node->safe_psql('postgres',
	"SELECT coalesce(sum(counter2), 0) FROM pg_tracer_engine_events WHERE pid = $sc_pid AND probe = 'buffer-read'");
my ($dblk, $dmiss) = ($blk1 - $blk0, $miss1 - $miss0);
cmp_ok($dblk, '>', 1000, "the scan read $dblk blocks from outside shared buffers");
cmp_ok(abs($dmiss - $dblk), '<=', 0.1 * $dblk, "buffer misses $dmiss ~ blks_read delta $dblk");
like($node->safe_psql('postgres',
		"SELECT round(hit_ratio::numeric, 2) BETWEEN 0 AND 1 FROM pg_tracer_engine_buffers
		  WHERE pid = $sc_pid AND misses > 1000"), qr/^t/, 'hit ratio per backend and query');
$sc->quit;

# --- WAL: inserts follow pg_stat_wal.wal_records (+-10%) under INSERTs
$node->safe_psql('postgres', 'CREATE TABLE w (a int)');
my $sql_w = "SELECT (SELECT wal_records FROM pg_stat_wal),
                    (SELECT coalesce(sum(calls), 0) FROM pg_tracer_engine_events WHERE probe = 'wal-insert')";
sleep(1.5);
my ($wr0, $wi0) = split /\|/, $node->safe_psql('postgres', $sql_w);
$node->safe_psql('postgres', "INSERT INTO w SELECT generate_series(1, 5000)");
$node->safe_psql('postgres', "DO \$\$ BEGIN FOR i IN 1..2000 LOOP INSERT INTO w VALUES (i); END LOOP; END \$\$");
sleep(1.5);
my ($wr1, $wi1) = split /\|/, $node->safe_psql('postgres', $sql_w);
my ($dwr, $dwi) = ($wr1 - $wr0, $wi1 - $wi0);
cmp_ok($dwr, '>', 7000, "pg_stat_wal counted $dwr records");
cmp_ok(abs($dwi - $dwr), '<=', 0.1 * $dwr, "WAL inserts $dwi ~ wal_records delta $dwr");
is($node->safe_psql('postgres',
		"SELECT count(*) > 0 FROM pg_tracer_engine_events WHERE probe = 'wal-flush' AND calls > 0"),
	't', 'XLogFlush calls counted');

# --- pg-usdt: commits counted
cmp_ok($node->safe_psql('postgres',
		"SELECT coalesce(sum(calls), 0) FROM pg_tracer_engine_events WHERE probe = 'xact-commit'"),
	'>', 5, 'transaction commits counted');

# --- bad input: unknown histogram probe
my ($ok, $out, $err) = (0, '', '');
$ok = $node->psql('postgres', "SELECT * FROM pg_tracer_engine_histogram('nope')",
	stdout => \$out, stderr => \$err);
like($err, qr/unknown engine probe "nope".*\n.*HINT:  Use one of/s, 'unknown probe: error with a hint');

signal_helper($helper, 'TERM');
$node->stop;
done_testing();
