/*
 * items_ncopy.c: N copies of D items (doc/tiering.md "hotter", "N
 * copies").
 *
 * Under a policy that keeps copies (tier_policy.h keeps_n_copy), an item
 * promoted to D leaves its N chunk allocated and sealed: the copy.  A
 * new key stored in D gets one too when the policy asks (copies_store:
 * while D fills), so that the items a bulk load leaves in D leave it
 * again for free when hotter ones come.  While
 * the D version is the one promoted (same value, cas, expiry and stale
 * flag; only its access time and counters move) demoting it again needs
 * no chunk and writes no value: the index slot points at the copy once
 * more, with the last access carried in the slot's delta, or, when that
 * would not fit, one rewritten time word.  At the edge of the hot set,
 * where items of about equal heat trade places, most demotions are of
 * items promoted before, and each would otherwise rewrite the whole item.
 *
 * Not the paper's: HMCached frees the N chunk of a promoted item, and
 * stores a new item in one zone only.
 *
 * Rules that keep a copy right:
 *   - the D item names its copy (item.h item_n_copy); no index slot does,
 *     so lookups, the crawler and the dumps never see it;
 *   - anything that changes what the copy holds drops it first: the D
 *     item's unlink (delete, overwrite, eviction, expiry, flush, the
 *     unlink of a page move or of a demotion that failed), an in-place
 *     incr/decr, a new expiry, cas or stale flag.  Dropping unseals the
 *     copy before its chunk is freed, so no restart brings back a value
 *     the D item no longer holds;
 *   - the CLOCK, reaching a used chunk that no slot names, asks here
 *     whether it is a copy and takes it then, even under -M (a copy has
 *     no reference bit, and dropping it loses nothing);
 *   - a copy stays sealed: after a crash the restart scan recovers it as
 *     the item (it holds what the D version held); after a graceful stop
 *     the save demotes every D item, copies included, so each key has one
 *     sealed version.
 *
 * Locks: a D item's copy field, and its copy's chunk, are guarded by the
 * item lock of its key; every function here but ncopy_reclaim expects it
 * held.  ncopy_reclaim runs in a CLOCK sweep, which may hold another item
 * lock, and so only trylocks.
 */
#include "config.h"
#include "items.h"
#include "items_internal.h"

#include "hash_desc.h"
#include "item_lock.h"
#include "nitem.h"
#include "slab_class.h"
#include "slabs.h"
#include "slabs_tier.h"

#include <stddef.h>

bool policy_keeps_n_copy(void)
{
    return tiering && active_policy->keeps_n_copy;
}

void do_ncopy_keep(item *d, uint64_t off)
{
    item_set_n_copy(d, off);
    ctr_add(&ccount[d->slabs_clsid].n_copies, 1);
}

/* d, a new key, was just stored in D (item lock held): if the policy asks
 * for it, write it to a free N chunk too and keep that as its copy.
 * Nothing is evicted for the chunk. */
void do_ncopy_store(item *d, uint64_t hv)
{
    if (!policy_keeps_n_copy() || active_policy->copies_store == NULL
            || !active_policy->copies_store(d->slabs_clsid)) {
        return;
    }
    uint64_t off;
    if (!n_chunk(d->slabs_clsid, false, &off)) {
        return;
    }
    write_to_nvm(d, hv, off);
    do_ncopy_keep(d, off);
    ctr_add(&ccount[d->slabs_clsid].copies_stored, 1);
}

/* Under other policies the copy's bytes are HM-HC's (item.h), hence the
 * policy test before each use. */
void do_ncopy_clear(item *d)
{
    if (policy_keeps_n_copy()) {
        item_set_n_copy(d, 0);
    }
}

/* The copy leaves: unsealed, so that no restart takes it for the item. */
static void forget_copy(item *d, uint64_t off)
{
    nitem_unseal(off);
    item_set_n_copy(d, 0);
    ctr_sub(&ccount[d->slabs_clsid].n_copies, 1);
}

void do_ncopy_drop(item *d)
{
    uint64_t off = policy_keeps_n_copy() ? item_n_copy(d) : 0;
    if (off == 0) {
        return;
    }
    forget_copy(d, off);
    slabs_tier_free(off);
}

bool do_ncopy_demote(item *victim, uint64_t *off, uint32_t *atime_delta)
{
    uint64_t at = policy_keeps_n_copy() ? item_n_copy(victim) : 0;
    if (at == 0) {
        return false;
    }
    nitem_hdr h;
    nitem_read_header(at, &h, offsetof(nitem_hdr, time) + sizeof(h.time));
    /* the copy's time is when it was stored or last demoted: the slot
     * carries the last access as a delta from it while the delta fits */
    if (victim->time >= h.time && victim->time - h.time <= HD_N_ATIME_MAX) {
        *atime_delta = victim->time - h.time;
    } else {
        nitem_write_time(at, victim->time);
        *atime_delta = 0;
    }
    item_set_n_copy(victim, 0);
    struct class_counters *cc = &ccount[victim->slabs_clsid];
    ctr_sub(&cc->n_copies, 1);
    ctr_add(&cc->copy_demotions, 1);
    *off = at;
    return true;
}

uint64_t ncopy_count(unsigned int id)
{
    return id < MAX_NUMBER_OF_SLAB_CLASSES ? ctr_get(&ccount[id].n_copies)
                                           : 0;
}

unsigned int ncopy_itemless_class(unsigned int except)
{
    if (!policy_keeps_n_copy()) {
        return 0;
    }
    for (unsigned int id = POWER_SMALLEST; id <= slabs_largest_clsid();
            id++) {
        if (id != except && ctr_get(&ccount[id].n_items) == 0
                && slabs_tier_class_has_pages(id)) {
            return id;
        }
    }
    return 0;
}

static bool copy_is_at(const item *it, const void *arg)
{
    return item_n_copy(it) == *(const uint64_t *)arg;
}

bool ncopy_reclaim(uint64_t off, uint64_t hv)
{
    if (!active_policy->keeps_n_copy || item_trylock(hv) != 0) {
        return false;
    }
    /* hv was read without the lock and may be torn: then no D item of
     * this stripe names off, and the chunk is passed over */
    item *d = assoc_find_d_where(hv, copy_is_at, &off);
    if (d != NULL) {
        forget_copy(d, off);
        ctr_add(&ccount[d->slabs_clsid].copies_reclaimed, 1);
    }
    item_unlock(hv);
    return d != NULL;
}
