/*
 * items_tier.c: moving items between the zones, and the tier thread
 * (HMCached sections 3.3 and 3.5; doc/tiering.md "Hotness and migration").
 *
 * Owns: demotion D->N (an MQ victim or a moved page's item), promotion
 * N->D (in the request with tier_promote=sync, else queued to migrate.c
 * and done here on the tier thread), the decay walker's visit, the
 * engine the policies are given (tier_policy.h struct tier_engine), the
 * callbacks of migrate.c and tier_reassign.c, and the tier thread, whose
 * loop runs migrate.c's tick, the policy's tick, the reassignment's and
 * items_n.c's release of idle spare staging buffers, on bg_thread.h's
 * start/stop/sleep.
 *
 * Locks: a move happens under the item lock of the item moved (the slot
 * switches under it; readers of a D copy keep their reference, readers of
 * an N item hold copies).  tier_thr_lock guards the thread's start/stop
 * state only.
 */
#include "config.h"
#include "items.h"
#include "items_internal.h"

#include "bg_thread.h"
#include "clock_nvm.h"
#include "hash_desc.h"
#include "item_lock.h"
#include "items_mq.h"
#include "logger.h"
#include "migrate.h"
#include "slabs.h"
#include "slabs_tier.h"
#include "tier_reassign.h"

#include <errno.h>

/* An epoch stamp this far behind has decayed to zero (migrate_decay): the
 * walker rewrites it so that 3-bit stamps never wrap. */
#define DECAY_STAMP_NORMALIZE 4
#define TIER_TICK_BUSY_NS (1000 * 1000)
#define TIER_TICK_IDLE_NS (10 * 1000 * 1000)

/* Does the policy move MQ victims to the N-zone? */
bool policy_demotes(void)
{
    return tiering && active_policy->demotes;
}

/* Demotion D->N of the MQ victim (its item lock held, pinned): write it to
 * an N chunk, or take its N copy (items_ncopy.c), and point its slot
 * there, carrying its hot metadata.  The D item leaves the index;
 * readers holding it finish with it and the victim's pin keeps it until
 * the caller drops that. */
bool demote(item *victim, uint64_t hv, bool may_evict)
{
    unsigned int id = victim->slabs_clsid;
    uint64_t *locp = assoc_find_item(victim, hv);
    if (locp == NULL) {
        return false;
    }
    uint64_t off;
    uint32_t atime_delta = 0;
    if (!do_ncopy_demote(victim, &off, &atime_delta)) {
        if (!n_chunk(id, may_evict, &off)) {
            return false;
        }
        write_to_nvm(victim, hv, off);
    }
    *locp = hd_n_make(off, victim->counter, victim->it_flags, victim->epoch,
                      atime_delta);
    if (active_policy->n_linked != NULL) {
        active_policy->n_linked(id, off, true);
    }
    /* one histogram for both zones: only the 8-bit clamp is news */
    tier_reassign_note(id, victim->counter, (int)hd_n_counter(*locp));
    /* its N version is sealed: the D one stops counting */
    victim->it_flags &= ~(ITEM_LINKED | ITEM_SEALED);
    mq_unlink(victim);
    struct class_counters *cc = &ccount[id];
    ctr_add(&cc->n_items, 1);
    ctr_add(&cc->n_bytes, ITEM_ntotal(victim));
    ctr_add(&cc->demotions, 1);
    LOGGER_MOVE(false, ITEM_key(victim), victim->nkey, id, victim->nbytes - 2,
                victim->counter);
    item_remove(victim);        /* the index's reference */
    return true;
}

/* Move the N item of *locp, whose snapshot is snap, into the D chunk d
 * (item lock held): switch the slot; the N chunk is freed, or kept as the
 * D item's copy where the policy keeps copies. */
static void do_promote(uint64_t *locp, item *snap, item *d)
{
    size_t ntotal = ITEM_ntotal(snap);
    uint64_t off = hd_n_offset(*locp);
    unsigned int id = snap->slabs_clsid;
    uint64_t lines = nitem_lines(off, nitem_ntotal(snap->nkey,
                                                   snap->nbytes));
    memcpy(d, snap, ntotal);
    d->next = d->prev = NULL;
    d->it_flags = (uint16_t)((snap->it_flags & ~ITEM_HEAP) | ITEM_LINKED);
    /* sealed before the N version is unsealed below */
    seal_d_version(d);
    atomic_store_explicit(&d->refcount, 1, memory_order_relaxed);
    d->mq_level = 0;
    /* the counter is the slot's at this access, already decayed */
    d->counter = (uint16_t)hd_n_counter(*locp);
    d->epoch = (uint8_t)hd_n_epoch(*locp);
    *locp = hd_loc_from_item(d);
    if (active_policy->n_unlinked != NULL) {
        active_policy->n_unlinked(id, off);
    }
    if (policy_keeps_n_copy()) {
        do_ncopy_keep(d, off);
    } else {
        nitem_unseal(off);
        slabs_tier_free(off);
    }
    heap_meta(snap)->noff = HEAP_NO_OFF;
    if (active_policy->d_entered != NULL) {
        active_policy->d_entered(d);
    }
    mq_link(d);
    struct class_counters *cc = &ccount[id];
    ctr_sub(&cc->n_items, 1);
    ctr_sub(&cc->n_bytes, ntotal);
    ctr_add(&cc->promotions, 1);
    migrate_count_promotion(id, lines);
    LOGGER_MOVE(true, ITEM_key(d), d->nkey, id, d->nbytes - 2, d->counter);
}

/* After a hit made the N item of *locp hot (snapshot snap): promote it now
 * (tier_promote=sync, into a free D chunk only) or queue it. */
void promote_after_hit(uint64_t *locp, uint64_t hv, item *snap)
{
    /* a header-only snapshot has no value to promote from */
    if (!settings.tier.promote_async && !heap_meta(snap)->header_only) {
        item *d = slabs_alloc(ITEM_ntotal(snap), snap->slabs_clsid);
        if (d != NULL) {
            do_promote(locp, snap, d);
            return;
        }
    }
    migrate_queue_promotion(hv, ITEM_key(snap), snap->nkey);
}

/* migrate_engine.promote: the tier thread drains the queue. */
static bool engine_promote(uint64_t hv, const char *key, size_t nkey)
{
    struct nitem_probe p;
    bool done = false;
    item_lock(hv);
    uint64_t *locp = assoc_find_loc(key, nkey, hv, &p);
    if (locp != NULL && hd_loc_is_n(*locp) && !n_is_dead(&p.u.hdr, *locp)) {
        uint64_t loc = *locp;
        uint32_t c = migrate_decay(hd_n_counter(loc),
                                   (migrate_epoch() - hd_n_epoch(loc)) & 7);
        if (wants_promotion(p.u.hdr.clsid, c)) {
            item *snap = snapshot_make(&p, loc);
            item *d = snap == NULL ? NULL
                : d_chunk(snap->slabs_clsid, ITEM_ntotal(snap),
                          settings.evict_to_free != 0);
            if (d != NULL) {
                do_promote(locp, snap, d);
                done = true;
            }
            item_remove(snap);
        }
    }
    item_unlock(hv);
    return done;
}

static uint64_t engine_free_d_chunks(unsigned int clsid)
{
    return slabs_class_free_chunks(clsid, SLAB_ZONE_DRAM);
}

/* The decay walker: counters whose stamp is DECAY_STAMP_NORMALIZE epochs
 * old are zero by now; rewrite them with a fresh stamp so that stamps never
 * wrap.  Younger stamps are left alone (the lazy decay on access stays
 * exact) but D items move to the queue their decayed counter calls for. */
static void decay_visit(uint64_t *locp, void *arg)
{
    uint32_t epoch = *(const uint32_t *)arg;
    uint64_t loc = *locp;
    if (hd_loc_is_n(loc)) {
        uint32_t e = (epoch - hd_n_epoch(loc)) & 7;
        if (e >= DECAY_STAMP_NORMALIZE) {
            uint32_t old = hd_n_counter(loc);
            uint32_t c = migrate_decay(old, e);
            if (c != old && tier_reassign_noting) {
                tier_reassign_note(slabs_tier_clsid(hd_n_offset(loc)),
                                   (int)old, (int)c);
            }
            loc = hd_n_set_counter(loc, c);
            *locp = hd_n_set_epoch(loc, epoch);
        }
        return;
    }
    item *it = hd_loc_to_item(loc);
    uint32_t e = (epoch - it->epoch) & 7;
    uint32_t c = migrate_decay(it->counter, e);
    if (e >= DECAY_STAMP_NORMALIZE) {
        tier_reassign_note(it->slabs_clsid, it->counter, (int)c);
        it->counter = (uint16_t)c;
        it->epoch = (uint8_t)(epoch & 7);
    }
    mq_relevel(it, c);
}

static void engine_decay_walk(uint32_t epoch)
{
    assoc_walk(decay_visit, &epoch);
}

/* ---- what the engine offers the policies (tier_policy.h) ---- */

static bool engine_d_is_dead(item *it)
{
    return item_is_dead(it);
}

static void engine_d_reclaim(item *it, uint64_t hv)
{
    count_victim(it, true);
    do_item_unlink(it, hv);
}

static bool engine_demote(item *it, uint64_t hv)
{
    return demote(it, hv, settings.evict_to_free != 0);
}

/* A policy's own promotion (duallru's Move to D): the N item at off, if it
 * is still there and still_wanted, into D by the engine's promotion
 * (d_chunk may demote a D victim for it); a dead one is reclaimed. */
static enum tier_promote_result engine_promote_at(uint64_t hv, uint64_t off,
        bool (*still_wanted)(unsigned int clsid, uint64_t off))
{
    enum tier_promote_result r = TIER_PROMOTE_GONE;
    unsigned int id = slabs_tier_clsid(off);
    item_lock(hv);
    uint64_t *locp = assoc_find_noff(hv, off);
    if (locp != NULL && still_wanted(id, off)) {
        struct nitem_probe p;
        /* the header's line(s); snapshot_make reads the rest */
        nitem_probe(off, 0, &p);
        if (n_is_dead(&p.u.hdr, *locp)) {
            clock_unlink(locp, hv, &p.u.hdr, true);
            slabs_tier_free(off);
        } else {
            item *snap = snapshot_make(&p, *locp);
            item *d = snap == NULL ? NULL
                : d_chunk(id, ITEM_ntotal(snap),
                          settings.evict_to_free != 0);
            if (d != NULL) {
                do_promote(locp, snap, d);
                r = TIER_PROMOTE_DONE;
            } else {
                r = TIER_PROMOTE_STUCK;
            }
            item_remove(snap);
        }
    }
    item_unlock(hv);
    return r;
}

/* `watch evictions` and `watch tier` (logger.h): the N item of *locp
 * leaves the cache; its key is read from NVM for them alone. */
static void log_n_eviction(const uint64_t *locp, const nitem_hdr *h)
{
    struct nitem_probe p;
    nitem_probe_stored(hd_n_offset(*locp), &p);
    logger_log_evict('n', p.u.buf + sizeof(nitem_hdr), h->nkey,
                     hd_n_flags(*locp) & ITEM_FETCHED, h->exptime,
                     n_last_access(h, *locp), h->clsid, h->nbytes - 2);
}

/* The N-zone's unlink, the CLOCK's (storage_init) and the policies'. */
static void engine_n_unlink(uint64_t *locp, uint64_t hv, const nitem_hdr *h,
                            bool dead)
{
    if (!dead && logger_watching(LOG_EVICTIONS | LOG_TIER)) {
        log_n_eviction(locp, h);
    }
    clock_unlink(locp, hv, h, dead);
}

const struct tier_engine policy_engine = {
    .n_is_dead = clock_is_dead,
    .n_unlink = engine_n_unlink,
    .d_is_dead = engine_d_is_dead,
    .d_reclaim = engine_d_reclaim,
    .demote = engine_demote,
    .promote_at = engine_promote_at,
    .free_d_chunk = free_d_chunk,
    .release = item_remove,
};

const struct migrate_engine tier_engine = {
    .promote = engine_promote,
    .free_d_chunks = engine_free_d_chunks,
    .decay_walk = engine_decay_walk,
};

/* ---- the tier thread: migrate_tick() every 1 ms while it promotes,
 * every 10 ms when idle ---- */

static pthread_mutex_t tier_thr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bg_thread tier_thr = BG_THREAD_INIT("mc-tier", &tier_thr_lock);

static void *tier_thread(void *arg)
{
    tier_reassign_thread_role(TIER_REASSIGN_ROLE_TIER);
    while (!bg_thread_stopping(&tier_thr)) {
        /* The policy notes the zones first (hotter: whether D has room),
         * so that the promotions the workers queued are judged on what D
         * holds now, not on a note a tick old: on a loaded machine a
         * D-zone that had filled since still had "room", and lukewarm N
         * keys went in and displaced one another back to the CLOCK
         * (doc/tiering.md, "hotter"). */
        unsigned int promoted = 0;
        if (active_policy->tick != NULL) {
            promoted += active_policy->tick();
        }
        promoted += migrate_tick();
        tier_reassign_tick();
        staging_spares_tick();
        bg_thread_sleep(&tier_thr, promoted > 0 ? TIER_TICK_BUSY_NS
                                                : TIER_TICK_IDLE_NS);
    }
    return NULL;
}

int tier_thread_start(void)
{
    int rc = bg_thread_start(&tier_thr, tier_thread, NULL);
    return rc == EALREADY ? 0 : rc;
}

void tier_thread_stop(void)
{
    bg_thread_stop(&tier_thr);
}

/* tier_reassign.c's PSA signal: items MQ replacement pushed out of the
 * class's D pages (demoted or evicted), page moves' demotions excluded. */
static uint64_t engine_d_departures(unsigned int clsid)
{
    struct class_counters *cc = &ccount[clsid];
    return ctr_get(&cc->demotions) - ctr_get(&cc->page_demotions)
        + ctr_get(&cc->d_evictions);
}

const struct tier_reassign_engine reassign_engine = {
    .d_departures = engine_d_departures,
};
