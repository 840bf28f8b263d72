/*
 * storage_worker.h: what the storage engine knows of a worker thread
 * (storage_worker.c): the counters and gauges its requests change, and
 * the registry storage sums them over.
 *
 * The daemon embeds one struct storage_worker in each worker's descriptor
 * (thread.h) and passes it to the item API (items.h), so that storage
 * never sees the daemon's thread type.  The per-class counters that the
 * protocol layer bumps (hits, sets, cas...) live here too: storage prints
 * them (`stats items`, `stats slabs`) and the tier thread weighs classes
 * by them.
 *
 * Locks: none.  Only the worker writes its counters (STAT_INCR,
 * stat_counter.h); readers sum them.  The in-flight and staging gauges
 * are changed with atomic add/sub, since another thread may release what
 * a worker charged.  Workers register on the main thread before any
 * thread that sums them starts, and stay registered (their descriptors
 * outlive the storage threads), so the registry needs no lock.
 */
#ifndef STORAGE_WORKER_H
#define STORAGE_WORKER_H

#include "slab_class.h"
#include "stat_counter.h"

#include <stdint.h>

/* memcached's LRU segments, in the order `stats items` lists their
 * hits_to_* lines; items_mq.h says which items of ours are in which */
enum lru_segment {
    LRU_HOT,
    LRU_WARM,
    LRU_COLD,
    LRU_TEMP,
    LRU_SEGMENTS
};

/* a class's hits, counted by the protocol layer, which sees the command */
struct slab_stats {
    stat_u64 set_cmds;
    stat_u64 get_hits;
    stat_u64 touch_hits;
    stat_u64 delete_hits;
    stat_u64 cas_hits;
    stat_u64 cas_badval;
    stat_u64 incr_hits;
    stat_u64 decr_hits;
};

/* Made only of stat_u64 fields: summed and reset as an array. */
struct storage_worker_stats {
    /* every storage request, with tiers: the clock of the tier periods
     * (tier_requests_total) */
    stat_u64 tier_requests;
    stat_u64 get_expired;
    stat_u64 get_flushed;
    /* N hits refused because the worker's in-flight budget was spent */
    stat_u64 tier_inflight_refused;
    /* N-bound values refused because its staging budget was spent */
    stat_u64 tier_staging_refused;
    /* requests per class served by each zone (migrate.c) */
    stat_u64 tier_d_hits[MAX_NUMBER_OF_SLAB_CLASSES];
    stat_u64 tier_n_hits[MAX_NUMBER_OF_SLAB_CLASSES];
    /* get hits by class and by the segment the item was in (hits_to_*) */
    stat_u64 lru_hits[MAX_NUMBER_OF_SLAB_CLASSES][LRU_SEGMENTS];
    struct slab_stats slab_stats[MAX_NUMBER_OF_SLAB_CLASSES];
};

struct storage_worker {
    /* the LRU segment its last hit found the item in, before the hit
     * moved it (items.c sets it, the protocol counts it in lru_hits) */
    uint8_t hit_segment;          /* an enum lru_segment */
    unsigned int index;           /* its place in the registry */
    struct storage_worker_stats stats;
    /* bytes of N-zone snapshots that its replies hold now: a gauge, not
     * a counter (stats reset leaves it) */
    _Atomic uint64_t tier_inflight_bytes;
    /* bytes of staging buffers (values bound for the N-zone, being
     * received or stored) that its connections hold: a gauge too */
    _Atomic uint64_t tier_staging_bytes;
};

/* Main thread, before the worker starts and before the storage threads
 * do: w joins the registry and gets its index (0, 1, ... in the order of
 * registration), which the worker gives tier_reassign_thread_worker as
 * its histogram slot. */
void storage_worker_register(struct storage_worker *w);

/* Sums over the registered workers (stats). */
void storage_workers_stats(struct storage_worker_stats *out);
void storage_workers_stats_reset(void);       /* stats reset */
uint64_t storage_workers_inflight_bytes(void);
uint64_t storage_workers_staging_bytes(void);
/* one class's D and N hits (migrate.c's request counts) */
void storage_workers_class_hits(unsigned int clsid, uint64_t *d,
                                uint64_t *n);

/* The clock of the tier periods: decay epochs (migrate.c) and
 * reassignment periods (tier_reassign.c) are measured in storage requests
 * served by all workers (0 before they exist), not seconds.  `stats
 * reset` zeroes the counters, so the sum can go back. */
uint64_t tier_requests_total(void);

#endif
