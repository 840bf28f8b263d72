/*
 * clock_nvm.c: CLOCK replacement of the N-zone (HMCached section 3.4,
 * "Clock Based Object Replacement for the N-zone"; doc/tiering.md
 * "Replacement").
 *
 * Owns one hand per slab class (a position: zone page, chunk in page) and
 * the sweep counters.  The reference bits live in the index's location
 * words, the used-chunk bitmap in slabs_tier.c; the sweep keeps no list
 * and writes nothing to NVM.
 *
 * Locks:
 *   - hand[id].lock guards the class's hand, its copy hand, its
 *     probation hand (with their distance and the unread share) and
 *     counters; taken inside item locks (a store that needs an N chunk
 *     holds its own), so with it held item locks are only ever
 *     trylocked.  A page move (do_take_copy_page) holds the receiving
 *     class's and trylocks the giving class's, so that no sweep is on
 *     the page as it moves.
 *   - A candidate's slot is read and changed under its item lock (trylock).
 *   - A candidate's hash is read before its item lock is held (it is what
 *     names the lock): nitem_lock_chunk (nitem.c, shared with the
 *     crawler) reads it, locks the stripe and finds the slot by offset.  A
 *     garbage read (a chunk being written or freed meanwhile) just finds
 *     no slot.  Once the slot is found, the header is read again under the
 *     lock and only that copy is judged and passed to the unlink callback:
 *     between the two reads a touch may have moved the expiry, or the chunk
 *     may have been freed and taken by another version of a key of the
 *     same bucket, with other sizes.
 *
 * Deliberately different from the paper: an expired or flushed item is
 * reclaimed when the hand reaches it even if its bit is set (memcached
 * reclaims dead items first too), under -M (may_evict false) only dead
 * items are taken, and a chunk no slot names is offered to the engine,
 * which gives it up when it is a promoted item's N copy (items_ncopy.c:
 * it has no reference bit, and dropping one loses nothing, so it is
 * taken as soon as the hand reaches it, even under -M; a copy hand
 * finds them before the hand evicts an item met first, and a page that
 * holds nothing but copies goes to a class that would evict, both
 * below).  After a
 * flush_all (clock_nvm_note_flush), a class's next reclaims sweep for dead
 * items and copies only, until a whole turn finds none: the flushed items
 * go before a live one is evicted (doc/tiering.md "Aging and probation";
 * memcached's tail pulls meet its flushed items first, as its LRU holds
 * them behind everything stored since).
 *
 * Probation (where the engine names its new items, clock_ops.unread: the
 * default policy, hotter; doc/tiering.md "New keys in the N-zone").  Not
 * in the paper; S3-FIFO's small queue (Yang et al., SOSP 2023) and the
 * D-zone's probation FIFO (items_mq.c) without a list.  A new item is
 * written into the chunk the hand has just freed, so the paper's CLOCK
 * keeps a key nobody reads for a whole turn, as long as a key read once
 * is kept for two: where most keys are asked for once, those hold most
 * of the zone.  A second hand, the probation hand, follows the CLOCK
 * hand a third of the class's chunks behind it (PROBATION_LAG_DEN) and
 * evicts only the unread new items it meets, passing over everything
 * else without touching a bit: a new item written into a chunk the CLOCK
 * hand freed is met a third of a turn later.  It goes first while more
 * than PROBATION_SHARE_PCT % of the items the CLOCK hand met in its last
 * PROBATION_WINDOW are unread new ones; otherwise, as while it is
 * closer than the lag, the CLOCK hand alone decides.  The share keeps a
 * working set that moved from being held by the keys read before the
 * move: those are not new, so while they are many the CLOCK hand clears
 * and evicts them as before, and new keys get their whole turn.
 */
#include "config.h"
#include "clock_nvm.h"

#include "clock.h"
#include "hash_desc.h"
#include "slabs.h"
#include "item_lock.h"
#include "slab_class.h"
#include "slabs_tier.h"

#include <pthread.h>

/* Where a hand is: a zone page and a chunk in it. */
struct position {
    uint64_t page;
    unsigned int chunk;
};

struct hand {
    pthread_mutex_t lock;
    struct position clock;       /* the CLOCK hand */
    uint64_t copy_cursor;        /* the copy hand (slabs_tier_next_used) */
    uint64_t flush_swept;        /* the last flush a dead-only turn covered */
    struct position probation;   /* the probation hand */
    uint64_t lead;               /* class chunks from it to the hand */
    unsigned int window_items;   /* items the hand met in this window */
    unsigned int window_unread;  /* ... of them unread new ones */
    unsigned int unread_pct;     /* their share in the last window */
    struct clock_nvm_stats st;
};

static struct hand hands[MAX_NUMBER_OF_SLAB_CLASSES];
static struct clock_nvm_ops clock_ops;
/* flush_all's count and the time from which its items are dead */
static _Atomic uint64_t flushes;
static _Atomic rel_time_t flush_from;

void clock_nvm_note_flush(rel_time_t oldest_live)
{
    atomic_store_explicit(&flush_from, oldest_live, memory_order_relaxed);
    atomic_fetch_add_explicit(&flushes, 1, memory_order_release);
}

void clock_nvm_init(const struct clock_nvm_ops *ops)
{
    clock_ops = *ops;
    for (unsigned int i = 0; i < MAX_NUMBER_OF_SLAB_CLASSES; i++) {
        pthread_mutex_init(&hands[i].lock, NULL);
        memset(&hands[i].clock, 0, sizeof(hands[i].clock));
        hands[i].copy_cursor = 0;
        hands[i].flush_swept = 0;
        memset(&hands[i].probation, 0, sizeof(hands[i].probation));
        hands[i].lead = 0;
        hands[i].window_items = 0;
        hands[i].window_unread = 0;
        hands[i].unread_pct = 0;
        memset(&hands[i].st, 0, sizeof(hands[i].st));
    }
}

/* Probation (see the top of the file). */
#define PROBATION_LAG_DEN 3
#define PROBATION_SHARE_PCT 60
#define PROBATION_WINDOW 256

/* Count the item (location word loc) the hand meets into the unread
 * share (hand lock held). */
static void do_sample_unread(struct hand *h, uint64_t loc)
{
    if (clock_ops.unread == NULL) {
        return;
    }
    h->window_items++;
    if (clock_ops.unread(loc)) {
        h->window_unread++;
    }
    if (h->window_items >= PROBATION_WINDOW) {
        h->unread_pct = h->window_unread * 100 / h->window_items;
        h->window_items = 0;
        h->window_unread = 0;
    }
}

/* Lock the slot of the used chunk at off (hand lock held), counting the
 * look: nitem_lock_chunk reads the chunk's hash unlocked (it only names
 * the stripe to lock), trylocks the stripe and finds the slot by offset.
 * NULL when no slot names the chunk, or (*busy) its stripe was busy. */
static uint64_t *do_lock_chunk(struct hand *h, uint64_t off, nitem_hdr *hdr,
                               bool *busy)
{
    uint64_t *locp = nitem_lock_chunk(off, hdr, sizeof(hdr->hv), false,
                                       busy);
    h->st.examined++;
    if (locp == NULL && *busy) {
        h->st.busy++;
    }
    return locp;
}

/* Judge the used chunk at off (hand lock held).  True when it is now the
 * caller's. */
static bool do_visit(struct hand *h, uint64_t off, bool may_evict)
{
    nitem_hdr hdr;
    bool busy;
    uint64_t *locp = do_lock_chunk(h, off, &hdr, &busy);
    if (locp == NULL) {
        return !busy && clock_ops.take_unnamed(off, hdr.hv);
    }
    /* A slot found under the lock points at off, so the chunk holds the
     * item linked there now, which nobody writes without this lock: its
     * header, read now, is what every decision and count uses.  The peek
     * may have caught another item (or a torn hash of the same stripe),
     * so the lock is released by the hash it was taken with. */
    uint64_t locked_hv = hdr.hv;
    do_sample_unread(h, *locp);
    nitem_read_header(off, &hdr, clock_ops.header_bytes());
    bool taken = false;
    bool dead = clock_ops.is_dead(&hdr, *locp);
    if (!dead && hd_n_ref(*locp)) {
        *locp = hd_n_set_ref(*locp, false);
        h->st.second_chances++;
    } else if (dead || may_evict) {
        clock_ops.unlink(locp, hdr.hv, &hdr, dead);
        taken = true;
    }
    item_unlock(locked_hv);
    return taken;
}

/* Step pos to the next chunk of class id in zone order, wrapping round
 * the zone's pages; its offset in *at, and whether it is used in *used.
 * False when *page_steps ran out: every page boundary costs a step, so a
 * walk ends even when the class owns no page. */
static bool next_chunk(struct position *pos, unsigned int id, uint64_t pages,
                       uint64_t *page_steps, uint64_t *at, bool *used)
{
    unsigned int perslab = slabs_chunks_per_page(id);
    size_t psize = slabs_tier_page_size();
    while (*page_steps > 0) {
        if (pos->page >= pages) {
            pos->page = 0;
            pos->chunk = 0;
        }
        if (pos->chunk < perslab
                && slabs_tier_clsid(pos->page * psize) == id) {
            unsigned int c = pos->chunk++;
            *used = slabs_tier_chunk_used(pos->page, c);
            *at = pos->page * psize + (uint64_t)c * slabs_chunk_size(id);
            return true;
        }
        pos->page++;
        pos->chunk = 0;
        (*page_steps)--;
    }
    return false;
}

/* Move the hand over up to budget used chunks of class id (hand lock
 * held); true with the chunk at *off the caller's. */
static bool do_sweep(struct hand *h, unsigned int id, bool may_evict,
                     uint64_t budget, uint64_t pages, uint64_t *off)
{
    uint64_t page_steps = 2 * pages + 2;
    uint64_t at;
    bool used;
    while (budget > 0
           && next_chunk(&h->clock, id, pages, &page_steps, &at, &used)) {
        h->lead++;
        if (!used) {
            continue;
        }
        budget--;
        if (do_visit(h, at, may_evict)) {
            *off = at;
            return true;
        }
    }
    return false;
}

/* Who owns the used chunk at off, by the index (hand lock held; no item
 * lock is kept): an item a slot names, nobody known (its stripe was
 * busy), or no slot (a copy, or a chunk being written or freed).  *hv:
 * the hash its header gave, which take_unnamed needs. */
enum chunk_owner { CHUNK_ITEM, CHUNK_BUSY, CHUNK_UNNAMED };

static enum chunk_owner chunk_owner(struct hand *h, uint64_t off,
                                    uint64_t *hv)
{
    nitem_hdr hdr;
    bool busy;
    uint64_t *locp = do_lock_chunk(h, off, &hdr, &busy);
    *hv = hdr.hv;
    if (locp != NULL) {
        item_unlock(hdr.hv);
        return CHUNK_ITEM;
    }
    return busy ? CHUNK_BUSY : CHUNK_UNNAMED;
}

/* Give up every copy on the moving page of class id (its hand h held).
 * False when the page holds an item, or when a copy could not be taken
 * (its stripe busy: the caller's own, among others); the copies taken
 * are gone either way, so the next try has fewer to take. */
static bool empty_moving_page(struct hand *h, unsigned int id, uint64_t page)
{
    size_t psize = slabs_tier_page_size();
    unsigned int size = slabs_chunk_size(id);
    unsigned int perslab = slabs_chunks_per_page(id);
    bool left = false;
    for (unsigned int c = 0; c < perslab; c++) {
        if (!slabs_tier_chunk_used(page, c)) {
            continue;
        }
        uint64_t at = page * psize + (uint64_t)c * size;
        uint64_t hv;
        enum chunk_owner owner = chunk_owner(h, at, &hv);
        if (owner == CHUNK_ITEM) {
            return false;
        }
        if (owner == CHUNK_BUSY || !clock_ops.take_unnamed(at, hv)) {
            left = true;
            continue;
        }
        slabs_tier_free(at);
    }
    return !left && slabs_tier_move_emptied(page);
}

/* The seal word of every chunk the page will have as class `to`'s: zero,
 * so that a restart never reads the old class's bytes as a sealed item
 * of the new one.  nitem_unseal writes durably. */
static void clear_seals(uint64_t page, unsigned int to)
{
    size_t psize = slabs_tier_page_size();
    unsigned int size = slabs_chunk_size(to);
    unsigned int perslab = slabs_chunks_per_page(to);
    for (unsigned int c = 0; c < perslab; c++) {
        nitem_unseal(page * psize + (uint64_t)c * size);
    }
}

/* Copies before items, within a class too.  A copy holds nothing its D
 * item does not, so its chunk goes before any item is evicted; the hand
 * meets copies only in zone order and evicted items beside them (on
 * CacheLib's graph_cache_leader_fbobj model at D + N = 128 MB, 16,612
 * copies stayed among the classes' items while 61,428 items were
 * evicted).  The copy hand walks the class's used chunks from where it
 * stopped, reading no reference bit and clearing none, and takes the
 * first chunk no slot names that the engine gives up.  It looks only
 * while copies are at least 1/COPY_SHARE_MIN of the class's used chunks:
 * the hand passes each chunk once a turn and takes every copy it meets
 * (one a reclaim), so a reclaim reads about COPY_SHARE_MIN chunks or
 * fewer on average, however the copies lie (one search may read the
 * items between two runs of copies; COPY_LOOKS_MAX bounds it when the
 * copies it counts cannot be taken: their locks busy). */
#define COPY_SHARE_MIN 16
#define COPY_LOOKS_MAX 1024
/* chunks the CLOCK hand passes for each reclaim the copy hand serves:
 * about what it passes for an eviction (clock_examined over evictions
 * was 2.2 on the hit-ratio experiment's Zipf stream) */
#define CLOCK_STEPS_PER_COPY 2

static uint64_t copy_search_budget(unsigned int id)
{
    uint64_t copies = clock_ops.copies != NULL ? clock_ops.copies(id) : 0;
    uint64_t chunks = (uint64_t)slabs_tier_class_pages(id)
        * slabs_chunks_per_page(id);
    uint64_t free_chunks = slabs_tier_class_free_chunks(id);
    uint64_t used = chunks > free_chunks ? chunks - free_chunks : 0;
    if (copies == 0 || copies * COPY_SHARE_MIN < used) {
        return 0;
    }
    return used < COPY_LOOKS_MAX ? used : COPY_LOOKS_MAX;
}

static bool do_copy_sweep(struct hand *h, unsigned int id, uint64_t budget,
                          uint64_t *off)
{
    bool wrapped = false;
    while (budget > 0) {
        uint64_t at;
        if (!slabs_tier_next_used(id, &h->copy_cursor, &at)) {
            if (wrapped) {
                break;
            }
            wrapped = true;
            h->copy_cursor = 0;
            continue;
        }
        budget--;
        uint64_t hv;
        /* an item is the CLOCK's to judge, a busy stripe the next turn's */
        if (chunk_owner(h, at, &hv) == CHUNK_UNNAMED
                && clock_ops.take_unnamed(at, hv)) {
            *off = at;
            return true;
        }
    }
    return false;
}

/* A page of copies for class `to`, before any of its items is evicted.
 * N pages are given to classes as they first need one, and a store
 * writes a copy of a new key while D has room (items_ncopy.c), so a
 * class whose keys all fit in D (the smallest sizes of a mixed stream)
 * gets an N page that holds nothing but copies, for good: on a Zipf
 * stream over 2.5 times the cache, `-m 16 -o nvm_size=48m`, six such
 * pages were an eighth of the N-zone while the larger classes evicted
 * (doc/tiering.md "N copies").  Once the zone has no free page, such a
 * page goes to the class that would evict: taken off its class's free
 * stack, each copy on it given up (unsealed, its D item keeps the
 * value), the new class's seal words cleared (durably: a restart scan
 * then reads the page as free chunks of the new class), and its class
 * changed in the page table.  Anything but a copy on it (an item linked
 * or written meanwhile, a busy lock) leaves the page where it was.
 * hands[to].lock held; the old class's hand is trylocked, so its sweep
 * is never on the page while it moves. */
static bool do_take_copy_page(unsigned int to, uint64_t *off)
{
    unsigned int from = clock_ops.itemless_class != NULL
        ? clock_ops.itemless_class(to) : 0;
    if (from == 0 || from >= MAX_NUMBER_OF_SLAB_CLASSES
            || pthread_mutex_trylock(&hands[from].lock) != 0) {
        return false;
    }
    uint64_t page;
    bool moved = false;
    if (slabs_tier_move_begin(from, &page)) {
        if (empty_moving_page(&hands[from], from, page)) {
            clear_seals(page, to);
            moved = slabs_tier_move_end(page, to);
        } else {
            slabs_tier_move_end(page, from);
        }
    }
    pthread_mutex_unlock(&hands[from].lock);
    if (moved) {
        hands[to].st.pages_moved++;
    }
    return moved && slabs_tier_alloc(to, off);
}

/* Judge the used chunk at off for the probation hand (hand lock held):
 * an unread new item is evicted (or reclaimed, if dead), anything else
 * is left as it is.  True when the chunk is now the caller's. */
static bool do_probation_visit(struct hand *h, uint64_t off)
{
    nitem_hdr hdr;
    bool busy;
    uint64_t *locp = do_lock_chunk(h, off, &hdr, &busy);
    if (locp == NULL) {
        return false;           /* a copy is the copy hand's */
    }
    uint64_t locked_hv = hdr.hv;
    bool taken = clock_ops.unread(*locp);
    if (taken) {
        nitem_read_header(off, &hdr, clock_ops.header_bytes());
        clock_ops.unlink(locp, hdr.hv, &hdr, clock_ops.is_dead(&hdr, *locp));
        h->st.probation_evictions++;
    }
    item_unlock(locked_hv);
    return taken;
}

/* Move the probation hand of class id up to a third of a turn behind the
 * CLOCK hand (hand lock held); true with the chunk at *off the caller's.
 * Both hands walk the class's chunks in the same order, so `lead` (the
 * chunks the CLOCK hand passed that this one has not) is their distance;
 * a page that changed class meanwhile only shifts it, within a turn. */
static bool do_probation_sweep(struct hand *h, unsigned int id,
                               uint64_t pages, uint64_t *off)
{
    uint64_t turn = (uint64_t)slabs_tier_class_pages(id)
        * slabs_chunks_per_page(id);
    uint64_t lag = turn / PROBATION_LAG_DEN;
    if (h->lead > turn) {
        h->lead = turn;
    }
    uint64_t page_steps = 2 * pages + 2;
    uint64_t at;
    bool used;
    while (h->lead > lag
           && next_chunk(&h->probation, id, pages, &page_steps, &at, &used)) {
        h->lead--;
        if (used && do_probation_visit(h, at)) {
            *off = at;
            return true;
        }
    }
    return false;
}

static bool do_probation_due(const struct hand *h)
{
    return clock_ops.unread != NULL
        && h->unread_pct > PROBATION_SHARE_PCT;
}

bool clock_nvm_reclaim(unsigned int id, bool may_evict, uint64_t *off)
{
    if (id >= MAX_NUMBER_OF_SLAB_CLASSES || !slabs_tier_active()) {
        return false;
    }
    struct hand *h = &hands[id];
    bool found = false;

    pthread_mutex_lock(&h->lock);
    uint64_t pages = slabs_tier_pages_used();
    uint64_t turn = (uint64_t)slabs_tier_class_pages(id)
        * slabs_chunks_per_page(id);
    uint64_t flush = atomic_load_explicit(&flushes, memory_order_acquire);
    if (h->flush_swept != flush
            && atomic_load_explicit(&flush_from, memory_order_relaxed)
               <= current_time) {
        /* a turn for the flushed items first; none met, and none passed
         * over for a busy lock: done with them */
        uint64_t busy = h->st.busy;
        found = do_sweep(h, id, false, turn + 1, pages, off);
        if (!found && h->st.busy == busy) {
            h->flush_swept = flush;
        }
    }
    uint64_t copy_budget = found ? 0 : copy_search_budget(id);
    if (copy_budget > 0) {
        /* the hand keeps its pace: its passes are what age the items'
         * reference bits, and a copy taken instead of its sweep would
         * leave bits set since an earlier phase standing, for new keys
         * to be evicted first */
        found = do_sweep(h, id, false, CLOCK_STEPS_PER_COPY, pages, off)
            || do_copy_sweep(h, id, copy_budget, off);
    }
    if (!found && may_evict && slabs_tier_zone_full()) {
        found = do_take_copy_page(id, off);
    }
    if (!found && may_evict && do_probation_due(h)) {
        found = do_probation_sweep(h, id, pages, off);
    }
    if (!found) {
        /* Two turns of the class's chunks: the first may only clear
         * bits. */
        found = do_sweep(h, id, may_evict, 2 * turn + 1, pages, off);
    }
    pthread_mutex_unlock(&h->lock);
    return found;
}

void clock_nvm_get_stats(struct clock_nvm_stats *out)
{
    memset(out, 0, sizeof(*out));
    for (unsigned int id = 0; id < MAX_NUMBER_OF_SLAB_CLASSES; id++) {
        pthread_mutex_lock(&hands[id].lock);
        out->examined += hands[id].st.examined;
        out->second_chances += hands[id].st.second_chances;
        out->busy += hands[id].st.busy;
        out->pages_moved += hands[id].st.pages_moved;
        out->probation_evictions += hands[id].st.probation_evictions;
        pthread_mutex_unlock(&hands[id].lock);
    }
}
