/*
 * tier_policy.c: the registry of tier policies (tier_policy.h), which
 * also names them (the tier_policy option, stats), and the placement
 * rules several of them share.
 *
 * The registry maps `-o tier_policy=` (settings.tier.policy) to its
 * policy; the engine (items.c) asks once, at start-up.  No lock: the table
 * is constant and tier_engine_ops is written once before any worker or
 * background thread starts.
 */
#include "config.h"
#include "tier_policy.h"

#include <stddef.h>
#include <string.h>

static const struct tier_policy_ops *const registry[] = {
    [TIER_POLICY_HMCACHED] = &policy_hmcached,
    [TIER_POLICY_UNI] = &policy_uni,
    [TIER_POLICY_TLC] = &policy_tlc,
    [TIER_POLICY_DRAM] = &policy_dram,
    [TIER_POLICY_NVM] = &policy_nvm,
    [TIER_POLICY_DUALLRU] = &policy_duallru,
    [TIER_POLICY_HMHC] = &policy_hmhc,
    [TIER_POLICY_HOTTER] = &policy_hotter,
};

const struct tier_engine *tier_engine_ops;

const char *tier_policy_name(enum tier_policy p)
{
    return tier_policy_of(p)->name;
}

bool tier_policy_decay_period_auto(enum tier_policy p)
{
    return tier_policy_of(p)->decay_period_auto;
}

bool tier_policy_by_name(const char *name, enum tier_policy *out)
{
    for (size_t i = 0; i < sizeof(registry) / sizeof(registry[0]); i++) {
        if (registry[i] != NULL && strcmp(registry[i]->name, name) == 0) {
            *out = (enum tier_policy)i;
            return true;
        }
    }
    return false;
}

const struct tier_policy_ops *tier_policy_of(enum tier_policy p)
{
    if ((size_t)p >= sizeof(registry) / sizeof(registry[0])
            || registry[p] == NULL) {
        return &policy_dram;
    }
    return registry[p];
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
 * tier_placement says (doc/tiering.md "Stores"). */
bool tier_place_by_key_zone(const struct placement_query *q, item **chunk)
{
    enum key_zone zone = q->zone;
    if (zone == KEY_ZONE_UNKNOWN) {
        zone = tier_engine_ops->key_in_dram(q->key, q->nkey)
            ? KEY_ZONE_D : KEY_ZONE_NOT_D;
    }
    if (zone == KEY_ZONE_D) {
        return false;
    }
    if (settings.tier.placement == TIER_PLACE_NVM) {
        return true;
    }
    *chunk = tier_engine_ops->free_d_chunk(q);
    return *chunk == NULL;
}

bool tier_place_by_option(const struct placement_query *q, item **chunk)
{
    return settings.tier.placement == TIER_PLACE_NVM;
}
