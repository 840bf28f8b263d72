/*
 * policy_hmhc.c: tier_policy=hmhc, HM-HC, the strongest baseline HMCached
 * is measured against (doc/tiering.md "HM-HC"): hmcached's tiering
 * (placement by the key's zone, promotion of N items whose decayed counter
 * passes the class threshold, demotion of D victims, the N-zone's CLOCK)
 * with the D-zone's replacement swapped for hyperbolic caching.
 *
 * An item's priority is d_hits / (now - d_since): the accesses it had
 * since it entered the D-zone over the seconds it has been there (one at
 * least; its own store counts as an access).  To free a D chunk the policy
 * looks at HMHC_SAMPLE items of the class and demotes (or, where the
 * engine would evict, evicts) the one of lowest priority; an expired or
 * flushed item is taken as soon as it is seen.
 *
 * Sampling: the sample is the next HMHC_SAMPLE items of a sweep that walks
 * the class's MQ queues (items_mq.h cursors), each from tail to head, one
 * queue after the other, and starts again at the end.  Random chunks of
 * the class's slab pages would be an unbiased sample, but a chunk taken
 * at random may be free or half written by the thread that allocated it,
 * under no lock this code could take, so even telling a live item from a
 * dead chunk would race; a linked list offers no random access without
 * walking it.  The queues hold exactly the class's live D items and a
 * cursor pins them safely, so the sweep looks at every D item once per
 * pass: on average each item is in a sample with probability
 * HMHC_SAMPLE / (items of the class), as under uniform sampling, but
 * samples of one pass do not overlap and an item waits about a pass
 * between looks.  The MQ queues keep their order and levels as under
 * hmcached; only the victim choice ignores them.
 *
 * Locks: samplers[id].lock guards the class's cursor and where it is.
 * It is taken inside item locks (make_room's caller may hold its own) and
 * outside the MQ class lock (mq_cursor_next); with it held, item locks
 * are only trylocked, as items_mq.c does.  d_hits and d_since are guarded
 * by the item's item lock.  The stats counters are atomics.
 */
#include "config.h"
#include "tier_policy.h"

#include "clock.h"
#include "clock_nvm.h"
#include "hash.h"
#include "item_lock.h"
#include "items_mq.h"
#include "migrate.h"
#include "slab_class.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* Items compared per victim (doc/tiering.md "HM-HC" says why 64). */
#define HMHC_SAMPLE 64

struct sampler {
    pthread_mutex_t lock;
    struct mq_cursor *cursor;    /* NULL until the class first evicts */
    unsigned int level;          /* the queue the cursor walks */
    bool walking;                /* the cursor is in that queue */
};

static struct sampler samplers[MAX_NUMBER_OF_SLAB_CLASSES];

static _Atomic uint64_t stat_sampled;   /* candidates looked at */
static _Atomic uint64_t stat_skipped;   /* lock busy or in use elsewhere */
static _Atomic uint64_t stat_victims;

static void count_stat(_Atomic uint64_t *ctr, uint64_t n)
{
    atomic_fetch_add_explicit(ctr, n, memory_order_relaxed);
}

static bool hot_enough(unsigned int clsid, uint32_t counter)
{
    return counter > migrate_threshold(clsid);
}

static void hmhc_d_entered(item *it)
{
    it->d_hits = 1;
    it->d_since = current_time;
}

static void hmhc_d_accessed(item *it)
{
    if (it->d_hits < UINT16_MAX) {
        it->d_hits++;
    }
}

/* Seconds in the D-zone at now, one at least (a warm restart may leave
 * d_since ahead of the new clock). */
static uint64_t d_age(const item *it, rel_time_t now)
{
    return now > it->d_since ? now - it->d_since : 1;
}

/* a's priority is below b's: hits_a / age_a < hits_b / age_b */
static bool ranks_below(const item *a, const item *b, rel_time_t now)
{
    return (uint64_t)a->d_hits * d_age(b, now)
        < (uint64_t)b->d_hits * d_age(a, now);
}

/* Start-up, before any thread evicts: the MQ queues are new (mq_init),
 * so every sweep starts afresh, its cursor made on the class's first
 * eviction.  The cursors of an earlier engine in the same process (a unit
 * test starting it twice) are dropped, not freed: freeing one would
 * unlink it from queues mq_init has emptied since. */
static void hmhc_init(const struct tier_engine *engine)
{
    for (unsigned int i = 0; i < MAX_NUMBER_OF_SLAB_CLASSES; i++) {
        struct sampler *s = &samplers[i];
        pthread_mutex_init(&s->lock, NULL);
        s->cursor = NULL;
        s->level = 0;
        s->walking = false;
    }
}

/* The sweep's next D item of class clsid, pinned, or NULL once the sweep
 * has passed *ends_left more queue ends (sampler lock held). */
static item *do_next_candidate(struct sampler *s, unsigned int clsid,
                               unsigned int *ends_left)
{
    while (*ends_left > 0) {
        if (!s->walking) {
            mq_cursor_start(s->cursor, clsid, s->level);
            s->walking = true;
        }
        item *it = mq_cursor_next(s->cursor);
        if (it != NULL) {
            return it;
        }
        s->walking = false;     /* the cursor left the queue at its head */
        s->level = (s->level + 1) % mq_queues();
        (*ends_left)--;
    }
    return NULL;
}

/* Lock a pinned candidate; false (pin dropped) when its lock is busy or
 * it is no longer a linked item that only the index and we hold. */
static bool claim(item *it, uint64_t *hv_out)
{
    uint64_t hv = hash_key(ITEM_key(it), it->nkey);
    if (item_trylock(hv) != 0) {
        count_stat(&stat_skipped, 1);
        tier_engine_ops->release(it);
        return false;
    }
    if ((it->it_flags & ITEM_LINKED) == 0
            || atomic_load_explicit(&it->refcount,
                                    memory_order_acquire) > 2) {
        count_stat(&stat_skipped, 1);
        item_unlock(hv);
        tier_engine_ops->release(it);
        return false;
    }
    *hv_out = hv;
    return true;
}

static void release(item *it, uint64_t hv)
{
    item_unlock(hv);
    tier_engine_ops->release(it);
}

/* The lowest-priority acceptable item among the next HMHC_SAMPLE of the
 * sweep, claimed (sampler lock held). */
static item *do_sample_victim(struct sampler *s, unsigned int clsid,
                              bool (*accept)(item *, void *), void *arg,
                              uint64_t *hv_out)
{
    rel_time_t now = current_time;
    item *best = NULL;
    uint64_t best_hv = 0;
    unsigned int looked = 0;
    /* a class of fewer than HMHC_SAMPLE items is looked at about once
     * round, not over and over */
    unsigned int ends_left = mq_queues() + 1;
    item *it;
    while (looked < HMHC_SAMPLE
           && (it = do_next_candidate(s, clsid, &ends_left)) != NULL) {
        looked++;
        if (it == best) {
            tier_engine_ops->release(it);    /* seen again this round: drop the pin */
            continue;
        }
        uint64_t hv;
        if (!claim(it, &hv)) {
            continue;
        }
        if (accept != NULL && !accept(it, arg)) {
            release(it, hv);
            continue;
        }
        bool dead = tier_engine_ops->d_is_dead(it);
        if (best != NULL && !dead && !ranks_below(it, best, now)) {
            release(it, hv);
            continue;
        }
        if (best != NULL) {
            release(best, best_hv);
        }
        best = it;
        best_hv = hv;
        if (dead) {
            break;
        }
    }
    count_stat(&stat_sampled, looked);
    *hv_out = best_hv;
    return best;
}

static item *hmhc_d_victim(unsigned int clsid,
                           bool (*accept)(item *, void *), void *arg,
                           uint64_t *hv_out)
{
    struct sampler *s = &samplers[clsid];
    item *victim = NULL;
    pthread_mutex_lock(&s->lock);
    if (s->cursor == NULL) {
        s->cursor = mq_cursor_new();
    }
    if (s->cursor != NULL) {
        victim = do_sample_victim(s, clsid, accept, arg, hv_out);
    }
    pthread_mutex_unlock(&s->lock);
    if (victim != NULL) {
        count_stat(&stat_victims, 1);
    }
    return victim;
}

static void add_counter(ADD_STAT add_stats, void *c, const char *name,
                        _Atomic uint64_t *ctr)
{
    append_stat(name, add_stats, c, "%llu", (unsigned long long)
                atomic_load_explicit(ctr, memory_order_relaxed));
}

static void hmhc_stats(ADD_STAT add_stats, void *c)
{
    append_stat("hmhc_sample_size", add_stats, c, "%u", HMHC_SAMPLE);
    add_counter(add_stats, c, "hmhc_sampled", &stat_sampled);
    add_counter(add_stats, c, "hmhc_skipped", &stat_skipped);
    add_counter(add_stats, c, "hmhc_victims", &stat_victims);
}

static void hmhc_stats_reset(void)
{
    atomic_store_explicit(&stat_sampled, 0, memory_order_relaxed);
    atomic_store_explicit(&stat_skipped, 0, memory_order_relaxed);
    atomic_store_explicit(&stat_victims, 0, memory_order_relaxed);
}

const struct tier_policy_ops policy_hmhc = {
    .name = "hmhc",
    .demotes = true,
    .places_in_nvm = tier_place_by_key_zone,
    .wants_promotion = hot_enough,
    .n_reclaim = clock_nvm_reclaim,
    .d_entered = hmhc_d_entered,
    .d_accessed = hmhc_d_accessed,
    .d_victim = hmhc_d_victim,
    .init = hmhc_init,
    .stats = hmhc_stats,
    .stats_reset = hmhc_stats_reset,
};
