/*
 * policy_duallru.c: tier_policy=duallru, Fogcached's dual segmented LRU
 * (doc/tiering.md "Dual-LRU").  The mechanism lives in items_duallru.c;
 * this file plugs it into the engine: new items go to D (or N with
 * tier_placement=nvm), D's victims are demoted, the N-zone's LRU tails
 * replace the CLOCK, re-hits set the Active/Promote flags, and the tier
 * thread drains the Move segments.
 *
 * Locks: items_duallru.c's (its class locks inside item locks).
 */
#include "config.h"
#include "tier_policy.h"

#include "items_duallru.h"

#include <stdio.h>

/* A stored item enters N's HOT head; a demoted one N's COLD head. */
static void duallru_n_linked(unsigned int clsid, uint64_t off, bool demoted)
{
    dlru_n_link(clsid, off, demoted ? DLRU_COLD : DLRU_HOT);
}

_Static_assert(TIER_LRU_UNKNOWN == DLRU_FLAGS_UNKNOWN,
               "n_rehit passes the engine's lru value on unchanged");

static void add_u64_stat(ADD_STAT add_stats, void *c, const char *name,
                         uint64_t v)
{
    append_stat(name, add_stats, c, "%llu", (unsigned long long)v);
}

static void duallru_stats(ADD_STAT add_stats, void *c)
{
    struct dlru_stats ds;
    dlru_get_stats(&ds);
    add_u64_stat(add_stats, c, "move_to_n_len", ds.move_to_n_len);
    add_u64_stat(add_stats, c, "move_to_d_len", ds.move_to_d_len);
    add_u64_stat(add_stats, c, "dlru_segment_moves", ds.segment_moves);
    add_u64_stat(add_stats, c, "dlru_to_move_n", ds.to_move_n);
    add_u64_stat(add_stats, c, "dlru_to_move_d", ds.to_move_d);
    add_u64_stat(add_stats, c, "dlru_busy", ds.busy);
}

static void class_stat(ADD_STAT add_stats, void *c, unsigned int id,
                       const char *name, uint64_t v)
{
    char key[64];
    snprintf(key, sizeof(key), "%u:%s", id, name);
    add_u64_stat(add_stats, c, key, v);
}

/* each zone's segment sizes */
static void duallru_class_stats(ADD_STAT add_stats, void *c, unsigned int id)
{
    struct dlru_class_stats ds;
    dlru_get_class_stats(id, &ds);
    class_stat(add_stats, c, id, "d_hot", ds.d_seg[DLRU_HOT]);
    class_stat(add_stats, c, id, "d_warm", ds.d_seg[DLRU_WARM]);
    class_stat(add_stats, c, id, "d_cold", ds.d_seg[DLRU_COLD]);
    class_stat(add_stats, c, id, "d_move_to_n", ds.d_seg[DLRU_MOVE]);
    class_stat(add_stats, c, id, "n_hot", ds.n_seg[DLRU_HOT]);
    class_stat(add_stats, c, id, "n_warm", ds.n_seg[DLRU_WARM]);
    class_stat(add_stats, c, id, "n_cold", ds.n_seg[DLRU_COLD]);
    class_stat(add_stats, c, id, "n_move_to_d", ds.n_seg[DLRU_MOVE]);
}

const struct tier_policy_ops policy_duallru = {
    .name = "duallru",
    .demotes = true,
    .places_in_nvm = tier_place_by_option,
    .n_reclaim = dlru_n_reclaim,
    .n_linked = duallru_n_linked,
    .n_unlinked = dlru_n_unlink,
    .n_rehit = dlru_n_ref,
    .d_activated = dlru_d_activated,
    .init = dlru_init,
    .tick = dlru_tick,
    .stats = duallru_stats,
    .class_stats = duallru_class_stats,
    .stats_reset = dlru_reset_stats,
    /* the D queues are the segments; Move to N counts as cold */
};
