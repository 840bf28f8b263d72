/*
 * items_mq.h: multi-queue replacement for D-zone items (items_mq.c).
 *
 * Each slab class keeps Q LRU queues, Q = settings.tier.mq_queues (1 to
 * MQ_QUEUES_MAX, 8 by default as in the paper).  An item whose access
 * counter lies in [2^i, 2^(i+1)) belongs in queue i (counters 0 and 1 in
 * queue 0, everything from 2^(Q-1) up in the last queue).  A hit moves the
 * item to the head of its queue, at most once per ITEM_UPDATE_INTERVAL
 * unless its counter reached a new queue.  Eviction takes the tail of
 * queue 0 first, then queue 1, and so on.
 *
 * Segmented mode (mq_set_segmented, tier_policy=duallru): the queues are
 * Fogcached's segments (items_duallru.h); the caller says which queue an
 * item goes to (mq_move), new links go to the entry queue, and counters
 * choose nothing (mq_relevel does nothing, mq_bump only refreshes the
 * item's access time once per ITEM_UPDATE_INTERVAL).  Eviction order is
 * unchanged: queue 0's tail first.
 *
 * memcached's segments (HOT, WARM, COLD; doc/tiering.md "Segments"):
 * queue 0 is a FIFO of the keys not read since they were stored, its head
 * part HOT and its tail part COLD; the LRU maintainer moves HOT's tail
 * into COLD as memcached's does (mq_age_hot), which leaves its place in
 * the FIFO as it was; the queues above 0 are WARM.  In segmented mode
 * each queue is the segment the caller maps it to.  The moves between
 * segments are counted (moves_to_cold, moves_to_warm, moves_within_lru).
 *
 * Locks: one mutex per class guards its queues, the queue links of its
 * items (next/prev, mq_level, ITEM_QUEUED) and its counts.  Every change of
 * an item's queue position is made with the item's item lock held as well,
 * so a holder of either lock may read the queue fields.  Lock order: item
 * lock, then class lock; code holding a class lock only ever trylocks item
 * locks.
 */
#ifndef ITEMS_MQ_H
#define ITEMS_MQ_H

#include "clock.h"
#include "item.h"
#include "storage_worker.h"

#define MQ_QUEUES_MAX 16
#define MQ_QUEUES_DEFAULT 8
/* Items examined per queue tail when looking for a victim, as memcached
 * examines a few tail items before giving up on an LRU. */
#define MQ_TAIL_SEARCH 5

/* Q from settings.tier.mq_queues (0 means MQ_QUEUES_DEFAULT). */
void mq_init(void);
/* Q, the number of queues per class in use. */
unsigned int mq_queues(void);

/* Aging and probation (items_mq.c's top comment, doc/tiering.md "Aging
 * and probation"): victims by probation share, CLOCK over the main queues
 * and a hand that moves idle items down a queue per pass.  The engine
 * says which items are dead, and hears of every counter the hand changes
 * (old is the counter before; the item lock is held). */
struct mq_aging_ops {
    bool (*is_dead)(const item *it);
    void (*recounted)(item *it, uint32_t old);
    /* keep new keys on probation (queue 0 evicted from only over its
     * share); false: queue 0's tail goes first, as in the paper */
    bool probation;
    /* the hand ages idle items down a queue (their counters halved); false:
     * only dead items are taken at the higher queues' tails */
    bool hand;
};
/* ops NULL: the paper's MQ (the default after mq_init).  Call after
 * mq_init, before any item is linked; the ops must outlive the queues. */
void mq_set_aging(const struct mq_aging_ops *ops);

/* Segmented mode: n queues (2..MQ_QUEUES_MAX), new links at the head of
 * queue `entry`, queue q being memcached's segment segments[q] in the
 * stats.  Call after mq_init, before any item is linked. */
void mq_set_segmented(unsigned int n, unsigned int entry,
                      const enum lru_segment *segments);

/* The queue a counter belongs in. */
unsigned int mq_level_for_counter(uint32_t counter);

/* The caller holds the item lock of `it` for all of these. */
void mq_link(item *it);          /* head of its counter's queue */
void mq_unlink(item *it);        /* no-op if not queued */
/* After an access (the caller already counted it): move to the head of
 * the counter's queue, unless bumped within ITEM_UPDATE_INTERVAL and still
 * in the right queue; in that case no lock is taken. */
void mq_bump(item *it);
/* Move to the queue `counter` calls for (the decay walker passes the
 * item's decayed counter); keeps it->time.  Returns true if it moved. */
bool mq_relevel(item *it, uint32_t counter);

/* new_it, not queued, takes queued old_it's place in its queue (same
 * class, same key: the caller holds their item lock); old_it is left off
 * every queue.  No-op otherwise. */
void mq_take_place(item *old_it, item *new_it);

/* Segmented mode: move a queued item to the head of queue `level` (the
 * caller holds its item lock).  No-op if it is not queued. */
void mq_move(item *it, unsigned int level);
/* Items in queue `level` of class clsid. */
uint64_t mq_count(unsigned int clsid, unsigned int level);
/* The lowest queue of class clsid that holds an item, or MQ_NO_LEVEL;
 * takes no lock, so it may be a store or an eviction behind. */
#define MQ_NO_LEVEL UINT32_MAX
unsigned int mq_lowest_level(unsigned int clsid);

/* Eviction: the first acceptable item scanning queue 0 upward, each queue
 * from its tail, looking at up to MQ_TAIL_SEARCH items per queue.  Skips
 * items whose item lock is busy (item_trylock) and items other threads
 * hold references to (refcount above the index's one).  accept (may be
 * NULL) can refuse candidates, e.g. to take only expired ones.
 * The victim comes back with its item lock held, *hv_out set, and one extra
 * reference (a pin) that the caller drops with item_remove() after
 * unlinking it and unlocking.  The class lock is not held on return. */
typedef bool (*mq_accept_fn)(item *it, void *arg);
item *mq_pick_victim(unsigned int clsid, mq_accept_fn accept, void *arg,
                     uint64_t *hv_out);

/* The same restricted to queue `level` (segment maintenance: memcached's
 * lru_pull_tail looks at one LRU's tail the same way). */
item *mq_claim_tail(unsigned int clsid, unsigned int level,
                    mq_accept_fn accept, void *arg, uint64_t *hv_out);
/* The same looking at the tail item only: memcached's pull of a dead item
 * before each allocation (flat LRU) stops at the first live one. */
item *mq_claim_last(unsigned int clsid, unsigned int level,
                    mq_accept_fn accept, void *arg, uint64_t *hv_out);

/* Pin (take a reference to) up to max queued items of class clsid whose
 * chunk lies in [start, end) (page reassignment).  No item lock is taken;
 * callers lock and re-check each item. */
unsigned int mq_pin_range(unsigned int clsid, const void *start,
                          const void *end, item **out, unsigned int max);

/* Read-only walk of a class, queue 0 first, head to tail within a queue,
 * under the class lock.  Stop by returning false.  The visitor may read
 * the item's key, sizes, time and (with an atomic load) exptime. */
typedef bool (*mq_visit_fn)(item *it, unsigned int level, void *arg);
void mq_for_each(unsigned int clsid, mq_visit_fn visit, void *arg);

/* Cursors walk a queue from tail to head without holding the class lock
 * between items (crawler, metadump).  A cursor is a placeholder in the
 * queue; every walker skips placeholders. */
struct mq_cursor;
struct mq_cursor *mq_cursor_new(void);
void mq_cursor_free(struct mq_cursor *cur);
void mq_cursor_start(struct mq_cursor *cur, unsigned int clsid,
                     unsigned int level);
/* The next item toward the head, pinned (release with item_remove()), or
 * NULL at the head (the cursor then leaves the queue). */
item *mq_cursor_next(struct mq_cursor *cur);
void mq_cursor_stop(struct mq_cursor *cur);

/* ---- segments ---- */

/* The segment of each queue (queue 0 also holds COLD items: ITEM_COLD);
 * set up by mq_init and mq_set_segmented, read-only afterwards. */
extern uint8_t mq_queue_segment[MQ_QUEUES_MAX];

/* The segment `it` is in (its item lock held); an item in no queue (an
 * N item's snapshot) is in the cache's cold tier.  Inline: every hit
 * asks (hits_to_*). */
static inline enum lru_segment mq_segment(const item *it)
{
    if ((it->it_flags & (ITEM_QUEUED | ITEM_COLD)) != ITEM_QUEUED) {
        return LRU_COLD;
    }
    return (enum lru_segment)mq_queue_segment[it->mq_level];
}

/* The LRU maintainer's turn at class clsid: while HOT holds more than
 * hot_lru_pct of the class's items (none with `lru mode flat`), or its
 * tail item is older than hot_max_factor times COLD's tail item, move
 * HOT's tail into COLD, at most max items.  Nothing in segmented mode.
 * Returns how many moved.  Call without item locks. */
unsigned int mq_age_hot(unsigned int clsid, unsigned int max);

struct mq_segment_stats {
    uint64_t count;
    rel_time_t oldest;           /* time of its oldest tail item */
    bool any;
};

struct mq_class_stats {
    uint64_t count[MQ_QUEUES_MAX];
    rel_time_t tail_time[MQ_QUEUES_MAX];  /* time of the tail item; 0 if empty */
    struct mq_segment_stats segment[LRU_SEGMENTS];
    uint64_t lrutail_reflocked;       /* candidates skipped: referenced */
    uint64_t lock_busy;               /* candidates skipped: lock busy */
    uint64_t aged;                    /* moved down a queue by aging */
    uint64_t moves_to_cold;           /* HOT or WARM items that went COLD */
    uint64_t moves_to_warm;           /* HOT or COLD items that went WARM */
    uint64_t moves_within_lru;        /* WARM items given a second chance */
};
void mq_get_class_stats(unsigned int clsid, struct mq_class_stats *out);
void mq_reset_class_stats(void);

#endif
