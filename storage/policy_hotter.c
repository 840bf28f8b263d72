/*
 * policy_hotter.c: tier_policy=hotter, the default: promotion gated by
 * D's coldest queue (doc/tiering.md "Policies", "hotter").
 *
 * HMCached promotes an N item whose access counter passes a per-class
 * threshold that a feedback loop adjusts once an adjustment period
 * (migrate.c); until the loop has settled, items that belong in DRAM wait
 * in the N-zone, and an item that passes the threshold displaces the MQ
 * victim whether or not that victim was colder.  Here an N item moves to
 * D when its counter puts it in a higher MQ queue than the coldest item
 * of its class in D (the lowest queue that holds any), when the class has
 * no D item at all, or while the D-zone has memory no class holds or the
 * class has free D chunks (a share of a page: one the reassignment moved
 * in; then nothing is demoted for it): D keeps the items its own counters
 * rank hottest, and an exchange happens only when it promotes a strictly
 * hotter item, so a steady workload stops moving items once D holds its
 * hot set.
 * A promoted item keeps its N chunk as a copy while its D version is
 * unchanged (items_ncopy.c), so that the exchanges at the edge of the hot
 * set, where items of about equal heat trade places, write no value when
 * they demote an item promoted before.  While D has room (the notes the
 * promotion rule reads), a new key stored in D gets such a copy too, so
 * that what a bulk load leaves in D is demoted for free when the hot set
 * moves in.
 * The decay epoch, unless tier_decay_period is given, is sized from the
 * D-zone (decay_period_auto; migrate.c says why).
 * The D-zone's victims come by CLOCK from the main queues and dead items
 * go first (items_mq.c, doc/tiering.md "Aging and probation"); neither
 * the probation queue nor the hand that halves idle items' counters: a
 * demoted new key loses nothing, and D's counters must age as N's do
 * (by the decay epochs) for the comparison above to mean anything.
 * Everything else is hmcached's: placement by the key's zone, the MQ
 * queues in D, demotion of their victims, CLOCK in the N-zone, the
 * counters and their decay rule.
 *
 * Locks: wants_promotion runs under the item lock of the N item; it
 * reads the class's queue counts under the MQ class lock (items_mq.h:
 * item lock, then class lock) and d_zone_has_room and class_has_room,
 * atomics the tier thread's tick writes under no lock of ours (slabs.c
 * takes its own).
 */
#include "config.h"
#include "tier_policy.h"

#include "clock_nvm.h"
#include "items_mq.h"
#include "slab_class.h"
#include "slabs.h"

#include <stdatomic.h>

/* An access counter of 1 is a single access: never worth a move. */
#define HOTTER_MIN_COUNTER 2

/* Whether the D-zone still has memory no class holds (slabs.c's rule for
 * a new page: the global pool has a page, or what the zone allocated,
 * plus one page, is within -m), so that a promotion demotes nothing.  Set
 * by the tier thread's tick, read on the request path without a lock (a
 * stale answer costs one exchange, or one promotion put off). */
static _Atomic bool d_zone_has_room;

/* Whether a class has free D chunks, at least a page's chunks over
 * ROOM_PAGE_SHARE: a page the reassignment moved in, or room deletes left.
 * A promotion into one demotes nothing.  The one or two chunks a store
 * leaves free when its old version goes do not count: they are taken by
 * the next store, and counting them made this policy promote nearly every
 * item accessed twice in a steady workload (three times the exchanges).
 * Noted by the same tick. */
#define ROOM_PAGE_SHARE 8
static _Atomic bool class_has_room[MAX_NUMBER_OF_SLAB_CLASSES];

static unsigned int note_d_room(void)
{
    struct slabs_totals t;
    slabs_get_totals(&t);
    uint64_t page = slabs_page_size();
    bool room = t.global_pool_pages > 0
        || t.total_malloced + (t.global_pool_pages + 1) * page <= t.mem_limit;
    atomic_store_explicit(&d_zone_has_room, room, memory_order_relaxed);
    unsigned int free_chunks[MAX_NUMBER_OF_SLAB_CLASSES];
    unsigned int classes = slabs_free_chunks_by_class(SLAB_ZONE_DRAM,
            free_chunks, MAX_NUMBER_OF_SLAB_CLASSES);
    for (unsigned int id = 0; id < classes; id++) {
        bool has = free_chunks[id] > 0 && free_chunks[id]
            >= slabs_chunks_per_page(id) / ROOM_PAGE_SHARE;
        atomic_store_explicit(&class_has_room[id], has,
                              memory_order_relaxed);
    }
    return 0;
}

/* The room notes hold from the start, not only from the tier thread's
 * first tick: a bulk load that begins at once is stored with its copies
 * too. */
static void note_d_room_at_start(const struct tier_engine *engine)
{
    (void)engine;
    note_d_room();
}

/* D has room for an item of class clsid: a promotion into it demotes
 * nothing.  While the D-zone fills, a new key stored in D is written to
 * N too and kept as its copy: the items a bulk load leaves in D are then
 * demoted for free when hotter ones displace them (doc/tiering.md "N
 * copies"). */
static bool d_has_room(unsigned int clsid)
{
    return atomic_load_explicit(&d_zone_has_room, memory_order_relaxed)
        || atomic_load_explicit(&class_has_room[clsid],
                                memory_order_relaxed);
}

static bool hotter_than_coldest(unsigned int clsid, uint32_t counter)
{
    if (counter < HOTTER_MIN_COUNTER) {
        return false;
    }
    if (d_has_room(clsid)) {
        return true;
    }
    unsigned int coldest = mq_lowest_level(clsid);
    return coldest == MQ_NO_LEVEL || mq_level_for_counter(counter) > coldest;
}

const struct tier_policy_ops policy_hotter = {
    .name = "hotter",
    .ages_d = true,
    .demotes = true,
    .keeps_n_copy = true,
    .decay_period_auto = true,
    .copies_store = d_has_room,
    .places_in_nvm = tier_place_by_key_zone,
    .wants_promotion = hotter_than_coldest,
    .n_reclaim = clock_nvm_reclaim,
    .init = note_d_room_at_start,
    .tick = note_d_room,
};
