/*
 * tier_reassign.h: the engine side of DRAM page reassignment across slab
 * classes (doc/tiering.md, "Reassignment"; tier_reassign.c).
 *
 * reassign_dp.c holds the algorithms (histograms, benefit curves, DP,
 * greedy, move plans, PSA); this module feeds them from the engine and
 * carries their plans out:
 *   - the request path notes every change of an item's access counter,
 *     and every item that enters or leaves a class, through
 *     tier_reassign_note() into the calling thread's histogram slot;
 *   - the tier thread calls tier_reassign_tick(): once per period of
 *     storage requests (settings.tier.reassign_period, or auto) it plans
 *     page moves by settings.tier.reassign (at most
 *     settings.tier.reassign_rate, or auto),
 *     and hands them one at a time to slabs.c's page mover (the thread
 *     behind `slabs reassign`), which demotes the moved page's items
 *     (items.c).
 */
#ifndef TIER_REASSIGN_H
#define TIER_REASSIGN_H

#include "settings.h"
#include "stat_line.h"

#include "reassign_dp.h"

/* ---- request path ---- */

/* True when counters are noted (an N-zone and tier_reassign=dp|greedy);
 * set by tier_reassign_init() before any thread starts. */
extern bool tier_reassign_noting;
/* The calling thread's histogram slot (UINT32_MAX: none, the note is
 * rejected and counted in reassign_notes_rejected). */
extern __thread unsigned tier_reassign_slot;

/* Item of class clsid: counter old -> new; -1 = not in the class (entered
 * or left).  Item lock held; no lock taken, no spinning.  Always inline,
 * as reassign_note (reassign_dp.h). */
__attribute__((always_inline))
static inline void tier_reassign_note(unsigned int clsid, int old_counter,
                                      int new_counter)
{
    if (tier_reassign_noting) {
        reassign_note(tier_reassign_slot, clsid, old_counter, new_counter);
    }
}

/* Which slot the calling thread writes: a worker its index in
 * storage_worker.c's registry, the others their role.  Each thread calls
 * one once, before it touches an item. */
enum tier_reassign_role {
    TIER_REASSIGN_ROLE_TIER,     /* the tier thread (items.c) */
    TIER_REASSIGN_ROLE_CRAWLER,  /* the LRU crawler (crawler.c) */
    TIER_REASSIGN_ROLE_MOVER     /* slabs.c's page mover */
};
void tier_reassign_thread_worker(unsigned int index);
void tier_reassign_thread_role(enum tier_reassign_role role);

/* ---- set-up, the tier thread, stats ---- */

const char *tier_reassign_name(enum tier_reassign r);
/* Parses dp|greedy|psa|none; false on anything else. */
bool tier_reassign_parse(const char *val, enum tier_reassign *out);

/* What the engine counts per class, cumulative: items that left the
 * D-zone to make room (demoted or evicted), PSA's eviction signal. */
struct tier_reassign_engine {
    uint64_t (*d_departures)(unsigned int clsid);
};
/* With an N-zone, before the worker threads start: allocates the
 * histograms (reassign_init(settings.num_threads)) when the policy needs
 * them.  Returns 0, or -1 when out of memory. */
int tier_reassign_init(const struct tier_reassign_engine *engine);
void tier_reassign_shutdown(void);
/* Tier thread: a period's planning when it is due, and the next planned
 * move when the page mover is free. */
void tier_reassign_tick(void);

/* `stats tier` lines (reassign_*) and `stats tier classes` lines
 * (N:d_pages_target, N:benefit_optimal). */
void tier_reassign_stats(ADD_STAT add_stats, void *c);
void tier_reassign_class_stats(ADD_STAT add_stats, void *c,
                               unsigned int clsid);

#endif
