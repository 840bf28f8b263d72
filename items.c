/*
 * items.c: the item API of items.h, zone-agnostic.
 *
 * Owns: item allocation with eviction, reference counting, linking into
 * the index (hash_desc.c) and the replacement queues (items_mq.c), lazy
 * expiry and flush, cas ids, the store/arith/delete/touch semantics of
 * memcached 1.6.18, `stats`/`stats items`/`stats sizes`/cachedump output,
 * and start-up/shutdown of the storage threads.
 *
 * Locks:
 *   - item_lock(hv) (thread.c) guards an item's metadata (it_flags,
 *     exptime, counter, cas, time) while it is linked, and its index
 *     bucket.  All do_* functions expect it held.
 *   - the MQ class lock (items_mq.c) is taken inside item locks.
 *   - sizes_lock guards the `stats sizes` histogram (leaf).
 *   - refcount is atomic: alloc returns 1 for the caller, linking adds one
 *     for the index, unlinking drops it; the chunk goes back to its slab
 *     class when the count reaches 0, so replies still being written keep
 *     their item through deletes and evictions.
 *   - counters here are relaxed atomics: no lock on the request path.
 *
 * Per-thread command counters (cas_*, incr/decr_hits, delete_*) are the
 * protocol layer's: it sees the outcome and the item.  Only get_expired and
 * get_flushed are counted here, where expiry is discovered.
 *
 * Fields written outside the item lock's protection from readers that use
 * only a class lock (exptime by touch, read by cachedump) use relaxed
 * atomic builtins; so do reads of the flush settings written by flush_all.
 */
#include "items.h"

#include "crawler.h"
#include "hash_desc.h"
#include "items_mq.h"
#include "slabs.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALLOC_TRIES 10           /* evictions tried before out of memory */
#define SIZES_BUCKET 32          /* `stats sizes` granularity, as memcached */
#define CACHEDUMP_MAX (2 * 1024 * 1024)
#define COUNTER_MAX UINT16_MAX

typedef _Atomic uint64_t counter_t;

struct class_counters {
    counter_t curr_items;
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
};

static struct class_counters ccount[MAX_NUMBER_OF_SLAB_CLASSES];
static counter_t total_items;
static _Atomic uint64_t cas_id;

static pthread_mutex_t sizes_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *sizes_hist;     /* NULL = tracking disabled */
static unsigned int sizes_nbuckets;

static void ctr_add(counter_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static void ctr_sub(counter_t *c, uint64_t n)
{
    atomic_fetch_sub_explicit(c, n, memory_order_relaxed);
}

static uint64_t ctr_get(counter_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
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

static bool item_is_expired(const item *it)
{
    rel_time_t exptime = load_exptime(it);
    return exptime != 0 && exptime <= current_time;
}

/* flush_all sets oldest_live (and, with cas, oldest_cas): once oldest_live
 * has passed, items last stored/bumped at or before it are invalid, and so
 * are items whose cas predates the flush (stored in the flush's second). */
static bool item_is_flushed(const item *it)
{
    rel_time_t oldest_live = __atomic_load_n(&settings.oldest_live,
                                             __ATOMIC_RELAXED);
    if (oldest_live == 0 || oldest_live > current_time) {
        return false;
    }
    uint64_t oldest_cas = __atomic_load_n(&settings.oldest_cas,
                                          __ATOMIC_RELAXED);
    return it->time <= oldest_live
        || (oldest_cas != 0 && it->cas != 0 && it->cas < oldest_cas);
}

static bool item_is_dead(const item *it)
{
    return item_is_expired(it) || item_is_flushed(it);
}

uint64_t get_cas_id(void)
{
    if (!settings.use_cas) {
        return 0;
    }
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

static void sizes_account(const item *it, bool add)
{
    pthread_mutex_lock(&sizes_lock);
    if (sizes_hist != NULL) {
        size_t ntotal = ITEM_ntotal(it);
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
}

/* Free one chunk of class id: reclaim a dead item or (if allowed) evict
 * the MQ victim.  False when nothing could be freed. */
static bool make_room(unsigned int id, bool may_evict)
{
    uint64_t hv;
    item *victim = mq_pick_victim(id, may_evict ? NULL : accept_dead, NULL,
                                  &hv);
    if (victim == NULL) {
        return false;
    }
    count_victim(victim, item_is_dead(victim));
    do_item_unlink(victim, hv);
    item_unlock(hv);
    item_remove(victim);        /* drops the pin; the chunk is freed */
    return true;
}

item *item_alloc(const char *key, size_t nkey, client_flags_t flags,
                 rel_time_t exptime, int nbytes)
{
    if (!item_size_ok(nkey, flags, nbytes)) {
        return NULL;
    }
    size_t ntotal = item_make_ntotal(nkey, nbytes);
    unsigned int id = slabs_clsid(ntotal);
    item *it = NULL;

    for (int tries = 0; tries < ALLOC_TRIES; tries++) {
        it = slabs_alloc(ntotal, id);
        if (it != NULL || !make_room(id, settings.evict_to_free != 0)) {
            break;
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
    it->it_flags = 0;
    it->counter = 0;
    it->slabs_clsid = (uint8_t)id;
    it->nkey = (uint8_t)nkey;
    it->mq_level = 0;
    memcpy(ITEM_key(it), key, nkey);
    ITEM_key(it)[nkey] = '\0';
    return it;
}

/* ---- link / unlink ---- */

static void count_access(item *it)
{
    if (it->counter < COUNTER_MAX) {
        it->counter++;
    }
}

/* Link a fresh item under its key (item lock held).  Linking is a store,
 * so it counts as an access. */
static bool do_item_link(item *it, uint64_t hv)
{
    it->it_flags |= ITEM_LINKED;
    it->time = current_time;
    it->cas = get_cas_id();
    count_access(it);
    if (!assoc_insert(it, hv)) {
        it->it_flags &= ~ITEM_LINKED;
        return false;
    }
    refcount_incr(it);
    struct class_counters *cc = &ccount[it->slabs_clsid];
    ctr_add(&cc->curr_items, 1);
    ctr_add(&cc->curr_bytes, ITEM_ntotal(it));
    ctr_add(&total_items, 1);
    if (settings.track_sizes) {
        sizes_account(it, true);
    }
    mq_link(it);
    return true;
}

void do_item_unlink(item *it, uint64_t hv)
{
    if ((it->it_flags & ITEM_LINKED) == 0) {
        return;
    }
    it->it_flags &= ~ITEM_LINKED;
    struct class_counters *cc = &ccount[it->slabs_clsid];
    ctr_sub(&cc->curr_items, 1);
    ctr_sub(&cc->curr_bytes, ITEM_ntotal(it));
    if (settings.track_sizes) {
        sizes_account(it, false);
    }
    assoc_delete(ITEM_key(it), it->nkey, hv);
    mq_unlink(it);
    item_remove(it);            /* the index's reference */
}

/* new_it takes old_it's place; it inherits the key's hotness. */
static bool do_item_replace(item *old_it, item *new_it, uint64_t hv)
{
    new_it->counter = old_it->counter;
    do_item_unlink(old_it, hv);
    return do_item_link(new_it, hv);
}

/* ---- lookup ---- */

static void do_item_bump(item *it)
{
    if ((it->it_flags & ITEM_FETCHED) == 0) {
        it->it_flags |= ITEM_FETCHED;
    } else {
        it->it_flags |= ITEM_ACTIVE;
    }
    count_access(it);
    mq_bump(it);
}

/* The caller must hold item_lock(hv): see items.h. */
void item_bump(LIBEVENT_THREAD *t, item *it, uint64_t hv)
{
    do_item_bump(it);
}

static item *do_item_get(const char *key, size_t nkey, uint64_t hv,
                         LIBEVENT_THREAD *t, bool do_update)
{
    item *it = assoc_find(key, nkey, hv);
    if (it == NULL) {
        return NULL;
    }
    refcount_incr(it);
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
    if (do_update) {
        do_item_bump(it);
    }
    return it;
}

item *item_get(const char *key, size_t nkey, LIBEVENT_THREAD *t,
               bool do_update)
{
    uint64_t hv = hash_key(key, nkey);
    item_lock(hv);
    item *it = do_item_get(key, nkey, hv, t, do_update);
    item_unlock(hv);
    return it;
}

item *item_get_locked(const char *key, size_t nkey, LIBEVENT_THREAD *t,
                      bool do_update, uint64_t *hv)
{
    *hv = hash_key(key, nkey);
    item_lock(*hv);
    return do_item_get(key, nkey, *hv, t, do_update);
}

item *item_touch(const char *key, size_t nkey, rel_time_t exptime,
                 LIBEVENT_THREAD *t)
{
    uint64_t hv = hash_key(key, nkey);
    item_lock(hv);
    item *it = do_item_get(key, nkey, hv, t, DO_UPDATE);
    if (it != NULL) {
        store_exptime(it, exptime);
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
    item *new_it = item_alloc(ITEM_key(it), it->nkey, old_it->client_flags,
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
    switch (compare_cas(cas_in, old_it->cas, cas_stale)) {
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

static enum store_item_type do_store_existing(item *old_it, item *it,
        enum store_cmd cmd, LIBEVENT_THREAD *t, uint64_t cas_in,
        bool cas_stale, uint64_t hv, item **stored_out)
{
    bool as_cas = cmd == NREAD_CAS
        || ((cmd == NREAD_SET || cmd == NREAD_REPLACE) && cas_in != 0);
    item *to_link = it;
    item *built = NULL;

    if (cmd == NREAD_ADD) {
        /* add fails on an existing key but counts as a use of it. */
        count_access(old_it);
        mq_bump(old_it);
        return NOT_STORED;
    }
    if (cmd == NREAD_APPEND || cmd == NREAD_PREPEND) {
        enum cas_result cr = compare_cas(cas_in, old_it->cas, false);
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
        ret = NO_MEMORY;
    }
    *stored_out = to_link;
    if (built != NULL) {
        item_remove(built);     /* the index holds it now (if linked) */
    }
    return ret;
}

static enum store_item_type do_store_item(item *it, enum store_cmd cmd,
        LIBEVENT_THREAD *t, uint64_t hv, uint64_t cas_in,
        uint64_t *cas_out, bool cas_stale)
{
    item *old_it = do_item_get(ITEM_key(it), it->nkey, hv, t, DONT_UPDATE);
    item *stored_it = it;
    enum store_item_type ret;

    if (old_it != NULL) {
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
        *cas_out = stored_it->cas;
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
 * space padded, when it fits and nobody else holds the item; otherwise a
 * new item replaces it.  Returns the item now holding the value, with one
 * reference for the caller, or NULL when out of memory. */
static item *store_counter(item *it, const char *num, size_t len,
                           uint64_t hv)
{
    /* Only the index and we hold it: no reader can see a torn value, and
     * new readers wait for the item lock we hold. */
    if (len + 2 <= it->nbytes && refcount_get(it) == 2) {
        it->cas = get_cas_id();
        memcpy(ITEM_data(it), num, len);
        memset(ITEM_data(it) + len, ' ', it->nbytes - len - 2);
        count_access(it);
        mq_bump(it);
        return it;
    }
    item *new_it = item_alloc(ITEM_key(it), it->nkey, it->client_flags,
                              load_exptime(it), (int)len + 2);
    if (new_it == NULL) {
        item_remove(it);
        return NULL;
    }
    memcpy(ITEM_data(new_it), num, len);
    memcpy(ITEM_data(new_it) + len, "\r\n", 2);
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
    item *it = do_item_get(key, nkey, hv, t, DONT_UPDATE);
    if (it == NULL) {
        return DELTA_ITEM_NOT_FOUND;
    }
    if (cas_in != 0 && it->cas != cas_in) {
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
        *cas_out = now->cas;
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

enum delete_result_type item_delete(const char *key, size_t nkey,
                                    uint64_t cas_in, LIBEVENT_THREAD *t)
{
    uint64_t hv = hash_key(key, nkey);
    enum delete_result_type ret;
    item_lock(hv);
    item *it = do_item_get(key, nkey, hv, t, DONT_UPDATE);
    if (it == NULL) {
        ret = DELETE_NOT_FOUND;
    } else if (cas_in != 0 && cas_in != it->cas) {
        ret = DELETE_CAS_MISMATCH;
    } else {
        do_item_unlink(it, hv);
        ret = DELETE_OK;
    }
    item_remove(it);
    item_unlock(hv);
    return ret;
}

/* ---- page reassignment, crawler services ---- */

#define EVICT_BATCH 256

/* slabs.c's page evictor: unlink every item in [start, end). */
static unsigned int items_evict_page(unsigned int clsid, const void *start,
                                     const void *end)
{
    item *batch[EVICT_BATCH];
    unsigned int unlinked = 0, n;
    do {
        n = mq_pin_range(clsid, start, end, batch, EVICT_BATCH);
        for (unsigned int i = 0; i < n; i++) {
            item *it = batch[i];
            uint64_t hv = hash_key(ITEM_key(it), it->nkey);
            item_lock(hv);
            if (it->it_flags & ITEM_LINKED) {
                do_item_unlink(it, hv);
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

size_t items_crawl_dump(item *it, char *buf, size_t size)
{
    char key[KEY_MAX_LENGTH * 3 + 1];
    uint64_t hv = hash_key(ITEM_key(it), it->nkey);
    int len = 0;

    item_lock(hv);
    if ((it->it_flags & ITEM_LINKED) && !item_is_dead(it)) {
        rel_time_t exptime = load_exptime(it);
        url_encode(ITEM_key(it), it->nkey, key, sizeof(key));
        len = snprintf(buf, size,
                "key=%s exp=%lld la=%llu cas=%llu fetch=%s cls=%u size=%zu\n",
                key,
                exptime == 0 ? -1LL
                             : (long long)exptime + (long long)process_started,
                (unsigned long long)it->time
                    + (unsigned long long)process_started,
                (unsigned long long)it->cas,
                (it->it_flags & ITEM_FETCHED) ? "yes" : "no",
                it->slabs_clsid, ITEM_ntotal(it));
    }
    item_unlock(hv);
    item_remove(it);
    if (len < 0 || (size_t)len >= size) {
        return 0;
    }
    return (size_t)len;
}

/* ---- stats cachedump ---- */

struct cachedump_state {
    char *buf;
    size_t used;
    unsigned int shown;
    unsigned int limit;
};

static bool cachedump_visit(item *it, unsigned int level, void *arg)
{
    struct cachedump_state *st = arg;
    char line[KEY_MAX_LENGTH + 64];
    rel_time_t exptime = load_exptime(it);
    int len = snprintf(line, sizeof(line), "ITEM %.*s [%u b; %llu s]\r\n",
            (int)it->nkey, ITEM_key(it), it->nbytes - 2,
            exptime == 0 ? 0ULL
                         : (unsigned long long)exptime
                           + (unsigned long long)process_started);
    if (len < 0 || st->used + (size_t)len + 6 > CACHEDUMP_MAX) {
        return false;
    }
    memcpy(st->buf + st->used, line, (size_t)len);
    st->used += (size_t)len;
    st->shown++;
    return st->limit == 0 || st->shown < st->limit;
}

char *item_cachedump(unsigned int clsid, unsigned int limit,
                     unsigned int *bytes)
{
    struct cachedump_state st = { malloc(CACHEDUMP_MAX), 0, 0, limit };
    if (st.buf == NULL) {
        return NULL;
    }
    if (clsid >= POWER_SMALLEST && clsid <= slabs_largest_clsid()) {
        mq_for_each(clsid, cachedump_visit, &st);
    }
    memcpy(st.buf + st.used, "END\r\n", 5);
    st.used += 5;
    *bytes = (unsigned int)st.used;
    return st.buf;
}

/* ---- stats ---- */

struct storage_totals {
    uint64_t curr_items, curr_bytes, evicted, reclaimed, expired_unfetched,
             evicted_unfetched, evicted_active, crawler_reclaimed,
             crawler_items_checked, lrutail_reflocked, direct_reclaims;
};

static void sum_classes(struct storage_totals *tot)
{
    memset(tot, 0, sizeof(*tot));
    for (unsigned int id = POWER_SMALLEST; id < MAX_NUMBER_OF_SLAB_CLASSES;
            id++) {
        struct class_counters *cc = &ccount[id];
        struct mq_class_stats ms;
        tot->curr_items += ctr_get(&cc->curr_items);
        tot->curr_bytes += ctr_get(&cc->curr_bytes);
        tot->evicted += ctr_get(&cc->evicted);
        tot->reclaimed += ctr_get(&cc->reclaimed);
        tot->expired_unfetched += ctr_get(&cc->expired_unfetched);
        tot->evicted_unfetched += ctr_get(&cc->evicted_unfetched);
        tot->evicted_active += ctr_get(&cc->evicted_active);
        tot->crawler_reclaimed += ctr_get(&cc->crawler_reclaimed);
        tot->crawler_items_checked += ctr_get(&cc->crawler_items_checked);
        tot->direct_reclaims += ctr_get(&cc->direct_reclaims);
        if (id <= slabs_largest_clsid()) {
            mq_get_class_stats(id, &ms);
            tot->lrutail_reflocked += ms.lrutail_reflocked;
        }
    }
}

#define STAT_U64(name, v) \
    append_stat(name, add_stats, c, "%llu", (unsigned long long)(v))

void storage_stats_general(ADD_STAT add_stats, void *c)
{
    struct assoc_stats as;
    struct slabs_totals sl;
    struct crawler_stats cr;
    struct storage_totals tot;
    uint64_t conn_malloc_fails;

    assoc_get_stats(&as);
    slabs_get_totals(&sl);
    crawler_get_stats(&cr);
    sum_classes(&tot);
    pthread_mutex_lock(&stats_lock);
    conn_malloc_fails = stats.malloc_fails;
    pthread_mutex_unlock(&stats_lock);

    STAT_U64("hash_power_level", as.hash_power_level);
    STAT_U64("hash_bytes", as.hash_bytes);
    STAT_U64("hash_is_expanding", as.expanding ? 1 : 0);
    /* Items of a moving page are dropped, never rescued into other
     * chunks, so they count as reassignment evictions. */
    STAT_U64("slab_reassign_rescues", 0);
    STAT_U64("slab_reassign_chunk_rescues", 0);
    STAT_U64("slab_reassign_evictions_nomem", sl.reassign_evictions);
    STAT_U64("slab_reassign_inline_reclaim", 0);
    STAT_U64("slab_reassign_busy_items", sl.reassign_busy_items);
    STAT_U64("slab_reassign_busy_deletes", 0);
    STAT_U64("slab_reassign_running", sl.reassign_running ? 1 : 0);
    STAT_U64("slabs_moved", sl.slabs_moved);
    STAT_U64("lru_crawler_running", cr.running ? 1 : 0);
    STAT_U64("lru_crawler_starts", cr.starts);
    STAT_U64("lru_maintainer_juggles", 0);
    STAT_U64("malloc_fails", conn_malloc_fails + sl.malloc_fails);
    STAT_U64("log_worker_dropped", 0);
    STAT_U64("log_worker_written", 0);
    STAT_U64("log_watcher_skipped", 0);
    STAT_U64("log_watcher_sent", 0);
    STAT_U64("log_watchers", 0);
    STAT_U64("unexpected_napi_ids", 0);
    STAT_U64("round_robin_fallback", 0);
    STAT_U64("bytes", tot.curr_bytes);
    STAT_U64("curr_items", tot.curr_items);
    STAT_U64("total_items", ctr_get(&total_items));
    STAT_U64("slab_global_page_pool", sl.global_pool_pages);
    STAT_U64("expired_unfetched", tot.expired_unfetched);
    STAT_U64("evicted_unfetched", tot.evicted_unfetched);
    STAT_U64("evicted_active", tot.evicted_active);
    STAT_U64("evictions", tot.evicted);
    STAT_U64("reclaimed", tot.reclaimed);
    STAT_U64("crawler_reclaimed", tot.crawler_reclaimed);
    STAT_U64("crawler_items_checked", tot.crawler_items_checked);
    STAT_U64("lrutail_reflocked", tot.lrutail_reflocked);
    STAT_U64("moves_to_cold", 0);
    STAT_U64("moves_to_warm", 0);
    STAT_U64("moves_within_lru", 0);
    STAT_U64("direct_reclaims", tot.direct_reclaims);
    STAT_U64("lru_bumps_dropped", 0);
}

/* memcached's hot/warm/cold view of the MQ queues: queue 0 is cold (next
 * victims), queues 1-3 warm, 4 and up hot. */
#define MQ_WARM_FIRST 1
#define MQ_HOT_FIRST 4

struct queue_group {
    uint64_t count;
    rel_time_t oldest;           /* tail time of the group's lowest queue */
    bool any;
};

static void group_queues(const struct mq_class_stats *ms, unsigned int from,
                         unsigned int to, struct queue_group *g)
{
    memset(g, 0, sizeof(*g));
    for (unsigned int q = from; q < to; q++) {
        g->count += ms->count[q];
        if (!g->any && ms->count[q] != 0) {
            g->oldest = ms->tail_time[q];
            g->any = true;
        }
    }
}

static uint64_t group_age(const struct queue_group *g)
{
    return g->any && current_time > g->oldest ? current_time - g->oldest : 0;
}

static void item_class_stat(ADD_STAT add_stats, void *c, unsigned int id,
                            const char *name, uint64_t value)
{
    char key[64];
    snprintf(key, sizeof(key), "items:%u:%s", id, name);
    append_stat(key, add_stats, c, "%llu", (unsigned long long)value);
}

static void item_stats_class(ADD_STAT add_stats, void *c, unsigned int id)
{
    struct class_counters *cc = &ccount[id];
    struct mq_class_stats ms;
    struct queue_group hot, warm, cold, all;
    mq_get_class_stats(id, &ms);
    group_queues(&ms, MQ_HOT_FIRST, MQ_QUEUES, &hot);
    group_queues(&ms, MQ_WARM_FIRST, MQ_HOT_FIRST, &warm);
    group_queues(&ms, 0, MQ_WARM_FIRST, &cold);
    group_queues(&ms, 0, MQ_QUEUES, &all);
    if (all.count == 0) {
        return;
    }
    item_class_stat(add_stats, c, id, "number", all.count);
    item_class_stat(add_stats, c, id, "number_hot", hot.count);
    item_class_stat(add_stats, c, id, "number_warm", warm.count);
    item_class_stat(add_stats, c, id, "number_cold", cold.count);
    item_class_stat(add_stats, c, id, "age_hot", group_age(&hot));
    item_class_stat(add_stats, c, id, "age_warm", group_age(&warm));
    item_class_stat(add_stats, c, id, "age", group_age(&all));
    item_class_stat(add_stats, c, id, "mem_requested",
                    ctr_get(&cc->curr_bytes));
    item_class_stat(add_stats, c, id, "evicted", ctr_get(&cc->evicted));
    item_class_stat(add_stats, c, id, "evicted_nonzero",
                    ctr_get(&cc->evicted_nonzero));
    item_class_stat(add_stats, c, id, "evicted_time",
                    ctr_get(&cc->evicted_time));
    item_class_stat(add_stats, c, id, "outofmemory",
                    ctr_get(&cc->outofmemory));
    item_class_stat(add_stats, c, id, "tailrepairs", 0);
    item_class_stat(add_stats, c, id, "reclaimed", ctr_get(&cc->reclaimed));
    item_class_stat(add_stats, c, id, "expired_unfetched",
                    ctr_get(&cc->expired_unfetched));
    item_class_stat(add_stats, c, id, "evicted_unfetched",
                    ctr_get(&cc->evicted_unfetched));
    item_class_stat(add_stats, c, id, "evicted_active",
                    ctr_get(&cc->evicted_active));
    item_class_stat(add_stats, c, id, "crawler_reclaimed",
                    ctr_get(&cc->crawler_reclaimed));
    item_class_stat(add_stats, c, id, "crawler_items_checked",
                    ctr_get(&cc->crawler_items_checked));
    item_class_stat(add_stats, c, id, "lrutail_reflocked",
                    ms.lrutail_reflocked);
    item_class_stat(add_stats, c, id, "moves_to_cold", 0);
    item_class_stat(add_stats, c, id, "moves_to_warm", 0);
    item_class_stat(add_stats, c, id, "moves_within_lru", 0);
    item_class_stat(add_stats, c, id, "direct_reclaims",
                    ctr_get(&cc->direct_reclaims));
    item_class_stat(add_stats, c, id, "hits_to_hot", 0);
    item_class_stat(add_stats, c, id, "hits_to_warm", 0);
    item_class_stat(add_stats, c, id, "hits_to_cold", 0);
    item_class_stat(add_stats, c, id, "hits_to_temp", 0);
}

void item_stats(ADD_STAT add_stats, void *c)
{
    for (unsigned int id = POWER_SMALLEST; id <= slabs_largest_clsid();
            id++) {
        item_stats_class(add_stats, c, id);
    }
}

void item_stats_reset(void)
{
    for (unsigned int id = 0; id < MAX_NUMBER_OF_SLAB_CLASSES; id++) {
        struct class_counters *cc = &ccount[id];
        /* curr_items and curr_bytes describe the cache, not history. */
        atomic_store(&cc->evicted, 0);
        atomic_store(&cc->evicted_nonzero, 0);
        atomic_store(&cc->evicted_time, 0);
        atomic_store(&cc->outofmemory, 0);
        atomic_store(&cc->reclaimed, 0);
        atomic_store(&cc->expired_unfetched, 0);
        atomic_store(&cc->evicted_unfetched, 0);
        atomic_store(&cc->evicted_active, 0);
        atomic_store(&cc->crawler_reclaimed, 0);
        atomic_store(&cc->crawler_items_checked, 0);
        atomic_store(&cc->direct_reclaims, 0);
    }
    atomic_store(&total_items, 0);
    mq_reset_class_stats();
    crawler_reset_stats();
}

/* ---- start-up and shutdown ---- */

void storage_init(void)
{
    memset(ccount, 0, sizeof(ccount));
    atomic_store(&total_items, 0);
    atomic_store(&cas_id, 0);
    slabs_init(settings.maxbytes, settings.factor, settings.large_pages);
    assoc_init(settings.hashpower_init);
    mq_init();
    slabs_set_page_evictor(items_evict_page);
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
    return rc;
}

void storage_stop_threads(void)
{
    crawler_stop();
    assoc_stop_expand_thread();
    slabs_stop_rebalance_thread();
}
