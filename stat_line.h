/*
 * stat_line.h: how a `stats` listing hands out its lines (stat_line.c),
 * the one thing the storage engine and the daemon's stats output share.
 *
 * A listing calls an ADD_STAT callback once per "name value" line, with
 * the cookie its caller gave; the callback decides where lines go (a
 * connection's reply, stats.c's append_ascii_stats; a test's buffer).  A
 * call with klen and vlen 0 ends the listing.  No locks.
 */
#ifndef STAT_LINE_H
#define STAT_LINE_H

#include <stdint.h>

typedef void (*ADD_STAT)(const char *key, uint16_t klen, const char *val,
                         uint32_t vlen, const void *cookie);

/* One line: name and the printf-formatted value (at most 255 bytes). */
void append_stat(const char *name, ADD_STAT add_stats, void *c,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
