/*
 * logger_watch.c: the watchers of memcached's live logs (`watch`) and the
 * logger thread that feeds them the lines logger.c keeps per thread
 * (doc/monitoring.md "Live logs: watch").
 *
 * Owns: the watchers (at most LOGGER_MAX_WATCHERS, each with a buffer of
 * watcher_logbuf_size bytes and a wake pipe), logger_streams' value, and
 * the logger thread (bg_thread.h).
 *
 * The logger thread, every millisecond while lines come and backing off
 * to LOGGER_NAP_MAX_NS when none do, reads every thread's ring and puts
 * each line into the buffer of every watcher that wants its stream, or
 * skips it for a watcher whose buffer is full (log_watcher_skipped; that
 * watcher gets "skipped=N" before its next line).  A watcher's
 * connection stays with the worker that owns it: its producer (conn.h)
 * takes lines from the watcher's buffer whenever the last batch is
 * written; with none to take it waits in conn_watch until the logger
 * thread writes a byte to the watcher's wake pipe, which that worker's
 * event base watches.  So no thread writes to another's connection, and
 * a watcher that does not read only loses lines: nothing waits for it.
 *
 * Locks:
 *   - logger_lock guards the list of watchers and the logger thread's
 *     state (bg_thread.h); the logger thread holds it for a whole round,
 *     and takes logger.c's rings_lock inside it.
 *   - a watcher's lock guards its buffer, its skipped count and its
 *     waiting and gone flags; taken inside those two, or alone by the
 *     producer.  Only the logger thread frees a watcher (once gone), or
 *     the worker that closed it when the thread is not running.
 */
#include "config.h"
#include "logger.h"

#include "bg_thread.h"
#include "conn.h"
#include "conn_buf.h"
#include "settings.h"
#include "stat_counter.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* what a watcher's producer queues at once */
#define WATCH_BATCH (32 * 1024)
#define LOGGER_NAP_MIN_NS (1000 * 1000L)
#define LOGGER_NAP_MAX_NS (50 * 1000 * 1000L)

static pthread_mutex_t logger_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bg_thread logger_thr = BG_THREAD_INIT("mc-log", &logger_lock);

struct watcher {
    pthread_mutex_t lock;         /* guards the fields up to `gone` */
    char *ring;
    uint32_t size;
    uint64_t head;                /* bytes ever put */
    uint64_t tail;                /* bytes ever taken by the producer */
    uint64_t skipped;             /* lines lost since the last taken */
    bool waiting;                 /* its connection waits for a wake */
    bool gone;                    /* its connection closed */
    uint32_t streams;             /* fixed once added */
    int wake_rd, wake_wr;         /* the wake pipe */
    struct event wake_event;      /* the owner's event base */
    conn *c;                      /* touched by the owner only */
    struct watcher *next;         /* logger_lock */
};

static struct watcher *watchers;              /* logger_lock */

static void do_streams_update(void)
{
    uint32_t s = 0;
    uint32_t n = 0;
    for (struct watcher *w = watchers; w != NULL; w = w->next) {
        pthread_mutex_lock(&w->lock);
        if (!w->gone) {
            s |= w->streams;
            n++;
        }
        pthread_mutex_unlock(&w->lock);
    }
    atomic_store_explicit(&logger_streams, s, memory_order_relaxed);
    atomic_store_explicit(&logger_watchers, n, memory_order_relaxed);
}

static void watcher_free(struct watcher *w)
{
    close(w->wake_rd);
    close(w->wake_wr);
    pthread_mutex_destroy(&w->lock);
    free(w->ring);
    free(w);
}

/* Free the watchers whose connections closed (logger_lock held). */
static void do_reap_watchers(void)
{
    struct watcher **pp = &watchers;
    while (*pp != NULL) {
        struct watcher *w = *pp;
        pthread_mutex_lock(&w->lock);
        bool gone = w->gone;
        pthread_mutex_unlock(&w->lock);
        if (gone) {
            *pp = w->next;
            watcher_free(w);
        } else {
            pp = &w->next;
        }
    }
}

static void ring_put(struct watcher *w, const char *s, uint32_t n)
{
    uint32_t at = (uint32_t)(w->head % w->size);
    uint32_t first = w->size - at < n ? w->size - at : n;
    memcpy(w->ring + at, s, first);
    memcpy(w->ring, s + first, n - first);
    w->head += n;
}

/* A line for one watcher, or a skip when its buffer is full; a skip is
 * reported before the next line that fits. */
static void watcher_offer(struct watcher *w, const char *line, uint32_t len)
{
    char note[48];
    uint32_t nlen = 0;
    pthread_mutex_lock(&w->lock);
    if (w->gone) {
        pthread_mutex_unlock(&w->lock);
        return;
    }
    if (w->skipped > 0) {
        nlen = (uint32_t)snprintf(note, sizeof(note), "skipped=%llu\n",
                                  (unsigned long long)w->skipped);
    }
    if (w->size - (w->head - w->tail) < (uint64_t)nlen + len) {
        w->skipped++;
        STAT_INCR(logger_watcher_skipped);
    } else {
        ring_put(w, note, nlen);
        ring_put(w, line, len);
        w->skipped = 0;
        STAT_INCR(logger_watcher_sent);
    }
    pthread_mutex_unlock(&w->lock);
}

/* Wake the connections that wait and have lines now. */
static void do_wake_watchers(void)
{
    for (struct watcher *w = watchers; w != NULL; w = w->next) {
        pthread_mutex_lock(&w->lock);
        if (w->waiting && !w->gone && w->head != w->tail) {
            w->waiting = false;
            char byte = 'w';
            /* a full pipe already holds a wake */
            if (write(w->wake_wr, &byte, 1) != 1 && errno != EAGAIN) {
                w->waiting = true;
            }
        }
        pthread_mutex_unlock(&w->lock);
    }
}

/* ---- the watcher's connection: runs in the worker that owns it ---- */

static void watcher_detach(struct watcher *w)
{
    event_del(&w->wake_event);
    pthread_mutex_lock(&logger_lock);
    pthread_mutex_lock(&w->lock);
    w->gone = true;
    pthread_mutex_unlock(&w->lock);
    do_streams_update();
    if (do_bg_thread_running(&logger_thr)) {
        do_bg_thread_wake(&logger_thr);
    } else {
        do_reap_watchers();
    }
    pthread_mutex_unlock(&logger_lock);
}

/* Queue up to WATCH_BATCH bytes of w's lines on c; 0 when there were none
 * (w then waits for a wake), -1 when c could not take them. */
static int watcher_take(struct watcher *w, conn *c)
{
    int ret;
    pthread_mutex_lock(&w->lock);
    uint64_t n = w->head - w->tail;
    if (n > WATCH_BATCH) {
        n = WATCH_BATCH;
    }
    if (n == 0) {
        w->waiting = true;
        ret = 0;
    } else {
        uint32_t at = (uint32_t)(w->tail % w->size);
        uint32_t first = w->size - at < n ? w->size - at : (uint32_t)n;
        bool ok = resp_add(c, w->ring + at, first)
                  && (n == first || resp_add(c, w->ring, n - first));
        w->tail += n;
        ret = ok ? 1 : -1;
    }
    pthread_mutex_unlock(&w->lock);
    return ret;
}

/* conn.h's producer: the next lines, or a wait in conn_watch for them. */
static bool watcher_produce(conn *c, bool closing)
{
    struct watcher *w = c->producer_state;
    if (closing) {
        watcher_detach(w);
        c->producer = NULL;
        c->producer_state = NULL;
        return false;
    }
    int took = watcher_take(w, c);
    if (took < 0) {
        conn_set_state(c, conn_closing);
    } else if (took == 0) {
        conn_set_state(c, conn_watch);
    }
    return true;
}

static void watcher_wake(evutil_socket_t fd, short which, void *arg)
{
    struct watcher *w = arg;
    char buf[64];
    while (read(fd, buf, sizeof(buf)) > 0) {
    }
    conn_resume_producer(w->c);
}

static struct watcher *watcher_new(conn *c, uint32_t streams)
{
    struct watcher *w = calloc(1, sizeof(*w));
    if (w == NULL) {
        return NULL;
    }
    int fds[2];
    w->size = settings.logger_watcher_buf_size;
    w->ring = malloc(w->size);
    if (w->ring == NULL || pipe(fds) != 0) {
        free(w->ring);
        free(w);
        return NULL;
    }
    w->wake_rd = fds[0];
    w->wake_wr = fds[1];
    fcntl(w->wake_rd, F_SETFL, O_NONBLOCK);
    fcntl(w->wake_wr, F_SETFL, O_NONBLOCK);
    pthread_mutex_init(&w->lock, NULL);
    w->streams = streams;
    w->c = c;
    event_assign(&w->wake_event, event_get_base(&c->event), w->wake_rd,
                 EV_READ | EV_PERSIST, watcher_wake, w);
    if (event_add(&w->wake_event, 0) == -1) {
        watcher_free(w);
        return NULL;
    }
    return w;
}

enum logger_add_result logger_add_watcher(conn *c, uint32_t streams)
{
    pthread_mutex_lock(&logger_lock);
    if (atomic_load_explicit(&logger_watchers, memory_order_relaxed)
            >= LOGGER_MAX_WATCHERS) {
        pthread_mutex_unlock(&logger_lock);
        return LOGGER_ADD_TOO_MANY;
    }
    struct watcher *w = watcher_new(c, streams);
    if (w == NULL) {
        pthread_mutex_unlock(&logger_lock);
        return LOGGER_ADD_FAILED;
    }
    w->next = watchers;
    watchers = w;
    (void)logger_next_gid();    /* memcached spends an id on each watcher */
    do_streams_update();
    do_bg_thread_wake(&logger_thr);
    pthread_mutex_unlock(&logger_lock);
    c->producer = watcher_produce;
    c->producer_state = w;
    return LOGGER_ADD_OK;
}

/* ---- the logger thread ---- */

static void deliver(const char *line, uint32_t len, uint32_t streams)
{
    for (struct watcher *w = watchers; w != NULL; w = w->next) {
        if (w->streams & streams) {
            watcher_offer(w, line, len);
        }
    }
}

/* One pass over every thread's ring, then the wakes and the watchers
 * that left; true when lines moved. */
static bool do_logger_round(void)
{
    bool moved = logger_drain_rings(deliver);
    do_wake_watchers();
    do_reap_watchers();
    return moved;
}

static void *logger_thread(void *arg)
{
    long nap = LOGGER_NAP_MIN_NS;
    (void)arg;
    while (!bg_thread_stopping(&logger_thr)) {
        pthread_mutex_lock(&logger_lock);
        bool moved = do_logger_round();
        bool idle = watchers == NULL;
        while (watchers == NULL && !do_bg_thread_stopping(&logger_thr)) {
            do_bg_thread_wait(&logger_thr);
        }
        pthread_mutex_unlock(&logger_lock);
        if (!idle) {
            nap = moved ? LOGGER_NAP_MIN_NS
                        : (nap * 2 > LOGGER_NAP_MAX_NS ? LOGGER_NAP_MAX_NS
                                                        : nap * 2);
            bg_thread_sleep(&logger_thr, nap);
        }
    }
    return NULL;
}

int logger_start(void)
{
    return bg_thread_start(&logger_thr, logger_thread, NULL);
}

/* Every thread that logged is gone but the caller: nothing is left to
 * read or to wake. */
void logger_stop(void)
{
    bg_thread_stop(&logger_thr);
    pthread_mutex_lock(&logger_lock);
    atomic_store_explicit(&logger_streams, 0, memory_order_relaxed);
    atomic_store_explicit(&logger_watchers, 0, memory_order_relaxed);
    while (watchers != NULL) {
        struct watcher *w = watchers;
        watchers = w->next;
        watcher_free(w);
    }
    pthread_mutex_unlock(&logger_lock);
    logger_free_rings();
}

