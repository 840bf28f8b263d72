/*
 * policy_nvm.c: tier_policy=nvm, the N-zone-only baseline
 * (doc/tiering.md "Policies"): every new version is stored in the N-zone
 * and nothing is promoted; D holds only what the N-zone could not take
 * (n_fallbacks).  The CLOCK frees N chunks.  No state, no lock.
 */
#include "config.h"
#include "tier_policy.h"

#include "clock_nvm.h"

static bool always(struct placement_query *q, item **chunk)
{
    return true;
}

const struct tier_policy_ops policy_nvm = {
    .name = "nvm",
    .demotes = false,
    .places_in_nvm = always,
    .n_reclaim = clock_nvm_reclaim,
};
