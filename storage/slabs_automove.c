/*
 * slabs_automove.c: what `slab_automove` does (memcached's automover;
 * doc/protocol.md "Storage").
 *
 *   1 (the default): once a second each class's free chunks are sampled;
 *     a class that had more than two pages' worth of them in each of the
 *     last slab_automove_window samples gives a page with no item in it
 *     back to the global pool (slabs_reassign_free_page), one move at a
 *     time while it still has that many; any class that needs a page
 *     takes one from the pool before new memory is allocated (slabs.c).
 *     Without an N-zone, besides, pages follow the hits (below).
 *   2: besides, every eviction asks for a page for the evicting class
 *     from any class that has more than one (slabs_reassign -1).
 *   0: nothing moves on its own.
 *
 * Pages that follow the hits (no N-zone: evict_shadow.c keeps the
 * shadow; doc/tiering.md "Pages that follow the hits").  memcached's
 * automover moves a page, once its window shows it, from the class whose
 * oldest item is oldest to one whose is youngest, evening out the ages
 * as one LRU over the whole cache would.  That is not what a hit ratio
 * wants: a balancer by ages, tried here on CacheLib's graph models, lost
 * 0.020 on graph_cache_leader_fbobj and gained 0.006 on
 * graph_cache_leader_assocs, where moves by hits gain 0.024 and 0.13.
 * Here each second the class whose shadow (its last
 * page's worth of evicted keys) was stored again most, at least
 * HITS_MIN times, takes a page from the class with more than one page
 * whose shadow was stored again least, when the one's count is over
 * HITS_RATIO times the other's: a page more is worth to a class about
 * what its last page's worth of evictions would have hit, and a page
 * less costs about as much.  The move rescues the page's items into other
 * chunks of their class (slabs_reassign_rescuing): the class gives up its
 * coldest page's worth of items, the ones its own victim search picks,
 * not whatever the page held (measured: without the rescue each move cost
 * a stationary Zipf stream its page's hot items).  Under a tier policy D's
 * pages are tier_reassign.c's to move, and nothing here moves them by
 * hits.
 *
 * Locks: automove_lock guards the samples; slabs.c's calls take the slabs
 * lock themselves (never while automove_lock is held).
 */
#include "config.h"
#include "slabs_automove.h"

#include "clock.h"
#include "evict_shadow.h"
#include "settings.h"
#include "slab_class.h"
#include "slabs.h"

#include <pthread.h>
#include <stdatomic.h>

static pthread_mutex_t automove_lock = PTHREAD_MUTEX_INITIALIZER;
static rel_time_t last_sample;
/* consecutive samples in which the class had over two pages free */
static unsigned int seconds_over[MAX_NUMBER_OF_SLAB_CLASSES];

static bool has_spare_free_pages(unsigned int id)
{
    uint64_t free_chunks = slabs_class_free_chunks(id, SLAB_ZONE_DRAM);
    return free_chunks > 2 * (uint64_t)slabs_chunks_per_page(id);
}

/* Once a second: count each class's run of samples with spare pages. */
static void do_sample(rel_time_t now)
{
    last_sample = now;
    for (unsigned int id = POWER_SMALLEST; id <= slabs_largest_clsid();
            id++) {
        seconds_over[id] = has_spare_free_pages(id) ? seconds_over[id] + 1
                                                    : 0;
    }
}

/* The first class whose run is as long as the window and that still has
 * spare pages, or 0. */
static unsigned int do_pick_source(void)
{
    unsigned int window = settings.slab_automove_window;
    if (window == 0) {
        window = 1;
    }
    for (unsigned int id = POWER_SMALLEST; id <= slabs_largest_clsid();
            id++) {
        if (seconds_over[id] >= window && has_spare_free_pages(id)) {
            return id;
        }
    }
    return 0;
}

/* Moves by hits: a receiver's shadow hits in the last second, and how
 * many times the donor's they must be.  Measured on scripts/hitratio's
 * streams (doc/tiering.md "Pages that follow the hits"): a ratio of 8
 * moved fewer pages and gained less on the graph models, with the Zipf
 * stream no better; the floor keeps a quiet cache's few hits, which say
 * little, from moving pages. */
#define HITS_MIN 16
#define HITS_RATIO 4

/* Once a second: take every class's shadow hits and pick a move by them
 * (*src 0: none). */
static void do_pick_by_hits(unsigned int *src, unsigned int *dst)
{
    uint64_t hits[MAX_NUMBER_OF_SLAB_CLASSES];
    uint64_t most = 0, least = UINT64_MAX;
    unsigned int largest = slabs_largest_clsid();
    *src = *dst = 0;
    for (unsigned int id = POWER_SMALLEST; id <= largest; id++) {
        hits[id] = evict_shadow_take_hits(id);
        if (hits[id] > most) {
            most = hits[id];
            *dst = id;
        }
    }
    if (most < HITS_MIN) {
        return;
    }
    for (unsigned int id = POWER_SMALLEST; id <= largest; id++) {
        if (id != *dst && hits[id] < least
                && slabs_class_pages(id, SLAB_ZONE_DRAM) > 1) {
            least = hits[id];
            *src = id;
        }
    }
    if (*src != 0 && most <= least * HITS_RATIO) {
        *src = 0;
    }
}

bool slabs_automove_tick(void)
{
    if (atomic_load_explicit(&settings.slab_automove,
                             memory_order_relaxed) == 0) {
        return false;
    }
    rel_time_t now = current_time;
    unsigned int hits_src = 0, hits_dst = 0;
    pthread_mutex_lock(&automove_lock);
    if (now != last_sample) {
        do_sample(now);
        if (evict_shadow_active() && settings.slab_reassign) {
            do_pick_by_hits(&hits_src, &hits_dst);
        }
    }
    unsigned int src = do_pick_source();
    pthread_mutex_unlock(&automove_lock);
    if (src != 0 && slabs_reassign_free_page((int)src, 0) == REASSIGN_OK) {
        return true;
    }
    return hits_src != 0
        && slabs_reassign_rescuing((int)hits_src, (int)hits_dst)
           == REASSIGN_OK;
}

void slabs_automove_evicted(unsigned int clsid)
{
    if (atomic_load_explicit(&settings.slab_automove,
                             memory_order_relaxed) == 2) {
        slabs_reassign(-1, (int)clsid);
    }
}
