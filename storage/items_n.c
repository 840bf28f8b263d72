/*
 * items_n.c: the N-zone side of the storage engine (HMCached sections 3.1
 * and 3.4; doc/tiering.md "N items in NVM", "Reading an N item", "Values
 * in flight" and "Replacement").
 *
 * Owns: heap items (DRAM snapshots of N items, full or header-only, and
 * the staging buffers of values bound for the N-zone), the per-worker
 * budgets of snapshots that replies hold and of staging buffers, the
 * reader count per N item, a hit on an N item (expiry, hotness in its
 * location word, the policy's re-hit hook), the checksum a hit verifies
 * under nvm_verify=read (dropping a corrupt item), linking and unlinking
 * N items in the index (a key the cache evicted lately starts with its
 * CLOCK bit set: evict_shadow.h, doc/tiering.md "Keys that come back"),
 * writing an item to an N chunk, and the engine's side of the CLOCK
 * (clock_nvm.h) and of the crawler for N items.  Large
 * staging buffers have mappings of their own, kept in a pool of spares
 * for the next ones while stores use them.
 *
 * Locks: every do_ function and every function here that takes a location
 * word expects the item lock of that item held (items.c's rules); an N
 * chunk is only read or written under it.  The reader counts and the
 * in-flight and staging gauges are relaxed atomics; debugfail's count is
 * an atomic.  spare_lock guards the pool of spare staging mappings; it is
 * a leaf, held for no more than a list walk (the workers' staging buffers,
 * the tier thread's release).
 */
#include "config.h"
#include "items.h"
#include "items_internal.h"

#include "clock_nvm.h"
#include "evict_shadow.h"
#include "hash_desc.h"
#include "item_lock.h"
#include "items_crawl.h"
#include "migrate.h"
#include "nzone.h"
#include "slabs.h"
#include "tier_reassign.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

static item *heap_init(struct heap_meta *m, size_t mapped)
{
    m->mapped = mapped;
    m->noff = HEAP_NO_OFF;
    m->reader = 0;
    m->inflight = NULL;
    m->charged = 0;
    m->header_only = false;
    return (item *)(m + 1);
}

item *heap_alloc(size_t ntotal)
{
    struct heap_meta *m = malloc(sizeof(*m) + ntotal);
    return m == NULL ? NULL : heap_init(m, 0);
}

/* ---- mapped staging buffers and their spares ----
 * A staging buffer this large gets a mapping of its own, which goes back
 * to the system when it is unmapped.  From malloc, a block this large
 * comes from an arena once glibc has raised its mmap threshold (it does
 * when it frees its first large mapped block) and, freed, stays resident
 * there once smaller blocks land after it: 50 then 600 clients that
 * stalled in 1 MB sets and left kept 42 MB (doc/tiering.md "Values in
 * flight"). */
#define STAGING_MAP_MIN (128 * 1024)
/* A fresh mapping faults every page in (N-bound 512 KB sets took 2.4
 * times as long), so the mappings that buffers leave are kept as spares,
 * up to every worker's tier_staging_limit (this much each without one),
 * for the next buffers; the tier thread unmaps them all once none has
 * been taken or given back for a second. */
#define STAGING_SPARE_NO_LIMIT (8 * 1024 * 1024)

struct spare {
    struct spare *next;
    size_t len;
};

static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static struct spare *spares;
static size_t spare_bytes;
static bool spares_used;

static size_t map_len(size_t ntotal)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (sizeof(struct heap_meta) + ntotal + page - 1) & ~(page - 1);
}

/* A spare of at least len bytes (and at most twice that, so that small
 * values do not pin large mappings), or NULL. */
static struct spare *spare_take(size_t len)
{
    struct spare *s = NULL;
    pthread_mutex_lock(&spare_lock);
    for (struct spare **pp = &spares; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->len >= len && (*pp)->len / 2 <= len) {
            s = *pp;
            *pp = s->next;
            spare_bytes -= s->len;
            break;
        }
    }
    spares_used = true;
    pthread_mutex_unlock(&spare_lock);
    return s;
}

/* Keep the mapping p of len bytes as a spare; false when the pool is
 * full (the caller unmaps it). */
static bool spare_keep(void *p, size_t len)
{
    size_t each = settings.tier.staging_limit != 0
        ? settings.tier.staging_limit : STAGING_SPARE_NO_LIMIT;
    size_t cap = each * (size_t)(settings.num_threads > 0
                                 ? settings.num_threads : 1);
    bool kept = false;
    pthread_mutex_lock(&spare_lock);
    if (spare_bytes + len <= cap) {
        struct spare *s = p;
        s->len = len;
        s->next = spares;
        spares = s;
        spare_bytes += len;
        kept = true;
    }
    spares_used = true;
    pthread_mutex_unlock(&spare_lock);
    return kept;
}

static item *heap_map(size_t ntotal)
{
    size_t len = map_len(ntotal);
    struct spare *s = spare_take(len);
    if (s != NULL) {
        return heap_init((struct heap_meta *)s, s->len);
    }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : heap_init(p, len);
}

/* The tier thread, each round: once a second, unmap every spare if none
 * was taken or kept since the last look. */
void staging_spares_tick(void)
{
    static rel_time_t last;
    rel_time_t now = current_time;
    if (now == last) {
        return;
    }
    last = now;
    pthread_mutex_lock(&spare_lock);
    struct spare *idle = spares_used ? NULL : spares;
    if (idle != NULL) {
        spares = NULL;
        spare_bytes = 0;
    }
    spares_used = false;
    pthread_mutex_unlock(&spare_lock);
    while (idle != NULL) {
        struct spare *next = idle->next;
        munmap(idle, idle->len);
        idle = next;
    }
}

/* Free a heap item: its reader count and its charge (in flight, or
 * staging) go with it. */
void heap_free(item *it)
{
    struct heap_meta *m = heap_meta(it);
    if (m->reader != 0) {
        atomic_fetch_sub_explicit(&n_readers[m->reader - 1], 1,
                                  memory_order_relaxed);
    }
    if (m->inflight != NULL) {
        atomic_fetch_sub_explicit(m->inflight, m->charged,
                                  memory_order_relaxed);
    }
    if (m->mapped == 0) {
        free(m);
    } else if (!spare_keep(m, m->mapped)) {
        munmap(m, m->mapped);
    }
}

/* Charge the heap item it, of ntotal bytes, to a worker's gauge until it
 * is freed. */
static void heap_charge(item *it, _Atomic uint64_t *gauge, size_t ntotal)
{
    atomic_fetch_add_explicit(gauge, ntotal, memory_order_relaxed);
    heap_meta(it)->inflight = gauge;
    heap_meta(it)->charged = (uint32_t)ntotal;
}

/* May a worker whose gauge holds `held` bytes take ntotal more under
 * limit (0: none)?  Past it, no; except for a worker that holds nothing,
 * so that a value larger than the limit still passes one at a time.  A
 * refusal is counted in *refused.  Both budgets are this rule: the
 * staging buffers of values bound for the N-zone that clients are
 * sending or that wait to be written (tier_staging_limit, doc/tiering.md
 * "Values in flight"), and the snapshots of N values that replies wait
 * to write (tier_inflight_limit). */
static bool budget_admits(_Atomic uint64_t *gauge, uint64_t limit,
                          stat_u64 *refused, size_t ntotal)
{
    uint64_t held = atomic_load_explicit(gauge, memory_order_relaxed);
    if (limit == 0 || held == 0 || held + ntotal <= limit) {
        return true;
    }
    STAT_INCR(*refused);
    return false;
}

/* A staging buffer of ntotal bytes for a value bound for the N-zone,
 * charged to worker w's staging gauge until freed (w NULL: the engine's
 * own, made and freed within one store, not charged); NULL when out of
 * memory or past w's limit. */
item *staging_alloc(size_t ntotal, struct storage_worker *w)
{
    if (w != NULL && !budget_admits(&w->tier_staging_bytes,
            settings.tier.staging_limit, &w->stats.tier_staging_refused,
            ntotal)) {
        return NULL;
    }
    item *it = w != NULL && ntotal >= STAGING_MAP_MIN ? heap_map(ntotal)
                                                      : heap_alloc(ntotal);
    if (it != NULL && w != NULL) {
        heap_charge(it, &w->tier_staging_bytes, ntotal);
    }
    return it;
}

/* Is the snapshot it the only one of its N item alive (no reply holds
 * another)?  A hash collision can only make an item look shared. */
bool snapshot_is_sole_reader(const item *it)
{
    const struct heap_meta *m = (const struct heap_meta *)it - 1;
    return m->reader != 0
        && atomic_load_explicit(&n_readers[m->reader - 1],
                                memory_order_relaxed) == 1;
}

/* Does the policy want to hear of a hit on the N item of location word
 * loc, one fetched before? */
bool policy_sees_rehit(uint64_t loc)
{
    return active_policy->n_rehit != NULL
        && (hd_n_flags(loc) & ITEM_FETCHED) != 0;
}

/* A counted use of the N item of *locp (header time `base`): counter,
 * CLOCK bit, last access, and the flags `adds`.  Returns whether it is now
 * hot enough to be promoted. */
static bool n_use(uint64_t *locp, rel_time_t base, unsigned int clsid,
                  uint16_t adds)
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
    loc = hd_n_set_flags(loc, hd_n_flags(loc) | adds);
    loc = hd_n_set_atime(loc, base, current_time);
    *locp = loc;
    return wants_promotion(clsid, c);
}

/* A hit: a use that reads the value, so the item is fetched. */
bool n_bump(uint64_t *locp, rel_time_t base, unsigned int clsid)
{
    return n_use(locp, base, clsid, ITEM_FETCHED);
}

/* A use that reads no value (an add over the key), as count_access counts
 * one of a D item: not fetched. */
bool n_count_use(uint64_t *locp, rel_time_t base, unsigned int clsid)
{
    return n_use(locp, base, clsid, 0);
}

/* An N chunk of class id: a free one, else one the CLOCK (duallru: the
 * N-zone's LRU) frees, evicting only when may_evict. */
bool n_chunk(unsigned int id, bool may_evict, uint64_t *off)
{
    if (slabs_tier_alloc(id, off)) {
        return true;
    }
    return active_policy->n_reclaim(id, may_evict, off);
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
    h->flags = (uint8_t)(it->it_flags & NITEM_PERSISTENT_FLAGS);
    h->cas = it->cas;
    h->client_flags = it->client_flags;
}

/* Write it (a D item or a staging buffer) to the N chunk at off. */
void write_to_nvm(const item *it, uint64_t hv, uint64_t off)
{
    nitem_hdr h;
    nitem_hdr_from(&h, it, hv);
    nitem_write(off, &h, ITEM_key(it), (size_t)it->nkey + 1 + it->nbytes);
}

/* Index the staging buffer `it`, already written and sealed in the N
 * chunk at off (write_to_nvm), under its key. */
bool do_index_n(item *it, uint64_t hv, uint64_t off)
{
    uint64_t loc = hd_n_make(off, it->counter, it->it_flags, it->epoch, 0);
    if (evict_shadow_take_returning(it->slabs_clsid, hv)) {
        /* asked for again after the cache evicted it: the CLOCK keeps it
         * a turn longer than a key seen once (doc/tiering.md "Keys that
         * come back") */
        loc = hd_n_set_ref(loc, true);
    }
    if (!assoc_insert_loc(loc, hv)) {
        return false;
    }
    heap_meta(it)->noff = off;
    if (active_policy->n_linked != NULL) {
        active_policy->n_linked(it->slabs_clsid, off, false);
    }
    account_item(it->slabs_clsid, ITEM_ntotal(it), true, true);
    ctr_add(&total_items, 1);
    tier_reassign_note(it->slabs_clsid, -1, (int)hd_n_counter(loc));
    return true;
}

/* Remove the N item of *locp from the index and the totals, unsealed so
 * that no restart brings it back; its chunk is left to the caller. */
void do_unlink_n_slot(uint64_t *locp, uint64_t hv, unsigned int clsid,
                             size_t ntotal)
{
    nitem_unseal(hd_n_offset(*locp));
    tier_reassign_note(clsid, (int)hd_n_counter(*locp), -1);
    if (active_policy->n_unlinked != NULL) {
        active_policy->n_unlinked(clsid, hd_n_offset(*locp));
    }
    assoc_delete_loc(locp, hv);
    account_item(clsid, ntotal, true, false);
}

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
        heap_charge(it, inflight, ntotal);
    }
    return it;
}

/* Fill the snapshot it with the N item probed at *locp, whose location
 * word is loc (item lock held): the header's fields and the key, and the
 * value unless it is a header-only snapshot (the probe holds the key, so
 * that one reads no further line) or have_body (snapshot_verified read
 * it). */
static void snapshot_fill(item *it, const struct nitem_probe *p, uint64_t loc,
                          bool have_body)
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
    if (heap_meta(it)->header_only) {
        memcpy(ITEM_key(it), p->u.buf + sizeof(nitem_hdr), h->nkey);
        ITEM_key(it)[h->nkey] = '\0';
    } else if (!have_body) {
        nitem_read_body(p, ITEM_key(it));
    }
}

/* Whether the probed item's header fits its chunk: the sizes of one that
 * does not were changed by the medium, and reading by them would go past
 * the chunk (or ask for an absurd snapshot). */
static bool probe_fits_chunk(const struct nitem_probe *p)
{
    const nitem_hdr *h = &p->u.hdr;
    uint64_t room = slabs_tier_chunk_end(p->off, p->clsid)
        - NITEM_TRAILER_BYTES - p->off;
    return h->clsid == p->clsid && nitem_ntotal(h->nkey, h->nbytes) <= room;
}

/* nvm_verify=read: read the probed item's body into the full snapshot it
 * and check it against the seal. */
static bool snapshot_verified(item *it, const struct nitem_probe *p)
{
    nitem_read_body(p, ITEM_key(it));
    return nitem_checksum(nzone_seal(), &p->u.hdr, ITEM_key(it))
        == p->u.hdr.seal;
}

/* A lookup found the N item of *locp (probe p) corrupt: unlink it, free its
 * chunk and count it.  Its class is its page's: the header's may be what
 * the medium changed. */
static void do_drop_corrupt_n(uint64_t *locp, const struct nitem_probe *p,
                              uint64_t hv)
{
    const nitem_hdr *h = &p->u.hdr;
    size_t room = slabs_chunk_size(p->clsid);
    size_t ntotal = probe_fits_chunk(p)
        ? item_make_ntotal(h->nkey, (int)h->nbytes) : room;
    do_unlink_n_slot(locp, hv, p->clsid, ntotal);
    slabs_tier_free(p->off);
    ctr_add(&ccount[p->clsid].n_corrupt, 1);
}

/* A DRAM snapshot of the N item probed at *locp for the engine's own use
 * (item lock held); NULL when out of memory, or under nvm_verify=read
 * when the item is corrupt: a promotion then leaves it in N, where the
 * next lookup drops it. */
item *snapshot_make(const struct nitem_probe *p, uint64_t loc)
{
    const nitem_hdr *h = &p->u.hdr;
    bool verify = settings.tier.verify_reads;
    if (verify && !probe_fits_chunk(p)) {
        return NULL;
    }
    item *it = snapshot_alloc(item_make_ntotal(h->nkey, (int)h->nbytes),
                              NULL);
    if (it == NULL) {
        return NULL;
    }
    if (verify && !snapshot_verified(it, p)) {
        heap_free(it);
        return NULL;
    }
    snapshot_fill(it, p, loc, verify);
    return it;
}

/* A lookup found the N item of *locp (probe p) expired or flushed: unlink
 * it and count why. */
void do_reap_dead_n(uint64_t *locp, const struct nitem_probe *p,
                           uint64_t hv, struct storage_worker *w)
{
    const nitem_hdr *h = &p->u.hdr;
    bool flushed = n_is_flushed(h, *locp);
    do_unlink_n_slot(locp, hv, h->clsid,
                     item_make_ntotal(h->nkey, (int)h->nbytes));
    slabs_tier_free(p->off);
    if (w != NULL) {
        if (flushed) {
            STAT_INCR(w->stats.get_flushed);
        } else {
            STAT_INCR(w->stats.get_expired);
        }
    }
}

/* An N hit: check expiry, count, snapshot, maybe promote.  A snapshot
 * that cannot be made changes nothing and sets *status to
 * LOOKUP_NO_MEMORY. */
item *do_item_get_n(uint64_t *locp, const struct nitem_probe *p,
                           uint64_t hv, struct storage_worker *w,
                           unsigned int how, enum item_lookup *status)
{
    const nitem_hdr *h = &p->u.hdr;
    bool verify = settings.tier.verify_reads;
    /* a verified item is read whole, whatever the caller needs of it */
    bool header_only = (how & LOOKUP_HEADER_ONLY) != 0 && !verify;
    size_t ntotal = item_make_ntotal(h->nkey, header_only ? 0
                                                          : (int)h->nbytes);
    if (verify && !probe_fits_chunk(p)) {
        do_drop_corrupt_n(locp, p, hv);
        return NULL;                    /* a miss */
    }
    if (n_is_dead(h, *locp)) {
        do_reap_dead_n(locp, p, hv, w);
        return NULL;
    }
    _Atomic uint64_t *charge = NULL;
    if ((how & LOOKUP_FOR_REPLY) && w != NULL) {
        if (!budget_admits(&w->tier_inflight_bytes,
                settings.tier.inflight_limit,
                &w->stats.tier_inflight_refused, ntotal)) {
            *status = LOOKUP_NO_MEMORY;
            return NULL;
        }
        charge = &w->tier_inflight_bytes;
    }
    item *snap = snapshot_alloc(ntotal, charge);
    if (snap == NULL) {
        *status = LOOKUP_NO_MEMORY;
        return NULL;
    }
    heap_meta(snap)->header_only = header_only;
    if (verify && !snapshot_verified(snap, p)) {
        heap_free(snap);
        do_drop_corrupt_n(locp, p, hv);
        return NULL;                    /* a miss */
    }
    migrate_count_request(w, h->clsid, false);
    bool do_update = (how & LOOKUP_BUMP) != 0;
    bool rehit = do_update && policy_sees_rehit(*locp);
    bool hot = do_update && n_bump(locp, h->time, h->clsid);
    if (rehit) {
        active_policy->n_rehit(h->clsid, p->off, h->lru);
    }
    snapshot_fill(snap, p, *locp, verify);
    if (hot) {
        promote_after_hit(locp, hv, snap);
    }
    *status = LOOKUP_HIT;
    return snap;
}


/* ---- the N-zone's CLOCK: our side (clock_nvm.h) ---- */

bool clock_is_dead(const nitem_hdr *h, uint64_t loc)
{
    return n_is_dead(h, loc);
}

void clock_unlink(uint64_t *locp, uint64_t hv, const nitem_hdr *h,
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
        evict_shadow_victim(h->clsid, hv);
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

/* A key stored and not read since, and not one that came back (those
 * start with their bit set): the probation hand's (clock_nvm.c). */
bool clock_n_unread(uint64_t loc)
{
    return !hd_n_ref(loc) && hd_n_counter(loc) <= 1
        && (hd_n_flags(loc) & ITEM_FETCHED) == 0;
}

const struct clock_nvm_ops clock_ops = {
    .is_dead = clock_is_dead,
    .unlink = clock_unlink,
    .header_bytes = clock_header_bytes,
    .take_unnamed = ncopy_reclaim,
    .itemless_class = ncopy_itemless_class,
    .copies = ncopy_count,
};

bool items_crawl_check_n(uint64_t off, struct crawl_tally *tally)
{
    nitem_hdr h;
    bool busy;
    size_t need = clock_header_bytes();
    uint64_t *locp = nitem_lock_chunk(off, &h, need, true, &busy);
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
    } else {
        crawl_tally_add(tally, h.exptime);
    }
    item_unlock(hv);
    return reclaimed;
}
