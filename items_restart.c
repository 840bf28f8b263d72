/*
 * items_restart.c: what the storage engine does for a warm restart from
 * the N-zone (doc/restart.md "Warm restart" and "Crash recovery").
 *
 * Owns the recovery scan, which rebuilds the index from the N-zone at
 * start-up, the saving of D items into the N-zone at a graceful stop, and
 * the figures `stats tier` reports about both.
 *
 * The scan visits every chunk of every page the persistent page table
 * gives to a class (nzone.h), in zone order, reading each chunk's first
 * line.  A chunk with a zero seal word is free.  Any other is read whole,
 * in blocks, and holds an item when its seal is the item's checksum under
 * this layout's seal (nitem.h: written last, cleared whenever the item
 * left the chunk), its header fits the page's class, its key hashes to
 * the hash it carries and the fields the checksum cannot cover are
 * plausible; then the item is linked as a cold N item, unless it expired
 * or a flush_all covers it, or the index already holds a version with a
 * higher cas (a crash between linking a new version and unsealing the old
 * one leaves both sealed).  A chunk whose seal verifies under an earlier
 * layout's seal, or whose header names another class than its page's, is
 * a remnant a format left (stale); any other is corrupt.  Whatever is not
 * linked is unsealed, so the next recovery sees the same.  The index is
 * sized once before the scan; memory stays bounded by the index and the
 * chunk bitmaps the server needs anyway.
 *
 * Locks: the scan runs in storage_start_threads, before any client or
 * storage thread exists to look at the index or the zone, so it calls the
 * do_ functions without item locks and marks chunks without the tier lock
 * (two lock pairs an item were 15% of the scan); the first client's
 * connection reaches a worker through a locked queue, which orders the
 * scan's writes before anything the worker reads.  The save runs in
 * storage_shutdown after every other thread has stopped and takes the
 * item locks through assoc_walk.
 */
#include "config.h"
#include "items.h"
#include "items_internal.h"

#include "hash.h"
#include "hash_desc.h"
#include "item_lock.h"
#include "items_duallru.h"
#include "migrate.h"
#include "nvm.h"
#include "nzone.h"
#include "slabs.h"
#include "tier_reassign.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* How often the scan reports its progress, seconds. */
#define PROGRESS_INTERVAL 1.0

/* What the scan found. */
struct scan_counts {
    uint64_t recovered;
    uint64_t expired;             /* exptime passed while stopped */
    uint64_t flushed;             /* covered by a flush_all */
    uint64_t older;               /* a newer version was found too */
    uint64_t corrupt;             /* sealed, checksum or header wrong */
    uint64_t stale;               /* sealed by an earlier layout */
    uint64_t dropped;             /* no memory for its index slot */
    uint64_t max_cas;             /* of the items recovered */
};

/* What the fields the checksum does not cover may hold (recovery only). */
struct plausible {
    rel_time_t max_time;          /* no item was stored later */
    uint64_t max_cas;             /* 0: no bound known (a crash) */
};

/* How far past the resumed clock a crash recovery accepts an item's time:
 * the wall clock the clock resumes from may have been stepped back. */
#define TIME_SLACK (24 * 3600)

static struct {
    enum nzone_start start;
    uint64_t pages;
    struct plausible limits;
    uint32_t earlier[NZONE_EARLIER_SEALS];
    unsigned int nearlier;
    struct scan_counts found;
    double seconds;
    uint64_t saved;               /* D items written to N at the stop */
    uint64_t unsaved;             /* D items that found no N chunk */
} rs;

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec)
        + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ---- the scan ---- */

static bool header_fits(const nitem_hdr *h, unsigned int id, uint64_t off)
{
    uint64_t room = slabs_tier_chunk_end(off, id) - NITEM_TRAILER_BYTES - off;
    return h->clsid == id && h->nkey > 0 && h->nbytes >= 2
        && nitem_ntotal(h->nkey, h->nbytes) <= room;
}

/* Link the recovered item of probe p (its hash hv) as a cold N item. */
static void do_link_recovered(const struct nitem_probe *p, uint64_t hv,
                              struct scan_counts *n)
{
    const nitem_hdr *h = &p->u.hdr;
    uint64_t loc = hd_n_make(p->off, 0, h->flags & ITEM_STALE,
                             migrate_epoch(), 0);
    if (!slabs_tier_restore_chunk(p->off)) {
        nitem_unseal(p->off);
        n->corrupt++;
        return;
    }
    if (!assoc_insert_loc(loc, hv)) {
        nitem_unseal(p->off);
        slabs_tier_free(p->off);
        n->dropped++;
        return;
    }
    if (active_policy->n_linked != NULL) {
        active_policy->n_linked(h->clsid, p->off, false);
    }
    account_item(h->clsid, item_make_ntotal(h->nkey, (int)h->nbytes), true,
                 true);
    ctr_add(&total_items, 1);
    tier_reassign_note(h->clsid, -1, 0);
    if (h->cas > n->max_cas) {
        n->max_cas = h->cas;
    }
    n->recovered++;
}

/* A second sealed version of a key: the higher cas is the later store. */
static void do_keep_newer(uint64_t *locp, const struct nitem_probe *p,
                          const struct nitem_probe *other, uint64_t hv,
                          struct scan_counts *n)
{
    n->older++;
    if (other->u.hdr.cas >= p->u.hdr.cas) {
        nitem_unseal(p->off);
        return;
    }
    do_unlink_n_slot(locp, hv, other->u.hdr.clsid,
                     item_make_ntotal(other->u.hdr.nkey,
                                      (int)other->u.hdr.nbytes));
    slabs_tier_free(other->off);
    ctr_sub(&total_items, 1);
    n->recovered--;
    do_link_recovered(p, hv, n);
}

/* The fields written in place after the store (nitem_write_*): a bad
 * value means the medium changed them. */
static bool in_place_fields_plausible(const nitem_hdr *h)
{
    return (h->flags & ~NITEM_PERSISTENT_FLAGS) == 0
        && (h->lru & ~(DLRU_ACTIVE | DLRU_PROMOTE)) == 0
        && h->time <= rs.limits.max_time
        && h->cas != 0
        && (rs.limits.max_cas == 0 || h->cas <= rs.limits.max_cas);
}

/* The probe p of a sealed chunk of class id, verified: link its item if
 * it is a live one. */
static void recover_chunk(const struct nitem_probe *p, unsigned int id,
                          struct scan_counts *n)
{
    const nitem_hdr *h = &p->u.hdr;
    const char *key = p->u.buf + sizeof(nitem_hdr);
    if (p->len < sizeof(nitem_hdr) + h->nkey
            || hash_key(key, h->nkey) != h->hv
            || !in_place_fields_plausible(h)) {
        nitem_unseal(p->off);
        n->corrupt++;
        return;
    }
    if (exptime_passed(h->exptime) || flushed_at(h->time, h->cas)) {
        nitem_unseal(p->off);
        if (exptime_passed(h->exptime)) {
            n->expired++;
        } else {
            n->flushed++;
        }
        return;
    }
    struct nitem_probe other;
    uint64_t *locp = assoc_find_loc(key, h->nkey, h->hv, &other);
    if (locp == NULL) {
        do_link_recovered(p, h->hv, n);
    } else if (hd_loc_is_n(*locp)) {
        do_keep_newer(locp, p, &other, h->hv, n);
    } else {
        nitem_unseal(p->off);
        n->older++;
    }
}

/* A chunk an earlier layout sealed: version 1 sealed with the layout's
 * seal itself, version 2 with the item's checksum under it. */
static bool sealed_earlier(const struct nitem_probe *p, bool fits)
{
    for (unsigned int i = 0; i < rs.nearlier; i++) {
        if (p->u.hdr.seal == rs.earlier[i]
                || (fits && nitem_stored_checksum_ok(p, rs.earlier[i]))) {
            return true;
        }
    }
    return false;
}

/* Whether the chunk probed in p (class id, seal word not 0) holds an item
 * of this layout whose checksum verifies; if not, it is unsealed and
 * counted. */
static bool verify_chunk(const struct nitem_probe *p, unsigned int id,
                         struct scan_counts *n)
{
    bool fits = header_fits(&p->u.hdr, id, p->off);
    if (fits && nitem_stored_checksum_ok(p, nzone_seal())) {
        return true;
    }
    /* a header of another class than the page's is not one this layout
     * wrote there: a remnant of a layout of other chunk sizes */
    if (p->u.hdr.clsid != id || sealed_earlier(p, fits)) {
        n->stale++;
    } else {
        n->corrupt++;
    }
    nitem_unseal(p->off);
    return false;
}

/* Chunks probed ahead of linking: the index buckets they will touch are
 * random lines of a table far larger than the caches, so their loads are
 * started for the whole batch first. */
#define RECOVER_BATCH 32

/* The sealed chunks of page `page` (class id), batch by batch. */
static void recover_page(uint64_t page, unsigned int id,
                         struct scan_counts *counts)
{
    struct nitem_probe batch[RECOVER_BATCH];
    uint64_t base = page * slabs_tier_page_size();
    unsigned int size = slabs_chunk_size(id);
    unsigned int perslab = slabs_chunks_per_page(id);
    unsigned int c = 0;
    while (c < perslab) {
        unsigned int n = 0;
        for (; c < perslab && n < RECOVER_BATCH; c++) {
            nitem_probe_stored(base + (uint64_t)c * size, &batch[n]);
            if (batch[n].u.hdr.seal != 0
                    && verify_chunk(&batch[n], id, counts)) {
                assoc_prefetch(batch[n].u.hdr.hv);
                n++;
            }
        }
        for (unsigned int i = 0; i < n; i++) {
            recover_chunk(&batch[i], id, counts);
        }
    }
}

static void scan_zone(void)
{
    size_t page_size = slabs_tier_page_size();
    uint64_t used = slabs_tier_pages_used();
    uint64_t chunks = 0;
    for (uint64_t page = 0; page < used; page++) {
        unsigned int id = slabs_tier_clsid(page * page_size);
        chunks += id == 0 ? 0 : slabs_chunks_per_page(id);
    }
    /* a page is given only when its class has no free chunk, so that is
     * the zone's peak item count: sized once up front, the scan's links
     * split no bucket */
    assoc_reserve(chunks);
    struct timespec last;
    clock_gettime(CLOCK_MONOTONIC, &last);
    for (uint64_t page = 0; page < used; page++) {
        unsigned int id = slabs_tier_clsid(page * page_size);
        if (id != 0) {
            recover_page(page, id, &rs.found);
        }
        if (seconds_since(&last) >= PROGRESS_INTERVAL) {
            clock_gettime(CLOCK_MONOTONIC, &last);
            fprintf(stderr, "[restart] N-zone: %" PRIu64 " of %" PRIu64
                    " pages scanned, %" PRIu64 " items recovered\n",
                    page + 1, used, rs.found.recovered);
        }
    }
}

static const char *zone_name(void)
{
    return settings.nvm.path != NULL ? settings.nvm.path : "(anonymous)";
}

void items_restart_recover(const struct nzone_attach_result *start)
{
    memset(&rs, 0, sizeof(rs));
    rs.start = start->start;
    if (start->start == NZONE_COLD) {
        if (!start->fresh && start->why_cold[0] != '\0') {
            fprintf(stderr, "[restart] N-zone %s: %s; starting with a clean "
                    "N-zone\n", zone_name(), start->why_cold);
        }
        return;
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_resume(start->epoch, start->last_time);
    /* after an orderly stop the run state holds the clock and the cas
     * counter of the last store; after a crash only the clock bounds */
    if (start->start == NZONE_WARM_CLEAN) {
        rs.limits.max_time = start->last_time;
        rs.limits.max_cas = start->max_cas;
    } else {
        rs.limits.max_time = current_time + TIME_SLACK;
    }
    rs.nearlier = nzone_earlier_seals(rs.earlier);
    items_cas_at_least(start->max_cas);
    __atomic_store_n(&settings.oldest_live, start->oldest_live,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&settings.oldest_cas, start->oldest_cas,
                     __ATOMIC_RELAXED);
    rs.pages = slabs_tier_pages_used() - start->first_page;
    fprintf(stderr, "[restart] N-zone %s: %s, recovering %" PRIu64
            " pages\n", zone_name(),
            start->start == NZONE_WARM_CLEAN ? "stopped in order"
                                             : "not stopped in order",
            rs.pages);
    scan_zone();
    items_cas_at_least(rs.found.max_cas);
    slabs_tier_restore_done();
    rs.seconds = seconds_since(&t0);
    fprintf(stderr, "[restart] N-zone %s: %" PRIu64 " items recovered in "
            "%.3f s (%" PRIu64 " expired, %" PRIu64 " flushed, "
            "%" PRIu64 " older versions, %" PRIu64 " corrupt, %" PRIu64
            " stale, %" PRIu64 " without index memory)\n",
            zone_name(), rs.found.recovered, rs.seconds,
            rs.found.expired, rs.found.flushed, rs.found.older,
            rs.found.corrupt, rs.found.stale, rs.found.dropped);
}

void items_restart_serving(void)
{
    nzone_mark_running(process_started);
}

/* ---- a graceful stop ---- */

static void save_visit(uint64_t *locp, void *arg)
{
    if (hd_loc_is_n(*locp)) {
        return;
    }
    item *it = hd_loc_to_item(*locp);
    uint64_t hv = hash_key(ITEM_key(it), it->nkey);
    if (item_is_dead(it)) {
        return;
    }
    if (demote(it, hv, false)) {
        rs.saved++;
    } else {
        rs.unsaved++;
    }
}

void items_restart_save(bool graceful)
{
    if (!nzone_attached()) {
        return;
    }
    if (graceful && tiering) {
        assoc_walk(save_visit, NULL);
        fprintf(stderr, "[restart] graceful stop: %" PRIu64 " D-zone items "
                "written to the N-zone, %" PRIu64 " did not fit\n",
                rs.saved, rs.unsaved);
    }
    /* the items durable first, then the mark that vouches for them */
    bool synced = nvm_zone_sync(&nvm_zone) == 0;
    nzone_mark_stopped(current_time, get_cas_id());
    if (!synced || nvm_zone_sync(&nvm_zone) != 0) {
        perror("[restart] N-zone: msync");
    }
}

/* ---- stats tier ---- */

void items_restart_stats(ADD_STAT add_stats, void *c)
{
    append_stat("restart_kind", add_stats, c, "%s", nzone_start_name(rs.start));
    append_stat("restart_items_recovered", add_stats, c, "%" PRIu64,
                rs.found.recovered);
    append_stat("restart_items_expired", add_stats, c, "%" PRIu64,
                rs.found.expired);
    append_stat("restart_items_flushed", add_stats, c, "%" PRIu64,
                rs.found.flushed);
    append_stat("restart_items_older", add_stats, c, "%" PRIu64,
                rs.found.older);
    append_stat("restart_items_corrupt", add_stats, c, "%" PRIu64,
                rs.found.corrupt);
    append_stat("restart_items_stale", add_stats, c, "%" PRIu64,
                rs.found.stale);
    append_stat("restart_items_dropped", add_stats, c, "%" PRIu64,
                rs.found.dropped);
    append_stat("restart_seconds", add_stats, c, "%.3f", rs.seconds);
}
