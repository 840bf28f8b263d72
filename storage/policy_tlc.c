/*
 * policy_tlc.c: tier_policy=tlc, the paper's HM-TLC baseline (two-level
 * cache; doc/tiering.md "Policies"): every hit of an N item promotes it,
 * D's MQ victims are demoted, placement and the N-zone's CLOCK as in
 * hmcached.  No state, no lock.
 */
#include "config.h"
#include "tier_policy.h"

#include "clock_nvm.h"

static bool every_hit(unsigned int clsid, uint32_t counter)
{
    return true;
}

const struct tier_policy_ops policy_tlc = {
    .name = "tlc",
    .demotes = true,
    .places_in_nvm = tier_place_by_key_zone,
    .wants_promotion = every_hit,
    .n_reclaim = clock_nvm_reclaim,
};
