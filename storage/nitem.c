/*
 * nitem.c: reading and writing items in N chunks (nitem.h): the probe a
 * lookup reads, the rest of an item, a whole item, single header fields,
 * the chunk trailer, sealing and unsealing an item and the checksum its
 * seal is (doc/restart.md "Items and their seal"), and locking the item a
 * chunk holds.
 *
 * Locks: none of its own.  Every function but nitem_lock_chunk expects
 * the item lock of the item at the offset held (a trailer: the lock that
 * guards it, items_duallru.c's class lock); the page table is read
 * without a lock, as slabs_tier.c allows.
 */
#include "config.h"
#include "nitem.h"

#include "crc32c.h"
#include "hash_desc.h"
#include "item_lock.h"
#include "nvm.h"
#include "nzone.h"

#include <stddef.h>

static uint64_t round_line(uint64_t off)
{
    return (off + NVM_LINE_SIZE - 1) & ~(uint64_t)(NVM_LINE_SIZE - 1);
}

/* The probe of the item at off in a chunk of class id whose bytes an
 * item may use end at limit (never the trailer, which another lock
 * guards: slabs_tier.h). */
static void probe_in(uint64_t off, size_t nkey, unsigned int id,
                     uint64_t limit, struct nitem_probe *p)
{
    uint64_t end = round_line(off + sizeof(nitem_hdr) + nkey + 1);
    if (end > limit) {
        end = limit;
    }
    p->off = off;
    p->clsid = id;
    p->len = (uint32_t)(end - off);
    nvm_read_cls(id, p->u.buf, slabs_tier_ptr(off), p->len);
}

void nitem_probe(uint64_t off, size_t nkey, struct nitem_probe *p)
{
    unsigned int id = slabs_tier_clsid(off);
    probe_in(off, nkey, id,
             slabs_tier_chunk_end(off, id) - NITEM_TRAILER_BYTES, p);
}

void nitem_probe_chunk(uint64_t off, unsigned int id, uint64_t chunk_end,
                       struct nitem_probe *p)
{
    uint64_t limit = chunk_end - NITEM_TRAILER_BYTES;
    probe_in(off, 0, id, limit, p);
    uint64_t end = round_line(off + sizeof(nitem_hdr) + p->u.hdr.nkey + 1);
    if (end > limit) {
        end = limit;
    }
    if (end > off + p->len) {
        nvm_read_cls(id, p->u.buf + p->len, slabs_tier_ptr(off + p->len),
                     (size_t)(end - off - p->len));
        p->len = (uint32_t)(end - off);
    }
}

void nitem_probe_stored(uint64_t off, struct nitem_probe *p)
{
    unsigned int id = slabs_tier_clsid(off);
    nitem_probe_chunk(off, id, slabs_tier_chunk_end(off, id), p);
}

void nitem_read_body(const struct nitem_probe *p, char *body)
{
    size_t total = nitem_ntotal(p->u.hdr.nkey, p->u.hdr.nbytes);
    size_t have = p->len < total ? p->len : total;
    memcpy(body, p->u.buf + sizeof(nitem_hdr), have - sizeof(nitem_hdr));
    if (total > have) {
        nvm_read_cls(p->clsid, body + (have - sizeof(nitem_hdr)),
                     slabs_tier_ptr(p->off + have), total - have);
    }
}

/* ---- the seal: a checksum of what never changes in place ---- */

/* The header as the checksum sees it: the fields a store writes and
 * nothing rewrites; the others (and the seal itself) read as zero.  An
 * initializer, not a memset: it is on every store's path. */
static void sealed_fields(nitem_hdr *f, const nitem_hdr *h)
{
    *f = (nitem_hdr){
        .hv = h->hv,
        .nbytes = h->nbytes,
        .nkey = h->nkey,
        .clsid = h->clsid,
        .flags = (uint8_t)(h->flags & ITEM_KEY_BINARY),
        .client_flags = h->client_flags,
    };
}

static uint32_t seal_value(uint32_t crc)
{
    return crc != 0 ? crc : 1;          /* 0 is an unsealed chunk */
}

/* The checksum's first part: h's fields that the seal covers. */
static uint32_t header_crc(uint32_t seed, const nitem_hdr *h)
{
    nitem_hdr f;
    sealed_fields(&f, h);
    return crc32c(seed, &f, sizeof(f));
}

uint32_t nitem_checksum(uint32_t seed, const nitem_hdr *h, const char *body)
{
    uint32_t c = header_crc(seed, h);
    c = crc32c(c, body, (size_t)h->nkey + 1 + h->nbytes);
    return seal_value(c);
}

/* Bytes of an item read per block while its checksum is verified: what a
 * small stack buffer holds and the caches keep. */
#define VERIFY_BLOCK 4096

bool nitem_stored_checksum_ok(const struct nitem_probe *p, uint32_t seed)
{
    const nitem_hdr *h = &p->u.hdr;
    size_t total = nitem_ntotal(h->nkey, h->nbytes);
    size_t have = p->len < total ? p->len : total;
    uint32_t c = header_crc(seed, h);
    c = crc32c(c, p->u.buf + sizeof(nitem_hdr), have - sizeof(nitem_hdr));
    char block[VERIFY_BLOCK];
    for (size_t at = have; at < total; ) {
        size_t n = total - at < sizeof(block) ? total - at : sizeof(block);
        nvm_read_cls(p->clsid, block, slabs_tier_ptr(p->off + at), n);
        c = crc32c(c, block, n);
        at += n;
    }
    return seal_value(c) == h->seal;
}

/* One header field, durable before the caller goes on. */
static void write_field(unsigned int id, uint64_t field_off, const void *v,
                        size_t n)
{
    nvm_write_cls(id, slabs_tier_ptr(field_off), v, n);
    nvm_persist(slabs_tier_ptr(field_off), n);
}

void nitem_write(uint64_t off, const nitem_hdr *h, const char *body,
                 size_t bodylen)
{
    char head[sizeof(nitem_hdr) + NVM_LINE_SIZE];
    unsigned int id = h->clsid;
    size_t total = sizeof(nitem_hdr) + bodylen;
    size_t first = (size_t)(round_line(off + sizeof(nitem_hdr)) - off);
    if (first > total) {
        first = total;
    }
    /* The header and the body's bytes in the header's last line go out in
     * one write, the rest in another: each line is written once, and the
     * seal last, once all of it is durable. */
    memcpy(head, h, sizeof(nitem_hdr));
    ((nitem_hdr *)head)->seal = 0;
    memcpy(head + sizeof(nitem_hdr), body, first - sizeof(nitem_hdr));
    nvm_write_cls(id, slabs_tier_ptr(off), head, first);
    if (total > first) {
        nvm_write_cls(id, slabs_tier_ptr(off + first),
                      body + (first - sizeof(nitem_hdr)), total - first);
    }
    nvm_persist(slabs_tier_ptr(off), total);
    write_field(id, off + offsetof(nitem_hdr, seal), &(uint32_t){
                nitem_checksum(nzone_seal(), h, body) }, sizeof(uint32_t));
}

void nitem_unseal(uint64_t off)
{
    write_field(slabs_tier_clsid(off), off + offsetof(nitem_hdr, seal),
                &(uint32_t){ 0 }, sizeof(uint32_t));
}

void nitem_read_header(uint64_t off, nitem_hdr *h, size_t n)
{
    if (n > sizeof(*h)) {
        n = sizeof(*h);
    }
    nvm_read_cls(slabs_tier_clsid(off), h, slabs_tier_ptr(off), n);
}

void nitem_peek_header(uint64_t off, nitem_hdr *h, size_t n)
{
    if (n > sizeof(*h)) {
        n = sizeof(*h);
    }
    nvm_peek_cls(slabs_tier_clsid(off), h, slabs_tier_ptr(off), n);
}

void nitem_write_time(uint64_t off, rel_time_t time)
{
    write_field(slabs_tier_clsid(off), off + offsetof(nitem_hdr, time),
                &time, sizeof(time));
}

void nitem_write_exptime(uint64_t off, rel_time_t exptime)
{
    write_field(slabs_tier_clsid(off), off + offsetof(nitem_hdr, exptime),
                &exptime, sizeof(exptime));
}

void nitem_write_cas(uint64_t off, uint64_t cas)
{
    write_field(slabs_tier_clsid(off), off + offsetof(nitem_hdr, cas), &cas,
                sizeof(cas));
}

void nitem_write_lru(uint64_t off, uint8_t lru)
{
    write_field(slabs_tier_clsid(off), off + offsetof(nitem_hdr, lru), &lru,
                sizeof(lru));
}

void nitem_write_flags(uint64_t off, uint8_t flags)
{
    write_field(slabs_tier_clsid(off), off + offsetof(nitem_hdr, flags),
                &flags, sizeof(flags));
}

static uint64_t trailer_off(uint64_t off, unsigned int id)
{
    return slabs_tier_chunk_end(off, id) - NITEM_TRAILER_BYTES;
}

void nitem_trailer_read(uint64_t off, nitem_trailer *t)
{
    unsigned int id = slabs_tier_clsid(off);
    nvm_read_cls(id, t, slabs_tier_ptr(trailer_off(off, id)), sizeof(*t));
}

void nitem_trailer_write(uint64_t off, const nitem_trailer *t)
{
    unsigned int id = slabs_tier_clsid(off);
    nvm_write_cls(id, slabs_tier_ptr(trailer_off(off, id)), t, sizeof(*t));
}

void nitem_trailer_write_prev(uint64_t off, uint64_t prev)
{
    unsigned int id = slabs_tier_clsid(off);
    nvm_write_cls(id, slabs_tier_ptr(trailer_off(off, id)
                               + offsetof(nitem_trailer, prev)),
                  &prev, sizeof(prev));
}

void nitem_trailer_write_next(uint64_t off, uint64_t next)
{
    unsigned int id = slabs_tier_clsid(off);
    nvm_write_cls(id, slabs_tier_ptr(trailer_off(off, id)
                               + offsetof(nitem_trailer, next)),
                  &next, sizeof(next));
}

uint64_t nitem_lines(uint64_t off, size_t ntotal)
{
    return nvm_lines_spanned(slabs_tier_ptr(off), ntotal);
}

uint64_t *nitem_lock_chunk(uint64_t off, nitem_hdr *h, size_t need,
                           bool wait, bool *busy)
{
    /* A linked item's hash never changes, so a torn read (the chunk being
     * written or freed meanwhile) names either a bucket with no slot for
     * off or, its hash being whole, the item that is linked there now. */
    memset(h, 0, sizeof(*h));
    nitem_peek_header(off, h, need < sizeof(h->hv) ? sizeof(h->hv) : need);
    *busy = false;
    if (wait) {
        item_lock(h->hv);
    } else if (item_trylock(h->hv) != 0) {
        *busy = true;
        return NULL;
    }
    uint64_t *locp = assoc_find_noff(h->hv, off);
    if (locp == NULL) {
        item_unlock(h->hv);
    }
    return locp;
}

/* ---- what the index asks of N items (hash_desc.h) ---- */

static bool index_has_key(uint64_t off, const char *key, size_t nkey,
                          struct nitem_probe *probe)
{
    struct nitem_probe local;
    if (probe == NULL) {
        probe = &local;
    }
    nitem_probe(off, nkey, probe);
    return nitem_probe_matches(probe, key, nkey);
}

const struct assoc_nitem_ops nitem_index_ops = {
    .has_key = index_has_key,
};
