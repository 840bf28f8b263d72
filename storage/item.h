/*
 * item.h: the header every stored item starts with, its flags, the
 * key/value limits (memcached 1.6.18's values) and the outcomes of stores
 * and lookups.  The item API is items.h.
 *
 * it_flags and the links are guarded by the item lock of the item's hash
 * (item_lock.h); refcount is atomic.
 */
#ifndef ITEM_H
#define ITEM_H

#include "clock.h"
#include "settings.h"

#include <stdatomic.h>
#include <stdint.h>

#define KEY_MAX_LENGTH 250
#define KEY_MAX_UGLY_LENGTH (KEY_MAX_LENGTH * 8 / 6 + 4) /* base64 keys */
#define INCR_MAX_STORAGE_LEN 24
#define ITEM_UPDATE_INTERVAL 60 /* seconds between LRU bumps of one item */

typedef uint32_t client_flags_t;

/* what a store does with the new value (store_item, complete_nread) */
enum store_cmd {
    NREAD_ADD = 1,
    NREAD_SET,
    NREAD_REPLACE,
    NREAD_APPEND,
    NREAD_PREPEND,
    NREAD_CAS
};

/* what a store came to (store_item, items.h; watch mutations, logger.c) */
enum store_item_type {
    NOT_STORED = 0,
    STORED,
    EXISTS,
    NOT_FOUND,
    TOO_LARGE,
    NO_MEMORY
};

/* what a lookup found (item_get and its forms, items.h, say when; watch
 * fetchers, logger.c) */
enum item_lookup {
    LOOKUP_MISS = 0,
    LOOKUP_HIT,
    LOOKUP_NO_MEMORY
};

/* One header layout for every stored item.  The key follows the header
 * (nkey bytes then a NUL), the value follows the key (nbytes bytes, the last
 * two of which are "\r\n").  The header is zone-agnostic: when the N-zone
 * lands, the hot fields (refcount, counter, time, mq links) of an N item are
 * mirrored in its DRAM descriptor and never written to NVM. */
#define ITEM_LINKED     (1 << 0)  /* reachable from the index */
#define ITEM_SLABBED    (1 << 1)  /* on a slab free list */
#define ITEM_FETCHED    (1 << 2)  /* read at least once since stored */
#define ITEM_ACTIVE     (1 << 3)  /* hit again since last bump */
#define ITEM_TOKEN_SENT (1 << 4)  /* meta: a client was given the win token */
#define ITEM_STALE      (1 << 5)  /* meta: invalidated, served with X flag */
#define ITEM_QUEUED     (1 << 6)  /* on an MQ queue */
#define ITEM_KEY_BINARY (1 << 7)  /* meta: stored with a base64 (b) key */
#define ITEM_HEAP       (1 << 8)  /* malloc'd, in no slab: a DRAM snapshot of
                                   * an N item, or the staging buffer of a
                                   * value bound for the N-zone (items.c) */
#define ITEM_REF        (1 << 9)  /* accessed since the MQ's aging hand last
                                   * passed it (items_mq.c) */
#define ITEM_COLD       (1 << 10) /* in queue 0's COLD part (items_mq.c);
                                   * changed under the MQ class lock too */
#define ITEM_ZONE_GUESSED (1 << 11) /* a staging buffer not stored yet,
                                     * placed in N before its key was
                                     * looked up: the store settles the
                                     * zone (items.c) */
#define ITEM_SEALED     (1 << 12) /* -e: a whole D version that a restart
                                   * after a crash recovers; set once the
                                   * version is written, cleared before
                                   * it stops being the key's (doc/
                                   * restart.md "Crash recovery of the
                                   * memory file") */

typedef struct _stritem {
    struct _stritem *next;        /* MQ queue / slab free list */
    struct _stritem *prev;
    uint64_t cas;
    rel_time_t time;              /* last access */
    rel_time_t exptime;           /* 0 = never */
    uint32_t nbytes;              /* value length including "\r\n" */
    client_flags_t client_flags;
    _Atomic uint16_t refcount;    /* the index holds one while linked */
    uint16_t it_flags;            /* ITEM_*; guarded by the item lock */
    uint16_t counter;             /* access counter (hotness, MQ level) */
    uint8_t slabs_clsid;
    uint8_t nkey;
    uint8_t mq_level;             /* queue index, valid while ITEM_QUEUED */
    uint8_t epoch;                /* decay epoch of the last access (low 3
                                   * bits of migrate_epoch()); tiers only */
    /* tier_policy=hmhc (doc/tiering.md "HM-HC"): accesses since the item
     * entered the D-zone, and when it did.  A policy that keeps N copies
     * (tier_policy.h keeps_n_copy) holds the copy's offset in these same
     * six bytes instead (item_n_copy below); no policy does both.  They
     * fill what was padding: the header keeps its 56 bytes. */
    uint16_t d_hits;
    rel_time_t d_since;
    char data[];
} item;

_Static_assert(sizeof(item) == 56, "the item header keeps its size");

/* The N-zone offset of a D item's copy (items_ncopy.c), or 0 for none
 * (offset 0 is the zone's superblock, never a chunk).  Offsets are 8-byte
 * aligned and below 2^38 (hash_desc.h HD_N_OFF_LIMIT): off / 8 fits the
 * 48 bits.  Guarded by the item's item lock. */
static inline uint64_t item_n_copy(const item *it)
{
    return (((uint64_t)it->d_hits << 32) | it->d_since) << 3;
}

static inline void item_set_n_copy(item *it, uint64_t off)
{
    it->d_hits = (uint16_t)(off >> 35);
    it->d_since = (rel_time_t)(off >> 3);
}

#define ITEM_key(it)   ((it)->data)
#define ITEM_data(it)  ((it)->data + (it)->nkey + 1)
#define ITEM_ntotal(it) (sizeof(item) + (it)->nkey + 1 + (it)->nbytes)
/* it->cas is also the version's identity inside the engine (items.c finds a
 * version again by it after dropping the item lock), so it is set even
 * under -C; clients then see 0, as memcached shows them. */
#define ITEM_get_cas(it) (settings.use_cas ? (it)->cas : 0)

#endif
