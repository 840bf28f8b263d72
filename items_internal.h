/*
 * items_internal.h: what items.c shares with items_stats.c and nothing
 * else: the per-class counters (relaxed atomics, no lock), the totals and
 * the two start-up flags, all owned by items.c.
 */
#ifndef ITEMS_INTERNAL_H
#define ITEMS_INTERNAL_H

#include "slab_class.h"

typedef _Atomic uint64_t counter_t;

struct class_counters {
    counter_t curr_items;        /* both zones */
    counter_t curr_bytes;        /* ntotal of linked items (mem_requested) */
    counter_t evicted;
    counter_t evicted_nonzero;
    counter_t evicted_time;      /* idle seconds of the last victim */
    counter_t outofmemory;
    counter_t reclaimed;
    counter_t expired_unfetched;
    counter_t evicted_unfetched;
    counter_t evicted_active;
    counter_t crawler_reclaimed;
    counter_t crawler_items_checked;
    counter_t direct_reclaims;
    /* tiers */
    counter_t n_items;           /* of curr_items, those in the N-zone */
    counter_t promotions;
    counter_t demotions;
    counter_t d_evictions;
    counter_t n_evictions;
    counter_t n_fallbacks;       /* N-bound values the N-zone could not take */
    counter_t page_demotions;    /* of demotions, those of page moves */
    counter_t page_evictions;    /* live items page moves could not demote */
};

extern struct class_counters ccount[MAX_NUMBER_OF_SLAB_CLASSES];
extern counter_t total_items;
/* True when the N-zone is in use (tier_enabled() and a zone was carved);
 * set once by storage_init. */
extern bool tiering;
/* tiering with tier_policy=duallru; set once by storage_init */
extern bool duallru;

static inline void ctr_add(counter_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static inline void ctr_sub(counter_t *c, uint64_t n)
{
    atomic_fetch_sub_explicit(c, n, memory_order_relaxed);
}

static inline uint64_t ctr_get(counter_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* items_stats.c: reset of the tier counters' baselines (stats reset) */
void tier_stats_reset(void);

#endif
