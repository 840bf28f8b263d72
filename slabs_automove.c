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
 *   2: besides, every eviction asks for a page for the evicting class
 *     from any class that has more than one (slabs_reassign -1).
 *   0: nothing moves on its own.
 * memcached's automover also moves pages by the age of the classes' oldest
 * items; with the MQ there is no such age to compare, so that part is not
 * done here.
 *
 * Locks: automove_lock guards the samples; slabs.c's calls take the slabs
 * lock themselves (never while automove_lock is held).
 */
#include "config.h"
#include "slabs_automove.h"

#include "clock.h"
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

bool slabs_automove_tick(void)
{
    if (atomic_load_explicit(&settings.slab_automove,
                             memory_order_relaxed) == 0) {
        return false;
    }
    rel_time_t now = current_time;
    pthread_mutex_lock(&automove_lock);
    if (now != last_sample) {
        do_sample(now);
    }
    unsigned int src = do_pick_source();
    pthread_mutex_unlock(&automove_lock);
    return src != 0 && slabs_reassign_free_page((int)src, 0) == REASSIGN_OK;
}

void slabs_automove_evicted(unsigned int clsid)
{
    if (atomic_load_explicit(&settings.slab_automove,
                             memory_order_relaxed) == 2) {
        slabs_reassign(-1, (int)clsid);
    }
}
