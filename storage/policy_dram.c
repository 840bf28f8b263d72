/*
 * policy_dram.c: tier_policy=dram, and the engine without an N-zone
 * (doc/tiering.md "Policies"): memcached's single tier.  The engine never
 * asks it about the N-zone (there is none), so it decides nothing but
 * that the MQ queues age and keep new keys on probation (items_mq.c,
 * doc/tiering.md "Aging and probation").
 */
#include "config.h"
#include "tier_policy.h"

static bool never(struct placement_query *q, item **chunk)
{
    return false;
}

const struct tier_policy_ops policy_dram = {
    .name = "dram",
    .ages_d = true,
    .demotes = false,
    .places_in_nvm = never,
};
