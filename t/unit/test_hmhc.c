/*
 * test_hmhc.c: tier_policy=hmhc's choice of D victim (policy_hmhc.c,
 * doc/tiering.md "HM-HC") through the real engine with an anonymous
 * N-zone: the store and later accesses kept in the header, the victim of
 * lowest hits / seconds in D among the sample handed over locked and
 * pinned, dead items first, candidates whose item lock is busy or that
 * someone else holds passed over (trylock: the test holds the lock
 * itself, so waiting for it would hang), a refusing accept function
 * leaving every lock free, the stats, and a full engine demoting by the
 * rule.  One engine per process: the sampler's cursors live in its queues.
 */
#include "config.h"
#include "items.h"
#include "storage.h"
#include "hash_desc.h"
#include "slabs.h"
#include "slabs_tier.h"
#include "tap.h"
#include "unit_support.h"
#include "clock.h"
#include "hash.h"
#include "item.h"
#include "item_lock.h"
#include "nvm.h"
#include "settings.h"
#include "stat_line.h"
#include "storage_worker.h"
#include "tier_policy.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NKEYS 20                 /* all in one sample (64) */
#define VLEN 20000               /* so that one 1 MB page holds ~50 */

static struct storage_worker *t;
static enum item_lookup lookup;
static char *val;

static bool put(const char *key)
{
    item *it = item_alloc(key, strlen(key), 0, 0, VLEN + 2, NULL);
    if (it == NULL) {
        return false;
    }
    memcpy(ITEM_data(it), val, VLEN);
    memcpy(ITEM_data(it) + VLEN, "\r\n", 2);
    bool stored = store_item(it, NREAD_SET, t, 0, NULL, false) == STORED;
    item_remove(it);
    return stored;
}

static const char *key_of(unsigned int i)
{
    static char keys[NKEYS][16];
    snprintf(keys[i], sizeof(keys[i]), "hc:%u", i);
    return keys[i];
}

/* The D item of key i, pinned (item_remove it), or NULL. */
static item *d_item(unsigned int i)
{
    const char *k = key_of(i);
    return item_get(k, strlen(k), t, DONT_UPDATE, &lookup);
}

/* Give key i hits accesses over age seconds in D (under its lock). */
static void rank(unsigned int i, uint16_t hits, rel_time_t age)
{
    item *it = d_item(i);
    uint64_t hv = hash_key(ITEM_key(it), it->nkey);
    item_lock(hv);
    it->d_hits = hits;
    it->d_since = current_time - age;
    item_unlock(hv);
    item_remove(it);
}

static unsigned int clsid;

/* The policy's victim, checked for being handed over locked and pinned,
 * then let go; returns which key it was (NKEYS: none, or not ours). */
static unsigned int victim_key(bool (*accept)(item *, void *))
{
    uint64_t hv;
    item *v = policy_hmhc.d_victim(clsid, accept, NULL, &hv);
    if (v == NULL) {
        return NKEYS;
    }
    bool locked = item_trylock(hv) != 0;
    bool pinned = atomic_load(&v->refcount) == 2;
    bool same_hv = hv == hash_key(ITEM_key(v), v->nkey);
    unsigned int found = NKEYS;
    for (unsigned int i = 0; i < NKEYS; i++) {
        if (v->nkey == strlen(key_of(i))
                && memcmp(ITEM_key(v), key_of(i), v->nkey) == 0) {
            found = i;
        }
    }
    item_unlock(hv);
    item_remove(v);
    ok(locked && pinned && same_hv,
       "the victim comes back with its item lock held and one pin");
    return found;
}

static bool refuse_all(item *it, void *arg)
{
    return false;
}

static void test_counts(void)
{
    rel_time_t stored_at = current_time;
    item *it = d_item(0);
    ok(it->d_hits == 1 && it->d_since == stored_at,
       "a store enters D with one access, d_since now");
    item_remove(it);
    const char *k = key_of(0);
    for (int i = 0; i < 3; i++) {
        item_remove(item_get(k, strlen(k), t, DO_UPDATE, &lookup));
    }
    it = d_item(0);
    ok(it->d_hits == 4, "three hits count: d_hits 4 (got %u)", it->d_hits);
    item_remove(it);
}

static void test_victims(void)
{
    current_time += 1000;
    for (unsigned int i = 0; i < NKEYS; i++) {
        rank(i, 100, 10);               /* 10 a second */
    }
    rank(7, 30, 100);                   /* 0.3 a second: the lowest */
    rank(12, 50, 100);                  /* 0.5: the next */
    ok(victim_key(NULL) == 7, "the lowest hits / seconds in D is chosen");
    ok(unit_tier_stat("hmhc_victims") == 1
       && unit_tier_stat("hmhc_sampled") >= NKEYS,
       "stats tier: one victim, the whole class sampled");

    item *low = d_item(7);
    uint64_t hv = hash_key(ITEM_key(low), low->nkey);
    ok(victim_key(NULL) == 12, "a candidate someone else holds is passed "
       "over");
    item_lock(hv);
    item_remove(low);
    ok(victim_key(NULL) == 12, "so is one whose item lock is busy");
    item_unlock(hv);
    ok(unit_tier_stat("hmhc_skipped") >= 2, "both counted in hmhc_skipped");

    ok(policy_hmhc.d_victim(clsid, refuse_all, NULL, &hv) == NULL,
       "nothing acceptable: no victim");
    bool all_free = true;
    for (unsigned int i = 0; i < NKEYS; i++) {
        uint64_t h = hash_key(key_of(i), strlen(key_of(i)));
        if (item_trylock(h) != 0) {
            all_free = false;
        } else {
            item_unlock(h);
        }
    }
    ok(all_free, "... and every candidate's lock is free again");

    rank(3, 60000, 1);                  /* the highest priority */
    /* a lookup would reclaim it once expired: the index keeps it */
    item *dead = d_item(3);
    item_remove(dead);
    dead->exptime = current_time - 1;   /* only this thread runs */
    ok(victim_key(NULL) == 3, "an expired item is taken first");
    dead->exptime = 0;
}

/* New keys of a full class go to N; rewriting a D key needs a D chunk,
 * and the demoted one is the lowest ranked. */
static void test_demotion(void)
{
    for (unsigned int i = 0; i < NKEYS; i++) {
        rank(i, 100, 10);
    }
    rank(5, 2, 100);
    char key[32];
    unsigned int n = 0;
    for (;; n++) {
        snprintf(key, sizeof(key), "fill:%u", n);
        put(key);
        item *it = item_get(key, strlen(key), t, DONT_UPDATE, &lookup);
        bool in_d = it != NULL && (it->it_flags & ITEM_HEAP) == 0;
        item_remove(it);
        if (!in_d) {
            break;
        }
    }
    ok(n > 0 && n + NKEYS < 64,
       "the class's D page filled after %u more keys (one sample)", n);
    uint64_t before = unit_tier_stat("demotions");
    ok(put(key_of(9)), "a D key rewritten");
    ok(unit_tier_stat("demotions") == before + 1, "one demotion made room");
    item *it = d_item(5);
    ok(it != NULL && (it->it_flags & ITEM_HEAP) != 0
       && memcmp(ITEM_data(it), val, VLEN) == 0,
       "the demoted item is the lowest ranked, whole in N");
    item_remove(it);
}

int main(void)
{
    t = NULL;
    unit_settings_defaults();
    settings.tier.policy = TIER_POLICY_HMHC;
    settings.maxbytes = 1 << 20;
    unit_nvm_open((16 << 20) + (size_t)settings.slab_page_size);
    storage_init();
    val = malloc(VLEN);
    memset(val, 'v', VLEN);
    for (unsigned int i = 0; i < NKEYS; i++) {
        put(key_of(i));
    }
    item *it = d_item(0);
    clsid = it->slabs_clsid;
    item_remove(it);
    test_counts();
    test_victims();
    test_demotion();
    free(val);
    storage_shutdown(false);
    assoc_destroy();
    slabs_tier_destroy();
    slabs_destroy();
    nvm_zone_close(&nvm_zone);
    return done_testing();
}
