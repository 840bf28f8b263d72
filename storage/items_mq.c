/*
 * items_mq.c: multi-queue (MQ) replacement for D-zone items.
 *
 * Owns, per slab class: Q (mq_queues()) doubly linked LRU queues (head = most
 * recently bumped), their item counts and the eviction skip counters.
 *
 * Locks: classes[id].lock guards the class's queues, the next/prev,
 * mq_level and ITEM_QUEUED of the items on them, and the counts (whose
 * non-empty queues `occupied` mirrors for mq_lowest_level, which reads it
 * without the lock).  Every
 * insert, remove or move of an item is also done under that item's item
 * lock (callers hold it; mq_pick_victim trylocks it), so holders of the item
 * lock can read the queue fields without the class lock.  Order: item lock
 * before class lock; with a class lock held only item_trylock is used.
 *
 * Segmented mode (tier_policy=duallru): the same queues hold Fogcached's
 * segments; items_duallru.c decides where an item goes and calls mq_move.
 *
 * memcached's segments (doc/tiering.md "Segments"), otherwise: queue 0 is
 * a FIFO of the keys not read since they were stored (a read moves a key
 * up, and nothing is put anywhere but at a head), so its COLD items, the
 * ones the LRU maintainer has moved out of HOT (ITEM_COLD), are the run
 * from its tail up to hot_tail, its HOT items the rest.  Moving HOT's
 * tail into COLD therefore keeps its place in the FIFO: the victim
 * searches see one queue 0, as before.  The queues above 0 are WARM.
 * hot_tail and the COLD count are guarded by the class lock; ITEM_COLD
 * changes under the class lock and the item lock, as the queue fields do.
 *
 * Placeholders (cursors of the crawler and metadump) sit in the queues as
 * item headers with slabs_clsid 0, which no real item has.
 *
 * Aging (mq_set_aging: the server without an N-zone, and in part
 * tier_policy=hotter; doc/tiering.md "Aging and probation").  The paper's
 * MQ (HMCached section 3.2, after Zhou et al.'s MQ buffer cache) evicts queue
 * 0 first and never looks above it while it holds anything: a new key,
 * whose counter is 1, only ever competes with other new keys, and a key
 * read a few times long ago keeps its queue for ever unless something
 * decays its counter (migrate.c's epochs, which need the tier thread and
 * run millions of requests apart).  Here the queues age by themselves, at
 * the pace of the class's evictions:
 *
 *   - Queue 0 is the probation queue, a FIFO: new keys enter at its head
 *     and a hit moves them up (counter 2: queue 1), as before.  Where
 *     victims leave the cache (no N-zone) it is evicted from only while it
 *     holds more than PROBATION_NUM / PROBATION_DEN of the class's items
 *     (and more than PROBATION_MIN), so that a new key survives about that
 *     share of the class's stores before it competes with anything
 *     (S3-FIFO, Yang et al. SOSP 2023, keeps 10% in its small queue; the
 *     share here was chosen by measurement, doc/tiering.md).  Where they
 *     are demoted (hotter) its tail goes first, as in the paper: a new key
 *     demoted loses nothing, and D is kept for what N's counters promote.
 *   - Otherwise the victim comes from the lowest non-empty queue above 0,
 *     by CLOCK: each counted access sets ITEM_REF on the item (items_d.c);
 *     a tail item with it set gets a second chance (cleared, to the head of
 *     its queue), one without it is the victim.
 *   - Where victims leave the cache, each victim search also moves a hand
 *     (under hotter there is none: D's counters must age as N's do, by
 *     the decay epochs, for its promotions to compare like with like)
 *     over the tail of every higher queue (2 and up), as MQ's "lifetime"
 *     demotion does: a tail item accessed since the hand last passed goes
 *     back to its queue's head, one that was not has its counter halved
 *     (at most to the top of the queue below) and drops to that queue's
 *     head.  An item nobody asks for any more thus loses a queue per
 *     pass, and a pass of a queue takes as many evictions as the queue
 *     holds items: a hot set that moved on is out within about one
 *     class's worth of evictions, as an LRU would have it, while a key
 *     asked for as often as its queue turns over keeps its place.  Where
 *     Zhou et al. time a lifetime in accesses, the pass is the clock here:
 *     it needs no timestamp in the item.  The hand visits the queues
 *     upward, so that an item it drops is not met again in the same
 *     pass.
 *   - Dead items (expired, flushed) that the hand or the scans meet are
 *     the victims before any live one: after a flush_all, stores reclaim
 *     the flushed items (at every queue's tail, where the old items are)
 *     instead of evicting the ones stored since.
 */
#include "config.h"
#include "items_mq.h"
#include "clock.h"
#include "hash.h"
#include "item.h"
#include "item_lock.h"
#include "settings.h"
#include "slab_class.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct mq_class {
    pthread_mutex_t lock;
    item *head[MQ_QUEUES_MAX];
    item *tail[MQ_QUEUES_MAX];
    uint64_t count[MQ_QUEUES_MAX];
    /* bit q set while count[q] > 0: changed under the lock, read without
     * it by mq_lowest_level, which every N hit under tier_policy=hotter
     * asks (the class lock is every store's and eviction's in the class) */
    _Atomic uint32_t occupied;
    item *hot_tail;              /* queue 0's HOT item nearest its tail */
    uint64_t cold;               /* queue 0's COLD items */
    uint64_t lrutail_reflocked;
    uint64_t lock_busy;
    uint64_t aged;               /* items the aging hand moved down */
    uint64_t moves_to_cold;
    uint64_t moves_to_warm;
    uint64_t moves_within_lru;
};

struct mq_cursor {
    item *node;                  /* the placeholder */
    unsigned int clsid;
    unsigned int level;
    bool queued;
};

/* Probation: queue 0 is evicted from only while it holds more than this
 * share of the class's items (see the top of the file). */
#define PROBATION_NUM 1
#define PROBATION_DEN 3
/* ... and more than this many: in a class of large items, whose pages hold
 * a few chunks each, a share would be one or two items, and a client that
 * stores a handful of values before it reads them would lose the first
 * ones to the next. */
#define PROBATION_MIN 16
/* Items of the main queue whose ITEM_REF a victim search may clear before
 * it takes the tail whatever its bit says. */
#define MAIN_SCAN 64

static struct mq_class classes[MAX_NUMBER_OF_SLAB_CLASSES];
static const struct mq_aging_ops *aging; /* NULL: the paper's MQ */

static unsigned int nqueues = MQ_QUEUES_DEFAULT;
static bool segmented;           /* queues are segments: see items_mq.h */
static unsigned int entry_level; /* segmented: where mq_link puts items */

uint8_t mq_queue_segment[MQ_QUEUES_MAX];

static bool is_placeholder(const item *it)
{
    return it->slabs_clsid == 0;
}

/* The next real item toward the head from it, or NULL. */
static item *real_prev(item *it)
{
    item *prev = it->prev;
    while (prev != NULL && is_placeholder(prev)) {
        prev = prev->prev;
    }
    return prev;
}

/* Does queue 0 have a HOT and a COLD part (see the top of the file)? */
static bool splits_queue0(void)
{
    return !segmented;
}

void mq_init(void)
{
    nqueues = settings.tier.mq_queues;
    if (nqueues == 0) {
        nqueues = MQ_QUEUES_DEFAULT;
    } else if (nqueues > MQ_QUEUES_MAX) {
        nqueues = MQ_QUEUES_MAX;
    }
    for (unsigned int i = 0; i < MAX_NUMBER_OF_SLAB_CLASSES; i++) {
        struct mq_class *cls = &classes[i];
        memset(cls->head, 0, sizeof(cls->head));
        memset(cls->tail, 0, sizeof(cls->tail));
        memset(cls->count, 0, sizeof(cls->count));
        atomic_store_explicit(&cls->occupied, 0, memory_order_relaxed);
        cls->hot_tail = NULL;
        cls->cold = 0;
        cls->lrutail_reflocked = 0;
        cls->lock_busy = 0;
        cls->aged = 0;
        cls->moves_to_cold = 0;
        cls->moves_to_warm = 0;
        cls->moves_within_lru = 0;
        pthread_mutex_init(&cls->lock, NULL);
    }
    mq_queue_segment[0] = LRU_HOT;
    for (unsigned int q = 1; q < MQ_QUEUES_MAX; q++) {
        mq_queue_segment[q] = LRU_WARM;
    }
    segmented = false;
    entry_level = 0;
    aging = NULL;
}

void mq_set_aging(const struct mq_aging_ops *ops)
{
    aging = ops;
}

void mq_set_segmented(unsigned int n, unsigned int entry,
                      const enum lru_segment *segments)
{
    nqueues = n < 2 ? 2 : n > MQ_QUEUES_MAX ? MQ_QUEUES_MAX : n;
    entry_level = entry < nqueues ? entry : nqueues - 1;
    for (unsigned int q = 0; q < nqueues; q++) {
        mq_queue_segment[q] = segments[q < n ? q : n - 1];
    }
    segmented = true;
}

unsigned int mq_queues(void)
{
    return nqueues;
}

unsigned int mq_level_for_counter(uint32_t counter)
{
    /* floor(log2(counter)), 0 for 0 and 1, at most Q - 1 */
    unsigned int level = counter > 1 ? 31u - (unsigned int)__builtin_clz(counter)
                                     : 0;
    return level < nqueues ? level : nqueues - 1;
}

/* ---- queue primitives (class lock held) ---- */

static void do_insert_head(struct mq_class *cls, unsigned int q, item *it)
{
    it->prev = NULL;
    it->next = cls->head[q];
    if (it->next != NULL) {
        it->next->prev = it;
    }
    cls->head[q] = it;
    if (cls->tail[q] == NULL) {
        cls->tail[q] = it;
    }
}

static void do_insert_tail(struct mq_class *cls, unsigned int q, item *it)
{
    it->next = NULL;
    it->prev = cls->tail[q];
    if (it->prev != NULL) {
        it->prev->next = it;
    }
    cls->tail[q] = it;
    if (cls->head[q] == NULL) {
        cls->head[q] = it;
    }
}

static void do_remove(struct mq_class *cls, unsigned int q, item *it)
{
    if (it->prev != NULL) {
        it->prev->next = it->next;
    } else {
        cls->head[q] = it->next;
    }
    if (it->next != NULL) {
        it->next->prev = it->prev;
    } else {
        cls->tail[q] = it->prev;
    }
    it->next = it->prev = NULL;
}

/* Queue `level` of cls became empty (occupied false) or not (class lock
 * held: the only writer). */
static void note_occupied(struct mq_class *cls, unsigned int level,
                          bool occupied)
{
    uint32_t bit = (uint32_t)1 << level;
    uint32_t v = atomic_load_explicit(&cls->occupied, memory_order_relaxed);
    atomic_store_explicit(&cls->occupied, occupied ? v | bit : v & ~bit,
                          memory_order_relaxed);
}

/* Put a real item at the head of queue `level` (queue 0: in HOT). */
static void do_enqueue(struct mq_class *cls, item *it, unsigned int level)
{
    it->mq_level = (uint8_t)level;
    do_insert_head(cls, level, it);
    if (cls->count[level]++ == 0) {
        note_occupied(cls, level, true);
    }
    it->it_flags = (uint16_t)((it->it_flags | ITEM_QUEUED) & ~ITEM_COLD);
    if (level == 0 && splits_queue0() && cls->hot_tail == NULL) {
        cls->hot_tail = it;
    }
}

static void do_dequeue(struct mq_class *cls, item *it)
{
    if (it->mq_level == 0 && splits_queue0()) {
        if (it->it_flags & ITEM_COLD) {
            cls->cold--;
        } else if (cls->hot_tail == it) {
            cls->hot_tail = real_prev(it);
        }
    }
    do_remove(cls, it->mq_level, it);
    if (--cls->count[it->mq_level] == 0) {
        note_occupied(cls, it->mq_level, false);
    }
    it->it_flags &= (uint16_t)~(ITEM_QUEUED | ITEM_COLD);
}

/* Move a queued item to the head of queue `level`, counting the move
 * between segments it makes. */
static void do_requeue(struct mq_class *cls, item *it, unsigned int level)
{
    enum lru_segment from = mq_segment(it);
    do_dequeue(cls, it);
    do_enqueue(cls, it, level);
    enum lru_segment to = mq_segment(it);
    if (to == LRU_WARM) {
        if (from != LRU_WARM) {
            cls->moves_to_warm++;
        } else if (segmented) {
            /* duallru rotating an active item through WARM */
            cls->moves_within_lru++;
        }
    } else if (to == LRU_COLD && from != LRU_COLD) {
        cls->moves_to_cold++;
    }
}

/* ---- aging (see the top of the file; class lock held) ---- */

static uint64_t do_class_items(const struct mq_class *cls)
{
    uint64_t n = 0;
    for (unsigned int q = 0; q < nqueues; q++) {
        n += cls->count[q];
    }
    return n;
}

static bool do_probation_full(const struct mq_class *cls)
{
    return !aging->probation || (cls->count[0] > PROBATION_MIN
        && cls->count[0] * PROBATION_DEN
           > do_class_items(cls) * PROBATION_NUM);
}

/* ---- item operations (item lock held by the caller) ---- */

void mq_link(item *it)
{
    struct mq_class *cls = &classes[it->slabs_clsid];
    /* a newly linked item has its first pass to come */
    it->it_flags |= ITEM_REF;
    pthread_mutex_lock(&cls->lock);
    if ((it->it_flags & ITEM_QUEUED) == 0) {
        do_enqueue(cls, it, segmented ? entry_level
                                      : mq_level_for_counter(it->counter));
    }
    pthread_mutex_unlock(&cls->lock);
}

void mq_unlink(item *it)
{
    struct mq_class *cls = &classes[it->slabs_clsid];
    pthread_mutex_lock(&cls->lock);
    if (it->it_flags & ITEM_QUEUED) {
        do_dequeue(cls, it);
    }
    pthread_mutex_unlock(&cls->lock);
}

/* mq_bump's move, kept out of line so that the common case, which
 * returns at once, saves no registers for it. */
static __attribute__((noinline)) void bump_move(item *it, unsigned int level)
{
    struct mq_class *cls = &classes[it->slabs_clsid];
    if (segmented) {
        /* no move: only the access time, at most once per interval */
        if (it->time + ITEM_UPDATE_INTERVAL <= current_time) {
            pthread_mutex_lock(&cls->lock);
            it->time = current_time;
            pthread_mutex_unlock(&cls->lock);
        }
        return;
    }
    pthread_mutex_lock(&cls->lock);
    if (it->mq_level == 0 && level != 0) {
        cls->moves_to_warm++;    /* out of queue 0, into WARM */
    }
    do_dequeue(cls, it);
    it->time = current_time;
    do_enqueue(cls, it, level);
    pthread_mutex_unlock(&cls->lock);
}

void mq_bump(item *it)
{
    unsigned int level = mq_level_for_counter(it->counter);
    /* The item lock makes mq_level and time stable here, so the common
     * case (bumped recently, still in the right queue) needs no lock. */
    if ((it->it_flags & ITEM_QUEUED) == 0
            || (level == it->mq_level
                && it->time + ITEM_UPDATE_INTERVAL > current_time)) {
        return;
    }
    bump_move(it, level);
}

bool mq_relevel(item *it, uint32_t counter)
{
    if (segmented) {
        return false;
    }
    unsigned int level = mq_level_for_counter(counter);
    if ((it->it_flags & ITEM_QUEUED) == 0 || level == it->mq_level) {
        return false;
    }
    struct mq_class *cls = &classes[it->slabs_clsid];
    pthread_mutex_lock(&cls->lock);
    do_requeue(cls, it, level);
    pthread_mutex_unlock(&cls->lock);
    return true;
}

void mq_move(item *it, unsigned int level)
{
    if (level >= nqueues) {
        return;
    }
    struct mq_class *cls = &classes[it->slabs_clsid];
    pthread_mutex_lock(&cls->lock);
    if (it->it_flags & ITEM_QUEUED) {
        do_requeue(cls, it, level);
    }
    pthread_mutex_unlock(&cls->lock);
}

void mq_take_place(item *old_it, item *new_it)
{
    struct mq_class *cls = &classes[old_it->slabs_clsid];
    pthread_mutex_lock(&cls->lock);
    if ((old_it->it_flags & ITEM_QUEUED) && (new_it->it_flags & ITEM_QUEUED) == 0
            && new_it->slabs_clsid == old_it->slabs_clsid) {
        unsigned int q = old_it->mq_level;
        new_it->mq_level = (uint8_t)q;
        new_it->prev = old_it->prev;
        new_it->next = old_it->next;
        if (new_it->prev != NULL) {
            new_it->prev->next = new_it;
        } else {
            cls->head[q] = new_it;
        }
        if (new_it->next != NULL) {
            new_it->next->prev = new_it;
        } else {
            cls->tail[q] = new_it;
        }
        if (cls->hot_tail == old_it) {
            cls->hot_tail = new_it;
        }
        uint16_t moved = old_it->it_flags & (ITEM_QUEUED | ITEM_COLD);
        new_it->it_flags = (uint16_t)((new_it->it_flags & ~ITEM_COLD) | moved);
        old_it->it_flags &= (uint16_t)~(ITEM_QUEUED | ITEM_COLD);
        old_it->next = old_it->prev = NULL;
    }
    pthread_mutex_unlock(&cls->lock);
}

uint64_t mq_count(unsigned int clsid, unsigned int level)
{
    if (level >= nqueues) {
        return 0;
    }
    struct mq_class *cls = &classes[clsid];
    pthread_mutex_lock(&cls->lock);
    uint64_t n = cls->count[level];
    pthread_mutex_unlock(&cls->lock);
    return n;
}

/* Without the class lock: the answer may be a store or an eviction old,
 * which a promotion decision can afford (the tier thread asks again when
 * it promotes). */
unsigned int mq_lowest_level(unsigned int clsid)
{
    uint32_t occupied = atomic_load_explicit(&classes[clsid].occupied,
                                             memory_order_relaxed);
    return occupied == 0 ? MQ_NO_LEVEL
                         : (unsigned int)__builtin_ctz(occupied);
}

/* ---- eviction ---- */

/* A reference on a queued item: safe without the item lock because the
 * index's reference cannot go while the item is queued and we hold the
 * class lock (unlink dequeues before it drops that reference). */
static uint16_t pin(item *it)
{
    return atomic_fetch_add_explicit(&it->refcount, 1,
                                     memory_order_acq_rel) + 1;
}

static void unpin_queued(item *it)
{
    atomic_fetch_sub_explicit(&it->refcount, 1, memory_order_acq_rel);
}

/* Try to claim one candidate; true with its item lock held and pinned. */
static bool try_claim(struct mq_class *cls, item *it, mq_accept_fn accept,
                      void *arg, uint64_t *hv_out)
{
    uint64_t hv = hash_key(ITEM_key(it), it->nkey);
    if (item_trylock(hv) != 0) {
        cls->lock_busy++;
        return false;
    }
    if (pin(it) > 2) {
        /* Someone besides the index is using it (a reply in flight). */
        unpin_queued(it);
        item_unlock(hv);
        cls->lrutail_reflocked++;
        return false;
    }
    if (accept != NULL && !accept(it, arg)) {
        unpin_queued(it);
        item_unlock(hv);
        return false;
    }
    *hv_out = hv;
    return true;
}

/* The first claimable item among queue q's last MQ_TAIL_SEARCH (class
 * lock held). */
static item *do_claim_within(struct mq_class *cls, unsigned int q,
                             unsigned int search, mq_accept_fn accept,
                             void *arg, uint64_t *hv_out)
{
    unsigned int examined = 0;
    for (item *it = cls->tail[q]; it != NULL && examined < search;
            it = it->prev) {
        if (is_placeholder(it)) {
            continue;
        }
        examined++;
        if (try_claim(cls, it, accept, arg, hv_out)) {
            return it;
        }
    }
    return NULL;
}

static item *do_claim_tail(struct mq_class *cls, unsigned int q,
                           mq_accept_fn accept, void *arg, uint64_t *hv_out)
{
    return do_claim_within(cls, q, MQ_TAIL_SEARCH, accept, arg, hv_out);
}

/* ---- aging: the victim search (class lock held) ---- */

/* The real item nearest the tail of queue q, or NULL. */
static item *do_real_tail(const struct mq_class *cls, unsigned int q)
{
    item *it = cls->tail[q];
    while (it != NULL && is_placeholder(it)) {
        it = it->prev;
    }
    return it;
}

/* A pass found it idle (its item lock held): half its counter, at most the
 * top of the queue below its own, and the head of the queue that calls
 * for. */
static void do_age_down(struct mq_class *cls, item *it)
{
    uint32_t old = it->counter;
    uint32_t top_below = (1u << it->mq_level) - 1;
    uint32_t c = old >> 1;
    it->counter = (uint16_t)(c < top_below ? c : top_below);
    do_dequeue(cls, it);
    do_enqueue(cls, it, mq_level_for_counter(it->counter));
    cls->aged++;
    if (aging->recounted != NULL) {
        aging->recounted(it, old);
    }
}

/* A second chance: accessed since the last pass (its item lock held). */
static void do_rotate(struct mq_class *cls, item *it)
{
    it->it_flags &= ~ITEM_REF;
    unsigned int level = it->mq_level;
    do_dequeue(cls, it);
    do_enqueue(cls, it, level);
    cls->moves_within_lru++;
}

/* Claim `it`, whose item lock we hold, as the victim: pinned and accepted,
 * or false (its lock then released). */
static bool do_claim_locked(struct mq_class *cls, item *it,
                            mq_accept_fn accept, void *arg)
{
    if (pin(it) > 2) {
        unpin_queued(it);
        cls->lrutail_reflocked++;
        return false;
    }
    if (accept != NULL && !accept(it, arg)) {
        unpin_queued(it);
        return false;
    }
    return true;
}

/* The hand over the tail of every queue above 0: a dead item there is
 * claimed as the victim (the hand stops); in queues 2 and up a live one is
 * rotated or aged down (queue 1's are the victim search's). */
static item *do_age_tails(struct mq_class *cls, mq_accept_fn accept,
                          void *arg, uint64_t *hv_out)
{
    /* upward, so that an item dropped into the queue below is not met
     * again in the same pass */
    for (unsigned int q = 1; q < nqueues; q++) {
        item *it = do_real_tail(cls, q);
        if (it == NULL) {
            continue;
        }
        uint64_t hv = hash_key(ITEM_key(it), it->nkey);
        if (item_trylock(hv) != 0) {
            cls->lock_busy++;
            continue;
        }
        if (aging->is_dead(it)) {
            if (do_claim_locked(cls, it, accept, arg)) {
                *hv_out = hv;
                return it;
            }
        } else if (q >= 2 && aging->hand) {
            if (it->it_flags & ITEM_REF) {
                do_rotate(cls, it);
            } else {
                do_age_down(cls, it);
            }
        }
        item_unlock(hv);
    }
    return NULL;
}

/* CLOCK over the lowest non-empty queue above 0: the first tail item that
 * is dead or was not accessed since the last pass, rotating those that
 * were.  After MAIN_SCAN rotations the tail goes whatever its bit says:
 * probation is under its share, so the main queues must give an item up
 * (bits a long quiet spell left set would otherwise keep every old item
 * above the new ones until the hand has been round). */
static item *do_claim_main(struct mq_class *cls, mq_accept_fn accept,
                           void *arg, uint64_t *hv_out)
{
    unsigned int q = 1;
    while (q < nqueues && cls->count[q] == 0) {
        q++;
    }
    if (q == nqueues) {
        return NULL;
    }
    unsigned int rotated = 0, examined = 0;
    item *it = do_real_tail(cls, q);
    while (it != NULL && examined < MAIN_SCAN + MQ_TAIL_SEARCH) {
        examined++;
        uint64_t hv = hash_key(ITEM_key(it), it->nkey);
        if (item_trylock(hv) != 0) {
            cls->lock_busy++;
            it = real_prev(it);
            continue;
        }
        if ((it->it_flags & ITEM_REF) && rotated < MAIN_SCAN
                && !aging->is_dead(it)) {
            do_rotate(cls, it);
            item_unlock(hv);
            rotated++;
            it = do_real_tail(cls, q);
            continue;
        }
        if (do_claim_locked(cls, it, accept, arg)) {
            *hv_out = hv;
            return it;
        }
        item_unlock(hv);
        it = real_prev(it);
    }
    return NULL;
}

static item *do_pick_aged(struct mq_class *cls, mq_accept_fn accept,
                          void *arg, uint64_t *hv_out)
{
    item *victim = do_age_tails(cls, accept, arg, hv_out);
    if (victim == NULL && (cls->count[0] == 0 || !do_probation_full(cls))) {
        victim = do_claim_main(cls, accept, arg, hv_out);
    }
    /* probation's turn, or nothing else would go: the paper's order */
    for (unsigned int q = 0; q < nqueues && victim == NULL; q++) {
        victim = do_claim_tail(cls, q, accept, arg, hv_out);
    }
    return victim;
}

item *mq_pick_victim(unsigned int clsid, mq_accept_fn accept, void *arg,
                     uint64_t *hv_out)
{
    struct mq_class *cls = &classes[clsid];
    item *victim = NULL;

    pthread_mutex_lock(&cls->lock);
    if (aging != NULL && !segmented) {
        victim = do_pick_aged(cls, accept, arg, hv_out);
    } else {
        for (unsigned int q = 0; q < nqueues && victim == NULL; q++) {
            victim = do_claim_tail(cls, q, accept, arg, hv_out);
        }
    }
    if (victim != NULL && mq_segment(victim) != LRU_COLD) {
        /* memcached takes its victims from COLD: a HOT or WARM one is
         * moved there on its way out */
        cls->moves_to_cold++;
    }
    pthread_mutex_unlock(&cls->lock);
    return victim;
}

static item *claim_within(unsigned int clsid, unsigned int level,
                          unsigned int search, mq_accept_fn accept, void *arg,
                          uint64_t *hv_out)
{
    if (level >= nqueues) {
        return NULL;
    }
    struct mq_class *cls = &classes[clsid];
    pthread_mutex_lock(&cls->lock);
    item *it = do_claim_within(cls, level, search, accept, arg, hv_out);
    pthread_mutex_unlock(&cls->lock);
    return it;
}

item *mq_claim_tail(unsigned int clsid, unsigned int level,
                    mq_accept_fn accept, void *arg, uint64_t *hv_out)
{
    return claim_within(clsid, level, MQ_TAIL_SEARCH, accept, arg, hv_out);
}

item *mq_claim_last(unsigned int clsid, unsigned int level,
                    mq_accept_fn accept, void *arg, uint64_t *hv_out)
{
    return claim_within(clsid, level, 1, accept, arg, hv_out);
}

unsigned int mq_pin_range(unsigned int clsid, const void *start,
                          const void *end, item **out, unsigned int max)
{
    struct mq_class *cls = &classes[clsid];
    unsigned int n = 0;
    const char *lo = start, *hi = end;

    pthread_mutex_lock(&cls->lock);
    for (unsigned int q = 0; q < nqueues && n < max; q++) {
        for (item *it = cls->head[q]; it != NULL && n < max; it = it->next) {
            const char *p = (const char *)it;
            if (!is_placeholder(it) && p >= lo && p < hi) {
                pin(it);
                out[n++] = it;
            }
        }
    }
    pthread_mutex_unlock(&cls->lock);
    return n;
}

void mq_for_each(unsigned int clsid, mq_visit_fn visit, void *arg)
{
    struct mq_class *cls = &classes[clsid];
    pthread_mutex_lock(&cls->lock);
    for (unsigned int q = 0; q < nqueues; q++) {
        for (item *it = cls->head[q]; it != NULL; it = it->next) {
            if (!is_placeholder(it) && !visit(it, q, arg)) {
                pthread_mutex_unlock(&cls->lock);
                return;
            }
        }
    }
    pthread_mutex_unlock(&cls->lock);
}

/* ---- cursors ---- */

struct mq_cursor *mq_cursor_new(void)
{
    struct mq_cursor *cur = calloc(1, sizeof(*cur));
    if (cur == NULL) {
        return NULL;
    }
    cur->node = calloc(1, sizeof(item));
    if (cur->node == NULL) {
        free(cur);
        return NULL;
    }
    return cur;
}

void mq_cursor_free(struct mq_cursor *cur)
{
    if (cur == NULL) {
        return;
    }
    mq_cursor_stop(cur);
    free(cur->node);
    free(cur);
}

void mq_cursor_start(struct mq_cursor *cur, unsigned int clsid,
                     unsigned int level)
{
    mq_cursor_stop(cur);
    struct mq_class *cls = &classes[clsid];
    cur->clsid = clsid;
    cur->level = level;
    pthread_mutex_lock(&cls->lock);
    do_insert_tail(cls, level, cur->node);
    cur->queued = true;
    pthread_mutex_unlock(&cls->lock);
}

item *mq_cursor_next(struct mq_cursor *cur)
{
    if (!cur->queued) {
        return NULL;
    }
    struct mq_class *cls = &classes[cur->clsid];
    item *found = NULL;

    pthread_mutex_lock(&cls->lock);
    item *it = cur->node->prev;
    while (it != NULL && is_placeholder(it)) {
        it = it->prev;
    }
    do_remove(cls, cur->level, cur->node);
    if (it == NULL) {
        cur->queued = false;
    } else {
        /* Step over it: the placeholder goes just before (headward of) it. */
        item *node = cur->node;
        node->next = it;
        node->prev = it->prev;
        if (it->prev != NULL) {
            it->prev->next = node;
        } else {
            cls->head[cur->level] = node;
        }
        it->prev = node;
        pin(it);
        found = it;
    }
    pthread_mutex_unlock(&cls->lock);
    return found;
}

void mq_cursor_stop(struct mq_cursor *cur)
{
    if (cur == NULL || !cur->queued) {
        return;
    }
    struct mq_class *cls = &classes[cur->clsid];
    pthread_mutex_lock(&cls->lock);
    do_remove(cls, cur->level, cur->node);
    cur->queued = false;
    pthread_mutex_unlock(&cls->lock);
}

/* ---- HOT to COLD (the LRU maintainer) ---- */

/* Should HOT's tail item (age seconds old, hot items of the class's
 * total) go to COLD?  memcached's rule, with shares counted in items. */
static bool hot_tail_leaves(uint64_t hot, uint64_t total, rel_time_t age,
                            rel_time_t cold_age)
{
    /* `lru mode flat`: memcached keeps nothing in HOT */
    uint64_t pct = settings.lru_segmented ? (uint64_t)settings.hot_lru_pct
                                          : 0;
    double max_age = (double)cold_age * settings.hot_max_factor;
    return hot * 100 > total * pct || (double)age > max_age;
}

unsigned int mq_age_hot(unsigned int clsid, unsigned int max)
{
    if (!splits_queue0()) {
        return 0;
    }
    struct mq_class *cls = &classes[clsid];
    rel_time_t now = current_time;
    unsigned int moved = 0;

    pthread_mutex_lock(&cls->lock);
    uint64_t total = do_class_items(cls);
    rel_time_t cold_age = 0;
    item *cold_tail = cls->cold > 0 ? do_real_tail(cls, 0) : NULL;
    if (cold_tail != NULL && now > cold_tail->time) {
        cold_age = now - cold_tail->time;
    }
    while (moved < max && cls->hot_tail != NULL) {
        item *it = cls->hot_tail;
        rel_time_t age = now > it->time ? now - it->time : 0;
        if (!hot_tail_leaves(cls->count[0] - cls->cold, total, age,
                             cold_age)) {
            break;
        }
        /* an item lock held elsewhere stops the move until the next
         * round: COLD must stay the run at queue 0's tail */
        uint64_t hv = hash_key(ITEM_key(it), it->nkey);
        if (item_trylock(hv) != 0) {
            cls->lock_busy++;
            break;
        }
        it->it_flags |= ITEM_COLD;
        cls->cold++;
        cls->hot_tail = real_prev(it);
        cls->moves_to_cold++;
        item_unlock(hv);
        moved++;
    }
    pthread_mutex_unlock(&cls->lock);
    return moved;
}

/* ---- stats ---- */

static void segment_add(struct mq_segment_stats *seg, uint64_t count,
                        const item *tail)
{
    seg->count += count;
    if (tail != NULL && (!seg->any || tail->time < seg->oldest)) {
        seg->oldest = tail->time;
        seg->any = true;
    }
}

/* Each queue counted in its segment, queue 0 split between HOT and COLD
 * (class lock held). */
static void do_segment_stats(struct mq_class *cls, struct mq_class_stats *out)
{
    unsigned int first = 0;
    if (splits_queue0()) {
        segment_add(&out->segment[LRU_HOT], cls->count[0] - cls->cold,
                    cls->hot_tail);
        segment_add(&out->segment[LRU_COLD], cls->cold,
                    cls->cold > 0 ? do_real_tail(cls, 0) : NULL);
        first = 1;
    }
    for (unsigned int q = first; q < nqueues; q++) {
        segment_add(&out->segment[mq_queue_segment[q]], cls->count[q],
                    do_real_tail(cls, q));
    }
}

void mq_get_class_stats(unsigned int clsid, struct mq_class_stats *out)
{
    struct mq_class *cls = &classes[clsid];
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&cls->lock);
    for (unsigned int q = 0; q < nqueues; q++) {
        out->count[q] = cls->count[q];
        item *it = do_real_tail(cls, q);
        out->tail_time[q] = it != NULL ? it->time : 0;
    }
    do_segment_stats(cls, out);
    out->lrutail_reflocked = cls->lrutail_reflocked;
    out->lock_busy = cls->lock_busy;
    out->aged = cls->aged;
    out->moves_to_cold = cls->moves_to_cold;
    out->moves_to_warm = cls->moves_to_warm;
    out->moves_within_lru = cls->moves_within_lru;
    pthread_mutex_unlock(&cls->lock);
}

void mq_reset_class_stats(void)
{
    for (unsigned int i = 0; i < MAX_NUMBER_OF_SLAB_CLASSES; i++) {
        pthread_mutex_lock(&classes[i].lock);
        classes[i].lrutail_reflocked = 0;
        classes[i].lock_busy = 0;
        classes[i].aged = 0;
        classes[i].moves_to_cold = 0;
        classes[i].moves_to_warm = 0;
        classes[i].moves_within_lru = 0;
        pthread_mutex_unlock(&classes[i].lock);
    }
}
