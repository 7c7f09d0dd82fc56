# PgTracerTest.pm — shared pieces of pg_tracer's TAP tests.
#
# Clusters run as the postgres user (PostgreSQL::Test::Cluster); the helper
# must run as root, so every helper action goes through the command in
# $PG_TRACER_CTL (scripts/test.sh sets it to a sudo-wrapped
# test/helper-ctl).  Each cluster gets its own short runtime directory, so
# tests never meet a host-wide helper or each other's segments.
package PgTracerTest;

use strict;
use warnings;
use Exporter 'import';
use IPC::Run ();
use Time::HiRes qw(usleep time);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(tracer_node start_helper start_host_helper stop_helper signal_helper run_helper start_trace
  end_trace harness_exit exit_code run_helper_into wait_until wait_publications wait_kernel_copy wait_exact_copy wait_mapped helper_available segment_path proc_field within wait_connected
  helper_read_calls query_identifier);

# scripts/test.sh always sets PG_TRACER_CTL; without it the helper tests skip.
my @CTL = split ' ', ($ENV{PG_TRACER_CTL} // 'false');

# The root-only helper command, as a list (for IPC::Run).
sub ctl { return @CTL; }

# Is the root helper reachable from this test at all?  Without
# PG_TRACER_CTL (a test file run by hand, outside scripts/test.sh) the
# helper tests skip.  With it, a helper that does not answer (a binary that
# cannot start, a sudoers rule that does not apply) stops the whole run:
# skipped files would read as passes.
sub helper_available
{
	return 0 unless defined $ENV{PG_TRACER_CTL};
	my ($rc, $out, $err) = run_helper('--version');
	BAIL_OUT("PG_TRACER_CTL is set but the helper does not answer --version "
		  . "(exit $rc): $err")
	  unless $rc == 0;
	return 1;
}

# A started cluster with pg_tracer preloaded and its own runtime dir.
# Returns ($node, $runtime_dir).
sub tracer_node
{
	my ($name, %opts) = @_;
	my $rt = PostgreSQL::Test::Utils::tempdir_short();
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	my $preload = $opts{preload} // 1;
	$node->append_conf('postgresql.conf',
		($preload ? "shared_preload_libraries = 'pg_tracer'\n" : '')
		  . "pg_tracer.runtime_dir = '$rt'\n"
		  . ($opts{conf} // ''));
	$node->start unless $opts{no_start};
	return ($node, $rt);
}

# Start `pg-tracer daemon --pgdata DATA --runtime-dir RT` as root; returns its pid.
sub start_helper
{
	my ($node, $rt, @extra) = @_;
	return launch_helper($rt, $node->basedir . '/helper.log', '--pgdata', $node->data_dir, @extra);
}

# Start `pg-tracer daemon --runtime-dir RT` as root without --pgdata: it
# serves every postmaster of the host, as its systemd unit runs it.
sub start_host_helper
{
	my ($rt, $log, @extra) = @_;
	return launch_helper($rt, $log, @extra);
}

my @launched;	# pids launch_helper started

sub launch_helper
{
	my ($rt, $log, @args) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ @CTL, 'start', $rt, $log, '--log-level', 'debug', @args ],
		'>', \$out, '2>', \$err)
	  or die "cannot start helper: $err";
	chomp $out;
	die "helper-ctl start printed no pid: $out $err" unless $out =~ /^\d+$/;
	note "helper started, pid $out, log $log";
	push @launched, $out;
	return $out;
}

# A helper started with --pgdata waits for its postmaster for ever: the
# ones a test leaves running (or a test that died) are stopped as it ends,
# so that they do not outlive it and weigh on the next.
END
{
	local $?;
	for my $pid (@launched)
	{
		next unless -e "/proc/$pid";
		eval { signal_helper($pid, 'CONT') };    # one a test left stopped
		eval { signal_helper($pid, 'TERM') };
	}
}

sub signal_helper
{
	my ($pid, $sig) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ @CTL, 'signal', $pid, $sig ], '>', \$out, '2>', \$err)
	  or die "cannot signal helper $pid: $err";
	return 1;
}

# SIGTERM the helper, wait (15 s at most) until the extension of $node sees
# it disconnected, then until the process is gone: a new helper started
# while the old one still tears its BPF programs down overlaps with it, as
# a service restart never does.  Returns true when it disconnected.
sub stop_helper
{
	my ($node, $pid) = @_;
	signal_helper($pid, 'TERM');
	my $off = wait_until(sub {
		$node->safe_psql('postgres', 'SELECT helper_connected FROM pg_tracer_status()') eq 'f'
	}, 15);
	my $gone = wait_until(sub {
		my $state = eval { proc_field("/proc/$pid/stat", qr/^\d+ \(.*\) (\S)/) };
		!defined $state || $state eq 'Z'
	}, 15);
	note("helper $pid " . (defined $gone ? 'exited' : 'was still exiting after 15 s'));
	return defined $off;
}

# The read system calls the helper $pid has made so far (syscr of its
# /proc/<pid>/io, which only root may read): each read of a /proc file is one
# at least.
sub helper_read_calls
{
	my ($pid) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ @CTL, 'io', $pid ], '>', \$out, '2>', \$err)
	  or die "cannot read the io of helper $pid: $err";
	return $out =~ /^syscr: (\d+)$/m ? $1 : die "no syscr in: $out";
}

# Run the helper in the foreground as root; returns (exit code, stdout, stderr).
sub run_helper
{
	my @args = @_;
	my ($out, $err) = ('', '');
	my $timer = IPC::Run::timeout(60);
	IPC::Run::run([ @CTL, 'run', @args ], '<', \undef, '>', \$out, '2>', \$err, $timer);
	return (exit_code($?), $out, $err);
}

# A wait status as a shell reports it: the exit code, or 128 + the signal
# that killed the process (sudo, which runs the helper, dies of the
# helper's signal), so that a crash is never read as exit 0.
sub exit_code
{
	my ($status) = @_;
	return ($status & 127) ? 128 + ($status & 127) : $status >> 8;
}

# The exit code (exit_code) of the command (a trace, pgbench) that IPC::Run
# harness $h ran and finished.
sub harness_exit
{
	my ($h) = @_;
	return exit_code($h->full_result(0));
}

# Run `pg-tracer ARGS` as root with its stdout piped into the command
# @$reader (run as the test's user), whose stdout is returned with the
# helper's stderr: ($reader_out, $helper_err).
sub run_helper_into
{
	my ($reader, @args) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ @CTL, 'run', @args ], '<', \undef, '2>', \$err,
		'|', $reader, '>', \$out, IPC::Run::timeout(60));
	return ($out, $err);
}

# start_trace's harnesses: when each started, and its --duration in seconds
my %trace_started;

# Start `pg-tracer trace ARGS` as root in the background and wait (30 s at
# most: loading every set takes seconds on a busy VM) until its stdout
# matches $ready: trace prints its status records once the probes are
# attached.  A trace that never gets there fails a test here, so that the
# workload run next is not blamed for counts the probes could not see.
# Returns (harness, \$out, \$err); the caller finishes the harness.
# SIGINT is left to its default for the trace, as an interactive shell
# leaves it: a test run started in the background inherits it ignored,
# and the trace keeps an ignored SIGINT ignored (README, trace), so
# end_trace's SIGINT would not end it.
sub start_trace
{
	my ($ready, @args) = @_;
	my ($out, $err) = ('', '');
	local $SIG{INT} = 'DEFAULT';
	my $h = IPC::Run::start([ @CTL, 'run', 'trace', @args ],
		'<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(90));
	my ($duration) = join(' ', @args) =~ /--duration (\d+)s\b/;
	$trace_started{$h} = { at => time(), duration => $duration };
	for (1 .. 300)
	{
		$h->pump_nb;
		return ($h, \$out, \$err) if $out =~ $ready;
		usleep(100_000);
	}
	fail("trace @args ready within 30 s (stderr: $err)");
	return ($h, \$out, \$err);
}

# End a trace started with a long --duration once its workload is done, as
# Ctrl-C does (it prints its final summary then): a short --duration
# would have to outlast the workload on the slowest machine.  The SIGINT
# goes through helper-ctl to the pg-tracer process itself, found below the
# harness (sudo would relay it too).  A trace that outlives the signal by
# 20 s, or lives as long as its --duration, fails a test: the signal did
# not end it, and what it counted spans more than the workload.
sub end_trace
{
	my ($h) = @_;
	my $pid = trace_pid($h);
	my $t0 = time();
	my $started = delete $trace_started{$h} // { at => $t0 };

	ok(defined $pid, 'the trace process is found below its harness') or return $h->finish;
	signal_helper($pid, 'INT');
	$h->finish;
	my ($took, $lived) = (time() - $t0, time() - $started->{at});
	ok($took < 20 && (!defined $started->{duration} || $lived < $started->{duration} - 1),
		sprintf('the trace ends on SIGINT (after %.1f s; it lived %.1f s of its --duration %s s)',
			$took, $lived, $started->{duration} // 'none'));
	return;
}

# The pid of the pg-tracer process that harness $h runs (through sudo and
# helper-ctl, which execs it): the one descendant of the harness's child
# named pg-tracer.  undef when there is none.
sub trace_pid
{
	my ($h) = @_;
	my (%parent, %comm);

	for my $stat (glob '/proc/[0-9]*/stat')
	{
		open(my $fh, '<', $stat) or next;	# gone meanwhile
		my $line = <$fh> // '';
		close $fh;
		next unless $line =~ /^(\d+) \((.*)\) \S+ (\d+) /s;
		($parent{$1}, $comm{$1}) = ($3, $2);
	}
	my %below = ($h->{KIDS}[0]{PID} => 1);
	for (1 .. 8)	# sudo, its monitor, the command: a few levels at most
	{
		$below{$_} = 1 for grep { $below{ $parent{$_} } } keys %parent;
	}
	my @found = grep { $below{$_} && $comm{$_} eq 'pg-tracer' } keys %comm;
	return @found == 1 ? $found[0] : undef;
}

# Poll $code every 100 ms until it returns true or $timeout seconds pass.
# Returns the elapsed seconds on success, undef on timeout.
sub wait_until
{
	my ($code, $timeout) = @_;
	my $start = time();
	while (time() - $start < $timeout)
	{
		return time() - $start if $code->();
		usleep(100_000);
	}
	return undef;
}

# Where the helper writes this cluster's segment (the same name the
# extension computes: data directory st_dev/st_ino in hex).
sub segment_path
{
	my ($node, $rt, $suffix) = @_;
	my @st = stat($node->data_dir) or die "stat: $!";
	return sprintf('%s/pgt-%x-%x%s', $rt, $st[0], $st[1], $suffix // '.seg');
}

# The first capture of RE in the file at PATH (a /proc file: ground truth
# read beside the helper's figures); dies when the file or the match is missing.
sub proc_field
{
	my ($path, $re) = @_;
	open my $fh, '<', $path or die "$path: $!";
	local $/;
	my $t = <$fh>;
	close $fh;
	return $t =~ $re ? $1 : die "no match in $path";
}

# Return once $n publications of the segment of a cluster have been seen:
# each sets a new last_update.  $via is the cluster's node (read with new
# sessions) or a function SQL -> its one value (a session of the caller's).
# The helper publishes every 250 ms; the exact sets' rows are copied at
# every publication, and the kernel and engine sets' aggregates at every
# fourth.  Returns the seconds waited, undef after 20 s.
sub wait_publications
{
	my ($via, $n) = @_;
	my $q1 = ref($via) eq 'CODE' ? $via : sub { $via->safe_psql('postgres', $_[0]) };
	my $sql = 'SELECT extract(epoch FROM last_update) FROM pg_tracer_status()';
	my $last = $q1->($sql);
	my $seen = 0;
	return wait_until(sub {
		my $now = $q1->($sql);
		($seen, $last) = ($seen + 1, $now) if $now ne $last;
		return $seen >= $n;
	}, 20);
}

# Return once a copy of the kernel (and engine) sets' aggregates that began
# after this call is published: five publications hold one, where a fixed
# sleep only makes it likely.
sub wait_kernel_copy { return wait_publications($_[0], 5); }

# Return once a copy of the exact sets' rows that began after this call is
# published: they are copied at every publication, so the second one seen
# (the first may have begun before the call).
sub wait_exact_copy { return wait_publications($_[0], 2); }

# Return once the helper has looked for backend $pid's PgBackendStatus slot
# (its query id and wait event: the BPF programs read them there).  The
# daemon maps new processes' slots at its look at the cluster, once a
# second, among the processes it publishes in pg_tracer_backends: so the
# pid shown there, then five publications (over a second) hold a look
# that knew it.  Returns the seconds waited, undef after 20 s.
sub wait_mapped
{
	my ($node, $pid) = @_;
	my $t0 = time();
	return undef unless defined wait_until(sub {
		$node->safe_psql('postgres', "SELECT count(*) FROM pg_tracer_backends WHERE pid = $pid") eq '1'
	}, 20);
	return defined wait_kernel_copy($node) ? time() - $t0 : undef;
}

# Is $got (a number from psql) within $frac of $want?
sub within
{
	my ($got, $want, $frac) = @_;
	return defined $got && $got ne '' && abs($got - $want) <= $want * $frac;
}

# Wait (20 s at most) until the extension of $node sees the helper
# connected; on a timeout, say what the extension sees instead.
sub wait_connected
{
	my ($node) = @_;
	return 1 if defined wait_until(sub {
		$node->safe_psql('postgres', 'SELECT helper_connected FROM pg_tracer_status()') eq 't' }, 20);
	diag 'helper not connected after 20 s: ' . $node->safe_psql('postgres',
		"SELECT concat_ws(' ', segment_state, reason) FROM pg_tracer_status()");
	return 0;
}

# The query identifier PostgreSQL computes for $sql in $db (default
# postgres; compute_query_id on):
# the ground truth a tagged row's query id is compared with, independent of
# the helper's reads of a backend's status slot.
sub query_identifier
{
	my ($node, $sql, $db) = @_;
	my $plan = $node->safe_psql($db // 'postgres', "EXPLAIN (VERBOSE, COSTS OFF) $sql");
	return $plan =~ /^\s*Query Identifier: (-?\d+)$/m ? $1 : undef;
}

1;
