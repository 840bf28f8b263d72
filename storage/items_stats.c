/*
 * items_stats.c: the item engine's lines of `stats` and `stats tier`
 * (items_stats.h; storage.c adds the crawler's, the LRU maintainer's and
 * the restart code's), and `stats items` and `stats tier classes`.
 * memcached's fields count both zones, `stats tier`'s split them
 * (doc/tiering.md "Stats with two zones").
 *
 * Reads the per-class counters items.c keeps (items_internal.h; relaxed
 * atomics, no lock), the slab, index, queue, migrate, reassign and nvm
 * getters, and the workers' counters summed on read
 * (storage_worker.c).  mig_base_lock guards the migrate.c baseline taken
 * by `stats reset`.
 */
#include "config.h"
#include "items.h"
#include "items_internal.h"
#include "items_stats.h"

#include "clock_nvm.h"
#include "hash_desc.h"
#include "items_mq.h"
#include "logger.h"
#include "migrate.h"
#include "slabs.h"
#include "slabs_tier.h"
#include "tier_reassign.h"
#include "clock.h"
#include "nvm.h"
#include "settings.h"
#include "slab_class.h"
#include "stat_counter.h"
#include "stat_line.h"
#include "storage_worker.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- stats ---- */

struct storage_totals {
    uint64_t curr_items, curr_bytes, evicted, reclaimed, expired_unfetched,
             evicted_unfetched, evicted_active, crawler_reclaimed,
             crawler_items_checked, lrutail_reflocked, direct_reclaims,
             moves_to_cold, moves_to_warm, moves_within_lru, page_rescues;
};

static void sum_classes(struct storage_totals *tot)
{
    memset(tot, 0, sizeof(*tot));
    for (unsigned int id = POWER_SMALLEST; id < MAX_NUMBER_OF_SLAB_CLASSES;
            id++) {
        struct class_counters *cc = &ccount[id];
        struct mq_class_stats ms;
        tot->curr_items += ctr_get(&cc->curr_items);
        tot->curr_bytes += ctr_get(&cc->curr_bytes);
        tot->evicted += ctr_get(&cc->evicted);
        tot->reclaimed += ctr_get(&cc->reclaimed);
        tot->expired_unfetched += ctr_get(&cc->expired_unfetched);
        tot->evicted_unfetched += ctr_get(&cc->evicted_unfetched);
        tot->evicted_active += ctr_get(&cc->evicted_active);
        tot->crawler_reclaimed += ctr_get(&cc->crawler_reclaimed);
        tot->crawler_items_checked += ctr_get(&cc->crawler_items_checked);
        tot->direct_reclaims += ctr_get(&cc->direct_reclaims);
        tot->page_rescues += ctr_get(&cc->page_rescues);
        if (id <= slabs_largest_clsid()) {
            mq_get_class_stats(id, &ms);
            tot->lrutail_reflocked += ms.lrutail_reflocked;
            tot->moves_to_cold += ms.moves_to_cold;
            tot->moves_to_warm += ms.moves_to_warm;
            tot->moves_within_lru += ms.moves_within_lru;
        }
    }
}

#define STAT_U64(name, v) \
    append_stat(name, add_stats, c, "%llu", (unsigned long long)(v))

void items_stats_index_slabs(ADD_STAT add_stats, void *c)
{
    struct assoc_stats as;
    struct slabs_totals sl;
    struct storage_totals tot;

    assoc_get_stats(&as);
    slabs_get_totals(&sl);
    sum_classes(&tot);

    STAT_U64("hash_power_level", as.hash_power_level);
    STAT_U64("hash_bytes", as.hash_bytes);
    STAT_U64("hash_is_expanding", as.expanding ? 1 : 0);
    /* Items of a moving page are rescued into other chunks of their
     * class only by the automover's moves by hits (items_d.c); the others
     * drop them, so they count as reassignment evictions. */
    STAT_U64("slab_reassign_rescues", tot.page_rescues);
    STAT_U64("slab_reassign_chunk_rescues", 0);
    STAT_U64("slab_reassign_evictions_nomem", sl.reassign_evictions);
    STAT_U64("slab_reassign_inline_reclaim", 0);
    STAT_U64("slab_reassign_busy_items", sl.reassign_busy_items);
    STAT_U64("slab_reassign_busy_deletes", 0);
    STAT_U64("slab_reassign_running", sl.reassign_running ? 1 : 0);
    STAT_U64("slabs_moved", sl.slabs_moved);
}

void items_stats_general(ADD_STAT add_stats, void *c,
                         uint64_t conn_malloc_fails)
{
    struct slabs_totals sl;
    struct storage_totals tot;
    struct logger_stats lg;

    logger_get_stats(&lg);
    slabs_get_totals(&sl);
    sum_classes(&tot);

    STAT_U64("malloc_fails", conn_malloc_fails + sl.malloc_fails);
    STAT_U64("log_worker_dropped", lg.worker_dropped);
    STAT_U64("log_worker_written", lg.worker_written);
    STAT_U64("log_watcher_skipped", lg.watcher_skipped);
    STAT_U64("log_watcher_sent", lg.watcher_sent);
    STAT_U64("log_watchers", lg.watchers);
    STAT_U64("unexpected_napi_ids", 0);
    STAT_U64("round_robin_fallback", 0);
    STAT_U64("bytes", tot.curr_bytes);
    STAT_U64("curr_items", tot.curr_items);
    STAT_U64("total_items", ctr_get(&total_items));
    STAT_U64("slab_global_page_pool", sl.global_pool_pages);
    STAT_U64("expired_unfetched", tot.expired_unfetched);
    STAT_U64("evicted_unfetched", tot.evicted_unfetched);
    if (settings.lru_maintainer_thread) {
        STAT_U64("evicted_active", tot.evicted_active);
    }
    STAT_U64("evictions", tot.evicted);
    STAT_U64("reclaimed", tot.reclaimed);
    STAT_U64("crawler_reclaimed", tot.crawler_reclaimed);
    STAT_U64("crawler_items_checked", tot.crawler_items_checked);
    STAT_U64("lrutail_reflocked", tot.lrutail_reflocked);
    if (settings.lru_maintainer_thread) {
        STAT_U64("moves_to_cold", tot.moves_to_cold);
        STAT_U64("moves_to_warm", tot.moves_to_warm);
        STAT_U64("moves_within_lru", tot.moves_within_lru);
        STAT_U64("direct_reclaims", tot.direct_reclaims);
        /* hits move items themselves: no bump is queued, none dropped */
        STAT_U64("lru_bumps_dropped", 0);
    }
}

/* Seconds since the segment's oldest tail item was last used, as
 * memcached's age_hot, age_warm and age (COLD) read their tails. */
static uint64_t segment_age(const struct mq_segment_stats *seg)
{
    return seg->any && current_time > seg->oldest
        ? current_time - seg->oldest : 0;
}

static void item_class_stat(ADD_STAT add_stats, void *c, unsigned int id,
                            const char *name, uint64_t value)
{
    char key[64];
    snprintf(key, sizeof(key), "items:%u:%s", id, name);
    append_stat(key, add_stats, c, "%llu", (unsigned long long)value);
}

/* From evicted to evicted_active, in memcached's order. */
static void item_evicted_stats(ADD_STAT add_stats, void *c, unsigned int id,
                               bool segmented)
{
    struct class_counters *cc = &ccount[id];
    item_class_stat(add_stats, c, id, "evicted", ctr_get(&cc->evicted));
    item_class_stat(add_stats, c, id, "evicted_nonzero",
                    ctr_get(&cc->evicted_nonzero));
    item_class_stat(add_stats, c, id, "evicted_time",
                    ctr_get(&cc->evicted_time));
    item_class_stat(add_stats, c, id, "outofmemory",
                    ctr_get(&cc->outofmemory));
    item_class_stat(add_stats, c, id, "tailrepairs", 0);
    item_class_stat(add_stats, c, id, "reclaimed", ctr_get(&cc->reclaimed));
    item_class_stat(add_stats, c, id, "expired_unfetched",
                    ctr_get(&cc->expired_unfetched));
    item_class_stat(add_stats, c, id, "evicted_unfetched",
                    ctr_get(&cc->evicted_unfetched));
    if (segmented) {
        item_class_stat(add_stats, c, id, "evicted_active",
                        ctr_get(&cc->evicted_active));
    }
}

static void item_stats_class(ADD_STAT add_stats, void *c, unsigned int id,
                             struct storage_worker_stats *ts)
{
    struct class_counters *cc = &ccount[id];
    struct mq_class_stats ms;
    mq_get_class_stats(id, &ms);
    const struct mq_segment_stats *hot = &ms.segment[LRU_HOT];
    const struct mq_segment_stats *warm = &ms.segment[LRU_WARM];
    const struct mq_segment_stats *cold = &ms.segment[LRU_COLD];
    uint64_t n_items = ctr_get(&cc->n_items);
    uint64_t d_items = hot->count + warm->count + cold->count;
    if (d_items + n_items == 0) {
        return;
    }
    /* number counts both zones.  The segments are the D queues' (items_mq.h);
     * the N-zone is the cache's cold tier, so its items count as cold and
     * the three add up to number, as in memcached (doc/tiering.md "Stats
     * with two zones").  Ages are the D queues' (N items are kept in no
     * order). */
    /* memcached's segmented-LRU lines come with its maintainer only */
    bool segmented = settings.lru_maintainer_thread;
    item_class_stat(add_stats, c, id, "number", d_items + n_items);
    if (segmented) {
        item_class_stat(add_stats, c, id, "number_hot", hot->count);
        item_class_stat(add_stats, c, id, "number_warm", warm->count);
        item_class_stat(add_stats, c, id, "number_cold",
                        cold->count + n_items);
        if (settings.temp_lru) {
            /* no temporary LRU here: short-TTL items join the others */
            item_class_stat(add_stats, c, id, "number_temp", 0);
        }
        item_class_stat(add_stats, c, id, "age_hot", segment_age(hot));
        item_class_stat(add_stats, c, id, "age_warm", segment_age(warm));
    }
    item_class_stat(add_stats, c, id, "age", segment_age(cold));
    item_class_stat(add_stats, c, id, "mem_requested",
                    ctr_get(&cc->curr_bytes));
    item_evicted_stats(add_stats, c, id, segmented);
    item_class_stat(add_stats, c, id, "crawler_reclaimed",
                    ctr_get(&cc->crawler_reclaimed));
    item_class_stat(add_stats, c, id, "crawler_items_checked",
                    ctr_get(&cc->crawler_items_checked));
    item_class_stat(add_stats, c, id, "lrutail_reflocked",
                    ms.lrutail_reflocked);
    if (segmented) {
        item_class_stat(add_stats, c, id, "moves_to_cold", ms.moves_to_cold);
        item_class_stat(add_stats, c, id, "moves_to_warm", ms.moves_to_warm);
        item_class_stat(add_stats, c, id, "moves_within_lru",
                        ms.moves_within_lru);
        item_class_stat(add_stats, c, id, "direct_reclaims",
                        ctr_get(&cc->direct_reclaims));
        stat_u64 *hits = ts->lru_hits[id];
        item_class_stat(add_stats, c, id, "hits_to_hot",
                        STAT_GET(hits[LRU_HOT]));
        item_class_stat(add_stats, c, id, "hits_to_warm",
                        STAT_GET(hits[LRU_WARM]));
        item_class_stat(add_stats, c, id, "hits_to_cold",
                        STAT_GET(hits[LRU_COLD]));
        item_class_stat(add_stats, c, id, "hits_to_temp",
                        STAT_GET(hits[LRU_TEMP]));
    }
}

void item_stats(ADD_STAT add_stats, void *c)
{
    struct storage_worker_stats *ts = calloc(1, sizeof(*ts));
    if (ts == NULL) {
        return;
    }
    storage_workers_stats(ts);
    for (unsigned int id = POWER_SMALLEST; id <= slabs_largest_clsid();
            id++) {
        item_stats_class(add_stats, c, id, ts);
    }
    free(ts);
}

void items_stats_reset(void)
{
    storage_workers_stats_reset();
    for (unsigned int id = 0; id < MAX_NUMBER_OF_SLAB_CLASSES; id++) {
        struct class_counters *cc = &ccount[id];
        /* curr_items and curr_bytes describe the cache, not history. */
        atomic_store(&cc->evicted, 0);
        atomic_store(&cc->evicted_nonzero, 0);
        atomic_store(&cc->evicted_time, 0);
        atomic_store(&cc->outofmemory, 0);
        atomic_store(&cc->reclaimed, 0);
        atomic_store(&cc->expired_unfetched, 0);
        atomic_store(&cc->evicted_unfetched, 0);
        atomic_store(&cc->evicted_active, 0);
        atomic_store(&cc->crawler_reclaimed, 0);
        atomic_store(&cc->crawler_items_checked, 0);
        atomic_store(&cc->direct_reclaims, 0);
        atomic_store(&cc->promotions, 0);
        atomic_store(&cc->demotions, 0);
        atomic_store(&cc->d_evictions, 0);
        atomic_store(&cc->n_evictions, 0);
        atomic_store(&cc->n_fallbacks, 0);
        atomic_store(&cc->d_fallbacks, 0);
        atomic_store(&cc->page_demotions, 0);
        atomic_store(&cc->page_evictions, 0);
        atomic_store(&cc->page_rescues, 0);
        atomic_store(&cc->copy_demotions, 0);
        atomic_store(&cc->copies_reclaimed, 0);
        atomic_store(&cc->copies_stored, 0);
        atomic_store(&cc->n_corrupt, 0);
    }
    atomic_store(&total_items, 0);
    mq_reset_class_stats();
    if (active_policy->stats_reset != NULL) {
        active_policy->stats_reset();
    }
    tier_stats_reset();
}

/* ---- stats tier ---- */

/* migrate.c's counters at the last `stats reset` */
static struct migrate_stats mig_base;
static pthread_mutex_t mig_base_lock = PTHREAD_MUTEX_INITIALIZER;

void tier_stats_reset(void)
{
    struct migrate_stats now;
    migrate_get_stats(&now);
    pthread_mutex_lock(&mig_base_lock);
    mig_base = now;
    pthread_mutex_unlock(&mig_base_lock);
    nvm_stats_reset();
}

static void migrate_stats_since_reset(struct migrate_stats *out)
{
    migrate_get_stats(out);
    pthread_mutex_lock(&mig_base_lock);
    out->decay_epochs -= mig_base.decay_epochs;
    out->promotions -= mig_base.promotions;
    out->promotions_queued -= mig_base.promotions_queued;
    out->promotions_dropped -= mig_base.promotions_dropped;
    out->threshold_adjustments -= mig_base.threshold_adjustments;
    pthread_mutex_unlock(&mig_base_lock);
}

struct tier_totals {
    uint64_t items, n_items, bytes, n_bytes, promotions, demotions,
             d_evictions, n_evictions, n_fallbacks, d_fallbacks, d_hits,
             n_hits, page_demotions, page_evictions, inflight_refused,
             staging_refused,
             n_copies, copy_demotions, copies_reclaimed, copies_stored,
             n_corrupt, d_aged;
};

static void sum_tier(const struct storage_worker_stats *ts,
                     struct tier_totals *tot)
{
    memset(tot, 0, sizeof(*tot));
    tot->inflight_refused = STAT_GET(ts->tier_inflight_refused);
    tot->staging_refused = STAT_GET(ts->tier_staging_refused);
    for (unsigned int id = 0; id < MAX_NUMBER_OF_SLAB_CLASSES; id++) {
        struct class_counters *cc = &ccount[id];
        tot->items += ctr_get(&cc->curr_items);
        tot->n_items += ctr_get(&cc->n_items);
        tot->bytes += ctr_get(&cc->curr_bytes);
        tot->n_bytes += ctr_get(&cc->n_bytes);
        tot->promotions += ctr_get(&cc->promotions);
        tot->demotions += ctr_get(&cc->demotions);
        tot->d_evictions += ctr_get(&cc->d_evictions);
        tot->n_evictions += ctr_get(&cc->n_evictions);
        tot->page_demotions += ctr_get(&cc->page_demotions);
        tot->page_evictions += ctr_get(&cc->page_evictions);
        tot->n_fallbacks += ctr_get(&cc->n_fallbacks);
        tot->d_fallbacks += ctr_get(&cc->d_fallbacks);
        tot->n_copies += ctr_get(&cc->n_copies);
        tot->copy_demotions += ctr_get(&cc->copy_demotions);
        tot->copies_reclaimed += ctr_get(&cc->copies_reclaimed);
        tot->copies_stored += ctr_get(&cc->copies_stored);
        tot->n_corrupt += ctr_get(&cc->n_corrupt);
        tot->d_hits += STAT_GET(ts->tier_d_hits[id]);
        tot->n_hits += STAT_GET(ts->tier_n_hits[id]);
        struct mq_class_stats mqs;
        mq_get_class_stats(id, &mqs);
        tot->d_aged += mqs.aged;
    }
}

void tier_mode_stats(ADD_STAT add_stats, void *c)
{
    append_stat("tier_policy", add_stats, c, "%s",
                tier_policy_name(settings.tier.policy));
    append_stat("tier_placement", add_stats, c, "%s",
                settings.tier.placement == TIER_PLACE_NVM ? "nvm"
                                                          : "dram_first");
    append_stat("tier_promote", add_stats, c, "%s",
                settings.tier.promote_async ? "async" : "sync");
}

void items_stats_tier(ADD_STAT add_stats, void *c)
{
    struct storage_worker_stats *ts = calloc(1, sizeof(*ts));
    struct slabs_totals sl;
    struct slabs_tier_totals tt;
    struct migrate_stats ms;
    struct clock_nvm_stats cs;
    struct tier_totals tot;
    uint64_t lines_read, lines_written;
    uint32_t emu_r, emu_w;

    if (ts == NULL) {
        return;
    }
    storage_workers_stats(ts);
    slabs_get_totals(&sl);
    slabs_tier_get_totals(&tt);
    migrate_stats_since_reset(&ms);
    sum_tier(ts, &tot);
    free(ts);
    nvm_stats_sum(&lines_read, &lines_written);
    nvm_emulation_get(&emu_r, &emu_w);
    clock_nvm_get_stats(&cs);
    uint64_t index_bytes = assoc_index_bytes();

    tier_mode_stats(add_stats, c);
    STAT_U64("d_zone_limit", sl.zone_limit);
    STAT_U64("n_zone_limit", tt.zone_limit);
    STAT_U64("d_zone_used", sl.total_malloced);
    STAT_U64("n_zone_used", tt.zone_used);
    STAT_U64("d_items", tot.items - tot.n_items);
    STAT_U64("n_items", tot.n_items);
    STAT_U64("d_bytes", tot.bytes - tot.n_bytes);
    STAT_U64("n_bytes", tot.n_bytes);
    STAT_U64("d_hits", tot.d_hits);
    STAT_U64("n_hits", tot.n_hits);
    STAT_U64("promotions", tot.promotions);
    STAT_U64("promotions_queued", ms.promotions_queued);
    STAT_U64("promotions_dropped", ms.promotions_dropped);
    STAT_U64("demotions", tot.demotions);
    STAT_U64("n_copies", tot.n_copies);
    STAT_U64("copy_demotions", tot.copy_demotions);
    STAT_U64("copies_reclaimed", tot.copies_reclaimed);
    STAT_U64("copies_stored", tot.copies_stored);
    STAT_U64("d_evictions", tot.d_evictions);
    STAT_U64("n_evictions", tot.n_evictions);
    STAT_U64("d_aged", tot.d_aged);
    STAT_U64("n_fallbacks", tot.n_fallbacks);
    STAT_U64("d_fallbacks", tot.d_fallbacks);
    STAT_U64("inflight_bytes", storage_workers_inflight_bytes());
    STAT_U64("inflight_refused", tot.inflight_refused);
    STAT_U64("staging_bytes", storage_workers_staging_bytes());
    STAT_U64("staging_refused", tot.staging_refused);
    STAT_U64("n_items_corrupt", tot.n_corrupt);
    if (active_policy->stats != NULL) {
        active_policy->stats(add_stats, c);
    }
    STAT_U64("nvm_lines_read", lines_read);
    STAT_U64("nvm_lines_written", lines_written);
    STAT_U64("index_bytes", index_bytes);
    append_stat("index_bytes_per_item", add_stats, c, "%.2f",
                tot.items ? (double)index_bytes / (double)tot.items : 0.0);
    STAT_U64("n_zone_bitmap_bytes", tt.bitmap_bytes);
    STAT_U64("clock_examined", cs.examined);
    STAT_U64("clock_second_chances", cs.second_chances);
    STAT_U64("clock_busy", cs.busy);
    STAT_U64("n_pages_moved", cs.pages_moved);
    STAT_U64("clock_probation_evictions", cs.probation_evictions);
    STAT_U64("decay_epochs", ms.decay_epochs);
    STAT_U64("decay_period_requests", ms.decay_period);
    STAT_U64("threshold_adjustments", ms.threshold_adjustments);
    tier_reassign_stats(add_stats, c);
    STAT_U64("reassign_page_demotions", tot.page_demotions);
    STAT_U64("reassign_page_evictions", tot.page_evictions);
    append_stat("nvm_backend", add_stats, c, "%s",
                nvm_zone_backend_name(&nvm_zone));
    append_stat("nvm_granularity", add_stats, c, "%s",
                nvm_zone_granularity_name(&nvm_zone));
    STAT_U64("nvm_emulate_read_ns", emu_r);
    STAT_U64("nvm_emulate_write_ns", emu_w);
    append_stat("nvm_tsc_ticks_per_ns", add_stats, c, "%.3f",
                nvm_emulation_calibration());
}

static void tier_class_stat(ADD_STAT add_stats, void *c, unsigned int id,
                            const char *name, uint64_t value)
{
    char key[64];
    snprintf(key, sizeof(key), "%u:%s", id, name);
    append_stat(key, add_stats, c, "%llu", (unsigned long long)value);
}

/* A class's chunks and bytes in each zone: `stats slabs` and `stats items`
 * add the two zones up, these split them (doc/tiering.md "Stats with two
 * zones"). */
static void tier_class_zone_usage(ADD_STAT add_stats, void *c,
                                  unsigned int id, unsigned int d_pages,
                                  unsigned int n_pages)
{
    struct class_counters *cc = &ccount[id];
    uint64_t perslab = slabs_chunks_per_page(id);
    uint64_t d_free = slabs_class_free_chunks(id, SLAB_ZONE_DRAM);
    uint64_t n_free = slabs_tier_class_free_chunks(id);
    uint64_t d_total = perslab * d_pages;
    uint64_t n_total = perslab * n_pages;
    uint64_t n_bytes = ctr_get(&cc->n_bytes);
    tier_class_stat(add_stats, c, id, "d_used_chunks",
                    d_total > d_free ? d_total - d_free : 0);
    tier_class_stat(add_stats, c, id, "d_free_chunks", d_free);
    tier_class_stat(add_stats, c, id, "n_used_chunks",
                    n_total > n_free ? n_total - n_free : 0);
    tier_class_stat(add_stats, c, id, "n_free_chunks", n_free);
    tier_class_stat(add_stats, c, id, "d_bytes",
                    ctr_get(&cc->curr_bytes) - n_bytes);
    tier_class_stat(add_stats, c, id, "n_bytes", n_bytes);
}

void tier_stats_classes(ADD_STAT add_stats, void *c)
{
    struct storage_worker_stats *ts = calloc(1, sizeof(*ts));
    uint64_t lines_read[MAX_NUMBER_OF_SLAB_CLASSES];
    uint64_t lines_written[MAX_NUMBER_OF_SLAB_CLASSES];

    if (ts == NULL) {
        return;
    }
    storage_workers_stats(ts);
    nvm_stats_sum_classes(lines_read, lines_written,
                          MAX_NUMBER_OF_SLAB_CLASSES);
    for (unsigned int id = POWER_SMALLEST; id <= slabs_largest_clsid();
            id++) {
        unsigned int d_pages = slabs_class_pages(id, SLAB_ZONE_DRAM);
        unsigned int n_pages = slabs_tier_class_pages(id);
        if (d_pages == 0 && n_pages == 0) {
            continue;
        }
        struct class_counters *cc = &ccount[id];
        struct migrate_class_stats mcs;
        migrate_get_class_stats(id, &mcs);
        uint64_t n_items = ctr_get(&cc->n_items);
        char key[64];
        tier_class_stat(add_stats, c, id, "d_pages", d_pages);
        tier_class_stat(add_stats, c, id, "n_pages", n_pages);
        tier_class_stat(add_stats, c, id, "d_items",
                        ctr_get(&cc->curr_items) - n_items);
        tier_class_stat(add_stats, c, id, "n_items", n_items);
        tier_class_zone_usage(add_stats, c, id, d_pages, n_pages);
        tier_class_stat(add_stats, c, id, "threshold",
                        tiering ? mcs.threshold : 0);
        tier_class_stat(add_stats, c, id, "d_hits",
                        STAT_GET(ts->tier_d_hits[id]));
        tier_class_stat(add_stats, c, id, "n_hits",
                        STAT_GET(ts->tier_n_hits[id]));
        tier_class_stat(add_stats, c, id, "promotions",
                        ctr_get(&cc->promotions));
        tier_class_stat(add_stats, c, id, "demotions",
                        ctr_get(&cc->demotions));
        tier_class_stat(add_stats, c, id, "n_copies",
                        ctr_get(&cc->n_copies));
        tier_class_stat(add_stats, c, id, "copy_demotions",
                        ctr_get(&cc->copy_demotions));
        tier_class_stat(add_stats, c, id, "d_evictions",
                        ctr_get(&cc->d_evictions));
        tier_class_stat(add_stats, c, id, "n_evictions",
                        ctr_get(&cc->n_evictions));
        if (active_policy->class_stats != NULL) {
            active_policy->class_stats(add_stats, c, id);
        }
        tier_class_stat(add_stats, c, id, "nvm_lines_read", lines_read[id]);
        tier_class_stat(add_stats, c, id, "nvm_lines_written",
                        lines_written[id]);
        snprintf(key, sizeof(key), "%u:benefit", id);
        append_stat(key, add_stats, c, "%.4f", mcs.last_benefit);
        tier_reassign_class_stats(add_stats, c, id);
    }
    free(ts);
}

#define SIZES_BUCKET 32          /* `stats sizes` granularity, as memcached */

static pthread_mutex_t sizes_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *sizes_hist;     /* NULL = tracking disabled */
static unsigned int sizes_nbuckets;

/* ---- stats sizes histogram ---- */

void sizes_account(size_t ntotal, bool add)
{
    pthread_mutex_lock(&sizes_lock);
    if (sizes_hist != NULL) {
        size_t bucket = (ntotal + SIZES_BUCKET - 1) / SIZES_BUCKET;
        if (bucket < sizes_nbuckets) {
            if (add) {
                sizes_hist[bucket]++;
            } else if (sizes_hist[bucket] > 0) {
                /* Items linked before tracking started were not counted. */
                sizes_hist[bucket]--;
            }
        }
    }
    pthread_mutex_unlock(&sizes_lock);
}

void item_stats_sizes_enable(void)
{
    pthread_mutex_lock(&sizes_lock);
    if (sizes_hist == NULL) {
        unsigned int n = (unsigned int)(settings.item_size_max / SIZES_BUCKET
                                        + 2);
        sizes_hist = calloc(n, sizeof(*sizes_hist));
        sizes_nbuckets = sizes_hist != NULL ? n : 0;
    }
    settings.track_sizes = sizes_hist != NULL;
    pthread_mutex_unlock(&sizes_lock);
}

void item_stats_sizes_disable(void)
{
    pthread_mutex_lock(&sizes_lock);
    free(sizes_hist);
    sizes_hist = NULL;
    sizes_nbuckets = 0;
    settings.track_sizes = false;
    pthread_mutex_unlock(&sizes_lock);
}

void item_stats_sizes(ADD_STAT add_stats, void *c)
{
    pthread_mutex_lock(&sizes_lock);
    if (sizes_hist == NULL) {
        pthread_mutex_unlock(&sizes_lock);
        append_stat("sizes_status", add_stats, c, "disabled");
        return;
    }
    for (unsigned int i = 0; i < sizes_nbuckets; i++) {
        if (sizes_hist[i] != 0) {
            char key[16];
            snprintf(key, sizeof(key), "%u", i * SIZES_BUCKET);
            append_stat(key, add_stats, c, "%llu",
                        (unsigned long long)sizes_hist[i]);
        }
    }
    pthread_mutex_unlock(&sizes_lock);
}
