/*
 * policy_hmcached.c: tier_policy=hmcached, the paper's policy (HMCached
 * sections 3.2-3.4; doc/tiering.md "Hotness and migration").
 *
 * A key stays in the zone that holds it; new keys go by tier_placement.
 * An N item whose decayed access counter passes its class's threshold
 * (migrate.c, Algorithm 1) is promoted to D; D's MQ victims are demoted to
 * N; a full N class frees chunks with the CLOCK (clock_nvm.c).  No state
 * of its own, so no lock.
 */
#include "config.h"
#include "tier_policy.h"

#include "clock_nvm.h"
#include "migrate.h"

static bool hot_enough(unsigned int clsid, uint32_t counter)
{
    return counter > migrate_threshold(clsid);
}

const struct tier_policy_ops policy_hmcached = {
    .name = "hmcached",
    .demotes = true,
    .places_in_nvm = tier_place_by_key_zone,
    .wants_promotion = hot_enough,
    .n_reclaim = clock_nvm_reclaim,
};
