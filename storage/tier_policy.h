/*
 * tier_policy.h: the interface between the tiered storage engine (items.c)
 * and the tier policies (doc/tiering.md "Policies").
 *
 * A policy is a struct of operations chosen once at start-up from the
 * registry (tier_registry.c) by `-o tier_policy=`; the engine calls it and
 * never asks which policy runs.  One file per policy implements it:
 * policy_hmcached.c, policy_uni.c, policy_tlc.c, policy_nvm.c,
 * policy_duallru.c, policy_hmhc.c, policy_hotter.c, and policy_dram.c (no
 * tier: the engine runs without an N-zone).  Adding a policy is one new
 * file plus one line in tier_policies.h's list, which names them all.
 *
 * What a policy decides:
 *   - placement: whether a new version of a key goes to the N-zone;
 *   - promotion: whether an N item that was just hit should move to D;
 *   - demotion: whether D victims (MQ tails, page moves) move to N or
 *     leave the cache, whether a promoted item keeps its N copy, and
 *     whether a new key stored in D gets one;
 *   - N-zone reclaim: how a full N class frees a chunk (CLOCK, or an LRU);
 *   - hooks on N link/unlink/re-hit and on a D item's second hit, a tick
 *     of background work on the tier thread, and stats lines;
 *   - D replacement, optionally: a policy that picks D victims itself
 *     (d_victim, with d_entered/d_accessed to keep what it ranks them by)
 *     replaces the MQ tails for them.
 * Optional operations are NULL when a policy has nothing to do there; the
 * engine tests for NULL (a predictable branch, cheaper than a call).
 *
 * Locks: the hooks are called with the item lock of the item concerned
 * held (items.c's rules); tick runs on the tier thread with no lock held;
 * stats callbacks with none.
 */
#ifndef TIER_POLICY_H
#define TIER_POLICY_H

#include "item.h"
#include "nitem.h"
#include "settings.h"
#include "stat_line.h"

/* Where the engine stands when it asks for a new version's zone. */
enum key_zone {
    KEY_ZONE_UNKNOWN,            /* a new store, the key not looked up yet:
                                  * it may be anywhere */
    KEY_ZONE_D,                  /* the key's current version is in D */
    KEY_ZONE_NOT_D               /* it is in N, or nowhere */
};

struct placement_query {
    const char *key;
    size_t nkey;
    unsigned int clsid;
    size_t ntotal;
    enum key_zone zone;
    /* set by a placement that depends on the key's zone when asked with
     * KEY_ZONE_UNKNOWN: the answer is a guess (a new key's zone), which
     * the store settles once it has found the key (items.c) */
    bool zone_guessed;
};

enum tier_promote_result {
    TIER_PROMOTE_GONE,           /* no longer there (or no longer wanted) */
    TIER_PROMOTE_DONE,
    TIER_PROMOTE_STUCK           /* D had no room */
};

/* What the engine offers the policies (items_tier.c's policy_engine). */
struct tier_engine {
    bool (*n_is_dead)(const nitem_hdr *h, uint64_t loc);
    /* unlink the N item of *locp (its item lock held), counting it as
     * reclaimed (dead) or evicted; its chunk is left to the caller */
    void (*n_unlink)(uint64_t *locp, uint64_t hv, const nitem_hdr *h,
                     bool dead);
    bool (*d_is_dead)(item *it);
    void (*d_reclaim)(item *it, uint64_t hv);
    /* move a pinned, locked D victim to the N-zone */
    bool (*demote)(item *it, uint64_t hv);
    /* move the N item at off (hash hv) into D if it is still there and
     * still_wanted(clsid, off) says so (called under its item lock) */
    enum tier_promote_result (*promote_at)(uint64_t hv, uint64_t off,
            bool (*still_wanted)(unsigned int clsid, uint64_t off));
    /* a free D chunk for q (no eviction), or NULL */
    item *(*free_d_chunk)(const struct placement_query *q);
    /* drop a reference to a D item (the pin a queue walk took:
     * item_remove) */
    void (*release)(item *it);
};

#define TIER_LRU_UNKNOWN UINT32_MAX

struct tier_policy_ops {
    const char *name;
    /* D victims move to the N-zone rather than leave the cache */
    bool demotes;
    /* a promoted item's N chunk stays, sealed, as its copy while the D
     * item is unchanged, so that demoting it again writes no value
     * (items_ncopy.c).  Needs the CLOCK's n_reclaim (which drops copies)
     * and none of d_entered, d_accessed, d_victim: the copy's offset uses
     * the header bytes HM-HC's ranking does (item.h); a policy that asks
     * for both is refused at start-up (tier_policy_conflict). */
    bool keeps_n_copy;
    /* the D-zone's MQ victims by CLOCK, dead ones first, and, where
     * victims leave the cache, a probation queue for new keys and a hand
     * that ages idle items (items_mq.c, doc/tiering.md "Aging and
     * probation"), and keys that come back after an eviction stored with
     * their N CLOCK bit set (items_n.c, "Keys that come back"); false:
     * the paper's MQ, which only the decay epochs age, and its CLOCK */
    bool ages_d;
    /* the decay epoch when tier_decay_period is not given: sized from the
     * D-zone (migrate.c, "auto") rather than the fixed default */
    bool decay_period_auto;
    /* should a new key just stored in D, of class clsid, also be written
     * to the N-zone as its copy?  Only with keeps_n_copy.  NULL: never. */
    bool (*copies_store)(unsigned int clsid);
    /* the zone of a new version: true for N.  May take a free D chunk for
     * it (*chunk) when it decides for D, and mark its answer a guess
     * (q->zone_guessed). */
    bool (*places_in_nvm)(struct placement_query *q, item **chunk);
    /* should the N item of class clsid, whose counter just became
     * counter, move to D?  NULL: never. */
    bool (*wants_promotion)(unsigned int clsid, uint32_t counter);
    /* free an N chunk of class clsid, evicting only when may_evict */
    bool (*n_reclaim)(unsigned int clsid, bool may_evict, uint64_t *off);
    /* an N item was linked at off: stored (demoted false) or demoted */
    void (*n_linked)(unsigned int clsid, uint64_t off, bool demoted);
    void (*n_unlinked)(unsigned int clsid, uint64_t off);
    /* an N item already fetched before was hit again; lru is its
     * header's policy bits when the caller read them, else
     * TIER_LRU_UNKNOWN */
    void (*n_rehit)(unsigned int clsid, uint64_t off, uint32_t lru);
    /* a D item already fetched before was hit again */
    void (*d_activated)(item *it);
    /* an item entered the D-zone (stored there, promoted, restored), just
     * before it joins the MQ queues */
    void (*d_entered)(item *it);
    /* any counted access to a D item (its store, hits, updates) */
    void (*d_accessed)(item *it);
    /* the D victim of class clsid in place of the MQ tails' (items_d.c
     * make_room): an item accept (when not NULL) takes, handed over as
     * mq_pick_victim hands its victims (items_mq.h: item lock held, *hv_out
     * set, pinned), or NULL.  Called with the caller's own item lock
     * possibly held: it may only trylock item locks. */
    item *(*d_victim)(unsigned int clsid, bool (*accept)(item *, void *),
                      void *arg, uint64_t *hv_out);
    /* start-up, once the zones and the index exist */
    void (*init)(const struct tier_engine *engine);
    /* background work on the tier thread; returns how much it did */
    unsigned int (*tick)(void);
    /* `stats tier` lines, `stats tier classes` lines of class id, and
     * their reset */
    void (*stats)(ADD_STAT add_stats, void *c);
    void (*class_stats)(ADD_STAT add_stats, void *c, unsigned int id);
    void (*stats_reset)(void);
};

/* The policy of settings.tier.policy (tier_registry.c). */
const struct tier_policy_ops *tier_policy_of(enum tier_policy p);
/* A policy's name, the policy of a name, and whether its decay epoch is
 * "auto" when tier_decay_period is not given. */
const char *tier_policy_name(enum tier_policy p);
bool tier_policy_by_name(const char *name, enum tier_policy *out);
bool tier_policy_decay_period_auto(enum tier_policy p);
/* Every policy's name, `first` first, ", " between them, into buf (len
 * bytes, NUL-terminated, cut at a whole name); the length written. */
size_t tier_policy_names(char *buf, size_t len, enum tier_policy first);

/* Placement rules more than one policy uses (tier_policy.c). */
/* The key's zone if it is in D, else tier_placement: nvm -> N,
 * dram_first -> D while a free D chunk is there (taken), else N.  Not yet
 * looked up (KEY_ZONE_UNKNOWN): as for a new key, a guess. */
bool tier_place_by_key_zone(struct placement_query *q, item **chunk);
/* tier_placement=nvm -> N, else D. */
bool tier_place_by_option(struct placement_query *q, item **chunk);

/* Why the policy's operations cannot run together (a feature that needs
 * another, or two that share the same bytes), or NULL when they can;
 * the engine refuses such a policy at start-up. */
const char *tier_policy_conflict(const struct tier_policy_ops *p);

/* The engine the policies were given (set by tier_policy_init). */
extern const struct tier_engine *tier_engine_ops;
void tier_policy_init(const struct tier_policy_ops *p,
                      const struct tier_engine *engine);

/* The policies (one file each, policy_<name>.c; tier_policies.h). */
#define TIER_POLICY_DECLARE(id, name) \
    extern const struct tier_policy_ops policy_##name;
TIER_POLICIES(TIER_POLICY_DECLARE)
#undef TIER_POLICY_DECLARE

#endif
