# 042_exact_crossval.pl — the sampled tier against the exact tier over one
# pgbench TPC-B run (helper in --mode full, pg_tracer_reset() at the
# start): each event's share of non-idle wait time (client backends),
# sampled vs exact, and the top 5 events by time.  The issue's criterion:
# every share within 2 percentage points, top-5 overlap >= 4.
#
# Against what: the watchpoint source by default, which times every
# transition of wait_event_info, i.e. exactly the span the sampler samples.
# No process may die during the run: on a 2-vCPU Intel VM a backend once
# died here of a debug trap whose DR6 the guest lost; the library now
# absorbs those (src/debug_trap.c, t/044), and the server log says so.
# Where breakpoints do not fire the test skips with that reason.  System-call
# tagging times the blocking system call (plus preempted time), not the
# user-space part of a wait's span, so short waits (page-cache reads, WAL
# writes) come out smaller than the sampler's and long lock waits take a
# larger share: measured 5.4 points on Lock:transactionid (67.8 % vs
# 62.4 %) at 1000 Hz on a quiet host, where the watchpoint source gave
# 0.8, 0.7 and 1.1 points.  That bias is the documented property of the
# cheaper source, so its comparison is opt-in:
#
#   PGT_CROSSVAL_SOURCE=syscall  against system-call tagging
#   PGT_CROSSVAL=loose           shares within 4 points, every event with
#                                >= 5% of the exact wait time in the sampled
#                                top 5, top-5 overlap >= 3
#   PGT_CROSSVAL_RATE, PGT_CROSSVAL_SECS  sampling rate and run length
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

plan skip_all => 'root helper not reachable (run through scripts/test.sh)'
  unless helper_available();
my $strict = ($ENV{PGT_CROSSVAL} // '') eq 'loose' ? 0 : 1;
my $source = $ENV{PGT_CROSSVAL_SOURCE} // 'watchpoint';
my $bound = $strict ? 2 : 4;

# The sampler's share of an event is an estimate: its error falls with the
# number of samples, so the comparison samples at RATE Hz over SECS s
# (defaults 1000 Hz, 30 s: about 120,000 backend samples) to let a bias of
# either tier show rather than the sampling noise.  At 20 s, eight runs on
# the development VM (2026-12-03) read a largest difference of 1.1-1.9
# points, and one of two full suites 2.9 (Lock:tuple): the lock waits'
# shares move most from run to run.
my $rate = $ENV{PGT_CROSSVAL_RATE} // 1000;
my $secs = $ENV{PGT_CROSSVAL_SECS} // 30;
my ($node, $rt) = tracer_node('crossval',
	conf => "pg_tracer.sample_rate = $rate\nshared_buffers = 16MB\nsynchronous_commit = on\n");
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
sub q1 { return $node->safe_psql('postgres', $_[0]); }
$node->command_ok([ 'pgbench', '-i', '-s', '5', '-q', '-h', $node->host, '-p', $node->port, 'postgres' ],
	'pgbench initialised');

my $helper = start_helper($node, $rt, '--mode', 'full', '--probes', 'exact', '--exact-source', $source);
ok(defined wait_until(sub { q1('SELECT helper_connected FROM pg_tracer_status()') eq 't' }, 20),
	'helper connected (full mode)');
# the helper raises the sampler's priority (--sampler-nice, default -15):
# without it the sampler samples when a CPU frees up, which is when a
# backend starts a blocking wait, and lock waits' shares lean by up to 2
# points on a busy 2-vCPU host (helper/sampler_priority.c)
my $sampler = q1("SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_tracer sampler'");
my $nice;
wait_until(sub { $nice = (split ' ', (slurp_file("/proc/$sampler/stat") =~ s/^.*\) //sr))[16]; $nice == -15 }, 10);
is($nice, -15, "the helper runs the sampler (pid $sampler) at nice -15");
my $mech = q1("SELECT mechanism || ': ' || reason FROM pg_tracer_probes WHERE probe_set = 'exact'");
note "exact source: $mech";
if ($source eq 'watchpoint' && $mech !~ /^hardware watchpoints/)
{
	diag "no comparison: hardware breakpoints are not usable here ($mech)";
	like($mech, qr/^syscall tagging: .*watchpoints unavailable: .+/,
		'no watchpoint comparison here: the status says why');
	# counted as not run in the suite's summary (scripts/test.sh)
  SKIP: { skip "the watchpoint source's comparison: breakpoints do not fire here", 1; }
	signal_helper($helper, 'TERM');
	$node->stop;
	done_testing();
	exit 0;
}
sleep(1.5);
q1('SELECT pg_tracer_reset()');
my $log_from = -s $node->logfile;
# client backends only on both sides (background processes' own waits,
# e.g. the sampler's, are not what the comparison is about)
my $exact_q = "SELECT wait_event_type || ':' || wait_event, sum(total_ms) FROM pg_tracer_exact_waits()
	WHERE NOT idle AND pid NOT IN (SELECT pid FROM pg_stat_activity WHERE backend_type <> 'client backend')
	GROUP BY 1";
# exact totals before the run, to take the run's difference
my %x0 = map { my ($e, $t) = split /\|/; ($e => $t) } split /\n/,
  q1($exact_q);
$node->command_ok([ 'pgbench', '-c', '4', '-j', '2', '-T', $secs, '-h', $node->host, '-p', $node->port, 'postgres' ],
	"pgbench TPC-B, 4 clients, $secs s, sampled at $rate Hz");
sleep(1.5);
my %x = map { my ($e, $t) = split /\|/; ($e => $t - ($x0{$e} // 0)) } split /\n/,
  q1($exact_q);
my %s = map { split /\|/ } split /\n/,
  q1("SELECT wait_event_type || ':' || wait_event, sum(total_ms) FROM pg_tracer_session_events_since(NULL)
	WHERE NOT idle AND wait_event_type <> 'CPU' AND backend_type = 'client backend' GROUP BY 1");

sub shares
{
	my ($h) = @_;
	my $tot = 0;
	$tot += $_ for values %$h;
	return { map { $_ => ($tot ? 100 * $h->{$_} / $tot : 0) } keys %$h };
}
my ($ps, $px) = (shares(\%s), shares(\%x));
my %all = (%$ps, %$px);
my @worst;
for my $e (sort keys %all)
{
	my ($a, $b) = ($ps->{$e} // 0, $px->{$e} // 0);
	next if $a < 2 && $b < 2;
	note sprintf('%-28s sampled %5.1f%%  exact %5.1f%%', $e, $a, $b);
	push @worst, [ $e, abs($a - $b) ];
}
@worst = sort { $b->[1] <=> $a->[1] } @worst;
ok(@worst > 0, 'the run has non-idle waits in both tiers');
ok(@worst && $worst[0][1] <= $bound, sprintf('largest share difference %.1f points (%s), at most %d',
		@worst ? ($worst[0][1], $worst[0][0]) : (0, 'none'), $bound));
my @ts = (sort { $s{$b} <=> $s{$a} } keys %s)[0 .. 4];
my @tx = (sort { $x{$b} <=> $x{$a} } keys %x)[0 .. 4];
my %in = map { defined $_ ? ($_ => 1) : () } @tx;
my $overlap = grep { defined $_ && $in{$_} } @ts;
my %ins = map { defined $_ ? ($_ => 1) : () } @ts;
my @missing = grep { defined $_ && $px->{$_} >= 5 && !$ins{$_} } @tx;
ok(!@missing, "every event with >= 5% of the exact wait time is in the sampled top 5 (@missing)")
  unless $strict;
ok($overlap >= ($strict ? 4 : 3), "top-5 overlap $overlap of 5 (sampled: @{[ join ',', grep defined, @ts ]}; exact: @{[ join ',', grep defined, @tx ]})");

ok(!$node->log_contains(qr/terminated by signal/, $log_from), 'no process of the cluster died during the run');
my $log = slurp_file($node->logfile, $log_from);
note "debug traps absorbed during the run: $1" while $log =~ /(absorbed \d+ debug trap.*)/g;

signal_helper($helper, 'TERM');
$node->stop;
done_testing();
