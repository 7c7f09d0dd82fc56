# 021_kernel_trace_cli.pl — `pg-tracer trace` with the kernel probe sets,
# on a cluster WITHOUT the extension (it finds the processes itself).
#
#   - JSON Lines: every line parses and carries ts, set, event, pid,
#     backend_type, queryid; a status record per set says what runs (vfs:
#     kprobes unavailable with the reason here, and libbpf's own attach
#     warnings are not printed on top of it); a workload's file reads
#     show as events of its backend, the pages of a table it creates as
#     cache_write_miss events; a final summary follows, opened by a
#     `summary` record
#   - --pid BACKEND traces that backend only (with its parallel workers,
#     whose reads and the backend's add up to pg_statio_user_tables'), and
#     ends when it exits
#   - --pgdata follows a restart: the new postmaster's backends are traced
#   - --syscall-exit: auto ends calls at fexit where the kernel runs it, at
#     sys_exit otherwise with the reason; fexit insists (here: both sets
#     unavailable, with the reason); tracepoint never tries; a failed load
#     of the fexit programs falls back to sys_exit (--assume-fexit)
#   - text --stats --histogram: numbered periodic summaries, stats grouped
#     by pid with the most time first, and ASCII histograms
#   - a stream that cannot keep up counts and reports the events it lost;
#     the records of connections that exited before a summary keep their
#     backend type
#   - bad options: usage errors (exit 2), a pid that is not PostgreSQL (exit 1)
#   - the block set on a kernel without block_io_start and block_rq_merge
#     (hidden with --hide-tracepoint): the status says so, and a cold
#     scan's block reads are still its backend's
#   - connection churn (pgbench -C): with --keep-exited 0 the rows of
#     exited backends fold into one row per backend type (pid null), and
#     their send bytes add up to the payload the client received; the
#     pg-query set's rows fold alike, one statement per connection
#   - the sched set as on a kernel before 6.4 (--no-storage-in-switch): a
#     backend that ran before the trace and one forked during it are both
#     counted, their pg_sleep off the CPU
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP ();

plan skip_all => 'root helper not reachable (run through scripts/test.sh)'
  unless helper_available();

my ($node, $rt) = tracer_node('trace', preload => 0);
$node->safe_psql('postgres',
	"CREATE TABLE r AS SELECT g, md5(g::text) m FROM generate_series(1, 50000) g");

# --- JSON stream of all sets ---------------------------------------------------------
my $s = $node->background_psql('postgres');
my $pid = $s->query_safe('SELECT pg_backend_pid()');
my ($h, $out, $err) = start_trace(qr/"queryid-tagging"/, '--probes', 'all', '--pgdata', $node->data_dir,
	'--format', 'json', '--duration', '4s');
like($$out, qr/"queryid-tagging"/, 'trace started');
$s->query_safe('SELECT count(*) FROM r');
$s->query_safe('CREATE TABLE r_copy AS SELECT * FROM r');	# new pages: write misses
$s->query_safe("SELECT pg_sleep(0.2)");
$h->finish;
is(harness_exit($h), 0, 'trace exits 0 after --duration');

my @lines = split /\n/, $$out;
cmp_ok(scalar(@lines), '>', 20, scalar(@lines) . ' JSON lines');
my ($bad, $missing, %status, %events_of_pid, $final, @summaries, $events_after) = (0, 0);
for my $l (@lines)
{
	my $r = eval { JSON::PP::decode_json($l) };
	if (!$r) { $bad++; diag("unparsable: $l"); next; }
	push @summaries, $r if $r->{set} eq 'trace' && $r->{event} eq 'summary';
	$events_after++ if @summaries && $r->{event} !~ /^(stats|histogram|summary)$/;
	for my $f (qw(ts set event pid backend_type queryid))
	{
		$missing++, diag("no $f: $l") unless exists $r->{$f};
	}
	# a string: nearly every id is beyond what a double holds exactly
	$missing++, diag("queryid not a decimal string: $l")
	  unless $l =~ /"queryid":"-?\d+"[,}]/;
	$missing++, diag("bad ts: $l")
	  unless ($r->{ts} // '') =~ /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
	$status{ $r->{set} } = $r if $r->{event} eq 'status';
	$events_of_pid{"$r->{set}/$r->{event}"}++ if $r->{pid} == $pid && $r->{event} ne 'stats';
	$final++ if $r->{event} eq 'stats';
}
is($bad, 0, 'every line parses as JSON');
is($missing, 0, 'every record has ts, set, event, pid, backend_type, queryid');
is($status{$_}{state}, 'available', "status: $_ available")
  for qw(syscall block sched memory network);
if (-e '/sys/bus/event_source/devices/kprobe')
{
	is($status{vfs}{state}, 'available', 'status: vfs with kprobes');
}
else
{
	is($status{vfs}{state}, 'degraded', 'status: vfs degraded');
	like($status{vfs}{reason}, qr/kprobes unavailable: no kprobe PMU: kernel built without CONFIG_KPROBE_EVENTS/,
		'status: vfs says kprobes are unavailable and why');
}
is($status{'queryid-tagging'}{state}, 'unavailable',
	'without the extension query ids are reported unavailable');
ok($events_of_pid{'syscall/pread64'}, 'the scan\'s preads are events of its backend');
ok($events_of_pid{'network/send'}, 'the result is a network send of its backend');
my ($wm) = grep { /"pid":$pid,/ && /"event":"cache_write_miss"/ } @lines;
like($wm // '', qr/"bytes":\d+,"dev":"\d+:\d+","ino":\d+,"page_index":\d+/,
	'the new table\'s pages are cache_write_miss events of its backend, with bytes, dev, ino, page_index');
ok($final, 'a final summary follows the stream');
is(scalar(@summaries), 1, 'one summary record: the final one (no --stats)');
is(($summaries[0] // {})->{backend_type}, 'none', 'the summary is about no process: pid 0, backend_type none');
is(($status{syscall} // {})->{backend_type}, 'none', 'a status record too');
ok($summaries[0] && $summaries[0]{final} && $summaries[0]{seq} == 1
	  && $summaries[0]{elapsed_s} >= 3.5 && $summaries[0]{elapsed_s} < 10,
	'it says final, seq 1, and the seconds traced: '
	  . join(' ', map { "$_=" . ($summaries[0]{$_} // 'undef') } qw(final seq elapsed_s)));
is($events_after // 0, 0, 'no event after the final summary opened');
unlike($$err, qr/libbpf: .*kprobe/, 'no libbpf kprobe warnings on stderr (the status says it)')
  unless -e '/sys/bus/event_source/devices/kprobe';
my ($one) = grep { /"pid":$pid,/ && /"event":"pread64"/ } @lines;
like($one, qr/"backend_type":"client backend".*"bytes":8192.*"latency_us":[\d.]+.*"file_class":"data","relfilenode":\d+/,
	'a pread64 event: backend type, bytes, latency, data file and relfilenode');
# the data files it read (catalogs at least: r itself may sit in shared
# buffers) lie in its database, or in global/ (database 0)
my $dboid = $node->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = 'postgres'");
my %dbs;
$dbs{ /"database":(\d+)/ ? $1 : 'none' }++
  for grep { /"pid":$pid,/ && /"event":"pread64"/ && /"file_class":"data"/ } @lines;
ok($dbs{$dboid} && !grep({ $_ ne $dboid && $_ ne '0' } keys %dbs),
	"data-file preads name their database ($dboid, or 0 for shared catalogs): "
	  . join(',', map { "$_ x$dbs{$_}" } sort keys %dbs));
ok((grep { /"event":"stats"/ && /"pid":$pid,/ && /"layer":"syscall"/
			 && /"file_class":"data","relfilenode":\d+,"database":${dboid}[,}]/ } @lines),
	'the final summary keeps the files and their database');

# --- one backend only --------------------------------------------------------------------
($h, $out, $err) = start_trace(qr/"queryid-tagging"/, '--probes', 'syscall', '--pid', $pid,
	'--format', 'json', '--duration', '3s');
$s->query_safe('SELECT count(*) FROM r');
$node->safe_psql('postgres', 'SELECT count(*) FROM r');	# another backend
$h->finish;
my %pids = map { /"pid":(\d+)/ ? ($1 => 1) : () } grep { !/"event":"(status|summary)"/ } split /\n/, $$out;
is(join(',', sort keys %pids), $pid, '--pid BACKEND: only that backend');
like($$out, qr/"set":"syscall","event":"status",[^\n]*"state":"available"/,
	'syscall alone: available (the network programs of its object are not loaded, not failed)');
# its parallel workers come with it: the postmaster's forks enter the
# filter, the workers stay (their title names the backend as leader) and
# are printed, other new backends are let go and not printed; the
# backend's and its workers' reads of the table add up to the blocks
# pg_statio_user_tables counts.  The leader does not scan: on a fast host
# it read the whole table before its workers had started (0 bytes theirs)
$node->safe_psql('postgres',
	"CREATE TABLE big AS SELECT g, repeat('x', 200) AS pad FROM generate_series(1, 100000) g");
my $bigfile = $node->safe_psql('postgres', "SELECT pg_relation_filenode('big')");
$s->query_safe($_) for ('SET max_parallel_workers_per_gather = 2', 'SET parallel_setup_cost = 0',
	'SET parallel_tuple_cost = 0', 'SET min_parallel_table_scan_size = 0',
	'SET parallel_leader_participation = off');
my $statio = "SELECT heap_blks_read FROM pg_statio_user_tables WHERE relname = 'big'";
my $blks0 = $node->safe_psql('postgres', $statio);
($h, $out, $err) = start_trace(qr/"queryid-tagging"/, '--probes', 'syscall', '--pid', $pid,
	'--stats', '--format', 'json', '--duration', '60s');
$s->query_safe('SELECT count(*) FROM big');
my $other = $node->safe_psql('postgres', 'SELECT pg_backend_pid() FROM (SELECT count(*) FROM r) c');
# the leader's table stats reach the shared ones at its next transaction's end
$s->query_safe('SELECT pg_stat_force_next_flush()');
$s->query_safe('SELECT 1');
end_trace($h);
my $truth = ($node->safe_psql('postgres', $statio) - $blks0) * 8192;
my (%type_of, %read_by, $in_final);
for my $r (map { eval { JSON::PP::decode_json($_) } // () } split /\n/, $$out)
{
	$in_final = 1 if $r->{event} eq 'summary' && $r->{final};
	next if $r->{event} =~ /^(status|summary)$/;
	$type_of{ $r->{pid} } = $r->{backend_type};
	$read_by{ $r->{backend_type} } += $r->{bytes}
	  if $in_final && $r->{event} eq 'stats' && ($r->{op} // '') eq 'pread64'
	  && ($r->{relfilenode} // 0) == $bigfile;
}
my @workers = grep { $_ != $pid } sort keys %type_of;
ok(@workers && !grep({ $type_of{$_} ne 'parallel worker' } @workers) && !$type_of{$other},
	"--pid BACKEND: its parallel workers too (@workers), not another backend ($other)");
my $all = ($read_by{'client backend'} // 0) + ($read_by{'parallel worker'} // 0);
ok(($read_by{'parallel worker'} // 0) > 0 && $truth > 0 && abs($all - $truth) <= 0.10 * $truth,
	"... the workers read their share (" . ($read_by{'parallel worker'} // 0)
	  . " bytes) and with the backend's it is what pg_statio_user_tables counts ($all of $truth)");

# nothing more can come once that backend is gone: the trace ends with its
# final summary, long before --duration
($h, $out, $err) = start_trace(qr/queryid-tagging/, '--probes', 'syscall', '--pid', $pid,
	'--stats', '--duration', '40s');
$s->quit;
my $t0 = time();
$h->finish;
my $took = time() - $t0;
ok(harness_exit($h) == 0 && $took < 20,
	"--pid BACKEND: the trace ends by itself when the backend exits (after ${took} s, exit "
	  . harness_exit($h) . ')');
like($$err, qr/--pid $pid has exited: ending the trace/, '... and says why');
like($$out, qr/^\S+ trace\s+summary .* final=true /m, '... after its final summary');

# --- where a call's end is seen: --syscall-exit ------------------------------------------
# auto takes fexit where this kernel runs it (the log says which, and why
# not), fexit insists, tracepoint never tries; --assume-fexit makes a kernel
# without fexit run the fallback after the object's failed load.
sub exits_trace
{
	my ($h, $out, $err) = start_trace(qr/"queryid-tagging"/, '--probes', 'syscall,network',
		'--pgdata', $node->data_dir, '--format', 'json', '--duration', '2s',
		'--log-level', 'info', @_);
	$node->safe_psql('postgres', 'SELECT count(*) FROM r');
	$h->finish;
	my (%st, %n);
	for (split /\n/, $$out)
	{
		my $r = JSON::PP::decode_json($_);
		$st{ $r->{set} } = $r if $r->{event} eq 'status';
		$n{ $r->{set} }++ if $r->{event} =~ /^(openat|close|pread64|read|send|recv)$/;
	}
	my ($line) = $$err =~ /system-call sets: calls end at (.*)$/m;
	return (\%st, \%n, $line // '', $$err);
}
my ($st, $n, $line) = exits_trace();
my $fexit_here = $line =~ /^fexit programs on the timed calls$/;
if ($fexit_here)
{
	is($st->{syscall}{mechanism}, 'tp_btf/sys_enter+fexit', 'auto: fexit here, the status says so');
}
else
{
	like($line, qr/^the sys_exit tracepoint \(fexit program on __\w+_sys_read: (load|attach): \S.*\)$/,
		"auto: sys_exit, with the step of fexit's test that failed and why ($line)");
	is($st->{syscall}{mechanism}, 'tp_btf/sys_enter+sys_exit', 'auto: the status says sys_exit');
}
ok($st->{syscall}{state} eq 'available' && $st->{network}{state} eq 'available'
	  && $n->{syscall} && $n->{network},
	"auto: both sets run and see calls end ($n->{syscall} file, $n->{network} socket calls)");

($st, $n, $line) = exits_trace('--syscall-exit', 'tracepoint');
is($line, 'the sys_exit tracepoint (--syscall-exit tracepoint)', 'tracepoint: never tries fexit');
ok($st->{syscall}{mechanism} eq 'tp_btf/sys_enter+sys_exit' && $n->{syscall} && $n->{network},
	'tracepoint: sys_exit, and calls are seen to end');

($st, $n, $line) = exits_trace('--syscall-exit', 'fexit');
if ($fexit_here)
{
	ok($st->{syscall}{state} eq 'available' && $n->{syscall} && $n->{network},
		'fexit: runs, and calls are seen to end');
}
else
{
	like($st->{$_}{state} . ': ' . $st->{$_}{reason},
		qr/^unavailable: --syscall-exit fexit: fexit unavailable: fexit program on __\w+_sys_read: (load|attach): \S/,
		"fexit: $_ unavailable here, and why") for qw(syscall network);
	ok(!$n->{syscall} && !$n->{network}, 'fexit: nothing runs in its place');
}

($st, $n, $line, $err) = exits_trace('--assume-fexit');
if (!$fexit_here)
{
	like($err, qr/warn: system-call sets: the fexit programs: load failed: \S/,
		'a failed load of the fexit programs is reported');
	ok($line =~ /^the sys_exit tracepoint \(the fexit programs: load failed: /
		  && $st->{syscall}{state} eq 'available' && $n->{syscall} && $n->{network},
		"and the object is loaded again with sys_exit, which runs ($line)");
}
else
{
	is($line, 'fexit programs on the timed calls', '--assume-fexit: fexit works here anyway');
}

# --- text stats and histograms ----------------------------------------------------------------
($h, $out, $err) = start_trace(qr/queryid-tagging/, '--probes', 'syscall,block,sched', '--pgdata',
	$node->data_dir, '--stats', '--histogram', '--interval', '1s', '--duration', '3500ms');
$node->safe_psql('postgres', "CREATE TABLE w AS SELECT g FROM generate_series(1, 20000) g; CHECKPOINT");
$h->finish;
my $stats = () = $$out =~ /^\S+ syscall\s+stats\s+pid=\d+ type="[^"]+" queryid=-?\d+ layer=syscall op=\S+ .*calls=\d+/mg;
cmp_ok($stats, '>', 3, "text: periodic stats lines ($stats)");
like($$out, qr/^\s+usecs : count\s+\|distribution\s+\|\n(\s+\d+ -> \d+\s+: \d+\s+\|[* ]{40}\|\n)*\s+\d+ -> \d+\s+: [1-9]\d*\s+\|\*+ *\|/m,
	'text: ASCII log2 histogram');
# a run-queue histogram exists only where some process waited in a run
# queue (often none does, on a quiet host, in 3.5 s)
if ($$out =~ / runq_count=[1-9]/)
{
	like($$out, qr/^\S+ sched\s+histogram\s+pid=\d+ .* metric=runq unit=usecs label=runq total=\d+$/m,
		'text: a run-queue histogram is labelled by its metric alone');
}
unlike($$out, qr/ histogram .* label="[^"]*( - |dev 0:0)/,
	'text: no histogram label names an op or a device it is not keyed by');
like($$out, qr/^\S+ syscall\s+histogram\s+pid=\d+ .* metric=syscall unit=usecs label="syscall \w+ dev \d+:\d+" total=\d+$/m,
	'text: a file call\'s histogram by metric, call and device');
unlike($$out, qr/ pread64 .*latency_us=/, 'text --stats: no per-event stream');
my @heads = $$out =~ /^\S+ trace\s+summary\s+pid=0 type="none" queryid=0 seq=(\d+) final=(\w+) elapsed_s=[\d.]+$/mg;
my @seqs = @heads[ grep { $_ % 2 == 0 } 0 .. $#heads ];
my @finals = @heads[ grep { $_ % 2 == 1 } 0 .. $#heads ];
is(join(',', @seqs), join(',', 1 .. scalar(@seqs)), 'text: summaries numbered 1.. (' . scalar(@seqs) . ')');
cmp_ok(scalar(@seqs), '>=', 3, 'text: a summary every --interval');
is(join(',', @finals), join(',', ('false') x (@finals - 1), 'true'), 'text: only the last is final');
# an end on an --interval tick prints the final summary in place of that
# tick's (2 s at 1 s: two summaries, not three)
my ($h2, $out2) = start_trace(qr/queryid-tagging/, '--probes', 'sched', '--pgdata',
	$node->data_dir, '--stats', '--interval', '1s', '--duration', '2s');
$h2->finish;
my @heads2 = $$out2 =~ /^\S+ trace\s+summary\s+.* seq=(\d+) final=(\w+) /mg;
is(join(',', @heads2), '1,false,2,true',
	'--duration 2s --interval 1s: one periodic summary, then the final one');
# in each block the syscall stats come by pid, the most time first
my ($unordered, $rows) = (0, 0);
for my $block (split /^\S+ trace\s+summary .*\n/m, $$out)
{
	my @r = map { [ /pid=(\d+)/, /total_ms=([\d.]+)/ ] } grep { /^\S+ syscall\s+stats / } split /\n/, $block;
	for my $i (1 .. $#r)
	{
		$rows++;
		$unordered++, diag("out of order: pid $r[$i-1][0] $r[$i-1][1] ms, then $r[$i][0] $r[$i][1] ms")
		  if $r[$i][0] < $r[ $i - 1 ][0]
		  || ($r[$i][0] == $r[ $i - 1 ][0] && $r[$i][1] > $r[ $i - 1 ][1]);
	}
}
cmp_ok($rows, '>', 3, "text: consecutive stats rows compared ($rows)");
is($unordered, 0, 'text: stats rows by pid, then the most time first');

# --- a stream that cannot keep up loses events, and says how many ----------------------------
# Nothing reads the trace's output while the workload runs: its pipe fills,
# then its 4 kB ring buffer.  The final summary counts the lost events,
# stderr says so, and the summary's stats still count every call.
($h, $out, $err) = start_trace(qr/"queryid-tagging"/, '--probes', 'syscall', '--pgdata',
	$node->data_dir, '--format', 'json', '--buffer', '4k', '--duration', '4s');
$node->safe_psql('postgres', 'SELECT count(*) FROM r') for 1 .. 30;
$h->finish;
my @blocked = map { JSON::PP::decode_json($_) } grep { /^\{/ } split /\n/, $$out;
my ($lost_sum) = grep { $_->{event} eq 'summary' } @blocked;
my $lost = $lost_sum ? $lost_sum->{lost_events} // -1 : -1;
cmp_ok($lost, '>', 0, "a stream that could not keep up: the final summary counts lost events ($lost)");
like($$err, qr/warn: \d+ events lost \(\d+ in all\): the stream's 4 kB ring buffer was full/,
	'... and stderr says so');
my ($streamed, $counted) = (0, 0);
for my $r (grep { $_->{set} eq 'syscall' } @blocked)
{
	$streamed++ if $r->{event} !~ /^(status|stats)$/;
	$counted += $r->{calls} if $r->{event} eq 'stats';
}
cmp_ok($counted, '>=', $streamed + $lost,
	"the summary counts every call ($counted), streamed ($streamed) or lost");

# --- the backend type of connections that exited before the summary ------------------------
# Their records are printed after they are gone (the final summary): the
# type comes from the title each had as it exited, which the foundation's
# exit program keeps for `trace`.  Kernels that report an exit after
# releasing the process's memory (older ones) leave it unknown, and the
# trace says which at start (--log-level info).
($h, $out, $err) = start_trace(qr/queryid-tagging/, '--probes', 'syscall', '--pgdata',
	$node->data_dir, '--stats', '--duration', '2500ms', '--log-level', 'info');
my @short = map { $node->safe_psql('postgres', 'SELECT pg_backend_pid() FROM r LIMIT 1') } 1 .. 3;
$h->finish;
my %short_types;
for my $p (@short)
{
	$short_types{$1}++ for $$out =~ /^\S+ syscall\s+stats\s+pid=$p type="([^"]*)"/mg;
}
my ($keeps) = $$err =~ /info: backend types of exited processes: (from their titles at exit|unknown)/;
ok(defined $keeps, 'the trace says whether exited processes keep their type') or diag($$err);
is(join(',', sort keys %short_types), ($keeps // '') eq 'unknown' ? 'unknown' : 'client backend',
	'text --stats: connections gone before the summary keep their type ('
	  . join(', ', map { "$_ x$short_types{$_}" } sort keys %short_types) . ')');

# --- a cluster that restarts during the trace is followed ---------------------------------
# With --pgdata the cluster is whatever postmaster runs in it: the old one
# exits, the trace waits, finds the new one within a second, and traces
# its backends until --duration.
($h, $out, $err) = start_trace(qr/queryid-tagging/, '--probes', 'syscall', '--pgdata',
	$node->data_dir, '--stats', '--duration', '10s', '--log-level', 'info');
my $old_pm = $node->{_pid};
$node->restart;
my $new_pm = $node->{_pid};
my $found = wait_until(sub { $h->pump_nb; $$err =~ /postmaster $new_pm started: tracing it/ }, 5);
ok(defined $found, "restart: the new postmaster $new_pm is traced") or diag($$err);
my @after = map { $node->safe_psql('postgres', 'SELECT pg_backend_pid()') } 1 .. 3;
$h->finish;
like($$err, qr/postmaster $old_pm exited/, 'restart: the old postmaster is let go, and said so');
unlike($$err, qr/ending the trace/, 'restart: the trace did not end with the old postmaster');
my @seen = grep { my $p = $_; $$out =~ /^\S+ syscall\s+stats\s+pid=$p /m } @after;
is(scalar(@seen), 3, 'restart: the new postmaster\'s connections have stats records ('
	  . join(',', @seen) . ' of ' . join(',', @after) . ')');

# --- bad input ------------------------------------------------------------------------------
my ($rc, $o, $e) = run_helper('trace', '--probes', 'disk');
is($rc, 2, 'unknown probe set: usage error');
like($e, qr/unknown probe set "disk"; known: all, syscall, vfs, block, sched, memory, network/,
	'unknown probe set: lists the known ones');
($rc, $o, $e) = run_helper('trace', '--probes', 'all', '--interval', 'soon');
is($rc, 2, 'bad --interval: usage error');
# strtod's and strtol's leniencies are refused: blanks, hexadecimal,
# exponents, signs
for my $bad ([ '--interval', ' 2s' ], [ '--interval', '0x10' ], [ '--duration', '1e3' ],
	[ '--duration', '-1s' ], [ '--duration', '2.s' ], [ '--pid', '+12' ], [ '--pid', ' 12' ])
{
	($rc, $o, $e) = run_helper('trace', '--probes', 'all', @$bad);
	ok($rc == 2 && $e =~ /\Q$bad->[0]\E/, "$bad->[0] '$bad->[1]': usage error naming it");
}
($rc, $o, $e) = run_helper('trace', '--probes', 'all', '--interval', '10ms');
ok($rc == 2 && $e =~ /--interval 10ms: .*\(100ms at least\)/, '--interval under 100 ms: usage error');
# options that would do nothing are refused, not ignored
($rc, $o, $e) = run_helper('trace', '--probes', 'all', '--interval', '1s');
ok($rc == 2 && $e =~ /--interval needs --stats or --histogram/, '--interval of a stream: usage error');
($rc, $o, $e) = run_helper('trace', '--probes', 'all', '--histogram', '--buffer', '8m');
ok($rc == 2 && $e =~ /--buffer sizes the event stream/, '--buffer with summaries only: usage error');
($rc, $o, $e) = run_helper('trace', '--probes', 'all', '--buffer', '1k');
ok($rc == 2 && $e =~ /"1k": use a size from 4k to 1g/, '--buffer under 4k: usage error');
my $not_pg = PostgreSQL::Test::Utils::tempdir();
($rc, $o, $e) = run_helper('trace', '--probes', 'all', '--pgdata', $not_pg);
ok($rc == 1 && $e =~ /is not a PostgreSQL data directory \(no PG_VERSION\)/,
	'--pgdata of a directory that is no cluster: exit 1, says so');
open(my $pv, '>', "$not_pg/PG_VERSION") or die "PG_VERSION: $!";
print $pv "15\n";
close($pv);
($rc, $o, $e) = run_helper('trace', '--probes', 'all', '--pgdata', $not_pg);
ok($rc == 1 && $e =~ /no postmaster is running in /, '--pgdata of a cluster that is not running: exit 1, says so');
($rc, $o, $e) = run_helper('inspect', '--pgdata', $not_pg);
ok($rc == 1 && $e =~ /no postmaster is running in /, 'inspect --pgdata of it: the same');
($rc, $o, $e) = run_helper('trace', '--probes', 'all', '-xh');
ok($rc == 2 && $e =~ /unknown option -x\b/, 'an unknown short option is named as written');
($rc, $o, $e) = run_helper('trace', '--probes', 'all', '--p', '1');
ok($rc == 2 && $e =~ /option --p is ambiguous: --probes, --pid, --pgdata/,
	'an ambiguous prefix: usage error naming the options it could be');
($rc, $o, $e) = run_helper('trace', '--probes', 'all', '--stats=1');
ok($rc == 2 && $e =~ /option --stats takes no value/, 'a value for a flag: usage error saying so');
($rc, $o, $e) = run_helper('trace', '--probes', 'sched , memory', '--pid', '1', '--duration', '1s');
ok($rc == 1 && $e !~ /unknown probe set/, 'blanks around set names are allowed');
($rc, $o, $e) = run_helper('trace', '--probes', 'all', '--pid', '1', '--duration', '1s');
is($rc, 1, '--pid of a non-PostgreSQL process: exit 1');
like($e, qr/neither a PostgreSQL postmaster \(process 1 \(.*\) is not a postgres process\) nor a child of one/,
	'... with the reasons');
($rc, $o, $e) = run_helper('trace', '--probes', 'all', '--syscall-exit', 'kprobe');
ok($rc == 2 && $e =~ /--syscall-exit: kprobe: use auto, fexit or tracepoint/,
	'bad --syscall-exit: usage error naming the choices');
($rc, $o, $e) = run_helper('trace', '--probes', 'help');
like($o, qr/^  network\s+socket send/m, '--probes help lists the sets');

($rc, $o, $e) = run_helper('trace', '--probes', 'all', '--keep-exited', '1h');
ok($rc == 2 && $e =~ /--keep-exited: "1h" is not a number of seconds from 0 to 86400/,
	'bad --keep-exited: usage error with the range');

check_exited_rows_fold($node);
check_busy_stream_ends($node);
check_blocked_output_ends($node);
check_wal_elsewhere();
check_block_without_new_tracepoints($node);
check_sched_storage_outside_switch($node);

$node->stop;
done_testing();

# pgbench running SELECT 1 on two clients for $secs seconds, in the
# background; returns its harness.
sub select1_load
{
	my ($node, $secs) = @_;
	my $script = PostgreSQL::Test::Utils::tempdir() . '/select1.sql';
	open(my $fh, '>', $script) or die "$script: $!";
	print $fh "SELECT 1;\n";
	close($fh);
	return IPC::Run::start([ 'pgbench', '-n', '-f', $script, '-c', '2', '-T', $secs,
			'-h', $node->host, '-p', $node->port, 'postgres' ],
		'<', \undef, '>', \my $lout, '2>', \my $lerr);
}

# A stream busier than its reader: a pgbench loop of SELECT 1 feeds it, a
# reader that naps every few lines drains it.  The ring buffer fills, which
# the trace reports within its run, and --duration still ends it on time
# with its final summary: the loop drains in bounded batches (before, it
# stayed inside libbpf's consume for as long as records kept coming, here
# until pgbench stopped), and what is still queued at the end is counted and
# reported, not printed.
sub check_busy_stream_ends
{
	my ($node) = @_;
	my $load = select1_load($node, 40);
	sleep(1);
	my $slow = 'my $n = 0; my @s; while (<STDIN>) { $n++; push @s, $_ if /summary/;'
	  . ' select(undef, undef, undef, 0.00002) if $n % 4 == 0 } print "lines=$n\n", @s';
	my $t0 = time();
	my ($out, $err) = run_helper_into([ 'perl', '-e', $slow ], 'trace', '--probes',
		'syscall,network,sched', '--pgdata', $node->data_dir, '--duration', '3s');
	my $took = time() - $t0;
	$load->kill_kill;
	like($err, qr/\d+ events lost \(\d+ in all\)/,
		'a stream busier than its reader: the loss is reported while it runs');
	cmp_ok($took, '<', 8, "--duration 3s still ends it: ${took}s (pgbench went on for 40 s)");
	like($err, qr/\d+ events still queued at the end were not printed/,
		'... and says how many events it left queued unprinted');
	like($out, qr/^\S+ trace\s+summary .* final=true /m, '... with its final summary');
}

# folded_total(OUTPUT, SET, FIELD)
#	The largest sum of FIELD over SET's folded rows (pid null) in any
#	summary of a JSON trace's OUTPUT so far (summaries are cumulative; a
#	line still being written is left out).
sub folded_total
{
	my ($out, $set, $field) = @_;
	my ($best, $cur) = (0, 0);
	for my $line (split /\n/, $out =~ s/[^\n]*\z//r)
	{
		if ($line =~ /"event":"summary"/)
		{
			($best, $cur) = ($cur > $best ? $cur : $best, 0);
			next;
		}
		$cur += $1
		  if $line =~ /"event":"stats"/
		  && $line =~ /"set":"\Q$set\E"/
		  && $line =~ /"pid":null/
		  && $line =~ /"\Q$field\E":(\d+)/;
	}
	return $cur > $best ? $cur : $best;
}

# Connection churn: pgbench opens a connection per transaction, each
# fetching a 100,000-byte value.  With --keep-exited 0 each backend's rows
# fold, about a second after it exits, into the cluster's row of exited
# client backends (pid null): summaries list the live processes, not every
# connection of the run (before, each kept its own rows, and under heavier
# churn the in-kernel tables evicted the oldest, uncounted).  Nothing is
# lost or counted twice by the folding: the bytes sent add up to the
# payload.
sub check_exited_rows_fold
{
	my ($node) = @_;
	my ($conns, $payload) = (300, 100_000);
	my $script = PostgreSQL::Test::Utils::tempdir() . '/payload.sql';
	open(my $fh, '>', $script) or die "$script: $!";
	print $fh "SELECT repeat('x', $payload);\n";
	close($fh);
	my ($h, $out, $err) = start_trace(qr/"queryid-tagging"/, '--probes', 'network,pg-query', '--pgdata',
		$node->data_dir, '--stats', '--interval', '1s', '--format', 'json',
		'--keep-exited', '0', '--duration', '60s', '--log-level', 'info');
	my ($t0, $lout, $lerr) = (time(), '', '');
	IPC::Run::run([ 'pgbench', '-n', '-C', '-f', $script, '-c', '2', '-t', $conns / 2,
			'-h', $node->host, '-p', $node->port, 'postgres' ],
		'<', \undef, '>', \$lout, '2>', \$lerr) or die "pgbench: $lerr";
	note(sprintf('pgbench -C: %d connections in %.1f s', $conns, time() - $t0));
	# a row folds at the first copy (each second) that finds its pid gone:
	# wait for a summary whose folded rows hold the connections' work
	my $folded = wait_until(
		sub {
			$h->pump_nb;
			folded_total($$out, 'network', 'send_bytes') >= 0.95 * $conns * $payload
			  && folded_total($$out, 'pg-query', 'calls') >= 0.95 * $conns;
		},
		15);
	note(defined $folded ? "rows folded within ${folded} s" : 'rows not folded within 15 s');
	end_trace($h);
	my @recs = map { JSON::PP::decode_json($_) } grep { /^\{/ } split /\n/, $$out;
	# the final summary's records: those after its `summary` record
	my ($last) = grep { $recs[$_]{event} eq 'summary' && $recs[$_]{final} } 0 .. $#recs;
	my @final = defined $last ? @recs[ $last + 1 .. $#recs ] : ();
	# a connection of a few milliseconds is named by its title at exit,
	# which older kernels do not keep (the trace says which at start)
	my $type = $$err =~ /backend types of exited processes: unknown/ ? 'unknown' : 'client backend';
	my @backends = grep { $_->{event} eq 'stats' && $_->{set} eq 'network' && $_->{backend_type} eq $type }
	  @final;
	my @folded = grep { !defined $_->{pid} } @backends;
	my %pids = map { $_->{pid} => 1 } grep { defined $_->{pid} } @backends;
	ok(@folded >= 1, "churn: the final summary has a folded row of exited backends ($type: "
		  . scalar(@folded) . ')');
	is(join(',', map { $_->{postmaster} } @folded), join(',', ($node->{_pid}) x @folded),
		'churn: ... which names their postmaster');
	cmp_ok(scalar(keys %pids), '<=', 5,
		"churn: ... and few rows under a pid (@{[ scalar(keys %pids) ]}), not one per connection ($conns)");
	my ($sent, $folded_sent) = (0, 0);
	$sent += $_->{send_bytes} for @backends;
	$folded_sent += $_->{send_bytes} for @folded;
	my $truth = $conns * $payload;
	ok($sent >= $truth && $sent <= 1.05 * $truth,
		"churn: client backends sent $sent bytes, the payload the client received is $truth (+5%)");
	cmp_ok($folded_sent, '>=', 0.95 * $truth, "churn: the folded row holds them ($folded_sent)");
	like($$out, qr/"pid":null,"backend_type":"\Q$type\E"/, 'churn: a folded row prints pid null');
	# the engine set's rows fold alike, keeping the backend type (before,
	# their folded rows were of type unknown): every connection's statement
	my @stmts = grep { $_->{event} eq 'stats' && $_->{set} eq 'pg-query' && $_->{probe} eq 'query' }
	  @final;
	my ($calls, $folded_calls) = (0, 0);
	$calls += $_->{calls} for @stmts;
	$folded_calls += $_->{calls} for grep { !defined $_->{pid} && $_->{backend_type} eq $type } @stmts;
	ok($calls >= $conns && $calls <= $conns + 5 && $folded_calls >= 0.95 * $conns,
		"churn: pg-query counted $calls statements ($conns connections), $folded_calls of them "
		  . "in folded rows of type $type");
}

# Output nobody reads (a pager left open, a stalled consumer): the trace
# blocks in a write, where no signal it reads from a descriptor can reach
# it.  A second SIGTERM (or Ctrl-C) ends it at once (before, it stayed
# blocked for good; a first one alone ends it 10 s later).
sub check_blocked_output_ends
{
	my ($node) = @_;
	my $load = select1_load($node, 30);
	my $dir = $node->data_dir;
	# its output goes into a pipe this test never reads
	my $h = IPC::Run::start([ PgTracerTest::ctl(), 'run', 'trace', '--probes', 'syscall',
			'--pgdata', $dir ], '<', \undef, '>', \my $tout, '2>', \my $terr);
	my $pid;
	# the helper itself, once sudo and helper-ctl have exec'd it
	wait_until(sub { defined($pid = PgTracerTest::trace_pid($h)) }, 10);
	ok(defined $pid, 'a trace writing into a pipe nobody reads') or return;
	sleep(3);				# far more than a pipe holds
	signal_helper($pid, 'TERM');
	sleep(0.3);
	# else the output was not blocked, and the rest tests nothing
	ok(-d "/proc/$pid", 'the first SIGTERM leaves it blocked in its write');
	eval { signal_helper($pid, 'TERM') };	# gone meanwhile: fine
	my $gone = wait_until(sub { !-d "/proc/$pid" }, 5);
	ok(defined $gone, 'a second SIGTERM ends it though its output blocks');
	eval { signal_helper($pid, 'KILL') } unless $gone;
	$load->kill_kill;
	$h->kill_kill;
}

# A WAL directory given with initdb -X: pg_wal is a symbolic link, and the
# kernel sees the target's directory.  The segments are still WAL, by their
# names: the WAL the cluster wrote during the trace (file_class wal, write
# calls of the final summary) is at least what pg_stat_wal says it
# generated (a WAL page is written again as it fills: more, never less).
sub check_wal_elsewhere
{
	my $walx = PostgreSQL::Test::Cluster->new('walx');
	$walx->init(extra => [ '-X', PostgreSQL::Test::Utils::tempdir() . '/wal_elsewhere' ]);
	$walx->start;
	ok(-l $walx->data_dir . '/pg_wal', 'initdb -X: pg_wal is a symbolic link');
	$walx->safe_psql('postgres', 'CREATE TABLE wx (a int, b text)');
	my $wal_bytes = 'SELECT wal_bytes FROM pg_stat_wal';
	my ($h, $out) = start_trace(qr/"queryid-tagging"/, '--probes', 'syscall', '--pgdata',
		$walx->data_dir, '--stats', '--format', 'json', '--duration', '60s');
	my $b0 = $walx->safe_psql('postgres', $wal_bytes);
	$walx->safe_psql('postgres', "INSERT INTO wx SELECT g, md5(g::text) FROM generate_series(1, 20000) g");
	my $generated = $walx->safe_psql('postgres', $wal_bytes) - $b0;
	end_trace($h);
	my ($written, $in_final) = (0, 0);
	for my $r (map { eval { JSON::PP::decode_json($_) } // () } split /\n/, $$out)
	{
		$in_final = 1 if $r->{event} eq 'summary' && $r->{final};
		$written += $r->{bytes} // 0
		  if $in_final && $r->{event} eq 'stats' && ($r->{file_class} // '') eq 'wal'
		  && ($r->{op} // '') =~ /write/;
	}
	cmp_ok($written, '>=', $generated,
		"WAL through the link is WAL: $written bytes written, $generated generated");
	$walx->stop;
}

# The block set where the kernel lacks its two younger tracepoints (before
# 6.5: no block_io_start), hidden here with --hide-tracepoint: it loads
# without them, says so, and takes the submitter at issue.  A cold scan by
# one backend (no parallel workers, see t/020) is then still read by that
# backend: its block read bytes within 10% of /proc/<pid>/io read_bytes.
sub check_block_without_new_tracepoints
{
	my ($node) = @_;
	my @ctl = split ' ', $ENV{PG_TRACER_CTL};
	$node->safe_psql('postgres',
		"CREATE TABLE cold AS SELECT g, repeat(md5(g::text), 4) AS pad
		   FROM generate_series(1, 200000) g; CHECKPOINT");
	my $s = $node->background_psql('postgres');
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_safe('SET max_parallel_workers_per_gather = 0');
	IPC::Run::run([ @ctl, 'drop-caches' ]) or die 'drop-caches failed';
	my ($h, $out) = start_trace(qr/"queryid-tagging"/, '--probes', 'block', '--pid', $pid,
		'--hide-tracepoint', 'block_io_start', '--hide-tracepoint', 'block_rq_merge',
		'--stats', '--format', 'json', '--duration', '60s');
	my $io0 = proc_field("/proc/$pid/io", qr/^read_bytes: (\d+)/m);
	$s->query_safe('SELECT count(*) FROM cold');
	my $truth = proc_field("/proc/$pid/io", qr/^read_bytes: (\d+)/m) - $io0;
	end_trace($h);
	$s->quit;
	my ($status, $read, $in_final) = ({}, 0, 0);
	for my $r (map { eval { JSON::PP::decode_json($_) } // () } split /\n/, $$out)
	{
		$status = $r if $r->{set} eq 'block' && $r->{event} eq 'status';
		$in_final = 1 if $r->{event} eq 'summary' && $r->{final};
		$read += $r->{bytes} // 0
		  if $in_final && $r->{event} eq 'stats' && $r->{pid} == $pid
		  && ($r->{layer} // '') eq 'block' && ($r->{op} // '') eq 'read';
	}
	ok(($status->{state} // '') eq 'available'
		  && ($status->{reason} // '') =~ /^2 programs attached; .*without block_io_start \(before 6\.5\) the submitter is the issuer.*; without block_rq_merge$/,
		'block without block_io_start and block_rq_merge: available, and says what it runs without: '
		  . ($status->{reason} // 'no status'));
	cmp_ok($truth, '>', 10_000_000, "ground truth: the cold scan read $truth bytes from disk");
	ok(abs($read - $truth) <= 0.10 * $truth,
		"... and its backend's block reads ($read bytes) are within 10% of it");
	my ($rc, $o, $e) = run_helper('trace', '--probes', 'block', '--hide-tracepoint', 'sched_switch');
	ok($rc == 2 && $e =~ /--hide-tracepoint: sched_switch is not an optional tracepoint \(use block_io_start or block_rq_merge\)/,
		'--hide-tracepoint of a tracepoint no set can do without: usage error');
}

# The sched set as on a kernel before 6.4, whose task storage must not be
# allocated under the scheduler's lock (--no-storage-in-switch): a backend
# that ran before the trace gets its storage when the trace takes it in
# from /proc (the task iterator), one connected during it at fork.  Both
# are counted from then on: each one's pg_sleep is off-CPU time of its own.
sub check_sched_storage_outside_switch
{
	my ($node) = @_;
	my $s = $node->background_psql('postgres');
	my $old = $s->query_safe('SELECT pg_backend_pid()');
	my ($h, $out) = start_trace(qr/"queryid-tagging"/, '--probes', 'sched', '--pgdata',
		$node->data_dir, '--no-storage-in-switch', '--stats', '--format', 'json',
		'--duration', '60s');
	$s->query_safe('SELECT pg_sleep(1.0)');
	my $new = $node->safe_psql('postgres', 'SELECT pg_backend_pid() FROM pg_sleep(0.6)');
	$s->query_safe('SELECT 1');	# the sleep's period closes at the next switch-out
	end_trace($h);
	$s->quit;
	my ($status, %off, $in_final) = ({});
	for my $r (map { eval { JSON::PP::decode_json($_) } // () } split /\n/, $$out)
	{
		$status = $r if $r->{set} eq 'sched' && $r->{event} eq 'status';
		$in_final = 1 if $r->{event} eq 'summary' && $r->{final};
		$off{ $r->{pid} } += $r->{offcpu_ns} // 0 if $in_final && $r->{event} eq 'stats';
	}
	like($status->{reason} // '', qr/; before 6\.4: task storage made at fork and per copy, not in the switch$/,
		'sched without storage in the switch: the status says so');
	my ($o, $n) = map { ($off{$_} // 0) / 1e9 } ($old, $new);
	ok($o >= 1.0 && $o < 4.5, "a backend from before the trace: ${o} s off the CPU, its pg_sleep(1.0) included");
	ok($n >= 0.6 && $n < 4.5, "a backend forked during it: ${n} s off the CPU, its pg_sleep(0.6) included");
}
