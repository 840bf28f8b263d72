/*
 * logger.c: the lines of memcached's live logs (`watch`): the events
 * logger.h's calls report, formatted as memcached 1.6.18 prints them, and
 * the per-thread rings they wait in until the logger thread
 * (logger_watch.c) hands them to the watchers (doc/monitoring.md "Live
 * logs: watch").  A leaf of the storage files: nothing here knows a
 * connection.
 *
 * Owns: logger_streams (the streams some watcher wants: the only thing an
 * event site reads while nobody watches; logger_watch.c stores it),
 * logger_cfd, the global line id (gid), one ring per thread that has
 * logged (worker_logbuf_size bytes, made the first time the thread logs
 * while someone watches) and the log_* stats (the watchers' counts are
 * logger_watch.c's to bump).
 *
 * A line: the thread where the event happens formats it and appends it
 * to its own ring, a single-producer single-consumer queue, or drops it
 * when the ring is full (log_worker_dropped); the logger thread reads
 * every ring (logger_drain_rings).  A thread that exits leaves its ring
 * to be freed once read.
 *
 * Locks: rings_lock guards the list of rings and the counts of the
 * freed ones; the logger thread holds it while it reads the rings.  In a
 * ring, head is written by its thread and tail by the reader: a
 * release/acquire pair on each publishes the bytes between them.  The
 * counters are relaxed atomics, each written by one thread (and zeroed
 * by `stats reset`).
 */
#include "config.h"
#include "logger.h"

#include "clock.h"
#include "settings.h"
#include "stat_counter.h"
#include "util.h"
/* the engine's codes its events carry (key length, store results); a
 * header of storage's that reaches nothing above it */
#include "storage/item.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#define LOG_LINE_MAX 1024
#define KEY_ENCODED_MAX (KEY_MAX_LENGTH * 3 + 1)

/* read at every event site: a cache line of its own start, and the
 * counters that the logger thread writes start another */
alignas(64) _Atomic uint32_t logger_streams;
_Thread_local int logger_cfd = -1;
alignas(64) _Atomic uint64_t logger_watcher_sent;
_Atomic uint64_t logger_watcher_skipped;
_Atomic uint32_t logger_watchers;

static _Atomic uint64_t logger_gid;

/* ---- one thread's ring of entries ---- */

/* An entry: this header, then len bytes of line padded to 8.  A header
 * with len ENTRY_WRAP sends the reader back to the ring's start. */
struct entry_hdr {
    uint32_t len;
    uint32_t streams;
};
#define ENTRY_WRAP UINT32_MAX
#define ENTRY_ALIGN 8u

struct logbuf {
    char *data;
    uint32_t size;                /* a multiple of ENTRY_ALIGN */
    _Atomic uint64_t head;        /* bytes ever written: its thread's */
    _Atomic uint64_t tail;        /* bytes ever read: the logger's */
    stat_u64 written;
    stat_u64 dropped;
    _Atomic bool orphan;          /* its thread has exited */
    struct logbuf *next;          /* rings_lock */
};

static pthread_mutex_t rings_lock = PTHREAD_MUTEX_INITIALIZER;
static struct logbuf *bufs;                   /* rings_lock */
static uint64_t retired_written, retired_dropped; /* rings_lock */
static _Thread_local struct logbuf *my_buf;
static pthread_key_t buf_key;
static pthread_once_t buf_key_once = PTHREAD_ONCE_INIT;

static uint32_t align_up(uint32_t n)
{
    return (n + ENTRY_ALIGN - 1) & ~(ENTRY_ALIGN - 1);
}

/* pthread key destructor: the thread is gone, the logger frees its ring
 * once it has read what is left in it. */
static void logbuf_orphan(void *arg)
{
    struct logbuf *b = arg;
    atomic_store_explicit(&b->orphan, true, memory_order_release);
}

static void buf_key_create(void)
{
    if (pthread_key_create(&buf_key, logbuf_orphan) != 0) {
        buf_key = 0;
    }
}

/* The calling thread's ring, made on its first line; NULL without
 * memory. */
static struct logbuf *logbuf_mine(void)
{
    if (my_buf != NULL) {
        return my_buf;
    }
    pthread_once(&buf_key_once, buf_key_create);
    struct logbuf *b = calloc(1, sizeof(*b));
    uint32_t size = settings.logger_buf_size & ~(ENTRY_ALIGN - 1);
    if (b == NULL || size == 0 || (b->data = malloc(size)) == NULL) {
        free(b);
        return NULL;
    }
    b->size = size;
    pthread_setspecific(buf_key, b);
    pthread_mutex_lock(&rings_lock);
    b->next = bufs;
    bufs = b;
    pthread_mutex_unlock(&rings_lock);
    my_buf = b;
    return b;
}

static void logbuf_put(struct logbuf *b, uint32_t streams, const char *line,
                       uint32_t len)
{
    uint64_t head = atomic_load_explicit(&b->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&b->tail, memory_order_acquire);
    uint32_t need = (uint32_t)sizeof(struct entry_hdr) + align_up(len);
    uint32_t at = (uint32_t)(head % b->size);
    uint32_t pad = b->size - at < need ? b->size - at : 0;
    if (head + pad + need - tail > b->size) {
        STAT_INCR(b->dropped);
        return;
    }
    if (pad > 0) {
        struct entry_hdr wrap = { .len = ENTRY_WRAP };
        memcpy(b->data + at, &wrap, sizeof(wrap));
        at = 0;
    }
    struct entry_hdr h = { .len = len, .streams = streams };
    memcpy(b->data + at, &h, sizeof(h));
    memcpy(b->data + at + sizeof(h), line, len);
    atomic_store_explicit(&b->head, head + pad + need, memory_order_release);
    STAT_INCR(b->written);
}

/* ---- formatting ---- */

uint64_t logger_next_gid(void)
{
    return atomic_fetch_add_explicit(&logger_gid, 1,
                                     memory_order_relaxed) + 1;
}

/* "ts=SECONDS.MICROS gid=N " (the micros unpadded, as memcached prints
 * them), the event's fields, "\n", into the calling thread's ring. */
static void log_line(uint32_t stream, const char *fmt, ...)
{
    struct logbuf *b = logbuf_mine();
    if (b == NULL) {
        return;
    }
    char line[LOG_LINE_MAX];
    struct timeval tv;
    gettimeofday(&tv, NULL);
    int n = snprintf(line, sizeof(line), "ts=%lld.%d gid=%llu ",
                     (long long)tv.tv_sec, (int)tv.tv_usec,
                     (unsigned long long)logger_next_gid());
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
    va_end(ap);
    if (m < 0) {
        return;
    }
    n += m;
    if (n > (int)sizeof(line) - 2) {
        n = (int)sizeof(line) - 2;
    }
    line[n++] = '\n';
    logbuf_put(b, stream, line, (uint32_t)n);
}

static const char *lookup_status(int status)
{
    switch (status) {
    case LOOKUP_HIT: return "found";
    case LOOKUP_NO_MEMORY: return "no_memory";
    default: return "not_found";
    }
}

static const char *store_status(int status)
{
    static const char *const names[] = {
        [NOT_STORED] = "not_stored", [STORED] = "stored",
        [EXISTS] = "exists", [NOT_FOUND] = "not_found",
        [TOO_LARGE] = "too_large", [NO_MEMORY] = "no_memory"
    };
    if (status < 0 || status > NO_MEMORY) {
        return "unknown";
    }
    return names[status];
}

static const char *store_cmd_name(int cmd, bool as_cas)
{
    static const char *const names[] = {
        [NREAD_ADD] = "add", [NREAD_SET] = "set",
        [NREAD_REPLACE] = "replace", [NREAD_APPEND] = "append",
        [NREAD_PREPEND] = "prepend", [NREAD_CAS] = "cas"
    };
    if (as_cas) {
        return "cas";
    }
    if (cmd < NREAD_ADD || cmd > NREAD_CAS) {
        return "null";
    }
    return names[cmd];
}

/* ---- the events (logger.h) ---- */

void logger_log_get(const char *key, size_t nkey, int status,
                    unsigned int clsid, uint32_t size)
{
    char ekey[KEY_ENCODED_MAX];
    uri_encode(key, nkey, ekey, sizeof(ekey));
    log_line(LOG_FETCHERS,
             "type=item_get key=%s status=%s clsid=%u cfd=%d size=%u",
             ekey, lookup_status(status), clsid, logger_cfd, size);
}

void logger_log_store(const char *key, size_t nkey, int status, int cmd,
                      bool as_cas, uint32_t exptime, unsigned int clsid,
                      uint32_t size)
{
    /* unsigned, as memcached prints it: a past time wraps */
    uint32_t ttl = exptime == 0 ? 0 : exptime - current_time;
    char ekey[KEY_ENCODED_MAX];
    uri_encode(key, nkey, ekey, sizeof(ekey));
    log_line(LOG_MUTATIONS, "type=item_store key=%s status=%s cmd=%s "
             "ttl=%u clsid=%u cfd=%d size=%u", ekey, store_status(status),
             store_cmd_name(cmd, as_cas), ttl, clsid, logger_cfd, size);
}

void logger_log_evict(char zone, const char *key, size_t nkey, bool fetched,
                      uint32_t exptime, uint32_t atime, unsigned int clsid,
                      uint32_t size)
{
    rel_time_t now = current_time;
    int32_t ttl = exptime == 0 ? -1 : (int32_t)(exptime - now);
    int32_t la = (int32_t)(now - atime);
    char ekey[KEY_ENCODED_MAX];
    uri_encode(key, nkey, ekey, sizeof(ekey));
    const char *fetch = fetched ? "yes" : "no";
    if (logger_watching(LOG_EVICTIONS)) {
        log_line(LOG_EVICTIONS, "type=eviction key=%s fetch=%s ttl=%d "
                 "la=%d clsid=%u size=%u", ekey, fetch, ttl, la, clsid, size);
    }
    if (logger_watching(LOG_TIER)) {
        log_line(LOG_TIER, "type=tier_evict zone=%c key=%s fetch=%s ttl=%d "
                 "la=%d clsid=%u size=%u", zone, ekey, fetch, ttl, la, clsid,
                 size);
    }
}

void logger_log_move(bool promote, const char *key, size_t nkey,
                     unsigned int clsid, uint32_t size, uint32_t counter)
{
    char ekey[KEY_ENCODED_MAX];
    uri_encode(key, nkey, ekey, sizeof(ekey));
    log_line(LOG_TIER, "type=%s key=%s clsid=%u size=%u counter=%u",
             promote ? "tier_promote" : "tier_demote", ekey, clsid, size,
             counter);
}

/* The peer's address as memcached prints it: unix sockets "unix" and 0. */
static void peer_of(int sfd, bool local, char *ip, size_t iplen,
                    unsigned int *port)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof(sa);
    snprintf(ip, iplen, "%s", local ? "unix" : "unknown");
    *port = 0;
    if (local || getpeername(sfd, (struct sockaddr *)&sa, &len) != 0) {
        return;
    }
    if (sa.ss_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, (socklen_t)iplen);
        *port = ntohs(in->sin_port);
    } else if (sa.ss_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, (socklen_t)iplen);
        *port = ntohs(in6->sin6_port);
    }
}

void logger_log_conn(bool opened, int sfd, bool local, int reason)
{
    static const char *const reasons[] = {
        [LOGGER_CLOSE_ERROR] = "error", [LOGGER_CLOSE_NORMAL] = "normal",
        [LOGGER_CLOSE_IDLE_TIMEOUT] = "idle_timeout",
        [LOGGER_CLOSE_SHUTDOWN] = "shutdown"
    };
    char ip[INET6_ADDRSTRLEN];
    unsigned int port;
    peer_of(sfd, local, ip, sizeof(ip), &port);
    const char *transport = local ? "local" : "tcp";
    if (opened) {
        log_line(LOG_CONNEVENTS, "type=conn_new rip=%s rport=%u "
                 "transport=%s cfd=%d", ip, port, transport, sfd);
        return;
    }
    if (reason < LOGGER_CLOSE_ERROR || reason > LOGGER_CLOSE_SHUTDOWN) {
        reason = LOGGER_CLOSE_ERROR;
    }
    log_line(LOG_CONNEVENTS, "type=conn_close rip=%s rport=%u transport=%s "
             "reason=%s cfd=%d", ip, port, transport, reasons[reason], sfd);
}

/* ---- the reader's side (logger_watch.c) ---- */

/* Hand b's entries to deliver; true when there were any. */
static bool do_logbuf_drain(struct logbuf *b, logger_deliver_fn deliver)
{
    uint64_t tail = atomic_load_explicit(&b->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&b->head, memory_order_acquire);
    if (tail == head) {
        return false;
    }
    while (tail != head) {
        uint32_t at = (uint32_t)(tail % b->size);
        struct entry_hdr h;
        memcpy(&h, b->data + at, sizeof(h));
        if (h.len == ENTRY_WRAP) {
            tail += b->size - at;
            continue;
        }
        deliver(b->data + at + sizeof(h), h.len, h.streams);
        tail += sizeof(h) + align_up(h.len);
    }
    atomic_store_explicit(&b->tail, tail, memory_order_release);
    return true;
}

static void do_logbuf_retire(struct logbuf *b)
{
    retired_written += STAT_GET(b->written);
    retired_dropped += STAT_GET(b->dropped);
    free(b->data);
    free(b);
}

bool logger_drain_rings(logger_deliver_fn deliver)
{
    bool moved = false;
    pthread_mutex_lock(&rings_lock);
    struct logbuf **pp = &bufs;
    while (*pp != NULL) {
        struct logbuf *b = *pp;
        /* read before the ring: an exited thread's lines are all in it */
        bool orphan = atomic_load_explicit(&b->orphan, memory_order_acquire);
        moved |= do_logbuf_drain(b, deliver);
        if (orphan) {
            *pp = b->next;
            do_logbuf_retire(b);
        } else {
            pp = &b->next;
        }
    }
    pthread_mutex_unlock(&rings_lock);
    return moved;
}

void logger_free_rings(void)
{
    pthread_mutex_lock(&rings_lock);
    while (bufs != NULL) {
        struct logbuf *b = bufs;
        bufs = b->next;
        do_logbuf_retire(b);
    }
    pthread_mutex_unlock(&rings_lock);
    if (my_buf != NULL) {
        pthread_setspecific(buf_key, NULL);
        my_buf = NULL;
    }
}

/* ---- stats ---- */

void logger_get_stats(struct logger_stats *out)
{
    pthread_mutex_lock(&rings_lock);
    out->worker_written = retired_written;
    out->worker_dropped = retired_dropped;
    for (struct logbuf *b = bufs; b != NULL; b = b->next) {
        out->worker_written += STAT_GET(b->written);
        out->worker_dropped += STAT_GET(b->dropped);
    }
    pthread_mutex_unlock(&rings_lock);
    out->watcher_sent = STAT_GET(logger_watcher_sent);
    out->watcher_skipped = STAT_GET(logger_watcher_skipped);
    out->watchers = atomic_load_explicit(&logger_watchers,
                                         memory_order_relaxed);
}

void logger_stats_reset(void)
{
    pthread_mutex_lock(&rings_lock);
    retired_written = 0;
    retired_dropped = 0;
    for (struct logbuf *b = bufs; b != NULL; b = b->next) {
        atomic_store_explicit(&b->written, 0, memory_order_relaxed);
        atomic_store_explicit(&b->dropped, 0, memory_order_relaxed);
    }
    pthread_mutex_unlock(&rings_lock);
    atomic_store_explicit(&logger_watcher_sent, 0, memory_order_relaxed);
    atomic_store_explicit(&logger_watcher_skipped, 0, memory_order_relaxed);
}
