# 041_exact_anomaly.pl — anomaly rules of the tiered mode: a lock pile-up
# (sessions blocked behind LOCK TABLE, counted independently in
# pg_stat_activity) opens an exact window on the helper's own behalf,
# shown in pg_tracer_escalations; the cooldown keeps a second pile-up from
# opening another; --anomaly off opens none.
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

my ($node, $rt) = tracer_node('anomaly');
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer');
sub q1 { return $node->safe_psql('postgres', $_[0]); }
q1('CREATE TABLE hot(a int)');

# a pile-up of n sessions behind an ACCESS EXCLUSIVE lock; returns the
# sessions (the locker first) once pg_stat_activity shows them waiting
sub pile_up
{
	my ($n) = @_;
	my @s = ($node->background_psql('postgres'));
	$s[0]->query_safe('BEGIN; LOCK TABLE hot IN ACCESS EXCLUSIVE MODE');
	for (1 .. $n)
	{
		my $b = $node->background_psql('postgres');
		$b->query_until(qr/sent/, "\\echo sent\nSELECT count(*) FROM hot;\n");
		push @s, $b;
	}
	$node->poll_query_until('postgres',
		"SELECT count(*) = $n FROM pg_stat_activity WHERE wait_event_type = 'Lock'")
	  or die 'pile-up did not form';
	return @s;
}
sub release
{
	my @s = @_;
	$s[0]->query_safe('COMMIT');
	$_->query_safe('SELECT 1') for @s[1 .. $#s];
	$_->quit for @s;
}

my $helper = start_helper($node, $rt, '--anomaly-cooldown', '600');
ok(defined wait_until(sub { q1('SELECT helper_connected FROM pg_tracer_status()') eq 't' }, 20),
	'helper connected (tiered, anomaly rules on)');
sleep(7);    # the rules' warm-up, the baseline of an idle cluster
is(q1('SELECT count(*) FROM pg_tracer_escalations'), '0', 'an idle cluster opens no window');

my @s = pile_up(4);
my $row = '';
ok(defined wait_until(sub {
	$row = q1("SELECT reason || '|' || requested_by FROM pg_tracer_escalations");
	$row ne '' }, 10), 'the pile-up opened a window');
like($row, qr/^anomaly-(lock|active)\|helper$/, "by an anomaly rule, on the helper's behalf ($row)");
is(q1('SELECT active FROM pg_tracer_exact_budget()'), 't', 'exact timing is on');
release(@s);
is(q1('SELECT pg_tracer_deescalate()'), 't', 'an admin can end it');

# cooldown: a second pile-up right away opens nothing; the helper says
# when it has seen the rule hold and why it opened no window, so the
# count is read after the decision, not after a guessed delay
my $log = $node->basedir . '/helper.log';
my $log_from = -s $log;
@s = pile_up(4);
ok(defined wait_until(sub {
	slurp_file($log, $log_from) =~ /anomaly: anomaly-(lock|active) holds .*no window: cooldown/ }, 10),
	'the second pile-up is seen, and held back by the cooldown');
is(q1('SELECT count(*) FROM pg_tracer_escalations'), '1', 'cooldown: no second window');
release(@s);
ok(stop_helper($node, $helper), 'helper stopped');

# --anomaly off
$helper = start_helper($node, $rt, '--anomaly', 'off');
ok(defined wait_until(sub { q1('SELECT helper_connected FROM pg_tracer_status()') eq 't' }, 20),
	'helper restarted with --anomaly off');
sleep(6);
$log_from = -s $log;
@s = pile_up(4);
ok(defined wait_until(sub {
	slurp_file($log, $log_from) =~ /anomaly: anomaly-(lock|active) holds .*no window: the rules are off/ }, 10),
	'--anomaly off: the pile-up is seen, and the helper says the rules are off');
is(q1('SELECT count(*) FROM pg_tracer_escalations'), '0', '--anomaly off: no window');
release(@s);

signal_helper($helper, 'TERM');
$node->stop;
done_testing();
