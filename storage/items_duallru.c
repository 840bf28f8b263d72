/*
 * items_duallru.c: Fogcached's Dual-LRU (Ozawa et al., IEICE Trans. Inf.
 * & Syst. 2021, sections 4.2.2, 4.3.1 and 4.3.2; doc/tiering.md "Dual-LRU"),
 * tier_policy=duallru.  The rules are in items_duallru.h.
 *
 * Owns:
 *   - the N-zone's segmented LRU per slab class: HOT, WARM, COLD and Move
 *     to D, as doubly linked lists whose links live in NVM, in the last 16
 *     bytes of each item's chunk (nitem_trailer, slabs_tier.h), read and
 *     written through nvm.h so that every LRU maintenance write is
 *     counted, as it would land on DCPM in Fogcached (which keeps
 *     memcached's item header, LRU pointers included, in DCPM).  The list
 *     heads, tails and counts are in DRAM (memcached's heads/tails arrays
 *     are globals too).  The Active and Promote flags of an N item are in
 *     its NVM header (`lru`); Fetched stays in its location word;
 *   - the maintenance step (Fogcached's maintenance threads): the HOT and
 *     WARM tails of both zones, by the rules of items_duallru.h; in the
 *     D-zone also a small reserve of free chunks per class, kept by moving
 *     COLD tails to Move to N once the D-zone has no page left;
 *   - the migration step (Fogcached's migration threads): Move to N
 *     drained into the N-zone's COLD head (the engine's demotion), Move to
 *     D drained into the D-zone's HOT head (the engine's promotion, which
 *     may demote D's COLD tail to make room);
 *   - eviction in the N-zone (COLD tail first), which replaces the CLOCK
 *     under this policy.
 * The D-zone's segments are items_mq.c's queues in segmented mode (queue
 * number = enum dlru_seg); this file only decides where D items go.
 *
 * Locks:
 *   - nlru[id].lock guards class id's N lists: heads, tails, counts and the
 *     trailers of the items on them.  Every insert, remove or move of an N
 *     item is also made under that item's item lock (callers hold it; the
 *     steps here trylock it), so its list membership and its header flags
 *     change only under its item lock.  Order: item lock, then class lock;
 *     with a class lock held item locks are only trylocked.  An item on a
 *     list keeps its chunk (unlinking comes before freeing), so its hash
 *     can be read under the class lock to name its item lock.
 *   - The steps run in the tier thread (dlru_tick) with no lock held;
 *     counters are relaxed atomics.
 *
 * Deliberately different from Fogcached (doc/tiering.md "Dual-LRU"):
 *   - one tier thread runs both zones' maintenance and both migrations,
 *     every 1 ms while there is work and every 10 ms otherwise, instead
 *     of two maintenance and two migration threads;
 *   - a request that needs a D chunk when none is free does not wait for
 *     the migration step: the engine takes Move to N's tail (else COLD's)
 *     and demotes it itself, through the same code;
 *   - an item that becomes Active in COLD moves to WARM within the request
 *     (memcached 1.6 queues that bump for its maintainer);
 *   - segment shares are item counts (memcached 1.6 uses bytes) and there
 *     is no age limit on HOT (hot_max_factor).
 */
#include "config.h"
#include "items_duallru.h"

#include "hash_desc.h"
#include "items_mq.h"
#include "slabs.h"
#include "item.h"
#include "item_lock.h"
#include "slab_class.h"

#include <pthread.h>
#include <string.h>

/* Items a step handles per class and segment in one round, and list
 * tail items looked at when the tail's lock is busy. */
#define DLRU_BATCH 64
#define DLRU_TAIL_SEARCH 5

/* Trailer words: a list reference is offset / 8 + 1 (0 = none); the prev
 * word also holds the item's segment. */
#define REF_BITS 40
#define REF_MASK (((uint64_t)1 << REF_BITS) - 1)
#define SEG_SHIFT 60

struct nlru {
    pthread_mutex_t lock;
    uint64_t head[DLRU_SEGMENTS];
    uint64_t tail[DLRU_SEGMENTS];
    uint64_t count[DLRU_SEGMENTS];
};

static struct nlru nl[MAX_NUMBER_OF_SLAB_CLASSES];
static const struct tier_engine *engine;

static _Atomic uint64_t st_segment_moves;
static _Atomic uint64_t st_to_move_n;
static _Atomic uint64_t st_to_move_d;
static _Atomic uint64_t st_busy;

static void st_add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

void dlru_init(const struct tier_engine *e)
{
    engine = e;
    for (unsigned int i = 0; i < MAX_NUMBER_OF_SLAB_CLASSES; i++) {
        memset(nl[i].head, 0, sizeof(nl[i].head));
        memset(nl[i].tail, 0, sizeof(nl[i].tail));
        memset(nl[i].count, 0, sizeof(nl[i].count));
        pthread_mutex_init(&nl[i].lock, NULL);
    }
    dlru_reset_stats();
    mq_set_segmented(DLRU_SEGMENTS, DLRU_HOT, dlru_lru_segments);
}

/* ---- N lists (class lock held) ---- */

static uint64_t ref_of(uint64_t off)
{
    return (off >> 3) + 1;
}

static uint64_t off_of(uint64_t ref)
{
    return (ref - 1) << 3;
}

static void do_n_insert_head(struct nlru *c, enum dlru_seg seg, uint64_t off)
{
    uint64_t old = c->head[seg];
    nitem_trailer t = { (uint64_t)seg << SEG_SHIFT, old };
    nitem_trailer_write(off, &t);
    if (old != 0) {
        nitem_trailer_write_prev(off_of(old),
                                 ref_of(off) | (uint64_t)seg << SEG_SHIFT);
    } else {
        c->tail[seg] = ref_of(off);
    }
    c->head[seg] = ref_of(off);
    c->count[seg]++;
}

/* Unlinks the item at off; returns the segment it was in. */
static enum dlru_seg do_n_remove(struct nlru *c, uint64_t off)
{
    nitem_trailer t;
    nitem_trailer_read(off, &t);
    enum dlru_seg seg = (enum dlru_seg)((t.prev >> SEG_SHIFT) & 3);
    uint64_t prev = t.prev & REF_MASK;
    uint64_t next = t.next & REF_MASK;
    if (prev != 0) {
        nitem_trailer_write_next(off_of(prev), next);
    } else {
        c->head[seg] = next;
    }
    if (next != 0) {
        nitem_trailer_write_prev(off_of(next),
                                 prev | (uint64_t)seg << SEG_SHIFT);
    } else {
        c->tail[seg] = prev;
    }
    c->count[seg]--;
    return seg;
}

static enum dlru_seg do_n_segment(uint64_t off)
{
    nitem_trailer t;
    nitem_trailer_read(off, &t);
    return (enum dlru_seg)((t.prev >> SEG_SHIFT) & 3);
}

/* ---- N items (item lock held) ---- */

void dlru_n_link(unsigned int clsid, uint64_t off, enum dlru_seg seg)
{
    struct nlru *c = &nl[clsid];
    pthread_mutex_lock(&c->lock);
    do_n_insert_head(c, seg, off);
    pthread_mutex_unlock(&c->lock);
}

void dlru_n_unlink(unsigned int clsid, uint64_t off)
{
    struct nlru *c = &nl[clsid];
    pthread_mutex_lock(&c->lock);
    do_n_remove(c, off);
    pthread_mutex_unlock(&c->lock);
}

static void n_move(unsigned int clsid, uint64_t off, enum dlru_seg to)
{
    struct nlru *c = &nl[clsid];
    pthread_mutex_lock(&c->lock);
    do_n_remove(c, off);
    do_n_insert_head(c, to, off);
    pthread_mutex_unlock(&c->lock);
}

enum dlru_seg dlru_n_segment(unsigned int clsid, uint64_t off)
{
    struct nlru *c = &nl[clsid];
    pthread_mutex_lock(&c->lock);
    enum dlru_seg seg = do_n_segment(off);
    pthread_mutex_unlock(&c->lock);
    return seg;
}

void dlru_n_ref(unsigned int clsid, uint64_t off, uint32_t flags)
{
    if (flags == DLRU_FLAGS_UNKNOWN) {
        nitem_hdr h;
        nitem_read_header(off, &h, sizeof(h));
        flags = h.lru;
    }
    if ((flags & DLRU_PROMOTE) != 0) {
        return;                 /* nothing left to set: no NVM access */
    }
    struct dlru_step s;
    if ((flags & DLRU_ACTIVE) != 0) {
        s = dlru_on_ref(true, DLRU_HOT, flags);  /* the segment is moot */
    } else {
        s = dlru_on_ref(true, dlru_n_segment(clsid, off), flags);
        if (s.move) {
            n_move(clsid, off, s.to);
        }
    }
    if (s.flags != flags) {
        nitem_write_lru(off, s.flags);
    }
}

/* Claim one of the last DLRU_TAIL_SEARCH items of class id's segment seg
 * in the N-zone: true with its item lock held, *off, *hv, *locp and its
 * header *h set, and *dead telling whether it is expired or flushed.
 * Only dead items when dead_only. */
struct n_claim {
    uint64_t off;
    uint64_t hv;
    uint64_t *locp;
    nitem_hdr h;
    bool dead;
};

static bool n_claim_tail(unsigned int id, enum dlru_seg seg, bool dead_only,
                         struct n_claim *cl)
{
    struct nlru *c = &nl[id];
    bool claimed = false;
    pthread_mutex_lock(&c->lock);
    uint64_t ref = c->tail[seg];
    for (unsigned int i = 0; ref != 0 && i < DLRU_TAIL_SEARCH && !claimed;
            i++) {
        uint64_t off = off_of(ref);
        uint64_t hv;
        nitem_read_header(off, &cl->h, sizeof(hv));
        hv = cl->h.hv;
        if (item_trylock(hv) != 0) {
            st_add(&st_busy, 1);
        } else {
            uint64_t *locp = assoc_find_noff(hv, off);
            if (locp != NULL) {
                nitem_read_header(off, &cl->h, sizeof(cl->h));
                cl->dead = engine->n_is_dead(&cl->h, *locp);
                if (cl->dead || !dead_only) {
                    cl->off = off;
                    cl->hv = hv;
                    cl->locp = locp;
                    claimed = true;
                    break;
                }
            }
            item_unlock(hv);
        }
        nitem_trailer t;
        nitem_trailer_read(off, &t);
        ref = t.prev & REF_MASK;
    }
    pthread_mutex_unlock(&c->lock);
    return claimed;
}

bool dlru_n_reclaim(unsigned int id, bool may_evict, uint64_t *off)
{
    static const enum dlru_seg order[] = {
        DLRU_COLD, DLRU_WARM, DLRU_HOT, DLRU_MOVE
    };
    if (id >= MAX_NUMBER_OF_SLAB_CLASSES) {
        return false;
    }
    for (unsigned int i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        struct n_claim cl;
        if (n_claim_tail(id, order[i], !may_evict, &cl)) {
            engine->n_unlink(cl.locp, cl.hv, &cl.h, cl.dead);
            item_unlock(cl.hv);
            *off = cl.off;
            return true;
        }
    }
    return false;
}

/* ---- D items ---- */

void dlru_d_activated(item *it)
{
    struct dlru_step s = dlru_on_ref(false, (enum dlru_seg)it->mq_level, 0);
    if (s.move) {
        it->it_flags &= ~ITEM_ACTIVE;
        mq_move(it, s.to);
    }
}

/* ---- the maintenance step ---- */

static uint64_t n_count(unsigned int id, enum dlru_seg seg, uint64_t *total)
{
    struct nlru *c = &nl[id];
    pthread_mutex_lock(&c->lock);
    uint64_t n = c->count[seg];
    *total = c->count[DLRU_HOT] + c->count[DLRU_WARM] + c->count[DLRU_COLD]
        + c->count[DLRU_MOVE];
    pthread_mutex_unlock(&c->lock);
    return n;
}

static unsigned int n_maintain_segment(unsigned int id, enum dlru_seg seg)
{
    unsigned int done = 0;
    for (unsigned int i = 0; i < DLRU_BATCH; i++) {
        uint64_t total;
        uint64_t count = n_count(id, seg, &total);
        struct n_claim cl;
        if (count == 0 || !n_claim_tail(id, seg, false, &cl)) {
            break;
        }
        if (cl.dead) {
            engine->n_unlink(cl.locp, cl.hv, &cl.h, true);
            item_unlock(cl.hv);
            slabs_tier_free(cl.off);
            done++;
            continue;
        }
        struct dlru_step s = dlru_at_tail(true, seg, cl.h.lru,
                                          dlru_over(seg, count, total));
        if (s.move) {
            n_move(id, cl.off, s.to);
            if (s.flags != cl.h.lru) {
                nitem_write_lru(cl.off, s.flags);
            }
            st_add(s.to == DLRU_MOVE ? &st_to_move_d : &st_segment_moves, 1);
            done++;
        }
        item_unlock(cl.hv);
        if (!s.move) {
            break;
        }
    }
    return done;
}

static uint64_t d_total(unsigned int id)
{
    uint64_t total = 0;
    for (unsigned int q = 0; q < DLRU_SEGMENTS; q++) {
        total += mq_count(id, q);
    }
    return total;
}

/* A claimed D item (lock held, pinned) is done with. */
static void d_release(item *it, uint64_t hv)
{
    item_unlock(hv);
    engine->release(it);
}

static unsigned int d_maintain_segment(unsigned int id, enum dlru_seg seg)
{
    unsigned int done = 0;
    for (unsigned int i = 0; i < DLRU_BATCH; i++) {
        uint64_t hv;
        if (!dlru_over(seg, mq_count(id, seg), d_total(id))) {
            break;
        }
        item *it = mq_claim_tail(id, seg, NULL, NULL, &hv);
        if (it == NULL) {
            break;
        }
        if (engine->d_is_dead(it)) {
            engine->d_reclaim(it, hv);
        } else {
            uint32_t flags = (it->it_flags & ITEM_ACTIVE) ? DLRU_ACTIVE : 0;
            struct dlru_step s = dlru_at_tail(false, seg, flags, true);
            if ((s.flags & DLRU_ACTIVE) == 0) {
                it->it_flags &= ~ITEM_ACTIVE;
            }
            mq_move(it, s.to);
            st_add(&st_segment_moves, 1);
        }
        d_release(it, hv);
        done++;
    }
    return done;
}

/* Once the D-zone cannot grow, keep dlru_d_reserve() chunks of the class
 * free or on their way out: COLD tails go to Move to N. */
static unsigned int d_keep_reserve(unsigned int id, bool d_full)
{
    unsigned int reserve = dlru_d_reserve(slabs_chunks_per_page(id));
    unsigned int done = 0;
    if (!d_full || reserve == 0) {
        return 0;
    }
    while (done < DLRU_BATCH
            && slabs_class_free_chunks(id, SLAB_ZONE_DRAM)
               + mq_count(id, DLRU_MOVE) < reserve) {
        uint64_t hv;
        item *it = mq_claim_tail(id, DLRU_COLD, NULL, NULL, &hv);
        if (it == NULL) {
            break;
        }
        if (engine->d_is_dead(it)) {
            engine->d_reclaim(it, hv);
        } else {
            mq_move(it, DLRU_MOVE);
            st_add(&st_to_move_n, 1);
        }
        d_release(it, hv);
        done++;
    }
    return done;
}

/* ---- the migration step ---- */

static unsigned int d_migrate(unsigned int id)
{
    unsigned int done = 0;
    while (done < DLRU_BATCH) {
        uint64_t hv;
        item *it = mq_claim_tail(id, DLRU_MOVE, NULL, NULL, &hv);
        if (it == NULL) {
            break;
        }
        bool moved = true;
        if (engine->d_is_dead(it)) {
            engine->d_reclaim(it, hv);
        } else {
            moved = engine->demote(it, hv);
        }
        d_release(it, hv);
        if (!moved) {
            break;              /* the N-zone is full: next round */
        }
        done++;
    }
    return done;
}

/* Move to D's migration takes an item only while it is still there. */
static bool in_move_to_d(unsigned int clsid, uint64_t off)
{
    return dlru_n_segment(clsid, off) == DLRU_MOVE;
}

static unsigned int n_migrate(unsigned int id)
{
    struct nlru *c = &nl[id];
    unsigned int done = 0;
    for (unsigned int i = 0; i < DLRU_BATCH; i++) {
        nitem_hdr h;
        pthread_mutex_lock(&c->lock);
        uint64_t ref = c->tail[DLRU_MOVE];
        if (ref != 0) {
            nitem_read_header(off_of(ref), &h, sizeof(h.hv));
        }
        pthread_mutex_unlock(&c->lock);
        if (ref == 0) {
            break;
        }
        enum tier_promote_result r = engine->promote_at(h.hv, off_of(ref),
                                                        in_move_to_d);
        if (r == TIER_PROMOTE_STUCK) {
            break;
        }
        done += r == TIER_PROMOTE_DONE;
    }
    return done;
}

static bool d_zone_full(void)
{
    struct slabs_totals sl;
    slabs_get_totals(&sl);
    return sl.global_pool_pages == 0
        && sl.total_malloced + slabs_page_size() > sl.mem_limit;
}

unsigned int dlru_tick(void)
{
    unsigned int done = 0;
    bool d_full = d_zone_full();
    for (unsigned int id = POWER_SMALLEST; id <= slabs_largest_clsid();
            id++) {
        done += d_maintain_segment(id, DLRU_HOT);
        done += d_maintain_segment(id, DLRU_WARM);
        done += d_keep_reserve(id, d_full);
        done += n_maintain_segment(id, DLRU_HOT);
        done += n_maintain_segment(id, DLRU_WARM);
        done += d_migrate(id);
        done += n_migrate(id);
    }
    return done;
}

/* ---- stats ---- */

void dlru_get_class_stats(unsigned int clsid, struct dlru_class_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (clsid >= MAX_NUMBER_OF_SLAB_CLASSES) {
        return;
    }
    for (unsigned int q = 0; q < DLRU_SEGMENTS; q++) {
        out->d_seg[q] = mq_count(clsid, q);
    }
    pthread_mutex_lock(&nl[clsid].lock);
    memcpy(out->n_seg, nl[clsid].count, sizeof(out->n_seg));
    pthread_mutex_unlock(&nl[clsid].lock);
}

void dlru_get_stats(struct dlru_stats *out)
{
    memset(out, 0, sizeof(*out));
    for (unsigned int id = POWER_SMALLEST; id <= slabs_largest_clsid();
            id++) {
        struct dlru_class_stats cs;
        dlru_get_class_stats(id, &cs);
        out->move_to_n_len += cs.d_seg[DLRU_MOVE];
        out->move_to_d_len += cs.n_seg[DLRU_MOVE];
    }
    out->segment_moves = atomic_load(&st_segment_moves);
    out->to_move_n = atomic_load(&st_to_move_n);
    out->to_move_d = atomic_load(&st_to_move_d);
    out->busy = atomic_load(&st_busy);
}

void dlru_reset_stats(void)
{
    atomic_store(&st_segment_moves, 0);
    atomic_store(&st_to_move_n, 0);
    atomic_store(&st_to_move_d, 0);
    atomic_store(&st_busy, 0);
}
