# PgTracerSession.pm — one psql session over TCP whose backend's kernel
# counts are read two ways: from pg_tracer's views (syscall, network and
# sched sets) and from the kernel's own accounting (/proc/<pid>/io: syscr,
# syscw, rchar, wchar, the read and write family's calls and bytes; the
# socket's tcp_info from `ss -ti`: bytes_sent less bytes_retrans,
# bytes_received; /proc/<pid>/status: context switches; /proc/<pid>/schedstat:
# run-queue wait).  Shared by the TAP tests that compare the two exactly
# (t/024, t/025).
#
# Views are read through $poll, one background_psql session, so that no
# reading backend exits and adds to the exited processes' row.
package PgTracerSession;

use strict;
use warnings;
use IPC::Run ();
use Test::More;
use PgTracerTest qw(wait_kernel_copy);

our @KEYS = qw(syscr rchar syscw wchar sent received switches);

# The ss binary, or undef (then there is no ground truth for the socket).
sub ss_path
{
	my ($ss) = grep { -x $_ } map { "$_/ss" }
	  (split(/:/, $ENV{PATH}), '/usr/sbin', '/sbin', '/usr/bin');
	return $ss;
}

# Start psql over TCP to $node (listening on 127.0.0.1); $poll reads views.
sub new
{
	my ($class, $node, $poll) = @_;
	my $self = bless { port => $node->port, poll => $poll, in => '', out => '', err => '',
		marks => 0, ss => ss_path() }, $class;
	$self->{h} = IPC::Run::start(
		[ 'psql', '-XAtq', '-h', '127.0.0.1', '-p', $self->{port}, '-d', 'postgres' ],
		'<', \$self->{in}, '>', \$self->{out}, '2>', \$self->{err},
		IPC::Run::timeout(180));
	$self->{in} .= "SELECT pg_backend_pid();\n";
	$self->{h}->pump until $self->{out} =~ /^(\d+)\n/;
	$self->{pid} = $1;
	$self->{out} = '';
	return $self;
}

sub pid { return $_[0]->{pid}; }

sub q1 { my ($self, $sql) = @_; return $self->{poll}->query_safe($sql); }

# Send SQL to the session, followed by a marker line to wait for.
sub send
{
	my ($self, $sql) = @_;
	my $m = ++$self->{marks};
	$self->{in} .= "$sql\nSELECT 'done $m';\n";
	$self->{h}->pump_nb;
}

# Wait for the marker of the last SQL sent.
sub wait
{
	my ($self) = @_;
	my $m = $self->{marks};
	$self->{h}->pump until $self->{out} =~ /done $m\n/;
	$self->{out} = '';
}

# Run SQL in the session and wait for it.
sub run
{
	my ($self, $sql) = @_;
	$self->send($sql);
	$self->wait;
}

# The kernel's counts for the backend.
sub truth
{
	my ($self) = @_;
	my $pid = $self->{pid};
	my $io = do { local (@ARGV, $/) = ("/proc/$pid/io"); <> };
	my $st = do { local (@ARGV, $/) = ("/proc/$pid/status"); <> };
	my $ss = do { local (@ARGV, $/) = ("/proc/$pid/schedstat"); <> };
	my $tcp = `$self->{ss} -tinH state established '( sport = :$self->{port} )'`;
	my %t;
	$t{$1} = $2 while $io =~ /^(syscr|syscw|rchar|wchar): (\d+)$/mg;
	($t{sent}) = $tcp =~ /\bbytes_sent:(\d+)/;
	($t{received}) = $tcp =~ /\bbytes_received:(\d+)/;
	# bytes_sent counts retransmitted bytes again: what send() took is the rest
	my ($retrans) = $tcp =~ /\bbytes_retrans:(\d+)/;
	$t{sent} -= $retrans // 0 if defined $t{sent};
	my ($v) = $st =~ /^voluntary_ctxt_switches:\s+(\d+)/m;
	my ($n) = $st =~ /^nonvoluntary_ctxt_switches:\s+(\d+)/m;
	$t{switches} = $v + $n;
	# on-CPU ns, run-queue wait ns, times on a CPU
	(undef, $t{runq_ns}) = split ' ', $ss // '';
	return \%t;
}

# The views' figures for the rows WHERE pid $where ("= <pid>", or
# "IS NULL": the exited processes'), with the time columns: recv_ms,
# offcpu_ms, runq_ms.
sub views
{
	my ($self, $where) = @_;
	my %v;
	@v{qw(syscr rchar syscw wchar)} = split /\|/, $self->q1("
		SELECT coalesce(sum(calls) FILTER (WHERE op IN ('read', 'pread64', 'readv', 'preadv', 'preadv2')), 0),
		       coalesce(sum(bytes) FILTER (WHERE op IN ('read', 'pread64', 'readv', 'preadv', 'preadv2')), 0),
		       coalesce(sum(calls) FILTER (WHERE op IN ('write', 'pwrite64', 'writev', 'pwritev', 'pwritev2')), 0),
		       coalesce(sum(bytes) FILTER (WHERE op IN ('write', 'pwrite64', 'writev', 'pwritev', 'pwritev2')), 0)
		  FROM pg_tracer_kernel_io WHERE layer = 'syscall' AND pid $where");
	@v{qw(sent received recv_ms)} = split /\|/, $self->q1(
		"SELECT coalesce(sum(send_bytes), 0), coalesce(sum(recv_bytes), 0),
		        coalesce(sum(recv_ms), 0)
		   FROM pg_tracer_kernel_net WHERE pid $where");
	@v{qw(switches offcpu_ms runq_ms)} = split /\|/, $self->q1(
		"SELECT coalesce(sum(voluntary_switches + involuntary_switches), 0),
		        coalesce(sum(offcpu_ms), 0), coalesce(sum(runq_ms), 0)
		   FROM pg_tracer_kernel_sched WHERE pid $where");
	return \%v;
}

sub fmt { my ($h) = @_; return join(' ', map { "$_=" . ($h->{$_} // '?') } @KEYS); }

# While the backend is idle: its own counts unchanged around a read of
# views that have stopped moving across a copy begun after the first read.
# Returns (truth, views).
sub baseline
{
	my ($self) = @_;
	for (1 .. 20)
	{
		my $t0 = $self->truth;
		my $v = $self->views("= $self->{pid}");
		defined wait_kernel_copy(sub { $self->q1($_[0]) })
		  or BAIL_OUT('the helper published no copy in 20 s');
		my $v2 = $self->views("= $self->{pid}");
		my $t1 = $self->truth;
		return ($t1, $v2) if fmt($t0) eq fmt($t1) && fmt($v) eq fmt($v2);
	}
	BAIL_OUT('the idle backend never held still');
}

# Quit the session and wait for psql.
sub quit
{
	my ($self) = @_;
	$self->{in} .= "\\q\n";
	$self->{h}->finish;
}

1;
