# 033_engine_fallback.pl — the engine probes on a server binary without
# USDT notes: a copy of the installation's bin directory whose postgres has
# its .note.stapsdt section removed (objcopy), share/ and lib/ reached
# through symlinks at the same relative places, so initdb, pg_ctl and the
# server find them as usual.  Inspection and pg_tracer_probes must report
# the fallback (uprobes on exported functions) or "unavailable" with the
# reason, and the fallback must produce the same ground truths as the USDT
# path in t/030: lock wait duration, pg_stat_wal records, checkpoint buffers;
# and a timed checkpoint skipped on an idle server is not recorded.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PgTracerEngine;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;

plan skip_all => 'root helper not reachable (run through scripts/test.sh)'
  unless helper_available();
plan skip_all => 'objcopy not installed' if system('objcopy --version >/dev/null 2>&1') != 0;

# --- the copy: same layout relative to the common prefix of bin, share, lib
sub pgc { my $v = `pg_config --$_[0]`; chomp $v; return $v; }
my ($bindir, $sharedir, $libdir) = (pgc('bindir'), pgc('sharedir'), pgc('pkglibdir'));
my $prefix = $bindir;
$prefix =~ s{/[^/]*$}{} while index("$sharedir/", "$prefix/") != 0 || index("$libdir/", "$prefix/") != 0;
my $root = PostgreSQL::Test::Utils::tempdir();
my ($rbin, $rshare, $rlib) = map { substr($_, length($prefix)) } ($bindir, $sharedir, $libdir);
system('mkdir', '-p', map { my $d = "$root$_"; $d =~ s{/[^/]*$}{}; $d } ($rbin, $rshare, $rlib)) == 0
  or die 'mkdir';
system('cp', '-a', $bindir, "$root$rbin") == 0 or die 'cp';
symlink($sharedir, "$root$rshare") or die "symlink: $!";
symlink($libdir, "$root$rlib") or die "symlink: $!";
my $postgres = "$root$rbin/postgres";
system('objcopy', '--remove-section', '.note.stapsdt', $postgres) == 0 or die 'objcopy';
my $orig_notes = `readelf -n '$bindir/postgres' | grep -c NT_STAPSDT`;
my $copy_notes = `readelf -n '$postgres' | grep -c NT_STAPSDT`;
chomp($orig_notes, $copy_notes);
cmp_ok($orig_notes, '>', 50, "the installed server has $orig_notes SDT notes");
is($copy_notes, '0', 'the copy has none');

(my $install = "$root$rbin") =~ s{/bin$}{};
my $rt = PostgreSQL::Test::Utils::tempdir_short();
my $node = PostgreSQL::Test::Cluster->new('nousdt', install_path => $install);
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_tracer'\n"
	  . "pg_tracer.runtime_dir = '$rt'\ncompute_query_id = on\nautovacuum = off\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');

# --- inspect: no notes, the fallback per set, or why none
my ($rc, $out, $err) = run_helper('inspect', '--pgdata', $node->data_dir, '--format', 'json');
is($rc, 0, 'inspect exits 0') or diag($err);
my $j = decode_json($out);
is($j->{binary}, "/proc/$node->{_pid}/root$postgres", 'inspects the stripped copy the server runs');
is($j->{usdt_notes}, 0, 'inspect: no USDT notes');
my %ps = map { $_->{name} => $_ } @{ $j->{probe_sets} };
is($ps{$_}{mechanism}, 'uprobe', "inspect: $_ falls back to uprobes")
  for qw(pg-locks pg-wal pg-checkpoint pg-buffer pg-lock-hold pg-lwlock-hold);
is($ps{$_}{mechanism}, 'none', "inspect: $_ has no mechanism")
  for qw(pg-query pg-lwlock pg-usdt);
like($ps{'pg-query'}{reason}, qr/no USDT postgresql:query__start \(built without --enable-dtrace\).*exec_simple_query not resolvable/,
	'pg-query: no note, exec_simple_query static');
like($ps{'pg-lwlock'}{reason}, qr/no USDT postgresql:lwlock__wait__start.*no function fallback/,
	'pg-lwlock: no note, no function');
my %pt = map { ("$_->{set}/$_->{point}" => $_->{mechanism}) } @{ $j->{probe_points} };
is($pt{'pg-locks/lock__wait__start'}, 'uprobe', 'lock waits: uprobe on ProcSleep');
is($pt{'pg-locks/lock__wait__done'}, 'uretprobe', 'and its return');
is($pt{'pg-wal/wal__insert'}, 'uprobe', 'WAL inserts: uprobe on XLogInsert');
is($pt{'pg-checkpoint/checkpoint__done'}, 'uretprobe', 'checkpoint end: return of CreateCheckPoint');

# --- the daemon: the same choice in pg_tracer_probes
my $helper = start_helper($node, $rt, '--engine-probes',
	'pg-query,pg-locks,pg-lwlock,pg-wal,pg-checkpoint,pg-lock-hold,pg-lwlock-hold,pg-buffer');
my %st;
ok(defined wait_until(sub {
	%st = map { my @f = split /\|/, $_, 4; ($f[0] => [ @f[1 .. 3] ]) }
	  split /\n/, $node->safe_psql('postgres',
		"SELECT probe_set, state, mechanism, reason FROM pg_tracer_probes WHERE probe_set LIKE 'pg-%'");
	($st{'pg-locks'}[0] // '') eq 'available'
}, 20), 'engine sets attach to the stripped server');
is("$st{'pg-locks'}[0] $st{'pg-locks'}[1]", 'available uprobe', 'pg_tracer_probes: pg-locks by uprobe');
is("$st{'pg-wal'}[0] $st{'pg-wal'}[1]", 'available uprobe', 'pg-wal by uprobe');
is("$st{'pg-lock-hold'}[0] $st{'pg-lock-hold'}[1]", 'available uprobe', 'pg-lock-hold by uprobe');
is("$st{'pg-lwlock-hold'}[0] $st{'pg-lwlock-hold'}[1]", 'available uprobe',
	'pg-lwlock-hold by uprobe (LWLockAcquire*, LWLockRelease)');
like($st{'pg-lwlock-hold'}[2], qr/paired by lock address/, 'paired by lock address');
is("$st{'pg-checkpoint'}[0] $st{'pg-checkpoint'}[1]", 'degraded uprobe',
	'pg-checkpoint by uprobe, degraded (no BufferSync / sync-phase points)');
is("$st{'pg-query'}[0] $st{'pg-query'}[1]", 'unavailable none', 'pg-query unavailable');
like($st{'pg-query'}[2], qr/exec_simple_query not resolvable/, 'with the reason');
is($st{'pg-lwlock'}[0], 'unavailable', 'pg-lwlock unavailable');

# --- the same ground truths as the USDT path (t/030)
check_lock_wait($node);		# through ProcSleep
check_lock_wait_error($node);	# ProcSleep never returns: ended at the abort
check_wal_inserts($node);	# through XLogInsert; XLogFlush as with USDT
check_checkpoint($node);	# through CreateCheckPoint, buffers from CheckpointStats
check_skipped_checkpoint($node);

# buffer reads through ReadBufferExtended: counted, but hit or miss is not
# known there, so the hit ratio is NULL (it read 0: "every read missed")
$node->safe_psql('postgres', 'SELECT count(*) FROM pg_class');
my $buf = '';
wait_until(sub {
	$buf = $node->safe_psql('postgres',
		"SELECT sum(reads) > 0, count(hit_ratio) FROM pg_tracer_engine_buffers");
	$buf =~ /^t\|/ }, 5);
is($buf, 't|0', 'pg-buffer by uprobe: reads counted, no hit ratio claimed');

# LWLock holds by lock address, tranches named by id from the layout file
my %tr = map { my @f = split /\|/; ($f[0] => $f[1]) } split /\n/, $node->safe_psql('postgres',
	"SELECT detail, sum(calls) FROM pg_tracer_engine_events WHERE probe = 'lwlock-hold' GROUP BY 1");
cmp_ok($tr{'WALInsert LW_EXCLUSIVE'} // 0, '>=', 7000,
	'WALInsert holds: one per WAL record at least (' . ($tr{'WALInsert LW_EXCLUSIVE'} // 0) . ')');
cmp_ok($tr{'BufferContent LW_EXCLUSIVE'} // 0, '>', 0, 'BufferContent exclusive holds');
my @bad = grep { !/^[A-Za-z][A-Za-z0-9_ ]* LW_(EXCLUSIVE|SHARED|WAIT_UNTIL_FREE)$/ || /^tranche / } keys %tr;
is("@bad", '', 'every row names its tranche and mode');

signal_helper($helper, 'TERM');
$node->stop;
done_testing();

# A timed checkpoint on an idle server is skipped: CreateCheckPoint returns
# at once, and the fallback (its return probe) must not record it as one
# (before, it did: a checkpoint of no buffers).  checkpoint_timeout at its
# 30 s minimum; the checkpoint location in pg_control shows whether the
# timed one really was skipped (a server that wrote WAL meanwhile has a
# real one, and then there is nothing to check).
sub check_skipped_checkpoint
{
	my ($node) = @_;
	# autovacuum would write WAL after the tables the checks above made
	$node->safe_psql('postgres',
		"ALTER SYSTEM SET checkpoint_timeout = '30s'; ALTER SYSTEM SET autovacuum = off");
	$node->reload;
	sleep(1);
	my $state = "SELECT (SELECT checkpoints_timed FROM pg_stat_bgwriter),
	                    (SELECT checkpoint_lsn FROM pg_control_checkpoint()),
	                    (SELECT count(*) FROM pg_tracer_checkpoints)";
	# reads prune the catalog pages the checks above left dead rows in,
	# which writes WAL: VACUUM first, and this query once, before the
	# checkpoint
	$node->safe_psql('postgres', 'VACUUM');
	my $n_before = (split /\|/, $node->safe_psql('postgres', $state))[2];
	$node->safe_psql('postgres', 'CHECKPOINT');
	my ($timed0, $lsn0, $n0);
	wait_until(sub {    # the forced checkpoint's record is published
		($timed0, $lsn0, $n0) = split /\|/, $node->safe_psql('postgres', $state);
		$n0 > $n_before }, 10);
	my ($timed1, $lsn1, $n1);
	wait_until(sub {
		($timed1, $lsn1, $n1) = split /\|/, $node->safe_psql('postgres', $state);
		$timed1 > $timed0 }, 45);
	sleep(1.5);    # a record would be published by now
	($timed1, $lsn1, $n1) = split /\|/, $node->safe_psql('postgres', $state);
	SKIP:
	{
		skip "no timed checkpoint came ($timed0 -> $timed1)", 1 if $timed1 <= $timed0;
		skip "the timed checkpoint was not skipped (WAL was written: $lsn0 -> $lsn1)", 1
		  if $lsn1 ne $lsn0;
		is($n1, $n0, "a timed checkpoint skipped on an idle server is no checkpoint record ($n0 -> $n1)");
	}
	$node->safe_psql('postgres', 'ALTER SYSTEM RESET checkpoint_timeout; ALTER SYSTEM RESET autovacuum');
	$node->reload;
}
