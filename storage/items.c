/*
 * items.c: the item API of items.h, zone-agnostic: memcached 1.6.18's
 * semantics over whichever zone holds a key (HMCached sections 3.1-3.4;
 * doc/tiering.md).
 *
 * Owns: lookups (a hit, a miss, or out of memory), references, lazy
 * expiry and flush, cas ids (each version's identity), allocation and the
 * placement of new versions (asked of the policy), linking a new version
 * into the chunk secured for it and replacing a version, finding a version
 * again after a lock drop, the metadata setters, the store, cas,
 * arithmetic, delete and touch semantics (start-up and shutdown are
 * storage.c's).  Under it: items_d.c (the D-zone), items_n.c (the
 * N-zone and snapshots), items_tier.c (moves between zones, the tier
 * thread), items_dump.c (dumps), items_stats.c (listings), all sharing
 * items_internal.h.
 *
 * Locks:
 *   - item_lock(hv) (item_locks.c) guards an item's metadata (it_flags,
 *     exptime, counter, cas, time) while it is linked, its index bucket,
 *     and for an N item its location word (hot metadata) and its chunk's
 *     bytes.  All do_* functions expect it held.  Code holding one item
 *     lock only ever trylocks others (MQ victims, CLOCK candidates).
 *   - the MQ class lock (items_mq.c), the CLOCK hand lock (clock_nvm.c),
 *     the tier lock (slabs_tier.c) and the slabs lock are taken inside
 *     item locks, in that order.
 *   - refcount is atomic: alloc returns 1 for the caller, linking adds one
 *     for the index, unlinking drops it; the chunk goes back to its slab
 *     class when the count reaches 0, so replies still being written keep
 *     their item through deletes, evictions and demotions.  N items have no
 *     reference count: a reader gets a malloc'd DRAM snapshot (ITEM_HEAP)
 *     made under the item lock, so an N chunk can be freed whenever its
 *     item lock is held.  A reply's hold is bounded: a D item past
 *     ITEM_REFCOUNT_LIMIT references is fetched as a miss, and snapshots
 *     that replies hold are charged to their worker's in-flight gauge
 *     (tier_inflight_limit; doc/tiering.md "Values in flight").
 *   - a version is re-found after a lock drop by its cas, unique per
 *     stored version even under -C; a replace secures the new version's
 *     chunk before it unlinks the old one (doc/tiering.md "Stores").
 *   - counters are relaxed atomics: no lock on the request path.
 *
 * Per-thread command counters (cas_*, incr/decr_hits, delete_*) are the
 * protocol layer's: it sees the outcome and the item.  Only get_expired and
 * get_flushed are counted here, where expiry is discovered, and, with
 * tiers, tier_requests (every storage request) and the zone hits
 * (migrate_count_request).
 *
 * Fields written outside the item lock's protection from readers that use
 * only a class lock (exptime by touch, read by cachedump) use relaxed
 * atomic builtins; so do reads of the flush settings written by flush_all.
 *
 * Where this deliberately differs from the paper (doc/tiering.md):
 *   - one index for both zones: an N item's descriptor is its slot's
 *     location word; there is no second table and no backward pointer;
 *   - new keys go to the D-zone while their class has room
 *     (tier_placement=dram_first, the default; the paper's rule is
 *     tier_placement=nvm), and a new version of a key held in D stays in D;
 *   - when the N-zone cannot take a new value at all (its class has no N
 *     chunk and the zone no page left), it is stored in D, whatever the
 *     policy (counted as n_fallbacks), rather than refused; and when D
 *     cannot free a chunk for a version bound there, it goes to N
 *     (d_fallbacks).
 *
 * What differs between tier policies is asked of active_policy
 * (tier_policy.h), chosen once by storage_init.
 */
#include "config.h"
#include "items.h"
#include "items_internal.h"

#include "clock_nvm.h"
#include "hash_desc.h"
#include "items_mq.h"
#include "logger.h"
#include "memfile_durable.h"
#include "migrate.h"
#include "nzone.h"
#include "slabs.h"
#include "slabs_tier.h"
#include "clock.h"
#include "hash.h"
#include "item.h"
#include "item_lock.h"
#include "settings.h"
#include "slab_class.h"
#include "stat_counter.h"
#include "stat_line.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct class_counters ccount[MAX_NUMBER_OF_SLAB_CLASSES];
counter_t total_items;
static _Atomic uint64_t cas_id;

/* True when the N-zone is in use (tier_enabled() and a zone was carved);
 * set once by storage_init. */
bool tiering;
/* The tier policy (tier_policy.h); &policy_dram without an N-zone.  Set
 * once by storage_init. */
const struct tier_policy_ops *active_policy = &policy_dram;

static void item_free(item *it)
{
    if (is_heap(it)) {
        heap_free(it);
        return;
    }
    size_t ntotal = ITEM_ntotal(it);
    unsigned int clsid = it->slabs_clsid;
    it->it_flags = 0;
    slabs_free(it, ntotal, clsid);
}

void item_remove(item *it)
{
    if (it != NULL && refcount_decr(it) == 0) {
        item_free(it);
    }
}

/* Also with -C: the cas is each version's identity here (find_version);
 * ITEM_get_cas hides it from clients then. */
uint64_t get_cas_id(void)
{
    return atomic_fetch_add_explicit(&cas_id, 1, memory_order_relaxed) + 1;
}

void items_cas_at_least(uint64_t cas)
{
    uint64_t cur = atomic_load_explicit(&cas_id, memory_order_relaxed);
    while (cur < cas && !atomic_compare_exchange_weak(&cas_id, &cur, cas)) {
    }
}

void items_flush(int64_t delay)
{
    rel_time_t new_oldest = delay > 0 ? realtime(delay) : current_time;
    if (settings.use_cas) {
        /* One second back, so items stored later in this very second
         * survive: the cas comparison tells them apart. */
        __atomic_store_n(&settings.oldest_live, new_oldest - 1,
                         __ATOMIC_RELAXED);
        if (new_oldest - 1 <= current_time) {
            __atomic_store_n(&settings.oldest_cas, get_cas_id(),
                             __ATOMIC_RELAXED);
        }
    } else {
        __atomic_store_n(&settings.oldest_live, new_oldest,
                         __ATOMIC_RELAXED);
    }
    rel_time_t oldest_live = __atomic_load_n(&settings.oldest_live,
                                             __ATOMIC_RELAXED);
    uint64_t oldest_cas = __atomic_load_n(&settings.oldest_cas,
                                          __ATOMIC_RELAXED);
    nzone_note_flush(oldest_live, oldest_cas);
    mfd_note_flush(oldest_live, oldest_cas);
    clock_nvm_note_flush(new_oldest);
}

/* The class of an item: the one memcached 1.6.18 chooses, by its own
 * size for the item (its header, the cas unless -C, the key and its NUL,
 * the flags when not 0, the value), where that holds our item too; our
 * header is 8 bytes larger and keeps cas and flags, so under -C our size
 * decides (doc/protocol.md "Storage").  0: an item that can never
 * be stored (too large, or a key too long). */
static unsigned int item_class(size_t nkey, client_flags_t flags, int nbytes)
{
    if (nkey > KEY_MAX_LENGTH || nbytes < 2) {
        return 0;
    }
    size_t ours = item_make_ntotal(nkey, nbytes);
    size_t theirs = MEMCACHED_ITEM_HEADER
        + (settings.use_cas ? sizeof(uint64_t) : 0) + nkey + 1
        + (flags != 0 ? sizeof(flags) : 0) + (size_t)nbytes;
    return slabs_clsid(theirs > ours ? theirs : ours);
}

bool item_size_ok(size_t nkey, client_flags_t flags, int nbytes)
{
    return item_class(nkey, flags, nbytes) != 0;
}

item *free_d_chunk(const struct placement_query *q)
{
    return slabs_alloc(q->ntotal, q->clsid);
}

/* A new item; a staging buffer (bound for the N-zone) is charged to w's
 * tier_staging_limit, w NULL for the engine's own (not charged). */
static item *do_item_alloc(const char *key, size_t nkey,
                           client_flags_t flags, rel_time_t exptime,
                           int nbytes, enum key_zone zone,
                           struct storage_worker *w)
{
    unsigned int id = item_class(nkey, flags, nbytes);
    if (id == 0) {
        return NULL;
    }
    size_t ntotal = item_make_ntotal(nkey, nbytes);
    item *it = NULL;
    uint16_t it_flags = 0;

    struct placement_query q = { key, nkey, id, ntotal, zone, false };
    if (tiering && active_policy->places_in_nvm(&q, &it)) {
        /* Filled by the caller in DRAM, written to NVM when linked. */
        it = staging_alloc(ntotal, w);
        /* only a guess of N is marked: a guess of D needs no settling
         * (do_settle_guess) */
        it_flags = ITEM_HEAP | (q.zone_guessed ? ITEM_ZONE_GUESSED : 0);
    } else if (it == NULL) {
        it = d_chunk(id, ntotal, settings.evict_to_free != 0);
        if (it == NULL && tiering) {
            /* D made no chunk that stayed free for this store (other
             * threads took each one its victims left, or replies hold
             * every victim it looked at): the N-zone takes the version,
             * as D takes what N cannot */
            it = staging_alloc(ntotal, w);
            it_flags = ITEM_HEAP;
            if (it != NULL) {
                ctr_add(&ccount[id].d_fallbacks, 1);
            }
        } else if (it == NULL) {
            /* every victim it evicted lay on the page a move is taking
             * from the class, which keeps their chunks: one comes back */
            it = slabs_alloc_from_move(ntotal, id);
        }
    }
    if (it == NULL) {
        ctr_add(&ccount[id].outofmemory, 1);
        return NULL;
    }
    it->next = it->prev = NULL;
    it->cas = 0;
    it->time = current_time;
    it->exptime = exptime;
    it->nbytes = (uint32_t)nbytes;
    it->client_flags = flags;
    atomic_store_explicit(&it->refcount, 1, memory_order_relaxed);
    it->it_flags = it_flags;
    it->counter = 0;
    it->slabs_clsid = (uint8_t)id;
    it->nkey = (uint8_t)nkey;
    it->mq_level = 0;
    it->epoch = tiering ? (uint8_t)(migrate_epoch() & 7) : 0;
    memcpy(ITEM_key(it), key, nkey);
    ITEM_key(it)[nkey] = '\0';
    return it;
}

item *item_alloc(const char *key, size_t nkey, client_flags_t flags,
                 rel_time_t exptime, int nbytes, struct storage_worker *w)
{
    return do_item_alloc(key, nkey, flags, exptime, nbytes,
                         KEY_ZONE_UNKNOWN, w);
}

/* A new version of old_it's key, allocated with old_it's item lock held:
 * no probe (old_it says where the key lives). */
static item *alloc_version(const item *old_it, client_flags_t flags,
                           rel_time_t exptime, int nbytes)
{
    enum key_zone zone = is_heap(old_it) ? KEY_ZONE_NOT_D : KEY_ZONE_D;
    return do_item_alloc(ITEM_key(old_it), old_it->nkey, flags, exptime,
                         nbytes, zone, NULL);
}

/* A staging buffer placed by a guess (ITEM_ZONE_GUESSED: its key not
 * looked up yet) over a key whose current version, old_it, is in D: the
 * key stays in D (tier_place_by_key_zone), in a D chunk the store copies
 * the buffer into; without one it goes on to N, a d_fallback as in
 * do_item_alloc.  (A guess of D is right whatever old_it is: a new
 * version of an N key takes a free D chunk too.)  True when tgt->d holds
 * the chunk. */
static bool do_settle_guess(item *it, const item *old_it, bool may_evict,
                            struct link_target *tgt)
{
    if (old_it == NULL || is_heap(old_it)) {
        return false;
    }
    tgt->d = d_chunk(it->slabs_clsid, ITEM_ntotal(it), may_evict);
    if (tgt->d == NULL) {
        ctr_add(&ccount[it->slabs_clsid].d_fallbacks, 1);
    }
    return tgt->d != NULL;
}

/* Secure the chunk `it` will be linked in (item lock held), over old_it
 * (NULL for a new key).  A D item already has its chunk; a staging buffer
 * needs an N chunk, else a D one (counted as an n_fallback), unless its
 * placement was a guess the key's zone settles for D.  False when
 * neither zone has room. */
static bool do_reserve_target(item *it, const item *old_it,
                              struct link_target *tgt)
{
    tgt->noff = HEAP_NO_OFF;
    tgt->d = NULL;
    tgt->written = false;
    if (!is_heap(it)) {
        tgt->d = it;
        return true;
    }
    bool may_evict = settings.evict_to_free != 0;
    if ((it->it_flags & ITEM_ZONE_GUESSED) != 0) {
        it->it_flags &= ~ITEM_ZONE_GUESSED;
        if (do_settle_guess(it, old_it, may_evict, tgt)) {
            return true;
        }
    }
    if (n_chunk(it->slabs_clsid, may_evict, &tgt->noff)) {
        return true;
    }
    tgt->noff = HEAP_NO_OFF;
    ctr_add(&ccount[it->slabs_clsid].n_fallbacks, 1);
    tgt->d = d_chunk(it->slabs_clsid, ITEM_ntotal(it), may_evict);
    return tgt->d != NULL;
}

/* Give back a target that was not linked; a written N chunk loses its
 * seal first, so that no restart finds a version nobody acknowledged. */
static void release_target(item *it, struct link_target *tgt)
{
    if (tgt->noff != HEAP_NO_OFF) {
        if (tgt->written) {
            nitem_unseal(tgt->noff);
        }
        slabs_tier_free(tgt->noff);
    } else if (tgt->d != NULL) {
        tgt->d->it_flags &= ~ITEM_SEALED;
        if (tgt->d != it) {
            slabs_free(tgt->d, ITEM_ntotal(it), it->slabs_clsid);
        }
    }
}

/* Write the staging buffer `it` into the D chunk d as its D copy. */
static void fill_d_copy(const item *it, item *d)
{
    memcpy(d, it, ITEM_ntotal(it));
    d->it_flags = it->it_flags & ~ITEM_HEAP;
    atomic_store_explicit(&d->refcount, 0, memory_order_relaxed);
}

/* Make `it` the key's newest version (item lock held): its time and cas,
 * and, for an N target, the whole item written and sealed in its chunk;
 * for a D target, the version in its chunk, sealed under -e.  Done
 * before any older version is unlinked, so that a crash from here on
 * leaves the old version, the new one, or both sealed; recovery keeps the
 * higher cas. */
static void do_persist_target(item *it, uint64_t hv, struct link_target *tgt)
{
    it->time = current_time;
    it->cas = get_cas_id();
    count_access(it);
    if (tgt->noff != HEAP_NO_OFF) {
        write_to_nvm(it, hv, tgt->noff);
        tgt->written = true;
        return;
    }
    if (tgt->d != it) {
        fill_d_copy(it, tgt->d);
    }
    seal_d_version(tgt->d);
}

/* Index `it` in the target do_persist_target prepared; on failure the
 * target is given back. */
static bool do_index_target(item *it, uint64_t hv, struct link_target *tgt)
{
    bool linked;
    if (tgt->noff != HEAP_NO_OFF) {
        linked = do_index_n(it, hv, tgt->noff);
    } else {
        linked = do_link_d(tgt->d, hv);
    }
    if (!linked) {
        release_target(it, tgt);
    }
    return linked;
}

/* Link a fresh item under its key (item lock held).  Linking is a store,
 * so it counts as an access.  A new key stored in D may get an N copy
 * (items_ncopy.c); a new version of an existing key (do_item_replace)
 * never does: a key stored over once is likely to be stored over again,
 * and the copy would be written for nothing. */
static bool do_item_link(item *it, uint64_t hv)
{
    struct link_target tgt;
    if (!do_reserve_target(it, NULL, &tgt)) {
        return false;
    }
    do_persist_target(it, hv, &tgt);
    if (!do_index_target(it, hv, &tgt)) {
        return false;
    }
    if (tgt.d != NULL) {
        do_ncopy_store(tgt.d, hv);
    }
    return true;
}

enum version_zone find_version(item *it, uint64_t hv, bool same_hold,
                                      item **d, uint64_t **locp)
{
    if (!is_heap(it) && (it->it_flags & ITEM_LINKED)) {
        *d = it;
        return VERSION_D;
    }
    if (is_heap(it) && heap_meta(it)->noff != HEAP_NO_OFF) {
        uint64_t off = heap_meta(it)->noff;
        *locp = assoc_find_noff(hv, off);
        if (*locp != NULL && same_hold) {
            return VERSION_N;        /* nobody could have changed it */
        }
        if (*locp != NULL) {
            nitem_hdr h;
            nitem_read_header(off, &h, NITEM_CAS_BYTES);
            if (h.cas == it->cas) {
                return VERSION_N;
            }
            return VERSION_GONE;     /* the chunk holds a newer version */
        }
    }
    if (!tiering || it->cas == 0) {
        return VERSION_GONE;
    }
    struct nitem_probe p;
    uint64_t *l = assoc_find_loc(ITEM_key(it), it->nkey, hv, &p);
    if (l == NULL) {
        return VERSION_GONE;
    }
    if (hd_loc_is_n(*l)) {
        *locp = l;
        return p.u.hdr.cas == it->cas ? VERSION_N : VERSION_GONE;
    }
    *d = hd_loc_to_item(*l);
    return (*d)->cas == it->cas ? VERSION_D : VERSION_GONE;
}

void do_item_unlink(item *it, uint64_t hv)
{
    if (!is_heap(it)) {
        do_unlink_d(it, hv);
        return;
    }
    item *d;
    uint64_t *locp;
    switch (find_version(it, hv, true, &d, &locp)) {
    case VERSION_D:
        do_unlink_d(d, hv);
        break;
    case VERSION_N: {
        uint64_t off = hd_n_offset(*locp);
        do_unlink_n_slot(locp, hv, it->slabs_clsid, ITEM_ntotal(it));
        slabs_tier_free(off);
        heap_meta(it)->noff = HEAP_NO_OFF;
        break;
    }
    case VERSION_GONE:
        break;
    }
}

/* new_it takes old_it's place; it inherits the key's hotness.  Its chunk
 * is secured first: when there is no room, old_it stays as it was.  The
 * new version is durable and sealed before the old one is unlinked (and
 * so unsealed): never the other way round, and never in the old one's
 * chunk, which a crash halfway through the write would leave holding
 * neither (doc/restart.md "Items and their seal").  After the unlink the
 * index has a free slot in the key's chain, so the link cannot fail for
 * want of one. */
bool do_item_replace(item *old_it, item *new_it, uint64_t hv)
{
    struct link_target tgt;
    new_it->counter = old_it->counter;
    new_it->epoch = old_it->epoch;
    if (!do_reserve_target(new_it, old_it, &tgt)) {
        return false;
    }
    do_persist_target(new_it, hv, &tgt);
    do_item_unlink(old_it, hv);
    return do_index_target(new_it, hv, &tgt);
}

/* ---- metadata setters (items.h) ---- */

static void set_exptime(item *it, uint64_t hv, bool same_hold,
                        rel_time_t exptime)
{
    store_exptime(it, exptime);
    if ((it->it_flags & (ITEM_LINKED | ITEM_HEAP)) == ITEM_LINKED) {
        do_ncopy_drop(it);
        return;
    }
    item *d;
    uint64_t *locp;
    switch (find_version(it, hv, same_hold, &d, &locp)) {
    case VERSION_D:
        store_exptime(d, exptime);
        do_ncopy_drop(d);
        break;
    case VERSION_N:
        nitem_write_exptime(hd_n_offset(*locp), exptime);
        break;
    case VERSION_GONE:
        break;
    }
}

void do_item_set_exptime(item *it, uint64_t hv, rel_time_t exptime)
{
    set_exptime(it, hv, false, exptime);
}

void do_item_set_flags(item *it, uint64_t hv, uint16_t set, uint16_t clear)
{
    bool persistent = ((set | clear) & NITEM_PERSISTENT_FLAGS) != 0;
    it->it_flags = (uint16_t)((it->it_flags | set) & ~clear);
    if ((it->it_flags & (ITEM_LINKED | ITEM_HEAP)) == ITEM_LINKED) {
        if (persistent) {
            do_ncopy_drop(it);
        }
        return;
    }
    item *d;
    uint64_t *locp;
    switch (find_version(it, hv, false, &d, &locp)) {
    case VERSION_D:
        d->it_flags = (uint16_t)((d->it_flags | set) & ~clear);
        if (persistent) {
            do_ncopy_drop(d);
        }
        break;
    case VERSION_N: {
        uint16_t f = (uint16_t)((hd_n_flags(*locp) | set) & ~clear);
        *locp = hd_n_set_flags(*locp, f);
        if ((set | clear) & ITEM_STALE) {
            nitem_write_flags(hd_n_offset(*locp),
                              (uint8_t)(it->it_flags
                                        & NITEM_PERSISTENT_FLAGS));
        }
        break;
    }
    case VERSION_GONE:
        break;
    }
}

void item_set_flags(item *it, uint16_t set, uint16_t clear)
{
    uint64_t hv = hash_key(ITEM_key(it), it->nkey);
    item_lock(hv);
    do_item_set_flags(it, hv, set, clear);
    item_unlock(hv);
}

void do_item_set_cas(item *it, uint64_t hv, uint64_t cas)
{
    uint64_t old = it->cas;
    it->cas = cas;
    if ((it->it_flags & (ITEM_LINKED | ITEM_HEAP)) == ITEM_LINKED) {
        do_ncopy_drop(it);
        return;
    }
    item *d;
    uint64_t *locp;
    /* find the version by the cas it had */
    it->cas = old;
    enum version_zone z = find_version(it, hv, false, &d, &locp);
    it->cas = cas;
    switch (z) {
    case VERSION_D:
        d->cas = cas;
        do_ncopy_drop(d);
        break;
    case VERSION_N:
        nitem_write_cas(hd_n_offset(*locp), cas);
        break;
    case VERSION_GONE:
        break;
    }
}

/* The caller must hold item_lock(hv): see items.h. */
void item_bump(struct storage_worker *w, item *it, uint64_t hv)
{
    if (!is_heap(it)) {
        do_item_bump(it);
        return;
    }
    if (heap_meta(it)->noff == HEAP_NO_OFF) {
        return;
    }
    uint64_t *locp = assoc_find_noff(hv, heap_meta(it)->noff);
    if (locp == NULL) {
        return;
    }
    /* the header time is the snapshot's last access minus the delta */
    rel_time_t base = it->time - hd_n_atime(*locp);
    bool rehit = policy_sees_rehit(*locp);
    it->it_flags |= ITEM_FETCHED;
    if (n_bump(locp, base, it->slabs_clsid)) {
        promote_after_hit(locp, hv, it);
    }
    if (rehit) {
        active_policy->n_rehit(it->slabs_clsid, heap_meta(it)->noff,
                               TIER_LRU_UNKNOWN);
    }
}

/* The probe of the N item a lookup matched, per thread: used only
 * between do_item_get's lookup and its snapshot, and kept off the stack so
 * the D path's frame stays small. */
static __thread struct nitem_probe get_probe;

/* A D hit a reply would hold once more than ITEM_REFCOUNT_LIMIT times is
 * answered as a miss: the 16-bit count must never wrap, or the chunk would
 * be freed and reused under the replies still pointing at it. */
static bool refcount_take_for_reply(item *it)
{
    if (refcount_incr(it) > ITEM_REFCOUNT_LIMIT) {
        refcount_decr(it);
        return false;
    }
    return true;
}

/* The lookup behind every item_get form and the engine's own (`how`:
 * the LOOKUP_ flags above).  LOOKUP_FOR_REPLY when a client's reply will
 * hold the result (the bounds above apply); the engine's lookups (store,
 * arithmetic, delete) release theirs within the same hold of the item
 * lock.  LOOKUP_HEADER_ONLY when the caller never reads the value: an N
 * hit then reads no line past the probe. */
static item *do_item_lookup(const char *key, size_t nkey, uint64_t hv,
                            struct storage_worker *w, unsigned int how,
                            enum item_lookup *status)
{
    *status = LOOKUP_MISS;
    uint64_t *locp = assoc_find_loc(key, nkey, hv, &get_probe);
    if (tiering && w != NULL) {
        STAT_INCR(w->stats.tier_requests);
    }
    if (locp == NULL) {
        return NULL;
    }
    if (hd_loc_is_n(*locp)) {
        if (w != NULL) {
            w->hit_segment = LRU_COLD;   /* the N-zone is the cold tier */
        }
        return do_item_get_n(locp, &get_probe, hv, w, how, status);
    }
    item *it = hd_loc_to_item(*locp);
    if (how & LOOKUP_FOR_REPLY) {
        if (!refcount_take_for_reply(it)) {
            return NULL;
        }
    } else {
        refcount_incr(it);
    }
    if (item_is_flushed(it)) {
        do_item_unlink(it, hv);
        item_remove(it);
        if (w != NULL) {
            STAT_INCR(w->stats.get_flushed);
        }
        return NULL;
    }
    if (item_is_expired(it)) {
        do_item_unlink(it, hv);
        item_remove(it);
        if (w != NULL) {
            STAT_INCR(w->stats.get_expired);
        }
        return NULL;
    }
    /* d_hits, even without an N-zone (every hit is then a D hit): the
     * counter migrate_count_request(w, clsid, true) bumps, bumped inline
     * to keep the DRAM-only path short */
    if (w != NULL) {
        STAT_INCR(w->stats.tier_d_hits[it->slabs_clsid]);
        w->hit_segment = mq_segment(it);
    }
    if (how & LOOKUP_BUMP) {
        do_item_bump(it);
    }
    *status = LOOKUP_HIT;
    return it;
}

/* do_item_lookup, every one shown to `watch fetchers` (logger.h) */
static item *do_item_get(const char *key, size_t nkey, uint64_t hv,
                         struct storage_worker *w, unsigned int how,
                         enum item_lookup *status)
{
    item *it = do_item_lookup(key, nkey, hv, w, how, status);
    LOGGER_GET(key, nkey, *status, it ? it->slabs_clsid : 0,
               it ? it->nbytes - 2 : 0);
    return it;
}

item *item_get(const char *key, size_t nkey, struct storage_worker *w,
               bool do_update, enum item_lookup *status)
{
    uint64_t hv = hash_key(key, nkey);
    item_lock(hv);
    item *it = do_item_get(key, nkey, hv, w,
                           LOOKUP_FOR_REPLY | (do_update ? LOOKUP_BUMP : 0),
                           status);
    item_unlock(hv);
    return it;
}

item *item_get_locked(const char *key, size_t nkey, struct storage_worker *w,
                      bool do_update, uint64_t *hv,
                      enum item_lookup *status)
{
    *hv = hash_key(key, nkey);
    item_lock(*hv);
    return do_item_get(key, nkey, *hv, w,
                       LOOKUP_FOR_REPLY | (do_update ? LOOKUP_BUMP : 0),
                       status);
}

item *item_touch(const char *key, size_t nkey, rel_time_t exptime,
                 struct storage_worker *w, bool want_value,
                 enum item_lookup *status)
{
    uint64_t hv = hash_key(key, nkey);
    item_lock(hv);
    unsigned int how = LOOKUP_FOR_REPLY | LOOKUP_BUMP
        | (want_value ? 0 : LOOKUP_HEADER_ONLY);
    item *it = do_item_get(key, nkey, hv, w, how, status);
    if (it != NULL) {
        set_exptime(it, hv, true, exptime);
    }
    item_unlock(hv);
    return it;
}

/* ---- store ---- */

enum cas_result { CAS_NONE, CAS_MATCH, CAS_BADVAL, CAS_STALE };

static enum cas_result compare_cas(uint64_t cas_in, uint64_t current,
                                   bool cas_stale)
{
    if (cas_in == 0) {
        return CAS_NONE;
    }
    if (cas_in == current) {
        return CAS_MATCH;
    }
    if (cas_stale && cas_in < current) {
        return CAS_STALE;
    }
    return CAS_BADVAL;
}

/* append/prepend: a new item with old_it's flags and expiry holding both
 * values; NULL when no memory (or the result would be too large). */
static item *build_concatenation(item *old_it, item *it, enum store_cmd cmd)
{
    int nbytes = (int)(old_it->nbytes + it->nbytes - 2);
    item *new_it = alloc_version(old_it, old_it->client_flags,
                                 load_exptime(old_it), nbytes);
    if (new_it == NULL) {
        return NULL;
    }
    item *first = cmd == NREAD_APPEND ? old_it : it;
    item *second = cmd == NREAD_APPEND ? it : old_it;
    /* The first value loses its "\r\n", the second keeps it. */
    memcpy(ITEM_data(new_it), ITEM_data(first), first->nbytes - 2);
    memcpy(ITEM_data(new_it) + first->nbytes - 2, ITEM_data(second),
           second->nbytes);
    return new_it;
}

/* cas, or set/replace carrying a cas (meta C flag), against old_it. */
static bool cas_allows_store(item *old_it, item *it, uint64_t cas_in,
                             bool cas_stale)
{
    switch (compare_cas(cas_in, ITEM_get_cas(old_it), cas_stale)) {
    case CAS_MATCH:
        break;
    case CAS_STALE:
        /* A late writer: keep its value but mark it stale, with the
         * current item's expiry and win-token state. */
        store_exptime(it, load_exptime(old_it));
        it->it_flags |= ITEM_STALE;
        it->it_flags |= old_it->it_flags & ITEM_TOKEN_SENT;
        break;
    default:
        return false;
    }
    return true;
}

/* add on an existing key counts as a use of it (item lock held), which
 * does not make it fetched: memcached's `mg ... h` says 0 after it. */
static void count_use(item *old_it, uint64_t hv)
{
    if (!is_heap(old_it)) {
        count_access(old_it);
        mq_bump(old_it);
        return;
    }
    uint64_t *locp = heap_meta(old_it)->noff == HEAP_NO_OFF ? NULL
        : assoc_find_noff(hv, heap_meta(old_it)->noff);
    if (locp != NULL) {
        bool rehit = policy_sees_rehit(*locp);
        n_count_use(locp, old_it->time - hd_n_atime(*locp),
                    old_it->slabs_clsid);
        if (rehit) {
            active_policy->n_rehit(old_it->slabs_clsid,
                                   heap_meta(old_it)->noff, TIER_LRU_UNKNOWN);
        }
    }
}

static enum store_item_type do_store_existing(item *old_it, item *it,
        enum store_cmd cmd, struct storage_worker *w, uint64_t cas_in,
        bool cas_stale, uint64_t hv, item **stored_out)
{
    bool as_cas = cmd == NREAD_CAS
        || ((cmd == NREAD_SET || cmd == NREAD_REPLACE) && cas_in != 0);
    item *to_link = it;
    item *built = NULL;

    if (cmd == NREAD_ADD) {
        count_use(old_it, hv);
        return NOT_STORED;
    }
    if (cmd == NREAD_APPEND || cmd == NREAD_PREPEND) {
        enum cas_result cr = compare_cas(cas_in, ITEM_get_cas(old_it),
                                         false);
        if (cr != CAS_NONE && cr != CAS_MATCH) {
            return EXISTS;
        }
        built = build_concatenation(old_it, it, cmd);
        if (built == NULL) {
            /* memcached answers NOT_STORED when the joined value cannot
             * be allocated (too large or no memory) */
            return NOT_STORED;
        }
        to_link = built;
    } else if (as_cas && !cas_allows_store(old_it, it, cas_in, cas_stale)) {
        return EXISTS;
    }
    enum store_item_type ret = STORED;
    if (!do_item_replace(old_it, to_link, hv)) {
        /* no chunk for the new version: for append/prepend that is the
         * allocation memcached answers NOT_STORED to */
        ret = built != NULL ? NOT_STORED : NO_MEMORY;
    }
    *stored_out = to_link;
    if (built != NULL) {
        /* The index holds a D result now (if linked); an N result lives
         * in NVM and its staging buffer goes here, after the caller has
         * read its cas (see do_store_item). */
        if (is_heap(built)) {
            *stored_out = it;
            it->cas = built->cas;
        }
        item_remove(built);
    }
    return ret;
}

/* `watch mutations` (logger.h): the version stored, else the one
 * refused (item lock held: the stored one is alive). */
static void log_store(const item *it, const item *stored,
                      enum store_item_type ret, enum store_cmd cmd,
                      uint64_t cas_in)
{
    const item *shown = ret == STORED ? stored : it;
    logger_log_store(ITEM_key(it), it->nkey, ret, cmd,
                     cas_in != 0 && (cmd == NREAD_SET || cmd == NREAD_REPLACE),
                     load_exptime(shown), shown->slabs_clsid,
                     shown->nbytes - 2);
}

static enum store_item_type do_store_item(item *it, enum store_cmd cmd,
        struct storage_worker *w, uint64_t hv, uint64_t cas_in,
        uint64_t *cas_out, bool cas_stale)
{
    /* only append and prepend read the stored value */
    bool joins = cmd == NREAD_APPEND || cmd == NREAD_PREPEND;
    enum item_lookup found;
    item *old_it = do_item_get(ITEM_key(it), it->nkey, hv, w,
                               joins ? 0 : LOOKUP_HEADER_ONLY, &found);
    item *stored_it = it;
    enum store_item_type ret;

    if (found == LOOKUP_NO_MEMORY) {
        /* the key is there: acting as if it were not would link a second
         * version of it */
        ret = NO_MEMORY;
    } else if (old_it != NULL) {
        ret = do_store_existing(old_it, it, cmd, w, cas_in, cas_stale, hv,
                                &stored_it);
        item_remove(old_it);
    } else if (cmd == NREAD_CAS
            || ((cmd == NREAD_SET || cmd == NREAD_REPLACE) && cas_in != 0)) {
        ret = NOT_FOUND;
    } else if (cmd == NREAD_ADD || cmd == NREAD_SET) {
        ret = do_item_link(it, hv) ? STORED : NO_MEMORY;
    } else {
        ret = NOT_STORED;       /* replace/append/prepend need the key */
    }
    if (ret == STORED && cas_out != NULL) {
        /* stored_it may be an append result whose only reference is the
         * index's; we still hold the item lock, so it is alive. */
        *cas_out = ITEM_get_cas(stored_it);
    }
    if (logger_watching(LOG_MUTATIONS)) {
        log_store(it, stored_it, ret, cmd, cas_in);
    }
    return ret;
}

enum store_item_type store_item(item *it, enum store_cmd cmd,
                                struct storage_worker *w, uint64_t cas_in,
                                uint64_t *cas_out, bool cas_stale)
{
    uint64_t hv = hash_key(ITEM_key(it), it->nkey);
    item_lock(hv);
    enum store_item_type ret = do_store_item(it, cmd, w, hv, cas_in,
                                             cas_out, cas_stale);
    item_unlock(hv);
    return ret;
}

/* ---- incr/decr ---- */

/* Parse a stored counter the way memcached's safe_strtoull does: optional
 * leading space and sign, decimal digits, then the end or a space; values
 * past 2^64-1 and negative numbers are not numbers. */
static bool parse_counter(const char *p, size_t len, uint64_t *out)
{
    size_t i = 0;
    bool negative = false;
    uint64_t v = 0;

    while (i < len && isspace((unsigned char)p[i])) {
        i++;
    }
    if (i < len && (p[i] == '+' || p[i] == '-')) {
        negative = p[i] == '-';
        i++;
    }
    size_t digits_start = i;
    for (; i < len && isdigit((unsigned char)p[i]); i++) {
        unsigned int d = (unsigned int)(p[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    if (i == digits_start || (i < len && !isspace((unsigned char)p[i]))) {
        return false;
    }
    if (negative && v != 0) {
        return false;
    }
    *out = v;
    return true;
}

static uint64_t apply_delta(uint64_t value, bool incr, uint64_t delta)
{
    if (incr) {
        return value + delta;   /* wraps at 2^64, as memcached */
    }
    return delta > value ? 0 : value - delta;
}

/* Write the new number into it (item lock held), as memcached's reply
 * and value: in place, space padded, when it fits and nobody else holds
 * the item; otherwise a new item replaces it.  Returns the item now
 * holding the value, with one reference for the caller, or NULL when out
 * of memory. */
static item *store_counter(item *it, const char *num, size_t len,
                           uint64_t hv)
{
    /* memcached's in-place case: the number fits and only the index and
     * we hold the item (an N item: its snapshot is its sole reader).  A D
     * item is updated in place, but not under -e, where a kill in the
     * middle of the write would leave a torn number sealed; else the new
     * version keeps the length and flags the update would have kept. */
    bool as_in_place = len + 2 <= it->nbytes && (is_heap(it)
        ? snapshot_is_sole_reader(it) : refcount_get(it) == 2);
    if (as_in_place && !is_heap(it) && !seal_d_items) {
        /* no reader can see a torn value: new readers wait for the item
         * lock we hold */
        do_ncopy_drop(it);
        it->cas = get_cas_id();
        memcpy(ITEM_data(it), num, len);
        memset(ITEM_data(it) + len, ' ', it->nbytes - len - 2);
        count_access(it);
        mq_bump(it);
        return it;
    }
    int nbytes = as_in_place ? (int)it->nbytes : (int)len + 2;
    item *new_it = alloc_version(it, it->client_flags, load_exptime(it),
                                 nbytes);
    if (new_it == NULL) {
        item_remove(it);
        return NULL;
    }
    if (as_in_place) {
        /* memcached's in-place update keeps the item, and so its flags
         * (`mg`'s h, the win token, stale, a base64 key) */
        new_it->it_flags |= it->it_flags & (ITEM_FETCHED | ITEM_TOKEN_SENT
                                            | ITEM_STALE | ITEM_KEY_BINARY);
    }
    memcpy(ITEM_data(new_it), num, len);
    memset(ITEM_data(new_it) + len, ' ', (size_t)nbytes - len - 2);
    memcpy(ITEM_data(new_it) + nbytes - 2, "\r\n", 2);
    if (!do_item_replace(it, new_it, hv)) {
        item_remove(new_it);
        item_remove(it);
        return NULL;
    }
    item_remove(it);
    return new_it;
}

static enum delta_result_type do_add_delta(struct storage_worker *w,
        const char *key, size_t nkey, bool incr, uint64_t delta, char *buf,
        uint64_t cas_in, uint64_t *cas_out, item **it_out, uint64_t hv)
{
    uint64_t value;
    enum item_lookup found;
    item *it = do_item_get(key, nkey, hv, w, 0, &found);
    if (found == LOOKUP_NO_MEMORY) {
        return DELTA_EOM;
    }
    if (it == NULL) {
        return DELTA_ITEM_NOT_FOUND;
    }
    /* memcached's order: an empty value, then the cas, then the number */
    if (it->nbytes <= 2) {
        item_remove(it);
        return DELTA_NON_NUMERIC;
    }
    if (cas_in != 0 && ITEM_get_cas(it) != cas_in) {
        item_remove(it);
        return DELTA_ITEM_CAS_MISMATCH;
    }
    if (!parse_counter(ITEM_data(it), it->nbytes - 2, &value)) {
        item_remove(it);
        return DELTA_NON_NUMERIC;
    }
    value = apply_delta(value, incr, delta);
    int len = snprintf(buf, INCR_MAX_STORAGE_LEN, "%llu",
                       (unsigned long long)value);
    item *now = store_counter(it, buf, (size_t)len, hv);
    if (now == NULL) {
        return DELTA_EOM;
    }
    if (cas_out != NULL) {
        *cas_out = ITEM_get_cas(now);
    }
    if (it_out != NULL) {
        *it_out = now;
    } else {
        item_remove(now);
    }
    return DELTA_OK;
}

enum delta_result_type add_delta(struct storage_worker *w, const char *key,
                                 size_t nkey, bool incr, uint64_t delta,
                                 char *buf, uint64_t cas_in,
                                 uint64_t *cas_out, item **it_out)
{
    uint64_t hv = hash_key(key, nkey);
    item_lock(hv);
    enum delta_result_type ret = do_add_delta(w, key, nkey, incr, delta, buf,
                                              cas_in, cas_out, it_out, hv);
    item_unlock(hv);
    return ret;
}

/* ---- delete ---- */

/* Delete needs the version's header, never its value: it is found and
 * unlinked in place, with no copy, so it cannot fail for want of memory.
 * A dead version is unlinked and reported as a miss, as a lookup would. */
static enum delete_result_type do_item_delete(const char *key, size_t nkey,
        uint64_t hv, uint64_t cas_in, struct storage_worker *w,
        unsigned int *clsid)
{
    struct nitem_probe p;
    uint64_t *locp = assoc_find_loc(key, nkey, hv, &p);
    if (locp == NULL || !hd_loc_is_n(*locp)) {
        /* a miss, or a D item: the ordinary lookup pins it, no copy */
        enum item_lookup found;
        item *it = do_item_get(key, nkey, hv, w, LOOKUP_HEADER_ONLY, &found);
        enum delete_result_type ret = DELETE_NOT_FOUND;
        if (it != NULL && cas_in != 0 && cas_in != ITEM_get_cas(it)) {
            ret = DELETE_CAS_MISMATCH;
        } else if (it != NULL) {
            *clsid = it->slabs_clsid;
            do_item_unlink(it, hv);
            ret = DELETE_OK;
        }
        item_remove(it);
        return ret;
    }
    const nitem_hdr *h = &p.u.hdr;
    if (w != NULL) {
        STAT_INCR(w->stats.tier_requests);
    }
    if (n_is_dead(h, *locp)) {
        do_reap_dead_n(locp, &p, hv, w);
        LOGGER_GET(key, nkey, LOOKUP_MISS, 0, 0);
        return DELETE_NOT_FOUND;
    }
    LOGGER_GET(key, nkey, LOOKUP_HIT, h->clsid, h->nbytes - 2);
    migrate_count_request(w, h->clsid, false);
    if (cas_in != 0 && cas_in != (settings.use_cas ? h->cas : 0)) {
        return DELETE_CAS_MISMATCH;
    }
    *clsid = h->clsid;
    do_unlink_n_slot(locp, hv, h->clsid,
                     item_make_ntotal(h->nkey, (int)h->nbytes));
    slabs_tier_free(p.off);
    return DELETE_OK;
}

enum delete_result_type item_delete(const char *key, size_t nkey,
                                    uint64_t cas_in, struct storage_worker *w,
                                    unsigned int *clsid)
{
    uint64_t hv = hash_key(key, nkey);
    item_lock(hv);
    enum delete_result_type ret = do_item_delete(key, nkey, hv, cas_in, w,
                                                 clsid);
    item_unlock(hv);
    return ret;
}

void items_init(void)
{
    memset(ccount, 0, sizeof(ccount));
    atomic_store(&total_items, 0);
    atomic_store(&cas_id, 0);
    tiering = false;
    active_policy = &policy_dram;
}
