/*
 * crawler.c: the LRU crawler thread and `lru_crawler` admin commands.
 *
 * Owns: the crawler thread, its request set (which classes to crawl next),
 * its counters, and the synchronous metadump walk.
 *
 * Locks:
 *   - crawler_lock guards the request set, the thread state (enabled,
 *     crawling, stop) and the counters; it is never held while walking.
 *   - The walk itself uses an MQ cursor (items_mq.c, class lock for each
 *     step) and, for each item it lands on, the item lock inside
 *     items_crawl_check / items_crawl_dump (items.c).
 *
 * The thread crawls what `lru_crawler crawl` asked for, and on its own
 * every CRAWLER_AUTO_INTERVAL seconds all classes, so expired items give
 * their memory back even when nobody asks for them.  Each class is walked
 * queue by queue from the tail (oldest) to the head, at most
 * settings.lru_crawler_tocrawl items per class (0 = all), sleeping
 * settings.lru_crawler_sleep microseconds between items.
 */
#include "crawler.h"

#include "items.h"
#include "items_mq.h"
#include "slabs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CRAWLER_AUTO_INTERVAL 60
#define METADUMP_LINE_MAX (KEY_MAX_LENGTH * 3 + 160)

static pthread_mutex_t crawler_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t crawler_cond = PTHREAD_COND_INITIALIZER;
static pthread_t crawler_tid;
static bool thread_running;
static bool stop_requested;
static bool crawling;
static bool pending;                      /* a request waits in `wanted` */
static bool wanted[MAX_NUMBER_OF_SLAB_CLASSES];
static uint64_t crawl_starts;

/* ---- class lists ---- */

/* "all" or a comma list of class ids; false on anything else. */
static bool parse_classes(const char *spec, bool *out)
{
    unsigned int largest = slabs_largest_clsid();
    memset(out, 0, sizeof(bool) * MAX_NUMBER_OF_SLAB_CLASSES);
    if (spec == NULL) {
        return false;
    }
    if (strcmp(spec, "all") == 0) {
        for (unsigned int id = POWER_SMALLEST; id <= largest; id++) {
            out[id] = true;
        }
        return largest >= POWER_SMALLEST;
    }
    const char *p = spec;
    while (*p != '\0') {
        char *end;
        errno = 0;
        unsigned long id = strtoul(p, &end, 10);
        if (end == p || errno != 0 || id < POWER_SMALLEST || id > largest
                || (*end != ',' && *end != '\0')) {
            return false;
        }
        out[id] = true;
        p = *end == ',' ? end + 1 : end;
        if (*end == ',' && *p == '\0') {
            return false;
        }
    }
    return p != spec;
}

/* ---- the crawl ---- */

static void pause_between_items(void)
{
    uint32_t us = settings.lru_crawler_sleep;
    if (us != 0) {
        struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };
        nanosleep(&ts, NULL);
    }
}

static bool should_stop(void)
{
    pthread_mutex_lock(&crawler_lock);
    bool stop = stop_requested;
    pthread_mutex_unlock(&crawler_lock);
    return stop;
}

static void crawl_class(struct mq_cursor *cur, unsigned int clsid)
{
    uint32_t budget = settings.lru_crawler_tocrawl;
    uint32_t seen = 0;
    for (unsigned int q = 0; q < mq_queues(); q++) {
        mq_cursor_start(cur, clsid, q);
        item *it;
        while ((budget == 0 || seen < budget)
                && (it = mq_cursor_next(cur)) != NULL) {
            items_crawl_check(it);
            seen++;
            pause_between_items();
            if ((seen & 255) == 0 && should_stop()) {
                break;
            }
        }
        mq_cursor_stop(cur);
        if ((budget != 0 && seen >= budget) || should_stop()) {
            return;
        }
    }
}

static void crawl_requested(struct mq_cursor *cur, const bool *classes)
{
    for (unsigned int id = POWER_SMALLEST; id < MAX_NUMBER_OF_SLAB_CLASSES;
            id++) {
        if (classes[id]) {
            crawl_class(cur, id);
        }
    }
}

/* Sleep until a request comes, or the auto interval passes (then crawl
 * everything).  crawler_lock held. */
static void wait_for_work(void)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += CRAWLER_AUTO_INTERVAL;
    while (!pending && !stop_requested) {
        if (pthread_cond_timedwait(&crawler_cond, &crawler_lock, &deadline)
                == ETIMEDOUT) {
            if (!pending) {
                parse_classes("all", wanted);
                pending = true;
            }
        }
    }
}

static void *crawler_thread(void *arg)
{
    struct mq_cursor *cur = mq_cursor_new();
    bool classes[MAX_NUMBER_OF_SLAB_CLASSES];

    pthread_mutex_lock(&crawler_lock);
    while (!stop_requested && cur != NULL) {
        wait_for_work();
        if (stop_requested) {
            break;
        }
        memcpy(classes, wanted, sizeof(classes));
        pending = false;
        crawling = true;
        crawl_starts++;
        pthread_mutex_unlock(&crawler_lock);

        crawl_requested(cur, classes);

        pthread_mutex_lock(&crawler_lock);
        crawling = false;
    }
    pthread_mutex_unlock(&crawler_lock);
    mq_cursor_free(cur);
    return NULL;
}

int crawler_start(void)
{
    pthread_mutex_lock(&crawler_lock);
    if (thread_running) {
        pthread_mutex_unlock(&crawler_lock);
        return 0;
    }
    stop_requested = false;
    pending = false;
    int rc = pthread_create(&crawler_tid, NULL, crawler_thread, NULL);
    thread_running = (rc == 0);
    pthread_mutex_unlock(&crawler_lock);
    return rc;
}

void crawler_stop(void)
{
    pthread_mutex_lock(&crawler_lock);
    if (!thread_running) {
        pthread_mutex_unlock(&crawler_lock);
        return;
    }
    stop_requested = true;
    pthread_cond_signal(&crawler_cond);
    pthread_mutex_unlock(&crawler_lock);
    pthread_join(crawler_tid, NULL);
    pthread_mutex_lock(&crawler_lock);
    thread_running = false;
    crawling = false;
    pthread_mutex_unlock(&crawler_lock);
}

/* ---- admin commands ---- */

enum crawler_result_type lru_crawler_crawl(const char *classes)
{
    bool req[MAX_NUMBER_OF_SLAB_CLASSES];
    enum crawler_result_type ret = CRAWLER_OK;

    if (!parse_classes(classes, req)) {
        return CRAWLER_BADCLASS;
    }
    pthread_mutex_lock(&crawler_lock);
    if (!thread_running) {
        ret = CRAWLER_NOTSTARTED;
    } else if (crawling || pending) {
        ret = CRAWLER_RUNNING;
    } else {
        memcpy(wanted, req, sizeof(wanted));
        pending = true;
        pthread_cond_signal(&crawler_cond);
    }
    pthread_mutex_unlock(&crawler_lock);
    return ret;
}

bool lru_crawler_set_enabled(bool on)
{
    if (on) {
        if (crawler_start() != 0) {
            return false;
        }
    } else {
        crawler_stop();
    }
    settings.lru_crawler = on;
    return true;
}

static bool dump_class(conn *c, struct mq_cursor *cur, unsigned int clsid)
{
    char line[METADUMP_LINE_MAX];
    for (unsigned int q = 0; q < mq_queues(); q++) {
        mq_cursor_start(cur, clsid, q);
        item *it;
        while ((it = mq_cursor_next(cur)) != NULL) {
            size_t len = items_crawl_dump(it, line, sizeof(line));
            if (len != 0 && !resp_add(c, line, len)) {
                mq_cursor_stop(cur);
                return false;
            }
        }
    }
    return true;
}

/* Runs in the calling worker: the output is queued on c as it is made. */
enum crawler_result_type lru_crawler_metadump(conn *c, const char *classes)
{
    bool req[MAX_NUMBER_OF_SLAB_CLASSES];

    pthread_mutex_lock(&crawler_lock);
    bool enabled = thread_running;
    pthread_mutex_unlock(&crawler_lock);
    if (!enabled) {
        return CRAWLER_NOTSTARTED;
    }
    if (!parse_classes(classes, req)) {
        return CRAWLER_BADCLASS;
    }
    struct mq_cursor *cur = mq_cursor_new();
    if (cur == NULL) {
        return CRAWLER_ERROR;
    }
    bool ok = true;
    for (unsigned int id = POWER_SMALLEST;
            id < MAX_NUMBER_OF_SLAB_CLASSES && ok; id++) {
        if (req[id]) {
            ok = dump_class(c, cur, id);
        }
    }
    mq_cursor_free(cur);
    if (!ok || !resp_add(c, "END\r\n", 5)) {
        return CRAWLER_ERROR;
    }
    return CRAWLER_OK;
}

/* ---- stats ---- */

void crawler_get_stats(struct crawler_stats *out)
{
    pthread_mutex_lock(&crawler_lock);
    out->running = crawling;
    out->starts = crawl_starts;
    pthread_mutex_unlock(&crawler_lock);
}

void crawler_reset_stats(void)
{
    pthread_mutex_lock(&crawler_lock);
    crawl_starts = 0;
    pthread_mutex_unlock(&crawler_lock);
}
