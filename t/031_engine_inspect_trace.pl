# 031_engine_inspect_trace.pl — `pg-tracer inspect` on a real server
# (processes and roles, the executable through /proc/<pid>/root, its USDT
# notes against readelf, symbol availability) and `pg-tracer trace` with
# the engine sets (events, --stats, --probes all, bad input).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep);

plan skip_all => 'root helper not reachable (run through scripts/test.sh)'
  unless helper_available();

my ($node, $rt) = tracer_node('inspect', conf => "compute_query_id = on\n");
my $pm = $node->safe_psql('postgres', "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'");
my $bg = $node->background_psql('postgres');
my $bg_pid = $bg->query_safe('SELECT pg_backend_pid()');

# --- inspect, JSON
my ($rc, $out, $err) = run_helper('inspect', '--pgdata', $node->data_dir, '--format', 'json');
is($rc, 0, 'inspect --pgdata exits 0') or diag($err);
my $j = eval { decode_json($out) };
ok($j, 'inspect --format json is valid JSON') or diag($@);
is($j->{postmaster_pid}, $node->{_pid}, 'the postmaster of the data directory');
my %roles = map { $_->{pid} => $_->{role} } @{ $j->{processes} };
is($roles{ $node->{_pid} }, 'postmaster', 'role: postmaster');
is($roles{$pm}, 'checkpointer', 'role: checkpointer');
is($roles{$bg_pid}, 'client backend', 'role: client backend');
my %seen = map { $_ => 1 } values %roles;
ok($seen{'background writer'} && $seen{'walwriter'}, 'roles: background writer, walwriter');
ok(!grep({ $_ eq 'other' } values %roles), 'every process classified');
like($j->{binary}, qr{^/proc/$node->{_pid}/root/.+/postgres$},
	'executable resolved through /proc/PID/root');

# readelf's count of SDT notes is the independent ground truth
my $bin = $j->{binary};
my $readelf = `readelf -n '$bin' | grep -c NT_STAPSDT`;
chomp $readelf;
cmp_ok($readelf, '>', 50, "readelf sees $readelf SDT notes");
is($j->{usdt_notes}, $readelf, 'inspect lists every SDT note');
is(scalar(@{ $j->{usdt} }), $readelf, 'one entry per note');
my ($qs) = grep { $_->{name} eq 'query__start' } @{ $j->{usdt} };
ok($qs && $qs->{provider} eq 'postgresql' && $qs->{semaphore} ne '0x0' && $qs->{args} eq '8@%rbx',
	'query__start: provider, semaphore, argument spec');
my %sym = map { $_->{name} => $_ } @{ $j->{symbols} };
ok(!$sym{exec_simple_query}{resolvable}, 'exec_simple_query flagged unresolvable');
ok($sym{$_}{resolvable}, "$_ resolvable") for qw(LockAcquire LWLockAcquire XLogInsert XLogFlush
  ReadBufferExtended CreateCheckPoint);
is($j->{pie} ? 1 : 0, 1, 'PIE');
is($j->{dwarf} ? 1 : 0, 0, 'no DWARF (Debian strips it)');
like($j->{build_id}, qr/^[0-9a-f]{40}$/, 'build id');
like($j->{debuglink}, qr/\.debug$/, 'debuglink');
my %ps = map { $_->{name} => $_ } @{ $j->{probe_sets} };
is($ps{'pg-query'}{mechanism}, 'usdt+uprobe', 'pg-query would use USDT (and a uprobe for errors)');
is($ps{'pg-wal'}{mechanism}, 'usdt+uprobe', 'pg-wal: USDT and a uprobe');

# --- inspect, text, by pid of a backend; --binary
($rc, $out) = run_helper('inspect', '--pid', $bg_pid);
is($rc, 0, 'inspect --pid of a backend inspects its server');
like($out, qr/^\s+exec_simple_query\s+unresolvable$/m, 'text: exec_simple_query unresolvable');
like($out, qr/^USDT:\s+$readelf probe sites/m, 'text: probe count');
($rc, $out, $err) = run_helper('inspect', '--binary', '/etc/hostname');
is($rc, 1, 'a non-ELF file: exit 1');
like($err, qr/not an ELF file: no ELF header/, 'with the reason');
($rc, $out, $err) = run_helper('inspect', '--binary', '/etc/hostname', '--format', 'json');
is($rc . '|' . $out, '1|', 'a non-ELF file, JSON: exit 1 and nothing on stdout');
($rc, $out, $err) = run_helper('inspect', '--pid', '1');
is($rc, 1, 'pid 1 is not a server: exit 1');
like($err, qr/--pid 1 is neither a PostgreSQL postmaster \(.*\) nor a child of one \(its parent: /,
	"... with pid 1's own reason and its parent's");
($rc, $out, $err) = run_helper('inspect', '--pid', 'abc');
is($rc, 2, 'bad --pid: usage error');

# --- trace: the statement of a live session as an event with its text
# (run once the probes are attached: start_trace waits for the status)
my ($qh, $qout, $qerr) = start_trace(qr/"set":"pg-locks"/, '--probes', 'pg-query,pg-locks',
	'--pgdata', $node->data_dir, '--duration', '60s', '--format', 'json');
$bg->query_safe("SELECT 'engine-trace-mark', pg_sleep(0.3)");
wait_until(sub { $qh->pump_nb; $$qout =~ /engine-trace-mark/ }, 10);
end_trace($qh);
is(harness_exit($qh), 0, 'trace exits 0 at SIGINT') or diag($$qerr);
my @recs = map { decode_json($_) } grep { /^\{/ } split /\n/, $$qout;
my ($st) = grep { $_->{event} eq 'status' && $_->{set} eq 'pg-query' } @recs;
is("$st->{state} $st->{mechanism}", 'available usdt+uprobe', 'trace: pg-query status');
my ($ev) = grep { $_->{set} eq 'pg-query' && $_->{event} eq 'query'
	  && ($_->{query} // '') =~ /engine-trace-mark/ } @recs;
ok($ev, 'trace: statement event with its text');
SKIP:
{
	skip 'no event', 3 unless $ev;
	is($ev->{pid}, $bg_pid, 'event pid');
	cmp_ok($ev->{latency_us}, '>=', 300_000, 'event latency >= the sleep');
	cmp_ok($ev->{latency_us}, '<', 600_000, 'event latency plausible');
}
$bg->query_safe('SELECT 1');

# --- trace pg-locks: a wait on a transaction id streams its object (the
# holder's xid), while the summary row of `--stats`, which adds up such
# waits by type and mode, leaves lock_field1..3 out (SQL shows NULL); a
# relation lock's summary keeps database and relation
$node->safe_psql('postgres',
	'CREATE TABLE tw (id int PRIMARY KEY, v int); INSERT INTO tw VALUES (1, 0); CREATE TABLE rw (a int)');
my $holder = $node->background_psql('postgres');
my $waiter = $node->background_psql('postgres');
my $w_pid = $waiter->query_safe('SELECT pg_backend_pid()');

# The waiter runs $sql, which blocks on a lock of the holder's ($event:
# the wait event it shows); 0.3 s later the holder runs $release.
sub wait_on_holder
{
	my ($sql, $event, $release) = @_;
	my $w_wait = "SELECT wait_event_type || ':' || wait_event FROM pg_stat_activity WHERE pid = $w_pid";
	$waiter->query_until(qr/waiting/, "\\echo waiting\n$sql;\n");
	ok(defined wait_until(sub { $node->safe_psql('postgres', $w_wait) eq "Lock:$event" }, 3),
		"waiter blocked on the holder's $event lock");
	sleep(0.3);
	$holder->query_safe($release);
	$waiter->query_safe('SELECT 1');
}

# A wait of the waiter on the holder's transaction id, then one on a
# relation; returns that transaction id.
sub two_lock_waits
{
	$holder->query_safe('BEGIN; UPDATE tw SET v = v + 1 WHERE id = 1');
	my $xid = $holder->query_safe('SELECT txid_current()');
	wait_on_holder('UPDATE tw SET v = v + 10 WHERE id = 1', 'transactionid',
		'COMMIT; BEGIN; LOCK TABLE rw IN ACCESS EXCLUSIVE MODE');
	wait_on_holder('SELECT count(*) FROM rw', 'relation', 'COMMIT');
	return $xid;
}

# Run trace --probes pg-locks ARGS around two_lock_waits; returns the
# waiter's records, the transaction id and all the records.
sub trace_lock_waits
{
	my ($h, $o, $e) = start_trace(qr/"set":"pg-locks"/, '--probes', 'pg-locks', '--pgdata',
		$node->data_dir, '--duration', '60s', '--format', 'json', @_);
	my $xid = two_lock_waits();
	end_trace($h);
	is(harness_exit($h), 0, "trace pg-locks @_ exits 0") or diag($$e);
	my @all = map { decode_json($_) } grep { /^\{/ } split /\n/, $$o;
	return ([ grep { $_->{pid} == $w_pid } @all ], $xid, \@all);
}

my ($lk, $xid) = trace_lock_waits();
my ($xev) = grep { $_->{event} eq 'lock-wait' && $_->{lock_type} eq 'transactionid' } @$lk;
is($xev && $xev->{lock_field1}, $xid, "the stream names the transaction id waited on ($xid)");
my $all;
($lk, undef, $all) = trace_lock_waits('--stats', '--histogram', '--interval', '1s');
my ($xsum) = grep { $_->{event} eq 'stats' && ($_->{lock_type} // '') eq 'transactionid' } reverse @$lk;
ok($xsum && $xsum->{probe} eq 'lock-wait' && $xsum->{calls} == 1 && $xsum->{lock_mode} eq 'ShareLock',
	'summary: one transactionid ShareLock wait');
ok($xsum && !grep({ exists $xsum->{$_} } qw(lock_field1 lock_field2 lock_field3)),
	'summary: no lock_field1..3 for a transaction id');
my $rw = $node->safe_psql('postgres', "SELECT 'rw'::regclass::oid");
my ($rsum) = grep { $_->{event} eq 'stats' && ($_->{lock_type} // '') eq 'relation' } reverse @$lk;
is($rsum && $rsum->{lock_field2}, $rw, 'summary: a relation lock keeps its relation');
# the set's histogram takes every process together: pid 0, but not the kernel
my ($lh) = grep { $_->{event} eq 'histogram' && $_->{metric} eq 'lock-wait_latency' } reverse @$all;
is($lh && join(' ', $lh->{pid}, $lh->{backend_type}, $lh->{unit}), '0 all usecs',
	'histogram of all processes: pid 0, backend_type all, unit usecs');
cmp_ok($lh ? $lh->{total} : 0, '>=', 2, 'it counts both waits');
$holder->quit;
$waiter->quit;

# --- trace --pid of one backend: a backend forked meanwhile enters the pid
# filter at its fork and is let go within a second; the engine programs
# must see that too, or its statements fill the set's histogram (of every
# traced process together) for the rest of its life
my $one = $node->background_psql('postgres');
my $one_pid = $one->query_safe('SELECT pg_backend_pid()');
my ($oh, $oout, $oerr) = start_trace(qr/"set":"pg-query"/, '--probes', 'pg-query', '--pid',
	$one_pid, '--histogram', '--interval', '1s', '--duration', '60s', '--format', 'json');
my $other = $node->background_psql('postgres');
$other->query_safe('SELECT 1');		# counted: the trace has not let it go yet
sleep(3);
$other->query_safe('SELECT 1') for 1 .. 20;
$one->query_safe('SELECT 1') for 1 .. 3;
end_trace($oh);
is(harness_exit($oh), 0, 'trace --pid of a backend exits 0') or diag($$oerr);
my ($qhist) = grep { $_->{event} eq 'histogram' && $_->{metric} eq 'query_latency' }
  reverse map { decode_json($_) } grep { /^\{/ } split /\n/, $$oout;
my $qtotal = $qhist ? $qhist->{total} : -1;
ok($qtotal >= 3 && $qtotal < 10,
	"--pid of a backend: its statements in the histogram, not another's after its first second ($qtotal)");
$other->quit;
$one->quit;

# --- trace --probes all --stats: kernel and engine sets together
($rc, $out, $err) = run_helper('trace', '--probes', 'all', '--pgdata', $node->data_dir,
	'--duration', '2s', '--stats', '--format', 'json');
is($rc, 0, 'trace --probes all --stats exits 0') or diag($err);
my %st = map { my $r = decode_json($_); $r->{event} eq 'status' ? ($r->{set} => $r->{state}) : () }
  grep { /^\{/ } split /\n/, $out;
is($st{$_}, 'available', "--probes all runs $_") for qw(pg-query pg-locks pg-wal pg-buffer pg-checkpoint pg-usdt pg-lwlock);

# --- text: the set column is as wide as the longest name in it (the sets
# asked for, and the query-id tagging's status), the event column as the
# longest event name ("cache_write_miss")
($rc, $out, $err) = run_helper('trace', '--probes', 'pg-checkpoint,sched', '--pgdata',
	$node->data_dir, '--duration', '1s', '--stats');
is($rc, 0, 'trace in text exits 0') or diag($err);
my @text_recs = grep { /^\d\d:\d\d:/ } split /\n/, $out;
my %width = map { /^\S+ (\S+ +)\S/ ? (length($1) => 1) : () } @text_recs;
my %ewidth = map { /^\S+ \S+ +(\S+ +)\S/ ? (length($1) => 1) : () } @text_recs;
cmp_ok(scalar(grep { / queryid-tagging / } @text_recs), '==', 1, 'text: the query-id tagging\'s status is a record');
cmp_ok(scalar(@text_recs), '>=', 4, 'text: status and summary records');
is(join(',', sort keys %width), '16',
	'text: every record\'s event starts in one column, after "queryid-tagging" and a space');
is(join(',', sort keys %ewidth), '17',
	'text: and the fields after it in one column, 16 wide and a space');
($rc, $out, $err) = run_helper('trace', '--probes', 'pg-nope', '--pgdata', $node->data_dir);
is($rc, 2, 'unknown set: usage error');

$bg->quit;

# --- after a restart the trace waits for the extension's new layout file:
# until the worker writes it, the one there is the old postmaster's, which
# the trace must not use (query ids 0), and it looks again each second.  The
# old file is put back over the new one while the trace starts, then the new
# one, so that the order does not depend on timing.
my $layout = $node->data_dir . '/pg_tracer.layout';
my $old_layout = slurp_file($layout);
# a table with pages to read: after the restart only the statement that
# scans it reads them (EXPLAIN without ANALYZE reads no data pages)
$node->safe_psql('postgres', 'CREATE TABLE qt AS SELECT g FROM generate_series(1, 20000) g');
$node->restart;
my $new_layout;
wait_until(sub { $new_layout = slurp_file($layout); $new_layout ne $old_layout }, 10);
sub overwrite
{
	my ($path, $bytes) = @_;
	open(my $fh, '+<', $path) or die "open $path: $!";	# keeps owner and mode
	truncate($fh, 0);
	print $fh $bytes;
	close($fh);
}
overwrite($layout, $old_layout);
my ($th, $tout, $terr) = start_trace(qr/"queryid-tagging"/, '--probes', 'syscall', '--pgdata',
	$node->data_dir, '--format', 'json', '--duration', '60s', '--log-level', 'info');
like($$terr, qr/the layout file is the previous postmaster's: query ids are 0 until/,
	'restart: the old postmaster\'s layout file is not used');
overwrite($layout, $new_layout);
ok(defined wait_until(sub { $th->pump_nb; $$terr =~ /layout file written: query ids from now on/ }, 5),
	'restart: the new layout file is taken up when it is there') or diag($$terr);
my $q = $node->background_psql('postgres');
my $q_pid = $q->query_safe('SELECT pg_backend_pid()');
# the trace maps a new backend's query-id slot at its next look (each
# second): until then its calls carry 0.  A statement that reads a file
# at every run shows when they carry ids.
ok(defined wait_until(
		sub {
			$q->query_safe("SELECT length(pg_read_file('PG_VERSION'))");
			$th->pump_nb;
			$$tout =~ /"pid":$q_pid,[^\n]*"queryid":"-?[1-9]/;
		},
		10),
	'restart: a new backend\'s calls carry query ids once the trace maps it');
my $explain = $q->query_safe('EXPLAIN (VERBOSE, FORMAT JSON) SELECT count(*) FROM qt');
my ($qid) = $explain =~ /"Query Identifier": (-?\d+)/;
$q->query_safe('SELECT count(*) FROM qt');
wait_until(sub { $th->pump_nb; $$tout =~ /"pid":$q_pid,[^\n]*"queryid":"\Q$qid\E",/ }, 5) if defined $qid;
end_trace($th);
my %q_ids = map { /"queryid":"(-?\d+)"/ ? ($1 => 1) : () } grep { /"pid":$q_pid,/ } split /\n/, $$tout;
ok(defined $qid && $q_ids{$qid},
	'restart: a new backend\'s reads of a table carry its statement\'s query id ('
	  . ($qid // 'no id from EXPLAIN') . ' among ' . join(',', sort keys %q_ids) . ')');
$q->quit;
$node->stop;
done_testing();
