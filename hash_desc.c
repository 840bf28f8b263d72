/*
 * hash_desc.c: the index, cache-line buckets of key descriptors.
 *
 * Owns the bucket tables, the overflow bucket pool and the expansion
 * thread.
 *
 * Locks:
 *   - item_lock(hv) (item_locks.c) guards the bucket chain that hv maps to:
 *     every find/insert/delete runs with the caller holding it.  A stripe is
 *     hv & (nlocks - 1) and nlocks <= the initial bucket count, so all keys
 *     of a bucket (at any table size) share one stripe.
 *   - pool_lock guards the overflow pool's free list and chunk allocation
 *     (a leaf lock: taken inside item locks, never the other way round).
 *   - expand_lock guards the expansion thread's sleep/wake state
 *     (bg_thread.h); it is never held while item locks are taken.
 *   - expand_run_lock is held by an expansion from start to end and by
 *     assoc_walk (the decay walker), so each sees a table that does not
 *     change shape; both take item locks inside it.
 *
 * The index does not know how an N item is laid out: it confirms an N
 * candidate's key, and learns an N item's hash during growth (instead of
 * hashing its key again), through the callbacks the N-zone module
 * registers (assoc_set_nitem_ops; items_n.c).
 *
 * HMCached section 3.2 keeps two tables, a chained one for D items and
 * 19-byte descriptors for N items; here one table serves both zones and an
 * N item's descriptor is its slot's location word (hash_desc.h), so a
 * migration rewrites one word under the item lock and a lookup is one
 * probe sequence.  There is no backward pointer and no per-item refcount:
 * readers of N items get DRAM snapshots (items.c).
 *
 * Table views.  The shape of the index (which table, what size, whether an
 * expansion is under way) is one immutable struct hd_view published through
 * an atomic pointer; only its expand_bucket counter changes, and only while
 * the migrator holds the stripe of the bucket it just moved.  A reader loads
 * the view after taking its stripe lock, so the view it sees is at least as
 * new as the last migration of its bucket, and no later migration of that
 * bucket can happen until it unlocks.  Views are kept in a static array and
 * never freed; an old table is freed when the expansion that replaced it
 * has migrated every bucket (by then every reader that could see it has
 * released its stripe).
 */
#include "config.h"
#include "hash_desc.h"
#include "bg_thread.h"
#include "hash.h"
#include "item.h"
#include "item_lock.h"
#include "settings.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HD_POOL_CHUNK_BUCKETS 1024
#define HD_POOL_MAX_CHUNKS (1 << 16)

struct hd_view {
    hd_bucket *table;            /* where unmigrated buckets live */
    hd_bucket *next;             /* the doubled table while expanding */
    unsigned int power;          /* of table */
    bool expanding;
    _Atomic uint64_t expand_bucket; /* buckets of table below it are moved */
};

/* Two views per expansion at most (expanding, then stable). */
static struct hd_view views[2 * HD_HASHPOWER_MAX + 2];
static unsigned int views_used;
static _Atomic(struct hd_view *) cur_view;

static _Atomic uint64_t item_count;
static _Atomic uint64_t expansions;
static _Atomic uint64_t sig_false_positives;

/* set once at start-up, before any lookup (assoc_set_nitem_ops) */
static const struct assoc_nitem_ops *nitem_ops;

void assoc_set_nitem_ops(const struct assoc_nitem_ops *ops)
{
    nitem_ops = ops;
}

/* Overflow pool: buckets addressed by index so a bucket can link to the
 * next one with 32 bits. */
static struct {
    hd_bucket *chunks[HD_POOL_MAX_CHUNKS];
    unsigned int nchunks;
    uint32_t free_head;          /* index + 1; 0 = empty */
    uint64_t in_use;
} pool;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_mutex_t expand_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bg_thread expand_thr = BG_THREAD_INIT(&expand_lock);
static pthread_mutex_t expand_run_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool expand_wanted;

/* ---- overflow pool ---- */

static hd_bucket *pool_bucket(uint32_t link)
{
    uint32_t idx = link - 1;
    return &pool.chunks[idx / HD_POOL_CHUNK_BUCKETS]
                       [idx % HD_POOL_CHUNK_BUCKETS];
}

static bool do_pool_grow(void)
{
    if (pool.nchunks == HD_POOL_MAX_CHUNKS) {
        return false;
    }
    hd_bucket *chunk = aligned_alloc(64,
            HD_POOL_CHUNK_BUCKETS * sizeof(hd_bucket));
    if (chunk == NULL) {
        return false;
    }
    memset(chunk, 0, HD_POOL_CHUNK_BUCKETS * sizeof(hd_bucket));
    uint32_t base = pool.nchunks * HD_POOL_CHUNK_BUCKETS;
    pool.chunks[pool.nchunks++] = chunk;
    for (uint32_t i = HD_POOL_CHUNK_BUCKETS; i-- > 0;) {
        chunk[i].overflow = pool.free_head;
        pool.free_head = base + i + 1;
    }
    return true;
}

/* Take n overflow buckets (all or none), chained through their overflow
 * links in the order returned; *first gets the head link. */
static bool pool_take(unsigned int n, uint32_t *first)
{
    uint32_t head = 0;
    pthread_mutex_lock(&pool_lock);
    for (unsigned int i = 0; i < n; i++) {
        if (pool.free_head == 0 && !do_pool_grow()) {
            /* Give back what was taken. */
            while (head != 0) {
                hd_bucket *b = pool_bucket(head);
                uint32_t next = b->overflow;
                b->overflow = pool.free_head;
                pool.free_head = head;
                pool.in_use--;
                head = next;
            }
            pthread_mutex_unlock(&pool_lock);
            return false;
        }
        uint32_t link = pool.free_head;
        hd_bucket *b = pool_bucket(link);
        pool.free_head = b->overflow;
        memset(b, 0, sizeof(*b));
        b->overflow = head;
        head = link;
        pool.in_use++;
    }
    pthread_mutex_unlock(&pool_lock);
    *first = head;
    return true;
}

static void pool_put(uint32_t link)
{
    pthread_mutex_lock(&pool_lock);
    hd_bucket *b = pool_bucket(link);
    memset(b, 0, sizeof(*b));
    b->overflow = pool.free_head;
    pool.free_head = link;
    pool.in_use--;
    pthread_mutex_unlock(&pool_lock);
}

/* ---- views and tables ---- */

static hd_bucket *table_alloc(unsigned int power)
{
    size_t bytes = ((size_t)1 << power) * sizeof(hd_bucket);
    hd_bucket *t = aligned_alloc(64, bytes);
    if (t != NULL) {
        memset(t, 0, bytes);
    }
    return t;
}

static uint64_t mask_of(unsigned int power)
{
    return ((uint64_t)1 << power) - 1;
}

static void publish_view(hd_bucket *table, hd_bucket *next,
                         unsigned int power, bool expanding)
{
    struct hd_view *v = &views[views_used++];
    v->table = table;
    v->next = next;
    v->power = power;
    v->expanding = expanding;
    atomic_store_explicit(&v->expand_bucket, 0, memory_order_relaxed);
    atomic_store_explicit(&cur_view, v, memory_order_release);
}

static struct hd_view *load_view(void)
{
    return atomic_load_explicit(&cur_view, memory_order_acquire);
}

/* The head bucket of hv's chain in the current view. */
static hd_bucket *head_bucket(uint64_t hv)
{
    struct hd_view *v = load_view();
    uint64_t idx = hv & mask_of(v->power);
    if (v->expanding && idx < atomic_load_explicit(&v->expand_bucket,
                                                   memory_order_acquire)) {
        return &v->next[hv & mask_of(v->power + 1)];
    }
    return &v->table[idx];
}

void assoc_prefetch(uint64_t hv)
{
    __builtin_prefetch(head_bucket(hv), 1);
}

static hd_bucket *next_in_chain(const hd_bucket *b)
{
    return b->overflow != 0 ? pool_bucket(b->overflow) : NULL;
}

void assoc_init(int hashpower_init)
{
    unsigned int power = hashpower_init > 0 ? (unsigned int)hashpower_init
                                            : HD_HASHPOWER_DEFAULT;
    if (power > HD_HASHPOWER_MAX) {
        power = HD_HASHPOWER_MAX;
    }
    hd_bucket *t = table_alloc(power);
    if (t == NULL) {
        /* Start-up, not a client request: nothing can run without it. */
        fprintf(stderr, "Failed to allocate the hash table (power %u)\n",
                power);
        exit(EXIT_FAILURE);
    }
    views_used = 0;
    atomic_store(&item_count, 0);
    atomic_store(&expansions, 0);
    atomic_store(&sig_false_positives, 0);
    publish_view(t, NULL, power, false);
}

void assoc_destroy(void)
{
    assoc_stop_expand_thread();
    struct hd_view *v = load_view();
    if (v != NULL) {
        free(v->table);
        if (v->expanding) {
            free(v->next);
        }
    }
    pthread_mutex_lock(&pool_lock);
    for (unsigned int i = 0; i < pool.nchunks; i++) {
        free(pool.chunks[i]);
        pool.chunks[i] = NULL;
    }
    pool.nchunks = 0;
    pool.free_head = 0;
    pool.in_use = 0;
    pthread_mutex_unlock(&pool_lock);
    atomic_store(&cur_view, NULL);
    views_used = 0;
}

/* ---- lookup, insert, delete ---- */

static bool item_has_key(const item *it, const char *key, size_t nkey)
{
    return it->nkey == nkey && memcmp(ITEM_key(it), key, nkey) == 0;
}

static inline bool loc_has_key(uint64_t loc, const char *key, size_t nkey,
                               struct nitem_probe *probe)
{
    if (!hd_loc_is_n(loc)) {
        return item_has_key(hd_loc_to_item(loc), key, nkey);
    }
    /* the N-zone module reads the probe into *probe (may be NULL) */
    return nitem_ops->has_key(hd_n_offset(loc), key, nkey, probe);
}

/* Find key's slot: *bucket_out and *slot_out; *prev_out is the chain
 * bucket before it (NULL for the head).  With d_only, N candidates are
 * skipped without reading them. */
static bool find_slot(const char *key, size_t nkey, uint64_t hv,
                      bool d_only, struct nitem_probe *probe,
                      hd_bucket **bucket_out, int *slot_out,
                      hd_bucket **prev_out)
{
    uint32_t sig = hd_signature(hv);
    hd_bucket *prev = NULL;

    for (hd_bucket *b = head_bucket(hv); b != NULL;
            prev = b, b = next_in_chain(b)) {
        for (int i = 0; i < HD_SLOTS; i++) {
            if (b->sig[i] != sig || (d_only && hd_loc_is_n(b->loc[i]))) {
                continue;
            }
            if (loc_has_key(b->loc[i], key, nkey, probe)) {
                *bucket_out = b;
                *slot_out = i;
                if (prev_out != NULL) {
                    *prev_out = prev;
                }
                return true;
            }
            atomic_fetch_add_explicit(&sig_false_positives, 1,
                                      memory_order_relaxed);
        }
    }
    return false;
}

item *assoc_find(const char *key, size_t nkey, uint64_t hv)
{
    hd_bucket *b;
    int slot;
    if (!find_slot(key, nkey, hv, true, NULL, &b, &slot, NULL)) {
        return NULL;
    }
    return hd_loc_to_item(b->loc[slot]);
}

uint64_t *assoc_find_loc(const char *key, size_t nkey, uint64_t hv,
                         struct nitem_probe *probe)
{
    hd_bucket *b;
    int slot;
    if (!find_slot(key, nkey, hv, false, probe, &b, &slot, NULL)) {
        return NULL;
    }
    return &b->loc[slot];
}

/* The slot whose word satisfies match(word, want), signature sig. */
static uint64_t *find_word(uint64_t hv, bool (*match)(uint64_t, uint64_t),
                           uint64_t want)
{
    uint32_t sig = hd_signature(hv);
    for (hd_bucket *b = head_bucket(hv); b != NULL; b = next_in_chain(b)) {
        for (int i = 0; i < HD_SLOTS; i++) {
            if (b->sig[i] == sig && match(b->loc[i], want)) {
                return &b->loc[i];
            }
        }
    }
    return NULL;
}

static bool match_noff(uint64_t loc, uint64_t off)
{
    return hd_loc_is_n(loc) && hd_n_offset(loc) == off;
}

static bool match_item(uint64_t loc, uint64_t it)
{
    return loc == it;
}

uint64_t *assoc_find_noff(uint64_t hv, uint64_t off)
{
    return find_word(hv, match_noff, off);
}

uint64_t *assoc_find_item(const item *it, uint64_t hv)
{
    return find_word(hv, match_item, hd_loc_from_item(it));
}

/* Put (sig, loc) in the first free slot of the chain starting at head,
 * appending an overflow bucket when the chain is full. */
static bool chain_add(hd_bucket *head, uint32_t sig, uint64_t loc)
{
    hd_bucket *b = head, *last = head;
    for (; b != NULL; last = b, b = next_in_chain(b)) {
        for (int i = 0; i < HD_SLOTS; i++) {
            if (b->sig[i] == 0) {
                b->sig[i] = sig;
                b->loc[i] = loc;
                return true;
            }
        }
    }
    uint32_t link;
    if (!pool_take(1, &link)) {
        return false;
    }
    hd_bucket *fresh = pool_bucket(link);
    fresh->sig[0] = sig;
    fresh->loc[0] = loc;
    last->overflow = link;
    return true;
}

static uint64_t grow_threshold(const struct hd_view *v)
{
    return ((uint64_t)1 << v->power) * HD_GROW_LOAD;
}

int assoc_insert_loc(uint64_t loc, uint64_t hv)
{
    if (!chain_add(head_bucket(hv), hd_signature(hv), loc)) {
        return 0;
    }
    atomic_fetch_add_explicit(&item_count, 1, memory_order_relaxed);
    assoc_expand_if_needed();
    return 1;
}

int assoc_insert(item *it, uint64_t hv)
{
    return assoc_insert_loc(hd_loc_from_item(it), hv);
}

static bool bucket_empty(const hd_bucket *b)
{
    for (int i = 0; i < HD_SLOTS; i++) {
        if (b->sig[i] != 0) {
            return false;
        }
    }
    return true;
}

/* Empty slot i of bucket b (prev: the bucket before it in the chain). */
static void clear_slot(hd_bucket *b, int i, hd_bucket *prev)
{
    b->sig[i] = 0;
    b->loc[i] = 0;
    atomic_fetch_sub_explicit(&item_count, 1, memory_order_relaxed);
    /* An emptied overflow bucket leaves the chain so probes stay short. */
    if (prev != NULL && bucket_empty(b)) {
        uint32_t link = prev->overflow;
        prev->overflow = b->overflow;
        pool_put(link);
    }
}

void assoc_delete_loc(uint64_t *locp, uint64_t hv)
{
    hd_bucket *prev = NULL;
    for (hd_bucket *b = head_bucket(hv); b != NULL;
            prev = b, b = next_in_chain(b)) {
        for (int i = 0; i < HD_SLOTS; i++) {
            if (&b->loc[i] == locp) {
                clear_slot(b, i, prev);
                return;
            }
        }
    }
}

/* ---- expansion ---- */

struct hd_entry {
    uint32_t sig;
    uint64_t loc;
};

static unsigned int chain_entries(const hd_bucket *head, struct hd_entry **out,
                                  struct hd_entry *stackbuf,
                                  unsigned int stackcap)
{
    unsigned int n = 0, cap = stackcap;
    struct hd_entry *buf = stackbuf;
    for (const hd_bucket *b = head; b != NULL; b = next_in_chain(b)) {
        for (int i = 0; i < HD_SLOTS; i++) {
            if (b->sig[i] == 0) {
                continue;
            }
            if (n == cap) {
                struct hd_entry *grown = malloc(2 * cap * sizeof(*grown));
                if (grown == NULL) {
                    if (buf != stackbuf) {
                        free(buf);
                    }
                    *out = NULL;
                    return 0;
                }
                memcpy(grown, buf, n * sizeof(*grown));
                if (buf != stackbuf) {
                    free(buf);
                }
                buf = grown;
                cap *= 2;
            }
            buf[n].sig = b->sig[i];
            buf[n].loc = b->loc[i];
            n++;
        }
    }
    *out = buf;
    return n;
}

static unsigned int overflow_needed(unsigned int entries)
{
    return entries <= HD_SLOTS ? 0 : (entries - 1) / HD_SLOTS;
}

/* Fill the empty head bucket dst from entries, chaining reserved overflow
 * buckets taken from *spare. */
static void fill_chain(hd_bucket *dst, const struct hd_entry *e,
                       unsigned int n, uint32_t *spare)
{
    hd_bucket *b = dst;
    int slot = 0;
    for (unsigned int i = 0; i < n; i++) {
        if (slot == HD_SLOTS) {
            uint32_t link = *spare;
            hd_bucket *fresh = pool_bucket(link);
            *spare = fresh->overflow;
            fresh->overflow = 0;
            b->overflow = link;
            b = fresh;
            slot = 0;
        }
        b->sig[slot] = e[i].sig;
        b->loc[slot] = e[i].loc;
        slot++;
    }
}

/* The hash of an indexed entry: the split bit lies below the signature, so
 * a D item's key is hashed again and an N item's hash is read from its
 * header (one line; the only places expansion touches items). */
static uint64_t entry_hash(const struct hd_entry *e)
{
    if (hd_loc_is_n(e->loc)) {
        return nitem_ops->hash_of(hd_n_offset(e->loc));
    }
    const item *it = hd_loc_to_item(e->loc);
    return hash_key(ITEM_key(it), it->nkey);
}

/* Move bucket idx of v->table into v->next; caller holds its stripe.
 * False when memory for the new chains is short (nothing changed). */
static bool migrate_bucket(struct hd_view *v, uint64_t idx)
{
    struct hd_entry stackbuf[32], *e;
    hd_bucket *old = &v->table[idx];
    unsigned int n = chain_entries(old, &e, stackbuf, 32);
    if (e == NULL) {
        return false;
    }
    /* Partition in place: low half first, then entries with the new bit. */
    uint64_t bit = (uint64_t)1 << v->power;
    unsigned int nlow = 0;
    for (unsigned int i = 0; i < n; i++) {
        if ((entry_hash(&e[i]) & bit) == 0) {
            struct hd_entry tmp = e[nlow];
            e[nlow++] = e[i];
            e[i] = tmp;
        }
    }
    uint32_t spare = 0;
    unsigned int need = overflow_needed(nlow) + overflow_needed(n - nlow);
    bool ok = need == 0 || pool_take(need, &spare);
    if (ok) {
        fill_chain(&v->next[idx], e, nlow, &spare);
        fill_chain(&v->next[idx | bit], e + nlow, n - nlow, &spare);
        for (uint32_t link = old->overflow; link != 0;) {
            uint32_t next = pool_bucket(link)->overflow;
            pool_put(link);
            link = next;
        }
        memset(old, 0, sizeof(*old));
    }
    if (e != stackbuf) {
        free(e);
    }
    return ok;
}

bool assoc_expand_now(void)
{
    pthread_mutex_lock(&expand_run_lock);
    struct hd_view *v = load_view();
    unsigned int power = v->power;
    hd_bucket *next = power < HD_HASHPOWER_MAX ? table_alloc(power + 1)
                                                : NULL;
    if (next == NULL) {
        pthread_mutex_unlock(&expand_run_lock);
        return false;
    }
    hd_bucket *old = v->table;
    publish_view(old, next, power, true);
    v = load_view();

    uint64_t nbuckets = (uint64_t)1 << power;
    for (uint64_t idx = 0; idx < nbuckets; idx++) {
        item_lock(idx);
        while (!migrate_bucket(v, idx)) {
            /* Out of memory for overflow buckets: let frees happen. */
            item_unlock(idx);
            struct timespec ts = { 0, 10 * 1000 * 1000 };
            nanosleep(&ts, NULL);
            item_lock(idx);
        }
        atomic_store_explicit(&v->expand_bucket, idx + 1,
                              memory_order_release);
        item_unlock(idx);
    }
    publish_view(next, NULL, power + 1, false);
    /* Every bucket was moved under its stripe, so every reader that could
     * reach the old table has let go of it. */
    free(old);
    atomic_fetch_add(&expansions, 1);
    pthread_mutex_unlock(&expand_run_lock);
    return true;
}

void assoc_walk(assoc_visit_fn visit, void *arg)
{
    /* Holding the run lock keeps the table shape still: no expansion is
     * half done, so bucket idx is all of stripe idx's keys of that index. */
    pthread_mutex_lock(&expand_run_lock);
    struct hd_view *v = load_view();
    uint64_t nbuckets = (uint64_t)1 << v->power;
    for (uint64_t idx = 0; idx < nbuckets; idx++) {
        item_lock(idx);
        for (hd_bucket *b = &v->table[idx]; b != NULL; b = next_in_chain(b)) {
            for (int i = 0; i < HD_SLOTS; i++) {
                if (b->sig[i] != 0) {
                    visit(&b->loc[i], arg);
                }
            }
        }
        item_unlock(idx);
    }
    pthread_mutex_unlock(&expand_run_lock);
}

static bool needs_growth(void)
{
    struct hd_view *v = load_view();
    return v != NULL && !v->expanding && v->power < HD_HASHPOWER_MAX
        && atomic_load_explicit(&item_count, memory_order_relaxed)
            > grow_threshold(v);
}

void assoc_expand_if_needed(void)
{
    if (!needs_growth()
            || atomic_exchange_explicit(&expand_wanted, true,
                                        memory_order_relaxed)) {
        return;
    }
    bg_thread_wake(&expand_thr);
}

static void *expand_thread(void *arg)
{
    pthread_mutex_lock(&expand_lock);
    while (!do_bg_thread_stopping(&expand_thr)) {
        if (!atomic_load(&expand_wanted)) {
            do_bg_thread_wait(&expand_thr);
            continue;
        }
        pthread_mutex_unlock(&expand_lock);
        bool grown = false;
        if (needs_growth()) {
            grown = assoc_expand_now();
            if (settings.verbose > 1) {
                fprintf(stderr, "Hash table expansion %s\n",
                        grown ? "done" : "failed");
            }
        }
        pthread_mutex_lock(&expand_lock);
        /* A failed growth (no memory) is retried on a later insert.  A
         * done one goes on while the table is still over its load: the
         * inserts made while it ran could not ask (a table that is
         * expanding needs no growth), and none may follow them. */
        atomic_store(&expand_wanted, false);
        if (grown && needs_growth()) {
            atomic_store(&expand_wanted, true);
        }
    }
    pthread_mutex_unlock(&expand_lock);
    return NULL;
}

int assoc_start_expand_thread(void)
{
    int rc = bg_thread_start(&expand_thr, expand_thread, NULL);
    if (rc == EALREADY) {
        return 0;
    }
    if (rc == 0) {
        /* Inserts before the thread existed may already call for growth. */
        atomic_store(&expand_wanted, false);
        assoc_expand_if_needed();
    }
    return rc;
}

void assoc_stop_expand_thread(void)
{
    bg_thread_stop(&expand_thr);
}

/* ---- stats ---- */

void assoc_get_stats(struct assoc_stats *out)
{
    struct hd_view *v = load_view();
    memset(out, 0, sizeof(*out));
    if (v == NULL) {
        return;
    }
    out->hash_power_level = v->power;
    out->hash_bytes = ((uint64_t)1 << v->power) * sizeof(hd_bucket);
    if (v->expanding) {
        out->hash_bytes += ((uint64_t)2 << v->power) * sizeof(hd_bucket);
    }
    out->expanding = v->expanding;
    out->items = atomic_load_explicit(&item_count, memory_order_relaxed);
    out->expansions = atomic_load(&expansions);
    out->sig_false_positives = atomic_load_explicit(&sig_false_positives,
                                                    memory_order_relaxed);
    pthread_mutex_lock(&pool_lock);
    out->overflow_bytes = pool.in_use * sizeof(hd_bucket);
    out->overflow_reserved = (uint64_t)pool.nchunks * HD_POOL_CHUNK_BUCKETS
        * sizeof(hd_bucket);
    pthread_mutex_unlock(&pool_lock);
}

uint64_t assoc_index_bytes(void)
{
    struct assoc_stats s;
    assoc_get_stats(&s);
    return s.hash_bytes + s.overflow_reserved;
}
