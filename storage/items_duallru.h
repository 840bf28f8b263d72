/*
 * items_duallru.h: Fogcached's Dual-LRU (Ozawa et al., "Fogcached: A
 * DRAM/NVMM Hybrid KVS Server for Edge Computing", IEICE Trans. Inf. &
 * Syst. 2021, sections 4.2.2 and 4.3), tier_policy=duallru
 * (items_duallru.c; doc/tiering.md "Dual-LRU").
 *
 * Each slab class has, in each zone, memcached's segmented LRU (HOT, WARM,
 * COLD) plus a Move segment toward the other zone: in the D-zone "Move to
 * N" (Fogcached's "Move segment to DCPM"), in the N-zone "Move to D".
 * The segment numbers are also the D-zone's MQ queue numbers (items_mq.c in
 * segmented mode), so MQ's eviction order (queue 0's tail first) takes
 * condemned items first, then COLD, WARM and HOT.
 *
 * Flags (memcached's, plus Fogcached's Promote):
 *   Fetched  - set by the first reference (ITEM_FETCHED; for N items in
 *              the location word, as for every policy);
 *   Active   - set by a reference to a Fetched item (ITEM_ACTIVE in D,
 *              DLRU_ACTIVE in an N item's header);
 *   Promote  - set by a reference to an Active N item (DLRU_PROMOTE).
 *
 * The rules below are pure so that t/unit/test_duallru.c can check them.
 */
#ifndef ITEMS_DUALLRU_H
#define ITEMS_DUALLRU_H

#include "item.h"
#include "nitem.h"
#include "storage_worker.h"
#include "tier_policy.h"

enum dlru_seg {
    DLRU_MOVE = 0,               /* to the other zone; taken first */
    DLRU_COLD = 1,
    DLRU_WARM = 2,
    DLRU_HOT = 3,
    DLRU_SEGMENTS = 4
};

/* memcached's segment of each D segment in `stats items` (items_mq.h):
 * an item on its way to the N-zone is cold */
static const enum lru_segment dlru_lru_segments[DLRU_SEGMENTS] = {
    [DLRU_MOVE] = LRU_COLD,
    [DLRU_COLD] = LRU_COLD,
    [DLRU_WARM] = LRU_WARM,
    [DLRU_HOT] = LRU_HOT,
};

/* an N item's header `lru` field */
#define DLRU_ACTIVE  1u
#define DLRU_PROMOTE 2u
/* "read the flags from the item" (callers without its header at hand) */
#define DLRU_FLAGS_UNKNOWN UINT32_MAX

/* memcached's defaults (hot_lru_pct, warm_lru_pct): the share of a
 * class's items (in one zone) HOT and WARM may hold before the maintenance
 * moves their tails on. */
#define DLRU_HOT_PCT 20
#define DLRU_WARM_PCT 40

/* What happens to one item. */
struct dlru_step {
    bool move;                   /* relink at the head of `to` */
    enum dlru_seg to;
    uint32_t flags;              /* its DLRU_* flags afterwards */
};

/* Is segment seg (count items of a zone's class total) over its share? */
static inline bool dlru_over(enum dlru_seg seg, uint64_t count,
                             uint64_t total)
{
    switch (seg) {
    case DLRU_HOT:
        return count * 100 > total * DLRU_HOT_PCT;
    case DLRU_WARM:
        return count * 100 > total * DLRU_WARM_PCT;
    default:
        return false;
    }
}

/* A reference to an item that was already Fetched, in segment seg: Active
 * first, then (N items) Promote.  An item that becomes Active in COLD goes
 * to WARM with Active cleared (memcached's bump of an active COLD item);
 * so does a D item waiting in Move to N, which is no longer cold. */
static inline struct dlru_step dlru_on_ref(bool in_nvm, enum dlru_seg seg,
                                           uint32_t flags)
{
    struct dlru_step s = { false, seg, flags };
    if ((flags & DLRU_ACTIVE) == 0) {
        s.flags = flags | DLRU_ACTIVE;
        if (seg == DLRU_COLD || (!in_nvm && seg == DLRU_MOVE)) {
            s.move = true;
            s.to = DLRU_WARM;
            s.flags = flags;
        }
    } else if (in_nvm) {
        s.flags = flags | DLRU_PROMOTE;
    }
    return s;
}

/* The item at the tail of segment seg when the maintenance looks at it;
 * over = dlru_over() for that segment.  N items with Promote at the HOT
 * or WARM tail go to Move to D whatever the sizes; otherwise a segment
 * over its share passes its tail on: Active items to WARM (Active
 * cleared), the others to COLD (Promote cleared).  An Active item at the
 * COLD tail goes to WARM.  Move segments are drained by the migration
 * step, not moved. */
static inline struct dlru_step dlru_at_tail(bool in_nvm, enum dlru_seg seg,
                                            uint32_t flags, bool over)
{
    struct dlru_step s = { false, seg, flags };
    switch (seg) {
    case DLRU_HOT:
    case DLRU_WARM:
        if (in_nvm && (flags & DLRU_PROMOTE)) {
            s.move = true;
            s.to = DLRU_MOVE;
            s.flags = 0;
        } else if (over) {
            s.move = true;
            if (flags & DLRU_ACTIVE) {
                s.to = DLRU_WARM;
                s.flags = flags & ~DLRU_ACTIVE;
            } else {
                s.to = DLRU_COLD;
                s.flags = flags & ~DLRU_PROMOTE;
            }
        }
        break;
    case DLRU_COLD:
        if (flags & DLRU_ACTIVE) {
            s.move = true;
            s.to = DLRU_WARM;
            s.flags = flags & ~DLRU_ACTIVE;
        }
        break;
    default:
        break;
    }
    return s;
}

/* D chunks of a class the maintenance keeps free, once the D-zone has no
 * page left to give, by moving COLD tails to Move to N ahead of demand. */
static inline unsigned int dlru_d_reserve(unsigned int chunks_per_page)
{
    unsigned int r = chunks_per_page / 64;
    return r > 16 ? 16 : r;
}

/* The engine's mechanisms (tier_policy.h struct tier_engine) do the
 * unlinks, reclaims, demotions (into the N-zone's COLD head) and
 * promotions (into the D-zone's HOT head) that the segments call for.
 * Puts items_mq.c in segmented mode (entry HOT).  After mq_init. */
void dlru_init(const struct tier_engine *engine);

/* ---- N items: the caller holds the item's item lock ---- */
void dlru_n_link(unsigned int clsid, uint64_t off, enum dlru_seg seg);
void dlru_n_unlink(unsigned int clsid, uint64_t off);
enum dlru_seg dlru_n_segment(unsigned int clsid, uint64_t off);
/* A reference to the N item at off whose Fetched flag was already set;
 * flags: its header's `lru` (DLRU_FLAGS_UNKNOWN: read it). */
void dlru_n_ref(unsigned int clsid, uint64_t off, uint32_t flags);
/* An N chunk of class id freed by eviction from the N-zone's LRU tails
 * (COLD first, then WARM, HOT, Move to D); only dead items unless
 * may_evict.  The caller may hold one item lock.  Replaces the CLOCK. */
bool dlru_n_reclaim(unsigned int id, bool may_evict, uint64_t *off);

/* ---- D items ---- */
/* The D item it (item lock held) just became Active. */
void dlru_d_activated(item *it);

/* ---- the tier thread ----
 * One round over every class: the maintenance of both zones' segment
 * tails, then the migration of both Move segments.  Returns the items it
 * moved or migrated. */
unsigned int dlru_tick(void);

struct dlru_class_stats {
    uint64_t d_seg[DLRU_SEGMENTS];
    uint64_t n_seg[DLRU_SEGMENTS];
};
void dlru_get_class_stats(unsigned int clsid, struct dlru_class_stats *out);
struct dlru_stats {
    uint64_t move_to_n_len;      /* D items waiting in Move to N */
    uint64_t move_to_d_len;      /* N items waiting in Move to D */
    uint64_t segment_moves;      /* maintenance moves, both zones */
    uint64_t to_move_n;          /* D COLD tails put in Move to N */
    uint64_t to_move_d;          /* N items with Promote put in Move to D */
    uint64_t busy;               /* tail items passed over: lock busy */
};
void dlru_get_stats(struct dlru_stats *out);
void dlru_reset_stats(void);

#endif
