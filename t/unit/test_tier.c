/*
 * test_tier.c: the tiered storage engine (items.c over slabs_tier.c,
 * clock_nvm.c, hash_desc.c and migrate.c) with an anonymous N-zone:
 * placement, exact NVM line counts of an N GET hit, snapshots, metadata
 * written through to N items, demotion keeping value/flags/cas/exptime,
 * synchronous promotion, CLOCK order (second chance, dead items first),
 * CLOCK decisions and counts made from the header under the item lock
 * when the candidate changes between the sweep's unlocked read and its
 * lock, the tier counters of `stats tier`, the fallbacks: to D when N
 * cannot take a value, to N when D cannot free a chunk, and the N chunk
 * allocator's reuse of chunks freed anywhere in a page.
 */
#include "config.h"
#include "items.h"
#include "storage.h"
#include "hash_desc.h"
#include "migrate.h"
#include "nitem.h"
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
#include "slab_class.h"
#include "stat_line.h"
#include "storage_worker.h"
#include "tier_policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct storage_worker *t;
/* what the lookups under test reported; their results are checked instead */
static enum item_lookup lookup;

/* `stats`' storage lines, in unit_stat_u64's shape */
static void general_stats(ADD_STAT add_stats, void *c)
{
    storage_stats_general(add_stats, c, 0);
}
static unsigned int deleted_cls;

static void nvm_counts(uint64_t *r, uint64_t *w)
{
    nvm_stats_sum(r, w);
}

static enum store_item_type put(const char *key, const char *val,
                                client_flags_t flags, rel_time_t exptime)
{
    size_t nval = strlen(val);
    item *it = item_alloc(key, strlen(key), flags, exptime, (int)nval + 2,
                          NULL);
    if (it == NULL) {
        return NO_MEMORY;
    }
    memcpy(ITEM_data(it), val, nval);
    memcpy(ITEM_data(it) + nval, "\r\n", 2);
    enum store_item_type ret = store_item(it, NREAD_SET, t, 0, NULL, false);
    item_remove(it);
    return ret;
}

/* 'D', 'N' or 0 (absent); *off gets an N item's offset. */
static char zone_of(const char *key, uint64_t *off)
{
    size_t nkey = strlen(key);
    uint64_t hv = hash_key(key, nkey);
    char z = 0;
    item_lock(hv);
    uint64_t *locp = assoc_find_loc(key, nkey, hv, NULL);
    if (locp != NULL) {
        z = hd_loc_is_n(*locp) ? 'N' : 'D';
        if (z == 'N' && off != NULL) {
            *off = hd_n_offset(*locp);
        }
    }
    item_unlock(hv);
    return z;
}

static uint64_t word_of(const char *key)
{
    size_t nkey = strlen(key);
    uint64_t hv = hash_key(key, nkey);
    item_lock(hv);
    uint64_t *locp = assoc_find_loc(key, nkey, hv, NULL);
    uint64_t w = locp ? *locp : 0;
    item_unlock(hv);
    return w;
}

static bool value_is(const char *key, const char *want)
{
    item *it = item_get(key, strlen(key), t, DONT_UPDATE, &lookup);
    bool same = it != NULL && it->nbytes - 2 == strlen(want)
        && memcmp(ITEM_data(it), want, it->nbytes - 2) == 0
        && memcmp(ITEM_data(it) + it->nbytes - 2, "\r\n", 2) == 0;
    item_remove(it);
    return same;
}

static char *make_value(size_t n, char seed)
{
    char *v = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        v[i] = (char)('a' + (seed + i * 7) % 26);
    }
    v[n] = '\0';
    return v;
}

/* Start a fresh engine: D limit dram bytes, N-zone nvm bytes, the tier
 * policy chosen once, as the server does. */
/* nvm: the bytes for items; the zone has one page more, for its metadata
 * (nzone.h) */
static void engine_start(size_t dram, size_t nvm, enum tier_policy policy)
{
    unit_settings_defaults();
    settings.tier.policy = policy;
    settings.maxbytes = dram;
    settings.tier.promote_async = false;
    unit_nvm_open(nvm + (size_t)settings.slab_page_size);
    storage_init();
    nvm_stats_reset();
}

static void engine_stop(void)
{
    storage_shutdown(false);
    assoc_destroy();
    slabs_tier_destroy();
    slabs_destroy();
}

/* ---- placement and exact line counts ---- */

static void test_get_lines(void)
{
    engine_start(4 << 20, 16 << 20, TIER_POLICY_NVM);
    static const size_t sizes[] = { 1, 10, 23, 24, 63, 64, 100, 500, 1000,
                                    4000, 9000, 100000 };
    unsigned int exact = 0, nowrite = 0, intact = 0, n_zone = 0;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        for (unsigned int j = 0; j < 6; j++) {
            char key[32];
            snprintf(key, sizeof(key), "lines:%zu:%u", sizes[i], j);
            char *val = make_value(sizes[i], (char)j);
            put(key, val, 5, 0);
            uint64_t off;
            if (zone_of(key, &off) == 'N') {
                n_zone++;
            }
            uint64_t r0, w0, r1, w1;
            nvm_counts(&r0, &w0);
            item *it = item_get(key, strlen(key), t, DO_UPDATE, &lookup);
            nvm_counts(&r1, &w1);
            size_t ntotal = nitem_ntotal(strlen(key), sizes[i] + 2);
            if (it != NULL && r1 - r0 == nitem_lines(off, ntotal)) {
                exact++;
            } else {
                diag("%s: %llu lines read, item spans %llu", key,
                     (unsigned long long)(r1 - r0),
                     (unsigned long long)nitem_lines(off, ntotal));
            }
            if (w1 == w0) {
                nowrite++;
            }
            if (it != NULL && (it->it_flags & ITEM_HEAP)
                    && it->client_flags == 5 && it->nbytes == sizes[i] + 2
                    && memcmp(ITEM_data(it), val, sizes[i]) == 0
                    && memcmp(ITEM_key(it), key, strlen(key) + 1) == 0) {
                intact++;
            }
            item_remove(it);
            free(val);
        }
    }
    unsigned int n = (unsigned int)(sizeof(sizes) / sizeof(sizes[0]) * 6);
    ok(n_zone == n, "tier_policy=nvm puts every item in the N-zone");
    ok(exact == n, "a GET hit of an N item of L lines reads exactly L lines "
       "(%u of %u)", exact, n);
    ok(nowrite == n, "a GET hit of an N item writes nothing to NVM");
    ok(intact == n, "the DRAM snapshot holds key, flags and value");

    uint64_t w = word_of("lines:10:0");
    ok(hd_n_ref(w) && (hd_n_flags(w) & ITEM_FETCHED)
       && hd_n_counter(w) == 2,
       "the hit set the reference bit, fetched, and counter 2 in DRAM");
    ok(unit_tier_stat("n_items") == n && unit_tier_stat("d_items") == 0,
       "stats tier: n_items %u, d_items 0", n);
    ok(unit_tier_stat("n_hits") == 0,
       "hits without a worker thread are not counted as client requests");
    engine_stop();

    /* hmcached, dram_first: a new key goes to D while its class has room */
    engine_start(4 << 20, 16 << 20, TIER_POLICY_HMCACHED);
    settings.tier.placement = TIER_PLACE_NVM;
    put("lines:10:1", "in N", 0, 0);
    n = (unsigned int)unit_tier_stat("n_items");
    settings.tier.placement = TIER_PLACE_DRAM_FIRST;
    put("fresh", "in dram", 0, 0);
    ok(zone_of("fresh", NULL) == 'D', "dram_first places a new key in D");
    /* a new version of an N key also goes to D while there is room */
    put("lines:10:1", "now in D", 0, 0);
    ok(zone_of("lines:10:1", NULL) == 'D' && value_is("lines:10:1",
                                                       "now in D"),
       "a new version of an N key moves to D (exclusive: one copy)");
    ok(unit_tier_stat("n_items") == n - 1, "the old N version is gone");

    /* placed before the lookup, a store guesses N under tier_placement=nvm;
     * the store finds the key in D and keeps it there */
    settings.tier.placement = TIER_PLACE_NVM;
    unsigned int d_items = (unsigned int)unit_tier_stat("d_items");
    ok(put("fresh", "again", 0, 0) == STORED && zone_of("fresh", NULL) == 'D'
       && value_is("fresh", "again")
       && unit_tier_stat("d_items") == d_items
       && unit_tier_stat("n_items") == n - 1,
       "tier_placement=nvm: a new version of a D key stays in D, one copy");
    ok(put("newer", "to N", 0, 0) == STORED && zone_of("newer", NULL) == 'N',
       "tier_placement=nvm: a new key goes to N");
    settings.tier.placement = TIER_PLACE_DRAM_FIRST;
    engine_stop();
}

/* ---- snapshots and write-through ---- */

static void test_write_through(void)
{
    engine_start(4 << 20, 16 << 20, TIER_POLICY_NVM);
    put("wt", "12345", 9, 0);
    uint64_t off;
    ok(zone_of("wt", &off) == 'N', "wt stored in N");

    item *it = item_touch("wt", 2, current_time + 500, t, true, &lookup);
    item_remove(it);
    it = item_get("wt", 2, t, DONT_UPDATE, &lookup);
    ok(it != NULL && it->exptime == current_time + 500,
       "touch of an N item rewrites its exptime in NVM");
    uint64_t hv = hash_key("wt", 2);
    item_lock(hv);
    uint64_t cas = get_cas_id();
    do_item_set_flags(it, hv, ITEM_STALE | ITEM_TOKEN_SENT, 0);
    do_item_set_cas(it, hv, cas);
    item_unlock(hv);
    item_remove(it);
    it = item_get("wt", 2, t, DONT_UPDATE, &lookup);
    ok(it != NULL && (it->it_flags & ITEM_STALE)
       && (it->it_flags & ITEM_TOKEN_SENT) && it->cas == cas,
       "flags (in the slot) and cas (in NVM) written through a snapshot");
    item_remove(it);

    /* incr of an N item: the value keeps its length like memcached's in
     * place update when nobody else holds it */
    put("num", "100", 0, 0);
    char buf[INCR_MAX_STORAGE_LEN];
    ok(add_delta(t, "num", 3, false, 91, buf, 0, NULL, NULL) == DELTA_OK
       && value_is("num", "9  "), "decr of an N item: '9  ' as memcached");
    item *held = item_get("num", 3, t, DONT_UPDATE, &lookup);
    ok(add_delta(t, "num", 3, true, 1, buf, 0, NULL, NULL) == DELTA_OK
       && value_is("num", "10"),
       "with a reply holding it, a new item of the exact length");
    item_remove(held);
    ok(item_delete("num", 3, 0, t, &deleted_cls) == DELETE_OK
       && zone_of("num", NULL) == 0,
       "delete of an N item");
    engine_stop();
}

/* ---- demotion ---- */

static void test_demotion(void)
{
    engine_start(1 << 20, 16 << 20, TIER_POLICY_HMCACHED);
    char *val = make_value(900, 1);
    /* fill the class's one D page; later keys land in N (dram_first) */
    unsigned int n = 0;
    char key[32];
    for (;; n++) {
        snprintf(key, sizeof(key), "dm:%u", n);
        put(key, val, n, n == 0 ? current_time + 1000 : 0);
        if (zone_of(key, NULL) == 'N') {
            break;
        }
    }
    ok(n > 100, "%u keys fit the class's D page, then N", n);
    item *first = item_get("dm:0", 4, t, DONT_UPDATE, &lookup);
    uint64_t cas0 = first->cas;
    rel_time_t exp0 = first->exptime;
    item_remove(first);
    ok(zone_of("dm:0", NULL) == 'D', "dm:0 is in D");

    /* a new version of a D key needs a D chunk: the MQ victim (queue 0
     * tail, the oldest: dm:0) is demoted */
    put("dm:5", val, 5, 0);
    uint64_t off;
    ok(zone_of("dm:0", &off) == 'N', "the MQ victim dm:0 was demoted to N");
    item *it = item_get("dm:0", 4, t, DONT_UPDATE, &lookup);
    ok(it != NULL && it->cas == cas0 && it->exptime == exp0
       && it->client_flags == 0 && it->nbytes == 902
       && memcmp(ITEM_data(it), val, 900) == 0,
       "demotion keeps value, flags, cas and exptime");
    item_remove(it);
    ok(unit_tier_stat("demotions") == 1 && unit_tier_stat("d_evictions") == 0,
       "stats tier: demotions 1, no eviction");
    ok(zone_of("dm:5", NULL) == 'D' && value_is("dm:5", val),
       "the new version stayed in D");
    free(val);
    engine_stop();
}

/* ---- promotion ---- */

static void test_promotion(void)
{
    engine_start(4 << 20, 16 << 20, TIER_POLICY_HMCACHED);
    settings.tier.placement = TIER_PLACE_NVM;
    put("hot", "warm value", 3, 0);
    settings.tier.placement = TIER_PLACE_DRAM_FIRST;
    ok(zone_of("hot", NULL) == 'N', "hot starts in N (counter 1 from SET)");
    uint32_t threshold = migrate_threshold(slabs_clsid(
        sizeof(item) + 3 + 1 + 12));
    unsigned int gets = 0;
    while (zone_of("hot", NULL) == 'N' && gets < 20) {
        item_remove(item_get("hot", 3, t, DO_UPDATE, &lookup));
        gets++;
    }
    ok(zone_of("hot", NULL) == 'D' && gets == threshold,
       "promoted (sync, free D chunk) at the hit making the counter exceed "
       "%u: %u gets", threshold, gets);
    ok(value_is("hot", "warm value"), "the value survived the move");
    ok(unit_tier_stat("promotions") == 1 && unit_tier_stat("n_items") == 0
       && unit_tier_stat("d_items") == 1, "stats tier counts the promotion");
    engine_stop();
}

/* ---- CLOCK ---- */

/* Keys whose item-lock stripes differ (the sweep trylocks them). */
static void pick_keys(char keys[][32], unsigned int n, const char *prefix)
{
    unsigned int found = 0;
    for (unsigned int i = 0; found < n; i++) {
        snprintf(keys[found], 32, "%s%u", prefix, i);
        uint64_t hv = hash_key(keys[found], strlen(keys[found]));
        bool clash = false;
        for (unsigned int j = 0; j < found; j++) {
            if ((hash_key(keys[j], strlen(keys[j])) & 1023) == (hv & 1023)) {
                clash = true;
            }
        }
        if (!clash) {
            found++;
        }
    }
}

static void test_clock(void)
{
    /* one N page: the largest class's chunks, a handful per page */
    engine_start(4 << 20, 1 << 20, TIER_POLICY_NVM);
    unsigned int id = POWER_SMALLEST;
    while (slabs_chunks_per_page(id) > 8) {
        id++;
    }
    unsigned int per = slabs_chunks_per_page(id);
    size_t vlen = slabs_chunk_size(id) - sizeof(item) - 16;
    char *val = make_value(vlen, 3);
    char keys[16][32];
    pick_keys(keys, per + 3, "c");
    for (unsigned int i = 0; i < per; i++) {
        put(keys[i], val, i, i == 2 ? current_time + 10 : 0);
    }
    ok(unit_tier_stat("n_items") == per, "the page holds %u items", per);
    /* referenced: 0 and 2; 2 then expires */
    item_remove(item_get(keys[0], strlen(keys[0]), t, DO_UPDATE, &lookup));
    item_remove(item_get(keys[2], strlen(keys[2]), t, DO_UPDATE, &lookup));
    current_time += 20;

    put(keys[per], val, 0, 0);
    ok(zone_of(keys[0], NULL) == 'N' && zone_of(keys[1], NULL) == 0,
       "second chance: the referenced item 0 survives, 1 is evicted");
    ok(!hd_n_ref(word_of(keys[0])), "item 0 lost its reference bit");
    put(keys[per + 1], val, 0, 0);
    ok(zone_of(keys[2], NULL) == 0 && zone_of(keys[3], NULL) == 'N',
       "an expired item is reclaimed first, even with its bit set");
    ok(unit_tier_stat("n_evictions") == 1, "one eviction (the expired one is "
       "a reclaim)");
    put(keys[per + 2], val, 0, 0);
    ok(zone_of(keys[3], NULL) == 0 && zone_of(keys[0], NULL) == 'N',
       "the hand goes on: item 3 next");
    ok(value_is(keys[per], val) && value_is(keys[per + 1], val)
       && value_is(keys[per + 2], val), "the new items read back");

    /* -M: a full N-zone refuses instead of evicting */
    settings.evict_to_free = 0;
    uint64_t before = unit_tier_stat("n_evictions");
    char extra[32];
    snprintf(extra, sizeof(extra), "%sM", keys[per + 2]);
    enum store_item_type r = put(extra, val, 0, 0);
    ok(unit_tier_stat("n_evictions") == before,
       "-M: no N eviction (store %s)", r == STORED ? "fell back to D"
                                                   : "refused");
    settings.evict_to_free = 1;
    free(val);
    engine_stop();
}

/* ---- CLOCK: the candidate changes between the unlocked read and the
 * lock ---- */

/* When set, item_trylock calls it first, on the calling thread and with
 * no lock of its own held: a test plays what another thread does between
 * a caller's unlocked read and its lock. */
static void (*unit_trylock_hook)(uint64_t hv);

/* test_tier is linked with --wrap=item_trylock: the engine's trylocks
 * come here, then go to the real one (item_locks.c). */
int __real_item_trylock(uint64_t hv);
int __wrap_item_trylock(uint64_t hv);

int __wrap_item_trylock(uint64_t hv)
{
    if (unit_trylock_hook != NULL) {
        unit_trylock_hook(hv);
    }
    return __real_item_trylock(hv);
}

static const char *race_key;
static void (*race_action)(void);

/* Once, when the sweep is about to lock race_key's stripe: it has read
 * the header without the lock and has not locked yet. */
static void race_at_trylock(uint64_t hv)
{
    if (race_action != NULL && hv == hash_key(race_key, strlen(race_key))) {
        void (*act)(void) = race_action;
        race_action = NULL;
        act();
    }
}

/* A full N page of `per` items of class *id; the hand starts at its first
 * chunk, keys[0]. */
static char *race_setup(char keys[][32], unsigned int *id, unsigned int *per)
{
    engine_start(4 << 20, 1 << 20, TIER_POLICY_NVM);
    *id = POWER_SMALLEST;
    while (slabs_chunks_per_page(*id) > 8) {
        (*id)++;
    }
    *per = slabs_chunks_per_page(*id);
    size_t vlen = slabs_chunk_size(*id) - sizeof(item) - 16;
    char *val = make_value(vlen, 5);
    pick_keys(keys, *per + 1, "r");
    for (unsigned int i = 0; i < *per; i++) {
        put(keys[i], val, 0, 0);
    }
    return val;
}

static char race_keys[16][32];

static void touch_expired(void)
{
    item_remove(item_touch(race_keys[0], strlen(race_keys[0]),
                           current_time - 1, t, true, &lookup));
}

static void test_clock_touch_race(void)
{
    unsigned int id, per;
    char *val = race_setup(race_keys, &id, &per);
    uint64_t reclaimed = unit_stat_u64(general_stats, "reclaimed");
    /* a touch that expires keys[0] lands between the sweep's read of its
     * header and its lock */
    race_key = race_keys[0];
    race_action = touch_expired;
    unit_trylock_hook = race_at_trylock;
    put(race_keys[per], val, 0, 0);
    unit_trylock_hook = NULL;
    ok(race_action == NULL, "the touch ran inside the sweep");
    ok(zone_of(race_keys[0], NULL) == 0 && zone_of(race_keys[1], NULL) == 'N',
       "the item expired by the touch is the one taken");
    ok(unit_stat_u64(general_stats, "reclaimed") == reclaimed + 1
       && unit_tier_stat("n_evictions") == 0,
       "counted as reclaimed (expired under the lock), not as an eviction");
    free(val);
    engine_stop();
}

static char *race_val;
static uint64_t race_new_off;

/* keys[0] is deleted and stored again, shorter and with an expiry: its
 * new version takes the chunk its old one freed (the only free one). */
static void restore_shorter(void)
{
    item_delete(race_keys[0], strlen(race_keys[0]), 0, t, &deleted_cls);
    race_val[strlen(race_val) - 8] = '\0';
    put(race_keys[0], race_val, 0, current_time + 1000);
    zone_of(race_keys[0], &race_new_off);
}

static void test_clock_reuse_race(void)
{
    unsigned int id, per;
    race_val = race_setup(race_keys, &id, &per);
    char *val = strdup(race_val);
    uint64_t off_before = 0;
    zone_of(race_keys[0], &off_before);
    race_new_off = off_before + 1;
    race_key = race_keys[0];
    race_action = restore_shorter;
    unit_trylock_hook = race_at_trylock;
    put(race_keys[per], val, 0, 0);
    unit_trylock_hook = NULL;
    ok(race_action == NULL && race_new_off == off_before,
       "the delete and store ran inside the sweep; the new version took "
       "the old one's chunk");
    char name[64];
    snprintf(name, sizeof(name), "items:%u:evicted_nonzero", id);
    ok(zone_of(race_keys[0], NULL) == 0 && zone_of(race_keys[1], NULL) == 'N',
       "the new version in the reused chunk is the one evicted");
    ok(unit_stat_u64(item_stats, name) == 1,
       "evicted_nonzero counts its expiry (the header under the lock)");
    for (unsigned int i = 0; i <= per; i++) {
        item_delete(race_keys[i], strlen(race_keys[i]), 0, t, &deleted_cls);
    }
    ok(unit_stat_u64(general_stats, "curr_items") == 0
       && unit_stat_u64(general_stats, "bytes") == 0,
       "once every key is deleted, curr_items and bytes are 0 (the "
       "eviction subtracted the new version's size)");
    free(val);
    free(race_val);
    engine_stop();
}

/* ---- the N-zone cannot take a value: fallback to D ---- */

static void test_fallback(void)
{
    engine_start(4 << 20, 1 << 20, TIER_POLICY_NVM);
    put("a", "small", 0, 0);               /* takes the only N page */
    char *big = make_value(50000, 2);       /* another class: no N page */
    ok(put("b", big, 0, 0) == STORED && zone_of("b", NULL) == 'D'
       && value_is("b", big), "a class without N pages stores in D");
    ok(unit_tier_stat("n_fallbacks") == 1, "counted as n_fallbacks");
    free(big);
    engine_stop();
}

/* ---- D cannot free a chunk: fallback to N ---- */

static void test_d_fallback(void)
{
    engine_start(1 << 20, 16 << 20, TIER_POLICY_HMCACHED);
    char *val = make_value(900, 3);
    char key[32];
    unsigned int n = 0;
    for (;; n++) {
        snprintf(key, sizeof(key), "df:%u", n);
        put(key, val, 0, 0);
        if (zone_of(key, NULL) == 'N') {
            break;
        }
    }
    /* every D item of the class held, as replies being written hold
     * them: the D allocator finds no victim it may take */
    item **held = calloc(n, sizeof(*held));
    for (unsigned int i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "df:%u", i);
        held[i] = item_get(key, strlen(key), t, DONT_UPDATE, &lookup);
    }
    ok(zone_of("df:5", NULL) == 'D', "df:5 is in D, its class's page full");
    char *val2 = make_value(900, 4);
    ok(put("df:5", val2, 0, 0) == STORED, "a new version of df:5 is stored");
    ok(zone_of("df:5", NULL) == 'N' && value_is("df:5", val2),
       "in N, with its value");
    ok(unit_tier_stat("d_fallbacks") == 1 && unit_tier_stat("demotions") == 0,
       "counted as d_fallbacks; nothing demoted");
    for (unsigned int i = 0; i < n; i++) {
        item_remove(held[i]);
    }
    free(held);
    free(val);
    free(val2);
    engine_stop();
}

/* ---- the N chunk allocator (slabs_tier.c) ---- */

static item *no_victim(unsigned int clsid, bool (*accept)(item *, void *),
                       void *arg, uint64_t *hv_out)
{
    return NULL;
}

/* Every registered policy can run; one that keeps N copies and ranks D
 * items itself (the two share the item header's bytes) is refused, as
 * is one that keeps copies with another reclaim than the CLOCK's. */
static void test_policy_conflicts(void)
{
    for (int p = 0; p < TIER_POLICY_COUNT; p++) {
        if (p == TIER_POLICY_DRAM) {
            continue;           /* no N-zone: the engine starts no policy */
        }
        const struct tier_policy_ops *ops = tier_policy_of(p);
        const char *why = tier_policy_conflict(ops);
        ok(why == NULL, "%s can run%s%s", ops->name, why ? ": " : "",
           why ? why : "");
    }
    struct tier_policy_ops both = policy_hotter;
    both.d_victim = no_victim;
    ok(tier_policy_conflict(&both) != NULL,
       "N copies and a D ranking of its own are refused");
    struct tier_policy_ops lru = policy_hotter;
    lru.n_reclaim = policy_duallru.n_reclaim;
    ok(tier_policy_conflict(&lru) != NULL,
       "N copies without the CLOCK's reclaim are refused");
}

/* Every chunk of a page is handed out once; chunks freed anywhere in it
 * (and only they) are handed out again before the class takes a new
 * page. */
static void test_chunk_allocator(void)
{
    engine_start(4 << 20, 8 << 20, TIER_POLICY_NVM);
    unsigned int id = slabs_clsid(300);
    unsigned int perslab = slabs_chunks_per_page(id);
    size_t psize = slabs_tier_page_size();
    uint64_t pages0 = slabs_tier_pages_used();
    uint64_t *offs = calloc(perslab, sizeof(*offs));
    bool *freed = calloc(perslab, sizeof(*freed));
    unsigned int got = 0, in_page = 0, nfreed = 0;
    for (unsigned int i = 0; i < perslab; i++) {
        got += slabs_tier_alloc(id, &offs[i]);
        in_page += offs[i] / psize == pages0;
    }
    ok(got == perslab && in_page == perslab,
       "a page's %u chunks handed out from the page (%u, %u in it)",
       perslab, got, in_page);
    ok(slabs_tier_pages_used() == pages0 + 1, "one page taken");
    for (unsigned int i = 3; i < perslab; i += 7) {
        slabs_tier_free(offs[i]);
        freed[i] = true;
        nfreed++;
    }
    slabs_tier_free(offs[perslab - 1]);
    freed[perslab - 1] = true;
    nfreed++;
    unsigned int again = 0, wrong = 0;
    for (unsigned int n = 0; n < nfreed; n++) {
        uint64_t off;
        if (!slabs_tier_alloc(id, &off)) {
            break;
        }
        uint64_t chunk = (off - pages0 * psize) / slabs_chunk_size(id);
        if (off / psize == pages0 && chunk < perslab && freed[chunk]) {
            freed[chunk] = false;
            again++;
        } else {
            wrong++;
        }
    }
    ok(again == nfreed && wrong == 0,
       "the %u freed chunks, each once, and no other (%u, %u wrong)",
       nfreed, again, wrong);
    ok(slabs_tier_pages_used() == pages0 + 1,
       "no new page while the page had free chunks");
    uint64_t off;
    ok(slabs_tier_alloc(id, &off) && off / psize == pages0 + 1,
       "the next chunk comes from a new page");
    free(freed);
    free(offs);
    engine_stop();
}

int main(void)
{
    t = NULL;
    test_get_lines();
    test_write_through();
    test_demotion();
    test_promotion();
    test_clock();
    test_clock_touch_race();
    test_clock_reuse_race();
    test_fallback();
    test_d_fallback();
    test_chunk_allocator();
    test_policy_conflicts();
    nvm_zone_close(&nvm_zone);
    return done_testing();
}
