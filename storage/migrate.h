/*
 * migrate.h: hotness, decay epochs, promotion queue and per-class
 * migration thresholds (HMCached section 3.3, doc/tiering.md "Hotness and migration").
 *
 * migrate.c owns the bookkeeping and the arithmetic (the part of it every
 * hit runs is inline below, so that a hit does not enter migrate.c); the
 * storage engine (items.c, slabs_tier.c, clock_nvm.c) owns the items and
 * calls in here on the request path, and the tier thread (started by storage_start_threads)
 * calls migrate_tick() to advance epochs, adjust thresholds and drain the
 * promotion queue through the engine's callbacks.
 */
#ifndef MIGRATE_H
#define MIGRATE_H

#include "slab_class.h"
#include "stat_counter.h"
#include "storage_worker.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- counters and decay (pure arithmetic), inline: every hit runs it ----
 * A counter saturates at `max`. */
static inline uint32_t migrate_counter_bump(uint32_t counter, uint32_t max)
{
    return counter >= max ? max : counter + 1;
}

/*
 * The paper's rule, applied at the end of every epoch to every item:
 *
 *     counter = counter >> (idle_periods + 1);  zero once idle_periods = 3
 *
 * where idle_periods counts the epochs in a row, before the one ending,
 * in which the item was not accessed: 0 at the end of the epoch of its last
 * access, 1 at the end of the next one, and so on.  It is applied lazily,
 * from an epoch stamp: an item last accessed in epoch s and looked at in
 * epoch s + k (k = elapsed) has been through k such decays, with
 * idle_periods = 0, 1, ..., k - 1, so
 *
 *     k = 0: counter                        (no epoch ended)
 *     k = 1: counter >> 1
 *     k = 2: counter >> (1 + 2)      = counter >> 3
 *     k = 3: counter >> (1 + 2 + 3)  = counter >> 6
 *     k >= 4: 0                      (the 4th decay sees idle_periods = 3)
 *
 * Shifts compose by adding (floor(floor(c / 2^a) / 2^b) = floor(c / 2^(a+b))),
 * so the shift after k decays is the triangular number k(k + 1) / 2.
 */
#define DECAY_ZERO_AFTER_IDLE 3

static inline uint32_t migrate_decay(uint32_t counter,
                                     uint32_t elapsed_epochs)
{
    if (elapsed_epochs > DECAY_ZERO_AFTER_IDLE) {
        return 0;
    }
    uint32_t shift = elapsed_epochs * (elapsed_epochs + 1) / 2;
    return counter >> shift;
}

/* The current decay epoch (wraps; compare stamps modulo 2^bits); only
 * migrate_tick() and migrate_init() write it. */
extern _Atomic uint32_t migrate_epoch_now;

static inline uint32_t migrate_epoch(void)
{
    return atomic_load_explicit(&migrate_epoch_now, memory_order_acquire);
}

/* ---- Algorithm 1: one class's threshold ---- */
struct threshold_state {
    uint32_t threshold;      /* promote when counter > threshold */
    uint32_t max;            /* 2^Q */
    int last_step;           /* +1, -1 or 0 (no adjustment yet) */
    double last_benefit;     /* benefit of the previous period */
    bool have_last;
};
struct period_counts {
    uint64_t d_requests;     /* C_dreq: requests served by the D-zone */
    uint64_t n_requests;     /* C_nreq: requests served by the N-zone */
    uint64_t migration_cost; /* C_mig: N-zone accesses caused by migration */
    uint64_t promotions;     /* C_N-to-D */
    uint64_t free_d_chunks;  /* DRAM_free at the end of the period */
};
void threshold_init(struct threshold_state *st, uint32_t initial,
                    uint32_t max);
double threshold_benefit(const struct period_counts *pc);
/* Apply Algorithm 1 for one finished period; returns the new threshold. */
uint32_t threshold_step(struct threshold_state *st,
                        const struct period_counts *pc);

/* ---- per-class state used on the request path ---- */
void migrate_init(unsigned int nclasses);
uint32_t migrate_threshold(unsigned int clsid);
/* Count one request that found its key in class clsid (in the D-zone or
 * the N-zone); per-thread, no locks.  A NULL thread (a caller that is not
 * a worker) is not counted: the per-class periods measure client traffic
 * only.  Inline: every hit runs it. */
static inline void migrate_count_request(struct storage_worker *w,
                                         unsigned int clsid, bool in_dram)
{
    if (w == NULL || clsid >= MAX_NUMBER_OF_SLAB_CLASSES) {
        return;
    }
    if (in_dram) {
        STAT_INCR(w->stats.tier_d_hits[clsid]);
    } else {
        STAT_INCR(w->stats.tier_n_hits[clsid]);
    }
}
/* Count a promotion and the N-zone lines it read (C_mig). */
void migrate_count_promotion(unsigned int clsid, uint64_t nvm_lines);

/* ---- promotion queue (tier_promote=async) ----
 * Bounded, multi-producer; a full queue drops the request (counted). */
bool migrate_queue_promotion(uint64_t hv, const char *key, size_t nkey);

/* ---- the tier thread's periodic work ----
 * The engine supplies how to promote a key (takes the item lock itself,
 * re-checks that the item is still in the N-zone and still hot) and how
 * many free D chunks a class has. */
struct migrate_engine {
    bool (*promote)(uint64_t hv, const char *key, size_t nkey);
    uint64_t (*free_d_chunks)(unsigned int clsid);
    void (*decay_walk)(uint32_t epoch);   /* walker: stamps never wrap */
};
void migrate_set_engine(const struct migrate_engine *engine);
/* One round: epoch advance (by total requests), threshold adjustments
 * for classes whose period is over, queue drain.  Returns promotions. */
unsigned int migrate_tick(void);

struct migrate_stats {
    uint64_t decay_epochs;
    uint64_t decay_period;           /* requests, the epoch under way */
    uint64_t promotions;
    uint64_t promotions_queued;
    uint64_t promotions_dropped;     /* queue full */
    uint64_t threshold_adjustments;
};
void migrate_get_stats(struct migrate_stats *out);
struct migrate_class_stats {
    uint32_t threshold;
    uint64_t d_requests;             /* since start */
    uint64_t n_requests;
    uint64_t promotions;
    double last_benefit;
};
void migrate_get_class_stats(unsigned int clsid,
                             struct migrate_class_stats *out);

#endif
