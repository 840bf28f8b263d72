/*
 * lru_maintainer.c: the LRU maintainer thread (lru_maintainer.h).
 *
 * Owns the thread, its sleep between rounds and its round counter.  A
 * round visits every slab class once and asks items_d.c to reclaim the
 * dead items at the tails of its queues, then the MQ to move HOT's tail
 * into COLD as memcached's maintainer does (mq_age_hot), each at most
 * ROUND_CLASS_MAX items per class so that one class does not hold up the
 * others; then the page automover (slabs_automove.c) has its turn, as
 * memcached's maintainer runs its automover.  Once a second it also runs
 * the LRU crawler's schedule (crawler_auto_check), as memcached's
 * maintainer starts its crawls.  A round that did some work
 * is followed by another after MIN_SLEEP_NS; each idle round sleeps an
 * eighth longer than the last, up to MAX_SLEEP_NS, as memcached's
 * maintainer backs off: stores that come within a few seconds of the last
 * work see their HOT tail moved within milliseconds, an item that expired
 * at a tail goes within about a second, and an idle server wakes once a
 * second.
 *
 * Locks: maint_lock guards the thread state (bg_thread.h) and is never
 * held during a round; the round takes the MQ class locks and trylocks
 * item locks through items_d.c.  The counter is a relaxed atomic.
 */
#include "config.h"
#include "lru_maintainer.h"

#include "bg_thread.h"
#include "clock.h"
#include "crawler.h"
#include "items_crawl.h"
#include "items_mq.h"
#include "settings.h"
#include "slab_class.h"
#include "slabs.h"
#include "slabs_automove.h"

#include <errno.h>
#include <stdatomic.h>

#define ROUND_CLASS_MAX 500
#define MIN_SLEEP_NS 1000000L            /* 1 ms */
#define MAX_SLEEP_NS 1000000000L         /* 1 s */

static pthread_mutex_t maint_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bg_thread maint_thr = BG_THREAD_INIT("mc-lrumaint", &maint_lock);
static _Atomic uint64_t juggles;

/* One round over every class, then the page automover's turn; nonzero
 * when the round did some work. */
static unsigned int maintain_round(void)
{
    unsigned int work = 0;
    unsigned int largest = slabs_largest_clsid();
    for (unsigned int id = POWER_SMALLEST; id <= largest; id++) {
        work += items_reclaim_tails(id, ROUND_CLASS_MAX);
        work += mq_age_hot(id, ROUND_CLASS_MAX);
    }
    if (slabs_automove_tick()) {
        work++;                 /* a page is on its way: come back soon */
    }
    atomic_fetch_add_explicit(&juggles, 1, memory_order_relaxed);
    return work;
}

static void *maintainer_thread(void *arg)
{
    long sleep_ns = MIN_SLEEP_NS;
    rel_time_t last_crawler_check = 0;
    while (!bg_thread_stopping(&maint_thr)) {
        /* the crawler's schedule counts in seconds */
        if (current_time != last_crawler_check) {
            last_crawler_check = current_time;
            crawler_auto_check();
        }
        if (maintain_round() > 0) {
            sleep_ns = MIN_SLEEP_NS;
        } else if (sleep_ns < MAX_SLEEP_NS) {
            sleep_ns += sleep_ns / 8;
            sleep_ns = sleep_ns > MAX_SLEEP_NS ? MAX_SLEEP_NS : sleep_ns;
        }
        bg_thread_sleep(&maint_thr, sleep_ns);
    }
    return NULL;
}

int lru_maintainer_start(void)
{
    int rc = bg_thread_start(&maint_thr, maintainer_thread, NULL);
    return rc == EALREADY ? 0 : rc;
}

void lru_maintainer_stop(void)
{
    bg_thread_stop(&maint_thr);
}

void lru_maintainer_stats(ADD_STAT add_stats, void *c)
{
    if (settings.lru_maintainer_thread) {
        append_stat("lru_maintainer_juggles", add_stats, c, "%llu",
                    (unsigned long long)atomic_load_explicit(
                        &juggles, memory_order_relaxed));
    }
}
