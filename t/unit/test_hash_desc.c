/*
 * test_hash_desc.c: the index (hash_desc.c) on its own: bucket packing,
 * signatures, insert/find/delete, overflow chains, growth (synchronous and
 * by the background thread while other threads keep using the index), and
 * the index's DRAM bytes per item.
 *
 * Items are plain malloc'd headers with a key: the index only reads keys.
 * N items are written to an anonymous N-zone through slabs_tier.c, and
 * their location words (hot metadata included) are packed and unpacked
 * with the hash_desc.h helpers.
 */
#include "config.h"
#include "hash_desc.h"
#include "nitem.h"
#include "slabs.h"
#include "tap.h"
#include "unit_support.h"
#include "hash.h"
#include "item.h"
#include "item_lock.h"
#include "nvm.h"
#include "nzone.h"
#include "settings.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Room the tests' tables reserve: more than any test stores. */
#define TEST_MAX_ENTRIES (1u << 21)

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
    uint64_t *locp = assoc_find_loc(key, strlen(key), hv, NULL);
    if (locp != NULL) {
        assoc_delete_loc(locp, hv);
    }
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

    assoc_init(12, TEST_MAX_ENTRIES);
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
    item_lock(hv);
    bool found = assoc_find_item(items[1], hv) != NULL;
    bool not_indexed = assoc_find_item(other, hash_key("zzz", 3)) == NULL;
    item_unlock(hv);
    ok(found && not_indexed,
       "assoc_find_item finds an indexed item's word, not another's");
    assoc_destroy();
    for (unsigned int i = 0; i < N; i++) {
        free(items[i]);
    }
    free(other);
}

static void test_overflow(void)
{
    enum { N = 400 };
    static item *items[N];
    char key[64];
    bool all = true;
    struct assoc_stats st;

    assoc_init(2, TEST_MAX_ENTRIES); /* 4 buckets, no growth: chains */
    settings.hash_expand = false;
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
    settings.hash_expand = true;
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

    assoc_init(4, TEST_MAX_ENTRIES);
    settings.hash_expand = false;       /* grown below, in steps */
    for (unsigned int i = 0; i < N; i++) {
        key_of(i, key, sizeof(key));
        items[i] = make_item(key);
        locked_insert(items[i]);
    }
    settings.hash_expand = true;
    bool grew = true;
    for (int round = 0; round < 6; round++) {
        grew = assoc_expand_now() && grew;
    }
    assoc_get_stats(&st);
    ok(grew && st.index_level == 10 && !st.expanding,
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

    assoc_init(4, TEST_MAX_ENTRIES);
    ok(assoc_start_expand_thread() == 0, "expansion thread starts");
    for (unsigned int w = 0; w < WORKERS; w++) {
        pthread_create(&tids[w], NULL, worker, (void *)(uintptr_t)w);
    }
    for (unsigned int w = 0; w < WORKERS; w++) {
        pthread_join(tids[w], NULL);
        errors += worker_errors[w];
    }
    /* Let the growth catch up with the items: polled every millisecond,
     * with a deadline that a sanitizer build on a loaded machine meets
     * (2000 polls, 2 s or so, did not). */
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        assoc_get_stats(&st);
        if (!st.expanding && st.items <= st.buckets * HD_LOAD_X4 / 4) {
            break;
        }
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - start.tv_sec < 60);
    assoc_stop_expand_thread();
    assoc_get_stats(&st);
    ok(errors == 0, "no lookups failed while the table grew (%d)", errors);
    ok(st.expansions >= 5 && st.index_level >= 9,
       "the thread grew the table (%llu expansions, power %u)",
       (unsigned long long)st.expansions, st.index_level);
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

/* DRAM of the index per item as it grows bucket by bucket, split by the
 * inserts themselves (no growth thread): sampled every BATCH inserts from
 * 2^14 buckets' worth to eight times that (three levels), with the
 * server's lock stripes (a key's buckets and its cuckoo moves stay in
 * its stripe, so the stripe count sets how evenly the buckets fill). */
static void test_bytes_per_item(void)
{
    enum { POWER = 14, BATCH = 997 };
    unsigned int start = (1u << POWER) * HD_LOAD_X4 / 4;
    unsigned int total = 8 * start;
    item **items = calloc(total, sizeof(*items));
    char key[64];
    struct assoc_stats st;
    double worst = 0, best = 1e9, at_level = 0, mid_level = 0;

    unit_locks_init(ITEM_LOCK_POWER);
    assoc_init(POWER, TEST_MAX_ENTRIES);
    for (unsigned int i = 0; i < total; i++) {
        key_of(i, key, sizeof(key));
        items[i] = make_item(key);
        locked_insert(items[i]);
        if (i < start || i % BATCH != 0) {
            continue;
        }
        assoc_get_stats(&st);
        /* what stats tier reports: the overflow pool as reserved */
        double per = (double)(st.hash_bytes + st.overflow_reserved)
            / st.items;
        worst = per > worst ? per : worst;
        best = per < best ? per : best;
        uint64_t level_start = (uint64_t)1 << st.index_level;
        if (at_level == 0 && st.index_level == POWER + 2) {
            at_level = per;      /* just past a power of two */
        }
        if (mid_level == 0 && st.buckets >= level_start + level_start / 2) {
            mid_level = per;     /* halfway through a level */
        }
    }
    assoc_get_stats(&st);
    diag("index bytes/item from %u to %u entries: %.2f..%.2f; %.2f just "
         "past a power of two, %.2f halfway through a level; overflow %llu "
         "bytes in use, %llu reserved; %llu cuckoo moves", start, total,
         best, worst, at_level, mid_level,
         (unsigned long long)st.overflow_bytes,
         (unsigned long long)st.overflow_reserved,
         (unsigned long long)st.cuckoo_moves);
    ok(worst <= 16.0, "the index never costs more than 16 bytes per entry "
       "(%.2f at worst)", worst);
    ok(st.cuckoo_moves > 0, "full buckets made room by cuckoo moves");
    bool all = true;
    for (unsigned int i = 0; i < total; i++) {
        key_of(i, key, sizeof(key));
        all = all && locked_find(key) == items[i];
    }
    ok(all, "every key is found after three levels of splits");
    assoc_destroy();
    unit_locks_init(2);
    for (unsigned int i = 0; i < total; i++) {
        free(items[i]);
    }
    free(items);

    assoc_init(4, TEST_MAX_ENTRIES);
    bool reserved = assoc_reserve(100000);
    assoc_get_stats(&st);
    ok(reserved && st.buckets * HD_LOAD_X4 / 4 >= 100000
       && st.buckets * HD_LOAD_X4 / 4 < 100000 + HD_LOAD_X4,
       "assoc_reserve splits up to room for the entries asked (%llu "
       "buckets)", (unsigned long long)st.buckets);
    assoc_destroy();
}

/* ---- N location words ---- */

static void test_n_word(void)
{
    uint64_t off = ((uint64_t)1 << 37) + 8 * 12345;   /* 8-aligned, < 256 GiB */
    uint64_t w = hd_n_make(off, 300, ITEM_FETCHED | ITEM_STALE | ITEM_LINKED,
                           13, 9000);
    ok(hd_loc_is_n(w) && !hd_loc_is_n(hd_loc_from_item((item *)&w)),
       "bit 63 tells an N word from a DRAM pointer");
    ok(hd_n_offset(w) == off, "the offset survives packing");
    ok(hd_n_counter(w) == HD_N_COUNTER_MAX,
       "a counter above 255 is clamped to 255");
    ok(hd_n_flags(w) == (ITEM_FETCHED | ITEM_STALE),
       "fetched and stale kept, other it_flags dropped");
    ok(hd_n_epoch(w) == (13 & 7), "the epoch stamp keeps 3 bits");
    ok(hd_n_atime(w) == HD_N_ATIME_MAX, "the access delta saturates at 8191");
    ok(!hd_n_ref(w), "a fresh word has no reference bit");

    uint64_t v = hd_n_set_ref(w, true);
    v = hd_n_set_counter(v, 17);
    v = hd_n_set_flags(v, ITEM_TOKEN_SENT);
    v = hd_n_set_epoch(v, 6);
    v = hd_n_set_atime(v, 100, 160);
    ok(hd_n_ref(v) && hd_n_counter(v) == 17
       && hd_n_flags(v) == ITEM_TOKEN_SENT && hd_n_epoch(v) == 6
       && hd_n_atime(v) == 60 && hd_n_offset(v) == off && hd_loc_is_n(v),
       "each setter changes its own field only");
    ok(hd_n_atime(hd_n_set_atime(v, 200, 100)) == 0,
       "an access before the stored time counts as delta 0");
    ok(!hd_n_ref(hd_n_set_ref(v, false)) && hd_n_counter(v) == 17,
       "clearing the reference bit");
    uint64_t top = hd_n_make(HD_N_OFF_LIMIT - 8, 0, 0, 0, 0);
    ok(hd_n_offset(top) == HD_N_OFF_LIMIT - 8 && hd_n_counter(top) == 0,
       "the last addressable offset (256 GiB - 8) packs");
}

/* An N item "key" stored at a fresh chunk; returns its location word. */
static uint64_t store_n(const char *key, size_t vlen, uint64_t *off)
{
    size_t nkey = strlen(key);
    unsigned int id = slabs_clsid(sizeof(item) + nkey + 1 + vlen);
    nitem_hdr h;
    char body[4096];
    memset(&h, 0, sizeof(h));
    h.hv = hash_key(key, nkey);
    h.nkey = (uint8_t)nkey;
    h.nbytes = (uint32_t)vlen;
    h.clsid = (uint8_t)id;
    memcpy(body, key, nkey + 1);
    memset(body + nkey + 1, 'v', vlen);
    if (!slabs_tier_alloc(id, off)) {
        return 0;
    }
    nitem_write(*off, &h, body, nkey + 1 + vlen);
    return hd_n_make(*off, 3, ITEM_FETCHED, 1, 0);
}

static uint64_t lines_read(void)
{
    uint64_t r, w;
    nvm_stats_sum(&r, &w);
    return r;
}

static void test_n_slots(void)
{
    enum { N = 3000 };
    static uint64_t offs[N];
    static item *ditems[N];
    char key[64];
    bool all = true;

    unit_nvm_open(32 * 1024 * 1024);
    slabs_init(settings.maxbytes, settings.factor, false);
    struct nzone_attach_result start;
    slabs_tier_init(sizeof(nitem_hdr), &start);
    assoc_init(8, TEST_MAX_ENTRIES);
    /* even keys in N, odd keys in D */
    for (unsigned int i = 0; i < N; i++) {
        key_of(i, key, sizeof(key));
        uint64_t hv = hash_key(key, strlen(key));
        item_lock(hv);
        if (i % 2 == 0) {
            uint64_t w = store_n(key, 20 + i % 200, &offs[i]);
            all = all && w != 0 && assoc_insert_loc(w, hv) == 1;
        } else {
            ditems[i] = make_item(key);
            all = all && assoc_insert(ditems[i], hv) == 1;
        }
        item_unlock(hv);
    }
    ok(all, "%d keys indexed, half of them N items", N);

    struct assoc_stats st;
    assoc_get_stats(&st);
    unsigned int power0 = st.index_level;
    uint64_t read0, written0, read1, written1;
    nvm_stats_sum(&read0, &written0);
    ok(assoc_expand_now() && assoc_expand_now(),
       "the index grows twice with N items in it");
    nvm_stats_sum(&read1, &written1);
    ok(read1 == read0 && written1 == written0,
       "growth reads no NVM line (%llu read, %llu written)",
       (unsigned long long)(read1 - read0),
       (unsigned long long)(written1 - written0));
    assoc_get_stats(&st);
    ok(st.index_level == power0 + 2 && st.items == N,
       "power %u -> %u, %llu items", power0, st.index_level,
       (unsigned long long)st.items);

    unsigned int found_n = 0, found_d = 0, d_only_skips = 0, exact = 0;
    for (unsigned int i = 0; i < N; i++) {
        struct nitem_probe p;
        key_of(i, key, sizeof(key));
        size_t nkey = strlen(key);
        uint64_t hv = hash_key(key, nkey);
        item_lock(hv);
        uint64_t before = lines_read();
        uint64_t *locp = assoc_find_loc(key, nkey, hv, &p);
        uint64_t used = lines_read() - before;
        if (i % 2 == 0) {
            if (locp != NULL && hd_loc_is_n(*locp)
                    && hd_n_offset(*locp) == offs[i] && p.off == offs[i]
                    && nitem_probe_matches(&p, key, nkey)
                    && hd_n_counter(*locp) == 3) {
                found_n++;
            }
            /* the probe reads the item's first lines, up to the line
             * after its key, and nothing else (no signature clash here) */
            if (used == nvm_lines_spanned((char *)nvm_zone.base + offs[i],
                                          p.len)) {
                exact++;
            }
            if (assoc_find(key, nkey, hv) == NULL) {
                d_only_skips++;
            }
        } else if (locp != NULL && hd_loc_to_item(*locp) == ditems[i]
                && used == 0) {
            found_d++;
        }
        item_unlock(hv);
    }
    ok(found_n == N / 2, "every N key found after growth, metadata intact "
       "(%u)", found_n);
    ok(found_d == N / 2, "every D key found, with no NVM read (%u)", found_d);
    ok(exact == N / 2, "an N lookup reads exactly its probe's lines");
    ok(d_only_skips == N / 2, "assoc_find (D only) does not return N keys");

    /* find by offset, delete by slot */
    key_of(42, key, sizeof(key));
    uint64_t hv = hash_key(key, strlen(key));
    item_lock(hv);
    uint64_t *by_off = assoc_find_noff(hv, offs[42]);
    uint64_t *by_key = assoc_find_loc(key, strlen(key), hv, NULL);
    ok(by_off != NULL && by_off == by_key,
       "assoc_find_noff finds the slot by its offset, without NVM");
    *by_off = hd_n_set_ref(*by_off, true);
    ok(hd_n_ref(*assoc_find_loc(key, strlen(key), hv, NULL)),
       "metadata written through the slot pointer is seen by lookups");
    assoc_delete_loc(by_off, hv);
    ok(assoc_find_loc(key, strlen(key), hv, NULL) == NULL
       && assoc_find_noff(hv, offs[42]) == NULL,
       "assoc_delete_loc removes the slot");
    item_unlock(hv);
    assoc_get_stats(&st);
    ok(st.items == N - 1, "item count follows");

    assoc_destroy();
    slabs_tier_destroy();
    slabs_destroy();
    for (unsigned int i = 1; i < N; i += 2) {
        free(ditems[i]);
    }
}

int main(void)
{
    assoc_set_nitem_ops(&nitem_index_ops);
    unit_settings_defaults();
    unit_locks_init(2);         /* <= the smallest initial table used */
    test_packing();
    test_hash_spread();
    test_many_keys();
    test_overflow();
    test_growth();
    test_concurrent_growth();
    test_bytes_per_item();
    test_n_word();
    test_n_slots();
    return done_testing();
}
