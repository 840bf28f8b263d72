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
 * chunk bitmaps the server needs anyway, plus RUNS runs of verified items
 * (about half a MiB) while the scan lasts.
 *
 * Two threads share the scan: a helper verifies (reads every item whole,
 * checks its checksum, header, key hash and expiry, unseals what it
 * rejects) and hands the live items over in runs, in zone order; the
 * scan's own thread links them (index, chunk bitmaps, counters) in that
 * order, so what is linked is what one thread linked.
 *
 * Locks: the scan runs in storage_start_threads, before any client or
 * storage thread exists to look at the index or the zone, so it calls the
 * do_ functions without item locks and marks chunks without the tier lock
 * (two lock pairs an item were 15% of the scan); only the linking thread
 * touches the index, the bitmaps and the counters, and the verifier
 * writes only the seals of chunks it rejects, which linking never reads.
 * A run passes between them under handoff.lock; the helper is joined
 * before the scan returns.  The first client's connection reaches a
 * worker through a locked queue, which orders the scan's writes before
 * anything the worker reads.  The save runs in storage_shutdown after
 * every other thread has stopped and takes the item locks through
 * assoc_walk.
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
#include <pthread.h>
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

static struct {
    enum nzone_start start;
    uint64_t pages;
    uint64_t pages_used;          /* the scan's end, for its progress */
    struct plausible limits;
    uint32_t earlier[NZONE_EARLIER_SEALS];
    unsigned int nearlier;
    struct scan_counts found;
    double seconds;
    uint64_t saved;               /* D items written to N at the stop */
    uint64_t unsaved;             /* D items that found no N chunk */
    /* classes where a save found no N chunk even by eviction: their
     * other D items are not tried (each try sweeps the class) */
    bool save_failed[MAX_NUMBER_OF_SLAB_CLASSES];
} rs;

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec)
        + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ---- the scan ---- */

/* A sealed chunk's item whose checksum, header and key hash verified and
 * that is live: what verifying hands to linking.  Its key is copied to
 * its run's keys (linking compares it with the candidates' keys); the
 * rest stays in the zone. */
struct found_item {
    uint64_t off;
    uint64_t hv;
    uint64_t cas;
    uint32_t nbytes;
    uint32_t key_at;              /* its key's first byte in keys[] */
    uint8_t nkey;
    uint8_t clsid;
    uint8_t flags;
};

/* Items verified and not yet linked, in zone order: what one thread
 * hands the other.  Small enough for the caches to keep a few. */
#define RUN_ITEMS 2048
#define RUN_KEY_BYTES (RUN_ITEMS * 16)

struct found_run {
    struct found_item items[RUN_ITEMS];
    char keys[RUN_KEY_BYTES];
    unsigned int n;
    uint32_t keys_used;
    uint64_t pages_done;          /* pages verified when the run ended */
    bool last;                    /* the zone's end */
};

/* Where verifying stands, and what it found that is not linked. */
struct verifier {
    uint64_t page;
    uint64_t used;                /* pages in use, the scan's end */
    unsigned int chunk;
    struct scan_counts found;
};

/* Item counts and bytes linked of one class, added to the class's
 * counters at once: four atomic adds an item were 5% of the linking. */
struct tally {
    unsigned int clsid;
    uint64_t items;
    uint64_t bytes;
};

static void tally_flush(struct tally *t)
{
    if (t->items != 0) {
        account_n_items_added(t->clsid, t->items, t->bytes);
        ctr_add(&total_items, t->items);
        t->items = 0;
        t->bytes = 0;
    }
}

static void tally_add(struct tally *t, unsigned int clsid, size_t ntotal)
{
    if (t->clsid != clsid) {
        tally_flush(t);
        t->clsid = clsid;
    }
    t->items++;
    t->bytes += ntotal;
}

static bool header_fits(const nitem_hdr *h, unsigned int id, uint64_t off,
                        uint64_t chunk_end)
{
    uint64_t room = chunk_end - NITEM_TRAILER_BYTES - off;
    return h->clsid == id && h->nkey > 0 && h->nbytes >= 2
        && nitem_ntotal(h->nkey, h->nbytes) <= room;
}

/* Link the verified item f as a cold N item. */
static void do_link_recovered(const struct found_item *f, struct tally *t,
                              struct scan_counts *n)
{
    uint64_t loc = hd_n_make(f->off, 0, f->flags & ITEM_STALE,
                             migrate_epoch(), 0);
    if (!slabs_tier_restore_chunk(f->off)) {
        nitem_unseal(f->off);
        n->corrupt++;
        return;
    }
    if (!assoc_insert_loc_spread(loc, f->hv)) {
        nitem_unseal(f->off);
        slabs_tier_free(f->off);
        n->dropped++;
        return;
    }
    if (active_policy->n_linked != NULL) {
        active_policy->n_linked(f->clsid, f->off, false);
    }
    size_t ntotal = item_make_ntotal(f->nkey, (int)f->nbytes);
    tally_add(t, f->clsid, ntotal);
    if (settings.track_sizes) {
        sizes_account(ntotal, true);
    }
    tier_reassign_note(f->clsid, -1, 0);
    if (f->cas > n->max_cas) {
        n->max_cas = f->cas;
    }
    n->recovered++;
}

/* A second sealed version of a key: the higher cas is the later store.
 * The tally is flushed first, so no counter drops below what it held. */
static void do_keep_newer(uint64_t *locp, const struct found_item *f,
                          const struct nitem_probe *other, struct tally *t,
                          struct scan_counts *n)
{
    n->older++;
    if (other->u.hdr.cas >= f->cas) {
        nitem_unseal(f->off);
        return;
    }
    tally_flush(t);
    do_unlink_n_slot(locp, f->hv, other->u.hdr.clsid,
                     item_make_ntotal(other->u.hdr.nkey,
                                      (int)other->u.hdr.nbytes));
    slabs_tier_free(other->off);
    ctr_sub(&total_items, 1);
    n->recovered--;
    do_link_recovered(f, t, n);
}

/* Link f unless the index holds a newer version of its key. */
static void link_found(const struct found_item *f, const char *key,
                       struct tally *t, struct scan_counts *n)
{
    struct nitem_probe other;
    uint64_t *locp = assoc_find_loc(key, f->nkey, f->hv, &other);
    if (locp == NULL) {
        do_link_recovered(f, t, n);
    } else if (hd_loc_is_n(*locp)) {
        do_keep_newer(locp, f, &other, t, n);
    } else {
        nitem_unseal(f->off);
        n->older++;
    }
}

/* Items ahead of the one being linked whose index buckets are asked for:
 * they are random lines of a table far larger than the caches.  Nearer,
 * ROOM_AHEAD items ahead, those buckets have arrived, and when both are
 * full (one insert in eight, the index being sized for the zone's items
 * at its target load) the buckets a move would use are asked for. */
#define PREFETCH_AHEAD 16
#define ROOM_AHEAD 8

static void link_run(const struct found_run *r, struct scan_counts *n)
{
    struct tally t = { 0, 0, 0 };
    for (unsigned int i = 0; i < r->n && i < PREFETCH_AHEAD; i++) {
        assoc_prefetch(r->items[i].hv);
    }
    for (unsigned int i = 0; i < r->n; i++) {
        if (i + PREFETCH_AHEAD < r->n) {
            assoc_prefetch(r->items[i + PREFETCH_AHEAD].hv);
        }
        if (i + ROOM_AHEAD < r->n) {
            assoc_prefetch_room(r->items[i + ROOM_AHEAD].hv);
        }
        link_found(&r->items[i], r->keys + r->items[i].key_at, &t, n);
    }
    tally_flush(&t);
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

/* Whether the item probed in p, its checksum verified, is one to link:
 * its key hashes to its hash, its other fields are plausible and it is
 * neither expired nor flushed.  If not, it is unsealed and counted. */
static bool live_item(const struct nitem_probe *p, struct scan_counts *n)
{
    const nitem_hdr *h = &p->u.hdr;
    const char *key = p->u.buf + sizeof(nitem_hdr);
    if (p->len < sizeof(nitem_hdr) + h->nkey
            || hash_key(key, h->nkey) != h->hv
            || !in_place_fields_plausible(h)) {
        nitem_unseal(p->off);
        n->corrupt++;
        return false;
    }
    if (exptime_passed(h->exptime) || flushed_at(h->time, h->cas)) {
        nitem_unseal(p->off);
        if (exptime_passed(h->exptime)) {
            n->expired++;
        } else {
            n->flushed++;
        }
        return false;
    }
    return true;
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

/* Whether the chunk probed in p (class id, ending at chunk_end, seal word
 * not 0) holds an item of this layout whose checksum verifies; if not, it
 * is unsealed and counted. */
static bool verify_chunk(const struct nitem_probe *p, unsigned int id,
                         uint64_t chunk_end, struct scan_counts *n)
{
    bool fits = header_fits(&p->u.hdr, id, p->off, chunk_end);
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

/* Verify the chunk at off (class id, size bytes) and add its item to r if
 * it is one to link.  The page walk knows the chunk: finding its class
 * and end again from off took divisions that were a tenth of the
 * verifying. */
static void verify_into(uint64_t off, unsigned int id, unsigned int size,
                        struct found_run *r, struct scan_counts *n)
{
    struct nitem_probe p;
    uint64_t chunk_end = off + size;
    nitem_probe_chunk(off, id, chunk_end, &p);
    if (p.u.hdr.seal == 0 || !verify_chunk(&p, id, chunk_end, n)
            || !live_item(&p, n)) {
        return;
    }
    const nitem_hdr *h = &p.u.hdr;
    r->items[r->n++] = (struct found_item){
        .off = off, .hv = h->hv, .cas = h->cas, .nbytes = h->nbytes,
        .key_at = r->keys_used, .nkey = h->nkey, .clsid = h->clsid,
        .flags = h->flags,
    };
    memcpy(r->keys + r->keys_used, p.u.buf + sizeof(nitem_hdr), h->nkey);
    r->keys_used += h->nkey;
}

/* Verify chunks from where v stands until r is full or the zone ends. */
static void fill_run(struct verifier *v, struct found_run *r)
{
    size_t page_size = slabs_tier_page_size();
    r->n = 0;
    r->keys_used = 0;
    r->last = false;
    for (; v->page < v->used; v->page++, v->chunk = 0) {
        uint64_t base = v->page * page_size;
        unsigned int id = slabs_tier_clsid(base);
        unsigned int perslab = id == 0 ? 0 : slabs_chunks_per_page(id);
        unsigned int size = id == 0 ? 0 : slabs_chunk_size(id);
        for (; v->chunk < perslab; v->chunk++) {
            if (r->n == RUN_ITEMS
                    || r->keys_used + KEY_MAX_LENGTH > RUN_KEY_BYTES) {
                r->pages_done = v->page;
                return;
            }
            verify_into(base + (uint64_t)v->chunk * size, id, size, r,
                        &v->found);
        }
    }
    r->pages_done = v->page;
    r->last = true;
}

/* Verifying and linking run side by side: a second thread verifies (reads
 * every item whole and checks its checksum) up to RUNS runs ahead while
 * the scan's own thread links, in zone order, as one thread did.  A run
 * passes from one to the other under handoff.lock: `ready` counts the runs
 * verified and not yet linked, and each side waits on its condition. */
#define RUNS 4

static struct found_run runs[RUNS];
static struct {
    pthread_mutex_t lock;
    pthread_cond_t verified;
    pthread_cond_t linked;
    unsigned int ready;
} handoff = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
           PTHREAD_COND_INITIALIZER, 0 };

static void *verify_thread(void *arg)
{
    struct verifier *v = arg;
    for (unsigned int i = 0; ; i = (i + 1) % RUNS) {
        pthread_mutex_lock(&handoff.lock);
        while (handoff.ready == RUNS) {
            pthread_cond_wait(&handoff.linked, &handoff.lock);
        }
        pthread_mutex_unlock(&handoff.lock);
        fill_run(v, &runs[i]);
        bool last = runs[i].last;
        pthread_mutex_lock(&handoff.lock);
        handoff.ready++;
        pthread_cond_signal(&handoff.verified);
        pthread_mutex_unlock(&handoff.lock);
        if (last) {
            return NULL;
        }
    }
}

/* The run the verifier hands over next (index i), once it is verified. */
static const struct found_run *next_verified(unsigned int i)
{
    pthread_mutex_lock(&handoff.lock);
    while (handoff.ready == 0) {
        pthread_cond_wait(&handoff.verified, &handoff.lock);
    }
    pthread_mutex_unlock(&handoff.lock);
    return &runs[i];
}

static void done_linking(void)
{
    pthread_mutex_lock(&handoff.lock);
    handoff.ready--;
    pthread_cond_signal(&handoff.linked);
    pthread_mutex_unlock(&handoff.lock);
}

static void add_counts(struct scan_counts *to, const struct scan_counts *c)
{
    to->recovered += c->recovered;
    to->expired += c->expired;
    to->flushed += c->flushed;
    to->older += c->older;
    to->corrupt += c->corrupt;
    to->stale += c->stale;
    to->dropped += c->dropped;
    if (c->max_cas > to->max_cas) {
        to->max_cas = c->max_cas;
    }
}

static void report_progress(struct timespec *last, uint64_t pages)
{
    if (seconds_since(last) >= PROGRESS_INTERVAL) {
        clock_gettime(CLOCK_MONOTONIC, last);
        fprintf(stderr, "[restart] N-zone: %" PRIu64 " of %" PRIu64
                " pages scanned, %" PRIu64 " items recovered\n",
                pages, rs.pages_used, rs.found.recovered);
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
    rs.pages_used = used;
    struct verifier v = { .page = 0, .used = used, .chunk = 0 };
    struct timespec reported;
    clock_gettime(CLOCK_MONOTONIC, &reported);
    pthread_t helper;
    handoff.ready = 0;
    if (pthread_create(&helper, NULL, verify_thread, &v) != 0) {
        /* one thread does both, a run at a time */
        do {
            fill_run(&v, &runs[0]);
            link_run(&runs[0], &rs.found);
            report_progress(&reported, runs[0].pages_done);
        } while (!runs[0].last);
        add_counts(&rs.found, &v.found);
        return;
    }
    (void)pthread_setname_np(helper, "mc-restart");
    for (unsigned int i = 0; ; i = (i + 1) % RUNS) {
        const struct found_run *r = next_verified(i);
        link_run(r, &rs.found);
        bool last = r->last;
        uint64_t pages = r->pages_done;
        done_linking();
        report_progress(&reported, pages);
        if (last) {
            break;
        }
    }
    pthread_join(helper, NULL);
    add_counts(&rs.found, &v.found);
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
        rs.limits.max_time = current_time + RESTART_TIME_SLACK;
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
    /* The D-zone holds the hotter items: with the N-zone full, each takes
     * the chunk of the N item the CLOCK would evict next, so the restart
     * keeps the hot set and loses the coldest (doc/restart.md "What
     * survives").  Without eviction every save that found no free chunk
     * swept its class twice before giving up. */
    unsigned int id = it->slabs_clsid;
    if (!rs.save_failed[id] && demote(it, hv, true)) {
        rs.saved++;
    } else {
        rs.save_failed[id] = true;
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
