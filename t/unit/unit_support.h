/*
 * unit_support.h: fixture for the storage unit tests.
 *
 * Defines what memcached.c and thread.c define in the daemon (settings,
 * the clock, striped item locks, global stats, stats output helpers) with
 * real behaviour: item locks are a power-of-two array of real mutexes
 * indexed by hv & (nlocks - 1), exactly the contract thread.c provides.
 */
#ifndef UNIT_SUPPORT_H
#define UNIT_SUPPORT_H

#include "memcached.h"

/* memcached 1.6.18's defaults for the settings storage reads. */
void unit_settings_defaults(void);
/* (Re)create 2^power item lock stripes; power must not exceed the
 * index's initial hash power. */
void unit_locks_init(unsigned int power);
/* When set, item_trylock calls it first, on the calling thread and with
 * no lock of its own held: a test plays what another thread does between
 * a caller's unlocked read and its lock. */
extern void (*unit_trylock_hook)(uint64_t hv);

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

#endif
