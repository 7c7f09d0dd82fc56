/*
 * helper/kernel_vfs.c
 *	  Probe set "vfs": page-cache misses per backend everywhere
 *	  (bpf/kernel_vfs.bpf.c, filemap tracepoint: file reads, file writes and
 *	  file system metadata apart), and vfs_read / vfs_write /
 *	  vfs_fsync latency and bytes through kprobes where the kernel has them
 *	  (bpf/kernel_vfs_kprobe.bpf.c, sharing the same `kio` map).  Without
 *	  kprobes the set is degraded and says why.
 */
#include "bpf_probes.h"
#include "kernel_btf.h"
#include "kernel_set.h"
#include "kernel_vfs.skel.h"
#include "kernel_vfs_kprobe.skel.h"

#include <bpf/libbpf.h>
#include <dirent.h>
#include <linux/memfd.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const kset_desc desc = {0, NULL, 0, NULL, -1, NULL};

static void
destroy_tp(void *skel)
{
	kernel_vfs_bpf__destroy(skel);
}

static void
destroy_kp(void *skel)
{
	kernel_vfs_kprobe_bpf__destroy(skel);
}

#define MECH "tp/filemap+kprobe/vfs_*"

/*
 * block_devices
 *		The host's block devices as the kernel numbers them (MAJOR << 20 |
 *		MINOR), from /sys/dev/block ("8:0", "254:1", ...), at most max.
 *		The page-cache program tells a device's own pages (file system
 *		metadata) by them; a device that appears later is not known.
 */
static uint32_t
block_devices(volatile uint32_t *out, uint32_t max)
{
	DIR		   *dir = opendir("/sys/dev/block");
	struct dirent *de;
	uint32_t	n = 0;

	if (dir == NULL)
		return 0;
	while ((de = readdir(dir)) != NULL && n < max)
	{
		unsigned int maj;
		unsigned int min;
		char		tail;

		if (sscanf(de->d_name, "%u:%u%c", &maj, &min, &tail) != 2 ||
			maj == 0 || maj >= (1U << 12) || min >= (1U << 20))
			continue;
		out[n++] = (maj << 20) | min;
	}
	closedir(dir);
	return n;
}

/*
 * hugetlb_devices
 *		The kernel's internal hugetlbfs mounts, one per huge page size of
 *		/sys/kernel/mm/hugepages, as the kernel numbers them, at most max:
 *		huge-page shared memory (MAP_HUGETLB, SHM_HUGETLB) lives there, and
 *		a memfd_create(MFD_HUGETLB) file of the size is made on the same
 *		mount (no page is reserved for it).  Nothing where the kernel has
 *		no huge pages.
 */
static uint32_t
hugetlb_devices(volatile uint32_t *out, uint32_t max)
{
	DIR		   *dir = opendir("/sys/kernel/mm/hugepages");
	struct dirent *de;
	uint32_t	n = 0;

	if (dir == NULL)
		return 0;
	while ((de = readdir(dir)) != NULL && n < max)
	{
		unsigned long kb;
		unsigned int shift = 10;
		struct stat st;
		uint32_t	dev;
		uint32_t	i;
		int			fd;

		if (sscanf(de->d_name, "hugepages-%lukB", &kb) != 1 || kb == 0 ||
			(kb & (kb - 1)) != 0)
			continue;
		while ((1UL << (shift - 10)) < kb && shift < 63)
			shift++;
		fd = memfd_create("pg-tracer-hugetlb", MFD_CLOEXEC | MFD_HUGETLB |
						  (shift << MFD_HUGE_SHIFT));
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && major(st.st_dev) < (1U << 12) &&
			minor(st.st_dev) < (1U << 20))
		{
			dev = (major(st.st_dev) << 20) | minor(st.st_dev);
			for (i = 0; i < n && out[i] != dev; i++)
				;
			if (i == n)
				out[n++] = dev;
		}
		close(fd);
	}
	closedir(dir);
	return n;
}

/*
 * start
 *		The page-cache object first; then the kprobe object on the same kio
 *		map.  The state says which parts run.
 */
static int
start(pset_inst *in, const pset_ctx *ctx)
{
	struct kernel_vfs_bpf *tp;
	struct kernel_vfs_kprobe_bpf *kp;
	kset	   *ks;
	kset_attach a;
	kset_attach b;
	char		kreason[512];
	long		page;
	int			err;

	ks = kset_new(in, &desc);
	if (ks == NULL)
		return -1;
	tp = kernel_vfs_bpf__open();
	if (tp == NULL)
	{
		pset_set_status(in, PGT_PROBE_UNAVAILABLE, MECH, "BPF open failed");
		return 0;
	}
	tp->rodata->pgt_stream = ctx->stream;
	page = sysconf(_SC_PAGESIZE);
	tp->rodata->page_size = page > 0 ? (uint32_t) page : 4096;
	tp->rodata->nbdevs = block_devices(tp->rodata->bdevs,
									   sizeof(tp->rodata->bdevs) / sizeof(tp->rodata->bdevs[0]));
	tp->rodata->nhugetlb_devs =
		hugetlb_devices(tp->rodata->hugetlb_devs,
						sizeof(tp->rodata->hugetlb_devs) / sizeof(tp->rodata->hugetlb_devs[0]));
	(void) kset_load_attach(in, ctx, tp->obj, tp, destroy_tp, &a);

	/* kprobes: tried everywhere, so the reason is the kernel's own answer */
	memset(&b, 0, sizeof(b));
	kp = kernel_vfs_kprobe_bpf__open();
	if (kp == NULL)
		snprintf(kreason, sizeof(kreason), "kprobe object did not open");
	else if (ks->kio_fd >= 0 && (err = bpf_map__reuse_fd(kp->maps.kio, ks->kio_fd)) < 0)
	{
		/* with a map of its own its rows would be neither copied nor published */
		snprintf(kreason, sizeof(kreason), "vfs kprobes not loaded: cannot share the I/O map: %s",
				 strerror(-err));
		kernel_vfs_kprobe_bpf__destroy(kp);
	}
	else
	{
		kp->rodata->pgt_stream = ctx->stream;
		/* without a kprobe PMU this fails by design: the status says so */
		bpf_probes_libbpf_quiet(!ctx->kprobes);
		(void) kset_load_attach(in, ctx, kp->obj, kp, destroy_kp, &b);
		bpf_probes_libbpf_quiet(0);
		if (b.load_err < 0 || b.attached == 0)
			snprintf(kreason, sizeof(kreason), "vfs_read/write/fsync kprobes unavailable: %s (attach: %s)",
					 ctx->kprobes ? "attach failed" : ctx->kprobes_reason, b.first_error);
		else if (b.failed > 0)
			snprintf(kreason, sizeof(kreason), "kprobes %s did not attach: %s",
					 b.failed_names, b.first_error);
		else
			kreason[0] = '\0';
	}

	if (a.load_err < 0 || a.attached == 0)
		pset_set_status(in, kreason[0] ? PGT_PROBE_UNAVAILABLE : PGT_PROBE_DEGRADED, MECH,
						"page-cache tracepoint: %s; %s", a.first_error,
						kreason[0] ? kreason : "kprobes attached");
	else if (kreason[0])
		pset_set_status(in, PGT_PROBE_DEGRADED, MECH,
						"page-cache misses only; %s", kreason);
	else
		pset_set_status(in, PGT_PROBE_AVAILABLE, MECH,
						"page-cache misses and vfs_read/vfs_write/vfs_fsync kprobes");
	if (kernel_btf_has_member("trace_event_raw_mm_filemap_op_page_cache", "order") == 0)
		kset_status_append(in, "a miss counts one page (this kernel's tracepoint has no folio "
						   "order): low where a file system caches large folios (XFS)");
	return 0;
}

/*
 * The shared callbacks, as every kernel set has them: among them hold
 * (--kernel-sets escalated), which a list of its own here once left out.
 */
KSET_PROBE_SET(vfs_set, "vfs",
			   "page-cache misses per backend; vfs_read/write/fsync via kprobes where available",
			   PGT_SET_VFS, 20, start);
