/*
 * items_internal.h: what the storage engine's files share and nothing
 * else includes: items.c (the item API and memcached's semantics),
 * items_d.c (the D-zone), items_n.c (the N-zone), items_tier.c (moves
 * between zones and the tier thread), items_dump.c (dumps) and
 * items_stats.c (the listings).  The per-class counters (relaxed atomics,
 * no lock), the totals, the start-up state, the heap items' layout and
 * the expiry rules, and the functions one of these files gives another.
 * Every do_ function expects the item lock of the item concerned held.
 */
#ifndef ITEMS_INTERNAL_H
#define ITEMS_INTERNAL_H

#include "clock.h"
#include "item.h"
#include "settings.h"
#include "slab_class.h"
#include "storage_worker.h"

#include "clock_nvm.h"
#include "hash_desc.h"
#include "items_mq.h"
#include "migrate.h"
#include "nitem.h"
#include "slabs_tier.h"
#include "tier_policy.h"
#include "tier_reassign.h"

#include <stddef.h>

typedef _Atomic uint64_t counter_t;

struct class_counters {
    counter_t curr_items;        /* both zones */
    counter_t curr_bytes;        /* ntotal of linked items (mem_requested) */
    counter_t evicted;
    counter_t evicted_nonzero;
    counter_t evicted_time;      /* idle seconds of the last victim */
    counter_t outofmemory;
    counter_t reclaimed;
    counter_t expired_unfetched;
    counter_t evicted_unfetched;
    counter_t evicted_active;
    counter_t crawler_reclaimed;
    counter_t crawler_items_checked;
    counter_t direct_reclaims;
    /* tiers */
    counter_t n_items;           /* of curr_items, those in the N-zone */
    counter_t n_bytes;           /* of curr_bytes, those of N items */
    counter_t promotions;
    counter_t demotions;
    counter_t d_evictions;
    counter_t n_evictions;
    counter_t n_fallbacks;       /* N-bound values the N-zone could not take */
    counter_t d_fallbacks;       /* D-bound values D could not free room for */
    counter_t page_demotions;    /* of demotions, those of page moves */
    counter_t page_evictions;    /* live items page moves could not demote */
    counter_t page_rescues;      /* live items moves by hits copied within
                                    their class (items_d.c) */
    counter_t n_copies;          /* N copies of D items (items_ncopy.c) */
    counter_t copy_demotions;    /* of demotions, those that took the copy */
    counter_t copies_reclaimed;  /* copies the CLOCK took for their chunk */
    counter_t copies_stored;     /* copies of new keys stored in D (filling) */
    counter_t n_corrupt;         /* N items lookups found corrupt */
};

extern struct class_counters ccount[MAX_NUMBER_OF_SLAB_CLASSES];
extern counter_t total_items;
/* True when the N-zone is in use (tier_enabled() and a zone was carved);
 * set once by storage_init. */
extern bool tiering;
/* the tier policy; set once by storage_init (items.c) */
extern const struct tier_policy_ops *active_policy;
/* How far past the resumed clock a crash recovery (of the N-zone or of
 * the -e memory file) accepts an item's time: the wall clock the clock
 * resumes from may have been stepped back. */
#define RESTART_TIME_SLACK (24 * 3600)

/* -e: D versions are sealed (item.h ITEM_SEALED) for crash recovery; set
 * once at start-up by items_d_restore, before anything is stored. */
extern bool seal_d_items;

/* Seal the D version d, every byte of which is written: the compiler
 * must not move a store of it past the seal, which a kill of the process
 * could then find without them (doc/restart.md "Crash recovery of the
 * memory file"). */
static inline void seal_d_version(item *d)
{
    if (seal_d_items) {
        atomic_signal_fence(memory_order_seq_cst);
        d->it_flags |= ITEM_SEALED;
    }
}

static inline void ctr_add(counter_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static inline void ctr_sub(counter_t *c, uint64_t n)
{
    atomic_fetch_sub_explicit(c, n, memory_order_relaxed);
}

static inline uint64_t ctr_get(counter_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* items_stats.c: reset of the tier counters' baselines (stats reset) */
void tier_stats_reset(void);

/* storage_init (storage.c): items.c's counters and cas ids from zero, no
 * N-zone and the no-tier policy until the zone is carved */
void items_init(void);

/* access counters of D items saturate here */
#define COUNTER_MAX UINT16_MAX

/* ---- heap items: snapshots of N items and staging buffers ----
 * A heap item is an item header + key + value in malloc'd memory, preceded
 * by where its N version lives, so that metadata the protocol changes on
 * it can be written through to the real item. */

struct heap_meta {
    uint64_t noff;               /* N offset of its version; HEAP_NO_OFF */
    /* the worker's gauge it is charged to (released with it): in-flight
     * for a snapshot a reply holds, staging for a staging buffer a client
     * fills; NULL for the engine's own copies */
    _Atomic uint64_t *inflight;
    uint32_t charged;            /* bytes charged to *inflight */
    uint32_t reader;             /* snapshots: n_readers slot + 1; 0 none */
    /* a staging buffer with a mapping of its own: the mapping's length
     * (0: from malloc) */
    size_t mapped;
    /* a snapshot of header and key only, for commands that never read the
     * value (its nbytes still tells the value's length) */
    bool header_only;
};
#define HEAP_NO_OFF UINT64_MAX

static inline struct heap_meta *heap_meta(item *it)
{
    return (struct heap_meta *)it - 1;
}

static inline bool is_heap(const item *it)
{
    return (it->it_flags & ITEM_HEAP) != 0;
}

/* ---- references ---- */

static inline uint16_t refcount_incr(item *it)
{
    return atomic_fetch_add_explicit(&it->refcount, 1,
                                     memory_order_acq_rel) + 1;
}

static inline uint16_t refcount_decr(item *it)
{
    return atomic_fetch_sub_explicit(&it->refcount, 1,
                                     memory_order_acq_rel) - 1;
}

static inline uint16_t refcount_get(item *it)
{
    return atomic_load_explicit(&it->refcount, memory_order_acquire);
}

/* ---- time, expiry, flush, cas ---- */

static inline rel_time_t load_exptime(const item *it)
{
    return __atomic_load_n(&it->exptime, __ATOMIC_RELAXED);
}

static inline void store_exptime(item *it, rel_time_t exptime)
{
    __atomic_store_n(&it->exptime, exptime, __ATOMIC_RELAXED);
}

static inline bool exptime_passed(rel_time_t exptime)
{
    return exptime != 0 && exptime <= current_time;
}

/* flush_all sets oldest_live (and, with cas, oldest_cas): once oldest_live
 * has passed, items last stored/bumped at or before it are invalid, and so
 * are items whose cas predates the flush (stored in the flush's second). */
static inline bool flushed_at(rel_time_t time, uint64_t cas)
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

static inline bool item_is_expired(const item *it)
{
    return exptime_passed(load_exptime(it));
}

static inline bool item_is_flushed(const item *it)
{
    return flushed_at(it->time, it->cas);
}

static inline bool item_is_dead(const item *it)
{
    return item_is_expired(it) || item_is_flushed(it);
}

/* An N item's last access: the header's time plus the word's delta. */
static inline rel_time_t n_last_access(const nitem_hdr *h, uint64_t loc)
{
    return h->time + hd_n_atime(loc);
}

static inline bool n_is_flushed(const nitem_hdr *h, uint64_t loc)
{
    return flushed_at(n_last_access(h, loc), h->cas);
}

static inline bool n_is_dead(const nitem_hdr *h, uint64_t loc)
{
    return exptime_passed(h->exptime) || n_is_flushed(h, loc);
}

/* items_restart.c (doc/restart.md): the recovery scan of a warm start
 * (storage_init, after the policy is chosen), the stop's side (D items
 * into the N-zone when graceful, then the stopped mark), `stats tier`'s
 * restart_* lines. */
struct nzone_attach_result;
void items_restart_recover(const struct nzone_attach_result *start);
/* Everything is restored and the clock settled: the zone is in use. */
void items_restart_serving(void);
void items_restart_save(bool graceful);
void items_restart_stats(ADD_STAT add_stats, void *c);

/* items_stats.c: `stats sizes` */
void sizes_account(size_t ntotal, bool add);

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
            ctr_add(&cc->n_bytes, ntotal);
        }
    } else {
        ctr_sub(&cc->curr_items, 1);
        ctr_sub(&cc->curr_bytes, ntotal);
        if (in_nvm) {
            ctr_sub(&cc->n_items, 1);
            ctr_sub(&cc->n_bytes, ntotal);
        }
    }
    if (settings.track_sizes) {
        sizes_account(ntotal, add);
    }
}

/* account_item for `count` N items of class clsid, `bytes` in all, added
 * at once (the restart scan, which links millions); sizes are the
 * caller's to account. */
static inline void account_n_items_added(unsigned int clsid, uint64_t count,
                                         uint64_t bytes)
{
    struct class_counters *cc = &ccount[clsid];
    ctr_add(&cc->curr_items, count);
    ctr_add(&cc->curr_bytes, bytes);
    ctr_add(&cc->n_items, count);
    ctr_add(&cc->n_bytes, bytes);
}

/* ---- allocation ---- */

static inline size_t item_make_ntotal(size_t nkey, int nbytes)
{
    return sizeof(item) + nkey + 1 + (size_t)nbytes;
}

/* Where a new version will be stored, secured before anything is
 * unlinked: a store that replaces a version must never remove it and then
 * find no room for its successor.  An N target is written and sealed
 * before the version it replaces is unsealed (doc/restart.md "Items and
 * their seal"), so `written` says whether its chunk holds a sealed item
 * that must be unsealed if the link fails. */
struct link_target {
    uint64_t noff;               /* an N chunk for a staging buffer */
    item *d;                     /* else a D chunk: the item itself, or the
                                  * copy of a staging buffer the N-zone could
                                  * not take */
    bool written;                /* noff holds it, sealed */
};

/* The stored item that `it` (a referenced D item, a snapshot or a stored
 * staging buffer) stands for, if it is still the key's current version:
 * *d for a D item, *locp for an N item.  A referenced D item is its own
 * identity while linked; otherwise a version is known by its cas, which
 * every stored version has, unique, even under -C (items.c), and which
 * migrations carry.  An N offset alone is no identity: once the lock has
 * been dropped its chunk may hold a newer version of the same key, so the
 * offset is confirmed by the cas in its header (one line) unless the
 * caller has held the item lock since it looked `it` up (same_hold). */
enum version_zone { VERSION_GONE, VERSION_D, VERSION_N };

/* find_version reads only the header bytes up to and including cas. */
#define NITEM_CAS_BYTES (offsetof(nitem_hdr, cas) + sizeof(uint64_t))

/* How a lookup's result will be used (do_item_get's `how`). */
#define LOOKUP_BUMP        (1u << 0) /* count the access, bump the item */
#define LOOKUP_FOR_REPLY   (1u << 1) /* a client's reply will hold it */
#define LOOKUP_HEADER_ONLY (1u << 2) /* an N item's value is not needed */

/* ---- items_n.c: the N-zone ---- */
void heap_free(item *it);
bool snapshot_is_sole_reader(const item *it);
item *heap_alloc(size_t ntotal);
/* a staging buffer charged to w's tier_staging_limit (w NULL: not
 * charged); NULL when out of memory or refused */
item *staging_alloc(size_t ntotal, struct storage_worker *w);
/* the tier thread, each round: unmap the spare staging mappings once
 * nothing has used them for a second */
void staging_spares_tick(void);
bool policy_sees_rehit(uint64_t loc);
bool n_count_use(uint64_t *locp, rel_time_t base, unsigned int clsid);
bool n_bump(uint64_t *locp, rel_time_t base, unsigned int clsid);
bool n_chunk(unsigned int id, bool may_evict, uint64_t *off);
void write_to_nvm(const item *it, uint64_t hv, uint64_t off);
bool do_index_n(item *it, uint64_t hv, uint64_t off);
void do_unlink_n_slot(uint64_t *locp, uint64_t hv, unsigned int clsid,
        size_t ntotal);
item *snapshot_make(const struct nitem_probe *p, uint64_t loc);
void do_reap_dead_n(uint64_t *locp, const struct nitem_probe *p, uint64_t hv,
        struct storage_worker *w);
item *do_item_get_n(uint64_t *locp, const struct nitem_probe *p, uint64_t hv,
        struct storage_worker *w, unsigned int how, enum item_lookup *status);
bool clock_is_dead(const nitem_hdr *h, uint64_t loc);
void clock_unlink(uint64_t *locp, uint64_t hv, const nitem_hdr *h, bool dead);

/* ---- items.c, for items_d.c's rescue of a moving page's item ---- */
/* new_it takes old_it's place under its key (its item lock held) */
bool do_item_replace(item *old_it, item *new_it, uint64_t hv);

/* ---- items_d.c: the D-zone ---- */
void count_access(item *it);
/* the MQ queues age where the policy says so (tier_policy.h ages_d) */
void d_aging_init(void);
void count_victim(const item *it, bool dead);
item *d_chunk(unsigned int id, size_t ntotal, bool may_evict);
bool do_link_d(item *it, uint64_t hv);
void do_unlink_d(item *it, uint64_t hv);
unsigned int items_evict_page(unsigned int clsid, const void *start,
        const void *end, bool rescue);

/* A hit on the D item it: fetched/active flags, the policy's hook on a
 * second hit, its access count and its queue.  Inline: every D hit runs
 * it. */
static inline void do_item_bump(item *it)
{
    if ((it->it_flags & ITEM_FETCHED) == 0) {
        it->it_flags |= ITEM_FETCHED;
    } else if (__builtin_expect(active_policy->d_activated != NULL, 0)
            && (it->it_flags & ITEM_ACTIVE) == 0) {
        it->it_flags |= ITEM_ACTIVE;
        active_policy->d_activated(it);
    } else {
        it->it_flags |= ITEM_ACTIVE;
    }
    count_access(it);
    mq_bump(it);
}

/* Should an N item whose counter just became `counter` move to D?
 * Inline: every N hit asks. */
static inline bool wants_promotion(unsigned int clsid, uint32_t counter)
{
    return active_policy->wants_promotion != NULL
        && active_policy->wants_promotion(clsid, counter);
}

/* ---- items_tier.c: moves between the zones, the tier thread ---- */
bool policy_demotes(void);
bool demote(item *victim, uint64_t hv, bool may_evict);
void promote_after_hit(uint64_t *locp, uint64_t hv, item *snap);
int tier_thread_start(void);
void tier_thread_stop(void);
extern const struct tier_engine policy_engine;
extern const struct migrate_engine tier_engine;
extern const struct tier_reassign_engine reassign_engine;
extern const struct clock_nvm_ops clock_ops;
/* clock_ops.unread for the policies that age their queues (ages_d) */
bool clock_n_unread(uint64_t loc);

/* ---- items_ncopy.c: N copies of D items ---- */
bool policy_keeps_n_copy(void);
/* d, just promoted from the N chunk at off, keeps that chunk as its copy */
void do_ncopy_keep(item *d, uint64_t off);
/* d, a new key just stored in D, gets a copy now if the policy asks */
void do_ncopy_store(item *d, uint64_t hv);
/* d (entering D another way) has no copy */
void do_ncopy_clear(item *d);
/* d's copy, if any, is unsealed and freed */
void do_ncopy_drop(item *d);
/* Demote victim onto its copy, if it has one: *off is the copy, which it
 * no longer names, and *atime_delta the slot's delta for its last
 * access. */
bool do_ncopy_demote(item *victim, uint64_t *off, uint32_t *atime_delta);
/* The CLOCK's offer of a used chunk no slot names, whose header gave hv:
 * true when it was a copy, now dropped (unsealed, still marked used) and
 * the caller's. */
bool ncopy_reclaim(uint64_t off, uint64_t hv);
/* A class other than `except` with N pages but no N item (its used N
 * chunks are copies), or 0; under a policy that keeps copies only. */
unsigned int ncopy_itemless_class(unsigned int except);
/* Copies class id holds now (relaxed). */
uint64_t ncopy_count(unsigned int id);

/* ---- items.c ---- */
item *free_d_chunk(const struct placement_query *q);
enum version_zone find_version(item *it, uint64_t hv, bool same_hold, item **d,
        uint64_t **locp);

#endif
