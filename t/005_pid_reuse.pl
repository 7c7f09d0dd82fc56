# 005_pid_reuse.pl — a pid is not a process.  A backend of one role exits and
# a backend of another role gets its pid (steered with ns_last_pid, as a
# busy host with pid_max 32768 does by itself): the newcomer must not see
# the earlier session's slow statements (their text) as its own, and the
# helper folds the earlier session's kernel rows away from the pid instead
# of letting the new process continue them.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

plan skip_all => 'root helper not reachable (run through scripts/test.sh)'
  unless helper_available();
my @CTL = split ' ', $ENV{PG_TRACER_CTL};

my ($node, $rt) = tracer_node('reuse', conf => "compute_query_id = on\n");
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
$node->safe_psql('postgres', 'CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN');
start_helper($node, $rt, '--slow-ms', '200', '--engine-probes', 'pg-query');
ok(wait_connected($node), 'helper connected');

# --- alice: a slow statement with a secret in its text, and its sends
my $alice = $node->background_psql('postgres', extra_params => [ '-U', 'alice' ]);
my $pid = $alice->query_safe('SELECT pg_backend_pid()');
wait_mapped($node, $pid);    # its query id is read in its status slot
$alice->query_safe("SELECT pg_sleep(0.3), 'alice-secret-4711' AS s");
my $qid = '';
ok(defined wait_until(sub {
	$qid = $node->safe_psql('postgres',
		"SELECT queryid FROM pg_tracer_slow_statements
		  WHERE pid = $pid AND query LIKE '%alice-secret-4711%'");
	$qid ne ''
}, 10), "alice's slow statement is published (pid $pid, query id $qid)");
is($alice->query_safe("SELECT count(*) FROM pg_tracer_slow_statements WHERE pid = $pid"),
	'1', 'alice sees her own slow statement');
my $alice_net = "SELECT count(*) FROM pg_tracer_kernel_net WHERE pid = $pid AND queryid = $qid";
ok(defined wait_until(sub { $node->safe_psql('postgres', $alice_net) ne '0' }, 10),
	"alice's sends are counted under her pid and query id");
$alice->quit;
ok(defined wait_until(sub {
	$node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE pid = $pid") eq '0'
}, 10), 'alice has left');

# --- bob gets alice's pid.  Between the write to ns_last_pid and the
# postmaster's fork, the test forks psql (and maybe more): try a few offsets.
my ($bob, $bob_pid);
for my $try (0 .. 11)
{
	IPC::Run::run([ @CTL, 'next-pid', $pid - ($try % 4) ]) or die 'next-pid failed';
	$bob = $node->background_psql('postgres', extra_params => [ '-U', 'bob' ]);
	$bob_pid = $bob->query_safe('SELECT pg_backend_pid()');
	last if $bob_pid == $pid;
	$bob->quit;
	undef $bob;
}
SKIP:
{
	skip "could not steer a new backend onto pid $pid (other processes took it)", 7
	  unless defined $bob;
	pass("bob's backend got alice's pid $pid");
	# From his first statement on, before and while the helper notices the
	# pid taken (its next look, within a second or two) and folds alice's
	# rows: bob's pid alone must not show them to him.
	my $seen = 0;
	for (1 .. 40)
	{
		$seen += $bob->query_safe("SELECT count(*) FROM pg_tracer_kernel_net WHERE queryid = $qid");
		usleep(75_000);
	}
	is($seen, 0, "bob never sees alice's kernel rows, not even before the helper folds them");
	is($bob->query_safe("SELECT count(*) FROM pg_tracer_slow_statements WHERE pid = pg_backend_pid()"),
		'0', "bob does not see alice's slow statement under his pid");
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM pg_tracer_slow_statements WHERE pid = $pid AND queryid = $qid"),
		'1', 'a superuser still sees it (with its pid)');
	ok(defined wait_until(sub { $node->safe_psql('postgres', $alice_net) eq '0' }, 10),
		"alice's kernel rows leave the pid once the helper sees it taken");
	cmp_ok($node->safe_psql('postgres',
			"SELECT count(*) FROM pg_tracer_kernel_net WHERE pid IS NULL AND queryid = $qid"),
		'>', 0, "... folded into the exited processes' rows with her query id");
	is($bob->query_safe("SELECT count(*) FROM pg_tracer_kernel_net WHERE queryid = $qid"),
		'0', "bob sees none of them");
	$bob->quit;
}

$node->stop;
done_testing();
