/*
 * tier_config.h: the options of the tiered engine (-o tier_*;
 * doc/tiering.md "Options"), a struct like nvm_config.h's struct nvm_config,
 * embedded in the settings as settings.tier.  Written only at start-up
 * (settings.c parses and checks them), read everywhere after.
 */
#ifndef TIER_CONFIG_H
#define TIER_CONFIG_H

#include "tier_policies.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* tier_policy=: which placement and migration rules run (doc/tiering.md;
 * the policies are tier_policies.h's list) */
#define TIER_POLICY_ENUM(id, name) TIER_POLICY_##id,
enum tier_policy {
    TIER_POLICIES(TIER_POLICY_ENUM)
    TIER_POLICY_COUNT
};
#undef TIER_POLICY_ENUM

/* tier_placement=: where a new key is stored */
enum tier_placement {
    TIER_PLACE_DRAM_FIRST = 0,   /* D while it has free chunks, else N */
    TIER_PLACE_NVM               /* the paper: N first */
};

/* tier_reassign=: how D pages move between slab classes (tier_reassign.c) */
enum tier_reassign {
    TIER_REASSIGN_DP = 0,        /* HMCached: optimal split by DP */
    TIER_REASSIGN_GREEDY,        /* the same optimum by marginal gain */
    TIER_REASSIGN_PSA,           /* Carra & Michiardi: by misses per page */
    TIER_REASSIGN_NONE           /* calcified: pages never move */
};

/* nvm_restart=: what a start does with the items an N-zone file holds
 * (doc/restart.md "Warm restart") */
enum tier_restart {
    TIER_RESTART_YES = 0,        /* keep them when the layout matches, else
                                  * start cold and say why (memcached's -e) */
    TIER_RESTART_NO,             /* always start cold */
    TIER_RESTART_REQUIRE         /* keep them or refuse to start */
};

struct tier_config {
    enum tier_policy policy;      /* tier_policy */
    enum tier_placement placement;/* tier_placement */
    bool promote_async;           /* tier_promote=async */
    uint32_t threshold_init;      /* tier_threshold */
    uint32_t adjust_period;       /* requests to a class per adjustment */
    uint64_t decay_period;        /* requests per decay epoch; the least
                                   * one under "auto" */
    /* tier_decay_period=auto: migrate.c sizes the epoch from the D-zone;
     * not given, the policy decides (tier_policy.h decay_period_auto) */
    bool decay_period_auto;
    bool decay_period_given;
    uint32_t mq_queues;           /* MQ queues per class (Q) */
    enum tier_reassign reassign;  /* tier_reassign */
    uint64_t reassign_period;     /* requests per reassignment period */
    uint32_t reassign_rate;       /* page moves per period at most */
    /* "auto": tier_reassign.c sizes them from the D-zone and the gap to
     * the planned split (doc/tiering.md "Reassignment") */
    bool reassign_period_auto;
    bool reassign_rate_auto;
    /* tier_reassign_weight=recent: each class's benefit scaled to its
     * recent hits; counters: the access counters alone (the paper's) */
    bool reassign_weigh_recent;
    size_t inflight_limit;        /* bytes of N values in flight to clients
                                   * per worker thread (items_n.c) */
    size_t staging_limit;         /* bytes of staging buffers (N-bound
                                   * values) per worker thread (items_n.c) */
    enum tier_restart restart;    /* nvm_restart */
    /* nvm_verify=read: every lookup of an N item reads it whole and checks
     * its checksum (doc/restart.md "Items and their seal"); recovery:
     * only a warm restart's scan does */
    bool verify_reads;
};

/* The defaults: hotter, dram_first, async promotion, the options'
 * documented values (doc/tiering.md "Options"). */
void tier_config_init(struct tier_config *tc);

#endif
