# 030_engine_probes.pl — engine probe sets on a real server, real helper,
# real USDT/uprobes in the real kernel, checked against ground truth
# measured independently: time around a statement, the time a lock is
# held, pg_stat_bgwriter, pg_stat_database.blks_read, pg_stat_wal; and
# emptied by pg_tracer_reset().  Statements of the simple and the extended
# protocol (pgbench -M extended and prepared) are timed, and a portal run
# inside a statement is not one of its own.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PgTracerEngine;
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
for my $s (qw(pg-buffer pg-checkpoint pg-usdt))
{
	is_deeply($sets{$s}, [ 'available', 'usdt' ], "$s available through USDT");
}
# errors end statements and lock waits at the transaction's abort: a uprobe
# on the exported AbortCurrentTransaction (no USDT marks it)
for my $s (qw(pg-query pg-locks))
{
	is_deeply($sets{$s}, [ 'available', 'usdt+uprobe' ],
		"$s available through USDT, plus a uprobe where errors end them");
}
is_deeply($sets{'pg-wal'}, [ 'available', 'usdt+uprobe' ],
	'pg-wal: USDT wal__insert plus a uprobe on the exported XLogFlush');
like($node->safe_psql('postgres',
		"SELECT state || ': ' || reason FROM pg_tracer_probes WHERE probe_set = 'pg-lwlock'"),
	qr/^unavailable: off in the daemon by default \(cost/, 'pg-lwlock off by default, says why');

# --- statement latency: within 10% of the time measured around it
my $bg = $node->background_psql('postgres');
my $bg_pid = $bg->query_safe('SELECT pg_backend_pid()');
wait_mapped($node, $bg_pid);    # its query id is read in its status slot
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
is($qid, query_identifier($node, 'SELECT pg_sleep(0.8)'),
	'statement carries its query id, as EXPLAIN VERBOSE computes it');
my $slow = $node->safe_psql('postgres',
	"SELECT queryid, query, round(duration_ms) FROM pg_tracer_slow_statements WHERE pid = $bg_pid");
like($slow, qr/^$qid\|SELECT pg_sleep\(0\.8\)\s*;?\|8\d\d$/,
	"slow statement streamed with its query id, text and duration ($slow)");

# --- statement text keeps UTF-8 where the database takes it, '?' where not
check_text_encodings($node);
# --- the extended protocol's statements, and a portal inside a statement
check_extended_protocol($node, $_) for qw(extended prepared);
check_extended_error($node);
check_extended_multi($node);
check_nested_portal($node, $bg, $bg_pid);

is($node->safe_psql('postgres',
		"SELECT count(*) > 0 FROM pg_tracer_engine_histogram('query') WHERE bucket_lo_us <= $lat_ms * 1000
		   AND bucket_hi_us > $lat_ms * 1000"), 't', 'query histogram has the statement in its bucket');

# --- lock conflict: waiter, lock type, mode, object, duration = blocking time
check_lock_wait($node);
# --- a lock wait and a statement that end in an error
check_lock_wait_error($node);
check_statement_error($node);
# --- row-lock waits on transaction ids: one row, not one per transaction
check_xid_lock_waits($node);

# --- CHECKPOINT: an event with the buffers pg_stat_bgwriter counts
check_checkpoint($node);

# --- cold scan: buffer misses = pg_stat_database.blks_read delta (+-10%)
$node->safe_psql('coldb',
	"CREATE TABLE cold AS SELECT g, repeat('x', 100) AS pad FROM generate_series(1, 200000) g");
my $sc = $node->background_psql('coldb');
my $sc_pid = $sc->query_safe('SELECT pg_backend_pid()');
# one backend does the whole scan: parallel workers are other pids
$sc->query_safe('SET max_parallel_workers_per_gather = 0');
$sc->query_safe('SELECT count(*) FROM pg_class');	# warm the session's catalogs

# The blocks one statement of session $s (pid $pid) reads, as
# pg_stat_database counts them for coldb ($stat) and as the engine's
# buffer-read probe does for the pid ($col of pg_tracer_engine_buffers):
# both differences over that statement, with the statistics flushed around
# it and the helper's copy taken after.
sub buffer_deltas
{
	my ($s, $pid, $sql, $stat, $col) = @_;
	my $stat_q = "SELECT pg_stat_clear_snapshot(), $stat FROM pg_stat_database WHERE datname = 'coldb'";
	my $eng_q = "SELECT coalesce(sum($col), 0) FROM pg_tracer_engine_buffers WHERE pid = $pid";
	$s->query_safe('SELECT pg_stat_force_next_flush()');
	wait_kernel_copy($node);
	my $s0 = (split /\|/, $s->query_safe($stat_q))[1];
	my $e0 = $node->safe_psql('postgres', $eng_q);
	$s->query_safe($sql);
	$s->query_safe('SELECT pg_stat_force_next_flush()');
	my $s1 = (split /\|/, $s->query_safe($stat_q))[1];
	wait_kernel_copy($node);
	return ($s1 - $s0, $node->safe_psql('postgres', $eng_q) - $e0);
}
my ($dblk, $dmiss) = buffer_deltas($sc, $sc_pid, 'SELECT count(*) FROM cold', 'blks_read', 'misses');
cmp_ok($dblk, '>', 1000, "the scan read $dblk blocks from outside shared buffers");
cmp_ok(abs($dmiss - $dblk), '<=', 0.1 * $dblk, "buffer misses $dmiss ~ blks_read delta $dblk");

# --- warm scan: buffer hits = pg_stat_database.blks_hit delta (+-10%), of
# a table that stays in shared buffers (2.8 MB: a quarter of them or more
# would be read through a ring), read a second time; no other session of
# the database runs meanwhile (a new one reads its catalogs: 90 hits)
$node->safe_psql('coldb',
	"CREATE TABLE warm AS SELECT g, repeat('x', 100) AS pad FROM generate_series(1, 20000) g");
my $warm_qid = query_identifier($node, 'SELECT count(*) FROM warm', 'coldb');
$sc->query_safe('SELECT count(*) FROM warm');
my ($dhit, $dhits) = buffer_deltas($sc, $sc_pid, 'SELECT count(*) FROM warm', 'blks_hit', 'hits');
cmp_ok($dhit, '>', 300, "the second scan of warm hit $dhit blocks in shared buffers");
cmp_ok(abs($dhits - $dhit), '<=', 0.1 * $dhit, "buffer hits $dhits ~ blks_hit delta $dhit");
my ($ratio, $rhits, $rreads) = split /\|/, $node->safe_psql('postgres',
	"SELECT round(hit_ratio::numeric, 3), hits, reads FROM pg_tracer_engine_buffers
	  WHERE pid = $sc_pid AND queryid = $warm_qid");
ok($rreads > 0 && abs($ratio - $rhits / $rreads) < 0.001 && $ratio > 0.45,
	"hit ratio of the warm scan's query id: $ratio = $rhits hits / $rreads reads (half of its two scans' reads hit or more)");
$sc->quit;

# --- WAL: inserts follow pg_stat_wal.wal_records (+-10%) under INSERTs
check_wal_inserts($node);

# --- pg-usdt: a session's commits, each counted once
my $cs = $node->background_psql('postgres');
my $cs_pid = $cs->query_safe('SELECT pg_backend_pid()');
wait_mapped($node, $cs_pid);
my $commits_q = "SELECT coalesce(sum(calls), 0) FROM pg_tracer_engine_events
	WHERE pid = $cs_pid AND probe = 'xact-commit'";
my $c0 = $node->safe_psql('postgres', $commits_q);
$cs->query_safe('SELECT 1') for 1 .. 20;
$cs->query_safe('BEGIN; SELECT 1; SELECT 2; COMMIT');
my $c1;
wait_until(sub { ($c1 = $node->safe_psql('postgres', $commits_q)) >= $c0 + 21 }, 5);
is($c1 - $c0, 21, "21 transactions of one session: 21 commits counted for its pid ($c0 before)");
$cs->quit;

# --- pg_tracer_reset(): the engine rows, histograms and slow statements go,
# and counting starts again
my $long_hist = "SELECT count(*) FROM pg_tracer_engine_histogram('query')
	WHERE bucket_lo_us >= 500000";
cmp_ok($node->safe_psql('postgres', $long_hist), '>', 0, 'before the reset: the slow statement in the histogram');
$node->safe_psql('postgres', 'SELECT pg_tracer_reset()');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_tracer_engine_events WHERE pid IN ($bg_pid, $sc_pid)"),
	'0', 'after pg_tracer_reset(): no engine rows of the earlier sessions');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_tracer_slow_statements'), '0',
	'no slow statements');
is($node->safe_psql('postgres', $long_hist), '0', 'no long statement in the query histogram');
$bg->query_safe('SELECT pg_sleep(0.4)');
ok(defined wait_until(sub {
	$node->safe_psql('postgres',
		"SELECT calls, total_ms >= 400 FROM pg_tracer_engine_events
		  WHERE pid = $bg_pid AND probe = 'query' AND total_ms >= 100") eq '1|t'
}, 5), 'a statement after the reset counts from zero: one call of 400 ms');

# --- the daemon keeps the latest checkpoints apart from the slow
# statements: 300 of those (a helper at --slow-ms 1) leave the checkpoint
# (before, one ring of 256 kept whatever came last)
stop_helper($node, $helper);
$helper = start_helper($node, $rt, '--slow-ms', '1', '--engine-probes', 'pg-query,pg-checkpoint');
ok(defined wait_until(sub {
	$node->safe_psql('postgres',
		"SELECT count(*) FROM pg_tracer_probes WHERE probe_set IN ('pg-query', 'pg-checkpoint')
		   AND state = 'available'") eq '2' }, 20), 'a helper at --slow-ms 1 attached');
$node->safe_psql('postgres', 'CHECKPOINT');
ok(defined wait_until(sub {
	$node->safe_psql('postgres', 'SELECT count(*) FROM pg_tracer_checkpoints') > 0 }, 5),
	'a checkpoint kept');
$node->safe_psql('postgres', join(";\n", ('SELECT pg_sleep(0.002)') x 300));
my $kept = '';
wait_until(sub {
	$kept = $node->safe_psql('postgres',
		"SELECT (SELECT count(*) FROM pg_tracer_checkpoints) > 0,
		        (SELECT count(*) FROM pg_tracer_slow_statements)");
	$kept eq 't|224' }, 10);
is($kept, 't|224',
	'300 slow statements later: the checkpoint is still there, with the latest 224 statements');
# a restarted cluster's rows of its old postmaster go (they would fill the
# counters' table over restarts)
my $old_pm = $node->safe_psql('postgres', 'SELECT postmaster_pid FROM pg_tracer_status()');
$node->restart;
my $hlog = $node->basedir . '/helper.log';
my $dropped = 0;
ok(defined wait_until(sub {
	($dropped) = slurp_file($hlog) =~ /(\d+) rows of exited postmaster $old_pm dropped/;
	($dropped // 0) > 0 }, 10),
	"the engine rows of the exited postmaster $old_pm are dropped (" . ($dropped // 0) . ')');

# --- bad input: unknown histogram probe
my ($ok, $out, $err) = (0, '', '');
$ok = $node->psql('postgres', "SELECT * FROM pg_tracer_engine_histogram('nope')",
	stdout => \$out, stderr => \$err);
like($err, qr/unknown engine probe "nope".*\n.*HINT:  Use one of/s, 'unknown probe: error with a hint');

signal_helper($helper, 'TERM');
$node->stop;
done_testing();

# pgbench_script(node, mode, text, transactions): one client runs the
# script text that many times with -M mode; (succeeded, stdout, stderr).
sub pgbench_script
{
	my ($node, $mode, $text, $t) = @_;
	my $script = PostgreSQL::Test::Utils::tempdir() . '/script.sql';
	open(my $fh, '>', $script) or die "$script: $!";
	print $fh $text;
	close($fh);
	my ($lout, $lerr) = ('', '');
	my $ok = IPC::Run::run([ 'pgbench', '-n', '-M', $mode, '-f', $script, '-c', '1', '-t', $t,
			'-h', $node->host, '-p', $node->port, 'postgres' ],
		'<', \undef, '>', \$lout, '2>', \$lerr);
	return ($ok, $lout, $lerr);
}

# The extended protocol (Parse, Bind, Execute) runs no query__start: its
# statements are timed from PortalRun (pgbench -M extended sends the three
# each time, -M prepared Parse once).  Three 0.35 s statements: three slow
# statements with their text, each at most pgbench's own latency average
# and within 10% of it, and three calls under their query id.  Before,
# none was counted.
sub check_extended_protocol
{
	my ($node, $mode) = @_;
	# two statements of their own query ids
	my ($secs, $more) = $mode eq 'extended' ? ('0.35', ', 1, 2') : ('0.36', ', 1');
	my ($ok, $lout, $lerr) = pgbench_script($node, $mode, "SELECT pg_sleep($secs)$more;\n", 3);
	die "pgbench: $lerr" unless $ok;
	my ($avg) = $lout =~ /latency average = ([\d.]+) ms/;
	my $q = "SELECT count(*), coalesce(avg(duration_ms), 0), coalesce(min(duration_ms), 0),
	                min(queryid), bool_or(failed)
	           FROM pg_tracer_slow_statements WHERE query LIKE 'SELECT pg_sleep($secs)%'";
	my $row = '';
	wait_until(sub { $row = $node->safe_psql('postgres', $q); $row =~ /^3\|/ }, 5);
	my ($n, $mean, $min, $qid, $failed) = split /\|/, $row;
	is($n, 3, "-M $mode: three slow statements with their text ($row)");
	# each is timed inside its client's round trip: their mean inside
	# pgbench's, and none far below it
	ok(defined $avg && $mean <= $avg && $min >= 0.9 * $avg,
		"-M $mode: mean $mean ms, least $min ms, against pgbench's latency average ("
		  . ($avg // '?') . ' ms): at most, and within 10%');
	is($failed, 'f', "-M $mode: none failed");
	my $calls = '';
	wait_until(sub {
		$calls = $node->safe_psql('postgres',
			"SELECT sum(calls) FROM pg_tracer_engine_events WHERE probe = 'query' AND queryid = $qid");
		$calls eq '3' }, 5) if $n;
	is($calls, '3', "-M $mode: three calls under the statement's query id");
}

# An INSERT with a DO ALSO rule is two plannable statements in one portal
# (PortalRunMulti), and the portal notes mark each of them too: the
# Execute is still one statement, timed whole: 0.2 s of its own and 0.5 s
# of the rule's (the action runs over the statement's own FROM, so
# pg_sleep(0.2) again, and its own 0.3 s).  Before, it was two calls, the
# second timed from the rule's action alone.
sub check_extended_multi
{
	my ($node) = @_;
	$node->safe_psql('postgres', q{CREATE TABLE rule_a (x int); CREATE TABLE rule_b (x int);
		CREATE RULE rule_r AS ON INSERT TO rule_a DO ALSO INSERT INTO rule_b SELECT 1 FROM pg_sleep(0.3)});
	my ($ok, $lout, $lerr) = pgbench_script($node, 'extended',
		"INSERT INTO rule_a SELECT 1 FROM pg_sleep(0.2);\n", 2);
	die "pgbench: $lerr" unless $ok;
	my $row = '';
	wait_until(sub {
		$row = $node->safe_psql('postgres',
			"SELECT count(*), coalesce(round(min(duration_ms)), 0) FROM pg_tracer_slow_statements
			  WHERE query LIKE 'INSERT INTO rule_a%'");
		$row =~ /^2\|/ }, 5);
	my ($n, $min) = split /\|/, $row;
	ok($n == 2 && $min >= 680, "-M extended, an INSERT with a DO ALSO rule: 2 statements, "
		  . "each timed whole, >= 680 ms ($n, least $min ms)");
}

# An extended-protocol statement cancelled by statement_timeout ends where
# PostgresMain's error recovery aborts: a failed slow statement of about
# the timeout's length (pgbench reports the error and stops the client).
sub check_extended_error
{
	my ($node) = @_;
	my (undef, undef, $lerr) = pgbench_script($node, 'extended',
		"SET statement_timeout = '400ms';\nSELECT pg_sleep(2), 7, 8;\n", 1);
	like($lerr, qr/canceling statement due to statement timeout/,
		'-M extended: pgbench saw the statement time out');
	my $row = '';
	wait_until(sub {
		$row = $node->safe_psql('postgres',
			"SELECT failed, round(duration_ms) FROM pg_tracer_slow_statements
			  WHERE query LIKE 'SELECT pg_sleep(2), 7, 8%'");
		$row ne '' }, 5);
	# the timeout runs from Parse, the timing from Execute: a little less
	like($row, qr/^t\|(3[5-9]\d|4\d\d|5[0-4]\d)$/,
		"-M extended: the timed-out statement is a failed slow statement of ~400 ms ($row)");
}

# A portal run inside a statement already timed does not end it or count
# as a statement of its own.  Over the extended protocol a DO block that
# EXECUTEs two prepared statements runs two portals inside its own, one
# after the other: one statement of 0.4 s (were the first inner portal's
# end taken for the statement's, two of 0.2 s, neither slow).  And over the
# simple protocol, EXECUTE of a prepared statement is one statement.
sub check_nested_portal
{
	my ($node, $s, $pid) = @_;
	my ($ok, $lout, $lerr) = pgbench_script($node, 'extended',
		"PREPARE nested_a AS SELECT pg_sleep(0.2);\n"
		  . "PREPARE nested_b AS SELECT pg_sleep(0.2), 1;\n"
		  . "DO \$\$BEGIN EXECUTE 'EXECUTE nested_a'; EXECUTE 'EXECUTE nested_b'; END\$\$;\n", 1);
	die "pgbench: $lerr" unless $ok;
	my $dq = "SELECT string_agg(round(duration_ms)::text, ',') FROM pg_tracer_slow_statements
	           WHERE query LIKE 'DO \$\$BEGIN EXECUTE%'";
	my $do = '';
	wait_until(sub { $do = $node->safe_psql('postgres', $dq); $do ne '' }, 5);
	like($do, qr/^(4[0-9]\d|5\d\d)$/,
		"-M extended: a DO block running two portals in its own is one statement of ~400 ms ($do)");

	# a nested portal whose error an EXCEPTION block catches never reaches
	# its end (an error at run time: 1/0 would fail at planning, before the
	# portal runs): the DO block and the statement after it are still timed
	($ok, $lout, $lerr) = pgbench_script($node, 'extended',
		"PREPARE nested_fail AS SELECT 1 / (random() * 0)::int;\n"
		  . "DO \$\$BEGIN BEGIN EXECUTE 'EXECUTE nested_fail'; EXCEPTION WHEN division_by_zero "
		  . "THEN NULL; END; PERFORM pg_sleep(0.3); END\$\$;\n"
		  . "SELECT pg_sleep(0.31), 'after a caught nested error';\n", 1);
	die "pgbench: $lerr" unless $ok;
	my $cq = "SELECT string_agg(left(query, 12) || ' ' || round(duration_ms), ', ' ORDER BY query)
	           FROM pg_tracer_slow_statements
	          WHERE query LIKE 'DO \$\$BEGIN BEGIN EXECUTE%' OR query LIKE '%after a caught nested%'";
	my $caught = '';
	wait_until(sub { $caught = $node->safe_psql('postgres', $cq); $caught =~ /,/ }, 5);
	like($caught, qr/^DO \$\$BEGIN B (3[0-9]\d|4\d\d), SELECT pg_sl (3[1-9]\d|4\d\d)$/,
		"-M extended: after a nested portal's caught error, the DO block and the next statement are timed ($caught)");

	$s->query_safe('PREPARE nested_p AS SELECT pg_sleep(0.33)');
	$s->query_safe('EXECUTE nested_p');
	my $q = "SELECT string_agg(query || ' ' || round(duration_ms), ', ')
	           FROM pg_tracer_slow_statements WHERE pid = $pid AND query ~ 'nested_p'";
	my $got = '';
	wait_until(sub { $got = $node->safe_psql('postgres', $q); $got ne '' }, 5);
	like($got, qr/^EXECUTE nested_p\s*;? 3[3-9]\d$/,
		"EXECUTE of a prepared statement: one slow statement, the EXECUTE ($got)");
}

# Statement text is UTF-8 in the helper's segment: a UTF8 database (and
# SQL_ASCII, which takes any bytes) shows its characters as they were
# written, a LATIN1 database a '?' for each byte outside ASCII, since a
# conversion could fail.  The statement runs in the UTF8 database; both
# read the same segment row.
sub check_text_encodings
{
	my ($node) = @_;
	my %db = (u8db => 'UTF8', l1db => 'LATIN1');
	for my $d (sort keys %db)
	{
		$node->safe_psql('postgres',
			"CREATE DATABASE $d ENCODING '$db{$d}' LOCALE 'C' TEMPLATE template0");
		$node->safe_psql($d, 'CREATE EXTENSION pg_tracer');
	}
	my $s = $node->background_psql('u8db');
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	wait_mapped($node, $pid);    # its query id is read in its status slot
	# 'naïve ☕', bytes as UTF-8: the test file is read as bytes
	$s->query_safe("SELECT pg_sleep(0.4), 'na\xc3\xafve \xe2\x98\x95'");
	my $q = "SELECT query FROM pg_tracer_slow_statements WHERE pid = $pid";
	my $text = '';
	ok(defined wait_until(sub { $text = $node->safe_psql('u8db', $q); $text ne '' }, 5),
		'slow statement of the UTF8 database published');
	like($text, qr/'na\xc3\xafve \xe2\x98\x95'/, 'UTF8 database: its characters kept');
	like($node->safe_psql('l1db', $q), qr/'na\?\?ve \?\?\?'/,
		"LATIN1 database: '?' for each byte outside ASCII");
	$s->quit;
}
