/*
 * tier_policy.c: what the tier policies share (tier_policy.h): the
 * engine's callbacks they call (tier_engine_ops, set by tier_policy_init)
 * and the placement rules several of them use.  The registry that maps
 * names to policies is tier_registry.c.
 *
 * No lock: tier_engine_ops is written once before any worker or
 * background thread starts.
 */
#include "config.h"
#include "tier_policy.h"

#include "clock_nvm.h"

#include <stddef.h>

const struct tier_engine *tier_engine_ops;

const char *tier_policy_conflict(const struct tier_policy_ops *p)
{
    if (p->keeps_n_copy && (p->d_entered != NULL || p->d_accessed != NULL
                            || p->d_victim != NULL)) {
        return "it keeps N copies, whose offset is kept in the item header "
               "bytes that its own ranking of D items (d_entered, "
               "d_accessed, d_victim) uses";
    }
    if (p->keeps_n_copy && p->n_reclaim != clock_nvm_reclaim) {
        return "it keeps N copies, which only the CLOCK's reclaim drops";
    }
    if (p->copies_store != NULL && !p->keeps_n_copy) {
        return "it copies new keys to the N-zone without keeping N copies";
    }
    if (p->places_in_nvm == NULL || p->n_reclaim == NULL) {
        return "it has no placement or no N-zone reclaim";
    }
    return NULL;
}

void tier_policy_init(const struct tier_policy_ops *p,
                      const struct tier_engine *engine)
{
    tier_engine_ops = engine;
    if (p->init != NULL) {
        p->init(engine);
    }
}

/* HMCached keeps a key in the zone it is in; a new key goes where
 * tier_placement says (doc/tiering.md "Stores").  A SET is placed before
 * its key is looked up, so that it is looked up once, at the store: the
 * answer for a key not yet found is a new key's, marked a guess. */
bool tier_place_by_key_zone(struct placement_query *q, item **chunk)
{
    if (q->zone == KEY_ZONE_D) {
        return false;
    }
    if (q->zone == KEY_ZONE_UNKNOWN) {
        q->zone_guessed = true;
    }
    if (settings.tier.placement == TIER_PLACE_NVM) {
        return true;
    }
    *chunk = tier_engine_ops->free_d_chunk(q);
    return *chunk == NULL;
}

bool tier_place_by_option(struct placement_query *q, item **chunk)
{
    return settings.tier.placement == TIER_PLACE_NVM;
}
