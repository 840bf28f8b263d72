/*
 * evict_shadow.c: a shadow of each slab class's recent evictions, so
 * that the automover (slabs_automove.c) can move pages to the class
 * where a page more would bring the most hits (doc/tiering.md "Pages
 * that follow the hits"), and, with an N-zone, so that a key asked for
 * again after it left starts with the CLOCK bit a hit would have given
 * it (items_n.c; doc/tiering.md "Keys that come back").
 *
 * A slab server gives each class whole pages; which class gets the next
 * page was decided by who asked first while the cache filled, and stays
 * so.  What a page is worth to a class is the hits it would have had on
 * the items it could have kept: the keys the class evicted in its last
 * page's worth of evictions (chunks_per_page of them) that a client then
 * stored again, which a lookaside client does right after the GET that
 * missed them.  Counting those needs only the evicted keys' hashes.
 *
 * The shadow is one direct-mapped table of 2^17 entries (1 MiB whatever
 * -m says), each the high 24 bits of an evicted key's hash, its class and
 * the class's eviction count when it left.  An entry is a hit when the
 * hash and class match and the class has evicted fewer than `window`
 * items since; entries overwritten by later evictions of any class are
 * missed hits, not false ones (a false match needs 24 equal hash bits
 * and the same class).  Classes evicting slowly keep their entries the
 * longest, which is where the window is short anyway (large chunks, few
 * a page).
 *
 * Threads: victims are noted by whichever thread makes room (workers, the
 * page mover, the tier thread), stores by the workers, all without a
 * lock: the table's
 * entries and the per-class counts are relaxed atomics (a lost race
 * costs one count, never a wrong key).  One thread takes the hits
 * (slabs_automove_tick, on the LRU maintainer).
 */
#include "config.h"
#include "evict_shadow.h"

#include "slab_class.h"

#include <stdatomic.h>
#include <stdlib.h>

#define SHADOW_BITS 17
#define SHADOW_SLOTS (1u << SHADOW_BITS)
#define HASH_TAG_SHIFT 40       /* entry bits 40..63: hash bits 40..63 */
#define CLASS_SHIFT 32          /* entry bits 32..39: the class */

struct shadow_class {
    _Atomic uint32_t evictions;  /* wrapping: entries keep its value */
    _Atomic uint64_t hits;       /* since the last take */
};

static _Atomic uint64_t *table;
static struct shadow_class classes[MAX_NUMBER_OF_SLAB_CLASSES];

void evict_shadow_init(void)
{
    if (table == NULL) {
        table = calloc(SHADOW_SLOTS, sizeof(*table));
    }
}

bool evict_shadow_active(void)
{
    return table != NULL;
}

static uint64_t entry_of(uint64_t hv, unsigned int clsid, uint32_t seq)
{
    return (hv >> HASH_TAG_SHIFT << HASH_TAG_SHIFT)
        | ((uint64_t)(clsid & 0xff) << CLASS_SHIFT) | seq;
}

static _Atomic uint64_t *slot_of(uint64_t hv)
{
    return &table[hv & (SHADOW_SLOTS - 1)];
}

void evict_shadow_victim(unsigned int clsid, uint64_t hv)
{
    if (table == NULL || clsid >= MAX_NUMBER_OF_SLAB_CLASSES) {
        return;
    }
    struct shadow_class *c = &classes[clsid];
    uint32_t seq = atomic_fetch_add_explicit(&c->evictions, 1,
                                             memory_order_relaxed) + 1;
    atomic_store_explicit(slot_of(hv), entry_of(hv, clsid, seq),
                          memory_order_relaxed);
}

void evict_shadow_stored(unsigned int clsid, uint64_t hv, uint32_t window)
{
    if (table == NULL || clsid >= MAX_NUMBER_OF_SLAB_CLASSES) {
        return;
    }
    uint64_t e = atomic_load_explicit(slot_of(hv), memory_order_relaxed);
    if (e == 0 || (e >> HASH_TAG_SHIFT) != (hv >> HASH_TAG_SHIFT)
            || ((e >> CLASS_SHIFT) & 0xff) != (clsid & 0xff)) {
        return;
    }
    struct shadow_class *c = &classes[clsid];
    uint32_t now = atomic_load_explicit(&c->evictions, memory_order_relaxed);
    if (now - (uint32_t)e < window) {
        atomic_fetch_add_explicit(&c->hits, 1, memory_order_relaxed);
    }
}

bool evict_shadow_take_returning(unsigned int clsid, uint64_t hv)
{
    if (table == NULL || clsid >= MAX_NUMBER_OF_SLAB_CLASSES) {
        return false;
    }
    _Atomic uint64_t *slot = slot_of(hv);
    uint64_t e = atomic_load_explicit(slot, memory_order_relaxed);
    if (e == 0 || (e >> HASH_TAG_SHIFT) != (hv >> HASH_TAG_SHIFT)
            || ((e >> CLASS_SHIFT) & 0xff) != (clsid & 0xff)) {
        return false;
    }
    /* consumed: a later store of the key, while it is cached, is no
     * return; a newer victim's entry in the slot is left alone */
    atomic_compare_exchange_strong_explicit(slot, &e, 0,
            memory_order_relaxed, memory_order_relaxed);
    return true;
}

uint64_t evict_shadow_take_hits(unsigned int clsid)
{
    if (clsid >= MAX_NUMBER_OF_SLAB_CLASSES) {
        return 0;
    }
    return atomic_exchange_explicit(&classes[clsid].hits, 0,
                                    memory_order_relaxed);
}
