# PgTracerEngine.pm — ground-truth checks of the engine probes shared by the
# TAP tests that run them through different mechanisms (t/030: USDT,
# t/033: the uprobe fallback of a binary without notes).  Each check
# drives a real workload on the node and compares what pg_tracer published
# with a figure PostgreSQL or the client measured independently.
package PgTracerEngine;

use strict;
use warnings;
use Exporter 'import';
use PgTracerTest;
use Test::More;
use Time::HiRes qw(time sleep);

our @EXPORT = qw(check_lock_wait check_lock_wait_error check_statement_error check_xid_lock_waits
  check_wal_inserts check_checkpoint);

# A lock conflict: the waiter's row has the lock type, mode and object, and
# a duration within 10% of the time the client saw it blocked.
sub check_lock_wait
{
	my ($node) = @_;
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
	my $row = '';
	ok(defined wait_until(sub {
		$row = $node->safe_psql('postgres',
			"SELECT lock_type, lock_mode, lock_field1, lock_field2, calls, total_ms
			   FROM pg_tracer_engine_events WHERE pid = $w_pid AND probe = 'lock-wait'");
		$row ne ''
	}, 5), "lock wait published ($row)");
	my @l = split /\|/, $row;
	is("$l[0]|$l[1]|$l[2]|$l[3]|$l[4]", "relation|AccessShareLock|$dbid|$relid|1",
		'waiter: relation lock, AccessShareLock, on lk in this database');
	# the waiter wakes after the holder's COMMIT: under load it may return
	# a little after the holder's client saw COMMIT done
	cmp_ok(abs(($l[5] // 0) - $blocked_ms), '<=', 0.1 * $blocked_ms,
		"wait $l[5] ms within 10% of the blocking time $blocked_ms ms");
	cmp_ok($l[5] // 0, '>=', 1200, 'at least the time the holder slept');
	$holder->quit;
	$waiter->quit;
}

# A lock wait that ends in an error (lock_timeout) reaches no done probe:
# it is counted up to the abort, within 10% of the time the client saw
# before the error (before, it was counted nowhere).
sub check_lock_wait_error
{
	my ($node) = @_;
	$node->safe_psql('postgres', 'CREATE TABLE lk_err (a int)');
	my $holder = $node->background_psql('postgres');
	my $waiter = $node->background_psql('postgres', on_error_stop => 0);
	my $w_pid = $waiter->query_safe('SELECT pg_backend_pid()');
	$holder->query_safe('BEGIN; LOCK TABLE lk_err IN ACCESS EXCLUSIVE MODE');
	$waiter->query_safe("SET lock_timeout = '1s'");
	my $t0 = time();
	my ($out, $ret) = $waiter->query('SELECT count(*) FROM lk_err');
	my $client_ms = (time() - $t0) * 1000;
	like($waiter->{stderr}, qr/lock timeout/, 'the waiter gave up: lock timeout');
	$waiter->{stderr} = '';		# query() leaves it for us
	my $row = '';
	ok(defined wait_until(sub {
		$row = $node->safe_psql('postgres',
			"SELECT lock_type, lock_mode, calls, total_ms FROM pg_tracer_engine_events
			  WHERE pid = $w_pid AND probe = 'lock-wait'");
		$row ne ''
	}, 5), "a lock wait ended by an error is counted ($row)");
	my @l = split /\|/, $row;
	is("$l[0]|$l[1]|$l[2]", 'relation|AccessShareLock|1', 'as one relation AccessShareLock wait');
	cmp_ok($l[3] // 0, '>=', 1000, "of at least lock_timeout ($l[3] ms)");
	cmp_ok($l[3] // 0, '<=', $client_ms, "and at most the $client_ms ms the client waited");
	# caught by an EXCEPTION block: a subtransaction's abort ends it (before,
	# its start stayed, for a later abort to pair with)
	$waiter->query_safe("DO \$\$ BEGIN PERFORM count(*) FROM lk_err;
		EXCEPTION WHEN lock_not_available THEN NULL; END \$\$");
	ok(defined wait_until(sub {
		$row = $node->safe_psql('postgres',
			"SELECT sum(calls), round(sum(total_ms)) FROM pg_tracer_engine_events
			  WHERE pid = $w_pid AND probe = 'lock-wait'");
		(split /\|/, $row)[0] == 2 && (split /\|/, $row)[1] >= 2000
	}, 5), "a lock wait whose error an EXCEPTION block caught is counted too (two waits, ms: $row)");
	my $after_caught = $row;
	$waiter->query('SELECT 1/0');
	like($waiter->{stderr}, qr/division by zero/, 'a later error in that backend');
	$waiter->{stderr} = '';
	wait_kernel_copy($node);    # a copy of the engine counters begun after the error
	is($node->safe_psql('postgres',
			"SELECT sum(calls), round(sum(total_ms)) FROM pg_tracer_engine_events
			  WHERE pid = $w_pid AND probe = 'lock-wait'"),
		$after_caught, 'ends no wait that was already counted');
	$holder->query_safe('COMMIT');
	$holder->quit;
	$waiter->quit;
}

# A statement cancelled by statement_timeout reaches no query__done: it is
# counted as 'query-error', timed up to the error, and listed among the
# slow statements as failed (needs pg-query and --slow-ms below 700).
sub check_statement_error
{
	my ($node) = @_;
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	sleep(1.5);		# let the helper map the backend's query-id slot
	$s->query_safe("SET statement_timeout = '700ms'");
	my $t0 = time();
	$s->query('SELECT pg_sleep(5)');
	my $client_ms = (time() - $t0) * 1000;
	like($s->{stderr}, qr/statement timeout/, 'the statement was cancelled: statement timeout');
	$s->{stderr} = '';
	my $row = '';
	ok(defined wait_until(sub {
		$row = $node->safe_psql('postgres',
			"SELECT calls, total_ms, queryid <> 0 FROM pg_tracer_engine_events
			  WHERE pid = $pid AND probe = 'query-error'");
		$row ne ''
	}, 5), "a statement ended by an error is counted as query-error ($row)");
	my @r = split /\|/, $row;
	is("$r[0]|$r[2]", '1|t', 'once, with its query id');
	cmp_ok($r[1] // 0, '>=', 700, "timed up to the error ($r[1] ms)");
	cmp_ok($r[1] // 0, '<=', $client_ms, "within the $client_ms ms the client saw");
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM pg_tracer_engine_events WHERE pid = $pid AND probe = 'query'
			   AND max_us >= 700000"), '0', 'and not as a completed statement');
	like($node->safe_psql('postgres',
			"SELECT query, failed, round(duration_ms) >= 700 FROM pg_tracer_slow_statements WHERE pid = $pid"),
		qr/^SELECT pg_sleep\(5\)\s*;?\|t\|t$/, 'a slow statement, marked failed');
	# a procedure that rolls back and goes on aborts its transaction too
	# (AbortCurrentTransaction through SPI), in a statement that succeeds
	$s->query_safe('RESET statement_timeout');
	$s->query_safe("CREATE PROCEDURE pgt_rollback_and_go() LANGUAGE plpgsql AS \$\$
		BEGIN PERFORM pg_sleep(0.4); ROLLBACK; PERFORM pg_sleep(0.4); END \$\$");
	$s->query_safe('CALL pgt_rollback_and_go()');
	my $call = '';
	ok(defined wait_until(sub {
		$call = $node->safe_psql('postgres',
			"SELECT calls, round(total_ms) >= 800 FROM pg_tracer_engine_events
			  WHERE pid = $pid AND probe = 'query' AND max_us >= 800000");
		$call ne ''
	}, 5), "a CALL that rolls back inside is one completed statement of 0.8 s ($call)");
	is($node->safe_psql('postgres',
			"SELECT calls FROM pg_tracer_engine_events WHERE pid = $pid AND probe = 'query-error'"),
		'1', 'and no failed one');
	$s->quit;
}

# Row-lock conflicts in three transactions: the waiter waits on a new
# transaction id each time, and the three waits add up in one row (type
# and mode, no object: a transaction's own lock object is new every time).
sub check_xid_lock_waits
{
	my ($node) = @_;
	$node->safe_psql('postgres', 'CREATE TABLE xw (id int PRIMARY KEY, v int)');
	$node->safe_psql('postgres', 'INSERT INTO xw VALUES (1, 0)');
	my $holder = $node->background_psql('postgres');
	my $waiter = $node->background_psql('postgres');
	my $w_pid = $waiter->query_safe('SELECT pg_backend_pid()');
	my $blocked = 0;
	for my $i (1 .. 3)
	{
		$holder->query_safe('BEGIN; UPDATE xw SET v = v + 1 WHERE id = 1');
		$waiter->query_until(qr/waiting/, "\\echo waiting\nUPDATE xw SET v = v + 10 WHERE id = 1;\n");
		$blocked++ if defined wait_until(sub {
			$node->safe_psql('postgres',
				"SELECT wait_event_type || ':' || wait_event FROM pg_stat_activity WHERE pid = $w_pid")
			  eq 'Lock:transactionid'
		}, 5);
		sleep(0.2);
		$holder->query_safe('COMMIT');
		$waiter->query_safe('SELECT 1');
	}
	is($blocked, 3, 'the waiter waited on the holder\'s transaction id three times');
	my $rows = '';
	wait_until(sub {
		$rows = $node->safe_psql('postgres',
			"SELECT lock_mode, lock_field1 IS NULL AND lock_field2 IS NULL AND lock_field3 IS NULL,
			        calls, total_ms >= 3 * 200
			   FROM pg_tracer_engine_events
			  WHERE pid = $w_pid AND probe = 'lock-wait' AND lock_type = 'transactionid'");
		$rows =~ /\|3\|/
	}, 5);
	is($rows, 'ShareLock|t|3|t',
		'three waits on three transaction ids: one row, ShareLock, no object, 3 calls, >= 600 ms');
	is($node->safe_psql('postgres', 'SELECT v FROM xw'), '33', 'both sides\' updates committed');
	$holder->quit;
	$waiter->quit;
}

# An INSERT workload: WAL inserts counted follow pg_stat_wal.wal_records
# (+-10%), and XLogFlush calls are counted.
sub check_wal_inserts
{
	my ($node) = @_;
	$node->safe_psql('postgres', 'CREATE TABLE w (a int)');
	my $sql_w = "SELECT (SELECT wal_records FROM pg_stat_wal),
	                    (SELECT coalesce(sum(calls), 0) FROM pg_tracer_engine_events WHERE probe = 'wal-insert')";
	wait_kernel_copy($node);
	my ($wr0, $wi0) = split /\|/, $node->safe_psql('postgres', $sql_w);
	$node->safe_psql('postgres', "INSERT INTO w SELECT generate_series(1, 5000)");
	$node->safe_psql('postgres',
		"DO \$\$ BEGIN FOR i IN 1..2000 LOOP INSERT INTO w VALUES (i); END LOOP; END \$\$");
	wait_kernel_copy($node);
	my ($wr1, $wi1) = split /\|/, $node->safe_psql('postgres', $sql_w);
	my ($dwr, $dwi) = ($wr1 - $wr0, $wi1 - $wi0);
	cmp_ok($dwr, '>', 7000, "pg_stat_wal counted $dwr records");
	cmp_ok(abs($dwi - $dwr), '<=', 0.1 * $dwr, "WAL inserts $dwi ~ wal_records delta $dwr");
	is($node->safe_psql('postgres',
			"SELECT count(*) > 0 FROM pg_tracer_engine_events WHERE probe = 'wal-flush' AND calls > 0"),
		't', 'XLogFlush calls counted');
}

# CHECKPOINT: an event by the checkpointer, with a duration and the buffers
# pg_stat_bgwriter.buffers_checkpoint counted.
sub check_checkpoint
{
	my ($node) = @_;
	$node->safe_psql('postgres', 'CREATE TABLE ck AS SELECT g FROM generate_series(1, 20000) g');
	my $bc0 = $node->safe_psql('postgres', 'SELECT buffers_checkpoint FROM pg_stat_bgwriter');
	my $before = $node->safe_psql('postgres', 'SELECT now()');
	$node->safe_psql('postgres', 'CHECKPOINT');
	# the checkpointer reports its statistics after it reports the
	# checkpoint done
	my $bc1;
	ok(defined wait_until(sub {
		($bc1 = $node->safe_psql('postgres', 'SELECT buffers_checkpoint FROM pg_stat_bgwriter')) > $bc0 }, 10),
		"pg_stat_bgwriter counts the checkpoint's buffers ($bc0 before, $bc1 after)");
	my $row = '';
	# this checkpoint's event, not an earlier one's (one that ended before
	# the CHECKPOINT was asked for)
	ok(defined wait_until(sub {
		$row = $node->safe_psql('postgres',
			"SELECT c.buffers_written, c.duration_ms > 0, c.pid = a.pid
			   FROM pg_tracer_checkpoints c JOIN pg_stat_activity a ON a.backend_type = 'checkpointer'
			  WHERE c.end_time > '$before'
			  ORDER BY c.end_time DESC LIMIT 1");
		$row ne ''
	}, 5), "checkpoint event published ($row)");
	my ($ck_written, $ck_dur, $ck_pid) = split /\|/, $row;
	is(($ck_dur // '') . '|' . ($ck_pid // ''), 't|t', 'by the checkpointer, with a duration');
	cmp_ok(abs(($ck_written // 0) - ($bc1 - $bc0)), '<=', 0.1 * ($bc1 - $bc0) + 1,
		"buffers written $ck_written ~ pg_stat_bgwriter.buffers_checkpoint delta " . ($bc1 - $bc0));
	cmp_ok($bc1 - $bc0, '>', 50, 'the checkpoint had real work');
}

1;
