# 011_ash_pgbench.pl — the sampled tier under a real OLTP load.
#
# pgbench -S with 4 clients, simple and extended protocol.  Checked against
# independent ground truths: wall-clock time (DB time cannot exceed
# clients x elapsed), pg_stat_database.active_time (the server's own
# account of time spent inside statements, the same boundary the sampler
# uses for client backends), and pg_stat_activity.query_id of the pgbench
# statement.  Shares of DB time must add up to 100 %.
#
# A third run samples at 10 Hz: each backend then runs far more statements
# per tick than its statement ring holds (64), so the samples taken before
# a statement's id existed are only attributed because the sampler looks
# them up a millisecond (and on a busy host a few more) after the tick, not
# at the next one.
#
# Last, a lock storm among 400 idle connections shows in the system-wide
# recent views, with no row refused.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run ();
use Time::HiRes qw(time sleep);

my ($node) = tracer_node('ash_pgbench',
	conf => "shared_buffers = 16MB\nwal_level = replica\nmax_wal_senders = 2\n");
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
$node->command_ok([ 'pgbench', '-i', '-s', '5', '-q', '-p', $node->port, '-h', $node->host, 'postgres' ],
	'pgbench -i');

sub q1 { return $node->safe_psql('postgres', $_[0]); }

my $clients = 4;
my $secs = 8;

# Run pgbench in the background; while it runs, learn the query id of its
# SELECT from pg_stat_activity.  Returns (elapsed s, query id).
sub run_pgbench
{
	my ($mode) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'pgbench', '-S', '-M', $mode, '-c', $clients, '-j', '2', '-T', $secs,
			'-p', $node->port, '-h', $node->host, 'postgres' ],
		'>', \$out, '2>', \$err);
	my $t0 = time();
	my $qid = '';
	for (1 .. 100)
	{
		$qid = q1("SELECT query_id FROM pg_stat_activity
			WHERE query LIKE 'SELECT abalance%'
			  AND query_id IS NOT NULL AND query_id <> 0 LIMIT 1");
		last if $qid ne '';
		sleep(0.1);
	}
	$h->finish;
	my $elapsed = time() - $t0;
	is(harness_exit($h), 0, "pgbench -M $mode exits 0") or diag($err);
	note "pgbench -M $mode: " . join(' ', grep { /^(tps|number of transactions actually)/ } split /\n/, $out);
	return ($elapsed, $qid);
}

for my $run ([ 'simple', 100 ], [ 'extended', 100 ], [ 'simple', 10 ])
{
	my ($mode, $hz) = @$run;
	if ($hz != ($node->safe_psql('postgres', 'SHOW pg_tracer.sample_rate')))
	{
		$node->safe_psql('postgres', "ALTER SYSTEM SET pg_tracer.sample_rate = $hz");
		$node->reload;
		sleep(0.5);
	}
	my $active0 = q1("SELECT active_time FROM pg_stat_database WHERE datname = 'postgres'");
	my $reset_at = q1("SELECT pg_tracer_reset(), clock_timestamp()");
	$reset_at =~ s/^t\|//;
	my $t_reset = time();
	my ($elapsed, $qid) = run_pgbench($mode);
	sleep(0.3);		# the sessions' exits reach both the sampler and the stats
	my $since_reset = time() - $t_reset;
	isnt($qid, '', "$mode: pgbench's SELECT has a query id ($qid)");

	my $active = q1("SELECT active_time - $active0 FROM pg_stat_database WHERE datname = 'postgres'");
	my $sessions_db = q1("SELECT sum(db_time_ms) FROM pg_tracer_sessions
		WHERE backend_type = 'client backend' AND exited AND backend_start > '$reset_at'");
	my $db = q1("SELECT time_ms FROM pg_tracer_time_model WHERE stat_name = 'DB Time'");
	note sprintf('%s: DB time %.0f ms, pgbench sessions %.0f ms, active_time %.0f ms, %.2f s since reset, pgbench %.2f s',
		$mode, $db, $sessions_db, $active, $since_reset, $elapsed);

	cmp_ok($db, '<=', $clients * $since_reset * 1000 * 1.05,
		"$mode: DB time $db ms <= clients x elapsed x 1.05");
	cmp_ok($sessions_db, '<=', $clients * $elapsed * 1000 * 1.05,
		"$mode: pgbench sessions' DB time <= clients x elapsed x 1.05");
	# and there is some (some 3 of 8 s a session here): the bounds below are
	# fractions of it
	cmp_ok($sessions_db || 0, '>=', $clients * $elapsed * 1000 * 0.1,
		"$mode: pgbench sessions' DB time >= clients x elapsed x 0.1");
	# active_time adds up the time between changes of state only; under the
	# extended protocol Parse, Bind and Execute each restart the "active"
	# state's clock without a change, so it undercounts there: simple only.
	ok(abs($sessions_db - $active) <= 0.25 * $active,
		sprintf('%s: pgbench sessions\' DB time %.0f ms matches pg_stat_database.active_time %.0f ms (+-25%%)',
			$mode, $sessions_db, $active))
	  if $mode eq 'simple';

	my $sum = q1("SELECT sum(pct_db_time) FROM pg_tracer_wait_events WHERE NOT idle");
	ok(abs($sum - 100) <= 2, "$mode: wait events' pct_db_time sums to $sum");
	$sum = q1("SELECT sum(pct_db_time) FROM pg_tracer_time_model WHERE depth = 1 AND NOT idle");
	ok(abs($sum - 100) <= 2, "$mode: time model classes sum to $sum %");
	is(q1("SELECT count(*) FROM pg_tracer_wait_events WHERE idle AND pct_db_time IS NOT NULL"), '0',
		"$mode: idle events have no share of DB time");
	is(q1("SELECT idle FROM pg_tracer_wait_events WHERE wait_event = 'OutsideStatement'"), 't',
		"$mode: on-CPU time between statements is reported, as idle");
	my $cpu = q1("SELECT pct_db_time FROM pg_tracer_wait_events WHERE wait_event = 'CPU*'");
	cmp_ok($cpu, '>', 30, "$mode: select-only load is mostly CPU* ($cpu %)");

	# the statement's query id carries its DB time, whatever the protocol
	my $q = q1("SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_query_events WHERE queryid = $qid");
	# Under the extended protocol the share without an id grows with load
	# (each message's time before parse analysis): bound it looser there.
	ok($q >= ($mode eq 'simple' ? 0.95 : 0.8) * $sessions_db,
		sprintf('%s at %d Hz: %.0f of the sessions\' %.0f ms DB time under the SELECT\'s query id',
			$mode, $hz, $q, $sessions_db));
	# Samples taken before parse analysis computed the id (raw parsing) get
	# it through the statement ring; what stays at 0 is protocol-message time
	# no statement claims: little under the simple protocol, more under the
	# extended one, whose Parse and Bind messages each pass through the
	# backend's loop.
	# DB time outside pgbench's sessions (this test's own psql connections,
	# whose start-up has no query id and is slow on a loaded host; background
	# processes) may all be without an id: what is left is pgbench's.
	my $q0 = q1("SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_query_events WHERE queryid = 0");
	my $q0_pgbench = $q0 - ($db > $sessions_db ? $db - $sessions_db : 0);
	cmp_ok($q0_pgbench, '<', ($mode eq 'simple' ? 0.03 : 0.15) * $sessions_db,
		sprintf('%s at %d Hz: query id 0 has %.0f ms, at most %.0f ms of it in pgbench\'s sessions (of %.0f ms)',
			$mode, $hz, $q0, $q0_pgbench, $sessions_db));
}

# while pgbench runs, the active view shows it working
my $h = IPC::Run::start([ 'pgbench', '-S', '-c', '2', '-T', '3', '-p', $node->port, '-h', $node->host, 'postgres' ],
	'>', \my $o, '2>', \my $e);
my $busy = 0;
for (1 .. 20)
{
	$busy = q1("SELECT count(*) FROM pg_tracer_active WHERE backend_type = 'client backend' AND state <> 'idle'
		AND db_time_ms > 0");
	last if $busy > 0;
	sleep(0.1);
}
$h->finish;
cmp_ok($busy, '>', 0, 'active: pgbench backends seen on cpu or waiting');
is(q1('SELECT overflow_rows + history_overflow_rows + session_overflow FROM pg_tracer_ash_status'), '0',
	'no overflow');

# A WAL sender streaming to a client: its replication command never gets a
# query id, and its DB time goes to query id 0 as it is sampled (before,
# its samples were held for as long as the client stayed connected, and the
# query events fell short of DB time by the WAL sender's share)
my $wal_dir = PostgreSQL::Test::Utils::tempdir();
my $recv = IPC::Run::start([ 'pg_receivewal', '-D', $wal_dir, '-h', $node->host, '-p', $node->port,
		'--no-loop', '-n' ], '>', \my $ro, '2>', \my $re);
ok(defined wait_until(sub { q1("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'walsender'") eq '1' }, 10),
	'a WAL sender streams to pg_receivewal');
q1('SELECT pg_tracer_reset()');
# until the WAL sender has spent some 50 ms of DB time streaming (some 30
# per 300,000 rows here)
my $ws_time = "SELECT coalesce(sum(db_time_ms), 0) FROM pg_tracer_sessions WHERE backend_type = 'walsender'";
for my $i (1 .. 8)
{
	q1("CREATE TABLE wal_gen_$i AS SELECT g, repeat(md5(g::text), 8) AS pad FROM generate_series(1, 300000) g");
	last if q1($ws_time) >= 50;
}
sleep(1);
my ($db_all, $q_all, $ws_db) = split /\|/, q1("SELECT
	(SELECT time_ms FROM pg_tracer_time_model WHERE stat_name = 'DB Time'),
	(SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_query_events),
	(SELECT coalesce(sum(db_time_ms), 0) FROM pg_tracer_sessions WHERE backend_type = 'walsender')");
SKIP:
{
	# its time on the CPU is sampled, at 100 Hz: some runs see too little
	skip "the WAL sender was sampled on the CPU for only $ws_db ms", 1 if $ws_db < 20;
	cmp_ok($db_all - $q_all, '<', 0.5 * $ws_db,
		sprintf('query events hold the DB time of the WAL sender while it streams: %.0f of %.0f ms (%.0f ms its)',
			$q_all, $db_all, $ws_db));
}
$recv->kill_kill;
$node->stop;

check_storm_among_idle_connections();
done_testing();

# 400 idle pooled connections, then ten sessions queue on a lock for 2 s.
# Every sampled process adds a (session, event) row to each history bucket;
# the buckets are sized from max_connections, and an (event) row may use
# half of the room above a table's limit, so the storm still shows in the
# system-wide recent views and no row is refused.  Before, the 400 idle
# connections filled a fixed 384-row bucket and the lock waits were
# missing from pg_tracer_wait_events_since.
sub check_storm_among_idle_connections
{
	my ($many) = tracer_node('ash_many', conf => "max_connections = 450\n");
	$many->safe_psql('postgres', 'CREATE EXTENSION pg_tracer; CREATE TABLE storm (i int)');
	my $dir = PostgreSQL::Test::Utils::tempdir();
	open(my $fh, '>', "$dir/idle.sql") or die "$dir/idle.sql: $!";
	print $fh "\\sleep 25 s\nSELECT 1;\n";
	close($fh);
	open($fh, '>', "$dir/wait.sql") or die "$dir/wait.sql: $!";
	print $fh "SELECT count(*) FROM storm;\n";
	close($fh);
	my @conn = ('-h', $many->host, '-p', $many->port, 'postgres');
	my $idle = IPC::Run::start([ 'pgbench', '-n', '-c', '400', '-j', '4', '-t', '1', '-f',
			"$dir/idle.sql", @conn ], '>', \my $io, '2>', \my $ie);
	my $count = "SELECT count(*) >= 400 FROM pg_stat_activity WHERE state = 'idle'";
	ok(defined wait_until(sub { $many->safe_psql('postgres', $count) eq 't' }, 20),
		'400 idle connections') or diag($ie);
	sleep(1.5);    # a bucket with all of them in it
	my $locker = $many->background_psql('postgres');
	$locker->query_safe('BEGIN; LOCK TABLE storm IN ACCESS EXCLUSIVE MODE');
	my $t_start = time();
	my $waiters = IPC::Run::start([ 'pgbench', '-n', '-c', '10', '-j', '2', '-t', '1', '-f',
			"$dir/wait.sql", @conn ], '>', \my $wo, '2>', \my $we);
	wait_until(sub {
		$many->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'") eq '10' }, 10);
	my $t_all = time();
	sleep(2);
	$locker->query_safe('COMMIT');
	my $t_end = time();
	$waiters->finish;
	sleep(1.2);    # the sampler's bucket of the end
	my ($lock_ms, $overflow) = split /\|/, $many->safe_psql('postgres',
		"SELECT (SELECT coalesce(sum(total_ms), 0) FROM pg_tracer_wait_events_since('30 s')
		          WHERE wait_event_type = 'Lock'),
		        (SELECT overflow_rows + history_overflow_rows FROM pg_tracer_ash_status)");
	# each waited from when it queued (between the two) to the commit
	my ($least, $most) = (10_000 * ($t_end - $t_all), 10_000 * ($t_end - $t_start));
	ok($lock_ms >= 0.9 * $least && $lock_ms <= 1.1 * $most,
		sprintf('a lock storm among 400 idle connections: %.0f ms of Lock waits in the last 30 s, '
			  . 'ten sessions blocked for %.0f-%.0f ms', $lock_ms, $least, $most));
	is($overflow, '0', 'no row refused');
	$locker->quit;
	$idle->kill_kill;
	$many->stop;
}
