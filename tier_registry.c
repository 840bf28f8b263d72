/*
 * tier_registry.c: the registry of tier policies (tier_policy.h), which
 * also names them (the tier_policy option, stats).
 *
 * It maps `-o tier_policy=` (settings.tier.policy) to its policy; the
 * engine (items.c) asks once, at start-up.  No lock: the table is
 * constant.  Apart from tier_policy.c so that the policies, which use the
 * shared rules there, do not depend on the table that lists them.
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
