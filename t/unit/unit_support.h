/*
 * unit_support.h: fixture for the storage unit tests.
 *
 * Defines what the daemon's network side defines (settings, global
 * stats, stats output helpers) for tests that link the storage code with
 * the server's own clock (clock.c) and item locks (item_locks.c).
 */
#ifndef UNIT_SUPPORT_H
#define UNIT_SUPPORT_H

#include "items.h"
#include "settings.h"

#include <stdint.h>
#include <stdlib.h>

/* memcached 1.6.18's defaults for the settings storage reads, and the
 * clock at 100 (process_started 1000000). */
void unit_settings_defaults(void);
/* (Re)create 2^power item lock stripes (item_locks_init); power must not
 * exceed the index's initial hash power. */
void unit_locks_init(unsigned int power);

/* Open an anonymous N-zone of size bytes as nvm_zone (settings.nvm set
 * accordingly); closes the previous one. */
void unit_nvm_open(size_t size);

/* ADD_STAT collecting "key value\n" lines into a buffer. */
struct stat_capture {
    char buf[65536];
    size_t len;
};
void capture_stat(const char *key, uint16_t klen, const char *val,
                  uint32_t vlen, const void *cookie);
/* The value of stat `key` in a capture, or NULL. */
const char *captured_value(const struct stat_capture *cap, const char *key,
                           char *out, size_t outlen);

/* Stat `name` of a stats list (tier_stats, item_stats...) as a number,
 * UINT64_MAX when absent.  Inline: only the programs that call it link
 * the lists. */
static inline uint64_t unit_stat_u64(void (*list)(ADD_STAT, void *),
                                     const char *name)
{
    static struct stat_capture cap;
    char buf[64];
    cap.len = 0;
    list(capture_stat, &cap);
    const char *v = captured_value(&cap, name, buf, sizeof(buf));
    return v ? strtoull(v, NULL, 10) : UINT64_MAX;
}

/* The same for a `stats tier` line. */
static inline uint64_t unit_tier_stat(const char *name)
{
    return unit_stat_u64(tier_stats, name);
}

#endif
