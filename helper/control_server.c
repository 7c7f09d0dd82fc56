/*
 * helper/control_server.c
 *	  A cluster's control socket: a SOCK_STREAM unix socket served from
 *	  the daemon's epoll loop, one request line and one response line per
 *	  connection (grammar and verbs in common/pgt_protocol.h).
 *
 * Defences, because any local process may try to connect:
 *	  - the socket file is owned by the cluster owner with mode 0600, and
 *		SO_PEERCRED is checked on every connection (uid 0 or the owner):
 *		anyone else gets "ERR denied" to their request line, whatever it is;
 *	  - every socket is non-blocking; a request is read into a fixed
 *		PGT_PROTO_MAX_REQUEST buffer; a client that does not complete its
 *		line within PGT_PROTO_TIMEOUT_MS is answered and dropped;
 *	  - requests that change something (PROBERESET, ESCALATE, DEESCALATE,
 *		EXACTRESET) must come from root or from one of the cluster's own
 *		processes (the postmaster or a child of it): the owner's uid alone
 *		does not do, since other clusters may run under the same uid
 *		(containers without user namespaces) and must not reset this one's
 *		tables or spend its share of the escalation budget.  While the
 *		cluster is detached (or its attached postmaster has exited unseen)
 *		there is no process of it to be: each changing verb then has an
 *		answer that changes nothing of another party's (escalation refused,
 *		nothing reset, a DEESCALATE that ends no anomaly window);
 *	  - a request whose client has closed its socket before it was read
 *		(it gave up waiting) is dropped, not carried out;
 *	  - at most CTL_MAX_CONNS connections are open per cluster; further
 *		ones wait in the listen backlog, the listening socket out of the
 *		event loop until a slot frees.  When accept() runs out of
 *		descriptors the same pause applies, retried at every sweep, so
 *		the loop never spins on a connection it cannot take;
 *	  - the response is written once, without waiting: a client that does
 *		not read it loses it, the loop never blocks.
 */
#include "control_server.h"

#include "escalation.h"
#include "log.h"
#include "procfs.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define ACCEPTS_PER_WAKEUP	32

/*
 * control_now_ms
 *		CLOCK_MONOTONIC in milliseconds.
 */
int64_t
control_now_ms(void)
{
	return procfs_monotonic_us() / 1000;
}

/*
 * respond
 *		snprintf a response line "PGT/1 <fmt>\n" into out; returns its
 *		length (truncated responses still end in LF).
 */
static int
respond(char *out, size_t outlen, const char *fmt, ...)
{
	va_list		ap;
	int			n;
	int			m;

	n = snprintf(out, outlen, "%s ", PGT_PROTO_TAG);
	va_start(ap, fmt);
	m = vsnprintf(out + n, outlen - (size_t) n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t) n > outlen - 2)
		n = (int) outlen - 2;
	out[n++] = '\n';
	out[n] = '\0';
	return n;
}

/*
 * verb_changes_state
 *		Whether verb changes the helper's state (tables reset, a window
 *		opened or closed): such requests are taken from root and from the
 *		cluster's own processes only.
 */
static int
verb_changes_state(const char *verb)
{
	return strcmp(verb, "PROBERESET") == 0 || strcmp(verb, "ESCALATE") == 0 ||
		strcmp(verb, "DEESCALATE") == 0 || strcmp(verb, "EXACTRESET") == 0;
}

/*
 * control_peer_member
 *		Whether a peer (uid and pid as SO_PEERCRED gives them, in the
 *		helper's pid namespace) is root, or the postmaster whose host pid
 *		is pm_host_pid, or a child of it.  0 when the cluster is not
 *		attached (pm_host_pid 0) or the peer's /proc entry is gone.
 */
int
control_peer_member(uid_t uid, pid_t pid, uint32_t pm_host_pid)
{
	proc_stat	st;

	if (uid == 0)
		return 1;
	if (pm_host_pid == 0 || pid <= 0)
		return 0;
	if ((uint32_t) pid == pm_host_pid)
		return 1;
	return procfs_read_stat(pid, &st) == 0 && (uint32_t) st.ppid == pm_host_pid;
}

/*
 * control_respond
 *		The response to one request line (req, len bytes including its LF)
 *		from an authorized peer.  Pure: the caller supplies the state.
 *		Returns the response length written into out (<= outlen - 1).
 */
int
control_respond(const char *req, size_t len, const control_info *info,
				char *out, size_t outlen)
{
	pgt_request r;
	char		err[128];

	if (outlen > PGT_PROTO_MAX_RESPONSE + 1)
		outlen = PGT_PROTO_MAX_RESPONSE + 1;
	if (pgt_parse_request(req, len, &r, err, sizeof(err)) < 0)
		return respond(out, outlen, "ERR bad-request %s", err);
	/*
	 * Membership is checked against an attached postmaster only.  While the
	 * cluster is detached (its postmaster just restarted, say) no peer but
	 * root is a member, yet every state-changing verb then has a harmless
	 * answer of its own (ESCALATE and PROBERESET: unavailable, DEESCALATE:
	 * closed=0, EXACTRESET: reset=0), which the SQL functions document.
	 */
	if (!info->peer_member && info->attached && verb_changes_state(r.verb))
		return respond(out, outlen, "ERR denied pid %d is not a process of this cluster "
					   "(%s takes root or the cluster's own processes)",
					   (int) info->peer_pid, r.verb);
	if (strcmp(r.verb, "PING") == 0)
	{
		if (r.nargs != 0)
			return respond(out, outlen, "ERR bad-argument PING takes no arguments");
		return respond(out, outlen, "OK pong version=%s generation=%llu pid=%u",
					   info->version, (unsigned long long) info->generation,
					   info->writer_pid);
	}
	if (strcmp(r.verb, "STATUS") == 0)
	{
		if (r.nargs != 0)
			return respond(out, outlen, "ERR bad-argument STATUS takes no arguments");
		return respond(out, outlen, "OK attached=%d postmaster=%u backends=%u generation=%llu",
					   info->attached ? 1 : 0, info->postmaster_pid, info->backends,
					   (unsigned long long) info->generation);
	}
	if (strcmp(r.verb, "PROBERESET") == 0)
	{
		size_t		rows;
		int			nsets = 0;

		if (r.nargs != 0)
			return respond(out, outlen, "ERR bad-argument PROBERESET takes no arguments");
		if (!info->attached || info->reset == NULL)
			return respond(out, outlen, "ERR unavailable the cluster is not attached");
		rows = info->reset(info->reset_arg, &nsets);
		return respond(out, outlen, "OK sets=%d rows=%zu", nsets, rows);
	}
	{
		/* ESCALATE, DEESCALATE, BUDGET (helper/escalation.c) */
		char		text[PGT_PROTO_MAX_RESPONSE - 8];

		esc_party	party = {info->cluster_dev, info->cluster_ino};

		if (escalation_respond(&r, info->attached ? info->postmaster_host_pid : 0, party,
							   escalation_now_us(), text, sizeof(text)) >= 0)
			return respond(out, outlen, "%s", text);
	}
	return respond(out, outlen, "ERR unknown-verb %s", r.verb);
}

/*
 * control_server_set_owner
 *		The data directory changed owner: only the new owner's uid (and
 *		root) is answered from now on, on connections open already too, and
 *		the socket file is given to it.
 *		0, or -1 (errno) when the file could not be given: the new owner
 *		cannot connect then, the old one is refused all the same.
 */
int
control_server_set_owner(control_server *s, uid_t uid, gid_t gid)
{
	int			i;

	if (s->listen_fd < 0)
		return -1;
	/* the old owner is refused from now on, even if the chown fails */
	s->owner_uid = uid;
	for (i = 0; i < CTL_MAX_CONNS; i++)	/* and on the connections it has open */
		if (s->conns[i].fd >= 0 && s->conns[i].peer_uid != 0 && s->conns[i].peer_uid != uid)
			s->conns[i].denied = 1;
	return lchown(s->path, uid, gid);
}

/*
 * listen_pause
 *		Take the listening socket out of the event loop: its pending
 *		connections wait in the backlog until listen_resume.
 */
static void
listen_pause(control_server *s)
{
	if (s->paused || s->listen_fd < 0)
		return;
	if (epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->listen_fd, NULL) < 0)
		log_debug("control: epoll del of %s failed: %s", s->path, strerror(errno));
	s->paused = 1;
}

/*
 * listen_resume
 *		Put a paused listening socket back into the event loop (its backlog
 *		wakes it at once, level-triggered).
 */
static void
listen_resume(control_server *s)
{
	struct epoll_event ev;

	if (!s->paused || s->listen_fd < 0)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = &s->listen_ev;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->listen_fd, &ev) < 0)
	{
		log_warn("control: epoll add of %s failed: %s", s->path, strerror(errno));
		return;
	}
	s->paused = 0;
}

/*
 * send_and_close
 *		Write msg once without blocking, then close fd.
 */
static void
send_and_close(int fd, const char *msg, size_t len)
{
	ssize_t		w = send(fd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (w < 0 || (size_t) w < len)
		log_debug("control: response not fully written (%s)",
				  w < 0 ? strerror(errno) : "short write");
	if (close(fd) < 0)
		log_debug("control: close failed: %s", strerror(errno));
}

/*
 * finish_conn
 *		Send the response of slot c (if any) and free the slot.
 */
static void
finish_conn(control_server *s, ctl_conn *c, const char *msg, size_t len)
{
	if (epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL) < 0)
		log_debug("control: epoll del failed: %s", strerror(errno));
	if (msg != NULL)
		send_and_close(c->fd, msg, len);
	else if (close(c->fd) < 0)
		log_debug("control: close failed: %s", strerror(errno));
	c->fd = -1;
	c->len = 0;
	if (!s->fd_short)
		listen_resume(s);		/* a slot is free again */
}

/*
 * remove_stale_socket
 *		Make way for a socket at path: unlink a socket left there, refuse
 *		any other kind of file.  Returns 0 or -1 with err set.
 */
static int
remove_stale_socket(const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(path, &st) < 0)
	{
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISSOCK(st.st_mode))
	{
		snprintf(err, errlen, "%s exists and is not a socket: not replacing it", path);
		return -1;
	}
	if (unlink(path) < 0)
	{
		snprintf(err, errlen, "cannot remove stale socket %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * bind_private
 *		Bind s->listen_fd at path with mode 0600: the umask in force at
 *		bind() sets it, so no other user ever finds it open.  Returns the
 *		result of bind().
 */
static int
bind_private(control_server *s, const char *path)
{
	struct sockaddr_un addr;
	mode_t		old_umask;
	int			rc;

	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	memcpy(addr.sun_path, path, strlen(path) + 1);
	old_umask = umask(0177);
	rc = bind(s->listen_fd, (struct sockaddr *) &addr, sizeof(addr));
	umask(old_umask);
	return rc;
}

/*
 * watch_listen
 *		Add the listening socket to the event loop.  Returns 0 or -1.
 */
static int
watch_listen(control_server *s)
{
	s->listen_ev.kind = EV_CTL_LISTEN;
	s->listen_ev.owner = s;
	s->listen_ev.index = -1;
	s->paused = 1;
	listen_resume(s);
	return s->paused ? -1 : 0;
}

/*
 * control_server_open
 *		Bind the socket at path (replacing a stale socket, never another
 *		kind of file), give it to uid:gid with mode 0600, listen, and add it
 *		to epfd.  The mode comes from the umask in force at bind(), not from
 *		a chmod by path afterwards.  Returns 0 or -1 with err set.
 */
int
control_server_open(control_server *s, const char *path, uid_t uid, gid_t gid,
					int epfd, control_info_fn fn, void *arg,
					char *err, size_t errlen)
{
	struct sockaddr_un addr;
	int			i;

	memset(s, 0, sizeof(*s));
	s->listen_fd = -1;
	s->epfd = epfd;
	s->owner_uid = uid;
	s->info_fn = fn;
	s->info_arg = arg;
	for (i = 0; i < CTL_MAX_CONNS; i++)
		s->conns[i].fd = -1;
	if (strlen(path) >= sizeof(addr.sun_path) || strlen(path) >= sizeof(s->path))
	{
		snprintf(err, errlen, "socket path %s is too long for a unix socket", path);
		return -1;
	}
	if (remove_stale_socket(path, err, errlen) < 0)
		return -1;
	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0)
	{
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (bind_private(s, path) < 0)
	{
		snprintf(err, errlen, "cannot bind %s: %s", path, strerror(errno));
		goto fail;
	}
	snprintf(s->path, sizeof(s->path), "%s", path);
	/* lchown never follows a symlink swapped in since */
	if (lchown(path, uid, gid) < 0)
	{
		snprintf(err, errlen, "cannot give %s to %d:%d: %s", path,
				 (int) uid, (int) gid, strerror(errno));
		goto fail;
	}
	if (listen(s->listen_fd, 64) < 0)
	{
		snprintf(err, errlen, "listen on %s: %s", path, strerror(errno));
		goto fail;
	}
	if (watch_listen(s) < 0)
	{
		snprintf(err, errlen, "epoll add of %s: %s", path, strerror(errno));
		goto fail;
	}
	return 0;

fail:
	close(s->listen_fd);
	s->listen_fd = -1;
	if (s->path[0] != '\0' && unlink(s->path) < 0)
		log_warn("cannot remove %s: %s", s->path, strerror(errno));
	s->path[0] = '\0';
	return -1;
}

/*
 * free_slot
 *		Index of a free connection slot, or -1.
 */
static int
free_slot(const control_server *s)
{
	int			i;

	for (i = 0; i < CTL_MAX_CONNS; i++)
		if (s->conns[i].fd < 0)
			return i;
	return -1;
}

/*
 * accept_failed
 *		accept() failed with errno: nothing pending (EAGAIN), or no
 *		descriptor or memory for it.  In the latter case the connection
 *		stays in the backlog and would wake the loop at once, again and
 *		again: the listening socket pauses until the next sweep, and the
 *		shortage is logged once.
 */
static void
accept_failed(control_server *s)
{
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
		errno == ECONNABORTED)
		return;
	if (!s->fd_short)
		log_warn("control: accept on %s: %s (the socket pauses, tried again at each sweep)",
				 s->path, strerror(errno));
	s->fd_short = 1;
	listen_pause(s);
}

/*
 * peer_is_member
 *		Whether the peer of cred may change state (verb_changes_state):
 *		root, or a process of the cluster the socket serves.
 */
static int
peer_is_member(control_server *s, const struct ucred *cred)
{
	control_info info;

	if (cred->uid == 0)
		return 1;
	memset(&info, 0, sizeof(info));
	if (s->info_fn != NULL)
		s->info_fn(s->info_arg, &info);
	return control_peer_member(cred->uid, cred->pid, info.postmaster_host_pid);
}

/*
 * accept_one
 *		Take one pending connection into a free slot and check its peer.
 *		Returns 0 when one was taken, -1 when none was pending or no slot
 *		is free (the socket then pauses until finish_conn frees one).
 */
static int
accept_one(control_server *s)
{
	struct epoll_event ev;
	struct ucred cred;
	socklen_t	clen = sizeof(cred);
	ctl_conn   *c;
	int			i = free_slot(s);
	int			fd;

	if (i < 0)
	{
		listen_pause(s);
		return -1;
	}
	fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
	{
		accept_failed(s);
		return -1;
	}
	if (s->fd_short)
		log_info("control: accepting on %s again", s->path);
	s->fd_short = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0)
	{
		log_warn("control: SO_PEERCRED: %s", strerror(errno));
		close(fd);
		return 0;
	}
	c = &s->conns[i];
	c->fd = fd;
	c->len = 0;
	c->peer_uid = cred.uid;
	c->peer_pid = cred.pid;
	c->denied = cred.uid != 0 && cred.uid != s->owner_uid;
	c->member = !c->denied && peer_is_member(s, &cred);
	if (c->denied)
	{
		s->refused++;
		log_info("control: denied pid %d uid %d on %s", (int) cred.pid,
				 (int) cred.uid, s->path);
	}
	c->deadline_ms = control_now_ms() + PGT_PROTO_TIMEOUT_MS;
	c->ev.kind = EV_CTL_CONN;
	c->ev.owner = s;
	c->ev.index = i;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | EPOLLRDHUP;
	ev.data.ptr = &c->ev;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
	{
		log_warn("control: epoll add: %s", strerror(errno));
		close(fd);
		c->fd = -1;
	}
	return 0;
}

/*
 * control_server_on_listen
 *		The listening socket is readable: accept a bounded number of
 *		connections (the rest wait for the next wakeup).
 */
void
control_server_on_listen(control_server *s)
{
	int			i;

	for (i = 0; i < ACCEPTS_PER_WAKEUP; i++)
		if (accept_one(s) < 0)
			break;
}

/*
 * postmaster_gone
 *		Whether the postmaster info is attached to no longer runs: no such
 *		process, a zombie, or another process under its pid.
 */
static int
postmaster_gone(const control_info *info)
{
	proc_stat	st;

	return procfs_read_stat((pid_t) info->postmaster_host_pid, &st) < 0 ||
		st.state == 'Z' || st.starttime != info->postmaster_start;
}

/*
 * peer_gone
 *		Whether the client has closed its socket.  A client that stopped
 *		waiting (its 2 s deadline, a query cancel) closes at once, while its
 *		request may still sit unread.  A unix stream socket reports POLLHUP
 *		only when both directions are shut, so a client that merely shut
 *		its writing side after the request (socat does) still gets its
 *		answer.
 */
static int
peer_gone(int fd)
{
	struct pollfd p = {.fd = fd,.events = POLLIN};
	int			r;

	do
		r = poll(&p, 1, 0);
	while (r < 0 && errno == EINTR);
	return r > 0 && (p.revents & (POLLHUP | POLLERR)) != 0;
}

/*
 * control_server_on_conn
 *		A client socket is readable (or hung up): read what is there; once
 *		the line is complete, answer and close.
 */
void
control_server_on_conn(control_server *s, int index, uint32_t events)
{
	ctl_conn   *c;
	char		out[PGT_PROTO_MAX_RESPONSE + 1];
	control_info info;
	char	   *nl;
	ssize_t		r;
	int			n;

	if (index < 0 || index >= CTL_MAX_CONNS)
		return;
	c = &s->conns[index];
	if (c->fd < 0)
		return;					/* closed earlier in this batch */
	for (;;)
	{
		if (c->len == sizeof(c->buf))
		{
			n = respond(out, sizeof(out), "ERR bad-request request longer than %d bytes",
						PGT_PROTO_MAX_REQUEST);
			finish_conn(s, c, out, (size_t) n);
			return;
		}
		r = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
		if (r < 0)
		{
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;			/* wait for more */
			finish_conn(s, c, NULL, 0);
			return;
		}
		if (r == 0)
		{
			/* EOF before a complete line */
			n = respond(out, sizeof(out), "ERR bad-request connection closed before LF");
			finish_conn(s, c, out, (size_t) n);
			return;
		}
		c->len += (size_t) r;
		nl = memchr(c->buf, '\n', c->len);
		if (nl != NULL)
			break;
	}
	if ((size_t) (nl - c->buf) + 1 != c->len)
	{
		n = respond(out, sizeof(out), "ERR bad-request data after the request line");
		finish_conn(s, c, out, (size_t) n);
		return;
	}
	if (c->denied)
	{
		/* answered only now, so that the client reads the answer */
		n = respond(out, sizeof(out), "ERR denied uid %d is neither root nor the cluster owner",
					(int) c->peer_uid);
		finish_conn(s, c, out, (size_t) n);
		return;
	}
	if (peer_gone(c->fd))
	{
		/* the client gave up (timeout, cancel) before we read it: no one to act for */
		s->abandoned++;
		log_info("control: \"%.*s\" from pid %d dropped: the client closed before it "
				 "was read", (int) (c->len - 1), c->buf, (int) c->peer_pid);
		finish_conn(s, c, NULL, 0);
		return;
	}
	memset(&info, 0, sizeof(info));
	info.version = "?";
	if (s->info_fn != NULL)
		s->info_fn(s->info_arg, &info);
	/* a peer that connected while the cluster was detached: look again */
	info.peer_member = c->member ||
		control_peer_member(c->peer_uid, c->peer_pid, info.postmaster_host_pid);
	if (!info.peer_member && info.attached && postmaster_gone(&info))
	{
		/*
		 * The postmaster the cluster is attached to has exited and the
		 * discovery tick has not seen it yet: its successor's backends are
		 * no children of it.  Answer as a detached cluster does.
		 */
		info.attached = 0;
		info.postmaster_pid = info.postmaster_host_pid = 0;
	}
	info.peer_pid = (int32_t) c->peer_pid;
	n = control_respond(c->buf, c->len, &info, out, sizeof(out));
	s->served++;
	log_debug("control: %.*s -> %.*s", (int) (c->len - 1), c->buf, n - 1, out);
	finish_conn(s, c, out, (size_t) n);
}

/*
 * control_server_sweep
 *		Answer and drop every client past its deadline; try a socket
 *		paused for want of descriptors again.
 */
void
control_server_sweep(control_server *s, int64_t now_ms)
{
	char		out[PGT_PROTO_MAX_RESPONSE + 1];
	int			i;
	int			n;

	for (i = 0; i < CTL_MAX_CONNS; i++)
	{
		ctl_conn   *c = &s->conns[i];

		if (c->fd < 0 || now_ms < c->deadline_ms)
			continue;
		if (c->denied)
			n = respond(out, sizeof(out), "ERR denied uid %d is neither root nor the cluster owner",
						(int) c->peer_uid);
		else
			n = respond(out, sizeof(out), "ERR bad-request no request line within %d ms",
						PGT_PROTO_TIMEOUT_MS);
		finish_conn(s, c, out, (size_t) n);
	}
	if (s->paused && free_slot(s) >= 0)
		listen_resume(s);
}

/*
 * control_server_close
 *		Close every connection and the listening socket; remove the socket
 *		file.
 */
void
control_server_close(control_server *s)
{
	int			i;

	for (i = 0; i < CTL_MAX_CONNS; i++)
		if (s->conns[i].fd >= 0)
			finish_conn(s, &s->conns[i], NULL, 0);
	if (s->listen_fd >= 0)
	{
		if (!s->paused && epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->listen_fd, NULL) < 0)
			log_debug("control: epoll del failed: %s", strerror(errno));
		close(s->listen_fd);
		s->listen_fd = -1;
	}
	if (s->path[0] != '\0' && unlink(s->path) < 0 && errno != ENOENT)
		log_warn("cannot remove %s: %s", s->path, strerror(errno));
	s->path[0] = '\0';
}
