# 002_helper_attach.pl — the real helper, real BPF, one real path end to end.
#
# The helper attaches to this test's cluster (one that took long to start);
# status turns connected, the
# pid filter lists the postmaster's children, a new connection appears in
# pg_tracer_backends within 2 seconds with a syscall count that grows (and so
# does a process older than the helper's attach), ping
# round-trips through the control socket, and bad input to the helper is
# refused with a clear message and a non-zero exit.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;
use IO::Socket::UNIX;
use Socket qw(SOCK_STREAM);
use Time::HiRes qw(time);

plan skip_all => 'root helper not reachable (run through scripts/test.sh)'
  unless helper_available();

my ($node, $rt) = tracer_node('attach');
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');

# A postmaster that took 30 s to start (large shared memory, a slow preload
# library, temp files left by a crash): postmaster.pid's start time, which
# the helper reads, is taken as the process starts, PgStartTime at the end
# of startup.  Made so here by moving the file's time back 30 s.  (Before,
# a gap over 5 s read as "another start of the postmaster": never connected.)
{
	my $pidfile = $node->data_dir . '/postmaster.pid';
	open(my $in, '<', $pidfile) or die "$pidfile: $!";
	my @lines = <$in>;
	close($in);
	chomp(my $start = $lines[2]);
	$lines[2] = ($start - 30) . "\n";
	open(my $out, '>', $pidfile) or die "$pidfile: $!";
	print $out @lines;
	close($out);
}

my $helper = start_helper($node, $rt);
ok(defined wait_until(sub {
	$node->safe_psql('postgres', 'SELECT helper_connected FROM pg_tracer_status()') eq 't'
}, 15), 'status turns connected (postmaster.pid gives a start 30 s before PgStartTime)')
  or diag($node->safe_psql('postgres', 'SELECT segment_state, reason FROM pg_tracer_status()'));

my $st = $node->safe_psql('postgres',
	"SELECT helper_pid, segment_generation >= 1, last_update > now() - interval '5 s',
	        postmaster_pid = $node->{_pid}, segment_state
	   FROM pg_tracer_status()");
is($st, "$helper|t|t|t|ok", 'status: helper pid, generation, fresh update, postmaster, ok');
like($node->safe_psql('postgres', 'SELECT helper_version FROM pg_tracer_status()'),
	qr/^\d+\.\d+/, 'status: helper version');

# Probe sets report their state; the core ones run here.
my %probes = map { split /\|/, $_, 2 } split /\n/, $node->safe_psql('postgres',
	'SELECT probe_set, state FROM pg_tracer_probes');
is($probes{'process'}, 'available', 'probe set process available');
is($probes{'syscall-count'}, 'available', 'probe set syscall-count available');
ok(exists $probes{'kprobes'}, 'kprobes capability reported');
like($node->safe_psql('postgres',
		"SELECT state || ': ' || reason FROM pg_tracer_probes WHERE probe_set = 'kprobes'"),
	qr/^(available|unavailable: \S.*)$/, 'kprobes: available, or unavailable with a reason');
# fexit: tested by loading and attaching one; the system-call sets end
# their calls there when it works, at sys_exit when not
my $fexit = $node->safe_psql('postgres',
	"SELECT state || ': ' || reason FROM pg_tracer_probes WHERE probe_set = 'fexit'");
like($fexit, qr/^(available: fexit programs load and attach|unavailable: fexit program on __\w+_sys_read: (load|attach): \S.*)$/,
	"fexit: available, or unavailable with the step and the reason ($fexit)");
ok(defined wait_until(sub {
	$node->safe_psql('postgres',
		"SELECT mechanism FROM pg_tracer_probes WHERE probe_set = 'syscall'")
	  eq ($fexit =~ /^available/ ? 'tp_btf/sys_enter+fexit' : 'tp_btf/sys_enter+sys_exit') }, 10),
	'the syscall set ends its calls where the fexit row says it can');

# The postmaster's children that exist already were found by scanning /proc.
ok(defined wait_until(sub {
	$node->safe_psql('postgres',
		"SELECT count(*) FROM pg_tracer_backends b JOIN pg_stat_activity a USING (pid)
		  WHERE a.backend_type IN ('checkpointer', 'background writer', 'walwriter')") eq '3'
}, 5), 'aux processes listed, joinable with pg_stat_activity');
is($node->safe_psql('postgres',
		"SELECT backend_type FROM pg_tracer_backends WHERE pid = $node->{_pid}"),
	'postmaster', 'postmaster listed');

# A new connection enters the pid filter at fork and shows within 2 s.
my $bg = $node->background_psql('postgres');
my $t0 = time();
my $bg_pid = $bg->query_safe('SELECT pg_backend_pid()');
my $seen = wait_until(sub {
	$node->safe_psql('postgres',
		"SELECT count(*) FROM pg_tracer_backends WHERE pid = $bg_pid") eq '1'
}, 5);
ok(defined $seen && time() - $t0 <= 2.0, sprintf('new connection visible within 2 s (%.2f s)', time() - $t0));
# Its type comes from its title, which a new backend sets a moment after the
# fork: the row may say "unknown" until the helper's next look (a tick).
my $row;
wait_until(sub {
	$row = $node->safe_psql('postgres',
		"SELECT b.backend_type = a.backend_type, b.attached_at <= now(), b.syscalls > 0
		   FROM pg_tracer_backends b JOIN pg_stat_activity a USING (pid) WHERE pid = $bg_pid");
	$row eq 't|t|t'
}, 2);
is($row, 't|t|t', 'client backend: type matches pg_stat_activity, attached, syscalls counted');

# Syscall counts are real: each pg_sleep() waits on its latch through at
# least one epoll_wait(), so 1000 sleeps add at least 1000 system calls
# (and far fewer than 100 per sleep).
my $before = $node->safe_psql('postgres', "SELECT syscalls FROM pg_tracer_backends WHERE pid = $bg_pid");
$bg->query_safe('SELECT count(*) FROM generate_series(1, 1000) g WHERE pg_sleep(0.0001) IS NOT NULL');
my $delta;
ok(defined wait_until(sub {
	$delta = $node->safe_psql('postgres', "SELECT syscalls FROM pg_tracer_backends WHERE pid = $bg_pid") - $before;
	$delta >= 1000
}, 5), "syscall count grows by at least one per sleep (delta $delta)");
cmp_ok($delta, '<', 100_000, 'and by a plausible amount');

# A process older than the helper (found by its /proc scan, not at fork) is
# counted too: the helper sets its bit in the dispatchers' tracked bitmap.
# pg_tracer's sampler (started with the cluster) wakes many times a second
# through epoll_wait and never hibernates.
my $sampler = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_tracer sampler'");
my $sampler0 = $node->safe_psql('postgres', "SELECT syscalls FROM pg_tracer_backends WHERE pid = $sampler");
my $sampler_delta;
ok(defined wait_until(sub {
	$sampler_delta = $node->safe_psql('postgres', "SELECT syscalls FROM pg_tracer_backends WHERE pid = $sampler") - $sampler0;
	$sampler_delta >= 20
}, 5), "a process older than the helper (the sampler, $sampler): its system calls are counted (+$sampler_delta)");
$bg->quit;
ok(defined wait_until(sub {
	$node->safe_psql('postgres', "SELECT count(*) FROM pg_tracer_backends WHERE pid = $bg_pid") eq '0'
}, 5), 'an exited backend leaves the view');

# Control socket round trip from SQL.
like($node->safe_psql('postgres', 'SELECT pg_tracer_ping()'),
	qr/^pong version=\S+ generation=\d+ pid=$helper$/, 'ping round-trips through the socket');
my $sock = segment_path($node, $rt, '.sock');
my $mode = (stat($sock))[2] & 07777;
ok(($mode & 0007) == 0, sprintf('socket not world-accessible (%o)', $mode));
# This test runs as the cluster owner, but is no process of the cluster:
# it may ask, not change (another cluster of the same uid may not reset
# this one's tables or spend its share of the escalation budget).
for my $req ('PING', 'PROBERESET', 'ESCALATE 5 intruder')
{
	my $c = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => $sock)
	  or die "connect $sock: $!";
	print $c "PGT/1 $req\n";
	my $answer = <$c> // '';
	close $c;
	if ($req eq 'PING')
	{
		like($answer, qr/^PGT\/1 OK pong/, 'the owner\'s other processes may ping');
		next;
	}
	my ($verb) = split / /, $req;
	like($answer, qr/^PGT\/1 ERR denied pid $$ is not a process of this cluster \(\Q$verb\E takes root/,
		"... but not $verb: only root and the cluster's own processes may");
}
my $seg = segment_path($node, $rt, '.seg');
$mode = (stat($seg))[2] & 07777;
ok(($mode & 0007) == 0, sprintf('segment not world-readable (%o)', $mode));

# The CLI status command sees the same cluster.
my ($rc, $out, $err) = run_helper('status', '--runtime-dir', $rt);
is($rc, 0, 'pg-tracer status exits 0');
like($out, qr/\Q@{[$node->data_dir]}\E/, 'status names the data directory');
like($out, qr/^\s*syscall-count\s+available\b/m, 'status lists probe sets, syscall-count available');

# Bad input: clear message, non-zero exit, the running helper untouched.
($rc, $out, $err) = run_helper('daemon', '--pgdata', $node->data_dir, '--runtime-dir', $rt);
is($rc, 1, 'second helper for the same cluster exits 1');
like($err, qr/already/, 'second helper says another one serves the cluster');
($rc, $out, $err) = run_helper('daemon', '--no-such-flag', '--runtime-dir', $rt);
is($rc, 2, 'unknown flag exits 2');
like($err, qr/no-such-flag|unrecognized|unknown/i, 'unknown flag named');
($rc, $out, $err) = run_helper('daemon', '--sampler-nice', '5', '--runtime-dir', $rt);
is($rc, 2, 'a nice value above 0 exits 2');
like($err, qr/--sampler-nice: "5" is not a nice value from -20 to 0/, 'and says which values work');
($rc, $out, $err) = run_helper('daemon', '--max-clusters', '0', '--runtime-dir', $rt);
is($rc, 2, '--max-clusters 0 exits 2');
like($err, qr/--max-clusters 0 is not a number from 1 to 256/, 'and says which values work');
($rc, $out, $err) = run_helper('daemon', '--pgdata', $node->basedir, '--runtime-dir', $rt);
is($rc, 1, 'a PGDATA that is not a cluster is refused (exit 1)');
like($err, qr/is not a PostgreSQL data directory \(no PG_VERSION file\)/, 'and says why');
# a runtime directory others may write to (as /run/postgresql, 2775): they
# could plant segments and sockets for clusters not theirs
{
	my $gw = $node->basedir . '/group_writable';
	mkdir($gw) or die "$gw: $!";
	chmod(0775, $gw) or die "chmod: $!";
	($rc, $out, $err) = run_helper('daemon', '--pgdata', $node->data_dir, '--runtime-dir', $gw);
	is($rc, 1, 'a group-writable runtime directory is refused (exit 1)');
	like($err, qr/group-writable \(mode 0775\): refusing/, 'and says why');
}
($rc, $out, $err) = run_helper('daemon', '--pid', $$, '--runtime-dir', $rt);
is($rc, 1, 'a pid that is not a postmaster is refused (exit 1)');
like($err, qr/--pid $$ is not a PostgreSQL postmaster: process $$ \(\S+\) is not a postgres process/,
	'and says why');
($rc, $out, $err) = run_helper('--help');
is($rc, 0, '--help exits 0');
like($out, qr/daemon/, '--help lists commands');
for my $cmd ('daemon', 'status', 'trace', 'inspect')
{
	($rc, $out, $err) = run_helper($cmd, '--help');
	is($rc, 0, "$cmd --help exits 0");
	like($out, qr/^Usage: pg-tracer $cmd /, "$cmd --help prints its usage");
}
is($node->safe_psql('postgres', 'SELECT helper_connected, helper_pid FROM pg_tracer_status()'),
	"t|$helper", 'the first helper still serves the cluster');

# The helper's reasons may name the data directory: a role that may not read
# data_directory sees it as $PGDATA in pg_tracer_probes too (before, only
# pg_tracer_status hid it)
{
	my $layout = $node->data_dir . '/pg_tracer.layout';
	rename($layout, "$layout.away") or die "rename: $!";
	my $sql = "SELECT reason FROM pg_tracer_probes WHERE probe_set = 'layout'";
	my $su = '';
	wait_until(sub { $su = $node->safe_psql('postgres', $sql); $su =~ /^no / }, 5);
	$node->safe_psql('postgres', 'CREATE ROLE nosy LOGIN');
	my $plain = $node->safe_psql('postgres', $sql, extra_params => [ '-U', 'nosy' ]);
	rename("$layout.away", $layout) or die "rename: $!";
	my $dir = $node->data_dir;
	like($su, qr/^no \Q$dir\E\/pg_tracer\.layout/, "the superuser reads the path ($su)");
	is($plain, 'no $PGDATA/pg_tracer.layout: extension not preloaded',
		'a plain role reads $PGDATA');
}

# A layout file of an earlier start of a postmaster with the same pid (pid 1
# of a container at every start, or a copied data directory) is refused:
# its addresses are not this postmaster's (before, only the pid was checked)
{
	my $layout = $node->data_dir . '/pg_tracer.layout';
	my $orig = slurp_file($layout);
	(my $old = $orig) =~ s/^postmaster_start_us (\d+)$/'postmaster_start_us ' . ($1 - 100_000_000)/me;
	my $put = sub {
		open(my $fh, '>', $layout) or die "$layout: $!";
		print $fh $_[0];
		close($fh);
	};
	my $sql = "SELECT state || ': ' || reason FROM pg_tracer_probes WHERE probe_set = 'layout'";
	my $row = '';
	$put->($old);
	wait_until(sub { $row = $node->safe_psql('postgres', $sql); $row =~ /earlier start/ }, 5);
	like($row, qr/^degraded: stale pg_tracer\.layout \(written by an earlier start of postmaster \d+, \d+ s before this one\)/,
		"a layout file of an earlier start is refused ($row)");
	$put->($orig);
	ok(defined wait_until(sub { $node->safe_psql('postgres', $sql) =~ /^available/ }, 5),
		'and the right one taken again');
}

signal_helper($helper, 'TERM');
ok(defined wait_until(sub {
	$node->safe_psql('postgres', 'SELECT helper_connected FROM pg_tracer_status()') eq 'f'
}, 10), 'after SIGTERM status says not connected');
like($node->safe_psql('postgres', 'SELECT segment_state || reason FROM pg_tracer_status()'),
	qr/stop/i, 'and that the helper stopped');
$node->stop;
done_testing();
