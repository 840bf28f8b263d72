/*
 * hash_desc.c: the index, cache-line buckets of key descriptors.
 *
 * Owns the bucket table, the overflow bucket pool and the growth thread.
 * The layout and what a descriptor holds are hash_desc.h's; the design
 * and its measurements are doc/tiering.md "Index and descriptors".
 *
 * Two choices.  A key may live in either of two buckets: the one its
 * signature names and the one a scramble of its signature names (both
 * keep the hash's low lock bits, below).  An insert takes a free slot of
 * either; when both are full it makes room cuckoo-style: first by moving
 * one of their entries whose other bucket has room, else by a walk that
 * moves an entry to its other bucket, that bucket's evicted entry to its
 * own, up to HD_KICKS moves; only when that fails does a bucket chain an
 * overflow bucket from the pool.  A lookup reads the two buckets (the second's load started before
 * the first is compared) and their chains, if any.  Two choices keep the
 * buckets evenly full at HD_LOAD_X4 / 4 entries of HD_SLOTS, where one
 * choice would chain a tenth of the buckets.
 *
 * Linear growth.  The table grows one bucket at a time (linear hashing):
 * the shape is a level L and a split pointer s; bucket addresses are
 * h mod 2^L, or h mod 2^(L+1) below s.  Splitting bucket s moves to the
 * new bucket s + 2^L the entries whose choices no longer include s, and
 * advances s; at 2^L the level goes up.  While the index holds more than
 * HD_LOAD_X4 / 4 entries per bucket, the insert that found it so splits
 * the next bucket when it can without waiting, and the growth thread
 * splits what is left; so the table's DRAM stays at one bucket per that
 * many entries at every size, never half empty as after a doubling.  The table is one reservation of
 * address space sized at start-up for the most entries the zones can
 * hold; the buckets of level L are made writable when the table reaches
 * it and cost DRAM page by page as splits touch them, so hash_bytes
 * counts the buckets made.  A warm restart knows how many entries it will
 * link, at random, into the whole table: assoc_reserve makes those
 * buckets at once, on huge pages, assoc_prefetch and
 * assoc_prefetch_room let its linking ask for the lines it will need,
 * and its links take the emptier of their two buckets
 * (assoc_insert_loc_spread), so that fewer find both full as the table
 * fills to its target load.
 *
 * Everything an insert, a move or a split needs is in the slot: the
 * bucket hash of either choice is the signature (or its scramble) above
 * the low lock bits, and the lock bits are the bucket's own.  So growth
 * and cuckoo moves never read an item, in DRAM or NVM.  The price: a
 * bucket's signatures share their low L - lock bits bits, so a signature
 * compare tells apart 32 - (L - lock bits) bits (16 at 16M buckets).
 * And each stripe is a table of its own that fills by chance: the fewer
 * stripes, the more evenly (item_lock.h).
 *
 * Locks:
 *   - item_lock(hv) (item_locks.c) guards every bucket whose index has
 *     hv's low lock bits: the two choices of a key, every entry a cuckoo
 *     move can reach from them, and the bucket a split fills, are all of
 *     one stripe.  Every find/insert/delete runs with the caller holding
 *     it; a reader loads the shape after taking it, so the shape it sees
 *     is at least as new as the last split of its buckets.
 *   - pool_lock guards the overflow pool's free list and chunk allocation
 *     (a leaf lock: taken inside item locks, never the other way round).
 *   - expand_lock guards the growth thread's sleep/wake state
 *     (bg_thread.h); it is never held while item locks are taken.
 *   - split_lock is held by whoever splits and guards the table's writable
 *     extent; the shape word is published under it.  The thread and a
 *     synchronous growth take it outside item locks and then lock each
 *     bucket's stripe; an insert, inside its item lock, only trylocks it
 *     and the stripe it splits.
 *
 * The power `stats` reports.  hash_power_level is memcached's figure, not
 * this table's level: the power memcached's table (one pointer per bucket,
 * doubling once it holds more than 1.5 items per bucket) would have
 * reached with the items this index has held, so that operators' scripts
 * and a warm restart's saved power mean what they mean with memcached
 * (doc/monitoring.md).  It starts at -o hashpower (16 by default), only
 * grows, and stays put under no_hashexpand as memcached's table does; an
 * insert that passes mc_grow_at raises it.
 *
 * HMCached section 3.2 keeps two tables, a chained one for D items and
 * 19-byte descriptors for N items; here one table serves both zones and an
 * N item's descriptor is its slot's location word (hash_desc.h), so a
 * migration rewrites one word under the item lock.  There is no backward
 * pointer and no per-item refcount: readers of N items get DRAM snapshots
 * (items.c).
 */
#include "config.h"
#include "hash_desc.h"
#include "bg_thread.h"
#include "item.h"
#include "item_lock.h"
#include "settings.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define HD_POOL_CHUNK_BUCKETS 256
#define HD_POOL_MAX_CHUNKS (1 << 18)
/* Cuckoo moves one insert may make before it chains an overflow bucket. */
#define HD_KICKS 64
/* Splits the thread makes between two looks at its stop flag. */
#define HD_SPLIT_BATCH 4096

/* The shape word: level above SHAPE_SPLIT_BITS, split pointer below. */
#define SHAPE_SPLIT_BITS 48

static _Atomic uint64_t shape;
/* Address space for every bucket the table may grow to (fixed at
 * assoc_init); buckets [0, writable_buckets) can be used, the rest are not
 * mapped yet (split_lock). */
static hd_bucket *table;
static uint64_t reserved_buckets;
static uint64_t writable_buckets;
static unsigned int lock_bits;
static uint64_t lock_mask;

static _Atomic uint64_t item_count;
/* Beside item_count, whose line every insert holds anyway: the reported
 * power and the item count past which it grows (UINT64_MAX: never). */
static _Atomic uint64_t mc_grow_at;
static _Atomic unsigned int mc_power;
static _Atomic uint64_t rounds;
static _Atomic uint64_t cuckoo_moves;
static _Atomic uint64_t sig_false_positives;
static atomic_bool splitting;

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
static struct bg_thread expand_thr = BG_THREAD_INIT("mc-assocmaint", &expand_lock);
static pthread_mutex_t split_lock = PTHREAD_MUTEX_INITIALIZER;
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


/* ---- shape and addresses ---- */

static uint64_t mask_of(unsigned int bits)
{
    return ((uint64_t)1 << bits) - 1;
}

static uint64_t make_shape(unsigned int level, uint64_t split)
{
    return ((uint64_t)level << SHAPE_SPLIT_BITS) | split;
}

static unsigned int shape_level(uint64_t sh)
{
    return (unsigned int)(sh >> SHAPE_SPLIT_BITS);
}

static uint64_t shape_split(uint64_t sh)
{
    return sh & mask_of(SHAPE_SPLIT_BITS);
}

static uint64_t shape_buckets(uint64_t sh)
{
    return ((uint64_t)1 << shape_level(sh)) + shape_split(sh);
}

static uint64_t load_shape(void)
{
    return atomic_load_explicit(&shape, memory_order_acquire);
}

static inline hd_bucket *bucket_at(uint64_t idx)
{
    return &table[idx];
}

/* Bucket address of a bucket hash h under the shape sh. */
static inline uint64_t address(uint64_t sh, uint64_t h)
{
    unsigned int level = shape_level(sh);
    uint64_t idx = h & mask_of(level);
    return idx < shape_split(sh) ? h & mask_of(level + 1) : idx;
}

/* The second choice's bits: the signature times an odd constant, halves
 * swapped so that its low bits depend on all of the signature's. */
static inline uint32_t scramble(uint32_t sig)
{
    uint32_t x = sig * 0x9e3779b1u;
    return (x >> 16) | (x << 16);
}

/* The two buckets of signature sig in a stripe whose lock bits are low.
 * The second's bucket hash takes the opposite of the first's lowest bit
 * above the lock bits, so the two differ at every table size past one
 * bucket a stripe, whatever the split pointer (a rule that looked at the
 * addresses would change with the shape and lose entries in a split). */
static inline void choices_of(uint64_t sh, uint32_t sig, uint64_t low,
                              uint64_t out[2])
{
    uint64_t first = ((uint64_t)sig << lock_bits) | low;
    uint64_t second = ((uint64_t)scramble(sig) << lock_bits) | low;
    uint64_t bit = (uint64_t)1 << lock_bits;
    second = (second & ~bit) | (~first & bit);
    out[0] = address(sh, first);
    out[1] = address(sh, second);
}

/* How many distinct buckets hv's key may be in: 1 or 2, in out. */
static inline int heads_of(uint64_t sh, uint64_t hv, uint64_t out[2])
{
    choices_of(sh, hd_signature(hv), hv & lock_mask, out);
    return out[0] == out[1] ? 1 : 2;
}

/* Bit i set when slot i of b has signature sig (0: the free slots).
 * With SSE2 the first four signatures are compared in one instruction. */
#if defined(__SSE2__)
_Static_assert(HD_SLOTS == 5, "four signatures in a vector, one after");
static inline unsigned int slots_with(const hd_bucket *b, uint32_t sig)
{
    __m128i four = _mm_loadu_si128((const __m128i *)(const void *)b->sig);
    __m128i same = _mm_cmpeq_epi32(four, _mm_set1_epi32((int)sig));
    unsigned int mask = (unsigned int)_mm_movemask_ps(_mm_castsi128_ps(same));
    return mask | (unsigned int)(b->sig[4] == sig) << 4;
}
#else
static inline unsigned int slots_with(const hd_bucket *b, uint32_t sig)
{
    unsigned int mask = 0;
    for (int i = 0; i < HD_SLOTS; i++) {
        mask |= (unsigned int)(b->sig[i] == sig) << i;
    }
    return mask;
}
#endif

static hd_bucket *next_in_chain(const hd_bucket *b)
{
    return b->overflow != 0 ? pool_bucket(b->overflow) : NULL;
}

void assoc_prefetch(uint64_t hv)
{
    uint64_t heads[2];
    int n = heads_of(load_shape(), hv, heads);
    for (int c = 0; c < n; c++) {
        __builtin_prefetch(bucket_at(heads[c]), 1);
    }
}

/* ---- the table ---- */

/* Make buckets [0, upto) usable, whole pages at a time, within the
 * reservation; the pages cost DRAM only once touched. */
static bool table_extend(uint64_t upto)
{
    if (upto <= writable_buckets) {
        return true;
    }
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t from = writable_buckets * sizeof(hd_bucket);
    uint64_t to = (upto * sizeof(hd_bucket) + page - 1) / page * page;
    if (upto > reserved_buckets
            || to > reserved_buckets * sizeof(hd_bucket)
            || mprotect((char *)table + from, to - from,
                        PROT_READ | PROT_WRITE) != 0) {
        return false;
    }
    writable_buckets = to / sizeof(hd_bucket);
    return true;
}

/* Room for max_entries at the target load, twice over, as a power of
 * two between 2^power and 2^HD_HASHPOWER_MAX buckets. */
static uint64_t buckets_to_reserve(unsigned int power, uint64_t max_entries)
{
    uint64_t want = max_entries / HD_LOAD_X4 * 8 + 1;
    uint64_t limit = (uint64_t)1 << HD_HASHPOWER_MAX;
    /* at least a page: the reservation is made writable page by page */
    uint64_t n = (uint64_t)1 << (power > 6 ? power : 6);
    while (n < want && n < limit) {
        n <<= 1;
    }
    return n;
}

/* The most items memcached's table of 2^power buckets takes before it
 * doubles. */
static uint64_t mc_grow_threshold(unsigned int power)
{
    if (power >= MC_HASHPOWER_MAX || !settings.hash_expand) {
        return UINT64_MAX;
    }
    return ((uint64_t)3 << power) / 2;
}

static void mc_power_raise(unsigned int power)
{
    if (power > MC_HASHPOWER_MAX) {
        power = MC_HASHPOWER_MAX;
    }
    unsigned int cur = atomic_load_explicit(&mc_power, memory_order_relaxed);
    while (cur < power
           && !atomic_compare_exchange_weak_explicit(&mc_power, &cur, power,
                   memory_order_relaxed, memory_order_relaxed)) {
    }
    /* racing raisers may store an older threshold: the next insert past
     * it only comes back here */
    atomic_store_explicit(&mc_grow_at,
        mc_grow_threshold(atomic_load_explicit(&mc_power,
                                               memory_order_relaxed)),
        memory_order_relaxed);
}

/* memcached doubles its table once per insert that finds it past 1.5
 * items per bucket; with inserts going on it ends where items fit. */
static void mc_power_follow(uint64_t items)
{
    unsigned int power = atomic_load_explicit(&mc_power,
                                              memory_order_relaxed);
    while (items > mc_grow_threshold(power)) {
        power++;
    }
    mc_power_raise(power);
}

void assoc_restore_reported_power(unsigned int power)
{
    atomic_store_explicit(&mc_power, 0, memory_order_relaxed);
    mc_power_raise(power);
    mc_power_follow(atomic_load_explicit(&item_count, memory_order_relaxed));
}

void assoc_init(int hashpower_init, uint64_t max_entries)
{
    unsigned int power = hashpower_init > 0 ? (unsigned int)hashpower_init
                                            : HD_HASHPOWER_DEFAULT;
    lock_bits = item_lock_power();
    lock_mask = mask_of(lock_bits);
    /* every bucket must lie in one stripe */
    if (power < lock_bits) {
        power = lock_bits;
    }
    if (power > HD_HASHPOWER_MAX) {
        power = HD_HASHPOWER_MAX;
    }
    reserved_buckets = buckets_to_reserve(power, max_entries);
    writable_buckets = 0;
    void *p = mmap(NULL, reserved_buckets * sizeof(hd_bucket), PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    table = p == MAP_FAILED ? NULL : p;
    if (table == NULL || !table_extend((uint64_t)1 << power)) {
        /* Start-up, not a client request: nothing can run without it. */
        fprintf(stderr, "Failed to allocate the hash table (power %u)\n",
                power);
        exit(EXIT_FAILURE);
    }
    atomic_store(&item_count, 0);
    atomic_store(&mc_power, hashpower_init > 0 ? (unsigned int)hashpower_init
                                               : MC_HASHPOWER_DEFAULT);
    atomic_store(&mc_grow_at, mc_grow_threshold(atomic_load(&mc_power)));
    atomic_store(&rounds, 0);
    atomic_store(&cuckoo_moves, 0);
    atomic_store(&sig_false_positives, 0);
    atomic_store_explicit(&shape, make_shape(power, 0), memory_order_release);
}

void assoc_destroy(void)
{
    assoc_stop_expand_thread();
    if (table != NULL) {
        munmap(table, reserved_buckets * sizeof(hd_bucket));
        table = NULL;
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
}

/* ---- lookup ---- */

/* A slot found: its bucket and index. */
struct slot_ref {
    hd_bucket *bucket;
    int slot;
};

/* Does the slot at locp (signature already matched) satisfy the search? */
typedef bool (*slot_match_fn)(const uint64_t *locp, const void *arg);

/* The first slot of hv's two chains with hv's signature that match()
 * accepts.  The second bucket's line is asked for before the first is
 * compared, so an entry that had to take its second choice costs no
 * second wait.  Inlined into each caller, where match() is known, so the
 * hot lookups pay no indirect call. */
static inline __attribute__((always_inline)) bool
find_in_chains(uint64_t hv, slot_match_fn match, const void *arg,
               struct slot_ref *out)
{
    uint32_t sig = hd_signature(hv);
    uint64_t heads[2];
    int n = heads_of(load_shape(), hv, heads);
    if (n == 2) {
        __builtin_prefetch(bucket_at(heads[1]));
    }
    for (int c = 0; c < n; c++) {
        for (hd_bucket *b = bucket_at(heads[c]); b != NULL;
                b = next_in_chain(b)) {
            for (unsigned int m = slots_with(b, sig); m != 0; m &= m - 1) {
                int i = __builtin_ctz(m);
                if (match(&b->loc[i], arg)) {
                    *out = (struct slot_ref){ b, i };
                    return true;
                }
            }
        }
    }
    return false;
}

struct key_search {
    const char *key;
    size_t nkey;
    bool d_only;
    struct nitem_probe *probe;
};

static bool item_has_key(const item *it, const char *key, size_t nkey)
{
    return it->nkey == nkey && memcmp(ITEM_key(it), key, nkey) == 0;
}

/* With d_only, N candidates are skipped without reading them; the N-zone
 * module reads an N candidate's probe into *probe (may be NULL). */
static bool match_key(const uint64_t *locp, const void *arg)
{
    const struct key_search *ks = arg;
    uint64_t loc = *locp;
    bool n = hd_loc_is_n(loc);
    if (n && ks->d_only) {
        return false;
    }
    bool same = n ? nitem_ops->has_key(hd_n_offset(loc), ks->key, ks->nkey,
                                       ks->probe)
                  : item_has_key(hd_loc_to_item(loc), ks->key, ks->nkey);
    if (!same) {
        atomic_fetch_add_explicit(&sig_false_positives, 1,
                                  memory_order_relaxed);
    }
    return same;
}

item *assoc_find(const char *key, size_t nkey, uint64_t hv)
{
    struct key_search ks = { key, nkey, true, NULL };
    struct slot_ref r;
    if (!find_in_chains(hv, match_key, &ks, &r)) {
        return NULL;
    }
    return hd_loc_to_item(r.bucket->loc[r.slot]);
}

uint64_t *assoc_find_loc(const char *key, size_t nkey, uint64_t hv,
                         struct nitem_probe *probe)
{
    struct key_search ks = { key, nkey, false, probe };
    struct slot_ref r;
    if (!find_in_chains(hv, match_key, &ks, &r)) {
        return NULL;
    }
    return &r.bucket->loc[r.slot];
}

static bool match_noff(const uint64_t *locp, const void *arg)
{
    return hd_loc_is_n(*locp) && hd_n_offset(*locp) == *(const uint64_t *)arg;
}

static bool match_word(const uint64_t *locp, const void *arg)
{
    return *locp == *(const uint64_t *)arg;
}


uint64_t *assoc_find_noff(uint64_t hv, uint64_t off)
{
    struct slot_ref r;
    return find_in_chains(hv, match_noff, &off, &r) ? &r.bucket->loc[r.slot]
                                                   : NULL;
}

uint64_t *assoc_find_item(const item *it, uint64_t hv)
{
    uint64_t word = hd_loc_from_item(it);
    struct slot_ref r;
    return find_in_chains(hv, match_word, &word, &r)
        ? &r.bucket->loc[r.slot] : NULL;
}

struct d_match {
    bool (*match)(const item *it, const void *arg);
    const void *arg;
};

static bool match_d(const uint64_t *locp, const void *arg)
{
    const struct d_match *m = arg;
    return !hd_loc_is_n(*locp) && m->match(hd_loc_to_item(*locp), m->arg);
}

item *assoc_find_d_where(uint64_t hv,
                         bool (*match)(const item *it, const void *arg),
                         const void *arg)
{
    struct d_match m = { match, arg };
    struct slot_ref r;
    return find_in_chains(hv, match_d, &m, &r)
        ? hd_loc_to_item(r.bucket->loc[r.slot]) : NULL;
}

/* ---- insert ---- */

static bool needs_growth(void);
static void split_inline(uint64_t hv);

static bool slot_put(hd_bucket *b, uint32_t sig, uint64_t loc)
{
    unsigned int free_slots = slots_with(b, 0);
    if (free_slots == 0) {
        return false;
    }
    int i = __builtin_ctz(free_slots);
    b->sig[i] = sig;
    b->loc[i] = loc;
    return true;
}

/* A free slot anywhere in the chain that starts at head. */
static bool chain_put(hd_bucket *head, uint32_t sig, uint64_t loc)
{
    for (hd_bucket *b = head; b != NULL; b = next_in_chain(b)) {
        if (slot_put(b, sig, loc)) {
            return true;
        }
    }
    return false;
}

/* Append an overflow bucket holding (sig, loc) to the chain of head. */
static bool chain_append(hd_bucket *head, uint32_t sig, uint64_t loc)
{
    uint32_t link;
    if (!pool_take(1, &link)) {
        return false;
    }
    hd_bucket *last = head;
    while (last->overflow != 0) {
        last = pool_bucket(last->overflow);
    }
    hd_bucket *fresh = pool_bucket(link);
    fresh->sig[0] = sig;
    fresh->loc[0] = loc;
    last->overflow = link;
    return true;
}

/* Which slot a cuckoo move evicts: a per-thread xorshift, so that two
 * entries cannot keep pushing each other back and forth. */
static __thread uint64_t kick_state;

static unsigned int kick_pick(unsigned int n)
{
    if (kick_state == 0) {
        kick_state = (uint64_t)(uintptr_t)&kick_state | 1;
    }
    kick_state ^= kick_state << 13;
    kick_state ^= kick_state >> 7;
    kick_state ^= kick_state << 17;
    return (unsigned int)(kick_state % n);
}

struct kick {
    hd_bucket *bucket;
    int slot;
};

static void swap_entry(hd_bucket *b, int i, uint32_t *sig, uint64_t *loc)
{
    uint32_t s = b->sig[i];
    uint64_t l = b->loc[i];
    b->sig[i] = *sig;
    b->loc[i] = *loc;
    *sig = s;
    *loc = l;
}

/* Cuckoo displacement from bucket idx: (*sig, *loc) takes a slot there,
 * its entry moves on to its other bucket, and so on.  True when the last
 * mover found a free slot; false after HD_KICKS moves with (*sig, *loc)
 * the entry left without one.  path records the moves for undo_kicks. */
static bool displace(uint64_t sh, uint64_t idx, uint64_t low, uint32_t *sig,
                     uint64_t *loc, struct kick *path, int *moves)
{
    for (int n = 0; n < HD_KICKS; n++) {
        hd_bucket *b = bucket_at(idx);
        int i = (int)kick_pick(HD_SLOTS);
        swap_entry(b, i, sig, loc);
        path[n] = (struct kick){ b, i };
        *moves = n + 1;
        uint64_t c[2];
        choices_of(sh, *sig, low, c);
        uint64_t other = c[0] == idx ? c[1] : c[0];
        if (other != idx) {
            if (slot_put(bucket_at(other), *sig, *loc)) {
                atomic_fetch_add_explicit(&cuckoo_moves, (uint64_t)n + 1,
                                          memory_order_relaxed);
                return true;
            }
            idx = other;
        }
    }
    return false;
}

static void undo_kicks(const struct kick *path, int moves, uint32_t *sig,
                       uint64_t *loc)
{
    while (moves-- > 0) {
        swap_entry(path[moves].bucket, path[moves].slot, sig, loc);
    }
}

/* Room in full bucket idx by one move: an entry of it whose other bucket
 * has a free slot goes there and (sig, loc) takes its place. */
static bool make_room_by_one(uint64_t sh, uint64_t idx, uint64_t low,
                             uint32_t sig, uint64_t loc)
{
    hd_bucket *b = bucket_at(idx);
    for (int i = 0; i < HD_SLOTS; i++) {
        uint64_t c[2];
        choices_of(sh, b->sig[i], low, c);
        uint64_t other = c[0] == idx ? c[1] : c[0];
        if (other != idx && slot_put(bucket_at(other), b->sig[i],
                                     b->loc[i])) {
            b->sig[i] = sig;
            b->loc[i] = loc;
            atomic_fetch_add_explicit(&cuckoo_moves, 1,
                                      memory_order_relaxed);
            return true;
        }
    }
    return false;
}

/* Start the loads of the other buckets of full bucket idx's entries, so
 * that make_room_by_one's looks at them overlap instead of each waiting
 * for memory in turn. */
static void prefetch_others(uint64_t sh, uint64_t idx, uint64_t low)
{
    const hd_bucket *b = bucket_at(idx);
    for (int i = 0; i < HD_SLOTS; i++) {
        uint64_t c[2];
        choices_of(sh, b->sig[i], low, c);
        __builtin_prefetch(bucket_at(c[0] == idx ? c[1] : c[0]), 1);
    }
}

void assoc_prefetch_room(uint64_t hv)
{
    uint64_t sh = load_shape();
    uint64_t low = hv & lock_mask;
    uint64_t c[2];
    choices_of(sh, hd_signature(hv), low, c);
    if (c[0] != c[1] && slots_with(bucket_at(c[0]), 0) == 0
            && slots_with(bucket_at(c[1]), 0) == 0) {
        prefetch_others(sh, c[0], low);
        prefetch_others(sh, c[1], low);
    }
}

/* How many of b's slots are free: a table, as the build may not assume a
 * popcount instruction. */
static unsigned int free_slots(const hd_bucket *b)
{
    static const unsigned char ones[1 << HD_SLOTS] = {
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
        1, 2, 2, 3, 2, 3, 3, 4, 2, 3, 3, 4, 3, 4, 4, 5,
    };
    return ones[slots_with(b, 0)];
}

/* Index (sig, loc) in the stripe whose lock bits are low: a free head
 * slot of either choice (with spread, of the emptier one), else room
 * made by cuckoo moves, else a free slot in either chain, else a new
 * overflow bucket.  False (and nothing changed) only when no overflow
 * bucket can be had. */
static bool index_put(uint64_t sh, uint32_t sig, uint64_t loc, uint64_t low,
                      bool spread)
{
    uint64_t c[2];
    choices_of(sh, sig, low, c);
    if (spread && free_slots(bucket_at(c[1])) > free_slots(bucket_at(c[0]))
            && slot_put(bucket_at(c[1]), sig, loc)) {
        return true;
    }
    if (slot_put(bucket_at(c[0]), sig, loc)
            || slot_put(bucket_at(c[1]), sig, loc)) {
        return true;
    }
    if (c[0] != c[1]) {
        prefetch_others(sh, c[0], low);
        prefetch_others(sh, c[1], low);
        if (make_room_by_one(sh, c[0], low, sig, loc)
                || make_room_by_one(sh, c[1], low, sig, loc)) {
            return true;
        }
    }
    struct kick path[HD_KICKS];
    int moves = 0;
    uint32_t s = sig;
    uint64_t l = loc;
    if (c[0] != c[1]
            && displace(sh, c[kick_pick(2)], low, &s, &l, path, &moves)) {
        return true;
    }
    uint64_t h[2];
    choices_of(sh, s, low, h);
    if (chain_put(bucket_at(h[0]), s, l) || chain_put(bucket_at(h[1]), s, l)
            || chain_append(bucket_at(h[0]), s, l)) {
        return true;
    }
    undo_kicks(path, moves, &s, &l);
    return false;
}

static int insert_loc(uint64_t loc, uint64_t hv, bool spread)
{
    if (!index_put(load_shape(), hd_signature(hv), loc, hv & lock_mask,
                   spread)) {
        return 0;
    }
    uint64_t items = atomic_fetch_add_explicit(&item_count, 1,
                                               memory_order_relaxed) + 1;
    if (items > atomic_load_explicit(&mc_grow_at, memory_order_relaxed)) {
        mc_power_follow(items);
    }
    if (needs_growth() && settings.hash_expand) {
        split_inline(hv);
        assoc_expand_if_needed();
    }
    return 1;
}

int assoc_insert_loc(uint64_t loc, uint64_t hv)
{
    return insert_loc(loc, hv, false);
}

int assoc_insert_loc_spread(uint64_t loc, uint64_t hv)
{
    return insert_loc(loc, hv, true);
}

int assoc_insert(item *it, uint64_t hv)
{
    return assoc_insert_loc(hd_loc_from_item(it), hv);
}

/* ---- delete ---- */

static bool bucket_empty(const hd_bucket *b)
{
    return slots_with(b, 0) == (1u << HD_SLOTS) - 1;
}

/* The bucket before overflow bucket b in one of hv's chains. */
static hd_bucket *chain_prev(uint64_t hv, const hd_bucket *b)
{
    uint64_t heads[2];
    int n = heads_of(load_shape(), hv, heads);
    for (int c = 0; c < n; c++) {
        for (hd_bucket *p = bucket_at(heads[c]); p != NULL;
                p = next_in_chain(p)) {
            if (next_in_chain(p) == b) {
                return p;
            }
        }
    }
    return NULL;
}

/* An emptied overflow bucket leaves its chain so probes stay short. */
static void drop_if_empty(hd_bucket *b, hd_bucket *prev)
{
    if (prev != NULL && bucket_empty(b)) {
        uint32_t link = prev->overflow;
        prev->overflow = b->overflow;
        pool_put(link);
    }
}

void assoc_delete_loc(uint64_t *locp, uint64_t hv)
{
    /* buckets are cache-line aligned: the slot's bucket is its line */
    hd_bucket *b = (hd_bucket *)((uintptr_t)locp
                                 & ~(uintptr_t)(sizeof(hd_bucket) - 1));
    int i = (int)(locp - b->loc);
    b->sig[i] = 0;
    b->loc[i] = 0;
    atomic_fetch_sub_explicit(&item_count, 1, memory_order_relaxed);
    if (b >= table && b < table + reserved_buckets) {
        return;                  /* a chain's head stays */
    }
    /* an overflow bucket: leaves its chain once empty */
    if (bucket_empty(b)) {
        drop_if_empty(b, chain_prev(hv, b));
    }
}

/* ---- growth ---- */

static uint64_t capacity_of(uint64_t buckets)
{
    return buckets * HD_LOAD_X4 / 4;
}

/* Does the entry of signature sig in bucket idx still belong there under
 * the shape sh? */
static bool stays(uint64_t sh, uint64_t idx, uint32_t sig)
{
    uint64_t c[2];
    choices_of(sh, sig, idx & lock_mask, c);
    return c[0] == idx || c[1] == idx;
}

/* Split bucket s = the split pointer of shape sh (its stripe held): the
 * entries of its chain that the next shape sends elsewhere go to the
 * bucket s + 2^L, which is empty; then the next shape is published (a
 * finished level counts as one doubling).
 * False when the overflow buckets the movers may need cannot be had
 * (nothing changed). */
static bool do_split(uint64_t sh)
{
    unsigned int level = shape_level(sh);
    uint64_t s = shape_split(sh);
    uint64_t next = s + 1 == ((uint64_t)1 << level)
        ? make_shape(level + 1, 0) : make_shape(level, s + 1);
    hd_bucket *from = bucket_at(s);
    hd_bucket *to = bucket_at(s + ((uint64_t)1 << level));

    unsigned int movers = 0;
    for (hd_bucket *b = from; b != NULL; b = next_in_chain(b)) {
        for (int i = 0; i < HD_SLOTS; i++) {
            movers += b->sig[i] != 0 && !stays(next, s, b->sig[i]);
        }
    }
    uint32_t spare = 0;
    if (movers > HD_SLOTS
            && !pool_take((movers - 1) / HD_SLOTS, &spare)) {
        return false;
    }
    hd_bucket *dst = to;
    int dslot = 0;
    hd_bucket *prev = NULL;
    for (hd_bucket *b = from; b != NULL;) {
        for (int i = 0; i < HD_SLOTS; i++) {
            if (b->sig[i] == 0 || stays(next, s, b->sig[i])) {
                continue;
            }
            if (dslot == HD_SLOTS) {
                hd_bucket *fresh = pool_bucket(spare);
                dst->overflow = spare;
                spare = fresh->overflow;
                fresh->overflow = 0;
                dst = fresh;
                dslot = 0;
            }
            dst->sig[dslot] = b->sig[i];
            dst->loc[dslot++] = b->loc[i];
            b->sig[i] = 0;
            b->loc[i] = 0;
        }
        hd_bucket *after = next_in_chain(b);
        if (prev != NULL && bucket_empty(b)) {
            drop_if_empty(b, prev);
        } else {
            prev = b;
        }
        b = after;
    }
    atomic_store_explicit(&shape, next, memory_order_release);
    if (shape_split(next) == 0) {
        atomic_fetch_add(&rounds, 1);
    }
    return true;
}

/* Split the next bucket (split_lock held).  False at the size limit or
 * when memory is short. */
static bool split_next(void)
{
    uint64_t sh = load_shape();
    if (!table_extend((uint64_t)2 << shape_level(sh))) {
        return false;
    }
    uint64_t s = shape_split(sh);
    item_lock(s);
    bool done = do_split(sh);
    item_unlock(s);
    return done;
}

/* An insert that took the load past its target splits the next bucket
 * itself when it can do so without waiting, so growth keeps pace with
 * the inserts however busy the machine; the thread does what is left.
 * The caller holds hv's stripe: it only trylocks the split lock and
 * another stripe (the lock order of doc/design.md). */
static void split_inline(uint64_t hv)
{
    if (pthread_mutex_trylock(&split_lock) != 0) {
        return;
    }
    uint64_t sh = load_shape();
    uint64_t s = shape_split(sh);
    bool held = ((s ^ hv) & lock_mask) == 0;
    if (needs_growth() && table_extend((uint64_t)2 << shape_level(sh))
            && (held || item_trylock(s) == 0)) {
        do_split(sh);
        if (!held) {
            item_unlock(s);
        }
    }
    pthread_mutex_unlock(&split_lock);
}

bool assoc_expand_now(void)
{
    pthread_mutex_lock(&split_lock);
    bool ok = true;
    do {
        ok = split_next();
    } while (ok && shape_split(load_shape()) != 0);
    pthread_mutex_unlock(&split_lock);
    return ok;
}

/* The buckets a reserve for `items` will split up to, made writable and
 * backed by huge pages before any split reads them (a read would map the
 * zero page, and the write after it a small page): the reserve's caller
 * then links entries into random buckets of the whole table, where small
 * pages cost a TLB miss on nearly every bucket (split_lock held). */
static void prepare_reserve(uint64_t items)
{
    uint64_t want = items * 4 / HD_LOAD_X4 + 1;
    if (want > reserved_buckets) {
        want = reserved_buckets;
    }
    if (want <= writable_buckets || !table_extend(want)) {
        return;
    }
    char *from = (char *)table;
    size_t len = want * sizeof(hd_bucket);
    /* advice only: without it the splits fault small pages in as before */
    if (madvise(from, len, MADV_HUGEPAGE) == 0) {
        madvise(from, len, MADV_POPULATE_WRITE);
    }
}

bool assoc_reserve(uint64_t items)
{
    pthread_mutex_lock(&split_lock);
    prepare_reserve(items);
    bool ok = true;
    while (ok && capacity_of(shape_buckets(load_shape())) < items) {
        ok = split_next();
    }
    pthread_mutex_unlock(&split_lock);
    return ok;
}

void assoc_walk(assoc_visit_fn visit, void *arg)
{
    /* A stripe's buckets neither split nor trade entries with another
     * stripe's while its lock is held, so each entry is visited once. */
    uint64_t stripes = (uint64_t)1 << lock_bits;
    for (uint64_t st = 0; st < stripes; st++) {
        item_lock(st);
        uint64_t nbuckets = shape_buckets(load_shape());
        for (uint64_t idx = st; idx < nbuckets; idx += stripes) {
            for (hd_bucket *b = bucket_at(idx); b != NULL;
                    b = next_in_chain(b)) {
                for (int i = 0; i < HD_SLOTS; i++) {
                    if (b->sig[i] != 0) {
                        visit(&b->loc[i], arg);
                    }
                }
            }
        }
        item_unlock(st);
    }
}

static bool needs_growth(void)
{
    if (table == NULL) {
        return false;
    }
    uint64_t sh = load_shape();
    return ((uint64_t)2 << shape_level(sh)) <= reserved_buckets
        && atomic_load_explicit(&item_count, memory_order_relaxed)
            > capacity_of(shape_buckets(sh));
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

/* Split until the load is back under its target or HD_SPLIT_BATCH splits
 * are made; false when a split failed (memory, size limit). */
static bool split_batch(void)
{
    bool ok = true;
    pthread_mutex_lock(&split_lock);
    atomic_store(&splitting, true);
    for (int n = 0; n < HD_SPLIT_BATCH && ok && needs_growth(); n++) {
        ok = split_next();
    }
    atomic_store(&splitting, false);
    pthread_mutex_unlock(&split_lock);
    if (!ok && settings.verbose > 1) {
        fprintf(stderr, "Hash table growth stopped: no memory\n");
    }
    return ok;
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
        bool ok = split_batch();
        pthread_mutex_lock(&expand_lock);
        /* A failed split (no memory) is retried on a later insert; a
         * batch that left the table over its load goes on. */
        atomic_store(&expand_wanted, ok && needs_growth());
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
    memset(out, 0, sizeof(*out));
    if (table == NULL) {
        return;
    }
    uint64_t sh = load_shape();
    out->hash_power_level = atomic_load_explicit(&mc_power,
                                                 memory_order_relaxed);
    out->index_level = shape_level(sh);
    out->buckets = shape_buckets(sh);
    out->hash_bytes = out->buckets * sizeof(hd_bucket);
    out->expanding = atomic_load(&splitting);
    out->items = atomic_load_explicit(&item_count, memory_order_relaxed);
    out->expansions = atomic_load(&rounds);
    out->cuckoo_moves = atomic_load_explicit(&cuckoo_moves,
                                             memory_order_relaxed);
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
