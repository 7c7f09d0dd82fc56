/*
 * helper/pm_owner.h
 *	  Which user owns each served cluster, by its postmaster's host pid: the
 *	  uid whose processes the helper may read on the cluster's behalf.
 */
#ifndef PGT_HELPER_PM_OWNER_H
#define PGT_HELPER_PM_OWNER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

extern int	pm_owner_set(uint32_t pm, uid_t uid);
extern void pm_owner_forget(uint32_t pm);
extern bool pm_owner_get(uint32_t pm, uid_t *uid);

#endif							/* PGT_HELPER_PM_OWNER_H */
