/*
 * items_stats.h: the item engine's parts of the `stats` listing, of
 * `stats tier` and of `stats reset` (items_stats.c).  storage.c puts
 * them together with the crawler's and the LRU maintainer's lines
 * (storage_stats_general and item_stats_reset, items.h) and with the
 * restart code's (tier_stats), so that the engine lists nothing of the
 * threads and the restart code above it.  Relaxed reads of counters; no lock held by callers.
 */
#ifndef ITEMS_STATS_H
#define ITEMS_STATS_H

#include "stat_line.h"

#include <stdint.h>

/* `stats` from hash_power_level to slabs_moved: the index, the page
 * mover */
void items_stats_index_slabs(ADD_STAT add_stats, void *c);
/* `stats` from malloc_fails (which adds conn_malloc_fails, the daemon's
 * own) on: the logger, the items, the queues, the memory, the tiers */
void items_stats_general(ADD_STAT add_stats, void *c,
                         uint64_t conn_malloc_fails);
/* `stats tier` but its restart_* lines (items_restart.c's, which
 * storage.c adds: tier_stats) */
void items_stats_tier(ADD_STAT add_stats, void *c);
/* `stats reset` of the engine's counters, the workers' and the tier
 * counters' baselines */
void items_stats_reset(void);

#endif
