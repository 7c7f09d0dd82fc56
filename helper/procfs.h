/*
 * helper/procfs.h
 *	  What the helper reads from /proc about one process: stat fields,
 *	  process title (role classification), namespace pid, start time, its
 *	  memory, and how it maps an address.
 */
#ifndef PGT_HELPER_PROCFS_H
#define PGT_HELPER_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROCFS_COMM_LEN		64
#define PROCFS_CMDLINE_MAX	4096

typedef struct proc_stat
{
	int32_t		pid;
	char		comm[PROCFS_COMM_LEN];
	char		state;
	int32_t		ppid;
	uint64_t	starttime;		/* clock ticks after boot (field 22) */
} proc_stat;

/*
 * How a process maps an address (procfs_map_kind_at).  What a child forked
 * from it sees at that address is the same where the mapping is shared or
 * a file's read-only pages; in a private writable or anonymous mapping the
 * two may hold different things.
 */
typedef enum procfs_map_kind
{
	PROCFS_MAP_NONE = 0,		/* not mapped, or the maps unreadable */
	PROCFS_MAP_PRIVATE,			/* anonymous or writable, not shared */
	PROCFS_MAP_SHARED,			/* shared memory, a file mapped shared */
	PROCFS_MAP_FILE_RO			/* a file's read-only pages: code, constants */
} procfs_map_kind;

/*
 * One piece of a gathered read of another process's memory
 * (procfs_mem_gather): len bytes at addr into buf; ok says whether it was
 * read in full.
 */
typedef struct procfs_span
{
	uint64_t	addr;
	void	   *buf;
	size_t		len;
	bool		ok;
} procfs_span;

/* Pure parsers (unit-tested). */
extern int	procfs_parse_stat(const char *buf, size_t len, proc_stat *out);
extern uint32_t procfs_classify_title(const char *buf, size_t len);
extern uint32_t procfs_parallel_leader(const char *buf, size_t len);
extern bool procfs_title_is(const char *buf, size_t len, const char *what);
extern int	procfs_parse_nspid(const char *buf, size_t len, int32_t *inner);
extern int	procfs_parse_uids(const char *buf, size_t len, uint32_t uids[4]);
extern int64_t procfs_ticks_to_realtime_us(uint64_t ticks, long hz,
										   int64_t boot_to_real_us);
extern int	procfs_parse_map_line(const char *line, uint64_t addr, procfs_map_kind *kind);

/* Readers of /proc/<pid>/... */
extern int	procfs_read_stat(pid_t pid, proc_stat *out);
extern int	procfs_read_cmdline(pid_t pid, char *buf, size_t buflen, size_t *len);
extern int	procfs_read_nspid(pid_t pid, int32_t *inner);
extern int	procfs_is_postgres(pid_t pid, const proc_stat *st);
extern int	procfs_alive(pid_t pid, uint64_t starttime);
extern int64_t procfs_boot_to_real_us(void);
extern int64_t procfs_start_us(const proc_stat *st);
extern int64_t procfs_realtime_us(void);
extern int64_t procfs_monotonic_us(void);
extern int64_t procfs_boottime_us(void);
extern bool procfs_plain_process(pid_t pid, uid_t owner);
extern ssize_t procfs_mem_pread(pid_t pid, uid_t owner, uint64_t addr, void *buf,
								size_t len);
extern int	procfs_mem_read(pid_t pid, uid_t owner, uint64_t addr, void *buf, size_t len);
extern ssize_t procfs_mem_gather(pid_t pid, uid_t owner, procfs_span *spans, size_t n);
extern procfs_map_kind procfs_map_kind_at(pid_t pid, uint64_t addr);

#endif							/* PGT_HELPER_PROCFS_H */
