# 026_kernel_hugepages.pl — shared memory in huge pages is memory, not a
# file: its first touches are no page-cache misses.
#
# With huge_pages on, PostgreSQL's main shared memory is a hugetlb mapping,
# whose pages enter the page cache of the kernel's internal hugetlbfs mount
# when first touched (the filemap tracepoint fires for them).  Counted as
# misses, a warm-up after a restart read as gigabytes missed, 2 MB a page.
# helper-ctl reserves huge pages (and gives the old count back at the end);
# a cluster with huge_pages = on and its table's pages dropped from the page
# cache prewarms the table into shared buffers, touching most of them for
# the first time.  The backend's misses must lie on the data directory's
# device (the table's file, against /proc/<pid>/io read_bytes) and none on
# the device of the mapping (from /proc/<postmaster>/maps).  A host that
# reserves 40 huge pages or more already keeps its own count.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use PgTracerTest;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run ();

plan skip_all => 'root helper not reachable (run through scripts/test.sh)'
  unless helper_available();

my @CTL = split ' ', $ENV{PG_TRACER_CTL};
my ($size) = slurp_file('/proc/meminfo') =~ /^Hugepagesize:\s+(\d+) kB/m;
plan skip_all => 'the default huge page is not 2 MB here: ' . ($size // 'none') . ' kB'
  unless ($size // 0) == 2048;
# reserve 40 where fewer are; a host's own larger reservation is left alone
my $before = slurp_file('/proc/sys/vm/nr_hugepages');
chomp $before;
my $err = '';
if ($before < 40)
{
	plan skip_all => "huge pages cannot be reserved here: $err"
	  unless IPC::Run::run([ @CTL, 'hugepages', '40' ], '>', \my $out, '2>', \$err);
}
END
{
	local $?;
	IPC::Run::run([ @CTL, 'hugepages', $before ]) if defined $before && $before =~ /^\d+$/ && $before < 40;
}
my ($total) = slurp_file('/proc/meminfo') =~ /^HugePages_Total:\s+(\d+)/m;
plan skip_all => "only $total huge pages could be reserved" unless $total >= 32;

# 32 MB of shared buffers, in 2 MB pages where the default size is that
my ($node, $rt) = tracer_node('hugepages',
	conf => "huge_pages = on\nshared_buffers = 32MB\nmax_parallel_workers_per_gather = 0\n");
my ($map) = grep { m{ /anon_hugepage} } split /\n/,
  slurp_file('/proc/' . $node->{_pid} . '/maps');
ok(defined $map, 'the main shared memory is in huge pages') or diag $map // '(none)';
my ($maj, $min) = ($map // '') =~ /^\S+ \S+ \S+ ([0-9a-f]+):([0-9a-f]+) /;
my $huge_dev = sprintf('%d:%d', hex($maj // 0), hex($min // 0));

$node->safe_psql('postgres', 'CREATE EXTENSION pg_tracer; CREATE EXTENSION pg_prewarm');
$node->safe_psql('postgres',
	"CREATE TABLE warm AS SELECT g, repeat(md5(g::text), 4) AS pad
	   FROM generate_series(1, 100000) g; CHECKPOINT");
my $helper = start_helper($node, $rt, '--probes', 'syscall,vfs');
ok(wait_connected($node), 'helper connected (syscall, vfs)');

my $s = $node->background_psql('postgres');
my $pid = $s->query_safe('SELECT pg_backend_pid()');
$s->query_safe("LOAD 'pg_prewarm'");    # its library's pages before the caches go
IPC::Run::run([ @CTL, 'drop-caches' ]) or die 'drop-caches failed';
my $io0 = proc_field("/proc/$pid/io", qr/^read_bytes: (\d+)/m);
my $blocks = $s->query_safe("SELECT pg_prewarm('warm', 'buffer')");
my $truth = proc_field("/proc/$pid/io", qr/^read_bytes: (\d+)/m) - $io0;
cmp_ok($blocks * 8192, '>', 12_000_000, "prewarm put $blocks blocks in shared buffers");
cmp_ok($truth, '>', 0.5 * $blocks * 8192, "ground truth: it read $truth bytes from disk");

my $data_dev = do {
	my $d = (stat($node->data_dir))[0];
	sprintf('%d:%d', ($d >> 8) & 0xfff | (($d >> 32) & ~0xfff), ($d & 0xff) | (($d >> 12) & ~0xff));
};
my $misses = "SELECT coalesce(sum(bytes) FILTER (WHERE device = '$data_dev'), 0) || '|' ||
                     coalesce(sum(bytes) FILTER (WHERE device = '$huge_dev'), 0) || '|' ||
                     coalesce(sum(bytes), 0)
                FROM pg_tracer_kernel_io
               WHERE pid = $pid AND layer = 'pagecache' AND op = 'miss'";
my ($on_data, $on_huge, $all);
wait_until(sub {
	($on_data, $on_huge, $all) = split /\|/, $node->safe_psql('postgres', $misses);
	abs($on_data - $truth) <= 0.10 * $truth
}, 10);
ok(abs($on_data - $truth) <= 0.10 * $truth,
	"the backend's misses on the data device $data_dev ($on_data bytes) within 10% of read_bytes ($truth)");
is($on_huge, 0, "none on the huge-page mapping's device $huge_dev");
# a page of the server's own binary faulted in again after the drop is a
# miss on its device: a few, where that is not the data directory's
cmp_ok($all - $on_data - $on_huge, '<=', 0.05 * $truth, 'and few elsewhere')
  or diag $node->safe_psql('postgres',
	"SELECT device, sum(bytes) FROM pg_tracer_kernel_io
	  WHERE pid = $pid AND layer = 'pagecache' GROUP BY 1");
$s->quit;

signal_helper($helper, 'TERM');
$node->stop;
done_testing();
