/*
 * hash_desc.h: the index (hash_desc.c).
 *
 * Keys map to items through 64-byte buckets of descriptors.  A descriptor
 * is a 32-bit key signature (the high half of hash_key()) and a 64-bit
 * location word.  A key may sit in either of two buckets, both chosen
 * from its signature and the hash's low lock bits (hash_desc.c); a lookup
 * compares the signatures of those two cache lines and touches an item
 * only to confirm the key of a matching signature.  Full buckets make
 * room by cuckoo moves, and chain overflow buckets from a shared pool
 * only when that fails.  The table grows a bucket at a time.
 *
 * Locking: every call that takes an hv must be made with item_lock(hv)
 * held.  Both buckets of a key, and every bucket a cuckoo move or a split
 * reaches from them, share the key's lock stripe (item_lock.h), which is
 * what lets one lock guard an insert that moves other entries and lets the
 * growth thread split a bucket while holding just its stripe.  An insert
 * may move other entries of its stripe to their other bucket: a location
 * pointer from a find is valid until the caller inserts or unlocks.
 */
#ifndef HASH_DESC_H
#define HASH_DESC_H

#include "clock.h"
#include "item.h"

#define HD_SLOTS 5               /* descriptors per 64-byte bucket */
#define HD_HASHPOWER_DEFAULT 12  /* the table grows a bucket at a time */
#define HD_HASHPOWER_MAX 32      /* bucket bits must stay below the signature */
/* memcached's hash table, whose power `stats` reports (hash_desc.c):
 * 2^16 buckets unless -o hashpower says otherwise, growing to 2^32. */
#define MC_HASHPOWER_DEFAULT 16
#define MC_HASHPOWER_MAX 32
/* The table grows while it holds more than HD_LOAD_X4 / 4 entries per
 * bucket (of HD_SLOTS): 85% of the slots, 15.1 bytes per entry. */
#define HD_LOAD_X4 17

/* One bucket: signatures first, so a probe reads them without touching the
 * location words; then the overflow link; then the locations.  An empty
 * slot has signature 0 (real signatures are never 0).
 *
 * loc is a location word, not a typed pointer (the hd_loc_* and hd_n_*
 * helpers below are the only code that knows its encoding):
 *   - bit 63 clear: a D item, the word is its DRAM address;
 *   - bit 63 set:   an N item, the word holds its offset in the N-zone and
 *     the item's hot metadata, so that nothing a GET changes lives in NVM:
 *
 *     63  62........50  49..47  46     45     44       43   42....35  34....0
 *     N   atime delta   epoch   stale  token  fetched  ref  counter   off/8
 *
 *     counter: access counter, saturating at HD_N_COUNTER_MAX;
 *     ref: the CLOCK reference bit; fetched/token/stale: ITEM_FETCHED,
 *     ITEM_TOKEN_SENT, ITEM_STALE; epoch: low 3 bits of the decay epoch of
 *     the last access; atime delta: last access minus the time stored in
 *     the item's NVM header, in seconds, saturating at HD_N_ATIME_MAX.
 * A slot's word is guarded by the item lock of its bucket; growth moves
 * words under that lock, so a pointer to a word (assoc_find_loc) is valid
 * while the lock is held. */
typedef struct {
    uint32_t sig[HD_SLOTS];
    uint32_t overflow;           /* overflow pool index + 1; 0 = none */
    uint64_t loc[HD_SLOTS];
} __attribute__((aligned(64))) hd_bucket;

_Static_assert(sizeof(hd_bucket) == 64, "a bucket is one cache line");

/* Signature of a hash: never 0, so 0 can mark an empty slot. */
static inline uint32_t hd_signature(uint64_t hv)
{
    uint32_t sig = (uint32_t)(hv >> 32);
    return sig != 0 ? sig : 1;
}

/* ---- D locations ---- */
static inline uint64_t hd_loc_from_item(const item *it)
{
    return (uint64_t)(uintptr_t)it;
}

static inline item *hd_loc_to_item(uint64_t loc)
{
    return (item *)(uintptr_t)loc;
}

/* ---- N locations ---- */
#define HD_N_BIT            ((uint64_t)1 << 63)
#define HD_N_OFF_BITS       35
#define HD_N_OFF_LIMIT      ((uint64_t)8 << HD_N_OFF_BITS)  /* 256 GiB */
#define HD_N_COUNTER_SHIFT  35
#define HD_N_COUNTER_MAX    255u
#define HD_N_REF            ((uint64_t)1 << 43)
#define HD_N_FETCHED        ((uint64_t)1 << 44)
#define HD_N_TOKEN          ((uint64_t)1 << 45)
#define HD_N_STALE          ((uint64_t)1 << 46)
#define HD_N_EPOCH_SHIFT    47
#define HD_N_EPOCH_MASK     7u
#define HD_N_ATIME_SHIFT    50
#define HD_N_ATIME_MAX      8191u

static inline bool hd_loc_is_n(uint64_t loc)
{
    return (loc & HD_N_BIT) != 0;
}

/* A fresh N word: offset (8-byte aligned, below HD_N_OFF_LIMIT), counter
 * (clamped), it_flags (only ITEM_FETCHED, ITEM_TOKEN_SENT and ITEM_STALE
 * are kept), epoch, delta. */
static inline uint64_t hd_n_make(uint64_t off, uint32_t counter,
                                 uint16_t it_flags, uint32_t epoch,
                                 uint32_t atime_delta)
{
    if (counter > HD_N_COUNTER_MAX) {
        counter = HD_N_COUNTER_MAX;
    }
    if (atime_delta > HD_N_ATIME_MAX) {
        atime_delta = HD_N_ATIME_MAX;
    }
    return HD_N_BIT | (off >> 3)
        | ((uint64_t)counter << HD_N_COUNTER_SHIFT)
        | ((it_flags & ITEM_FETCHED) ? HD_N_FETCHED : 0)
        | ((it_flags & ITEM_TOKEN_SENT) ? HD_N_TOKEN : 0)
        | ((it_flags & ITEM_STALE) ? HD_N_STALE : 0)
        | ((uint64_t)(epoch & HD_N_EPOCH_MASK) << HD_N_EPOCH_SHIFT)
        | ((uint64_t)atime_delta << HD_N_ATIME_SHIFT);
}

static inline uint64_t hd_n_offset(uint64_t loc)
{
    return (loc & (((uint64_t)1 << HD_N_OFF_BITS) - 1)) << 3;
}

static inline uint32_t hd_n_counter(uint64_t loc)
{
    return (uint32_t)(loc >> HD_N_COUNTER_SHIFT) & HD_N_COUNTER_MAX;
}

static inline uint64_t hd_n_set_counter(uint64_t loc, uint32_t counter)
{
    if (counter > HD_N_COUNTER_MAX) {
        counter = HD_N_COUNTER_MAX;
    }
    return (loc & ~((uint64_t)HD_N_COUNTER_MAX << HD_N_COUNTER_SHIFT))
        | ((uint64_t)counter << HD_N_COUNTER_SHIFT);
}

static inline bool hd_n_ref(uint64_t loc)
{
    return (loc & HD_N_REF) != 0;
}

static inline uint64_t hd_n_set_ref(uint64_t loc, bool ref)
{
    return ref ? loc | HD_N_REF : loc & ~HD_N_REF;
}

/* The word's flags as it_flags bits. */
static inline uint16_t hd_n_flags(uint64_t loc)
{
    return (uint16_t)(((loc & HD_N_FETCHED) ? ITEM_FETCHED : 0)
                      | ((loc & HD_N_TOKEN) ? ITEM_TOKEN_SENT : 0)
                      | ((loc & HD_N_STALE) ? ITEM_STALE : 0));
}

static inline uint64_t hd_n_set_flags(uint64_t loc, uint16_t it_flags)
{
    loc &= ~(HD_N_FETCHED | HD_N_TOKEN | HD_N_STALE);
    return loc | ((it_flags & ITEM_FETCHED) ? HD_N_FETCHED : 0)
        | ((it_flags & ITEM_TOKEN_SENT) ? HD_N_TOKEN : 0)
        | ((it_flags & ITEM_STALE) ? HD_N_STALE : 0);
}

static inline uint32_t hd_n_epoch(uint64_t loc)
{
    return (uint32_t)(loc >> HD_N_EPOCH_SHIFT) & HD_N_EPOCH_MASK;
}

static inline uint64_t hd_n_set_epoch(uint64_t loc, uint32_t epoch)
{
    return (loc & ~((uint64_t)HD_N_EPOCH_MASK << HD_N_EPOCH_SHIFT))
        | ((uint64_t)(epoch & HD_N_EPOCH_MASK) << HD_N_EPOCH_SHIFT);
}

static inline uint32_t hd_n_atime(uint64_t loc)
{
    return (uint32_t)(loc >> HD_N_ATIME_SHIFT) & HD_N_ATIME_MAX;
}

/* Record an access at `now` for an item whose header time is `base`. */
static inline uint64_t hd_n_set_atime(uint64_t loc, rel_time_t base,
                                      rel_time_t now)
{
    uint32_t delta = now > base ? now - base : 0;
    if (delta > HD_N_ATIME_MAX) {
        delta = HD_N_ATIME_MAX;
    }
    return (loc & ~((uint64_t)HD_N_ATIME_MAX << HD_N_ATIME_SHIFT))
        | ((uint64_t)delta << HD_N_ATIME_SHIFT);
}

/* Start with 2^hashpower_init buckets (0: HD_HASHPOWER_DEFAULT); address
 * space is reserved for max_entries, the most items the zones can hold
 * (growth stops there, or at 2^HD_HASHPOWER_MAX buckets).  The power
 * reported as memcached's starts at hashpower_init (0:
 * MC_HASHPOWER_DEFAULT). */
void assoc_init(int hashpower_init, uint64_t max_entries);
/* A warm restart's saved hash_power_level becomes the reported power, as
 * memcached restores its table's (clamped to MC_HASHPOWER_MAX, raised for
 * the items already linked).  Before the workers start. */
void assoc_restore_reported_power(unsigned int power);
void assoc_destroy(void);

/* Lookup of a D item; NULL when the key is absent or lives in the N-zone
 * (N candidates are skipped unread).  Caller holds item_lock(hv). */
item *assoc_find(const char *key, size_t nkey, uint64_t hv);
/* An N item's probe: what a lookup read of an N candidate to confirm its
 * key, kept for the caller to read the rest without reading a line twice.
 * Its layout is the N-zone module's (nitem.h). */
struct nitem_probe;

/* How the index learns about N items, given by the N-zone module before
 * the first lookup (nitem.c's nitem_index_ops).  has_key: does the N item
 * at off hold key (filling *probe unless probe is NULL). */
struct assoc_nitem_ops {
    bool (*has_key)(uint64_t off, const char *key, size_t nkey,
                    struct nitem_probe *probe);
};
void assoc_set_nitem_ops(const struct assoc_nitem_ops *ops);

/* Lookup in both zones: the key's location word, or NULL.  An N candidate
 * whose signature matches is confirmed by reading its probe (header, key,
 * up to a line boundary) into *probe, which the caller may then use to
 * read the rest of the item without reading a line twice; probe may be
 * NULL.  The pointer is valid while the caller holds item_lock(hv). */
uint64_t *assoc_find_loc(const char *key, size_t nkey, uint64_t hv,
                         struct nitem_probe *probe);
/* The location word of the N item at offset off, found without reading
 * NVM (CLOCK, writes through snapshots); NULL if no slot points there. */
uint64_t *assoc_find_noff(uint64_t hv, uint64_t off);
/* The location word pointing at the D item it (no key compare). */
uint64_t *assoc_find_item(const item *it, uint64_t hv);
/* A D item among those whose signature is hv's that match accepts (no
 * key compare), or NULL. */
item *assoc_find_d_where(uint64_t hv,
                         bool (*match)(const item *it, const void *arg),
                         const void *arg);
/* Add an item whose key is not in the index; 1 = ok, 0 = out of memory
 * (no overflow bucket could be had).  Caller holds item_lock(hv). */
int assoc_insert(item *it, uint64_t hv);
/* The same for any location word (an N item). */
int assoc_insert_loc(uint64_t loc, uint64_t hv);
/* The same for a caller that links many entries in a row into a table
 * sized for them (a warm restart): each takes the emptier of its two
 * buckets, where the others fill the first choice first (whose bucket a
 * lookup reads first), so that fewer keys find both full and need a
 * cuckoo move as the table fills. */
int assoc_insert_loc_spread(uint64_t loc, uint64_t hv);
/* Remove the slot whose location word is *locp (from assoc_find_loc,
 * _noff or _item).  Caller holds item_lock(hv). */
void assoc_delete_loc(uint64_t *locp, uint64_t hv);
/* Start loading the cache lines of hv's buckets (a hint: no lock needed);
 * a caller with many keys to insert at once (a warm restart) hides the
 * misses of one behind the work on others. */
void assoc_prefetch(uint64_t hv);
/* When both of hv's buckets are full (their lines asked for earlier with
 * assoc_prefetch), start loading the buckets their entries could move
 * to, which an insert of hv will look at.  A hint read without the item
 * lock: only the single thread that inserts may call it (a warm
 * restart's linking). */
void assoc_prefetch_room(uint64_t hv);

/* Visit every location word, stripe by stripe under its item lock (the
 * visitor may rewrite the word, not remove the slot).  Must be called
 * without item locks (the decay walker of the tier thread). */
typedef void (*assoc_visit_fn)(uint64_t *locp, void *arg);
void assoc_walk(assoc_visit_fn visit, void *arg);

/* Growth.  The thread sleeps until an insert pushes the load past
 * HD_LOAD_X4 / 4 per bucket, then splits buckets one at a time, each
 * under its stripe, while workers keep serving.  Without the thread
 * (no_hashexpand) chains just grow. */
int assoc_start_expand_thread(void);   /* 0 = ok */
void assoc_stop_expand_thread(void);
/* Wake the thread if the load calls for growth (cheap; any thread). */
void assoc_expand_if_needed(void);
/* Split buckets in the calling thread until the table has doubled since
 * the last power of two (tests).  Must be called without item locks.
 * False if the table is at its limit or memory is short. */
bool assoc_expand_now(void);
/* Split buckets until the table holds `items` at its target load (a warm
 * restart, before its scan links them).  Without item locks. */
bool assoc_reserve(uint64_t items);

/* Stats. */
struct assoc_stats {
    unsigned int hash_power_level; /* memcached's table power for as many
                                      items (hash_desc.c) */
    unsigned int index_level;    /* log2 of the buckets, rounded down */
    uint64_t buckets;
    uint64_t hash_bytes;         /* the buckets made */
    uint64_t overflow_bytes;     /* overflow buckets in use */
    uint64_t overflow_reserved;  /* overflow pool memory allocated */
    uint64_t items;
    bool expanding;
    uint64_t expansions;         /* doublings completed */
    uint64_t cuckoo_moves;       /* entries moved to their other bucket */
    uint64_t sig_false_positives; /* signature matched, key did not */
};
void assoc_get_stats(struct assoc_stats *out);
/* DRAM bytes of the whole index (tables + overflow pool). */
uint64_t assoc_index_bytes(void);

#endif
