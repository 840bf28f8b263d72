/*
 * items_dump.c: the item listings of the admin commands: metadump lines
 * (lru_crawler metadump, by class or over the whole index) and `stats
 * cachedump`, for D and N items alike (doc/tiering.md "Crawler, metadump,
 * cachedump").
 *
 * Locks: each item is read under its item lock (N items through nvm.h's
 * counted accessors); the D queues are walked by items_mq.c under their
 * class lock.
 */
#include "config.h"
#include "items.h"
#include "items_internal.h"

#include "hash_desc.h"
#include "hash.h"
#include "item_lock.h"
#include "items_crawl.h"
#include "items_mq.h"
#include "slabs.h"
#include "slabs_tier.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHEDUMP_MAX (2 * 1024 * 1024)

/* One metadump line ("key=... size=...\n"); 0 when it does not fit. */
static size_t dump_line(char *buf, size_t size, const char *key, size_t nkey,
                        rel_time_t exptime, rel_time_t atime, uint64_t cas,
                        bool fetched, unsigned int clsid, size_t ntotal)
{
    char ekey[KEY_MAX_LENGTH * 3 + 1];
    uri_encode(key, nkey, ekey, sizeof(ekey));
    int len = snprintf(buf, size,
            "key=%s exp=%lld la=%llu cas=%llu fetch=%s cls=%u size=%zu\n",
            ekey,
            exptime == 0 ? -1LL
                         : (long long)exptime + (long long)process_started,
            (unsigned long long)atime + (unsigned long long)process_started,
            (unsigned long long)cas, fetched ? "yes" : "no", clsid, ntotal);
    if (len < 0 || (size_t)len >= size) {
        return 0;
    }
    return (size_t)len;
}

/* The line of a linked D item, 0 if it is dead (item lock held). */
static size_t dump_line_d(item *it, char *buf, size_t size)
{
    if (item_is_dead(it)) {
        return 0;
    }
    return dump_line(buf, size, ITEM_key(it), it->nkey, load_exptime(it),
                     it->time, ITEM_get_cas(it),
                     (it->it_flags & ITEM_FETCHED) != 0, it->slabs_clsid,
                     ITEM_ntotal(it));
}

/* The line of the N item at the location word loc, 0 if it is dead (item
 * lock held): header and key read through nvm.h, last access and fetched
 * from the word.  size is the one the item would have in D, as `bytes`. */
static size_t dump_line_n(uint64_t loc, char *buf, size_t size)
{
    struct nitem_probe p;
    nitem_probe_stored(hd_n_offset(loc), &p);
    const nitem_hdr *h = &p.u.hdr;
    if (n_is_dead(h, loc)) {
        return 0;
    }
    return dump_line(buf, size, p.u.buf + sizeof(nitem_hdr), h->nkey,
                     h->exptime, n_last_access(h, loc),
                     settings.use_cas ? h->cas : 0,
                     (hd_n_flags(loc) & ITEM_FETCHED) != 0, h->clsid,
                     item_make_ntotal(h->nkey, (int)h->nbytes));
}

size_t items_crawl_dump(item *it, char *buf, size_t size)
{
    uint64_t hv = hash_key(ITEM_key(it), it->nkey);
    size_t len = 0;

    item_lock(hv);
    if (it->it_flags & ITEM_LINKED) {
        len = dump_line_d(it, buf, size);
    }
    item_unlock(hv);
    item_remove(it);
    return len;
}

size_t items_crawl_dump_n(uint64_t off, char *buf, size_t size)
{
    nitem_hdr h;
    bool busy;
    uint64_t *locp = nitem_lock_chunk(off, &h, sizeof(h.hv), true, &busy);
    if (locp == NULL) {
        return 0;
    }
    size_t len = dump_line_n(*locp, buf, size);
    item_unlock(h.hv);
    return len;
}

/* ---- stats cachedump ---- */

struct cachedump_state {
    char *buf;
    size_t used;
    unsigned int shown;
    unsigned int limit;
    bool more;                   /* neither the limit nor the buffer hit */
};

/* Add one "ITEM key [N b; T s]" line; false when the dump is complete. */
static bool cachedump_add(struct cachedump_state *st, const char *key,
                          size_t nkey, uint32_t nbytes, rel_time_t exptime)
{
    char line[KEY_MAX_LENGTH + 64];
    int len = snprintf(line, sizeof(line), "ITEM %.*s [%u b; %llu s]\r\n",
            (int)nkey, key, nbytes - 2,
            exptime == 0 ? 0ULL
                         : (unsigned long long)exptime
                           + (unsigned long long)process_started);
    if (len < 0 || st->used + (size_t)len + 6 > CACHEDUMP_MAX) {
        st->more = false;
        return false;
    }
    memcpy(st->buf + st->used, line, (size_t)len);
    st->used += (size_t)len;
    st->shown++;
    st->more = st->limit == 0 || st->shown < st->limit;
    return st->more;
}

static bool cachedump_visit(item *it, unsigned int level, void *arg)
{
    return cachedump_add(arg, ITEM_key(it), it->nkey, it->nbytes,
                         load_exptime(it));
}

/* After the D queues, the class's N items in zone order. */
static void cachedump_n(unsigned int clsid, struct cachedump_state *st)
{
    uint64_t cursor = 0, off;
    while (st->more && slabs_tier_next_used(clsid, &cursor, &off)) {
        nitem_hdr h;
        bool busy;
        if (nitem_lock_chunk(off, &h, sizeof(h.hv), true, &busy) == NULL) {
            continue;
        }
        struct nitem_probe p;
        nitem_probe_stored(off, &p);
        cachedump_add(st, p.u.buf + sizeof(nitem_hdr), p.u.hdr.nkey,
                      p.u.hdr.nbytes, p.u.hdr.exptime);
        item_unlock(h.hv);
    }
}

char *item_cachedump(unsigned int clsid, unsigned int limit,
                     unsigned int *bytes)
{
    struct cachedump_state st = { malloc(CACHEDUMP_MAX), 0, 0, limit, true };
    if (st.buf == NULL) {
        return NULL;
    }
    if (clsid >= POWER_SMALLEST && clsid <= slabs_largest_clsid()) {
        mq_for_each(clsid, cachedump_visit, &st);
        cachedump_n(clsid, &st);
    }
    memcpy(st.buf + st.used, "END\r\n", 5);
    st.used += 5;
    *bytes = (unsigned int)st.used;
    return st.buf;
}
