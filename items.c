/*
 * items.c: the item API of items.h, zone-agnostic, and the tiered storage
 * engine behind it (HMCached sections 3.1-3.4; DESIGN sections 2, 5, 7, 9).
 *
 * Owns: item allocation with eviction or demotion, reference counting,
 * linking into the index (hash_desc.c) and the replacement queues
 * (items_mq.c, D items) or the N-zone (slabs_tier.c, clock_nvm.c), lazy
 * expiry and flush, cas ids, the store/arith/delete/touch semantics of
 * memcached 1.6.18 whichever zone holds the key, DRAM snapshots of N items,
 * placement of new versions, promotion N->D and demotion D->N, the
 * migrate.c engine callbacks and the tier thread, the page evictor of D
 * page moves (which demotes the page's items as MQ victims are demoted,
 * section 3.5), the notes of every item's counter, arrival and departure
 * to tier_reassign.c's histograms (tier_reassign_note, no lock),
 * `stats sizes` and cachedump output (the other listings and `stats tier`
 * are in items_stats.c, which reads the counters kept here), and
 * start-up/shutdown of the storage threads.
 *
 * Locks:
 *   - item_lock(hv) (thread.c) guards an item's metadata (it_flags,
 *     exptime, counter, cas, time) while it is linked, its index bucket,
 *     and for an N item its location word (hot metadata) and its chunk's
 *     bytes.  All do_* functions expect it held.  Code holding one item
 *     lock only ever trylocks others (MQ victims, CLOCK candidates).
 *   - the MQ class lock (items_mq.c), the CLOCK hand lock (clock_nvm.c),
 *     the tier lock (slabs_tier.c) and the slabs lock are taken inside
 *     item locks, in that order.
 *   - sizes_lock guards the `stats sizes` histogram (leaf).
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
 *   - counters here are relaxed atomics: no lock on the request path.
 *   - tier_lock_thread guards the tier thread's start/stop state.
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
 *   - a promotion never waits in the request: tier_promote=sync promotes
 *     inline only into a free D chunk, otherwise the key is queued;
 *   - when the N-zone cannot take a new value at all (its class has no N
 *     chunk and the zone no page left), it is stored in D, whatever the
 *     policy (counted as n_fallbacks), rather than refused.
 *
 * tier_policy=duallru (Fogcached) keeps this engine and swaps the
 * replacement: the MQ queues become the D-zone's segments, the N-zone's
 * segmented LRU (items_duallru.c) replaces the CLOCK, and promotion and
 * demotion run through its Move segments (the callbacks near the end).
 */
#include "config.h"
#include "items.h"
#include "items_internal.h"

#include "clock_nvm.h"
#include "crawler.h"
#include "hash_desc.h"
#include "items_duallru.h"
#include "items_mq.h"
#include "migrate.h"
#include "slabs.h"
#include "slabs_tier.h"
#include "tier_reassign.h"
#include "clock.h"
#include "hash.h"
#include "item.h"
#include "item_lock.h"
#include "settings.h"
#include "slab_class.h"
#include "stat_counter.h"
#include "stats.h"
#include "thread.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ALLOC_TRIES 10           /* evictions tried before out of memory */
#define SIZES_BUCKET 32          /* `stats sizes` granularity, as memcached */
#define CACHEDUMP_MAX (2 * 1024 * 1024)
#define COUNTER_MAX UINT16_MAX
/* An epoch stamp this far behind has decayed to zero (migrate_decay): the
 * walker rewrites it so that 3-bit stamps never wrap. */
#define DECAY_STAMP_NORMALIZE 4
#define TIER_TICK_BUSY_NS (1000 * 1000)
#define TIER_TICK_IDLE_NS (10 * 1000 * 1000)

struct class_counters ccount[MAX_NUMBER_OF_SLAB_CLASSES];
counter_t total_items;
static _Atomic uint64_t cas_id;

/* True when the N-zone is in use (tier_enabled() and a zone was carved);
 * set once by storage_init. */
bool tiering;
/* tiering with tier_policy=duallru; set once by storage_init */
bool duallru;

static pthread_mutex_t sizes_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *sizes_hist;     /* NULL = tracking disabled */
static unsigned int sizes_nbuckets;

/* ---- heap items: snapshots of N items and staging buffers ----
 * A heap item is an item header + key + value in malloc'd memory, preceded
 * by where its N version lives, so that metadata the protocol changes on
 * it can be written through to the real item. */

struct heap_meta {
    uint64_t noff;               /* N offset of its version; HEAP_NO_OFF */
    uint32_t reader;             /* snapshots: n_readers slot + 1; 0 none */
    uint32_t pad_;
    /* a snapshot a reply holds: the worker's in-flight gauge it is
     * charged to (released with it); NULL for the engine's own copies */
    _Atomic uint64_t *inflight;
};
#define HEAP_NO_OFF UINT64_MAX

/* Snapshots alive per N item, hashed by offset: the N-zone's analogue of a
 * D item's reference count, read only where memcached's behaviour depends
 * on whether a reply still holds the item (in-place incr).  A collision
 * can only make an item look shared. */
#define N_READER_SLOTS 4096
static _Atomic uint32_t n_readers[N_READER_SLOTS];

static unsigned int reader_slot(uint64_t noff)
{
    return (unsigned int)((noff >> 3) * 0x9E3779B97F4A7C15ULL >> 52);
}

static struct heap_meta *heap_meta(item *it)
{
    return (struct heap_meta *)it - 1;
}

static item *heap_alloc(size_t ntotal)
{
    struct heap_meta *m = malloc(sizeof(*m) + ntotal);
    if (m == NULL) {
        return NULL;
    }
    m->noff = HEAP_NO_OFF;
    m->reader = 0;
    m->inflight = NULL;
    return (item *)(m + 1);
}

static bool is_heap(const item *it)
{
    return (it->it_flags & ITEM_HEAP) != 0;
}

/* ---- references ---- */

static uint16_t refcount_incr(item *it)
{
    return atomic_fetch_add_explicit(&it->refcount, 1,
                                     memory_order_acq_rel) + 1;
}

static uint16_t refcount_decr(item *it)
{
    return atomic_fetch_sub_explicit(&it->refcount, 1,
                                     memory_order_acq_rel) - 1;
}

static uint16_t refcount_get(item *it)
{
    return atomic_load_explicit(&it->refcount, memory_order_acquire);
}

static void item_free(item *it)
{
    if (is_heap(it)) {
        struct heap_meta *m = heap_meta(it);
        if (m->reader != 0) {
            atomic_fetch_sub_explicit(&n_readers[m->reader - 1], 1,
                                      memory_order_relaxed);
        }
        if (m->inflight != NULL) {
            atomic_fetch_sub_explicit(m->inflight, ITEM_ntotal(it),
                                      memory_order_relaxed);
        }
        free(m);
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

/* ---- time, expiry, flush, cas ---- */

static rel_time_t load_exptime(const item *it)
{
    return __atomic_load_n(&it->exptime, __ATOMIC_RELAXED);
}

static void store_exptime(item *it, rel_time_t exptime)
{
    __atomic_store_n(&it->exptime, exptime, __ATOMIC_RELAXED);
}

static bool exptime_passed(rel_time_t exptime)
{
    return exptime != 0 && exptime <= current_time;
}

/* flush_all sets oldest_live (and, with cas, oldest_cas): once oldest_live
 * has passed, items last stored/bumped at or before it are invalid, and so
 * are items whose cas predates the flush (stored in the flush's second). */
static bool flushed_at(rel_time_t time, uint64_t cas)
{
    rel_time_t oldest_live = __atomic_load_n(&settings.oldest_live,
                                             __ATOMIC_RELAXED);
    if (oldest_live == 0 || oldest_live > current_time) {
        return false;
    }
    uint64_t oldest_cas = __atomic_load_n(&settings.oldest_cas,
                                          __ATOMIC_RELAXED);
    return time <= oldest_live
        || (oldest_cas != 0 && cas != 0 && cas < oldest_cas);
}

static bool item_is_expired(const item *it)
{
    return exptime_passed(load_exptime(it));
}

static bool item_is_flushed(const item *it)
{
    return flushed_at(it->time, it->cas);
}

static bool item_is_dead(const item *it)
{
    return item_is_expired(it) || item_is_flushed(it);
}

/* An N item's last access: the header's time plus the word's delta. */
static rel_time_t n_last_access(const nitem_hdr *h, uint64_t loc)
{
    return h->time + hd_n_atime(loc);
}

static bool n_is_flushed(const nitem_hdr *h, uint64_t loc)
{
    return flushed_at(n_last_access(h, loc), h->cas);
}

static bool n_is_dead(const nitem_hdr *h, uint64_t loc)
{
    return exptime_passed(h->exptime) || n_is_flushed(h, loc);
}

/* Also with -C: the cas is each version's identity here (find_version);
 * ITEM_get_cas hides it from clients then. */
uint64_t get_cas_id(void)
{
    return atomic_fetch_add_explicit(&cas_id, 1, memory_order_relaxed) + 1;
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
}

/* ---- stats sizes histogram ---- */

static void sizes_account(size_t ntotal, bool add)
{
    pthread_mutex_lock(&sizes_lock);
    if (sizes_hist != NULL) {
        size_t bucket = (ntotal + SIZES_BUCKET - 1) / SIZES_BUCKET;
        if (bucket < sizes_nbuckets) {
            if (add) {
                sizes_hist[bucket]++;
            } else if (sizes_hist[bucket] > 0) {
                /* Items linked before tracking started were not counted. */
                sizes_hist[bucket]--;
            }
        }
    }
    pthread_mutex_unlock(&sizes_lock);
}

void item_stats_sizes_enable(void)
{
    pthread_mutex_lock(&sizes_lock);
    if (sizes_hist == NULL) {
        unsigned int n = (unsigned int)(settings.item_size_max / SIZES_BUCKET
                                        + 2);
        sizes_hist = calloc(n, sizeof(*sizes_hist));
        sizes_nbuckets = sizes_hist != NULL ? n : 0;
    }
    settings.track_sizes = sizes_hist != NULL;
    pthread_mutex_unlock(&sizes_lock);
}

void item_stats_sizes_disable(void)
{
    pthread_mutex_lock(&sizes_lock);
    free(sizes_hist);
    sizes_hist = NULL;
    sizes_nbuckets = 0;
    settings.track_sizes = false;
    pthread_mutex_unlock(&sizes_lock);
}

void item_stats_sizes(ADD_STAT add_stats, void *c)
{
    pthread_mutex_lock(&sizes_lock);
    if (sizes_hist == NULL) {
        pthread_mutex_unlock(&sizes_lock);
        append_stat("sizes_status", add_stats, c, "disabled");
        return;
    }
    for (unsigned int i = 0; i < sizes_nbuckets; i++) {
        if (sizes_hist[i] != 0) {
            char key[16];
            snprintf(key, sizeof(key), "%u", i * SIZES_BUCKET);
            append_stat(key, add_stats, c, "%llu",
                        (unsigned long long)sizes_hist[i]);
        }
    }
    pthread_mutex_unlock(&sizes_lock);
}

/* Count a linked item in or out of the totals (both zones). */
static inline void account_item(unsigned int clsid, size_t ntotal, bool in_nvm,
                         bool add)
{
    struct class_counters *cc = &ccount[clsid];
    if (add) {
        ctr_add(&cc->curr_items, 1);
        ctr_add(&cc->curr_bytes, ntotal);
        if (in_nvm) {
            ctr_add(&cc->n_items, 1);
        }
    } else {
        ctr_sub(&cc->curr_items, 1);
        ctr_sub(&cc->curr_bytes, ntotal);
        if (in_nvm) {
            ctr_sub(&cc->n_items, 1);
        }
    }
    if (settings.track_sizes) {
        sizes_account(ntotal, add);
    }
}

/* ---- hotness (migrate.c arithmetic on our fields) ---- */

/* Count one access to a D item: lazy decay from its epoch stamp, then +1. */
static void count_access(item *it)
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
}

/* Should an N item whose counter just became `counter` move to D? */
static bool wants_promotion(unsigned int clsid, uint32_t counter)
{
    switch (settings.tier_policy) {
    case TIER_POLICY_HMCACHED:
        return counter > migrate_threshold(clsid);
    case TIER_POLICY_TLC:
        return true;
    default:
        return false;
    }
}

/* Record a hit on the N item of *locp (header time `base`): counter, CLOCK
 * bit, fetched flag, last access.  Returns whether it is now hot enough to
 * be promoted. */
static bool n_bump(uint64_t *locp, rel_time_t base, unsigned int clsid)
{
    uint64_t loc = *locp;
    uint32_t epoch = migrate_epoch();
    uint32_t c = migrate_decay(hd_n_counter(loc),
                               (epoch - hd_n_epoch(loc)) & 7);
    c = migrate_counter_bump(c, HD_N_COUNTER_MAX);
    tier_reassign_note(clsid, (int)hd_n_counter(loc), (int)c);
    loc = hd_n_set_counter(loc, c);
    loc = hd_n_set_epoch(loc, epoch);
    loc = hd_n_set_ref(loc, true);
    loc = hd_n_set_flags(loc, hd_n_flags(loc) | ITEM_FETCHED);
    loc = hd_n_set_atime(loc, base, current_time);
    *locp = loc;
    return wants_promotion(clsid, c);
}

/* ---- allocation ---- */

static size_t item_make_ntotal(size_t nkey, int nbytes)
{
    return sizeof(item) + nkey + 1 + (size_t)nbytes;
}

bool item_size_ok(size_t nkey, client_flags_t flags, int nbytes)
{
    if (nkey > KEY_MAX_LENGTH || nbytes < 2) {
        return false;
    }
    return slabs_clsid(item_make_ntotal(nkey, nbytes)) != 0;
}

static bool accept_dead(item *it, void *arg)
{
    return item_is_dead(it);
}

/* Record why a victim leaves (it is pinned, its item lock held). */
static void count_victim(const item *it, bool dead)
{
    struct class_counters *cc = &ccount[it->slabs_clsid];
    ctr_add(&cc->direct_reclaims, 1);
    if (dead) {
        ctr_add(&cc->reclaimed, 1);
        if ((it->it_flags & ITEM_FETCHED) == 0 && item_is_expired(it)) {
            ctr_add(&cc->expired_unfetched, 1);
        }
        return;
    }
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
}

/* Does the policy move MQ victims to the N-zone? */
static bool policy_demotes(void)
{
    return tiering && (settings.tier_policy == TIER_POLICY_HMCACHED
                       || settings.tier_policy == TIER_POLICY_TLC
                       || settings.tier_policy == TIER_POLICY_DUALLRU);
}

/* An N chunk of class id: a free one, else one the CLOCK (duallru: the
 * N-zone's LRU) frees, evicting only when may_evict. */
static bool n_chunk(unsigned int id, bool may_evict, uint64_t *off)
{
    if (slabs_tier_alloc(id, off)) {
        return true;
    }
    return duallru ? dlru_n_reclaim(id, may_evict, off)
                   : clock_nvm_reclaim(id, may_evict, off);
}

static void nitem_hdr_from(nitem_hdr *h, const item *it, uint64_t hv)
{
    memset(h, 0, sizeof(*h));
    h->hv = hv;
    h->time = it->time;
    h->exptime = load_exptime(it);
    h->nbytes = it->nbytes;
    h->nkey = it->nkey;
    h->clsid = it->slabs_clsid;
    h->flags = it->it_flags & ITEM_KEY_BINARY;
    h->cas = it->cas;
    h->client_flags = it->client_flags;
}

/* Write it (a D item or a staging buffer) to the N chunk at off. */
static void write_to_nvm(const item *it, uint64_t hv, uint64_t off)
{
    nitem_hdr h;
    nitem_hdr_from(&h, it, hv);
    nitem_write(off, &h, ITEM_key(it), (size_t)it->nkey + 1 + it->nbytes);
}

/* Demotion D->N of the MQ victim (its item lock held, pinned): write it to
 * an N chunk and point its slot there, carrying its hot metadata.  The
 * DRAM copy leaves the index; readers holding it finish with it and the
 * victim's pin keeps it until the caller drops that. */
static bool demote(item *victim, uint64_t hv, bool may_evict)
{
    unsigned int id = victim->slabs_clsid;
    uint64_t off;
    if (!n_chunk(id, may_evict, &off)) {
        return false;
    }
    uint64_t *locp = assoc_find_item(victim, hv);
    if (locp == NULL) {
        slabs_tier_free(off);
        return false;
    }
    write_to_nvm(victim, hv, off);
    *locp = hd_n_make(off, victim->counter, victim->it_flags, victim->epoch,
                      0);
    if (duallru) {
        dlru_n_link(id, off, DLRU_COLD);     /* Fogcached: N's COLD head */
    }
    /* one histogram for both zones: only the 8-bit clamp is news */
    tier_reassign_note(id, victim->counter, (int)hd_n_counter(*locp));
    victim->it_flags &= ~ITEM_LINKED;
    mq_unlink(victim);
    struct class_counters *cc = &ccount[id];
    ctr_add(&cc->n_items, 1);
    ctr_add(&cc->demotions, 1);
    item_remove(victim);        /* the index's reference */
    return true;
}

/* Free one D chunk of class id: reclaim a dead item, demote the MQ victim
 * (policies that migrate) or, if allowed, evict it.  False when nothing
 * could be freed. */
static bool make_room(unsigned int id, bool may_evict)
{
    uint64_t hv;
    bool demotes = policy_demotes();
    /* Under -M a victim may still move to the N-zone if that needs no
     * eviction there. */
    bool take_any = may_evict || (demotes && slabs_tier_can_alloc(id));
    item *victim = mq_pick_victim(id, take_any ? NULL : accept_dead, NULL,
                                  &hv);
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
        do_item_unlink(victim, hv);
    }
    item_unlock(hv);
    item_remove(victim);        /* drops the pin; the chunk is freed */
    return freed;
}

/* A D chunk of class id for ntotal bytes, making room as allowed. */
static item *d_chunk(unsigned int id, size_t ntotal, bool may_evict)
{
    item *it = NULL;
    for (int tries = 0; tries < ALLOC_TRIES; tries++) {
        it = slabs_alloc(ntotal, id);
        if (it != NULL || !make_room(id, may_evict)) {
            break;
        }
    }
    return it;
}

/* Where a new version of a key goes. */
enum placement {
    PLACE_PROBE,                 /* look the key up first */
    PLACE_D,                     /* the key lives in D: it stays there */
    PLACE_POLICY                 /* the key is not in D: the policy says */
};

static bool key_in_dram(const char *key, size_t nkey)
{
    uint64_t hv = hash_key(key, nkey);
    item_lock(hv);
    bool in_d = assoc_find(key, nkey, hv) != NULL;
    item_unlock(hv);
    return in_d;
}

/* HM-UNI: a key's zone in proportion to the zones' capacities. */
static bool uni_places_in_nvm(const char *key, size_t nkey)
{
    struct slabs_tier_totals tt;
    slabs_tier_get_totals(&tt);
    uint64_t d = settings.maxbytes;
    uint64_t total = d + tt.zone_limit;
    return total != 0 && hash_key(key, nkey) % total >= d;
}

/* Decide the zone of a new version (tiering).  Returns true for the
 * N-zone; false for D, with *chunk set when a free D chunk was taken. */
static bool places_in_nvm(const char *key, size_t nkey, unsigned int id,
                          size_t ntotal, enum placement where, item **chunk)
{
    switch (settings.tier_policy) {
    case TIER_POLICY_NVM:
        return true;
    case TIER_POLICY_UNI:
        return uni_places_in_nvm(key, nkey);
    case TIER_POLICY_DUALLRU:
        /* Fogcached: new items in D, whose COLD tails move to N */
        return settings.tier_placement == TIER_PLACE_NVM;
    default:
        break;
    }
    if (where == PLACE_PROBE) {
        where = key_in_dram(key, nkey) ? PLACE_D : PLACE_POLICY;
    }
    if (where == PLACE_D) {
        return false;
    }
    if (settings.tier_placement == TIER_PLACE_NVM) {
        return true;
    }
    *chunk = slabs_alloc(ntotal, id);
    return *chunk == NULL;
}

static item *do_item_alloc(const char *key, size_t nkey,
                           client_flags_t flags, rel_time_t exptime,
                           int nbytes, enum placement where)
{
    if (!item_size_ok(nkey, flags, nbytes)) {
        return NULL;
    }
    size_t ntotal = item_make_ntotal(nkey, nbytes);
    unsigned int id = slabs_clsid(ntotal);
    item *it = NULL;
    uint16_t it_flags = 0;

    if (tiering && places_in_nvm(key, nkey, id, ntotal, where, &it)) {
        /* Filled by the caller in DRAM, written to NVM when linked. */
        it = heap_alloc(ntotal);
        it_flags = ITEM_HEAP;
    } else if (it == NULL && (it = slabs_alloc(ntotal, id)) == NULL) {
        it = d_chunk(id, ntotal, settings.evict_to_free != 0);
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
                 rel_time_t exptime, int nbytes)
{
    return do_item_alloc(key, nkey, flags, exptime, nbytes, PLACE_PROBE);
}

/* A new version of old_it's key, allocated with old_it's item lock held:
 * no probe (old_it says where the key lives). */
static item *alloc_version(const item *old_it, client_flags_t flags,
                           rel_time_t exptime, int nbytes)
{
    return do_item_alloc(ITEM_key(old_it), old_it->nkey, flags, exptime,
                         nbytes, is_heap(old_it) ? PLACE_POLICY : PLACE_D);
}

/* ---- link / unlink ---- */

static bool do_link_d(item *it, uint64_t hv)
{
    it->it_flags |= ITEM_LINKED;
    if (!assoc_insert(it, hv)) {
        it->it_flags &= ~ITEM_LINKED;
        return false;
    }
    refcount_incr(it);
    account_item(it->slabs_clsid, ITEM_ntotal(it), false, true);
    ctr_add(&total_items, 1);
    tier_reassign_note(it->slabs_clsid, -1, it->counter);
    mq_link(it);
    return true;
}

/* Where a new version will be stored, secured before anything is
 * unlinked: a store that replaces a version must never remove it and then
 * find no room for its successor. */
struct link_target {
    uint64_t noff;               /* an N chunk for a staging buffer */
    item *d;                     /* else a D chunk: the item itself, or the
                                  * copy of a staging buffer the N-zone could
                                  * not take */
};

/* Secure the chunk `it` will be linked in (item lock held).  A D item
 * already has its chunk; a staging buffer needs an N chunk, else a D one
 * (counted as an n_fallback).  False when neither zone has room. */
static bool do_reserve_target(item *it, struct link_target *tgt)
{
    tgt->noff = HEAP_NO_OFF;
    tgt->d = NULL;
    if (!is_heap(it)) {
        tgt->d = it;
        return true;
    }
    bool may_evict = settings.evict_to_free != 0;
    if (n_chunk(it->slabs_clsid, may_evict, &tgt->noff)) {
        return true;
    }
    tgt->noff = HEAP_NO_OFF;
    ctr_add(&ccount[it->slabs_clsid].n_fallbacks, 1);
    tgt->d = d_chunk(it->slabs_clsid, ITEM_ntotal(it), may_evict);
    return tgt->d != NULL;
}

/* Give back a target that was not linked. */
static void release_target(item *it, struct link_target *tgt)
{
    if (tgt->noff != HEAP_NO_OFF) {
        slabs_tier_free(tgt->noff);
    } else if (tgt->d != NULL && tgt->d != it) {
        slabs_free(tgt->d, ITEM_ntotal(it), it->slabs_clsid);
    }
}

/* Store the staging buffer `it` in the N chunk at off. */
static bool do_link_n(item *it, uint64_t hv, uint64_t off)
{
    write_to_nvm(it, hv, off);
    uint64_t loc = hd_n_make(off, it->counter, it->it_flags, it->epoch, 0);
    if (!assoc_insert_loc(loc, hv)) {
        return false;
    }
    heap_meta(it)->noff = off;
    if (duallru) {
        dlru_n_link(it->slabs_clsid, off, DLRU_HOT);
    }
    account_item(it->slabs_clsid, ITEM_ntotal(it), true, true);
    ctr_add(&total_items, 1);
    tier_reassign_note(it->slabs_clsid, -1, (int)hd_n_counter(loc));
    return true;
}

/* Store a D copy of the staging buffer `it` in the D chunk d. */
static bool do_link_copy(item *it, uint64_t hv, item *d)
{
    memcpy(d, it, ITEM_ntotal(it));
    d->it_flags = it->it_flags & ~ITEM_HEAP;
    atomic_store_explicit(&d->refcount, 0, memory_order_relaxed);
    return do_link_d(d, hv);
}

/* Link `it` into the target secured for it (item lock held); on failure
 * the target is given back. */
static bool do_link_target(item *it, uint64_t hv, struct link_target *tgt)
{
    it->time = current_time;
    it->cas = get_cas_id();
    count_access(it);
    bool linked;
    if (tgt->noff != HEAP_NO_OFF) {
        linked = do_link_n(it, hv, tgt->noff);
    } else if (tgt->d == it) {
        linked = do_link_d(it, hv);
    } else {
        linked = do_link_copy(it, hv, tgt->d);
    }
    if (!linked) {
        release_target(it, tgt);
    }
    return linked;
}

/* Link a fresh item under its key (item lock held).  Linking is a store,
 * so it counts as an access. */
static bool do_item_link(item *it, uint64_t hv)
{
    struct link_target tgt;
    return do_reserve_target(it, &tgt) && do_link_target(it, hv, &tgt);
}

/* Remove the N item of *locp from the index and the totals; its chunk is
 * left to the caller. */
static void do_unlink_n_slot(uint64_t *locp, uint64_t hv, unsigned int clsid,
                             size_t ntotal)
{
    tier_reassign_note(clsid, (int)hd_n_counter(*locp), -1);
    if (duallru) {
        dlru_n_unlink(clsid, hd_n_offset(*locp));
    }
    assoc_delete_loc(locp, hv);
    account_item(clsid, ntotal, true, false);
}

static void do_unlink_d(item *it, uint64_t hv)
{
    if ((it->it_flags & ITEM_LINKED) == 0) {
        return;
    }
    it->it_flags &= ~ITEM_LINKED;
    account_item(it->slabs_clsid, ITEM_ntotal(it), false, false);
    tier_reassign_note(it->slabs_clsid, it->counter, -1);
    uint64_t *locp = assoc_find_item(it, hv);
    if (locp != NULL) {
        assoc_delete_loc(locp, hv);
    }
    mq_unlink(it);
    item_remove(it);            /* the index's reference */
}

/* The stored item that `it` (a referenced D item, a snapshot or a stored
 * staging buffer) stands for, if it is still the key's current version:
 * *d for a D item, *locp for an N item.  A referenced D item is its own
 * identity while linked; otherwise a version is known by its cas, which
 * every stored version has, unique, even under -C (memcached.h), and which
 * migrations carry.  An N offset alone is no identity: once the lock has
 * been dropped its chunk may hold a newer version of the same key. */
enum version_zone { VERSION_GONE, VERSION_D, VERSION_N };

/* cas_of_n reads only the header bytes up to and including cas. */
#define NITEM_CAS_BYTES (offsetof(nitem_hdr, cas) + sizeof(uint64_t))

static enum version_zone find_version(item *it, uint64_t hv, item **d,
                                      uint64_t **locp)
{
    if (!is_heap(it) && (it->it_flags & ITEM_LINKED)) {
        *d = it;
        return VERSION_D;
    }
    if (is_heap(it) && heap_meta(it)->noff != HEAP_NO_OFF) {
        uint64_t off = heap_meta(it)->noff;
        *locp = assoc_find_noff(hv, off);
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
    switch (find_version(it, hv, &d, &locp)) {
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

/* When both versions are N items of one class, the new one is written
 * over the old one's chunk, which needs no room: no reader points into an
 * N chunk (readers hold copies) and the item lock keeps everyone else out
 * until the new version is whole.  Unlinks old_it and returns the chunk
 * as tgt; false when the shortcut does not apply. */
static bool do_take_chunk_of(item *old_it, item *new_it, uint64_t hv,
                             struct link_target *tgt)
{
    item *d;
    uint64_t *locp;
    if (!is_heap(old_it) || !is_heap(new_it)
            || old_it->slabs_clsid != new_it->slabs_clsid
            || find_version(old_it, hv, &d, &locp) != VERSION_N) {
        return false;
    }
    tgt->noff = hd_n_offset(*locp);
    tgt->d = NULL;
    do_unlink_n_slot(locp, hv, old_it->slabs_clsid, ITEM_ntotal(old_it));
    heap_meta(old_it)->noff = HEAP_NO_OFF;
    return true;
}

/* new_it takes old_it's place; it inherits the key's hotness.  Its chunk
 * is secured first: when there is no room, old_it stays as it was.  After
 * the unlink the index has a free slot in the key's chain, so the link
 * cannot fail for want of one. */
static bool do_item_replace(item *old_it, item *new_it, uint64_t hv)
{
    struct link_target tgt;
    new_it->counter = old_it->counter;
    new_it->epoch = old_it->epoch;
    if (do_take_chunk_of(old_it, new_it, hv, &tgt)) {
        return do_link_target(new_it, hv, &tgt);
    }
    if (!do_reserve_target(new_it, &tgt)) {
        return false;
    }
    do_item_unlink(old_it, hv);
    return do_link_target(new_it, hv, &tgt);
}

/* ---- metadata setters (items.h) ---- */

void do_item_set_exptime(item *it, uint64_t hv, rel_time_t exptime)
{
    store_exptime(it, exptime);
    if ((it->it_flags & (ITEM_LINKED | ITEM_HEAP)) == ITEM_LINKED) {
        return;
    }
    item *d;
    uint64_t *locp;
    switch (find_version(it, hv, &d, &locp)) {
    case VERSION_D:
        store_exptime(d, exptime);
        break;
    case VERSION_N:
        nitem_write_exptime(hd_n_offset(*locp), exptime);
        break;
    case VERSION_GONE:
        break;
    }
}

void do_item_set_flags(item *it, uint64_t hv, uint16_t set, uint16_t clear)
{
    it->it_flags = (uint16_t)((it->it_flags | set) & ~clear);
    if ((it->it_flags & (ITEM_LINKED | ITEM_HEAP)) == ITEM_LINKED) {
        return;
    }
    item *d;
    uint64_t *locp;
    switch (find_version(it, hv, &d, &locp)) {
    case VERSION_D:
        d->it_flags = (uint16_t)((d->it_flags | set) & ~clear);
        break;
    case VERSION_N: {
        uint16_t f = (uint16_t)((hd_n_flags(*locp) | set) & ~clear);
        *locp = hd_n_set_flags(*locp, f);
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
        return;
    }
    item *d;
    uint64_t *locp;
    /* find the version by the cas it had */
    it->cas = old;
    enum version_zone z = find_version(it, hv, &d, &locp);
    it->cas = cas;
    switch (z) {
    case VERSION_D:
        d->cas = cas;
        break;
    case VERSION_N:
        nitem_write_cas(hd_n_offset(*locp), cas);
        break;
    case VERSION_GONE:
        break;
    }
}

/* ---- promotion N->D ---- */

#ifdef MEMCACHED_DEBUG
static _Atomic unsigned int debug_failing_snapshots;

void items_debug_fail_snapshots(unsigned int n)
{
    atomic_store_explicit(&debug_failing_snapshots, n, memory_order_relaxed);
}

static bool debug_snapshot_fails(void)
{
    unsigned int n = atomic_load_explicit(&debug_failing_snapshots,
                                          memory_order_relaxed);
    while (n > 0) {
        if (atomic_compare_exchange_weak_explicit(&debug_failing_snapshots,
                &n, n - 1, memory_order_relaxed, memory_order_relaxed)) {
            return true;
        }
    }
    return false;
}
#endif

/* The memory of a snapshot of an ntotal-byte N item, charged to *inflight
 * (a worker's gauge, when a reply will hold it) until freed; NULL when out
 * of memory.  Taken before anything about the hit is recorded, so that a
 * failure changes nothing. */
static item *snapshot_alloc(size_t ntotal, _Atomic uint64_t *inflight)
{
#ifdef MEMCACHED_DEBUG
    if (debug_snapshot_fails()) {
        return NULL;
    }
#endif
    item *it = heap_alloc(ntotal);
    if (it != NULL && inflight != NULL) {
        atomic_fetch_add_explicit(inflight, ntotal, memory_order_relaxed);
        heap_meta(it)->inflight = inflight;
    }
    return it;
}

/* Fill the snapshot it with the N item probed at *locp, whose location
 * word is loc (item lock held). */
static void snapshot_fill(item *it, const struct nitem_probe *p, uint64_t loc)
{
    const nitem_hdr *h = &p->u.hdr;
    unsigned int slot = reader_slot(p->off);
    heap_meta(it)->noff = p->off;
    heap_meta(it)->reader = slot + 1;
    atomic_fetch_add_explicit(&n_readers[slot], 1, memory_order_relaxed);
    it->next = it->prev = NULL;
    it->cas = h->cas;
    it->time = n_last_access(h, loc);
    it->exptime = h->exptime;
    it->nbytes = h->nbytes;
    it->client_flags = h->client_flags;
    atomic_store_explicit(&it->refcount, 1, memory_order_relaxed);
    it->it_flags = (uint16_t)(ITEM_HEAP | hd_n_flags(loc)
                              | (h->flags & ITEM_KEY_BINARY));
    it->counter = (uint16_t)hd_n_counter(loc);
    it->slabs_clsid = h->clsid;
    it->nkey = h->nkey;
    it->mq_level = 0;
    it->epoch = (uint8_t)hd_n_epoch(loc);
    nitem_read_body(p, ITEM_key(it));
}

/* A DRAM snapshot of the N item probed at *locp for the engine's own use
 * (item lock held); NULL when out of memory. */
static item *snapshot_make(const struct nitem_probe *p, uint64_t loc)
{
    const nitem_hdr *h = &p->u.hdr;
    item *it = snapshot_alloc(item_make_ntotal(h->nkey, (int)h->nbytes),
                              NULL);
    if (it != NULL) {
        snapshot_fill(it, p, loc);
    }
    return it;
}

/* Move the N item of *locp, whose snapshot is snap, into the D chunk d
 * (item lock held): switch the slot, free the N chunk. */
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
    atomic_store_explicit(&d->refcount, 1, memory_order_relaxed);
    d->mq_level = 0;
    /* the counter is the slot's at this access, already decayed */
    d->counter = (uint16_t)hd_n_counter(*locp);
    d->epoch = (uint8_t)hd_n_epoch(*locp);
    *locp = hd_loc_from_item(d);
    if (duallru) {
        dlru_n_unlink(id, off);
    }
    slabs_tier_free(off);
    heap_meta(snap)->noff = HEAP_NO_OFF;
    mq_link(d);
    struct class_counters *cc = &ccount[id];
    ctr_sub(&cc->n_items, 1);
    ctr_add(&cc->promotions, 1);
    migrate_count_promotion(id, lines);
}

/* After a hit made the N item of *locp hot (snapshot snap): promote it now
 * (tier_promote=sync, into a free D chunk only) or queue it. */
static void promote_after_hit(uint64_t *locp, uint64_t hv, item *snap)
{
    if (!settings.tier_promote_async) {
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

/* ---- lookup ---- */

static inline void do_item_bump(item *it)
{
    if ((it->it_flags & ITEM_FETCHED) == 0) {
        it->it_flags |= ITEM_FETCHED;
    } else if (__builtin_expect(duallru, 0)
            && (it->it_flags & ITEM_ACTIVE) == 0) {
        it->it_flags |= ITEM_ACTIVE;
        dlru_d_activated(it);
    } else {
        it->it_flags |= ITEM_ACTIVE;
    }
    count_access(it);
    mq_bump(it);
}

/* The caller must hold item_lock(hv): see items.h. */
void item_bump(LIBEVENT_THREAD *t, item *it, uint64_t hv)
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
    bool refd = duallru && (hd_n_flags(*locp) & ITEM_FETCHED) != 0;
    it->it_flags |= ITEM_FETCHED;
    if (n_bump(locp, base, it->slabs_clsid)) {
        promote_after_hit(locp, hv, it);
    }
    if (refd) {
        dlru_n_ref(it->slabs_clsid, heap_meta(it)->noff, DLRU_FLAGS_UNKNOWN);
    }
}

/* May a reply of t take another ntotal bytes of N-zone value?  The
 * thread's replies that wait to be written hold their snapshots; past
 * tier_inflight_limit (0: none) further N hits are refused, except on a
 * thread that holds none, so that a value larger than the limit can still
 * be served one at a time. */
static bool inflight_admits(LIBEVENT_THREAD *t, size_t ntotal)
{
    uint64_t held = atomic_load_explicit(&t->tier_inflight_bytes,
                                         memory_order_relaxed);
    uint64_t limit = settings.tier_inflight_limit;
    if (limit == 0 || held == 0 || held + ntotal <= limit) {
        return true;
    }
    STAT_INCR(t->stats.tier_inflight_refused);
    return false;
}

/* A lookup found the N item of *locp (probe p) expired or flushed: unlink
 * it and count why. */
static void do_reap_dead_n(uint64_t *locp, const struct nitem_probe *p,
                           uint64_t hv, LIBEVENT_THREAD *t)
{
    const nitem_hdr *h = &p->u.hdr;
    bool flushed = n_is_flushed(h, *locp);
    do_unlink_n_slot(locp, hv, h->clsid,
                     item_make_ntotal(h->nkey, (int)h->nbytes));
    slabs_tier_free(p->off);
    if (t != NULL) {
        if (flushed) {
            STAT_INCR(t->stats.get_flushed);
        } else {
            STAT_INCR(t->stats.get_expired);
        }
    }
}

/* An N hit: check expiry, count, snapshot, maybe promote.  A snapshot
 * that cannot be made changes nothing and sets *status to
 * LOOKUP_NO_MEMORY. */
static item *do_item_get_n(uint64_t *locp, const struct nitem_probe *p,
                           uint64_t hv, LIBEVENT_THREAD *t, bool do_update,
                           bool for_reply, enum item_lookup *status)
{
    const nitem_hdr *h = &p->u.hdr;
    size_t ntotal = item_make_ntotal(h->nkey, (int)h->nbytes);
    if (n_is_dead(h, *locp)) {
        do_reap_dead_n(locp, p, hv, t);
        return NULL;
    }
    _Atomic uint64_t *charge = NULL;
    if (for_reply && t != NULL) {
        if (!inflight_admits(t, ntotal)) {
            *status = LOOKUP_NO_MEMORY;
            return NULL;
        }
        charge = &t->tier_inflight_bytes;
    }
    item *snap = snapshot_alloc(ntotal, charge);
    if (snap == NULL) {
        *status = LOOKUP_NO_MEMORY;
        return NULL;
    }
    migrate_count_request(t, h->clsid, false);
    bool refd = duallru && do_update
        && (hd_n_flags(*locp) & ITEM_FETCHED) != 0;
    bool hot = do_update && n_bump(locp, h->time, h->clsid);
    if (refd) {
        dlru_n_ref(h->clsid, p->off, h->lru);
    }
    snapshot_fill(snap, p, *locp);
    if (hot) {
        promote_after_hit(locp, hv, snap);
    }
    *status = LOOKUP_HIT;
    return snap;
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

/* The lookup behind every item_get form and the engine's own: for_reply
 * when a client's reply will hold the result (the bounds above apply);
 * the engine's lookups (store, arithmetic, delete) release theirs within
 * the same hold of the item lock. */
static item *do_item_get(const char *key, size_t nkey, uint64_t hv,
                         LIBEVENT_THREAD *t, bool do_update, bool for_reply,
                         enum item_lookup *status)
{
    *status = LOOKUP_MISS;
    uint64_t *locp = assoc_find_loc(key, nkey, hv, &get_probe);
    if (tiering && t != NULL) {
        STAT_INCR(t->stats.tier_requests);
    }
    if (locp == NULL) {
        return NULL;
    }
    if (hd_loc_is_n(*locp)) {
        return do_item_get_n(locp, &get_probe, hv, t, do_update, for_reply,
                             status);
    }
    item *it = hd_loc_to_item(*locp);
    if (for_reply) {
        if (!refcount_take_for_reply(it)) {
            return NULL;
        }
    } else {
        refcount_incr(it);
    }
    if (item_is_flushed(it)) {
        do_item_unlink(it, hv);
        item_remove(it);
        if (t != NULL) {
            STAT_INCR(t->stats.get_flushed);
        }
        return NULL;
    }
    if (item_is_expired(it)) {
        do_item_unlink(it, hv);
        item_remove(it);
        if (t != NULL) {
            STAT_INCR(t->stats.get_expired);
        }
        return NULL;
    }
    /* d_hits, even without an N-zone (every hit is then a D hit): the
     * counter migrate_count_request(t, clsid, true) bumps, bumped inline
     * to keep the DRAM-only path short */
    if (t != NULL) {
        STAT_INCR(t->stats.tier_d_hits[it->slabs_clsid]);
    }
    if (do_update) {
        do_item_bump(it);
    }
    *status = LOOKUP_HIT;
    return it;
}

item *item_get(const char *key, size_t nkey, LIBEVENT_THREAD *t,
               bool do_update, enum item_lookup *status)
{
    uint64_t hv = hash_key(key, nkey);
    item_lock(hv);
    item *it = do_item_get(key, nkey, hv, t, do_update, true, status);
    item_unlock(hv);
    return it;
}

item *item_get_locked(const char *key, size_t nkey, LIBEVENT_THREAD *t,
                      bool do_update, uint64_t *hv,
                      enum item_lookup *status)
{
    *hv = hash_key(key, nkey);
    item_lock(*hv);
    return do_item_get(key, nkey, *hv, t, do_update, true, status);
}

item *item_touch(const char *key, size_t nkey, rel_time_t exptime,
                 LIBEVENT_THREAD *t, enum item_lookup *status)
{
    uint64_t hv = hash_key(key, nkey);
    item_lock(hv);
    item *it = do_item_get(key, nkey, hv, t, DO_UPDATE, true, status);
    if (it != NULL) {
        do_item_set_exptime(it, hv, exptime);
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

/* add on an existing key counts as a use of it (item lock held). */
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
        bool refd = duallru && (hd_n_flags(*locp) & ITEM_FETCHED) != 0;
        n_bump(locp, old_it->time - hd_n_atime(*locp), old_it->slabs_clsid);
        if (refd) {
            dlru_n_ref(old_it->slabs_clsid, heap_meta(old_it)->noff,
                       DLRU_FLAGS_UNKNOWN);
        }
    }
}

static enum store_item_type do_store_existing(item *old_it, item *it,
        enum store_cmd cmd, LIBEVENT_THREAD *t, uint64_t cas_in,
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

static enum store_item_type do_store_item(item *it, enum store_cmd cmd,
        LIBEVENT_THREAD *t, uint64_t hv, uint64_t cas_in,
        uint64_t *cas_out, bool cas_stale)
{
    enum item_lookup found;
    item *old_it = do_item_get(ITEM_key(it), it->nkey, hv, t, DONT_UPDATE,
                               false, &found);
    item *stored_it = it;
    enum store_item_type ret;

    if (found == LOOKUP_NO_MEMORY) {
        /* the key is there: acting as if it were not would link a second
         * version of it */
        ret = NO_MEMORY;
    } else if (old_it != NULL) {
        ret = do_store_existing(old_it, it, cmd, t, cas_in, cas_stale, hv,
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
    return ret;
}

enum store_item_type store_item(item *it, enum store_cmd cmd,
                                LIBEVENT_THREAD *t, uint64_t cas_in,
                                uint64_t *cas_out, bool cas_stale)
{
    uint64_t hv = hash_key(ITEM_key(it), it->nkey);
    item_lock(hv);
    enum store_item_type ret = do_store_item(it, cmd, t, hv, cas_in,
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

/* Write the new number into it (item lock held).  Like memcached: in place,
 * space padded, when it fits and nobody else holds the item (a D item
 * only); otherwise a new item replaces it.  Returns the item now holding
 * the value, with one reference for the caller, or NULL when out of
 * memory. */
static item *store_counter(item *it, const char *num, size_t len,
                           uint64_t hv)
{
    /* Only the index and we hold it: no reader can see a torn value, and
     * new readers wait for the item lock we hold. */
    if (!is_heap(it) && len + 2 <= it->nbytes && refcount_get(it) == 2) {
        it->cas = get_cas_id();
        memcpy(ITEM_data(it), num, len);
        memset(ITEM_data(it) + len, ' ', it->nbytes - len - 2);
        count_access(it);
        mq_bump(it);
        return it;
    }
    /* An N item that no other reply holds gets the length an in-place
     * update would have kept (it is a snapshot: its own reader counts 1). */
    bool as_in_place = is_heap(it) && len + 2 <= it->nbytes
        && heap_meta(it)->reader != 0
        && atomic_load_explicit(&n_readers[heap_meta(it)->reader - 1],
                                memory_order_relaxed) == 1;
    int nbytes = as_in_place ? (int)it->nbytes : (int)len + 2;
    item *new_it = alloc_version(it, it->client_flags, load_exptime(it),
                                 nbytes);
    if (new_it == NULL) {
        item_remove(it);
        return NULL;
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

static enum delta_result_type do_add_delta(LIBEVENT_THREAD *t,
        const char *key, size_t nkey, bool incr, uint64_t delta, char *buf,
        uint64_t cas_in, uint64_t *cas_out, item **it_out, uint64_t hv)
{
    uint64_t value;
    enum item_lookup found;
    item *it = do_item_get(key, nkey, hv, t, DONT_UPDATE, false, &found);
    if (found == LOOKUP_NO_MEMORY) {
        return DELTA_EOM;
    }
    if (it == NULL) {
        return DELTA_ITEM_NOT_FOUND;
    }
    if (cas_in != 0 && ITEM_get_cas(it) != cas_in) {
        item_remove(it);
        return DELTA_ITEM_CAS_MISMATCH;
    }
    if (it->nbytes <= 2 || !parse_counter(ITEM_data(it), it->nbytes - 2,
                                          &value)) {
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

enum delta_result_type add_delta(LIBEVENT_THREAD *t, const char *key,
                                 size_t nkey, bool incr, uint64_t delta,
                                 char *buf, uint64_t cas_in,
                                 uint64_t *cas_out, item **it_out)
{
    uint64_t hv = hash_key(key, nkey);
    item_lock(hv);
    enum delta_result_type ret = do_add_delta(t, key, nkey, incr, delta, buf,
                                              cas_in, cas_out, it_out, hv);
    item_unlock(hv);
    return ret;
}

/* ---- delete ---- */

/* Delete needs the version's header, never its value: it is found and
 * unlinked in place, with no copy, so it cannot fail for want of memory.
 * A dead version is unlinked and reported as a miss, as a lookup would. */
static enum delete_result_type do_item_delete(const char *key, size_t nkey,
        uint64_t hv, uint64_t cas_in, LIBEVENT_THREAD *t,
        unsigned int *clsid)
{
    struct nitem_probe p;
    uint64_t *locp = assoc_find_loc(key, nkey, hv, &p);
    if (locp == NULL || !hd_loc_is_n(*locp)) {
        /* a miss, or a D item: the ordinary lookup pins it, no copy */
        enum item_lookup found;
        item *it = do_item_get(key, nkey, hv, t, DONT_UPDATE, false, &found);
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
    if (t != NULL) {
        STAT_INCR(t->stats.tier_requests);
    }
    if (n_is_dead(h, *locp)) {
        do_reap_dead_n(locp, &p, hv, t);
        return DELETE_NOT_FOUND;
    }
    migrate_count_request(t, h->clsid, false);
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
                                    uint64_t cas_in, LIBEVENT_THREAD *t,
                                    unsigned int *clsid)
{
    uint64_t hv = hash_key(key, nkey);
    item_lock(hv);
    enum delete_result_type ret = do_item_delete(key, nkey, hv, cas_in, t,
                                                 clsid);
    item_unlock(hv);
    return ret;
}

static size_t clock_header_bytes(void);

/* ---- page reassignment, crawler services ---- */

#define EVICT_BATCH 256

/* One linked item of a page being emptied (its item lock held, pinned):
 * with a policy that demotes, a live item moves to the N-zone exactly as
 * an MQ victim does (demote(): the switch is made under the item lock,
 * readers holding the DRAM copy finish with it, a concurrent SET or DELETE
 * waits for the lock and then acts on the N version); a dead item, or one
 * the N-zone cannot take, leaves the cache.  Returns whether it left. */
static bool empty_page_item(item *it, uint64_t hv)
{
    struct class_counters *cc = &ccount[it->slabs_clsid];
    bool dead = item_is_dead(it);
    if (!dead && policy_demotes()
            && demote(it, hv, settings.evict_to_free != 0)) {
        ctr_add(&cc->page_demotions, 1);
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
static unsigned int items_evict_page(unsigned int clsid, const void *start,
                                     const void *end)
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
            if ((it->it_flags & ITEM_LINKED) && empty_page_item(it, hv)) {
                unlinked++;
            }
            item_unlock(hv);
            item_remove(it);
        }
    } while (n == EVICT_BATCH);
    return unlinked;
}

bool items_crawl_check(item *it)
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
    }
    item_unlock(hv);
    item_remove(it);
    return reclaimed;
}

bool items_crawl_check_n(uint64_t off)
{
    nitem_hdr h;
    bool busy;
    size_t need = clock_header_bytes();
    uint64_t *locp = assoc_lock_nchunk(off, &h, need, true, &busy);
    if (locp == NULL) {
        return false;
    }
    uint64_t hv = h.hv;
    bool reclaimed = false;
    /* the page's class: the header read without the lock is only a hint */
    ctr_add(&ccount[slabs_tier_clsid(off)].crawler_items_checked, 1);
    if (n_is_dead(&h, *locp)) {
        /* as the CLOCK hand: read again under the lock (touch, flush) */
        nitem_read_header(off, &h, need);
    }
    if (n_is_dead(&h, *locp)) {
        struct class_counters *cc = &ccount[h.clsid];
        if ((hd_n_flags(*locp) & ITEM_FETCHED) == 0
                && !n_is_flushed(&h, *locp)) {
            ctr_add(&cc->expired_unfetched, 1);
        }
        ctr_add(&cc->crawler_reclaimed, 1);
        do_unlink_n_slot(locp, hv, h.clsid,
                         item_make_ntotal(h.nkey, (int)h.nbytes));
        slabs_tier_free(off);
        reclaimed = true;
    }
    item_unlock(hv);
    return reclaimed;
}

/* Percent-encode everything but RFC 3986 unreserved characters. */
static size_t url_encode(const char *src, size_t n, char *dst, size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)src[i];
        if (isalnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == '~') {
            if (o + 1 >= size) {
                break;
            }
            dst[o++] = (char)ch;
        } else {
            if (o + 3 >= size) {
                break;
            }
            dst[o++] = '%';
            dst[o++] = hex[ch >> 4];
            dst[o++] = hex[ch & 15];
        }
    }
    dst[o] = '\0';
    return o;
}

/* One metadump line ("key=... size=...\n"); 0 when it does not fit. */
static size_t dump_line(char *buf, size_t size, const char *key, size_t nkey,
                        rel_time_t exptime, rel_time_t atime, uint64_t cas,
                        bool fetched, unsigned int clsid, size_t ntotal)
{
    char ekey[KEY_MAX_LENGTH * 3 + 1];
    url_encode(key, nkey, ekey, sizeof(ekey));
    int len = snprintf(buf, size,
            "key=%s exp=%lld la=%llu cas=%llu fetch=%s cls=%u size=%zu\n",
            ekey,
            exptime == 0 ? -1LL
                         : (long long)exptime + (long long)process_started,
            (unsigned long long)atime + (unsigned long long)process_started,
            (unsigned long long)cas, fetched ? "yes" : "no", clsid, ntotal);
    if (len < 0 || (size_t)len >= size) {
        return 0;
    }
    return (size_t)len;
}

/* The line of a linked D item, 0 if it is dead (item lock held). */
static size_t dump_line_d(item *it, char *buf, size_t size)
{
    if (item_is_dead(it)) {
        return 0;
    }
    return dump_line(buf, size, ITEM_key(it), it->nkey, load_exptime(it),
                     it->time, ITEM_get_cas(it),
                     (it->it_flags & ITEM_FETCHED) != 0, it->slabs_clsid,
                     ITEM_ntotal(it));
}

/* The line of the N item at the location word loc, 0 if it is dead (item
 * lock held): header and key read through nvm.h, last access and fetched
 * from the word.  size is the one the item would have in D, as `bytes`. */
static size_t dump_line_n(uint64_t loc, char *buf, size_t size)
{
    struct nitem_probe p;
    nitem_probe_stored(hd_n_offset(loc), &p);
    const nitem_hdr *h = &p.u.hdr;
    if (n_is_dead(h, loc)) {
        return 0;
    }
    return dump_line(buf, size, p.u.buf + sizeof(nitem_hdr), h->nkey,
                     h->exptime, n_last_access(h, loc),
                     settings.use_cas ? h->cas : 0,
                     (hd_n_flags(loc) & ITEM_FETCHED) != 0, h->clsid,
                     item_make_ntotal(h->nkey, (int)h->nbytes));
}

size_t items_crawl_dump(item *it, char *buf, size_t size)
{
    uint64_t hv = hash_key(ITEM_key(it), it->nkey);
    size_t len = 0;

    item_lock(hv);
    if (it->it_flags & ITEM_LINKED) {
        len = dump_line_d(it, buf, size);
    }
    item_unlock(hv);
    item_remove(it);
    return len;
}

size_t items_crawl_dump_n(uint64_t off, char *buf, size_t size)
{
    nitem_hdr h;
    bool busy;
    uint64_t *locp = assoc_lock_nchunk(off, &h, sizeof(h.hv), true, &busy);
    if (locp == NULL) {
        return 0;
    }
    size_t len = dump_line_n(*locp, buf, size);
    item_unlock(h.hv);
    return len;
}

struct dump_index_state {
    crawl_emit_fn emit;
    void *arg;
    bool stopped;
};

static void dump_index_visit(uint64_t *locp, void *arg)
{
    struct dump_index_state *st = arg;
    char line[METADUMP_LINE_MAX];
    if (st->stopped) {
        return;
    }
    size_t len = hd_loc_is_n(*locp)
        ? dump_line_n(*locp, line, sizeof(line))
        : dump_line_d(hd_loc_to_item(*locp), line, sizeof(line));
    if (len != 0 && !st->emit(line, len, st->arg)) {
        st->stopped = true;
    }
}

bool items_crawl_dump_index(crawl_emit_fn emit, void *arg)
{
    struct dump_index_state st = { emit, arg, false };
    assoc_walk(dump_index_visit, &st);
    return !st.stopped;
}

/* ---- stats cachedump ---- */

struct cachedump_state {
    char *buf;
    size_t used;
    unsigned int shown;
    unsigned int limit;
    bool more;                   /* neither the limit nor the buffer hit */
};

/* Add one "ITEM key [N b; T s]" line; false when the dump is complete. */
static bool cachedump_add(struct cachedump_state *st, const char *key,
                          size_t nkey, uint32_t nbytes, rel_time_t exptime)
{
    char line[KEY_MAX_LENGTH + 64];
    int len = snprintf(line, sizeof(line), "ITEM %.*s [%u b; %llu s]\r\n",
            (int)nkey, key, nbytes - 2,
            exptime == 0 ? 0ULL
                         : (unsigned long long)exptime
                           + (unsigned long long)process_started);
    if (len < 0 || st->used + (size_t)len + 6 > CACHEDUMP_MAX) {
        st->more = false;
        return false;
    }
    memcpy(st->buf + st->used, line, (size_t)len);
    st->used += (size_t)len;
    st->shown++;
    st->more = st->limit == 0 || st->shown < st->limit;
    return st->more;
}

static bool cachedump_visit(item *it, unsigned int level, void *arg)
{
    return cachedump_add(arg, ITEM_key(it), it->nkey, it->nbytes,
                         load_exptime(it));
}

/* After the D queues, the class's N items in zone order. */
static void cachedump_n(unsigned int clsid, struct cachedump_state *st)
{
    uint64_t cursor = 0, off;
    while (st->more && slabs_tier_next_used(clsid, &cursor, &off)) {
        nitem_hdr h;
        bool busy;
        if (assoc_lock_nchunk(off, &h, sizeof(h.hv), true, &busy) == NULL) {
            continue;
        }
        struct nitem_probe p;
        nitem_probe_stored(off, &p);
        cachedump_add(st, p.u.buf + sizeof(nitem_hdr), p.u.hdr.nkey,
                      p.u.hdr.nbytes, p.u.hdr.exptime);
        item_unlock(h.hv);
    }
}

char *item_cachedump(unsigned int clsid, unsigned int limit,
                     unsigned int *bytes)
{
    struct cachedump_state st = { malloc(CACHEDUMP_MAX), 0, 0, limit, true };
    if (st.buf == NULL) {
        return NULL;
    }
    if (clsid >= POWER_SMALLEST && clsid <= slabs_largest_clsid()) {
        mq_for_each(clsid, cachedump_visit, &st);
        cachedump_n(clsid, &st);
    }
    memcpy(st.buf + st.used, "END\r\n", 5);
    st.used += 5;
    *bytes = (unsigned int)st.used;
    return st.buf;
}

/* ---- the N-zone's CLOCK: our side (clock_nvm.h) ---- */

static bool clock_is_dead(const nitem_hdr *h, uint64_t loc)
{
    return n_is_dead(h, loc);
}

static void clock_unlink(uint64_t *locp, uint64_t hv, const nitem_hdr *h,
                         bool dead)
{
    struct class_counters *cc = &ccount[h->clsid];
    ctr_add(&cc->direct_reclaims, 1);
    if (dead) {
        ctr_add(&cc->reclaimed, 1);
        if ((hd_n_flags(*locp) & ITEM_FETCHED) == 0
                && exptime_passed(h->exptime)) {
            ctr_add(&cc->expired_unfetched, 1);
        }
    } else {
        ctr_add(&cc->evicted, 1);
        ctr_add(&cc->n_evictions, 1);
        atomic_store_explicit(&cc->evicted_time,
                              current_time - n_last_access(h, *locp),
                              memory_order_relaxed);
        if (h->exptime != 0) {
            ctr_add(&cc->evicted_nonzero, 1);
        }
        if ((hd_n_flags(*locp) & ITEM_FETCHED) == 0) {
            ctr_add(&cc->evicted_unfetched, 1);
        }
    }
    do_unlink_n_slot(locp, hv, h->clsid,
                     item_make_ntotal(h->nkey, (int)h->nbytes));
}

static size_t clock_header_bytes(void)
{
    return __atomic_load_n(&settings.oldest_cas, __ATOMIC_RELAXED) != 0
        ? NITEM_SWEEP_BYTES_CAS : NITEM_SWEEP_BYTES;
}

static const struct clock_nvm_ops clock_ops = {
    .is_dead = clock_is_dead,
    .unlink = clock_unlink,
    .header_bytes = clock_header_bytes,
};

/* ---- the Dual-LRU's side (items_duallru.h) ---- */

static bool dlru_d_is_dead(item *it)
{
    return item_is_dead(it);
}

static void dlru_d_reclaim(item *it, uint64_t hv)
{
    count_victim(it, true);
    do_item_unlink(it, hv);
}

static bool dlru_demote(item *it, uint64_t hv)
{
    return demote(it, hv, settings.evict_to_free != 0);
}

/* The migration step of Move to D: the N item at off, if it is still
 * there, into the D-zone's HOT head by the engine's promotion (d_chunk
 * may demote D's COLD tail for it). */
static enum dlru_promote_result dlru_promote(uint64_t hv, uint64_t off)
{
    enum dlru_promote_result r = DLRU_GONE;
    unsigned int id = slabs_tier_clsid(off);
    item_lock(hv);
    uint64_t *locp = assoc_find_noff(hv, off);
    if (locp != NULL && dlru_n_segment(id, off) == DLRU_MOVE) {
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
                r = DLRU_PROMOTED;
            } else {
                r = DLRU_STUCK;
            }
            item_remove(snap);
        }
    }
    item_unlock(hv);
    return r;
}

static const struct dlru_ops dlru_engine_ops = {
    .n_is_dead = clock_is_dead,
    .n_unlink = clock_unlink,
    .d_is_dead = dlru_d_is_dead,
    .d_reclaim = dlru_d_reclaim,
    .demote = dlru_demote,
    .promote = dlru_promote,
};

static const struct migrate_engine tier_engine = {
    .promote = engine_promote,
    .free_d_chunks = engine_free_d_chunks,
    .decay_walk = engine_decay_walk,
};

/* ---- the tier thread: migrate_tick() every 1 ms while it promotes,
 * every 10 ms when idle ---- */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t tid;
    bool running;
    bool stop;
} tier_thr = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cond = PTHREAD_COND_INITIALIZER,
};

static void *tier_thread(void *arg)
{
    tier_reassign_thread_role(TIER_REASSIGN_ROLE_TIER);
    pthread_mutex_lock(&tier_thr.lock);
    while (!tier_thr.stop) {
        pthread_mutex_unlock(&tier_thr.lock);
        unsigned int promoted = migrate_tick();
        if (duallru) {
            promoted += dlru_tick();
        }
        tier_reassign_tick();
        long ns = promoted > 0 ? TIER_TICK_BUSY_NS : TIER_TICK_IDLE_NS;
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_nsec += ns;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&tier_thr.lock);
        while (!tier_thr.stop
                && pthread_cond_timedwait(&tier_thr.cond, &tier_thr.lock,
                                          &deadline) != ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&tier_thr.lock);
    return NULL;
}

static int tier_thread_start(void)
{
    pthread_mutex_lock(&tier_thr.lock);
    int rc = 0;
    if (!tier_thr.running) {
        tier_thr.stop = false;
        rc = pthread_create(&tier_thr.tid, NULL, tier_thread, NULL);
        tier_thr.running = rc == 0;
    }
    pthread_mutex_unlock(&tier_thr.lock);
    return rc;
}

static void tier_thread_stop(void)
{
    pthread_mutex_lock(&tier_thr.lock);
    if (!tier_thr.running) {
        pthread_mutex_unlock(&tier_thr.lock);
        return;
    }
    tier_thr.stop = true;
    pthread_cond_signal(&tier_thr.cond);
    pthread_mutex_unlock(&tier_thr.lock);
    pthread_join(tier_thr.tid, NULL);
    pthread_mutex_lock(&tier_thr.lock);
    tier_thr.running = false;
    pthread_mutex_unlock(&tier_thr.lock);
}

/* ---- start-up and shutdown ---- */

/* tier_reassign.c's PSA signal: items MQ replacement pushed out of the
 * class's D pages (demoted or evicted), page moves' demotions excluded. */
static uint64_t engine_d_departures(unsigned int clsid)
{
    struct class_counters *cc = &ccount[clsid];
    return ctr_get(&cc->demotions) - ctr_get(&cc->page_demotions)
        + ctr_get(&cc->d_evictions);
}

static const struct tier_reassign_engine reassign_engine = {
    .d_departures = engine_d_departures,
};

void storage_init(void)
{
    memset(ccount, 0, sizeof(ccount));
    atomic_store(&total_items, 0);
    atomic_store(&cas_id, 0);
    slabs_init(settings.maxbytes, settings.factor, settings.large_pages);
    tiering = false;
    duallru = false;
    if (tier_enabled()) {
        slabs_tier_init();
        tiering = slabs_tier_active();
    }
    assoc_init(settings.hashpower_init);
    mq_init();
    slabs_set_page_evictor(items_evict_page);
    if (tiering) {
        migrate_init(slabs_largest_clsid());
        clock_nvm_init(&clock_ops);
        duallru = settings.tier_policy == TIER_POLICY_DUALLRU;
        if (duallru) {
            dlru_init(&dlru_engine_ops);
        }
        if (tier_reassign_init(&reassign_engine) != 0) {
            fprintf(stderr, "tier_reassign: out of memory for the counter "
                    "histograms; DRAM pages will not be reassigned\n");
        }
    } else {
        tier_reassign_shutdown();
    }
    if (settings.track_sizes) {
        item_stats_sizes_enable();
    }
}

int storage_start_threads(void)
{
    int rc = slabs_start_rebalance_thread();
    if (rc == 0 && settings.hash_expand) {
        rc = assoc_start_expand_thread();
    }
    if (rc == 0 && settings.lru_crawler) {
        rc = crawler_start();
    }
    if (rc == 0 && tiering) {
        migrate_set_engine(&tier_engine);
        rc = tier_thread_start();
    }
    return rc;
}

void storage_stop_threads(void)
{
    tier_thread_stop();
    crawler_stop();
    assoc_stop_expand_thread();
    slabs_stop_rebalance_thread();
}
