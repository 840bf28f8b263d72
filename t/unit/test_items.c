/*
 * test_items.c: the item API (items.c over slabs, index, MQ, crawler):
 * references, store semantics (set/add/replace/append/prepend/cas, stale
 * cas), incr/decr as stock memcached 1.6.18 behaves, expiry, flush,
 * eviction and -M, the crawler, metadump and the `stats` names.
 */
#include "config.h"
#include "items.h"
#include "storage.h"
#include "crawler.h"
#include "tap.h"
#include "unit_support.h"
#include "clock.h"
#include "item.h"
#include "settings.h"
#include "stat_counter.h"
#include "stat_line.h"
#include "storage_worker.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct storage_worker *t;
/* what the lookups under test reported; their results are checked instead */
static enum item_lookup lookup;
static unsigned int deleted_cls;

static item *store(const char *key, const char *val, enum store_cmd cmd,
                   uint64_t cas_in, enum store_item_type *ret)
{
    size_t nval = strlen(val);
    item *it = item_alloc(key, strlen(key), 7, 0, (int)nval + 2, NULL);
    if (it == NULL) {
        *ret = NO_MEMORY;
        return NULL;
    }
    memcpy(ITEM_data(it), val, nval);
    memcpy(ITEM_data(it) + nval, "\r\n", 2);
    *ret = store_item(it, cmd, t, cas_in, NULL, false);
    return it;
}

static enum store_item_type put(const char *key, const char *val,
                                enum store_cmd cmd, uint64_t cas_in)
{
    enum store_item_type ret;
    item *it = store(key, val, cmd, cas_in, &ret);
    item_remove(it);
    return ret;
}

/* The stored value without "\r\n", or NULL when absent. */
static bool value_is(const char *key, const char *want)
{
    item *it = item_get(key, strlen(key), t, DO_UPDATE, &lookup);
    if (it == NULL) {
        return want == NULL;
    }
    bool same = want != NULL && it->nbytes - 2 == strlen(want)
        && memcmp(ITEM_data(it), want, it->nbytes - 2) == 0;
    if (!same) {
        diag("%s = '%.*s'", key, (int)it->nbytes - 2, ITEM_data(it));
    }
    item_remove(it);
    return same;
}

static uint64_t cas_of(const char *key)
{
    item *it = item_get(key, strlen(key), t, DONT_UPDATE, &lookup);
    uint64_t cas = it ? it->cas : 0;
    item_remove(it);
    return cas;
}

static void test_refs_and_store(void)
{
    ok(put("k", "v1", NREAD_SET, 0) == STORED && value_is("k", "v1"),
       "set then get");
    item *held = item_get("k", 1, t, DO_UPDATE, &lookup);
    ok(held != NULL && atomic_load(&held->refcount) == 2,
       "a hit carries the caller's reference plus the index's");
    ok(item_delete("k", 1, 0, t, &deleted_cls) == DELETE_OK
       && value_is("k", NULL),
       "delete removes the key");
    ok(atomic_load(&held->refcount) == 1
       && memcmp(ITEM_data(held), "v1\r\n", 4) == 0,
       "a reply in flight keeps its item through the delete");
    item_remove(held);
    ok(item_delete("k", 1, 0, t, &deleted_cls) == DELETE_NOT_FOUND,
       "delete of a miss");

    ok(put("a", "1", NREAD_ADD, 0) == STORED
       && put("a", "2", NREAD_ADD, 0) == NOT_STORED && value_is("a", "1"),
       "add stores only a new key");
    ok(put("r", "1", NREAD_REPLACE, 0) == NOT_STORED
       && put("a", "3", NREAD_REPLACE, 0) == STORED && value_is("a", "3"),
       "replace needs the key");
    ok(put("p", "x", NREAD_APPEND, 0) == NOT_STORED
       && put("p", "x", NREAD_PREPEND, 0) == NOT_STORED,
       "append/prepend on a miss: NOT_STORED");

    item *orig = item_alloc("ap", 2, 42, realtime(1000), 5, NULL);
    memcpy(ITEM_data(orig), "mid\r\n", 5);
    store_item(orig, NREAD_SET, t, 0, NULL, false);
    item_remove(orig);
    ok(put("ap", "end", NREAD_APPEND, 0) == STORED
       && put("ap", "pre", NREAD_PREPEND, 0) == STORED
       && value_is("ap", "premidend"), "append and prepend concatenate");
    item *ap = item_get("ap", 2, t, DONT_UPDATE, &lookup);
    ok(ap && ap->client_flags == 42 && ap->exptime == realtime(1000),
       "append/prepend keep the old flags and expiry");
    item_remove(ap);
    ok(put("ap", "zz", NREAD_APPEND, 12345) == EXISTS,
       "append with a wrong cas: EXISTS");
}

static void test_cas(void)
{
    put("c", "1", NREAD_SET, 0);
    uint64_t cas = cas_of("c");
    ok(cas != 0, "items get a cas id");
    ok(put("c", "2", NREAD_CAS, cas + 100) == EXISTS && value_is("c", "1"),
       "cas mismatch: EXISTS");
    ok(put("c", "2", NREAD_CAS, 0) == EXISTS, "cas 0 never matches");
    uint64_t out = 0;
    enum store_item_type ret;
    item *it = item_alloc("c", 1, 0, 0, 3, NULL);
    memcpy(ITEM_data(it), "2\r\n", 3);
    ret = store_item(it, NREAD_CAS, t, cas, &out, false);
    ok(ret == STORED && out != 0 && out != cas && out == cas_of("c"),
       "cas match: STORED, new cas returned");
    item_remove(it);
    ok(put("none", "1", NREAD_CAS, 5) == NOT_FOUND, "cas on a miss");
    ok(put("none", "1", NREAD_SET, 5) == NOT_FOUND
       && put("c", "9", NREAD_SET, 5) == EXISTS,
       "set carrying a cas (meta C) acts as cas");

    uint64_t now_cas = cas_of("c");
    it = item_alloc("c", 1, 0, 0, 3, NULL);
    memcpy(ITEM_data(it), "3\r\n", 3);
    ret = store_item(it, NREAD_CAS, t, now_cas - 1, NULL, true);
    item_remove(it);
    item *st = item_get("c", 1, t, DONT_UPDATE, &lookup);
    ok(ret == STORED && st && (st->it_flags & ITEM_STALE)
       && value_is("c", "3"), "an older cas with cas_stale stores, stale");
    item_remove(st);
    ok(STAT_GET(t->stats.slab_stats[1].cas_badval) == 0
       && STAT_GET(t->stats.slab_stats[1].cas_hits) == 0,
       "cas counters are left to the protocol layer (no double counting)");
}

static enum delta_result_type delta(const char *key, bool incr, uint64_t d,
                                    char *buf)
{
    return add_delta(t, key, strlen(key), incr, d, buf, 0, NULL, NULL);
}

static void test_delta(void)
{
    char buf[INCR_MAX_STORAGE_LEN];
    put("n", "10", NREAD_SET, 0);
    ok(delta("n", false, 1, buf) == DELTA_OK && strcmp(buf, "9") == 0
       && value_is("n", "9 "), "decr 10 by 1: 9, stored space padded");
    ok(delta("n", true, 99, buf) == DELTA_OK && strcmp(buf, "108") == 0
       && value_is("n", "108"), "incr past the length makes a new item");
    ok(delta("n", false, 1000, buf) == DELTA_OK && strcmp(buf, "0") == 0,
       "decr stops at 0");
    put("o", "18446744073709551615", NREAD_SET, 0);
    ok(delta("o", true, 2, buf) == DELTA_OK && strcmp(buf, "1") == 0,
       "incr wraps at 2^64");
    put("o2", "18446744073709551616", NREAD_SET, 0);
    put("m", "-5", NREAD_SET, 0);
    put("e", "", NREAD_SET, 0);
    put("w", "12abc", NREAD_SET, 0);
    ok(delta("o2", true, 1, buf) == DELTA_NON_NUMERIC
       && delta("m", true, 1, buf) == DELTA_NON_NUMERIC
       && delta("e", true, 1, buf) == DELTA_NON_NUMERIC
       && delta("w", true, 1, buf) == DELTA_NON_NUMERIC,
       "too large, negative, empty, trailing junk: non-numeric");
    put("s", " 5 ", NREAD_SET, 0);
    put("plus", "+5", NREAD_SET, 0);
    put("long", "000000000000000000000000000005", NREAD_SET, 0);
    ok(delta("s", true, 1, buf) == DELTA_OK && strcmp(buf, "6") == 0
       && delta("plus", true, 1, buf) == DELTA_OK
       && delta("long", true, 1, buf) == DELTA_OK && strcmp(buf, "6") == 0,
       "spaces, a plus sign and leading zeros parse like memcached");
    ok(delta("nope", true, 1, buf) == DELTA_ITEM_NOT_FOUND, "delta on a miss");
    ok(add_delta(t, "n", 1, true, 1, buf, 999999, NULL, NULL)
       == DELTA_ITEM_CAS_MISMATCH, "delta with a wrong cas");
}

static void test_expiry_and_flush(void)
{
    item *it = item_alloc("x", 1, 0, current_time + 2, 3, NULL);
    memcpy(ITEM_data(it), "1\r\n", 3);
    store_item(it, NREAD_SET, t, 0, NULL, false);
    item_remove(it);
    ok(value_is("x", "1"), "alive before its time");
    current_time += 2;
    uint64_t before = STAT_GET(t->stats.get_expired);
    ok(value_is("x", NULL) && STAT_GET(t->stats.get_expired) == before + 1,
       "expired at its time, counted as get_expired");

    put("f1", "1", NREAD_SET, 0);
    current_time += 1;
    items_flush(0);
    put("f2", "2", NREAD_SET, 0);
    before = STAT_GET(t->stats.get_flushed);
    ok(value_is("f1", NULL) && STAT_GET(t->stats.get_flushed) == before + 1,
       "flush_all invalidates older items");
    ok(value_is("f2", "2"), "an item stored right after the flush survives");
    current_time += 1;
    items_flush(3);
    put("f3", "3", NREAD_SET, 0);
    ok(value_is("f3", "3"), "a delayed flush waits");
    current_time += 4;
    ok(value_is("f3", NULL) && value_is("f2", NULL),
       "then invalidates everything stored before it");
    item *touched = item_touch("nope", 4, 0, t, true, &lookup);
    ok(touched == NULL, "touch of a miss");
    put("tt", "1", NREAD_SET, 0);
    touched = item_touch("tt", 2, current_time + 1, t, true, &lookup);
    item_remove(touched);
    current_time += 1;
    ok(touched != NULL && value_is("tt", NULL), "touch sets a new expiry");
}

static void test_eviction(void)
{
    char key[32], big[900];
    memset(big, 'v', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    bool stored = true;
    for (int i = 0; i < 4000; i++) {
        snprintf(key, sizeof(key), "ev%d", i);
        stored = put(key, big, NREAD_SET, 0) == STORED && stored;
    }
    struct stat_capture *cap = calloc(1, sizeof(*cap));
    char v[64];
    storage_stats_general(capture_stat, cap, 0);
    ok(stored && atoi(captured_value(cap, "evictions", v, sizeof(v))) > 0,
       "a full class evicts (evictions %s)", v);
    ok(value_is("ev3999", big) && value_is("ev0", NULL),
       "the newest item stays, the oldest went first");
    item *pinned = item_get("ev3998", 6, t, DONT_UPDATE, &lookup);
    settings.evict_to_free = 0;
    snprintf(key, sizeof(key), "full");
    enum store_item_type ret;
    item *none = store(key, big, NREAD_SET, 0, &ret);
    ok(none == NULL && ret == NO_MEMORY, "-M: a full class refuses to store");
    settings.evict_to_free = 1;
    item_remove(pinned);
    free(cap);
}

static const char *stock_names[] = {
    "hash_power_level", "hash_bytes", "hash_is_expanding",
    "slab_reassign_rescues", "slab_reassign_chunk_rescues",
    "slab_reassign_evictions_nomem", "slab_reassign_inline_reclaim",
    "slab_reassign_busy_items", "slab_reassign_busy_deletes",
    "slab_reassign_running", "slabs_moved", "lru_crawler_running",
    "lru_crawler_starts", "lru_maintainer_juggles", "malloc_fails",
    "log_worker_dropped", "log_worker_written", "log_watcher_skipped",
    "log_watcher_sent", "log_watchers", "unexpected_napi_ids",
    "round_robin_fallback", "bytes", "curr_items", "total_items",
    "slab_global_page_pool", "expired_unfetched", "evicted_unfetched",
    "evicted_active", "evictions", "reclaimed", "crawler_reclaimed",
    "crawler_items_checked", "lrutail_reflocked", "moves_to_cold",
    "moves_to_warm", "moves_within_lru", "direct_reclaims",
    "lru_bumps_dropped", NULL
};

/* Lines memcached lists only while its crawler has been started, and
 * only with its LRU maintainer. */
static const char *crawler_names[] = {
    "lru_crawler_running", "lru_crawler_starts", NULL
};
static const char *maintainer_names[] = {
    "lru_maintainer_juggles", "evicted_active", "moves_to_cold",
    "moves_to_warm", "moves_within_lru", "direct_reclaims",
    "lru_bumps_dropped", NULL
};

static bool listed_in(const char *name, const char **names)
{
    for (int i = 0; names != NULL && names[i] != NULL; i++) {
        if (strcmp(name, names[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* The general storage stats are stock_names in order, less those of the
 * two lists given. */
static bool stats_names_are(const char **absent1, const char **absent2)
{
    struct stat_capture *cap = calloc(1, sizeof(*cap));
    storage_stats_general(capture_stat, cap, 0);
    const char *p = cap->buf;
    bool same = true;
    for (int i = 0; stock_names[i] != NULL && same; i++) {
        if (listed_in(stock_names[i], absent1)
                || listed_in(stock_names[i], absent2)) {
            continue;
        }
        size_t n = strlen(stock_names[i]);
        if (strncmp(p, stock_names[i], n) != 0 || p[n] != ' ') {
            diag("expected %s at: %.40s", stock_names[i], p);
            same = false;
            break;
        }
        p = strchr(p, '\n') + 1;
    }
    same = same && *p == '\0';
    free(cap);
    return same;
}

static void test_stats_names(void)
{
    /* the crawler is not started in this program */
    settings.lru_maintainer_thread = true;
    ok(stats_names_are(crawler_names, NULL),
       "stats lines in memcached 1.6.18's order");
    settings.lru_maintainer_thread = false;
    ok(stats_names_are(crawler_names, maintainer_names),
       "no_lru_maintainer: without the maintainer's lines, as memcached");
    struct stat_capture *cap = calloc(1, sizeof(*cap));
    char v[64];
    item_stats(capture_stat, cap);
    ok(captured_value(cap, "items:1:number", v, sizeof(v)) != NULL
       && captured_value(cap, "items:1:evicted_unfetched", v, 64) != NULL
       && captured_value(cap, "items:1:number_hot", v, 64) == NULL
       && captured_value(cap, "items:1:hits_to_temp", v, 64) == NULL,
       "no_lru_maintainer: stats items without the segmented LRU's lines");
    settings.lru_maintainer_thread = true;
    cap->len = 0;
    item_stats(capture_stat, cap);
    ok(captured_value(cap, "items:1:number", v, sizeof(v)) != NULL
       && captured_value(cap, "items:1:evicted_active", v, 64) != NULL
       && captured_value(cap, "items:1:hits_to_temp", v, sizeof(v)) != NULL,
       "stats items lists classes with items");
    settings.lru_maintainer_thread = false;
    cap->len = 0;
    item_stats_sizes(capture_stat, cap);
    ok(captured_value(cap, "sizes_status", v, sizeof(v)) != NULL
       && strcmp(v, "disabled") == 0, "stats sizes disabled by default");
    item_stats_sizes_enable();
    put("sz", "abc", NREAD_SET, 0);
    cap->len = 0;
    item_stats_sizes(capture_stat, cap);
    ok(cap->len > 0 && captured_value(cap, "sizes_status", v, 64) == NULL,
       "with tracking on, sizes are listed");
    item_stats_sizes_disable();
    unsigned int bytes = 0;
    char *dump = item_cachedump(1, 2, &bytes);
    ok(dump && bytes > 5 && strncmp(dump, "ITEM ", 5) == 0
       && memcmp(dump + bytes - 5, "END\r\n", 5) == 0,
       "cachedump lists items then END");
    free(dump);
    free(cap);
}

/* metadump's lines, gathered into a string */
struct dump_buf {
    char text[8192];
    size_t used;
};

static bool dump_line(void *ctx, const char *line, size_t len)
{
    struct dump_buf *d = ctx;
    if (d->used + len >= sizeof(d->text)) {
        return false;
    }
    memcpy(d->text + d->used, line, len);
    d->used += len;
    d->text[d->used] = '\0';
    return true;
}

static void test_crawler(void)
{
    struct dump_buf dump = { .used = 0 };
    struct metadump *md = NULL;
    ok(lru_crawler_crawl("all") == CRAWLER_NOTSTARTED,
       "crawl without the crawler: not started");
    ok(lru_crawler_set_enabled(true), "crawler enabled");
    ok(lru_crawler_crawl("0") == CRAWLER_BADCLASS
       && lru_crawler_crawl("1,999") == CRAWLER_BADCLASS
       && lru_crawler_crawl("1,") == CRAWLER_BADCLASS, "bad class lists");

    item *it = item_alloc("a b", 3, 0, current_time + 1, 3, NULL);
    memcpy(ITEM_data(it), "1\r\n", 3);
    store_item(it, NREAD_SET, t, 0, NULL, false);
    item_remove(it);
    ok(lru_crawler_metadump_start("1", &md) == CRAWLER_OK
       && metadump_batch(md, SIZE_MAX, dump_line, &dump) == METADUMP_END
       && strstr(dump.text, "key=a%20b exp=") != NULL,
       "metadump lines use url-encoded keys, and the walk ends");
    metadump_free(md);
    char *line = strstr(dump.text, "key=a%20b");
    ok(line && strstr(line, " fetch=no cls=1 size=") != NULL
       && strchr(line, '\n')[-1] != '\r', "metadump line fields, \\n ended");

    current_time += 2;
    enum crawler_result_type r;
    while ((r = lru_crawler_crawl("all")) == CRAWLER_RUNNING) {
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    ok(r == CRAWLER_OK, "crawl started");
    struct stat_capture *cap = calloc(1, sizeof(*cap));
    char v[64];
    for (int i = 0; i < 2000; i++) {
        cap->len = 0;
        storage_stats_general(capture_stat, cap, 0);
        if (atoi(captured_value(cap, "crawler_reclaimed", v, 64)) > 0) {
            break;
        }
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    ok(atoi(v) >= 1, "the crawler reclaimed the expired item");
    ok(lru_crawler_set_enabled(false)
       && lru_crawler_metadump_start("all", &md) == CRAWLER_NOTSTARTED,
       "disabled crawler: metadump not started");
    free(cap);
}

int main(void)
{
    unit_settings_defaults();
    settings.maxbytes = 2 * 1024 * 1024;
    settings.hashpower_init = 10;
    t = calloc(1, sizeof(*t));
    storage_init();
    ok(storage_start_threads() == 0, "storage threads start");
    test_refs_and_store();
    test_cas();
    test_delta();
    test_expiry_and_flush();
    test_eviction();
    test_stats_names();
    test_crawler();
    storage_shutdown(false);
    free(t);
    return done_testing();
}
