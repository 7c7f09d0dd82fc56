# 044_debug_traps.pl — a debug trap no breakpoint claims does not end a
# PostgreSQL process under pg_tracer (src/debug_trap.c), and every other
# SIGTRAP keeps its default action.
#
# The trap is a real #DB raised by the CPU in the backend: INT1, from a
# test-only module built here (test/trap_module), whose DR6 names no cause,
# the path the kernel takes for a trap whose DR6 a hypervisor lost.  Ground
# truth is PostgreSQL's own: the backend's pid before and after, and the
# postmaster's "terminated by signal 5" in the server log.
#
#   - without pg_tracer preloaded, INT1 ends the backend (SIGTRAP), and the
#     postmaster resets the cluster: the trap is real and fatal
#   - with pg_tracer preloaded, three INT1s: the session goes on, same pid,
#     and the server log and pg_tracer_debug_traps say 3 traps were
#     absorbed, with the pid and si_code 1 (TRAP_BRKPT)
#   - INT3 (SIGTRAP with SI_KERNEL) still ends the backend: only #DB traps
#     are absorbed
#   - with a helper on the watchpoint source (where breakpoints fire): a wait
#     event set and cleared by stores no breakpoint sees (/proc/self/mem),
#     each followed by INT1, is timed anyway, because the handler stores
#     wait_event_info again; ground truth is the monotonic clock around the
#     two stores
# The first three need no helper: the handler is the library's, in every
# process.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $arch = `uname -m`;
chomp $arch;
plan skip_all => "INT1 is an x86-64 instruction; this machine is $arch" unless $arch eq 'x86_64';

# Run the traps in a new session: (pid before, result, pid after) or the
# error psql printed when the backend died.
sub trap_session
{
	my ($node, $n, $kind) = @_;
	my ($stdout, $stderr);
	$node->psql('postgres',
		"SELECT pg_backend_pid(); SELECT pgt_test_debug_trap($n, '$kind'); SELECT pg_backend_pid();",
		stdout => \$stdout, stderr => \$stderr);
	return ($stdout // '', $stderr // '');
}

# --- without pg_tracer: the trap is fatal -----------------------------------
# a crashed backend makes the postmaster reset the cluster and go on, as on
# a production server (the test clusters default to restart_after_crash off)
my $conf = "restart_after_crash = on\n";
my ($bare) = tracer_node('bare', preload => 0, conf => $conf);

# Build the test module into this test's own directory, against the
# server's headers.
my $dir = PostgreSQL::Test::Utils::tempdir();
my $so = "$dir/pgt_test_trap.so";
my $incdir = $bare->config_data('--includedir-server');
chomp $incdir;
my $ok = (system('cc', '-shared', '-fPIC', '-O2', "-I$incdir", '-o', $so,
	"$FindBin::Bin/../test/trap_module/pgt_test_trap.c") == 0);
ok($ok, "test module built ($so)") or BAIL_OUT('cannot build the test module');
my $create = "CREATE FUNCTION pgt_test_debug_trap(int, text) RETURNS int
	AS '$so', 'pgt_test_debug_trap' LANGUAGE C STRICT;
	CREATE FUNCTION pgt_test_hidden_wait(bigint, int) RETURNS float8
	AS '$so', 'pgt_test_hidden_wait' LANGUAGE C STRICT";
$bare->safe_psql('postgres', $create);
my $from = -s $bare->logfile;
my ($got, $err) = trap_session($bare, 1, 'int1');
like($err, qr/server closed the connection unexpectedly|terminat/i,
	'without pg_tracer: INT1 ends the backend') or diag "stdout: $got";
ok(defined wait_until(sub { $bare->log_contains(qr/terminated by signal 5/, $from) }, 10),
	'without pg_tracer: the postmaster reports signal 5 and resets the cluster');
$bare->poll_query_until('postgres', 'SELECT 1', '1');
$bare->stop;

# --- with pg_tracer: absorbed, counted, logged ------------------------------
my ($node, $rt) = tracer_node('traps', conf => $conf);
$node->safe_psql('postgres', "CREATE EXTENSION pg_tracer; $create");
$from = -s $node->logfile;
($got, $err) = trap_session($node, 3, 'int1');
my @lines = split /\n/, $got;
is(scalar(@lines), 3, 'with pg_tracer: the session survives three INT1s') or diag "stderr: $err";
is($lines[1], '3', 'the function returned after its traps');
is($lines[0], $lines[2], 'same backend before and after (pid ' . ($lines[0] // '?') . ')');
my $pid = $lines[0] // 0;
ok(defined wait_until(sub {
	$node->log_contains(qr/absorbed 3 debug trap\(s\).*\n.*process $pid, si_code 1 \(TRAP_BRKPT/, $from) }, 10),
	'the server log reports 3 absorbed traps with the pid and si_code 1 (TRAP_BRKPT)')
  or diag slurp_file($node->logfile, $from);
ok(!$node->log_contains(qr/terminated by signal/, $from), 'no process was terminated');
is($node->safe_psql('postgres', 'SELECT handler_installed, absorbed, reported, last_pid,
		last_si_code, last_cause FROM pg_tracer_debug_traps'),
	"t|3|3|$pid|1|TRAP_BRKPT: a trap whose DR6 names no cause",
	'pg_tracer_debug_traps: the handler here, 3 absorbed and reported, the pid and si_code 1');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the cluster serves new sessions');

# --- any other SIGTRAP keeps its default action -----------------------------
$from = -s $node->logfile;
($got, $err) = trap_session($node, 1, 'int3');
like($err, qr/server closed the connection unexpectedly|terminat/i,
	'INT3 (SI_KERNEL) still ends the backend');
ok(defined wait_until(sub { $node->log_contains(qr/terminated by signal 5/, $from) }, 10),
	'the postmaster reports signal 5');
ok(!$node->log_contains(qr/absorbed \d+ debug trap/, $from), 'INT3 was not counted as absorbed');
$node->poll_query_until('postgres', 'SELECT 1', '1');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the cluster is back after crash recovery');
# the crash restart made shared memory anew: the count starts again
is($node->safe_psql('postgres', 'SELECT handler_installed, absorbed, last_pid IS NULL
		FROM pg_tracer_debug_traps'), 't|0|t', 'after the crash restart: the handler, no traps yet');

# --- the replayed store: a helper on breakpoints times the hidden wait -----
SKIP:
{
	skip 'root helper not reachable (run through scripts/test.sh)', 3 unless helper_available();
	my $helper = start_helper($node, $rt, '--mode', 'full', '--probes', 'exact',
		'--exact-source', 'watchpoint');
	ok(wait_connected($node), 'helper connected (watchpoint source)');
	my $mech = $node->safe_psql('postgres',
		"SELECT mechanism || ': ' || reason FROM pg_tracer_probes WHERE probe_set = 'exact'");
	if ($mech !~ /^hardware watchpoints/)
	{
		signal_helper($helper, 'TERM');
		skip "breakpoints do not fire here ($mech)", 2;
	}
	# Extension:Extension (PG_WAIT_EXTENSION), held 300 ms, once the helper
	# has put its breakpoint on this new backend (its short sleeps are
	# timed; measured 0.3-1.2 s after the connection); the last sleep lets
	# the helper publish
	my $out = $node->safe_psql('postgres',
		"DO \$\$ BEGIN FOR i IN 1..100 LOOP PERFORM pg_sleep(0.1);
			EXIT WHEN EXISTS (SELECT FROM pg_tracer_exact_waits()
				WHERE pid = pg_backend_pid() AND wait_event = 'PgSleep'); END LOOP; END \$\$;
		 SELECT pgt_test_hidden_wait(x'07000000'::int, 300);
		 SELECT pg_sleep(0.6);
		 SELECT coalesce(sum(total_ms), 0), coalesce(sum(waits), 0) FROM pg_tracer_exact_waits()
		 WHERE pid = pg_backend_pid() AND wait_event_type = 'Extension'");
	my ($held, undef, $timed) = split /\n/, $out;
	my ($ms, $waits) = split /\|/, ($timed // '');
	note "held ${held} ms by the clock; exact: $ms ms in $waits wait(s)";
	is($waits, 1, 'the hidden wait is one exact wait');
	ok($ms >= $held * 0.95 && $ms <= $held + 20,
		"timed $ms ms against $held ms held (the stores replayed microseconds late)");
	signal_helper($helper, 'TERM');
}
$node->stop;

done_testing();
