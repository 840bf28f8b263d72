/*
 * tier_config.c: the defaults of the tier options (tier_config.h), shared
 * by the server's settings and the unit tests' fixture.  No locks: called
 * at start-up only.
 */
#include "config.h"
#include "tier_config.h"

void tier_config_init(struct tier_config *tc)
{
    tc->policy = TIER_POLICY_HOTTER;
    tc->placement = TIER_PLACE_DRAM_FIRST;
    tc->promote_async = true;
    tc->threshold_init = 4;
    tc->adjust_period = 100000;
    tc->decay_period = 1000000;
    tc->decay_period_auto = false;
    tc->decay_period_given = false;
    tc->mq_queues = 8;
    tc->reassign = TIER_REASSIGN_DP;
    tc->reassign_period = 1000000;
    tc->reassign_rate = 4;
    tc->reassign_period_auto = true;
    tc->reassign_rate_auto = true;
    tc->reassign_weigh_recent = true;
    tc->inflight_limit = 16 * 1024 * 1024;
    tc->staging_limit = 8 * 1024 * 1024;
    tc->restart = TIER_RESTART_YES;
    tc->verify_reads = false;
}
