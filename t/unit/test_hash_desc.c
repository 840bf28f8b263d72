/*
 * test_hash_desc.c: the index (hash_desc.c) on its own: bucket packing,
 * signatures, insert/find/delete, overflow chains, growth (synchronous and
 * by the background thread while other threads keep using the index), and
 * the index's DRAM bytes per item.
 *
 * Items are plain malloc'd headers with a key: the index only reads keys.
 */
#include "hash_desc.h"
#include "unit_support.h"

#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static item *make_item(const char *key)
{
    size_t nkey = strlen(key);
    item *it = calloc(1, sizeof(item) + nkey + 1);
    if (it == NULL) {
        abort();
    }
    it->nkey = (uint8_t)nkey;
    memcpy(ITEM_key(it), key, nkey + 1);
    return it;
}

static void key_of(unsigned int i, char *buf, size_t len)
{
    snprintf(buf, len, "key:%u:%u", i, i * 2654435761u);
}

static bool locked_insert(item *it)
{
    uint64_t hv = hash_key(ITEM_key(it), it->nkey);
    item_lock(hv);
    int ok_ = assoc_insert(it, hv);
    item_unlock(hv);
    return ok_ == 1;
}

static item *locked_find(const char *key)
{
    uint64_t hv = hash_key(key, strlen(key));
    item_lock(hv);
    item *it = assoc_find(key, strlen(key), hv);
    item_unlock(hv);
    return it;
}

static void locked_delete(const char *key)
{
    uint64_t hv = hash_key(key, strlen(key));
    item_lock(hv);
    assoc_delete(key, strlen(key), hv);
    item_unlock(hv);
}

static void test_packing(void)
{
    ok(sizeof(hd_bucket) == 64, "a bucket is 64 bytes");
    ok(alignof(hd_bucket) == 64, "buckets are cache-line aligned");
    ok(offsetof(hd_bucket, loc) == 24,
       "signatures and the overflow link fill the first 24 bytes");
    ok(hd_signature(0x00000000deadbeefULL) == 1,
       "a zero signature is remapped (0 marks empty slots)");
    ok(hd_signature(0x12345678deadbeefULL) == 0x12345678,
       "the signature is the high 32 bits of the hash");
    item *it = make_item("x");
    ok(hd_loc_to_item(hd_loc_from_item(it)) == it,
       "a location word round-trips to its item");
    free(it);
}

static void test_hash_spread(void)
{
    /* Low bits pick buckets, high bits are signatures: both must spread. */
    enum { N = 1 << 16, B = 1 << 10 };
    static unsigned int low[B], high[B];
    char key[64];
    for (unsigned int i = 0; i < N; i++) {
        key_of(i, key, sizeof(key));
        uint64_t hv = hash_key(key, strlen(key));
        low[hv & (B - 1)]++;
        high[(hv >> 32) & (B - 1)]++;
    }
    unsigned int lo_max = 0, hi_max = 0;
    for (unsigned int i = 0; i < B; i++) {
        lo_max = low[i] > lo_max ? low[i] : lo_max;
        hi_max = high[i] > hi_max ? high[i] : hi_max;
    }
    /* 64 expected per slot; a fair hash stays well under 2x. */
    ok(lo_max < 110 && hi_max < 110,
       "hash spreads keys in low and high bits (max %u, %u of 64 avg)",
       lo_max, hi_max);
    ok(hash_key("abc", 3) == hash_key("abc", 3)
       && hash_key("abc", 3) != hash_key("abd", 3)
       && hash_key("", 0) != hash_key("\0", 1),
       "hash is deterministic and length-aware");
}

static void test_many_keys(void)
{
    enum { N = 20000 };
    static item *items[N];
    char key[64];
    bool all = true;

    assoc_init(12);
    for (unsigned int i = 0; i < N; i++) {
        key_of(i, key, sizeof(key));
        items[i] = make_item(key);
        all = locked_insert(items[i]) && all;
    }
    ok(all, "inserted %d keys", N);
    all = true;
    for (unsigned int i = 0; i < N; i++) {
        key_of(i, key, sizeof(key));
        all = all && locked_find(key) == items[i];
    }
    ok(all, "every key is found and maps to its item");
    ok(locked_find("missing") == NULL, "an absent key is not found");
    for (unsigned int i = 0; i < N; i += 2) {
        key_of(i, key, sizeof(key));
        locked_delete(key);
    }
    all = true;
    for (unsigned int i = 0; i < N; i++) {
        key_of(i, key, sizeof(key));
        item *found = locked_find(key);
        all = all && (i % 2 == 0 ? found == NULL : found == items[i]);
    }
    ok(all, "after deleting every other key, only the rest are found");
    struct assoc_stats st;
    assoc_get_stats(&st);
    ok(st.items == N / 2, "item count follows inserts and deletes (%llu)",
       (unsigned long long)st.items);
    ok(st.sig_false_positives < 10,
       "signature false positives are rare (%llu)",
       (unsigned long long)st.sig_false_positives);
    item *other = make_item("zzz");
    key_of(1, key, sizeof(key));
    uint64_t hv = hash_key(key, strlen(key));
    item *copy = make_item(key);
    item_lock(hv);
    bool replaced = assoc_replace(items[1], copy, hv);
    bool not_indexed = !assoc_replace(other, copy, hash_key("zzz", 3));
    item_unlock(hv);
    ok(replaced && locked_find(key) == copy && not_indexed,
       "assoc_replace swaps the descriptor's item in place");
    assoc_destroy();
    for (unsigned int i = 0; i < N; i++) {
        free(items[i]);
    }
    free(copy);
    free(other);
}

static void test_overflow(void)
{
    enum { N = 400 };
    static item *items[N];
    char key[64];
    bool all = true;
    struct assoc_stats st;

    assoc_init(2);              /* 4 buckets, no growth: long chains */
    for (unsigned int i = 0; i < N; i++) {
        key_of(i, key, sizeof(key));
        items[i] = make_item(key);
        all = locked_insert(items[i]) && all;
    }
    assoc_get_stats(&st);
    ok(all && st.overflow_bytes >= (N / HD_SLOTS - 4) * sizeof(hd_bucket),
       "full buckets chain overflow buckets (%llu bytes)",
       (unsigned long long)st.overflow_bytes);
    all = true;
    for (unsigned int i = 0; i < N; i++) {
        key_of(i, key, sizeof(key));
        all = all && locked_find(key) == items[i];
    }
    ok(all, "keys in overflow buckets are found");
    for (unsigned int i = 0; i < N; i++) {
        key_of(i, key, sizeof(key));
        locked_delete(key);
    }
    assoc_get_stats(&st);
    ok(st.items == 0 && st.overflow_bytes == 0,
       "emptied overflow buckets go back to the pool");
    assoc_destroy();
    for (unsigned int i = 0; i < N; i++) {
        free(items[i]);
    }
}

static void test_growth(void)
{
    enum { N = 5000 };
    static item *items[N];
    char key[64];
    bool all = true;
    struct assoc_stats st;

    assoc_init(4);
    for (unsigned int i = 0; i < N; i++) {
        key_of(i, key, sizeof(key));
        items[i] = make_item(key);
        locked_insert(items[i]);
    }
    bool grew = true;
    for (int round = 0; round < 6; round++) {
        grew = assoc_expand_now() && grew;
    }
    assoc_get_stats(&st);
    ok(grew && st.hash_power_level == 10 && !st.expanding,
       "six expansions take the table from 2^4 to 2^10 buckets");
    for (unsigned int i = 0; i < N; i++) {
        key_of(i, key, sizeof(key));
        all = all && locked_find(key) == items[i];
    }
    ok(all && st.items == N, "growth keeps every key findable");
    assoc_destroy();
    for (unsigned int i = 0; i < N; i++) {
        free(items[i]);
    }
}

/* ---- growth by the thread while other threads use the index ---- */

enum { WORKERS = 2, PER_WORKER = 20000 };
static item *worker_items[WORKERS][PER_WORKER];
static int worker_errors[WORKERS];

static void *worker(void *arg)
{
    unsigned int w = (unsigned int)(uintptr_t)arg;
    char key[64];
    for (unsigned int i = 0; i < PER_WORKER; i++) {
        snprintf(key, sizeof(key), "w%u:%u", w, i);
        worker_items[w][i] = make_item(key);
        if (!locked_insert(worker_items[w][i])) {
            worker_errors[w]++;
        }
        /* Re-check an earlier key of ours: it must never go missing while
         * buckets move under us. */
        unsigned int j = i / 2;
        snprintf(key, sizeof(key), "w%u:%u", w, j);
        if (locked_find(key) != worker_items[w][j]) {
            worker_errors[w]++;
        }
    }
    return NULL;
}

static void test_concurrent_growth(void)
{
    pthread_t tids[WORKERS];
    struct assoc_stats st;
    char key[64];
    int errors = 0;
    bool all = true;

    assoc_init(4);
    ok(assoc_start_expand_thread() == 0, "expansion thread starts");
    for (unsigned int w = 0; w < WORKERS; w++) {
        pthread_create(&tids[w], NULL, worker, (void *)(uintptr_t)w);
    }
    for (unsigned int w = 0; w < WORKERS; w++) {
        pthread_join(tids[w], NULL);
        errors += worker_errors[w];
    }
    /* Let a last expansion finish. */
    for (int i = 0; i < 2000; i++) {
        assoc_get_stats(&st);
        if (!st.expanding && st.items <= ((uint64_t)1 << st.hash_power_level)
                * HD_GROW_LOAD) {
            break;
        }
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    assoc_stop_expand_thread();
    assoc_get_stats(&st);
    ok(errors == 0, "no lookups failed while the table grew (%d)", errors);
    ok(st.expansions >= 5 && st.hash_power_level >= 9,
       "the thread grew the table (%llu expansions, power %u)",
       (unsigned long long)st.expansions, st.hash_power_level);
    for (unsigned int w = 0; w < WORKERS; w++) {
        for (unsigned int i = 0; i < PER_WORKER; i++) {
            snprintf(key, sizeof(key), "w%u:%u", w, i);
            all = all && locked_find(key) == worker_items[w][i];
        }
    }
    ok(all, "after concurrent growth every key is found");
    assoc_destroy();
    for (unsigned int w = 0; w < WORKERS; w++) {
        for (unsigned int i = 0; i < PER_WORKER; i++) {
            free(worker_items[w][i]);
        }
    }
}

/* DRAM of the index per item at the two ends of a growth cycle. */
static void test_bytes_per_item(void)
{
    enum { POWER = 14 };
    unsigned int nbuckets = 1u << POWER;
    unsigned int at_grow = nbuckets * HD_GROW_LOAD;
    item **items = calloc(at_grow, sizeof(*items));
    char key[64];
    struct assoc_stats st;

    assoc_init(POWER);
    for (unsigned int i = 0; i < at_grow; i++) {
        key_of(i, key, sizeof(key));
        items[i] = make_item(key);
        locked_insert(items[i]);
    }
    assoc_get_stats(&st);
    double full = (double)(st.hash_bytes + st.overflow_bytes) / st.items;
    double overflowed = 100.0 * (double)st.overflow_bytes
        / (double)sizeof(hd_bucket) / nbuckets;
    assoc_expand_now();
    assoc_get_stats(&st);
    double after = (double)(st.hash_bytes + st.overflow_bytes) / st.items;
    diag("index bytes/item: %.1f at the growth threshold (load %d of %d), "
         "%.1f right after doubling; overflow %.1f%% of buckets at threshold",
         full, HD_GROW_LOAD, HD_SLOTS, after, overflowed);
    ok(full < 20.0, "at the growth threshold the index costs %.1f bytes/item",
       full);
    ok(after < 40.0, "right after growth it costs %.1f bytes/item", after);
    assoc_destroy();
    for (unsigned int i = 0; i < at_grow; i++) {
        free(items[i]);
    }
    free(items);
}

int main(void)
{
    unit_settings_defaults();
    unit_locks_init(2);         /* <= the smallest initial table used */
    test_packing();
    test_hash_spread();
    test_many_keys();
    test_overflow();
    test_growth();
    test_concurrent_growth();
    test_bytes_per_item();
    return done_testing();
}
