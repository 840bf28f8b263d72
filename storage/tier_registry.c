/*
 * tier_registry.c: the registry of tier policies (tier_policy.h), built
 * from tier_policies.h's list, which also names them (the tier_policy
 * option, its usage line and error, stats).
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

#define TIER_POLICY_ENTRY(id, name) [TIER_POLICY_##id] = &policy_##name,
static const struct tier_policy_ops *const registry[TIER_POLICY_COUNT] = {
    TIER_POLICIES(TIER_POLICY_ENTRY)
};
#undef TIER_POLICY_ENTRY

/* Appends ", name" (or name, first) if all of it fits; false if not. */
static bool append_name(char *buf, size_t len, size_t *used,
                        const char *name)
{
    const char *sep = *used > 0 ? ", " : "";
    size_t need = strlen(sep) + strlen(name);
    if (*used + need >= len) {
        return false;
    }
    memcpy(buf + *used, sep, strlen(sep));
    memcpy(buf + *used + strlen(sep), name, strlen(name) + 1);
    *used += need;
    return true;
}

size_t tier_policy_names(char *buf, size_t len, enum tier_policy first)
{
    size_t used = 0;
    buf[0] = '\0';
    if (!append_name(buf, len, &used, tier_policy_name(first))) {
        return 0;
    }
    for (int p = 0; p < TIER_POLICY_COUNT; p++) {
        if ((enum tier_policy)p != first
                && !append_name(buf, len, &used,
                                tier_policy_name((enum tier_policy)p))) {
            break;
        }
    }
    return used;
}

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
    for (size_t i = 0; i < TIER_POLICY_COUNT; i++) {
        if (strcmp(registry[i]->name, name) == 0) {
            *out = (enum tier_policy)i;
            return true;
        }
    }
    return false;
}

const struct tier_policy_ops *tier_policy_of(enum tier_policy p)
{
    if ((size_t)p >= TIER_POLICY_COUNT) {
        return &policy_dram;
    }
    return registry[p];
}
