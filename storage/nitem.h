/*
 * nitem.h: an item in the N-zone: its layout in a chunk, and the reads and
 * writes of it, all through nvm.h's counted accessors (doc/tiering.md "N
 * items in NVM" and "Reading an N item").  The index (hash_desc.c) does
 * not know this layout: it confirms N keys and learns N items' hashes
 * through the callbacks items_n.c registers (assoc_set_nitem_ops).
 *
 * Locks: the nitem_* functions touch only the item at the offset they are
 * given; the caller holds its item lock (the trailers: the lock named
 * below).  nitem_lock_chunk takes that item lock itself.
 */
#ifndef NITEM_H
#define NITEM_H

#include "clock.h"
#include "hash_desc.h"
#include "item.h"
#include "slabs_tier.h"

#include <string.h>

/* ---- an item in the N-zone ----
 * header, key, NUL, value ("\r\n" included), 8-byte aligned.  Only what a
 * store or a migration writes lives here: the hot metadata (access
 * counter, CLOCK bit, fetched/token flags, decay epoch, last access) is in
 * the item's location word in the index (hash_desc.h).  The fields a
 * CLOCK sweep needs come first so that it reads as little as it can.
 *
 * The seal makes the item recoverable (doc/restart.md "Items and their
 * seal"): nitem_write stores it after everything else, and an item whose
 * chunk is freed or rewritten loses it first (nitem_unseal), so a restart
 * takes a chunk for an item only when it holds the whole of a version
 * that was linked.  The seal is also the item's checksum: the CRC-32C,
 * seeded with the layout's seal (nzone_seal()), of the fields no update
 * rewrites in place (hv, nbytes, nkey, clsid, client_flags, the
 * ITEM_KEY_BINARY flag) and of the key, NUL and value (nitem_checksum);
 * 1 where that CRC is 0, since 0 means unsealed.  time, exptime, cas, the
 * stale flag and lru change in place after the store (nitem_write_*) and
 * are not covered: each is one word that must stay one durable write.
 * Times are relative to the zone's clock epoch, which the superblock
 * keeps (nzone.h). */
typedef struct {
    uint64_t hv;                  /* hash_key(key): index growth, CLOCK */
    rel_time_t time;              /* when stored or demoted; last access =
                                   * time + the location word's delta */
    rel_time_t exptime;           /* 0 = never */
    uint32_t nbytes;              /* value length including "\r\n" */
    uint8_t nkey;
    uint8_t clsid;
    uint8_t flags;                /* persistent it_flags: ITEM_KEY_BINARY,
                                   * ITEM_STALE */
    uint8_t lru;                  /* tier_policy=duallru: Fogcached's Active
                                   * and Promote flags (items_duallru.h);
                                   * 0 otherwise */
    uint64_t cas;
    client_flags_t client_flags;
    uint32_t seal;                /* nitem_checksum() once whole, else 0 */
} nitem_hdr;

/* it_flags an N item keeps in its header */
#define NITEM_PERSISTENT_FLAGS (ITEM_KEY_BINARY | ITEM_STALE)
_Static_assert(NITEM_PERSISTENT_FLAGS <= 0xff, "they fit the flags byte");

_Static_assert(sizeof(nitem_hdr) <= sizeof(item),
               "an N item fits the chunk of its D-sized class");
_Static_assert(sizeof(nitem_hdr) % 8 == 0, "N items stay 8-byte aligned");
_Static_assert(sizeof(nitem_hdr) == 40,
               "the header has no padding: the checksum covers its bytes");

/* The last NITEM_TRAILER_BYTES of every N chunk are never part of its
 * item: the N item's header is that much smaller than the D item's and
 * the class was chosen for the D size.  tier_policy=duallru keeps the
 * item's LRU links there (items_duallru.c), in NVM as Fogcached keeps
 * memcached's item header; lookups never read them. */
#define NITEM_TRAILER_BYTES 16
_Static_assert(sizeof(item) - sizeof(nitem_hdr) >= NITEM_TRAILER_BYTES,
               "an N item leaves its chunk's trailer free");
typedef struct {
    uint64_t prev;                /* items_duallru.c's encoding */
    uint64_t next;
} nitem_trailer;
_Static_assert(sizeof(nitem_trailer) == NITEM_TRAILER_BYTES,
               "the trailer is two words");

/* Bytes of the header a CLOCK sweep reads: hv .. flags (cas as well while
 * a flush_all with cas is in force). */
#define NITEM_SWEEP_BYTES 24
#define NITEM_SWEEP_BYTES_CAS 32

static inline size_t nitem_ntotal(size_t nkey, size_t nbytes)
{
    return sizeof(nitem_hdr) + nkey + 1 + nbytes;
}

/* What a lookup reads of an N candidate: the item from its first byte up
 * to the first line boundary after header+key+NUL (or the chunk's end),
 * so the key can be confirmed and the rest of the item read from that
 * boundary on without touching any line twice. */
#define NITEM_PROBE_MAX 384
struct nitem_probe {
    uint64_t off;                 /* the item's offset in the N-zone */
    unsigned int clsid;           /* the class owning its chunk */
    uint32_t len;                 /* bytes of the item in buf */
    union {
        nitem_hdr hdr;
        char buf[NITEM_PROBE_MAX];
    } u;
};

/* Read the probe of the item at off for a key of nkey bytes (counted). */
void nitem_probe(uint64_t off, size_t nkey, struct nitem_probe *p);
/* The probe of the item at off for its own key (dumps, which have no key
 * to look for): the header's line(s), then the rest of the key's lines,
 * each line read once. */
void nitem_probe_stored(uint64_t off, struct nitem_probe *p);
/* The same for a caller that knows the chunk: its class id and its end
 * (a scan that walks pages chunk by chunk). */
void nitem_probe_chunk(uint64_t off, unsigned int id, uint64_t chunk_end,
                       struct nitem_probe *p);
/* True when the probed item holds key. */
static inline bool nitem_probe_matches(const struct nitem_probe *p,
                                       const char *key, size_t nkey)
{
    return p->u.hdr.nkey == nkey
        && memcmp(p->u.buf + sizeof(nitem_hdr), key, nkey) == 0;
}
/* Copy the probed item's key, NUL and value to body (nkey + 1 + nbytes
 * bytes): what the probe holds, then the rest from NVM (counted). */
void nitem_read_body(const struct nitem_probe *p, char *body);
/* The seal an item with header h and body (key, NUL, value: nkey + 1 +
 * nbytes bytes) carries in a layout whose seal is `seed`: the checksum
 * described above, never 0. */
uint32_t nitem_checksum(uint32_t seed, const nitem_hdr *h, const char *body);
/* Whether the seal of the probed item p equals its checksum under seed:
 * reads the rest of the item (counted), in blocks, without keeping it.
 * The caller has checked that the header's sizes fit p's chunk. */
bool nitem_stored_checksum_ok(const struct nitem_probe *p, uint32_t seed);
/* Write a whole item (header + body) with as many line writes as it
 * spans, then its seal (one more write to the header's line).  The chunk
 * must be unsealed: fresh from the allocator, or unsealed when its last
 * item left it. */
void nitem_write(uint64_t off, const nitem_hdr *h, const char *body,
                 size_t bodylen);
/* The item at off leaves its chunk (unlinked, promoted, or about to be
 * overwritten): clear its seal, durably, before the chunk is reused or
 * the change is acknowledged. */
void nitem_unseal(uint64_t off);
/* Read the first n bytes of the header at off (CLOCK, index growth). */
void nitem_read_header(uint64_t off, nitem_hdr *h, size_t n);
/* The same before the item lock is held, while the chunk may be being
 * written (nvm_peek_cls): only a hint, to be re-read under the lock. */
void nitem_peek_header(uint64_t off, nitem_hdr *h, size_t n);
/* Rewrite one header field (touch/gat exptime, meta delete's cas,
 * meta invalidation's stale flag, the time of a copy demoted again),
 * durably: each is one aligned word, which a crash leaves old or new,
 * never torn. */
void nitem_write_time(uint64_t off, rel_time_t time);
void nitem_write_exptime(uint64_t off, rel_time_t exptime);
void nitem_write_cas(uint64_t off, uint64_t cas);
void nitem_write_lru(uint64_t off, uint8_t lru);
void nitem_write_flags(uint64_t off, uint8_t flags);
/* The trailer of the chunk holding the item at off (counted).  The caller
 * holds the lock that guards the trailers (items_duallru.c's class lock);
 * _next and _prev rewrite one word. */
void nitem_trailer_read(uint64_t off, nitem_trailer *t);
void nitem_trailer_write(uint64_t off, const nitem_trailer *t);
void nitem_trailer_write_prev(uint64_t off, uint64_t prev);
void nitem_trailer_write_next(uint64_t off, uint64_t next);
/* 64-byte lines the item of ntotal N bytes at off spans. */
uint64_t nitem_lines(uint64_t off, size_t ntotal);

/* The item lock of whatever item the N chunk at off holds, found from the
 * chunk alone (the CLOCK hand, the crawler, dumps): reads the first `need`
 * bytes (at least the hash) of its header into *h without a lock
 * (nitem_peek_header, counted), takes item_lock(h->hv) (a trylock unless
 * `wait`) and looks for the slot whose word points at off.  Returns that
 * word with the lock held, or NULL with no lock held: *busy says whether
 * the stripe was busy; otherwise no slot points at off (the chunk is
 * free, being written, or holds another item by now).  The header was
 * read unlocked: what the caller acts on it must read again under the
 * lock.  Must be called without item locks when `wait`. */
uint64_t *nitem_lock_chunk(uint64_t off, nitem_hdr *h, size_t need,
                           bool wait, bool *busy);

/* The callbacks the index confirms N keys with (assoc_set_nitem_ops). */
extern const struct assoc_nitem_ops nitem_index_ops;

#endif
