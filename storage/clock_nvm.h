/*
 * clock_nvm.h: CLOCK replacement for N-zone items (clock_nvm.c).
 *
 * One hand per slab class sweeps the class's N chunks in zone order.  The
 * CLOCK reference bit of an item is in its location word (hash_desc.h), so
 * a hit sets it without writing NVM; the sweep reads only a candidate's
 * header: its hash to find and lock its slot, then, under the lock, its
 * times and sizes to judge it.
 */
#ifndef CLOCK_NVM_H
#define CLOCK_NVM_H

#include "clock.h"
#include "nitem.h"

/* The storage engine's side (items.c), called with the candidate's item
 * lock held:
 *   is_dead: is the item (header h, location word loc) expired or flushed?
 *   unlink:  remove it from the index and the accounting, as reclaimed
 *            (dead) or evicted; its chunk stays allocated for the caller. */
struct clock_nvm_ops {
    bool (*is_dead)(const nitem_hdr *h, uint64_t loc);
    void (*unlink)(uint64_t *locp, uint64_t hv, const nitem_hdr *h,
                   bool dead);
    /* header bytes the dead check needs now (NITEM_SWEEP_BYTES[_CAS]) */
    size_t (*header_bytes)(void);
    /* a used chunk no slot names, whose unlocked header read gave hv:
     * true when the engine gave it up (a promoted item's N copy,
     * items_ncopy.c) and it is now the caller's */
    bool (*take_unnamed)(uint64_t off, uint64_t hv);
    /* a class other than `except` whose N pages hold no item (copies at
     * most, under a policy that keeps them), or 0 */
    unsigned int (*itemless_class)(unsigned int except);
    /* how many of class id's used chunks are copies now (relaxed: it
     * only sizes the copy hand's search) */
    uint64_t (*copies)(unsigned int id);
    /* is the item of location word loc new and unread, the probation
     * hand's to evict?  NULL: no probation, the paper's CLOCK alone */
    bool (*unread)(uint64_t loc);
};

void clock_nvm_init(const struct clock_nvm_ops *ops);

/* Free one chunk of class id by sweeping: a chunk no slot names is
 * offered to take_unnamed, dead items are reclaimed whatever their bit, a
 * set bit is cleared and the item passed over, an item with a clear bit
 * is evicted (only when may_evict; before the hand, the probation hand
 * may evict an unread new item, clock_nvm.c).  Items whose
 * stripe is busy (item_trylock) are passed over.  On success the chunk at
 * *off is the caller's, still marked used in the bitmap.  The caller may
 * hold one item lock (its own stripe is then passed over). */
bool clock_nvm_reclaim(unsigned int id, bool may_evict, uint64_t *off);

/* A flush_all made the items last accessed before oldest_live dead: each
 * class's next reclaims take only dead items and copies until a turn finds
 * none, so that no live item is evicted while flushed ones remain. */
void clock_nvm_note_flush(rel_time_t oldest_live);

struct clock_nvm_stats {
    uint64_t examined;           /* candidates whose header was read */
    uint64_t second_chances;     /* reference bits cleared */
    uint64_t busy;               /* candidates passed over: lock busy */
    uint64_t pages_moved;        /* pages of copies given to this class */
    uint64_t probation_evictions; /* unread new items the probation hand
                                   * evicted */
};
/* Sums over every class. */
void clock_nvm_get_stats(struct clock_nvm_stats *out);

#endif
