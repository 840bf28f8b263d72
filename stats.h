/*
 * stats.h: the `stats` output (stats.c): the general listing, the
 * settings, stats reset and the per-key-prefix counters of `stats
 * detail`.  The counters it prints are daemon_stats.h's; the ADD_STAT
 * callback type and append_stat are stat_line.h's.
 */
#ifndef STATS_H
#define STATS_H

#include "clock.h"
#include "daemon_stats.h"
#include "stat_counter.h"
#include "stat_line.h"
#include "storage/storage.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- stats output (stats.c) ---- */
/* ADD_STAT callback writing "STAT k v\r\n" (or "END\r\n" for klen 0) to c */
void append_ascii_stats(const char *key, uint16_t klen, const char *val,
                        uint32_t vlen, const void *cookie);
void server_stats(ADD_STAT add_stats, void *c);
void process_stat_settings(ADD_STAT add_stats, void *c);
void stats_reset(void);
/* per-key-prefix stats (stats detail) */
void stats_prefix_record_get(const char *key, size_t nkey, bool is_hit);
void stats_prefix_record_delete(const char *key, size_t nkey);
void stats_prefix_record_set(const char *key, size_t nkey);
char *stats_prefix_dump(int *length);
void stats_prefix_clear(void);

#endif
