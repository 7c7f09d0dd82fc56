/*
 * helper/evhandle.h
 *	  The tag every file descriptor carries in the daemon's epoll set, so
 *	  the loop knows which object an event belongs to.
 */
#ifndef PGT_HELPER_EVHANDLE_H
#define PGT_HELPER_EVHANDLE_H

typedef enum ev_kind
{
	EV_SIGNAL = 1,
	EV_PUBLISH_TIMER,
	EV_DISCOVERY_TIMER,
	EV_CTL_LISTEN,
	EV_CTL_CONN
} ev_kind;

typedef struct ev_handle
{
	ev_kind		kind;
	void	   *owner;			/* the object the fd belongs to */
	int			index;			/* slot within owner, when it has several */
} ev_handle;

#endif							/* PGT_HELPER_EVHANDLE_H */
