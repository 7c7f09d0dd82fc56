/*
 * helper/control_server.h
 *	  One cluster's control socket (protocol in common/pgt_protocol.h).
 */
#ifndef PGT_HELPER_CONTROL_SERVER_H
#define PGT_HELPER_CONTROL_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "evhandle.h"
#include "pgt_protocol.h"

#define CTL_MAX_CONNS	16

/* PROBERESET: drop the cluster's probe-set rows; returns rows, *nsets sets */
typedef size_t (*control_reset_fn) (void *arg, int *nsets);

/* What PING and STATUS report, and PROBERESET's hook; filled on demand. */
typedef struct control_info
{
	const char *version;
	uint64_t	generation;
	uint32_t	writer_pid;
	int			attached;
	uint32_t	postmaster_pid;	/* as PostgreSQL knows it (its pid namespace) */
	uint32_t	postmaster_host_pid;	/* 0: escalation refuses (not attached) */
	uint64_t	postmaster_start;	/* its /proc start time (clock ticks) */
	uint64_t	cluster_dev;	/* the data directory: its share of escalation */
	uint64_t	cluster_ino;
	uint32_t	backends;
	int			peer_member;	/* the peer is root or a process of the cluster */
	int32_t		peer_pid;		/* as SO_PEERCRED gave it (the helper's namespace) */
	control_reset_fn reset;		/* NULL: nothing to reset */
	void	   *reset_arg;
} control_info;

typedef void (*control_info_fn) (void *arg, control_info *info);

typedef struct ctl_conn
{
	int			fd;				/* -1 when the slot is free */
	size_t		len;
	int64_t		deadline_ms;	/* CLOCK_MONOTONIC */
	int			denied;			/* peer is neither root nor the owner */
	int			member;			/* peer is root, the postmaster or its child */
	uid_t		peer_uid;
	pid_t		peer_pid;
	ev_handle	ev;
	char		buf[PGT_PROTO_MAX_REQUEST];
} ctl_conn;

typedef struct control_server
{
	int			listen_fd;
	int			epfd;
	char		path[108];
	uid_t		owner_uid;
	ev_handle	listen_ev;
	int			paused;			/* listen_fd is out of the event loop */
	int			fd_short;		/* the last accept ran out of descriptors */
	ctl_conn	conns[CTL_MAX_CONNS];
	control_info_fn info_fn;
	void	   *info_arg;
	uint64_t	served;
	uint64_t	refused;
	uint64_t	abandoned;		/* requests whose client closed before the answer */
} control_server;

extern int	control_respond(const char *req, size_t len, const control_info *info,
							char *out, size_t outlen);
extern int	control_server_open(control_server *s, const char *path, uid_t uid,
								gid_t gid, int epfd, control_info_fn fn, void *arg,
								char *err, size_t errlen);
extern int	control_peer_member(uid_t uid, pid_t pid, uint32_t pm_host_pid);
extern int	control_server_set_owner(control_server *s, uid_t uid, gid_t gid);
extern void control_server_on_listen(control_server *s);
extern void control_server_on_conn(control_server *s, int index, uint32_t events);
extern void control_server_sweep(control_server *s, int64_t now_ms);
extern void control_server_close(control_server *s);
extern int64_t control_now_ms(void);

#endif							/* PGT_HELPER_CONTROL_SERVER_H */
