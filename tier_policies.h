/*
 * tier_policies.h: the list of tier policies (doc/tiering.md "Policies"),
 * the one place a policy is named.
 *
 * X(ID, name) for each: ID gives enum tier_policy its TIER_POLICY_<ID>
 * (tier_config.h), name is the `-o tier_policy=` value and `stats
 * settings`' figure, and the policy is `const struct tier_policy_ops
 * policy_<name>` (storage/tier_policy.h), defined in
 * storage/policy_<name>.c.  Adding a policy is that file and one line here
 * (and the file among Makefile.am's policy_sources); the registry
 * (storage/tier_registry.c), the declarations, the option's parser, its
 * usage line and its error message follow from the list.  The default is
 * tier_config.c's.
 *
 * A leaf: no includes, no lock (a list of names).  It stays beside
 * settings.h (tier_config.h includes it for the option's enum) rather than
 * in storage/: both sides read it.
 */
#ifndef TIER_POLICIES_H
#define TIER_POLICIES_H

#define TIER_POLICIES(X) \
    X(HMCACHED, hmcached) /* HMCached: hotness-driven migration */ \
    X(UNI, uni)           /* HM-UNI: placement by capacity, no moves */ \
    X(TLC, tlc)           /* HM-TLC: every N hit promoted */ \
    X(DRAM, dram)         /* N-zone unused */ \
    X(NVM, nvm)           /* every item in the N-zone */ \
    X(DUALLRU, duallru)   /* Fogcached: segmented LRU in each zone */ \
    X(HMHC, hmhc)         /* HM-HC: hmcached, hyperbolic D victims */ \
    X(HOTTER, hotter)     /* promotion gated by D's coldest queue */

#endif
