/*
 * hash_desc.h: the index (hash_desc.c).
 *
 * Keys map to items through 64-byte buckets of descriptors.  A descriptor
 * is a 32-bit key signature (the high half of hash_key()) and a 64-bit
 * location word; the low bits of the hash choose the bucket.  A lookup
 * compares the signatures of one cache line and touches an item only to
 * confirm the key of a matching signature.  Full buckets chain to overflow
 * buckets taken from a shared pool.
 *
 * Locking: every call that takes an hv must be made with item_lock(hv)
 * held.  Because thread.c's lock stripe is hv & (nlocks - 1) and nlocks is
 * at most the initial bucket count, one stripe covers every key of a
 * bucket at any table size; that is what lets the expansion thread move a
 * bucket while holding just its stripe.
 */
#ifndef HASH_DESC_H
#define HASH_DESC_H

#include "memcached.h"

#define HD_SLOTS 5               /* descriptors per 64-byte bucket */
#define HD_HASHPOWER_DEFAULT 16
#define HD_HASHPOWER_MAX 32      /* bucket bits must stay below the signature */
/* Grow when the average bucket holds more than this many items (of
 * HD_SLOTS): keeps overflow chains rare while the lines stay well used. */
#define HD_GROW_LOAD 4

/* One bucket: signatures first, so a probe reads them without touching the
 * location words; then the overflow link; then the locations.  An empty
 * slot has signature 0 (real signatures are never 0).
 *
 * loc is a location word, not a typed pointer: today it holds the item's
 * address; with the N-zone it will hold a zone tag in the top bits and an
 * offset (or a descriptor id for N items, whose hot metadata lives in a
 * stable descriptor table, since bucket slots move during expansion). */
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

/* Location word <-> item.  The only two places that know a location is a
 * pointer today. */
static inline uint64_t hd_loc_from_item(const item *it)
{
    return (uint64_t)(uintptr_t)it;
}

static inline item *hd_loc_to_item(uint64_t loc)
{
    return (item *)(uintptr_t)loc;
}

/* hashpower_init 0 means HD_HASHPOWER_DEFAULT. */
void assoc_init(int hashpower_init);
void assoc_destroy(void);

/* Lookup; NULL when absent.  Caller holds item_lock(hv). */
item *assoc_find(const char *key, size_t nkey, uint64_t hv);
/* Add an item whose key is not in the index; 1 = ok, 0 = out of memory
 * (no overflow bucket could be had).  Caller holds item_lock(hv). */
int assoc_insert(item *it, uint64_t hv);
/* Remove the key.  Caller holds item_lock(hv). */
void assoc_delete(const char *key, size_t nkey, uint64_t hv);
/* Point old_it's descriptor at new_it (same key); false if old_it is not
 * indexed.  Caller holds item_lock(hv). */
bool assoc_replace(item *old_it, item *new_it, uint64_t hv);

/* Growth.  The thread sleeps until an insert pushes the load past
 * HD_GROW_LOAD, then migrates buckets one stripe at a time while workers
 * keep serving.  Without the thread (no_hashexpand) chains just grow. */
int assoc_start_expand_thread(void);   /* 0 = ok */
void assoc_stop_expand_thread(void);
/* Wake the thread if the load calls for growth (cheap; any thread). */
void assoc_expand_if_needed(void);
/* Double the table now, in the calling thread, taking each stripe in turn
 * (tests; also what the thread runs).  Must be called without item locks.
 * Returns false if the table is at its limit or memory is short. */
bool assoc_expand_now(void);

/* Stats. */
struct assoc_stats {
    unsigned int hash_power_level;
    uint64_t hash_bytes;         /* main table(s) */
    uint64_t overflow_bytes;     /* overflow buckets in use */
    uint64_t overflow_reserved;  /* overflow pool memory allocated */
    uint64_t items;
    bool expanding;
    uint64_t expansions;
    uint64_t sig_false_positives; /* signature matched, key did not */
};
void assoc_get_stats(struct assoc_stats *out);
/* DRAM bytes of the whole index (tables + overflow pool). */
uint64_t assoc_index_bytes(void);

#endif
