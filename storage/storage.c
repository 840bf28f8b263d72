/*
 * storage.c: the storage engine's start-up and shutdown (storage.h), in
 * the order its parts need each other: the item locks, the memory file,
 * the slabs and the N-zone's pages, the index, the queues and the tier
 * machinery, then (storage_start_threads) the N-zone's recovery, the -e
 * restore and the storage threads; at shutdown the threads, then what a
 * warm restart needs; the `stats` listing, `stats tier` and `stats
 * reset` of storage, the engine's (items_stats.h) with those of the
 * threads and the restart code it starts.
 * Apart from items.c so that the item API does not depend on the threads
 * and the restart code it starts, and the engine lists nothing of them.
 *
 * Locks: none of its own.  Start-up and shutdown run on the main thread,
 * before the workers start or after they have stopped; the stats
 * functions run on any thread, under the locks of the parts they read.
 */
#include "config.h"
#include "storage.h"
#include "items.h"
#include "items_internal.h"

#include "clock_nvm.h"
#include "crawler.h"
#include "hash_desc.h"
#include "items_mq.h"
#include "items_restore_d.h"
#include "items_stats.h"
#include "lru_maintainer.h"
#include "memfile.h"
#include "migrate.h"
#include "nitem.h"
#include "nvm.h"
#include "nzone.h"
#include "slabs.h"
#include "slabs_tier.h"
#include "tier_policy.h"
#include "tier_reassign.h"
#include "item_lock.h"
#include "settings.h"
#include "slab_class.h"

#include <stdio.h>
#include <stdlib.h>

/* what slabs_tier_init found in the N-zone, for the recovery scan */
static struct nzone_attach_result zone_start;

/* The most items both zones can hold: every chunk of the smallest class
 * (what the index reserves room for). */
static uint64_t most_items(void)
{
    uint64_t bytes = settings.maxbytes;
    if (tiering) {
        struct slabs_tier_totals tt;
        slabs_tier_get_totals(&tt);
        bytes += tt.zone_limit;
    }
    return bytes / slabs_chunk_size(POWER_SMALLEST);
}

void storage_init(void)
{
    /* the index's buckets are laid out by the stripes (hash_desc.h) */
    if (!item_locks_init(ITEM_LOCK_POWER)) {
        fprintf(stderr, "Can't allocate item locks\n");
        exit(EXIT_FAILURE);
    }
    items_init();
    memfile_open();             /* -e: the D-zone's pages in a file */
    slabs_init(settings.maxbytes, settings.factor, settings.large_pages);
    if (tier_enabled()) {
        slabs_tier_init(sizeof(nitem_hdr), &zone_start);
        tiering = slabs_tier_active();
    } else if (nvm_zone_is_persistent(&nvm_zone) && nzone_disown()) {
        fprintf(stderr, "[restart] N-zone %s: unused by this run "
                "(tier_policy=dram); its items are discarded, so that no "
                "later start serves what this run changes\n",
                settings.nvm.path);
    }
    assoc_set_nitem_ops(&nitem_index_ops);
    assoc_init(settings.hashpower_init, most_items());
    mq_init();
    slabs_set_page_evictor(items_evict_page);
    if (tiering) {
        migrate_init(slabs_largest_clsid());
        active_policy = tier_policy_of(settings.tier.policy);
        const char *conflict = tier_policy_conflict(active_policy);
        if (conflict != NULL) {
            fprintf(stderr, "tier_policy=%s cannot run: %s\n",
                    active_policy->name, conflict);
            exit(EXIT_FAILURE);
        }
        struct clock_nvm_ops cops = clock_ops;
        cops.unlink = policy_engine.n_unlink;   /* reports evictions */
        /* the policies that age their queues give new N keys probation
         * too (doc/tiering.md "New keys in the N-zone") */
        cops.unread = active_policy->ages_d ? clock_n_unread : NULL;
        clock_nvm_init(&cops);
        tier_policy_init(active_policy, &policy_engine);
        if (tier_reassign_init(&reassign_engine) != 0) {
            fprintf(stderr, "tier_reassign: out of memory for the counter "
                    "histograms; DRAM pages will not be reassigned\n");
        }
    } else {
        tier_reassign_shutdown();
    }
    d_aging_init();
    if (settings.track_sizes) {
        item_stats_sizes_enable();
    }
}

/* -L preallocates like memcached, with its message when -m is too small
 * for one page per class; pages are then allocated on demand.  -e carves
 * its file on demand from the start (doc/restart.md "The memory file"). */
static void preallocate_pages(void)
{
    size_t needed;
    if (!slabs_preallocate(&needed)) {
        fprintf(stderr, "Error while preallocating slab memory!\n"
                "If using -L or other prealloc options, max memory must be "
                "at least %zu megabytes.\n", needed / (1024 * 1024));
    }
}

int storage_start_threads(void)
{
    /* before anything can touch the N-zone; the item locks exist now */
    if (tiering) {
        items_restart_recover(&zone_start);
    }
    /* -e: a graceful stop's D items, on the clock the N-zone resumed */
    items_d_restore();
    preallocate_pages();
    if (tiering) {
        items_restart_serving();
    }
    int rc = slabs_start_rebalance_thread();
    if (rc == 0 && settings.hash_expand) {
        rc = assoc_start_expand_thread();
    }
    if (rc == 0 && settings.lru_crawler) {
        rc = crawler_start();
    }
    if (rc == 0 && settings.lru_maintainer_thread) {
        rc = lru_maintainer_start();
    }
    if (rc == 0 && tiering) {
        migrate_set_engine(&tier_engine);
        rc = tier_thread_start();
    }
    return rc;
}

static void storage_stop_threads(void)
{
    tier_thread_stop();
    lru_maintainer_stop();
    crawler_stop();
    assoc_stop_expand_thread();
    slabs_stop_rebalance_thread();
}

void storage_shutdown(bool graceful)
{
    storage_stop_threads();
    if (graceful) {
        items_d_save();         /* -e: PATH.meta (doc/restart.md) */
    } else {
        items_d_discard();      /* -e: memcached's cold start after it */
    }
    if (tiering) {
        /* with -e the D items stay in the memory file */
        items_restart_save(graceful && !memfile_active());
    }
}

void storage_stats_general(ADD_STAT add_stats, void *c,
                           uint64_t conn_malloc_fails)
{
    items_stats_index_slabs(add_stats, c);
    crawler_stats(add_stats, c);
    lru_maintainer_stats(add_stats, c);
    items_stats_general(add_stats, c, conn_malloc_fails);
}

void tier_stats(ADD_STAT add_stats, void *c)
{
    items_stats_tier(add_stats, c);
    items_restart_stats(add_stats, c);
}

void item_stats_reset(void)
{
    items_stats_reset();
    crawler_reset_stats();
}
