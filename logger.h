/*
 * logger.h: memcached's live logs, `watch`: the streams, the calls that
 * report events and the stats (logger.c), and the daemon's side, the
 * watchers and the logger thread (logger_watch.c).
 *
 * The event calls are a leaf API: this header includes nothing of the
 * daemon, so that storage files may report what happens in them.  An
 * event site costs one relaxed load of logger_streams while nobody
 * watches: the LOGGER_* macros test it before they evaluate their
 * arguments or call anything.  While some watcher wants the stream, the
 * calling thread formats the line into a buffer of its own, which the
 * logger thread empties into the watchers' buffers; their connections
 * send them (doc/monitoring.md "Live logs: watch").
 *
 * Locks: none for the callers.  logger.c's and logger_watch.c's headers
 * say what guards what.
 */
#ifndef LOGGER_H
#define LOGGER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the streams, as `watch` names them ---- */
#define LOG_FETCHERS    (1u << 0)    /* item_get: every lookup */
#define LOG_MUTATIONS   (1u << 1)    /* item_store: every store */
#define LOG_EVICTIONS   (1u << 2)    /* eviction */
#define LOG_CONNEVENTS  (1u << 3)    /* conn_new, conn_close */
#define LOG_TIER        (1u << 4)    /* ours: tier_promote/demote/evict */
/* memcached's other streams: accepted, nothing to report here */
#define LOG_SYSEVENTS   (1u << 5)
#define LOG_RAWCMDS     (1u << 6)
#define LOG_PROXYREQS   (1u << 7)
#define LOG_PROXYEVENTS (1u << 8)
#define LOG_PROXYUSER   (1u << 9)

/* The streams some watcher wants now (stored by logger.c). */
extern _Atomic uint32_t logger_streams;
/* The client connection the calling worker serves (conn.c sets it before
 * each round of a connection's requests): the cfd= of fetches and
 * stores. */
extern _Thread_local int logger_cfd;

static inline bool logger_watching(uint32_t streams)
{
    return (atomic_load_explicit(&logger_streams, memory_order_relaxed)
            & streams) != 0;
}

/* ---- events: call through the macros below ---- */
/* status: enum item_lookup (item.h); size: the value's bytes. */
void logger_log_get(const char *key, size_t nkey, int status,
                    unsigned int clsid, uint32_t size);
/* status: enum store_item_type; cmd: enum store_cmd, as_cas when a cas
 * turned a set or replace into a cas; exptime: the item's (a rel_time_t,
 * clock.h; 0: none). */
void logger_log_store(const char *key, size_t nkey, int status, int cmd,
                      bool as_cas, uint32_t exptime, unsigned int clsid,
                      uint32_t size);
/* An item evicted from the cache (zone 'd' or 'n'); atime: its last
 * access (rel_time_t). */
void logger_log_evict(char zone, const char *key, size_t nkey, bool fetched,
                      uint32_t exptime, uint32_t atime, unsigned int clsid,
                      uint32_t size);
/* A move between the zones: promote true D<-N, false D->N. */
void logger_log_move(bool promote, const char *key, size_t nkey,
                     unsigned int clsid, uint32_t size, uint32_t counter);
/* A client connection opened, or closed for `reason`. */
enum logger_close_reason {
    LOGGER_CLOSE_ERROR = 0,
    LOGGER_CLOSE_NORMAL,
    LOGGER_CLOSE_IDLE_TIMEOUT,
    LOGGER_CLOSE_SHUTDOWN
};
void logger_log_conn(bool opened, int sfd, bool local, int reason);

#define LOGGER_GET(key, nkey, status, clsid, size) \
    do { \
        if (logger_watching(LOG_FETCHERS)) \
            logger_log_get(key, nkey, status, clsid, size); \
    } while (0)
#define LOGGER_STORE(key, nkey, status, cmd, as_cas, exptime, clsid, size) \
    do { \
        if (logger_watching(LOG_MUTATIONS)) \
            logger_log_store(key, nkey, status, cmd, as_cas, exptime, \
                             clsid, size); \
    } while (0)
#define LOGGER_EVICT(zone, key, nkey, fetched, exptime, atime, clsid, size) \
    do { \
        if (logger_watching(LOG_EVICTIONS | LOG_TIER)) \
            logger_log_evict(zone, key, nkey, fetched, exptime, atime, \
                             clsid, size); \
    } while (0)
#define LOGGER_MOVE(promote, key, nkey, clsid, size, counter) \
    do { \
        if (logger_watching(LOG_TIER)) \
            logger_log_move(promote, key, nkey, clsid, size, counter); \
    } while (0)
#define LOGGER_CONN(opened, sfd, local, reason) \
    do { \
        if (logger_watching(LOG_CONNEVENTS)) \
            logger_log_conn(opened, sfd, local, reason); \
    } while (0)

/* ---- stats (logger.c) ---- */
struct logger_stats {
    uint64_t worker_dropped;      /* lines a thread's full ring lost */
    uint64_t worker_written;      /* lines into the threads' rings */
    uint64_t watcher_skipped;     /* lines a watcher's full buffer lost */
    uint64_t watcher_sent;        /* lines into the watchers' buffers */
    uint64_t watchers;            /* watchers now */
};
void logger_get_stats(struct logger_stats *out);
void logger_stats_reset(void);

/* ---- the reader of the rings: logger_watch.c ---- */
typedef void (*logger_deliver_fn)(const char *line, uint32_t len,
                                  uint32_t streams);
/* Hand every thread's lines, in each thread's order, to deliver, and
 * free the rings of threads that have exited; true when lines moved.
 * One reader at a time. */
bool logger_drain_rings(logger_deliver_fn deliver);
/* Shutdown, every other thread that logged gone: free the rings. */
void logger_free_rings(void);
uint64_t logger_next_gid(void);
/* counted by the reader; log_watcher_sent, log_watcher_skipped and
 * log_watchers */
extern _Atomic uint64_t logger_watcher_sent;
extern _Atomic uint64_t logger_watcher_skipped;
extern _Atomic uint32_t logger_watchers;

/* ---- the daemon's side (logger_watch.c) ---- */
struct conn;

/* memcached's limit on watchers at once */
#define LOGGER_MAX_WATCHERS 20

enum logger_add_result {
    LOGGER_ADD_OK,
    LOGGER_ADD_TOO_MANY,
    LOGGER_ADD_FAILED
};
/* `watch`, in the worker that owns c: c becomes a watcher of `streams`
 * (its reply so far, then the lines, through c's producer). */
enum logger_add_result logger_add_watcher(struct conn *c, uint32_t streams);

/* Start-up, after the settings; 0 when the thread runs. */
int logger_start(void);
/* Shutdown, once every thread that logs has stopped. */
void logger_stop(void);

#endif
