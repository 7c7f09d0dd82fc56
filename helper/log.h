/*
 * helper/log.h
 *	  Leveled logging of the helper to stderr, one line per message with a
 *	  UTC timestamp, the level and the helper's pid.
 */
#ifndef PGT_HELPER_LOG_H
#define PGT_HELPER_LOG_H

#include <stddef.h>

enum log_level
{
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARN = 1,
	LOG_LEVEL_INFO = 2,
	LOG_LEVEL_DEBUG = 3
};

extern void log_set_level(enum log_level level);
extern const char *log_escape(char *out, size_t outlen, const char *in);
extern enum log_level log_get_level(void);
extern int	log_parse_level(const char *name, enum log_level *level);
extern void log_msg(enum log_level level, const char *fmt, ...)
			__attribute__((format(printf, 2, 3)));

#define log_error(...)	log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif							/* PGT_HELPER_LOG_H */
