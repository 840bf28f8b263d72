/*
 * crawler.c: the LRU crawler thread and `lru_crawler` admin commands.
 *
 * Owns: the crawler thread, its request set (which classes to crawl next),
 * its counters, and the metadump walk, handed out in batches that the
 * protocol layer writes as its client reads them (proto_admin.c).
 *
 * Locks:
 *   - crawler_lock guards the request set, the thread state (crawler_thr,
 *     started and stopped by bg_thread.c, crawling, ever_started), the
 *     schedule of the crawler's own runs and the counters; it is never
 *     held while walking.
 *   - The D walk uses an MQ cursor (items_mq.c, class lock for each step)
 *     and, for each item it lands on, the item lock inside
 *     items_crawl_check / items_crawl_dump (items_crawl.h).
 *   - The N walk reads the chunk bitmaps without a lock
 *     (slabs_tier_next_used); items_crawl_check_n / items_crawl_dump_n
 *     find a used chunk's slot and take its item lock (nitem_lock_chunk).
 *
 * The thread crawls what `lru_crawler crawl` asked for, and the runs the
 * LRU maintainer starts (crawler_auto_check), so expired items give their
 * memory back even when nobody asks for them.  Those follow memcached's
 * schedule: every class at start-up, then each class again once its last
 * run's items say it pays (doc/tiering.md "Crawler, metadump, cachedump").
 * Each class is walked
 * D queue by D queue from the tail (oldest) to the head, then through its
 * N chunks in zone order, skipping free chunks with the bitmap (no NVM
 * read) and reading one header per used chunk (one or two lines, counted
 * in nvm_lines_read; a dead item's header is read again under its lock).
 * The D queues together and the N chunks each get at most
 * settings.lru_crawler_tocrawl items per class (0 = all); the crawler
 * sleeps settings.lru_crawler_sleep microseconds between items.
 */
#include "config.h"
#include "crawler.h"

#include "bg_thread.h"
#include "clock.h"
#include "items.h"
#include "items_crawl.h"
#include "items_mq.h"
#include "slabs.h"
#include "slabs_tier.h"
#include "tier_reassign.h"
#include "item.h"
#include "settings.h"
#include "slab_class.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The schedule of the crawler's own runs (memcached's): a class is due
 * again AUTO_RETRY seconds after a run of it was due, or, once the run has
 * walked it, its wait and AUTO_RETRY after that.  The wait grows by a
 * minute each time a run finds nothing that expires within the hour,
 * moves toward the minute in which more than 1% of its expiring items
 * will have expired, and is at most an hour.  A manual crawl refused
 * while another runs, or a run of ours refused while a manual one runs,
 * holds our runs off for AUTO_BLOCK. */
#define AUTO_RETRY 5
#define AUTO_WAIT_STEP 60
#define AUTO_WAIT_MAX (60 * 60)
#define AUTO_BLOCK 60

struct auto_class {
    rel_time_t next;             /* due after this time */
    rel_time_t wait;
};

static pthread_mutex_t crawler_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bg_thread crawler_thr = BG_THREAD_INIT("mc-itemcrawler", &crawler_lock);
static bool crawling;                     /* a run is under way or asked */
static bool crawling_auto;                /* ... one of our own */
static bool pending;                      /* a request waits in `wanted` */
static bool wanted[MAX_NUMBER_OF_SLAB_CLASSES];
/* requested and not yet walked to the end in the run under way */
static bool active[MAX_NUMBER_OF_SLAB_CLASSES];
static struct auto_class autos[MAX_NUMBER_OF_SLAB_CLASSES];
static rel_time_t auto_blocked_until;
static uint64_t crawl_starts;
static bool ever_started;

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
    uint32_t us = atomic_load_explicit(&settings.lru_crawler_sleep,
                                       memory_order_relaxed);
    if (us != 0) {
        struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };
        nanosleep(&ts, NULL);
    }
}

/* After an item: sleep, look for a stop request every 256 items.  False
 * when the walk must end (stop, or the tocrawl budget is spent). */
static bool crawl_step(uint32_t *seen, uint32_t budget)
{
    (*seen)++;
    pause_between_items();
    if ((*seen & 255) == 0 && bg_thread_stopping(&crawler_thr)) {
        return false;
    }
    return budget == 0 || *seen < budget;
}

/* False when the thread must stop. */
static bool crawl_class_d(struct mq_cursor *cur, unsigned int clsid,
                          struct crawl_tally *tally)
{
    uint32_t budget = atomic_load_explicit(&settings.lru_crawler_tocrawl,
                                           memory_order_relaxed);
    uint32_t seen = 0;
    bool go = true;
    for (unsigned int q = 0; q < mq_queues() && go; q++) {
        mq_cursor_start(cur, clsid, q);
        item *it;
        while (go && (it = mq_cursor_next(cur)) != NULL) {
            items_crawl_check(it, tally);
            go = crawl_step(&seen, budget);
        }
        mq_cursor_stop(cur);
        if (bg_thread_stopping(&crawler_thr)) {
            return false;
        }
    }
    return true;
}

static void crawl_class_n(unsigned int clsid, struct crawl_tally *tally)
{
    uint32_t budget = atomic_load_explicit(&settings.lru_crawler_tocrawl,
                                           memory_order_relaxed);
    uint32_t seen = 0;
    uint64_t cursor = 0, off;
    bool go = true;
    while (go && slabs_tier_next_used(clsid, &cursor, &off)) {
        items_crawl_check_n(off, tally);
        go = crawl_step(&seen, budget);
    }
}

/* The wait after a run whose items are t (memcached's rule, see
 * AUTO_RETRY). */
static rel_time_t next_wait(rel_time_t wait, const struct crawl_tally *t)
{
    uint64_t enough = (t->live - t->no_expiry) / 100 + 1;
    uint64_t expiring = 0;
    for (unsigned int m = 0; m < CRAWL_TALLY_MINUTES; m++) {
        expiring += t->by_minute[m];
        if (expiring > enough) {
            if (wait < m * AUTO_WAIT_STEP) {
                wait += AUTO_WAIT_STEP;
            } else if (wait >= AUTO_WAIT_STEP) {
                wait -= AUTO_WAIT_STEP;
            }
            break;
        }
    }
    if (expiring == 0) {
        wait += AUTO_WAIT_STEP;
    }
    return wait > AUTO_WAIT_MAX ? AUTO_WAIT_MAX : wait;
}

/* Walk one class; when the run is one of ours, the items it left set the
 * class's next one. */
static void crawl_class(struct mq_cursor *cur, unsigned int clsid,
                        bool automatic)
{
    struct crawl_tally tally;
    memset(&tally, 0, sizeof(tally));
    if (crawl_class_d(cur, clsid, &tally)) {
        crawl_class_n(clsid, &tally);
    }
    pthread_mutex_lock(&crawler_lock);
    active[clsid] = false;
    if (automatic) {
        struct auto_class *a = &autos[clsid];
        a->wait = next_wait(a->wait, &tally);
        a->next = current_time + a->wait + AUTO_RETRY;
    }
    pthread_mutex_unlock(&crawler_lock);
}

static void crawl_requested(struct mq_cursor *cur, const bool *classes,
                            bool automatic)
{
    for (unsigned int id = POWER_SMALLEST; id < MAX_NUMBER_OF_SLAB_CLASSES
            && !bg_thread_stopping(&crawler_thr); id++) {
        if (classes[id]) {
            crawl_class(cur, id, automatic);
        }
    }
}

static void *crawler_thread(void *arg)
{
    struct mq_cursor *cur = mq_cursor_new();
    bool classes[MAX_NUMBER_OF_SLAB_CLASSES];

    tier_reassign_thread_role(TIER_REASSIGN_ROLE_CRAWLER);

    pthread_mutex_lock(&crawler_lock);
    while (!do_bg_thread_stopping(&crawler_thr) && cur != NULL) {
        while (!pending && !do_bg_thread_stopping(&crawler_thr)) {
            do_bg_thread_wait(&crawler_thr);
        }
        if (do_bg_thread_stopping(&crawler_thr)) {
            break;
        }
        memcpy(classes, wanted, sizeof(classes));
        memset(wanted, 0, sizeof(wanted));
        pending = false;
        bool automatic = crawling_auto;
        pthread_mutex_unlock(&crawler_lock);

        crawl_requested(cur, classes, automatic);

        pthread_mutex_lock(&crawler_lock);
        /* classes our own runs added meanwhile are crawled next */
        crawling = pending;
    }
    pthread_mutex_unlock(&crawler_lock);
    mq_cursor_free(cur);
    return NULL;
}

/* Ask the thread for the classes of `classes` it is not crawling yet
 * (crawler_lock held, thread running); if there are any, that is a start,
 * as memcached counts them. */
static void do_request(const bool *classes, bool automatic)
{
    bool any = false;
    for (unsigned int id = POWER_SMALLEST; id < MAX_NUMBER_OF_SLAB_CLASSES;
            id++) {
        if (classes[id] && !active[id]) {
            wanted[id] = true;
            active[id] = true;
            any = true;
        }
    }
    if (any) {
        pending = true;
        crawling = true;
        crawling_auto = automatic;
        crawl_starts++;
        do_bg_thread_wake(&crawler_thr);
    }
}

/* ---- the crawler's own runs ---- */

void crawler_auto_check(void)
{
    bool due[MAX_NUMBER_OF_SLAB_CLASSES] = { false };
    bool any = false;
    rel_time_t now = current_time;
    unsigned int largest = slabs_largest_clsid();

    pthread_mutex_lock(&crawler_lock);
    if (!do_bg_thread_running(&crawler_thr)) {
        pthread_mutex_unlock(&crawler_lock);
        return;
    }
    for (unsigned int id = POWER_SMALLEST; id <= largest; id++) {
        struct auto_class *a = &autos[id];
        if (now > a->next) {
            due[id] = true;
            any = true;
            a->next = now + AUTO_RETRY;
        }
    }
    if (any && crawling && !crawling_auto) {
        auto_blocked_until = now + AUTO_BLOCK;
    } else if (any && auto_blocked_until <= now) {
        /* classes the run under way has yet to finish are not started */
        do_request(due, true);
    }
    pthread_mutex_unlock(&crawler_lock);
}

int crawler_start(void)
{
    int rc = bg_thread_start(&crawler_thr, crawler_thread, NULL);
    if (rc == 0) {
        pthread_mutex_lock(&crawler_lock);
        ever_started = true;
        pthread_mutex_unlock(&crawler_lock);
    }
    return rc == EALREADY ? 0 : rc;
}

/* A request the thread did not get to dies with it. */
void crawler_stop(void)
{
    if (bg_thread_stop(&crawler_thr)) {
        pthread_mutex_lock(&crawler_lock);
        crawling = false;
        pending = false;
        memset(wanted, 0, sizeof(wanted));
        memset(active, 0, sizeof(active));
        pthread_mutex_unlock(&crawler_lock);
    }
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
    if (!do_bg_thread_running(&crawler_thr)) {
        ret = CRAWLER_NOTSTARTED;
    } else if (crawling) {
        /* as memcached: our own runs wait a while before trying again */
        auto_blocked_until = current_time + AUTO_BLOCK;
        ret = CRAWLER_RUNNING;
    } else {
        do_request(req, false);
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
    SETTING_STORE(lru_crawler, on);
    return true;
}

/* ---- metadump ----
 * Made in batches (metadump_batch): the protocol layer asks for the next
 * one when its connection has written the previous, so that a client that
 * reads slowly, or not at all, holds one batch and the socket's buffers,
 * not the whole dump.  Between batches the walk keeps its MQ cursor in the
 * queue it is in (a placeholder every walker skips) and its place in the
 * class's N chunks; it holds no lock and no item.  An item that moves
 * between zones while the dump runs may be listed twice or not at all. */

struct metadump {
    bool classes[MAX_NUMBER_OF_SLAB_CLASSES];
    unsigned int clsid;          /* the class being dumped */
    unsigned int level;          /* its D queue; mq_queues(): its N chunks */
    bool in_queue;               /* the cursor is in queue `level` */
    uint64_t n_cursor;           /* the N walk's place */
    struct mq_cursor *cur;
};

/* The D items of the current class, queue by queue from the tail; false
 * when its queues are done. */
static bool metadump_next_d(struct metadump *md, char *line, size_t *len)
{
    while (md->level < mq_queues()) {
        if (!md->in_queue) {
            mq_cursor_start(md->cur, md->clsid, md->level);
            md->in_queue = true;
        }
        item *it;
        while ((it = mq_cursor_next(md->cur)) != NULL) {
            *len = items_crawl_dump(it, line, METADUMP_LINE_MAX);
            if (*len != 0) {
                return true;
            }
        }
        /* at the head the cursor has left the queue */
        md->in_queue = false;
        md->level++;
    }
    return false;
}

/* The next line of the dump into line (METADUMP_LINE_MAX bytes); 0 at
 * the end. */
static size_t metadump_next(struct metadump *md, char *line)
{
    size_t len = 0;
    for (; md->clsid < MAX_NUMBER_OF_SLAB_CLASSES; md->clsid++) {
        if (!md->classes[md->clsid]) {
            continue;
        }
        if (metadump_next_d(md, line, &len)) {
            return len;
        }
        uint64_t off;
        while (slabs_tier_next_used(md->clsid, &md->n_cursor, &off)) {
            len = items_crawl_dump_n(off, line, METADUMP_LINE_MAX);
            if (len != 0) {
                return len;
            }
        }
        md->level = 0;
        md->n_cursor = 0;
    }
    return 0;
}

enum metadump_batch_result metadump_batch(struct metadump *md, size_t bytes,
                                          metadump_emit_fn emit, void *ctx)
{
    char line[METADUMP_LINE_MAX];
    size_t sent = 0;
    while (sent < bytes) {
        size_t len = metadump_next(md, line);
        if (len == 0) {
            return METADUMP_END;
        }
        if (!emit(ctx, line, len)) {
            return METADUMP_STOPPED;
        }
        sent += len;
    }
    return METADUMP_MORE;
}

void metadump_free(struct metadump *md)
{
    mq_cursor_free(md->cur);
    free(md);
}

/* Runs in the calling worker, which then asks for the batches. */
enum crawler_result_type lru_crawler_metadump_start(const char *classes,
                                                    struct metadump **out)
{
    pthread_mutex_lock(&crawler_lock);
    bool enabled = do_bg_thread_running(&crawler_thr);
    pthread_mutex_unlock(&crawler_lock);
    if (!enabled) {
        return CRAWLER_NOTSTARTED;
    }
    struct metadump *md = calloc(1, sizeof(*md));
    if (md == NULL) {
        return CRAWLER_ERROR;
    }
    /* `hash` (memcached walks its hash table) lists the same items */
    if (!parse_classes(classes != NULL && strcmp(classes, "hash") == 0
                           ? "all" : classes, md->classes)) {
        free(md);
        return CRAWLER_BADCLASS;
    }
    md->cur = mq_cursor_new();
    if (md->cur == NULL) {
        free(md);
        return CRAWLER_ERROR;
    }
    /* memcached's dumps are crawler runs, and counted as its crawls are */
    pthread_mutex_lock(&crawler_lock);
    crawl_starts++;
    pthread_mutex_unlock(&crawler_lock);
    *out = md;
    return CRAWLER_OK;
}

/* ---- stats ---- */

void crawler_stats(ADD_STAT add_stats, void *c)
{
    pthread_mutex_lock(&crawler_lock);
    bool listed = ever_started;
    bool running = crawling;
    uint64_t starts = crawl_starts;
    pthread_mutex_unlock(&crawler_lock);
    if (listed) {
        append_stat("lru_crawler_running", add_stats, c, "%llu",
                    (unsigned long long)(running ? 1 : 0));
        append_stat("lru_crawler_starts", add_stats, c, "%llu",
                    (unsigned long long)starts);
    }
}

void crawler_reset_stats(void)
{
    pthread_mutex_lock(&crawler_lock);
    crawl_starts = 0;
    pthread_mutex_unlock(&crawler_lock);
}
