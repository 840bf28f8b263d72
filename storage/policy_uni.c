/*
 * policy_uni.c: tier_policy=uni, the paper's HM-UNI baseline
 * (doc/tiering.md "Policies"): a key's zone is drawn from its hash in
 * proportion to the zones' capacities, and items never move between
 * zones (D victims are evicted).  No state, no lock.
 */
#include "config.h"
#include "tier_policy.h"

#include "clock_nvm.h"
#include "hash.h"

static bool by_capacity(struct placement_query *q, item **chunk)
{
    struct slabs_tier_totals tt;
    slabs_tier_get_totals(&tt);
    uint64_t d = settings.maxbytes;
    uint64_t total = d + tt.zone_limit;
    return total != 0 && hash_key(q->key, q->nkey) % total >= d;
}

const struct tier_policy_ops policy_uni = {
    .name = "uni",
    .demotes = false,
    .places_in_nvm = by_capacity,
    .n_reclaim = clock_nvm_reclaim,
};
