/*
 * items_d.c: the D-zone side of the storage engine (HMCached section 3.2;
 * doc/tiering.md "Replacement").
 *
 * Owns: a D item's access count (and ITEM_REF, the aging hand's reference
 * bit) and its bump in the MQ queues (items_mq.c), the aging's callbacks,
 * linking and unlinking D items in the index and the queues, finding a D
 * chunk (a free one, else one freed by reclaiming a dead victim, demoting
 * a live one where the policy does, or evicting it), the victims'
 * counters, the D page evictor that slabs.c's page mover calls, the LRU
 * maintainer's reclaim of dead items at the queue tails and the
 * crawler's check of D items (items_crawl.h).
 *
 * Locks: the do_ functions expect the item's item lock held; victims are
 * pinned and trylocked by items_mq.c (code holding one item lock never
 * waits for another); the MQ class lock and the slabs lock are taken
 * inside item locks.
 */
#include "config.h"
#include "items.h"
#include "items_internal.h"

#include "evict_shadow.h"
#include "hash_desc.h"
#include "hash.h"
#include "item_lock.h"
#include "items_crawl.h"
#include "items_mq.h"
#include "logger.h"
#include "migrate.h"
#include "slabs.h"
#include "slabs_automove.h"
#include "tier_reassign.h"

#include <stddef.h>
#include <string.h>

#define ALLOC_TRIES 10           /* evictions tried before out of memory */

/* Count one access to a D item: lazy decay from its epoch stamp, then +1. */
void count_access(item *it)
{
    if (tiering) {
        uint32_t epoch = migrate_epoch();
        uint16_t old = it->counter;
        uint32_t c = migrate_decay(old, (epoch - it->epoch) & 7);
        it->counter = (uint16_t)migrate_counter_bump(c, COUNTER_MAX);
        it->epoch = (uint8_t)(epoch & 7);
        if (it->it_flags & ITEM_LINKED) {
            tier_reassign_note(it->slabs_clsid, old, it->counter);
        }
    } else if (it->counter < COUNTER_MAX) {
        it->counter++;
    }
    it->it_flags |= ITEM_REF;
    if (active_policy->d_accessed != NULL) {
        active_policy->d_accessed(it);
    }
}

/* ---- aging of the MQ queues (items_mq.h mq_set_aging) ---- */

/* The aging hand halved a counter: the reassignment's histogram follows,
 * as it does count_access's changes. */
static void aging_recounted(item *it, uint32_t old)
{
    if (tiering && (it->it_flags & ITEM_LINKED)) {
        tier_reassign_note(it->slabs_clsid, (int)old, it->counter);
    }
}

static struct mq_aging_ops aging_ops = {
    .is_dead = item_is_dead,
    .recounted = aging_recounted,
};

void d_aging_init(void)
{
    /* Where victims are demoted rather than evicted, a new key loses
     * nothing by going first (the paper's order keeps D for what N's
     * counters promote), and the hand would make D's counters fall behind
     * N's, which only the decay epochs age: the policy would then exchange
     * items at the edge of the hot set over and over (doc/tiering.md
     * "Aging and probation"). */
    aging_ops.probation = !policy_demotes();
    aging_ops.hand = !policy_demotes();
    mq_set_aging(active_policy->ages_d ? &aging_ops : NULL);
    if (active_policy->ages_d) {
        /* without an N-zone slabs_automove.c moves D's pages by the hits
         * a class's victims would have had (tier_reassign.c moves them
         * under a policy); with one, keys that come back start with
         * their N CLOCK bit set (items_n.c) */
        evict_shadow_init();
    }
}

static bool accept_dead(item *it, void *arg)
{
    return item_is_dead(it);
}

/* A dead item leaves to give its memory back (pinned, item lock held). */
static void count_reclaim(const item *it)
{
    struct class_counters *cc = &ccount[it->slabs_clsid];
    ctr_add(&cc->reclaimed, 1);
    if ((it->it_flags & ITEM_FETCHED) == 0 && item_is_expired(it)) {
        ctr_add(&cc->expired_unfetched, 1);
    }
}

/* Record why a victim leaves (it is pinned, its item lock held). */
void count_victim(const item *it, bool dead)
{
    struct class_counters *cc = &ccount[it->slabs_clsid];
    ctr_add(&cc->direct_reclaims, 1);
    if (dead) {
        count_reclaim(it);
        return;
    }
    LOGGER_EVICT('d', ITEM_key(it), it->nkey, it->it_flags & ITEM_FETCHED,
                 load_exptime(it), it->time, it->slabs_clsid, it->nbytes - 2);
    ctr_add(&cc->evicted, 1);
    atomic_store_explicit(&cc->evicted_time, current_time - it->time,
                          memory_order_relaxed);
    if (load_exptime(it) != 0) {
        ctr_add(&cc->evicted_nonzero, 1);
    }
    if ((it->it_flags & ITEM_FETCHED) == 0) {
        ctr_add(&cc->evicted_unfetched, 1);
    }
    if (it->it_flags & ITEM_ACTIVE) {
        ctr_add(&cc->evicted_active, 1);
    }
    ctr_add(&cc->d_evictions, 1);
    slabs_automove_evicted(it->slabs_clsid);
}

/* Up to max dead items at the tail of queue q of class id leave. */
/* A dead item the queues gave up (its item lock held, pinned) leaves. */
static void reclaim_claimed(item *it, uint64_t hv)
{
    count_reclaim(it);
    do_item_unlink(it, hv);
    item_unlock(hv);
    item_remove(it);
}

static unsigned int reclaim_queue_tail(unsigned int id, unsigned int q,
                                       unsigned int max)
{
    unsigned int n = 0;
    uint64_t hv;
    item *it;
    while (n < max
           && (it = mq_claim_tail(id, q, accept_dead, NULL, &hv)) != NULL) {
        reclaim_claimed(it, hv);
        n++;
    }
    return n;
}

unsigned int items_reclaim_tails(unsigned int clsid, unsigned int max)
{
    unsigned int n = 0;
    for (unsigned int q = 0; q < mq_queues() && n < max; q++) {
        n += reclaim_queue_tail(clsid, q, max - n);
    }
    return n;
}

/* Free one D chunk of class id: reclaim a dead item, demote the MQ victim
 * (or the policy's own, tier_policy.h d_victim) where the policy migrates
 * or, if allowed, evict it.  False when nothing
 * could be freed. */
static bool make_room(unsigned int id, bool may_evict)
{
    uint64_t hv;
    bool demotes = policy_demotes();
    /* Under -M a victim may still move to the N-zone if that needs no
     * eviction there: a free N chunk, its own N copy or another item's
     * (items_ncopy.c), which the CLOCK takes without evicting. */
    bool take_any = may_evict
        || (demotes && (slabs_tier_can_alloc(id) || policy_keeps_n_copy()));
    mq_accept_fn accept = take_any ? NULL : accept_dead;
    item *victim = active_policy->d_victim != NULL
        ? active_policy->d_victim(id, accept, NULL, &hv)
        : mq_pick_victim(id, accept, NULL, &hv);
    if (victim == NULL) {
        return false;
    }
    bool dead = item_is_dead(victim);
    bool freed = true;
    if (!dead && demotes && demote(victim, hv, may_evict)) {
        /* moved, not freed from the cache */
    } else if (!dead && !may_evict) {
        freed = false;          /* the N-zone filled up meanwhile */
    } else {
        count_victim(victim, dead);
        if (!dead) {
            evict_shadow_victim(id, hv);
        }
        do_item_unlink(victim, hv);
    }
    item_unlock(hv);
    item_remove(victim);        /* drops the pin; the chunk is freed */
    return freed;
}

/* A D chunk of class id for ntotal bytes, making room as allowed. */
item *d_chunk(unsigned int id, size_t ntotal, bool may_evict)
{
    item *it = NULL;
    if (!settings.lru_maintainer_thread) {
        /* no maintainer reclaims in the background: like memcached's flat
         * LRU, an allocation first takes the tail item if it is dead
         * (memcached stops at the first live one: a look further would
         * hash and lock up to MQ_TAIL_SEARCH items for every store) */
        uint64_t hv;
        item *dead = mq_claim_last(id, 0, accept_dead, NULL, &hv);
        if (dead != NULL) {
            reclaim_claimed(dead, hv);
        }
    }
    for (int tries = 0; tries < ALLOC_TRIES; tries++) {
        it = slabs_alloc(ntotal, id);
        if (it != NULL || !make_room(id, may_evict)) {
            break;
        }
    }
    return it;
}

bool do_link_d(item *it, uint64_t hv)
{
    do_ncopy_clear(it);
    it->it_flags |= ITEM_LINKED;
    if (!assoc_insert(it, hv)) {
        it->it_flags &= ~(ITEM_LINKED | ITEM_SEALED);
        return false;
    }
    refcount_incr(it);
    account_item(it->slabs_clsid, ITEM_ntotal(it), false, true);
    ctr_add(&total_items, 1);
    tier_reassign_note(it->slabs_clsid, -1, it->counter);
    if (!tiering && it->counter <= 1 && evict_shadow_active()) {
        /* a key not read since it was stored: a new one, or one stored
         * again after it left (counter 1 at most either way) */
        evict_shadow_stored(it->slabs_clsid, hv,
                            slabs_chunks_per_page(it->slabs_clsid));
    }
    if (active_policy->d_entered != NULL) {
        active_policy->d_entered(it);
    }
    mq_link(it);
    return true;
}

void do_unlink_d(item *it, uint64_t hv)
{
    if ((it->it_flags & ITEM_LINKED) == 0) {
        return;
    }
    /* unsealed with the same store: a crash from here on does not bring
     * it back */
    it->it_flags &= ~(ITEM_LINKED | ITEM_SEALED);
    account_item(it->slabs_clsid, ITEM_ntotal(it), false, false);
    tier_reassign_note(it->slabs_clsid, it->counter, -1);
    uint64_t *locp = assoc_find_item(it, hv);
    if (locp != NULL) {
        assoc_delete_loc(locp, hv);
    }
    mq_unlink(it);
    do_ncopy_drop(it);
    item_remove(it);            /* the index's reference */
}

#define EVICT_BATCH 256

/* A live item of a page being emptied, rescued (its item lock held,
 * pinned): a copy in another chunk of its class takes its place under
 * the key and in its queue, the chunk found as a store finds one, so
 * that the class loses its MQ victims (its coldest items) instead of
 * this page's.  The copy keeps the key's cas, flags, expiry, access time
 * and counter.  False when no chunk was found (the item is then evicted
 * as without rescue). */
static bool rescue_page_item(item *it, uint64_t hv)
{
    size_t ntotal = ITEM_ntotal(it);
    item *copy = d_chunk(it->slabs_clsid, ntotal, true);
    if (copy == NULL) {
        return false;
    }
    /* the whole item but its queue links, which the class's lock guards
     * (a neighbour's unlink writes them meanwhile), and its reference
     * count, which readers drop without the item lock */
    size_t links_end = offsetof(item, cas);
    size_t count_at = offsetof(item, refcount);
    size_t count_end = offsetof(item, it_flags);
    memcpy((char *)copy + links_end, (char *)it + links_end,
           count_at - links_end);
    memcpy((char *)copy + count_end, (char *)it + count_end,
           ntotal - count_end);
    copy->next = copy->prev = NULL;
    atomic_store_explicit(&copy->refcount, 1, memory_order_relaxed);
    copy->it_flags = it->it_flags
        & ~(ITEM_LINKED | ITEM_QUEUED | ITEM_SLABBED | ITEM_COLD
            | ITEM_SEALED);
    /* its place first: do_item_replace's link leaves a queued item where
     * it is, and its unlink of `it` finds nothing to dequeue */
    mq_take_place(it, copy);
    uint16_t ref = it->it_flags & ITEM_REF;
    bool replaced = do_item_replace(it, copy, hv);
    if (replaced) {
        /* the link set its first-pass bit; it keeps the item's */
        copy->it_flags = (uint16_t)((copy->it_flags & ~ITEM_REF) | ref);
    } else {
        mq_take_place(copy, it);
    }
    item_remove(copy);          /* the index holds it now, or nobody */
    return replaced;
}

/* One linked item of a page being emptied (its item lock held, pinned):
 * with a policy that demotes, a live item moves to the N-zone exactly as
 * an MQ victim does (demote(): the switch is made under the item lock,
 * readers holding the DRAM copy finish with it, a concurrent SET or DELETE
 * waits for the lock and then acts on the N version); otherwise, for a
 * move that rescues, it is copied within its class (rescue_page_item);
 * a dead item, or one neither can place, leaves the cache.  Returns
 * whether it left. */
static bool empty_page_item(item *it, uint64_t hv, bool rescue)
{
    struct class_counters *cc = &ccount[it->slabs_clsid];
    bool dead = item_is_dead(it);
    if (!dead && policy_demotes()
            && demote(it, hv, settings.evict_to_free != 0)) {
        ctr_add(&cc->page_demotions, 1);
        return false;
    }
    if (!dead && rescue && rescue_page_item(it, hv)) {
        ctr_add(&cc->page_rescues, 1);
        return false;
    }
    if (!dead) {
        ctr_add(&cc->page_evictions, 1);
    }
    do_item_unlink(it, hv);
    return true;
}

/* slabs.c's page evictor, run by its page mover thread only: empty
 * [start, end) of class clsid.  Items not yet linked there are caught by
 * the mover's next call; chunks still referenced come back when their
 * readers let go.  Returns how many items left the cache. */
unsigned int items_evict_page(unsigned int clsid, const void *start,
                              const void *end, bool rescue)
{
    item *batch[EVICT_BATCH];
    unsigned int unlinked = 0, n;
    tier_reassign_thread_role(TIER_REASSIGN_ROLE_MOVER);
    do {
        n = mq_pin_range(clsid, start, end, batch, EVICT_BATCH);
        for (unsigned int i = 0; i < n; i++) {
            item *it = batch[i];
            uint64_t hv = hash_key(ITEM_key(it), it->nkey);
            item_lock(hv);
            if ((it->it_flags & ITEM_LINKED)
                    && empty_page_item(it, hv, rescue)) {
                unlinked++;
            }
            item_unlock(hv);
            item_remove(it);
        }
    } while (n == EVICT_BATCH);
    return unlinked;
}

bool items_crawl_check(item *it, struct crawl_tally *tally)
{
    struct class_counters *cc = &ccount[it->slabs_clsid];
    uint64_t hv = hash_key(ITEM_key(it), it->nkey);
    bool reclaimed = false;

    item_lock(hv);
    ctr_add(&cc->crawler_items_checked, 1);
    if ((it->it_flags & ITEM_LINKED) && item_is_dead(it)) {
        if ((it->it_flags & ITEM_FETCHED) == 0 && !item_is_flushed(it)) {
            ctr_add(&cc->expired_unfetched, 1);
        }
        ctr_add(&cc->crawler_reclaimed, 1);
        do_item_unlink(it, hv);
        reclaimed = true;
    } else if (it->it_flags & ITEM_LINKED) {
        crawl_tally_add(tally, load_exptime(it));
    }
    item_unlock(hv);
    item_remove(it);
    return reclaimed;
}
