# 004_host_wide.pl — the helper without --pgdata, as its systemd unit runs
# it: it serves every postmaster of the host.
#
# Two clusters running before the helper starts are attached.  A third,
# started later, is found by the next scan of /proc while the first one has
# a dozen sessions open (the scan passes over the backends it already
# tracks without reading their /proc files).  A restarted cluster is
# attached to its new postmaster; a stopped one is let go, and the others
# stay served.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;

plan skip_all => 'root helper not reachable (run through scripts/test.sh)'
  unless helper_available();

# one runtime directory for every cluster: a host-wide helper writes there
my ($node_a, $rt) = tracer_node('host_a');
my ($node_b) = tracer_node('host_b', conf => "pg_tracer.runtime_dir = '$rt'\n");
$_->safe_psql('postgres', 'CREATE EXTENSION pg_tracer') for ($node_a, $node_b);

sub served_pm
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT helper_connected AND postmaster_pid = $node->{_pid} FROM pg_tracer_status()")
	  eq 't';
}

# a session of $node shows in its own pg_tracer_backends
sub session_tracked
{
	my ($node, $bg) = @_;
	my $pid = $bg->query_safe('SELECT pg_backend_pid()');
	return defined wait_until(sub {
		$node->safe_psql('postgres', "SELECT count(*) FROM pg_tracer_backends WHERE pid = $pid")
		  eq '1' }, 5);
}

my $log = "$PostgreSQL::Test::Utils::log_path/004_helper_host.log";    # kept after the run
my $helper = start_host_helper($rt, $log);
ok(defined wait_until(sub { served_pm($node_a) && served_pm($node_b) }, 20),
	'both clusters running before the helper are served');

my @sessions = map { $node_a->background_psql('postgres') } 1 .. 12;
ok(session_tracked($node_a, $sessions[11]), 'a session of the first cluster is tracked');

my ($node_c) = tracer_node('host_c', conf => "pg_tracer.runtime_dir = '$rt'\n");
$node_c->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
ok(defined wait_until(sub { served_pm($node_c) }, 10),
	'a cluster started after the helper is found by the next scan');
my $bg_c = $node_c->background_psql('postgres');
ok(session_tracked($node_c, $bg_c), 'its sessions are tracked');
$bg_c->quit;
ok(session_tracked($node_a, $sessions[0]), 'the first cluster stays served');
$_->quit for @sessions;

$node_a->restart;
ok(defined wait_until(sub { served_pm($node_a) }, 20),
	'a restarted cluster is attached to its new postmaster');
my $bg_a = $node_a->background_psql('postgres');
ok(session_tracked($node_a, $bg_a), 'and its new sessions are tracked');
$bg_a->quit;

my $pm_b = $node_b->{_pid};
$node_b->stop;
ok(defined wait_until(sub { slurp_file($log) =~ /: detached from postmaster $pm_b \(postmaster exited\)/ }, 10),
	'a stopped cluster is let go');
ok(served_pm($node_a) && served_pm($node_c), 'the others stay served');
unlike(slurp_file($log), qr/ error: /, 'the helper logged no error');

signal_helper($helper, 'TERM');
$_->stop for ($node_a, $node_c);
done_testing();
