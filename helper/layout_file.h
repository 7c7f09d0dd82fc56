/*
 * helper/layout_file.h
 *	  Strict parser and safe loader of the extension's layout file
 *	  (<PGDATA>/pg_tracer.layout, format in common/pgt_layout.h).
 */
#ifndef PGT_HELPER_LAYOUT_FILE_H
#define PGT_HELPER_LAYOUT_FILE_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "pgt_layout.h"

extern int	layout_parse(const char *buf, size_t len, pgt_layout *out,
						 char *err, size_t errlen);
extern void layout_free(pgt_layout *layout);
extern int	layout_load(const char *path, uid_t owner, pgt_layout *out,
						struct stat *st_out, char *err, size_t errlen);

#endif							/* PGT_HELPER_LAYOUT_FILE_H */
