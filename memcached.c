/*
 * memcached.c: the daemon's entry point and its connections.
 *
 * Owns: main(), the one `settings` struct and command-line parsing (with the
 * `-o` sub-options), the server clock, listeners (TCP, UDP, unix socket),
 * and the per-connection state machine that frames request lines, reads
 * values, swallows rejected ones and flushes the response queue.  Parsing
 * of the commands themselves lives in proto_text.c; storage in items.c.
 *
 * Locks: stats_lock guards `stats` (struct server_stats).  A connection is
 * touched only by the worker that owns it; the connection table `conns` is
 * read by `stats conns` through the published fields (pub_*), which are
 * atomics, and walked by every worker for idle_timeout, which finds its
 * own connections by pub_owner.  Pausing accept() (descriptors run out,
 * or -c under no_maxconns_fast) is accept_pause.c's.
 */
#include "memcached.h"
#include "accept_pause.h"
#include "items.h"
#include "tier_reassign.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif
#define IOV_BATCH 64
#define WBUF_INITIAL 2048
#define PIECES_INITIAL 16
#define BUF_KEEP_MAX (64 * 1024)

struct settings settings;
struct nvm_zone nvm_zone;
struct server_stats stats;
pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
_Atomic rel_time_t current_time;
time_t process_started;

static struct event_base *main_base;
static struct event clock_event;
static conn *listen_conns;
static int max_fds;
static _Atomic(conn *) *conns;
static struct timespec monotonic_start;
#ifdef MEMCACHED_DEBUG
static _Atomic int64_t clock_shift;
#endif

static void drive_machine(conn *c);
static void conn_close(conn *c);

/* ------------------------------------------------------------------ */
/* clock                                                               */

static rel_time_t clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t secs = ts.tv_sec - monotonic_start.tv_sec;
#ifdef MEMCACHED_DEBUG
    secs += atomic_load(&clock_shift);
#endif
    /* memcached starts its clock at 2 so that 0 and 1 stay special */
    return (rel_time_t)(secs + 2);
}

static void clock_handler(evutil_socket_t fd, short which, void *arg)
{
    static bool initialized;
    struct timeval t = { .tv_sec = 1, .tv_usec = 0 };
    if (initialized) {
        evtimer_del(&clock_event);
    }
    initialized = true;
    evtimer_assign(&clock_event, main_base, clock_handler, NULL);
    evtimer_add(&clock_event, &t);
    atomic_store_explicit(&current_time, clock_now(), memory_order_relaxed);
}

static void clock_init(void)
{
    clock_gettime(CLOCK_MONOTONIC, &monotonic_start);
    process_started = time(NULL) - 2;
    current_time = clock_now();
}

#ifdef MEMCACHED_DEBUG
void clock_debug_shift(int64_t seconds)
{
    atomic_fetch_add(&clock_shift, seconds);
    atomic_store_explicit(&current_time, clock_now(), memory_order_relaxed);
}
#endif

/* Client expiry times: 0 never; up to 30 days relative; beyond that an
 * absolute unix time; negative means already expired. */
rel_time_t realtime(int64_t exptime)
{
    if (exptime == 0) {
        return 0;
    }
    if (exptime < 0) {
        return 1;
    }
    if (exptime > REALTIME_MAXDELTA) {
        if (exptime <= process_started) {
            return 1;
        }
        int64_t rel = exptime - process_started;
        return rel > UINT32_MAX ? UINT32_MAX : (rel_time_t)rel;
    }
    int64_t rel = exptime + current_time;
    return rel > UINT32_MAX ? UINT32_MAX : (rel_time_t)rel;
}

/* ------------------------------------------------------------------ */
/* settings                                                            */

static void settings_init(void)
{
    memset(&settings, 0, sizeof(settings));
    settings.use_cas = true;
    settings.access = 0700;
    settings.port = 11211;
    settings.udpport = 0;
    settings.inter = NULL;
    settings.maxbytes = 64 * 1024 * 1024;
    settings.maxconns = 1024;
    settings.verbose = 0;
    settings.oldest_live = 0;
    settings.oldest_cas = 0;
    settings.evict_to_free = 1;
    settings.socketpath = NULL;
    settings.factor = 1.25;
    settings.chunk_size = 48;
    settings.num_threads = 4;
    settings.num_threads_per_udp = 0;
    settings.prefix_delimiter = ':';
    settings.detail_enabled = 0;
    settings.reqs_per_event = 20;
    settings.backlog = 1024;
    settings.binding_protocol = negotiating_prot;
    settings.item_size_max = 1024 * 1024;
    settings.slab_page_size = 1024 * 1024;
    settings.slab_chunk_size_max = settings.slab_page_size / 2;
    settings.sasl = false;
    settings.maxconns_fast = true;
    settings.lru_crawler = true;
    settings.lru_crawler_sleep = 100;
    settings.lru_crawler_tocrawl = 0;
    settings.lru_maintainer_thread = true;
    settings.lru_segmented = true;
    settings.hot_lru_pct = 20;
    settings.warm_lru_pct = 40;
    settings.hot_max_factor = 0.2;
    settings.warm_max_factor = 2.0;
    settings.temporary_ttl = 61;
    settings.temp_lru = false;
    settings.idle_timeout = 0;
    settings.logger_watcher_buf_size = 256 * 1024;
    settings.logger_buf_size = 64 * 1024;
    settings.read_buf_mem_limit = 0;
    settings.track_sizes = false;
    settings.shutdown_command = false;
    settings.flush_enabled = true;
    settings.dump_enabled = true;
    settings.watch_enabled = true;
    settings.hash_expand = true;
    settings.hashpower_init = 0;
    settings.tail_repair_time = 0;
    settings.slab_reassign = 1;
    settings.slab_automove = 1;
    settings.slab_automove_ratio = 0.8;
    settings.slab_automove_window = 30;
    settings.slab_automove_freeratio = 0.01;
    settings.hash_algorithm = "murmur3";
    nvm_config_init(&settings.nvm);
    settings.tier_policy = TIER_POLICY_HMCACHED;
    settings.tier_placement = TIER_PLACE_DRAM_FIRST;
    settings.tier_promote_async = true;
    settings.tier_threshold_init = 4;
    settings.tier_adjust_period = 100000;
    settings.tier_decay_period = 1000000;
    settings.tier_mq_queues = 8;
    settings.tier_reassign = TIER_REASSIGN_DP;
    settings.tier_reassign_period = 1000000;
    settings.tier_reassign_rate = 4;
    settings.tier_inflight_limit = 16 * 1024 * 1024;
}

/* ------------------------------------------------------------------ */
/* connections                                                         */

static void conn_publish_state(conn *c)
{
    atomic_store_explicit(&c->pub_state, c->state, memory_order_relaxed);
}

void conn_set_state(conn *c, enum conn_states state)
{
    if (settings.verbose > 2 && state != c->state) {
        fprintf(stderr, "%d: going from state %d to %d\n", c->sfd,
                c->state, state);
    }
    c->state = state;
    conn_publish_state(c);
}


static void event_handler(evutil_socket_t fd, short which, void *arg)
{
    conn *c = arg;
    c->which = which;
    drive_machine(c);
}

static bool update_event(conn *c, int new_flags)
{
    if (c->ev_flags == new_flags) {
        return true;
    }
    struct event_base *base = c->event.ev_base;
    if (event_del(&c->event) == -1) {
        return false;
    }
    event_assign(&c->event, base, c->sfd, new_flags, event_handler, c);
    c->ev_flags = new_flags;
    return event_add(&c->event, 0) != -1;
}

static void conn_free_buffers(conn *c)
{
    free(c->rbuf);
    free(c->wbuf);
    free(c->pieces);
    free(c);
}

static conn *conn_alloc(int read_buffer_size)
{
    conn *c = calloc(1, sizeof(conn));
    if (c == NULL) {
        return NULL;
    }
    c->rsize = read_buffer_size;
    c->rbuf = malloc(c->rsize);
    c->wbuf_size = WBUF_INITIAL;
    c->wbuf = malloc(c->wbuf_size);
    c->pieces_size = PIECES_INITIAL;
    c->pieces = malloc(sizeof(resp_piece) * c->pieces_size);
    if (c->rbuf == NULL || c->wbuf == NULL || c->pieces == NULL) {
        conn_free_buffers(c);
        return NULL;
    }
    pthread_mutex_lock(&stats_lock);
    stats.conn_structs++;
    pthread_mutex_unlock(&stats_lock);
    return c;
}

/* Connection structs are kept per fd and reused, as memcached does; UDP
 * connections share one fd across workers and are never in the table. */
static conn *conn_struct_for(int sfd, int read_buffer_size,
                             enum network_transport transport)
{
    if (IS_UDP(transport)) {
        return conn_alloc(read_buffer_size);
    }
    if (sfd < 0 || sfd >= max_fds) {
        return NULL;
    }
    conn *c = atomic_load(&conns[sfd]);
    if (c == NULL) {
        c = conn_alloc(read_buffer_size);
        if (c != NULL) {
            atomic_store(&conns[sfd], c);
        }
        return c;
    }
    /* pairs with the release in conn_close by the struct's last owner */
    (void)atomic_load_explicit(&c->pub_state, memory_order_acquire);
    return c;
}

conn *conn_new(int sfd, enum conn_states init_state, int event_flags,
               int read_buffer_size, enum network_transport transport,
               struct event_base *base)
{
    conn *c = conn_struct_for(sfd, read_buffer_size, transport);
    if (c == NULL) {
        pthread_mutex_lock(&stats_lock);
        stats.malloc_fails++;
        pthread_mutex_unlock(&stats_lock);
        return NULL;
    }
    c->sfd = sfd;
    c->transport = transport;
    c->protocol = ascii_prot;
    c->rcurr = c->rbuf;
    c->rbytes = 0;
    c->item = NULL;
    c->sbytes = 0;
    c->noreply = false;
    c->npieces = 0;
    c->wbuf_used = 0;
    c->write_started = 0;
    c->write_offset = 0;
    c->close_after_write = false;
    c->request_addr_size = 0;
    c->thread = NULL;
    c->last_cmd_time = current_time;
    atomic_store_explicit(&c->pub_last_cmd, c->last_cmd_time,
                          memory_order_relaxed);
    c->state = init_state;
    conn_publish_state(c);

    event_assign(&c->event, base, sfd, event_flags, event_handler, c);
    c->ev_flags = event_flags;
    if (event_add(&c->event, 0) == -1) {
        perror("event_add");
        return NULL;
    }
    if (settings.verbose > 1 && init_state != conn_listening) {
        fprintf(stderr, "<%d new %s client connection\n", sfd,
                IS_UDP(transport) ? "udp" : "ascii");
    }
    pthread_mutex_lock(&stats_lock);
    stats.curr_conns++;
    stats.total_conns++;
    pthread_mutex_unlock(&stats_lock);
    return c;
}

static void conn_release_pieces(conn *c)
{
    for (int i = 0; i < c->npieces; i++) {
        if (c->pieces[i].ref != NULL) {
            item_remove(c->pieces[i].ref);
        }
    }
    c->npieces = 0;
    c->wbuf_used = 0;
    c->write_started = 0;
    c->write_offset = 0;
}

/* Large buffers from one big request are given back once it is done. */
static void conn_shrink(conn *c)
{
    if (c->rsize > BUF_KEEP_MAX && c->rbytes < READ_BUFFER_SIZE) {
        char *nb = malloc(READ_BUFFER_SIZE);
        if (nb != NULL) {
            memcpy(nb, c->rcurr, c->rbytes);
            free(c->rbuf);
            c->rbuf = nb;
            c->rcurr = nb;
            c->rsize = READ_BUFFER_SIZE;
        }
    }
    if (c->wbuf_size > BUF_KEEP_MAX && c->wbuf_used == 0) {
        char *nb = malloc(WBUF_INITIAL);
        if (nb != NULL) {
            free(c->wbuf);
            c->wbuf = nb;
            c->wbuf_size = WBUF_INITIAL;
        }
    }
    if (c->pieces_size > 1024 && c->npieces == 0) {
        resp_piece *np = malloc(sizeof(resp_piece) * PIECES_INITIAL);
        if (np != NULL) {
            free(c->pieces);
            c->pieces = np;
            c->pieces_size = PIECES_INITIAL;
        }
    }
}

static void conn_cleanup(conn *c)
{
    if (c->item != NULL) {
        item_remove(c->item);
        c->item = NULL;
    }
    conn_release_pieces(c);
}

static void conn_close(conn *c)
{
    event_del(&c->event);
    if (settings.verbose > 1) {
        fprintf(stderr, "<%d connection closed.\n", c->sfd);
    }
    conn_cleanup(c);
    int fd = c->sfd;
    c->state = conn_closed;
    /* The struct is handed over with the fd: whichever worker gets this fd
     * number from the next accept() reuses it.  The release store (matched
     * by the acquire in conn_struct_for) orders everything this worker did
     * with the struct before that reuse; after it the struct is not ours. */
    atomic_store_explicit(&c->pub_owner, NULL, memory_order_relaxed);
    atomic_store_explicit(&c->pub_state, conn_closed, memory_order_release);
    close(fd);
    pthread_mutex_lock(&stats_lock);
    stats.curr_conns--;
    pthread_mutex_unlock(&stats_lock);
    accept_pause_conn_closed();
}

/* Between commands, as memcached checks it: a connection reading a value
 * or writing a reply is never idle. */
static bool conn_is_idle(conn *c, rel_time_t now)
{
    if (c->state != conn_new_cmd && c->state != conn_waiting &&
        c->state != conn_read) {
        return false;
    }
    /* now < last_cmd_time after a debugtime step back: not idle */
    return now > c->last_cmd_time &&
           now - c->last_cmd_time > (rel_time_t)settings.idle_timeout;
}

/* idle_timeout: run once a second by each worker (thread.c).  The walk
 * reads every slot's pub_owner but touches only the connections whose
 * owner is `me`: only a worker stores itself there, and it clears it when
 * it closes the connection, so reading back `me` means the connection is
 * ours. */
void conns_close_idle(LIBEVENT_THREAD *me)
{
    rel_time_t now = current_time;
    for (int fd = 0; fd < max_fds; fd++) {
        conn *c = atomic_load(&conns[fd]);
        if (c == NULL ||
            atomic_load_explicit(&c->pub_owner, memory_order_relaxed) != me ||
            !conn_is_idle(c, now)) {
            continue;
        }
        if (settings.verbose > 1) {
            fprintf(stderr, "Closing idle fd %d\n", c->sfd);
        }
        pthread_mutex_lock(&stats_lock);
        stats.idle_kicks++;
        pthread_mutex_unlock(&stats_lock);
        conn_set_state(c, conn_closing);
        drive_machine(c);
    }
}

/* ------------------------------------------------------------------ */
/* response queue                                                      */

static resp_piece *piece_next(conn *c)
{
    if (c->npieces == c->pieces_size) {
        int nsize = c->pieces_size * 2;
        resp_piece *np = realloc(c->pieces, sizeof(resp_piece) * nsize);
        if (np == NULL) {
            return NULL;
        }
        c->pieces = np;
        c->pieces_size = nsize;
    }
    return &c->pieces[c->npieces];
}

static bool wbuf_reserve(conn *c, size_t len)
{
    if (c->wbuf_used + len <= c->wbuf_size) {
        return true;
    }
    size_t nsize = c->wbuf_size;
    while (c->wbuf_used + len > nsize) {
        nsize *= 2;
    }
    if (nsize > UINT32_MAX) {
        return false;
    }
    char *nb = realloc(c->wbuf, nsize);
    if (nb == NULL) {
        return false;
    }
    c->wbuf = nb;
    c->wbuf_size = (uint32_t)nsize;
    return true;
}

bool resp_add(conn *c, const void *buf, size_t len)
{
    if (len == 0) {
        return true;
    }
    if (!wbuf_reserve(c, len)) {
        return false;
    }
    resp_piece *last = c->npieces > 0 ? &c->pieces[c->npieces - 1] : NULL;
    if (last != NULL && last->copied &&
        last->buf_off + last->len == c->wbuf_used) {
        memcpy(c->wbuf + c->wbuf_used, buf, len);
        c->wbuf_used += len;
        last->len += len;
        return true;
    }
    resp_piece *p = piece_next(c);
    if (p == NULL) {
        return false;
    }
    memcpy(c->wbuf + c->wbuf_used, buf, len);
    p->base = NULL;
    p->len = len;
    p->ref = NULL;
    p->buf_off = c->wbuf_used;
    p->copied = true;
    c->wbuf_used += len;
    c->npieces++;
    return true;
}

bool resp_printf(conn *c, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        return false;
    }
    if ((size_t)n < sizeof(small)) {
        return resp_add(c, small, n);
    }
    char *big = malloc(n + 1);
    if (big == NULL) {
        return false;
    }
    va_start(ap, fmt);
    vsnprintf(big, n + 1, fmt, ap);
    va_end(ap);
    bool ok = resp_add(c, big, n);
    free(big);
    return ok;
}

bool resp_add_item(conn *c, item *it, size_t off, size_t len)
{
    resp_piece *p = piece_next(c);
    if (p == NULL) {
        item_remove(it);
        return false;
    }
    p->base = ITEM_data(it) + off;
    p->len = len;
    p->ref = it;
    p->buf_off = 0;
    p->copied = false;
    c->npieces++;
    return true;
}

void out_string(conn *c, const char *str)
{
    if (c->noreply) {
        c->noreply = false;
        return;
    }
    if (settings.verbose > 1) {
        fprintf(stderr, ">%d %s\n", c->sfd, str);
    }
    size_t len = strlen(str);
    if (!resp_add(c, str, len) || !resp_add(c, "\r\n", 2)) {
        conn_set_state(c, conn_closing);
    }
}

void out_errstring(conn *c, const char *str)
{
    c->noreply = false;
    out_string(c, str);
}

void conn_start_nread(conn *c, item *it, int nbytes, enum store_cmd cmd)
{
    c->item = it;
    c->ritem = ITEM_data(it);
    c->rlbytes = nbytes;
    c->cmd = cmd;
    conn_set_state(c, conn_nread);
}

void conn_start_swallow(conn *c, int nbytes)
{
    c->sbytes = nbytes;
    conn_set_state(c, conn_swallow);
}

void conn_close_after_write(conn *c)
{
    c->close_after_write = true;
}

/* ------------------------------------------------------------------ */
/* reading                                                             */

enum read_result {
    READ_DATA_RECEIVED,
    READ_NO_DATA_RECEIVED,
    READ_ERROR,
    READ_MEMORY_ERROR
};

static void rbuf_compact(conn *c)
{
    if (c->rcurr != c->rbuf) {
        if (c->rbytes > 0) {
            memmove(c->rbuf, c->rcurr, c->rbytes);
        }
        c->rcurr = c->rbuf;
    }
}

static bool rbuf_grow(conn *c)
{
    char *nb = realloc(c->rbuf, c->rsize * 2);
    if (nb == NULL) {
        return false;
    }
    c->rcurr = nb + (c->rcurr - c->rbuf);
    c->rbuf = nb;
    c->rsize *= 2;
    return true;
}

static void count_bytes_read(conn *c, ssize_t n)
{
    if (c->thread != NULL) {
        STAT_ADD(c->thread->stats.bytes_read, n);
    }
}

static enum read_result try_read_tcp(conn *c)
{
    enum read_result result = READ_NO_DATA_RECEIVED;
    rbuf_compact(c);
    for (int rounds = 0; rounds < 4; rounds++) {
        if (c->rbytes >= c->rsize) {
            if (!rbuf_grow(c)) {
                return READ_MEMORY_ERROR;
            }
        }
        int avail = c->rsize - c->rbytes;
        ssize_t n = read(c->sfd, c->rbuf + c->rbytes, avail);
        if (n > 0) {
            count_bytes_read(c, n);
            c->rbytes += n;
            result = READ_DATA_RECEIVED;
            if (n < avail) {
                break;
            }
            continue;
        }
        if (n == 0) {
            return READ_ERROR;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            break;
        }
        if (errno == EINTR) {
            continue;
        }
        return READ_ERROR;
    }
    return result;
}

/* A UDP request is one datagram: an 8-byte frame header (request id,
 * sequence number, datagram count, reserved) and the request text. */
static enum read_result try_read_udp(conn *c)
{
    c->request_addr_size = sizeof(c->request_addr);
    ssize_t n = recvfrom(c->sfd, c->rbuf, c->rsize, 0,
                         (struct sockaddr *)&c->request_addr,
                         &c->request_addr_size);
    if (n <= UDP_HEADER_SIZE) {
        return READ_NO_DATA_RECEIVED;
    }
    count_bytes_read(c, n);
    unsigned char *hdr = (unsigned char *)c->rbuf;
    c->request_id = (uint16_t)(hdr[0] << 8 | hdr[1]);
    c->udp_multipacket = (hdr[4] << 8 | hdr[5]) > 1;
    n -= UDP_HEADER_SIZE;
    memmove(c->rbuf, c->rbuf + UDP_HEADER_SIZE, n);
    c->rbytes = (int)n;
    c->rcurr = c->rbuf;
    return READ_DATA_RECEIVED;
}

/* ------------------------------------------------------------------ */
/* writing                                                             */

static int fill_iovecs(conn *c, struct iovec *iov, int max)
{
    int n = 0;
    for (int i = c->write_started; i < c->npieces && n < max; i++) {
        resp_piece *p = &c->pieces[i];
        const char *base = p->copied ? c->wbuf + p->buf_off : p->base;
        size_t skip = (i == c->write_started) ? c->write_offset : 0;
        iov[n].iov_base = (void *)(base + skip);
        iov[n].iov_len = p->len - skip;
        n++;
    }
    return n;
}

static void advance_written(conn *c, size_t n)
{
    while (n > 0 && c->write_started < c->npieces) {
        resp_piece *p = &c->pieces[c->write_started];
        size_t left = p->len - c->write_offset;
        if (n >= left) {
            n -= left;
            c->write_started++;
            c->write_offset = 0;
        } else {
            c->write_offset += n;
            n = 0;
        }
    }
}

enum write_result {
    WRITE_COMPLETE,
    WRITE_INCOMPLETE,
    WRITE_SOFT_ERROR,
    WRITE_HARD_ERROR
};

static enum write_result transmit_tcp(conn *c)
{
    struct iovec iov[IOV_BATCH];
    while (c->write_started < c->npieces) {
        int n = fill_iovecs(c, iov, IOV_BATCH);
        struct msghdr msg = { .msg_iov = iov, .msg_iovlen = n };
        ssize_t res = sendmsg(c->sfd, &msg, MSG_NOSIGNAL);
        if (res > 0) {
            if (c->thread != NULL) {
                STAT_ADD(c->thread->stats.bytes_written, res);
            }
            advance_written(c, res);
            continue;
        }
        if (res == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return WRITE_SOFT_ERROR;
        }
        if (res == -1 && errno == EINTR) {
            continue;
        }
        return WRITE_HARD_ERROR;
    }
    return WRITE_COMPLETE;
}

/* Copy up to `room` reply bytes into dst, advancing the write position. */
static size_t gather_reply(conn *c, char *dst, size_t room)
{
    struct iovec iov[IOV_BATCH];
    size_t total = 0;
    while (total < room && c->write_started < c->npieces) {
        int n = fill_iovecs(c, iov, IOV_BATCH);
        size_t before = total;
        for (int i = 0; i < n && total < room; i++) {
            size_t take = iov[i].iov_len;
            if (take > room - total) {
                take = room - total;
            }
            memcpy(dst + total, iov[i].iov_base, take);
            total += take;
        }
        advance_written(c, total - before);
    }
    return total;
}

static size_t reply_bytes(conn *c)
{
    size_t total = 0;
    for (int i = 0; i < c->npieces; i++) {
        total += c->pieces[i].len;
    }
    return total;
}

/* UDP replies: every datagram carries the request id, its sequence number
 * and the datagram count, then up to UDP_MAX_PAYLOAD_SIZE bytes. */
static enum write_result transmit_udp(conn *c)
{
    size_t payload = UDP_MAX_PAYLOAD_SIZE - UDP_HEADER_SIZE;
    size_t total = reply_bytes(c);
    size_t count = total == 0 ? 0 : (total + payload - 1) / payload;
    if (count > UINT16_MAX) {
        return WRITE_HARD_ERROR;
    }
    char dgram[UDP_MAX_PAYLOAD_SIZE];
    for (size_t seq = 0; seq < count; seq++) {
        unsigned char *h = (unsigned char *)dgram;
        h[0] = c->request_id >> 8;
        h[1] = c->request_id & 0xff;
        h[2] = (uint16_t)seq >> 8;
        h[3] = seq & 0xff;
        h[4] = (uint16_t)count >> 8;
        h[5] = count & 0xff;
        h[6] = 0;
        h[7] = 0;
        size_t len = gather_reply(c, dgram + UDP_HEADER_SIZE, payload);
        ssize_t res = sendto(c->sfd, dgram, len + UDP_HEADER_SIZE, 0,
                             (struct sockaddr *)&c->request_addr,
                             c->request_addr_size);
        if (res > 0 && c->thread != NULL) {
            STAT_ADD(c->thread->stats.bytes_written, res);
        }
    }
    return WRITE_COMPLETE;
}

/* ------------------------------------------------------------------ */
/* the state machine                                                   */

static bool line_may_grow(conn *c)
{
    /* Only a multiget may have a line longer than LINE_LIMIT. */
    const char *p = c->rcurr;
    const char *end = c->rcurr + c->rbytes;
    while (p < end && *p == ' ') {
        p++;
    }
    if (p - c->rcurr > 100) {
        return false;
    }
    size_t left = end - p;
    return (left >= 4 && memcmp(p, "get ", 4) == 0) ||
           (left >= 5 && memcmp(p, "gets ", 5) == 0);
}

/* Returns true when a command was processed, false when more input is
 * needed (state set accordingly). */
static bool try_read_command(conn *c)
{
    if (c->rbytes == 0) {
        return false;
    }
    char *el = memchr(c->rcurr, '\n', c->rbytes);
    if (el == NULL) {
        if (c->rbytes > LINE_LIMIT && !line_may_grow(c)) {
            conn_set_state(c, conn_closing);
            return true;
        }
        return false;
    }
    char *cont = el + 1;
    if (el > c->rcurr && el[-1] == '\r') {
        el--;
    }
    *el = '\0';
    size_t len = el - c->rcurr;
    char *line = c->rcurr;
    c->rbytes -= cont - c->rcurr;
    c->rcurr = cont;
    c->last_cmd_time = current_time;
    atomic_store_explicit(&c->pub_last_cmd, c->last_cmd_time,
                          memory_order_relaxed);
    if (settings.verbose > 1) {
        fprintf(stderr, "<%d %s\n", c->sfd, line);
    }
    conn_set_state(c, conn_parse_cmd);
    process_command_ascii(c, line, len);
    if (c->state == conn_parse_cmd) {
        conn_set_state(c, conn_new_cmd);
    }
    return true;
}

static void reset_cmd(conn *c)
{
    c->noreply = false;
    if (c->item != NULL) {
        item_remove(c->item);
        c->item = NULL;
    }
    c->meta_pending_len = 0;
    c->meta_pending_flags = 0;
}

/* In the middle of a command (value still arriving, or being swallowed):
 * send the replies queued so far, then wait for input, and for
 * writability too while some of them are still unsent. */
static bool wait_for_more_input(conn *c)
{
    if (c->npieces > 0 && transmit_tcp(c) == WRITE_COMPLETE) {
        conn_release_pieces(c);
    }
    int flags = EV_READ | EV_PERSIST;
    if (c->npieces > 0) {
        flags |= EV_WRITE;
    }
    return update_event(c, flags);
}

/* Feed value bytes into c->item; true when complete. */
static bool nread_step(conn *c, bool *stop)
{
    if (c->rlbytes == 0) {
        complete_nread(c);
        if (c->state == conn_nread) {
            conn_set_state(c, conn_new_cmd);
        }
        return true;
    }
    if (c->rbytes > 0) {
        int take = c->rbytes > c->rlbytes ? c->rlbytes : c->rbytes;
        memcpy(c->ritem, c->rcurr, take);
        c->ritem += take;
        c->rlbytes -= take;
        c->rcurr += take;
        c->rbytes -= take;
        return false;
    }
    if (IS_UDP(c->transport)) {
        /* a datagram holds the whole request: the value is short */
        conn_set_state(c, conn_new_cmd);
        return false;
    }
    ssize_t res = read(c->sfd, c->ritem, c->rlbytes);
    if (res > 0) {
        count_bytes_read(c, res);
        c->ritem += res;
        c->rlbytes -= res;
        return false;
    }
    if (res == 0 || (errno != EAGAIN && errno != EWOULDBLOCK &&
                     errno != EINTR)) {
        conn_set_state(c, conn_closing);
        return false;
    }
    if (errno == EINTR) {
        return false;
    }
    if (!wait_for_more_input(c)) {
        conn_set_state(c, conn_closing);
        return false;
    }
    *stop = true;
    return false;
}

static void swallow_step(conn *c, bool *stop)
{
    if (c->sbytes <= 0) {
        conn_set_state(c, conn_new_cmd);
        return;
    }
    if (c->rbytes > 0) {
        int take = c->rbytes > c->sbytes ? c->sbytes : c->rbytes;
        c->sbytes -= take;
        c->rcurr += take;
        c->rbytes -= take;
        return;
    }
    if (IS_UDP(c->transport)) {
        conn_set_state(c, conn_new_cmd);
        return;
    }
    char scratch[16384];
    int want = c->sbytes > (int)sizeof(scratch) ? (int)sizeof(scratch)
                                                : c->sbytes;
    ssize_t res = read(c->sfd, scratch, want);
    if (res > 0) {
        count_bytes_read(c, res);
        c->sbytes -= res;
        return;
    }
    if (res == 0 || (errno != EAGAIN && errno != EWOULDBLOCK &&
                     errno != EINTR)) {
        conn_set_state(c, conn_closing);
        return;
    }
    if (errno != EINTR) {
        if (!wait_for_more_input(c)) {
            conn_set_state(c, conn_closing);
            return;
        }
        *stop = true;
    }
}

static void write_step(conn *c, bool *stop)
{
    enum write_result r = IS_UDP(c->transport) ? transmit_udp(c)
                                               : transmit_tcp(c);
    switch (r) {
    case WRITE_COMPLETE:
        conn_release_pieces(c);
        conn_shrink(c);
        if (c->close_after_write) {
            conn_set_state(c, conn_closing);
        } else if (IS_UDP(c->transport)) {
            c->rbytes = 0;
            conn_set_state(c, conn_read);
        } else {
            conn_set_state(c, conn_new_cmd);
        }
        break;
    case WRITE_SOFT_ERROR:
        if (!update_event(c, EV_WRITE | EV_PERSIST)) {
            conn_set_state(c, conn_closing);
            break;
        }
        *stop = true;
        break;
    case WRITE_INCOMPLETE:
        break;
    case WRITE_HARD_ERROR:
        conn_set_state(c, conn_closing);
        break;
    }
}

/* Between commands: parse the next one if its line is buffered, otherwise
 * flush replies and wait for input. */
static void new_cmd_step(conn *c, bool *stop)
{
    reset_cmd(c);
    if (++c->reqs_this_event >= settings.reqs_per_event && c->rbytes > 0) {
        /* be fair to the other connections of this worker: flush, then
         * come back through the event loop */
        if (c->thread != NULL) {
            STAT_INCR(c->thread->stats.conn_yields);
        }
        c->reqs_this_event = 0;
        if (c->npieces > 0) {
            conn_set_state(c, conn_write);
            return;
        }
        if (!update_event(c, EV_WRITE | EV_PERSIST)) {
            conn_set_state(c, conn_closing);
            return;
        }
        *stop = true;
        return;
    }
    if (c->rbytes > 0 && try_read_command(c)) {
        return;
    }
    if (c->npieces > 0) {
        conn_set_state(c, conn_write);
        return;
    }
    if (IS_UDP(c->transport)) {
        c->rbytes = 0;
        conn_set_state(c, conn_read);
        return;
    }
    conn_set_state(c, conn_waiting);
}

static void read_step(conn *c)
{
    enum read_result r = IS_UDP(c->transport) ? try_read_udp(c)
                                              : try_read_tcp(c);
    switch (r) {
    case READ_DATA_RECEIVED:
        if (IS_UDP(c->transport) && c->udp_multipacket) {
            /* requests spanning datagrams are dropped, as memcached does */
            c->rbytes = 0;
            conn_set_state(c, conn_read);
            break;
        }
        conn_set_state(c, conn_new_cmd);
        break;
    case READ_NO_DATA_RECEIVED:
        conn_set_state(c, conn_waiting);
        break;
    case READ_ERROR:
        conn_set_state(c, conn_closing);
        break;
    case READ_MEMORY_ERROR:
        out_errstring(c, "SERVER_ERROR out of memory reading request");
        conn_close_after_write(c);
        conn_set_state(c, conn_write);
        break;
    }
}

static void accept_step(conn *listener);

/* The per-connection loop: runs until it must wait for the socket. */
static void drive_machine(conn *c)
{
    bool stop = false;
    c->reqs_this_event = 0;
    while (!stop) {
        switch (c->state) {
        case conn_listening:
            accept_step(c);
            stop = true;
            break;
        case conn_waiting:
            rbuf_compact(c);
            if (!update_event(c, EV_READ | EV_PERSIST)) {
                conn_set_state(c, conn_closing);
                break;
            }
            conn_set_state(c, conn_read);
            stop = true;
            break;
        case conn_read:
            read_step(c);
            break;
        case conn_new_cmd:
            new_cmd_step(c, &stop);
            break;
        case conn_parse_cmd:
            if (!try_read_command(c)) {
                conn_set_state(c, c->npieces > 0 ? conn_write
                                                  : conn_waiting);
            }
            break;
        case conn_nread:
            nread_step(c, &stop);
            break;
        case conn_swallow:
            swallow_step(c, &stop);
            break;
        case conn_write:
        case conn_mwrite:
            write_step(c, &stop);
            break;
        case conn_closing:
            if (IS_UDP(c->transport)) {
                conn_cleanup(c);
                c->rbytes = 0;
                conn_set_state(c, conn_read);
                stop = true;
            } else {
                if (c->npieces > 0 && !c->close_after_write) {
                    /* send what was answered before closing */
                    c->close_after_write = true;
                    transmit_tcp(c);
                }
                conn_close(c);
                stop = true;
            }
            break;
        case conn_closed:
        case conn_watch:
        case conn_max_state:
            stop = true;
            break;
        }
    }
}

/* ------------------------------------------------------------------ */
/* listeners                                                           */

static void reject_conn(int sfd)
{
    static const char msg[] = "ERROR Too many open connections\r\n";
    ssize_t unused = write(sfd, msg, sizeof(msg) - 1);
    (void)unused;
    close(sfd);
    pthread_mutex_lock(&stats_lock);
    stats.rejected_conns++;
    pthread_mutex_unlock(&stats_lock);
}

bool conn_limit_reached(void)
{
    pthread_mutex_lock(&stats_lock);
    bool over = stats.curr_conns + stats.reserved_fds >=
                (uint64_t)settings.maxconns - 1;
    pthread_mutex_unlock(&stats_lock);
    return over;
}

/* The accept pause (accept_pause.c) switches the listeners off and on. */
void listeners_arm(bool on)
{
    for (conn *c = listen_conns; c != NULL; c = c->next) {
        if (!on) {
            event_del(&c->event);
        } else if (event_add(&c->event, NULL) == -1) {
            perror("event_add(listener)");
        }
    }
}

static void accept_step(conn *listener)
{
    if (!settings.maxconns_fast && conn_limit_reached()) {
        /* memcached's -c is its descriptor limit: wait for room */
        if (settings.verbose > 0) {
            fprintf(stderr, "Too many open connections\n");
        }
        accept_pause();
        return;
    }
    struct sockaddr_storage addr;
    socklen_t addrlen = sizeof(addr);
    int sfd = accept(listener->sfd, (struct sockaddr *)&addr, &addrlen);
    if (sfd == -1) {
        if (accept_shortage(errno)) {
            if (settings.verbose > 0) {
                perror("Too many open connections");
            }
            accept_pause();
        } else if (errno != EAGAIN && errno != EWOULDBLOCK &&
                   errno != EINTR && errno != ECONNABORTED) {
            perror("accept()");
        }
        return;
    }
    if (fcntl(sfd, F_SETFL, fcntl(sfd, F_GETFL) | O_NONBLOCK) < 0) {
        perror("setting O_NONBLOCK");
        close(sfd);
        return;
    }
    if (settings.maxconns_fast && conn_limit_reached()) {
        reject_conn(sfd);
        return;
    }
    dispatch_conn_new(sfd, conn_new_cmd, EV_READ | EV_PERSIST,
                      READ_BUFFER_SIZE, listener->transport);
}

static int new_socket(struct addrinfo *ai)
{
    int sfd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (sfd == -1) {
        return -1;
    }
    if (fcntl(sfd, F_SETFL, fcntl(sfd, F_GETFL) | O_NONBLOCK) < 0) {
        perror("setting O_NONBLOCK");
        close(sfd);
        return -1;
    }
    return sfd;
}

static void maximize_sndbuf(int sfd)
{
    int old = 0;
    socklen_t len = sizeof(old);
    if (getsockopt(sfd, SOL_SOCKET, SO_SNDBUF, &old, &len) != 0) {
        return;
    }
    int min = old, max = MAX_SENDBUF_SIZE;
    while (min <= max) {
        int avg = min + (max - min) / 2;
        if (setsockopt(sfd, SOL_SOCKET, SO_SNDBUF, &avg, sizeof(avg)) == 0) {
            min = avg + 1;
        } else {
            max = avg - 1;
        }
    }
}

static void set_socket_options(int sfd, struct addrinfo *ai, bool is_udp)
{
    int on = 1;
    setsockopt(sfd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (ai->ai_family == AF_INET6) {
        setsockopt(sfd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
    }
    if (is_udp) {
        maximize_sndbuf(sfd);
        return;
    }
    setsockopt(sfd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    struct linger ling = { 0, 0 };
    setsockopt(sfd, SOL_SOCKET, SO_LINGER, &ling, sizeof(ling));
    setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

static void add_listener(int sfd, enum network_transport transport)
{
    conn *c = conn_new(sfd, conn_listening, EV_READ | EV_PERSIST, 1,
                       transport, main_base);
    if (c == NULL) {
        fprintf(stderr, "failed to create listening connection\n");
        exit(EXIT_FAILURE);
    }
    c->next = listen_conns;
    listen_conns = c;
    if (settings.verbose > 1) {
        fprintf(stderr, "<%d server listening (%s)\n", sfd,
                transport == local_transport ? "unix" : "tcp");
    }
}

/* Bind every address `host` resolves to; returns 0 on success. */
static int server_socket(const char *host, int port, bool is_udp,
                         FILE *portfile)
{
    struct addrinfo hints = {
        .ai_flags = AI_PASSIVE,
        .ai_family = AF_UNSPEC,
        .ai_socktype = is_udp ? SOCK_DGRAM : SOCK_STREAM,
    };
    char port_buf[NI_MAXSERV];
    snprintf(port_buf, sizeof(port_buf), "%d", port);
    struct addrinfo *ai;
    int error = getaddrinfo(host, port_buf, &hints, &ai);
    if (error != 0) {
        if (error != EAI_SYSTEM) {
            fprintf(stderr, "getaddrinfo(): %s\n", gai_strerror(error));
        } else {
            perror("getaddrinfo()");
        }
        return 1;
    }
    bool success = false;
    for (struct addrinfo *next = ai; next != NULL; next = next->ai_next) {
        int sfd = new_socket(next);
        if (sfd == -1) {
            if (errno == EMFILE) {
                perror("server_socket");
                exit(EXIT_FAILURE);
            }
            continue;
        }
        set_socket_options(sfd, next, is_udp);
        if (bind(sfd, next->ai_addr, next->ai_addrlen) == -1) {
            if (errno != EADDRINUSE) {
                perror("bind()");
                close(sfd);
                freeaddrinfo(ai);
                return 1;
            }
            close(sfd);
            continue;
        }
        success = true;
        if (!is_udp && listen(sfd, settings.backlog) == -1) {
            perror("listen()");
            close(sfd);
            freeaddrinfo(ai);
            return 1;
        }
        if (portfile != NULL) {
            struct sockaddr_storage sa;
            socklen_t salen = sizeof(sa);
            if (getsockname(sfd, (struct sockaddr *)&sa, &salen) == 0) {
                int p = ntohs(sa.ss_family == AF_INET
                    ? ((struct sockaddr_in *)&sa)->sin_port
                    : ((struct sockaddr_in6 *)&sa)->sin6_port);
                fprintf(portfile, "%s INET%s: %d\n", is_udp ? "UDP" : "TCP",
                        next->ai_family == AF_INET ? "" : "6", p);
            }
        }
        if (is_udp) {
            dispatch_udp_socket(sfd);
        } else {
            add_listener(sfd, tcp_transport);
        }
    }
    freeaddrinfo(ai);
    return success ? 0 : 1;
}

/* -l takes a comma list (and may be repeated); each entry may carry its own
 * port as host:port or [v6]:port. */
static int server_sockets(int port, bool is_udp, FILE *portfile)
{
    if (settings.inter == NULL) {
        return server_socket(NULL, port, is_udp, portfile);
    }
    char *list = strdup(settings.inter);
    if (list == NULL) {
        fprintf(stderr, "Failed to allocate memory for listen list\n");
        return 1;
    }
    int ret = 0;
    char *save = NULL;
    for (char *p = strtok_r(list, ";,", &save); p != NULL;
         p = strtok_r(NULL, ";,", &save)) {
        int the_port = port;
        char *host = p;
        char *colon = strrchr(p, ':');
        if (*p == '[') {
            char *close_br = strchr(p, ']');
            if (close_br == NULL) {
                fprintf(stderr, "Invalid IPV6 address: \"%s\"", p);
                free(list);
                return 1;
            }
            host = p + 1;
            *close_br = '\0';
            colon = close_br[1] == ':' ? close_br + 1 : NULL;
        } else if (colon != NULL && strchr(p, ':') != colon) {
            colon = NULL; /* bare IPv6 address without port */
        }
        if (colon != NULL) {
            *colon = '\0';
            int32_t parsed;
            if (!safe_strtol(colon + 1, &parsed) || parsed < 0 ||
                parsed > 65535) {
                fprintf(stderr, "Invalid port number: \"%s\"", colon + 1);
                free(list);
                return 1;
            }
            the_port = parsed;
        }
        if (strcmp(host, "*") == 0) {
            host = NULL;
        }
        ret |= server_socket(host, the_port, is_udp, portfile);
    }
    free(list);
    return ret;
}

static int server_socket_unix(const char *path, int access_mask)
{
    struct stat tstat;
    if (lstat(path, &tstat) == 0 && S_ISSOCK(tstat.st_mode)) {
        unlink(path);
    }
    int sfd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (sfd == -1) {
        perror("socket()");
        return 1;
    }
    if (fcntl(sfd, F_SETFL, fcntl(sfd, F_GETFL) | O_NONBLOCK) < 0) {
        perror("setting O_NONBLOCK");
        close(sfd);
        return 1;
    }
    int on = 1;
    setsockopt(sfd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof(addr.sun_path)) {
        fprintf(stderr, "unix socket path too long: %s\n", path);
        close(sfd);
        return 1;
    }
    strcpy(addr.sun_path, path);
    mode_t old_umask = umask(~(access_mask & 0777));
    if (bind(sfd, (struct sockaddr *)&addr, sizeof(addr)) == -1) {
        perror("bind()");
        close(sfd);
        umask(old_umask);
        return 1;
    }
    umask(old_umask);
    if (listen(sfd, settings.backlog) == -1) {
        perror("listen()");
        close(sfd);
        return 1;
    }
    add_listener(sfd, local_transport);
    return 0;
}

/* ------------------------------------------------------------------ */
/* stats conns                                                         */

static const char *state_name(int state)
{
    static const char *const names[] = {
        "conn_listening", "conn_new_cmd", "conn_waiting", "conn_read",
        "conn_parse_cmd", "conn_write", "conn_nread", "conn_swallow",
        "conn_closing", "conn_mwrite", "conn_closed", "conn_watch"
    };
    if (state < 0 || state >= conn_max_state) {
        return "unknown";
    }
    return names[state];
}

static void describe_addr(int sfd, bool peer, char *out, size_t outlen)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof(sa);
    int rc = peer ? getpeername(sfd, (struct sockaddr *)&sa, &len)
                  : getsockname(sfd, (struct sockaddr *)&sa, &len);
    char host[INET6_ADDRSTRLEN] = "";
    if (rc != 0) {
        snprintf(out, outlen, "unknown");
        return;
    }
    if (sa.ss_family == AF_UNIX) {
        snprintf(out, outlen, "unix:%s",
                 ((struct sockaddr_un *)&sa)->sun_path);
    } else if (sa.ss_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        snprintf(out, outlen, "tcp:%s:%u", host, ntohs(in->sin_port));
    } else if (sa.ss_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        snprintf(out, outlen, "tcp6:[%s]:%u", host, ntohs(in6->sin6_port));
    } else {
        snprintf(out, outlen, "unknown");
    }
}

void process_stat_conns(ADD_STAT add_stats, void *c)
{
    char key[64];
    char addr[256];
    for (int fd = 0; fd < max_fds; fd++) {
        conn *x = atomic_load(&conns[fd]);
        if (x == NULL) {
            continue;
        }
        int state = atomic_load_explicit(&x->pub_state, memory_order_relaxed);
        if (state == conn_closed) {
            continue;
        }
        bool listening = state == conn_listening;
        describe_addr(fd, !listening, addr, sizeof(addr));
        snprintf(key, sizeof(key), "%d:addr", fd);
        add_stats(key, strlen(key), addr, strlen(addr), c);
        if (!listening) {
            describe_addr(fd, false, addr, sizeof(addr));
            snprintf(key, sizeof(key), "%d:listen_addr", fd);
            add_stats(key, strlen(key), addr, strlen(addr), c);
        }
        const char *sn = state_name(state);
        snprintf(key, sizeof(key), "%d:state", fd);
        add_stats(key, strlen(key), sn, strlen(sn), c);
        if (!listening) {
            rel_time_t last = atomic_load_explicit(&x->pub_last_cmd,
                                                   memory_order_relaxed);
            snprintf(key, sizeof(key), "%d:secs_since_last_cmd", fd);
            append_stat(key, add_stats, c, "%u", current_time - last);
        }
    }
}

/* ------------------------------------------------------------------ */
/* shutdown and signals                                                */

static struct event sigterm_event;
static struct event sigint_event;

void server_shutdown(void)
{
    kill(getpid(), SIGTERM);
}

static void signal_cb(evutil_socket_t sig, short which, void *arg)
{
    if (settings.verbose > 0) {
        fprintf(stderr, "Signal handled: %s.\n", strsignal(sig));
    }
    event_base_loopbreak(main_base);
}

static void install_signal_events(void)
{
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    evsignal_assign(&sigterm_event, main_base, SIGTERM, signal_cb, NULL);
    evsignal_assign(&sigint_event, main_base, SIGINT, signal_cb, NULL);
    evsignal_add(&sigterm_event, NULL);
    evsignal_add(&sigint_event, NULL);
}

/* ------------------------------------------------------------------ */
/* command line                                                        */

static void usage(void)
{
    printf("memcached " MEMCACHED_COMPAT_VERSION " (tiercached " PACKAGE_VERSION ")" "\n"
"-p, --port=<num>          TCP port to listen on (default: 11211, 0 = any free port)\n"
"-U, --udp-port=<num>      UDP port to listen on (default: 0, off)\n"
"-s, --unix-socket=<file>  UNIX socket to listen on (disables network support)\n"
"-a, --unix-mask=<mask>    access mask for UNIX socket, in octal (default: 700)\n"
"-A, --enable-shutdown     enable ascii \"shutdown\" command\n"
"-l, --listen=<addr>       interface to listen on (default: INADDR_ANY);\n"
"                          repeatable, comma separated, host or host:port\n"
"-d, --daemon              run as a daemon\n"
"-r, --enable-coredumps    maximize core file limit\n"
"-u, --user=<user>         assume identity of <username> (only when run as root)\n"
"-m, --memory-limit=<num>  DRAM item memory in megabytes (default: 64)\n"
"-M, --disable-evictions   return error on memory exhausted instead of evicting\n"
"-c, --conn-limit=<num>    max simultaneous connections (default: 1024)\n"
"-k, --lock-memory         lock down all paged memory\n"
"-v, --verbose             verbose (print errors/warnings while in event loop)\n"
"-vv                       very verbose (also print client commands/responses)\n"
"-vvv                      extremely verbose (internal state transitions)\n"
"-h, --help                print this help and exit\n"
"-i, --license             print the license and exit\n"
"-V, --version             print version and exit\n"
"-P, --pidfile=<file>      save PID in <file>, only used with -d option\n"
"-f, --slab-growth-factor=<num> chunk size growth factor (default: 1.25)\n"
"-n, --slab-min-size=<bytes> min space used for key+value+flags (default: 48)\n"
"-L, --enable-largepages   try to use large memory pages (if available)\n"
"-D <char>                 use <char> as the delimiter between key prefixes and\n"
"                          IDs for per-prefix stats (default \":\"); turns\n"
"                          prefix stats on (also: \"stats detail on\")\n"
"-t, --threads=<num>       number of worker threads (default: 4)\n"
"-R, --max-reqs-per-event  requests served per connection before yielding to\n"
"                          the others (default: 20)\n"
"-C, --disable-cas         disable use of CAS\n"
"-b, --listen-backlog=<num> set the backlog queue limit (default: 1024)\n"
"-B, --protocol=<name>     ascii or auto (default: auto; binary not built yet)\n"
"-I, --max-item-size=<num> adjusts max item size\n"
"                          (default: 1m, min: 1k, max: 1024m)\n"
"-F, --disable-flush-all   disable flush_all command\n"
"-X, --disable-dumping     disable stats cachedump and lru_crawler metadump\n"
"-W, --disable-watch       disable watch commands (live logging)\n"
"-S, -Z, -e, -Y            SASL, TLS, memory file, auth file: not supported yet\n"
"-o, --extended            comma separated list of extended options\n"
"   - maxconns_fast / no_maxconns_fast: refuse new connections over -c at once\n"
"                          (default: enabled), or hold them until one closes\n"
"   - hashpower=<n>        initial index size as a power of two (default: 16)\n"
"   - no_hashexpand        never grow the index\n"
"   - hash_algorithm=<x>   accepted for compatibility; tiercached has one hash\n"
"   - no_lru_crawler       disable the background crawler that reclaims\n"
"                          expired items\n"
"   - lru_crawler_sleep=<us> microseconds to sleep between items (default: 100)\n"
"   - lru_crawler_tocrawl=<n> max items to crawl per class per run (0: all)\n"
"   - idle_timeout=<s>     close connections idle longer (default: 0, off)\n"
"   - track_sizes          enable \"stats sizes\"\n"
"   - slab_automove=<0-2>, slab_automove_ratio, slab_automove_window,\n"
"     slab_reassign, no_slab_reassign\n"
"   Tiers (see doc/tiering.md; without nvm_size there is no N-zone):\n"
"   - nvm_path=<path>      N-zone on a device-DAX node, a file on an fsdax\n"
"                          mount or any file (mapped with libpmem2)\n"
"   - nvm_node=<n>|auto    N-zone from NUMA node n (auto: the CPU-less node)\n"
"   - nvm_size=<size>      N-zone capacity (512m, 64g); alone: anonymous\n"
"                          memory, for emulation\n"
"   - dram_node=<n>        bind the D-zone (-m) to NUMA node n\n"
"   - nvm_emulate=<r>:<w>  add r/w ns per 64-byte N-zone line read/written\n"
"                          (the paper's NVM: 224:924)\n"
"   - tier_policy=<p>      hmcached (default), uni, tlc, dram, nvm,\n"
"                          duallru\n"
"   - tier_placement=<p>   new keys: dram_first (default) or nvm\n"
"   - tier_promote=<m>     promotion N->D: async (default) or sync\n"
"   - tier_threshold=<n>   initial migration threshold (default: 4)\n"
"   - tier_adjust_period=<n> requests to a class between threshold\n"
"                          adjustments (default: 100000)\n"
"   - tier_decay_period=<n> requests between counter decay epochs\n"
"                          (default: 1000000)\n"
"   - tier_mq_queues=<q>   MQ queues per class in the D-zone (default: 8)\n"
"   - tier_reassign=<r>    DRAM page reassignment across slab classes: dp\n"
"                          (default), greedy, psa, none\n"
"   - tier_reassign_period=<n> requests between reassignments\n"
"                          (default: 1000000)\n"
"   - tier_reassign_rate=<n> page moves per period at most (0-256,\n"
"                          default: 4)\n"
"   - tier_inflight_limit=<size> N-zone values that one worker's replies\n"
"                          may hold while unwritten (default: 16m; 0: no\n"
"                          limit); past it N hits answer SERVER_ERROR\n"
"   - the rest of memcached 1.6.18's sub-options (lru_maintainer,\n"
"     hot_lru_pct, warm_lru_pct, hot_max_factor, warm_max_factor,\n"
"     temporary_ttl, tail_repair_time, slab_chunk_max, read_buf_mem_limit,\n"
"     watcher_logbuf_size, worker_logbuf_size, modern, no_modern,\n"
"     no_chunked_items, no_inline_ascii_resp, sock_cookie_id,\n"
"     drop_privileges, ext_*, ssl_*, proxy_*) are accepted and have no\n"
"     effect here: see doc/memcached.1\n");
}

static void usage_license(void)
{
    printf("tiercached: a memcached-compatible server with a tiered slab\n"
           "allocator.  BSD 3-clause license; see the project's LICENSE.\n"
           "Links against libevent (3-clause BSD license).\n");
}

/* "64", "64k", "2m", "1g" -> bytes; `unit` applies to plain numbers. */
static bool parse_size(const char *s, uint64_t unit, uint64_t *out)
{
    char buf[64];
    size_t len = strlen(s);
    if (len == 0 || len >= sizeof(buf)) {
        return false;
    }
    memcpy(buf, s, len + 1);
    uint64_t mult = unit;
    switch (tolower((unsigned char)buf[len - 1])) {
    case 'k': mult = 1024ULL; buf[len - 1] = '\0'; break;
    case 'm': mult = 1024ULL * 1024; buf[len - 1] = '\0'; break;
    case 'g': mult = 1024ULL * 1024 * 1024; buf[len - 1] = '\0'; break;
    default: break;
    }
    uint64_t v;
    if (!safe_strtoull(buf, &v) || (v != 0 && mult > UINT64_MAX / v)) {
        return false;
    }
    *out = v * mult;
    return true;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
                                                     noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(EX_USAGE);
}

static uint32_t subopt_u32(const char *name, const char *val)
{
    uint32_t v;
    if (val == NULL || !safe_strtoul(val, &v)) {
        die("Invalid value for %s: %s", name, val ? val : "(missing)");
    }
    return v;
}

static double subopt_double(const char *name, const char *val)
{
    double v;
    if (val == NULL || !safe_strtod(val, &v)) {
        die("Invalid value for %s: %s", name, val ? val : "(missing)");
    }
    return v;
}

/* memcached sub-options that only tune mechanisms tiercached does not have
 * (segmented LRU, extstore, TLS, proxy, logger buffers): accepted so that
 * existing command lines keep working. */
static bool is_noop_subopt(const char *name)
{
    static const char *const names[] = {
        "lru_maintainer", "no_lru_maintainer", "hot_lru_pct",
        "warm_lru_pct", "hot_max_factor", "warm_max_factor",
        "temporary_ttl", "tail_repair_time", "slab_chunk_max",
        "read_buf_mem_limit", "watcher_logbuf_size", "worker_logbuf_size",
        "modern", "no_modern", "no_chunked_items", "no_inline_ascii_resp",
        "sock_cookie_id", "drop_privileges", "no_drop_privileges",
        "slab_automove_freeratio", "lru_segmented", "no_lru_segmented",
        NULL
    };
    for (int i = 0; names[i] != NULL; i++) {
        if (strcmp(name, names[i]) == 0) {
            return true;
        }
    }
    return strncmp(name, "ext_", 4) == 0 || strncmp(name, "ssl_", 4) == 0 ||
           strncmp(name, "proxy_", 6) == 0;
}

static const char *const tier_policy_names[] = {
    [TIER_POLICY_HMCACHED] = "hmcached",
    [TIER_POLICY_UNI] = "uni",
    [TIER_POLICY_TLC] = "tlc",
    [TIER_POLICY_DRAM] = "dram",
    [TIER_POLICY_NVM] = "nvm",
    [TIER_POLICY_DUALLRU] = "duallru",
};

const char *tier_policy_name(enum tier_policy p)
{
    return tier_policy_names[p];
}

static enum tier_policy parse_tier_policy(const char *val)
{
    for (size_t i = 0; val != NULL && i < sizeof(tier_policy_names) /
                                          sizeof(tier_policy_names[0]); i++) {
        if (strcmp(val, tier_policy_names[i]) == 0) {
            return (enum tier_policy)i;
        }
    }
    die("tier_policy must be one of hmcached, uni, tlc, dram, nvm, duallru"
            " (got %s)",
        val ? val : "nothing");
}

static uint32_t tier_u32_at_least_1(const char *name, const char *val)
{
    uint32_t v = subopt_u32(name, val);
    if (v == 0) {
        die("%s must be at least 1", name);
    }
    return v;
}

/* The N-zone and policy sub-options (doc/tiering.md); false when `name`
 * is not one of them. */
static bool parse_tier_subopt(const char *name, const char *val)
{
    struct nvm_config *nc = &settings.nvm;
    if (strcmp(name, "nvm_path") == 0) {
        if (val == NULL || *val == '\0') {
            die("nvm_path needs a path");
        }
        nc->path = strdup(val);
    } else if (strcmp(name, "nvm_node") == 0) {
        if (val == NULL || !nvm_parse_node(val, &nc->node, &nc->node_auto)) {
            die("nvm_node must be a NUMA node number or auto (got %s)",
                val ? val : "nothing");
        }
        nc->have_node = true;
    } else if (strcmp(name, "nvm_size") == 0) {
        if (val == NULL || !nvm_parse_size(val, &nc->size)) {
            die("nvm_size must be a size such as 512m or 64g (got %s)",
                val ? val : "nothing");
        }
    } else if (strcmp(name, "dram_node") == 0) {
        int32_t node;
        if (val == NULL || !safe_strtol(val, &node) || node < 0) {
            die("dram_node must be a NUMA node number (got %s)",
                val ? val : "nothing");
        }
        nc->dram_node = node;
    } else if (strcmp(name, "nvm_emulate") == 0) {
        if (val == NULL || !nvm_parse_emulate(val, &nc->emulate_read_ns,
                                              &nc->emulate_write_ns)) {
            die("nvm_emulate must be READ_NS:WRITE_NS such as 224:924 "
                "(got %s)", val ? val : "nothing");
        }
    } else if (strcmp(name, "tier_policy") == 0) {
        settings.tier_policy = parse_tier_policy(val);
    } else if (strcmp(name, "tier_placement") == 0) {
        if (val != NULL && strcmp(val, "nvm") == 0) {
            settings.tier_placement = TIER_PLACE_NVM;
        } else if (val != NULL && strcmp(val, "dram_first") == 0) {
            settings.tier_placement = TIER_PLACE_DRAM_FIRST;
        } else {
            die("tier_placement must be nvm or dram_first");
        }
    } else if (strcmp(name, "tier_promote") == 0) {
        if (val == NULL || (strcmp(val, "sync") && strcmp(val, "async"))) {
            die("tier_promote must be sync or async");
        }
        settings.tier_promote_async = strcmp(val, "async") == 0;
    } else if (strcmp(name, "tier_threshold") == 0) {
        settings.tier_threshold_init = tier_u32_at_least_1(name, val);
    } else if (strcmp(name, "tier_adjust_period") == 0) {
        settings.tier_adjust_period = tier_u32_at_least_1(name, val);
    } else if (strcmp(name, "tier_decay_period") == 0) {
        settings.tier_decay_period = tier_u32_at_least_1(name, val);
    } else if (strcmp(name, "tier_mq_queues") == 0) {
        settings.tier_mq_queues = tier_u32_at_least_1(name, val);
        if (settings.tier_mq_queues > 16) {
            die("tier_mq_queues must be between 1 and 16");
        }
    } else if (strcmp(name, "tier_reassign") == 0) {
        if (!tier_reassign_parse(val, &settings.tier_reassign)) {
            die("tier_reassign must be one of dp, greedy, psa, none "
                "(got %s)", val ? val : "nothing");
        }
    } else if (strcmp(name, "tier_reassign_period") == 0) {
        settings.tier_reassign_period = tier_u32_at_least_1(name, val);
    } else if (strcmp(name, "tier_reassign_rate") == 0) {
        settings.tier_reassign_rate = subopt_u32(name, val);
        if (settings.tier_reassign_rate > 256) {
            die("tier_reassign_rate must be between 0 and 256");
        }
    } else if (strcmp(name, "tier_inflight_limit") == 0) {
        if (val == NULL
                || !nvm_parse_size(val, &settings.tier_inflight_limit)) {
            die("tier_inflight_limit must be a size such as 16m (got %s)",
                val ? val : "nothing");
        }
    } else {
        return false;
    }
    return true;
}

static void parse_subopt(char *name, char *val)
{
    if (strcmp(name, "maxconns_fast") == 0) {
        settings.maxconns_fast = true;
    } else if (strcmp(name, "no_maxconns_fast") == 0) {
        settings.maxconns_fast = false;
    } else if (strcmp(name, "hashpower") == 0) {
        uint32_t hp = subopt_u32(name, val);
        if (hp < 12) {
            die("Initial hashtable multiplier of %u is too low", hp);
        }
        if (hp > 32) {
            die("Initial hashtable multiplier of %u is too high\n"
                "Choose a value based on \"STAT hash_power_level\" from a "
                "running instance", hp);
        }
        settings.hashpower_init = (int)hp;
    } else if (strcmp(name, "no_hashexpand") == 0) {
        settings.hash_expand = false;
    } else if (strcmp(name, "hash_algorithm") == 0) {
        if (val == NULL || (strcmp(val, "jenkins") && strcmp(val, "murmur3") &&
                            strcmp(val, "xxh3"))) {
            die("Unknown hash_algorithm option (jenkins, murmur3, xxh3)");
        }
        settings.hash_algorithm = strdup(val);
    } else if (strcmp(name, "lru_crawler") == 0) {
        settings.lru_crawler = true;
    } else if (strcmp(name, "no_lru_crawler") == 0) {
        settings.lru_crawler = false;
    } else if (strcmp(name, "lru_crawler_sleep") == 0) {
        settings.lru_crawler_sleep = subopt_u32(name, val);
        if (settings.lru_crawler_sleep > 1000000) {
            die("LRU crawler sleep must be between 0 and 1 second");
        }
    } else if (strcmp(name, "lru_crawler_tocrawl") == 0) {
        settings.lru_crawler_tocrawl = subopt_u32(name, val);
    } else if (strcmp(name, "idle_timeout") == 0) {
        /* memcached takes any integer; 0 or less never times out */
        int32_t secs;
        if (val == NULL || !safe_strtol(val, &secs)) {
            die("Invalid value for %s: %s", name, val ? val : "(missing)");
        }
        settings.idle_timeout = secs;
    } else if (strcmp(name, "track_sizes") == 0) {
        settings.track_sizes = true;
    } else if (strcmp(name, "slab_reassign") == 0) {
        settings.slab_reassign = 1;
    } else if (strcmp(name, "no_slab_reassign") == 0) {
        settings.slab_reassign = 0;
    } else if (strcmp(name, "slab_automove") == 0) {
        settings.slab_automove = val == NULL ? 1 : (int)subopt_u32(name, val);
        if (settings.slab_automove > 2) {
            die("slab_automove must be between 0 and 2");
        }
    } else if (strcmp(name, "no_slab_automove") == 0) {
        settings.slab_automove = 0;
    } else if (strcmp(name, "slab_automove_ratio") == 0) {
        settings.slab_automove_ratio = subopt_double(name, val);
    } else if (strcmp(name, "slab_automove_window") == 0) {
        settings.slab_automove_window = subopt_u32(name, val);
    } else if (parse_tier_subopt(name, val)) {
        return;
    } else if (is_noop_subopt(name)) {
        if (strcmp(name, "ext_path") == 0) {
            fprintf(stderr, "ext_path: extstore is not part of tiercached; "
                    "the option is ignored (see nvm_path)\n");
        }
    } else {
        fprintf(stderr, "Illegal suboption \"%s\"\n", name);
        exit(EX_USAGE);
    }
}

static void parse_subopts(char *list)
{
    char *save = NULL;
    for (char *opt = strtok_r(list, ",", &save); opt != NULL;
         opt = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(opt, '=');
        char *val = NULL;
        if (eq != NULL) {
            *eq = '\0';
            val = eq + 1;
        }
        parse_subopt(opt, val);
    }
}

static void append_listen(const char *addr)
{
    if (settings.inter == NULL) {
        settings.inter = strdup(addr);
        return;
    }
    size_t len = strlen(settings.inter) + strlen(addr) + 2;
    char *joined = malloc(len);
    if (joined == NULL) {
        die("Failed to allocate memory for the listen list");
    }
    snprintf(joined, len, "%s,%s", settings.inter, addr);
    free(settings.inter);
    settings.inter = joined;
}

static void parse_item_size(const char *arg)
{
    uint64_t size;
    if (!parse_size(arg, 1, &size)) {
        die("Invalid -I argument: %s", arg);
    }
    if (size < 1024) {
        die("Item max size cannot be less than 1024 bytes.");
    }
    if (size > 1024ULL * 1024 * 1024) {
        die("Cannot set item size limit higher than 1024 mb.");
    }
    settings.item_size_max = (int)size;
}

static void parse_protocol(const char *arg)
{
    if (strcmp(arg, "auto") == 0) {
        settings.binding_protocol = negotiating_prot;
    } else if (strcmp(arg, "ascii") == 0) {
        settings.binding_protocol = ascii_prot;
    } else if (strcmp(arg, "binary") == 0) {
        die("The binary protocol is not built yet; use -B ascii or auto.");
    } else {
        die("Invalid value for binding protocol: %s\n"
            " -- should be one of auto, binary, or ascii", arg);
    }
}

static const struct option long_options[] = {
    { "unix-mask", required_argument, 0, 'a' },
    { "enable-shutdown", no_argument, 0, 'A' },
    { "port", required_argument, 0, 'p' },
    { "unix-socket", required_argument, 0, 's' },
    { "udp-port", required_argument, 0, 'U' },
    { "memory-limit", required_argument, 0, 'm' },
    { "disable-evictions", no_argument, 0, 'M' },
    { "conn-limit", required_argument, 0, 'c' },
    { "lock-memory", no_argument, 0, 'k' },
    { "help", no_argument, 0, 'h' },
    { "license", no_argument, 0, 'i' },
    { "version", no_argument, 0, 'V' },
    { "enable-coredumps", no_argument, 0, 'r' },
    { "verbose", optional_argument, 0, 'v' },
    { "daemon", no_argument, 0, 'd' },
    { "listen", required_argument, 0, 'l' },
    { "user", required_argument, 0, 'u' },
    { "pidfile", required_argument, 0, 'P' },
    { "slab-growth-factor", required_argument, 0, 'f' },
    { "slab-min-size", required_argument, 0, 'n' },
    { "threads", required_argument, 0, 't' },
    { "enable-largepages", no_argument, 0, 'L' },
    { "max-reqs-per-event", required_argument, 0, 'R' },
    { "disable-cas", no_argument, 0, 'C' },
    { "listen-backlog", required_argument, 0, 'b' },
    { "protocol", required_argument, 0, 'B' },
    { "max-item-size", required_argument, 0, 'I' },
    { "enable-sasl", no_argument, 0, 'S' },
    { "disable-flush-all", no_argument, 0, 'F' },
    { "disable-dumping", no_argument, 0, 'X' },
    { "disable-watch", no_argument, 0, 'W' },
    { "auth-file", required_argument, 0, 'Y' },
    { "memory-file", required_argument, 0, 'e' },
    { "enable-ssl", no_argument, 0, 'Z' },
    { "extended", required_argument, 0, 'o' },
    { "napi-ids", required_argument, 0, 'N' },
    { 0, 0, 0, 0 }
};

static int parse_int_arg(const char *arg, const char *what)
{
    int32_t v;
    if (!safe_strtol(arg, &v)) {
        die("Invalid value for %s: %s", what, arg);
    }
    return v;
}

static void parse_options(int argc, char **argv)
{
    const char *shortopts = "a:Ap:s:U:m:Mc:khiVrvdl:u:P:f:n:t:LD:R:Cb:B:"
                            "I:SFXWY:e:Zo:N:";
    int c;
    while ((c = getopt_long(argc, argv, shortopts, long_options, NULL))
           != -1) {
        switch (c) {
        case 'a': {
            char *end;
            long mask = strtol(optarg, &end, 8);
            if (*optarg == '\0' || *end != '\0' || mask < 0 || mask > 0777) {
                die("Invalid unix socket mask: %s", optarg);
            }
            settings.access = (int)mask;
            break;
        }
        case 'A': settings.shutdown_command = true; break;
        case 'p': settings.port = parse_int_arg(optarg, "-p"); break;
        case 's': settings.socketpath = optarg; break;
        case 'U': settings.udpport = parse_int_arg(optarg, "-U"); break;
        case 'm': {
            uint64_t bytes;
            if (!parse_size(optarg, 1024 * 1024, &bytes) || bytes == 0) {
                die("Invalid value for -m: %s", optarg);
            }
            settings.maxbytes = bytes;
            break;
        }
        case 'M': settings.evict_to_free = 0; break;
        case 'c':
            settings.maxconns = parse_int_arg(optarg, "-c");
            if (settings.maxconns <= 0) {
                die("Maximum connections must be greater than 0");
            }
            break;
        case 'k': settings.lock_memory = true; break;
        case 'h': usage(); exit(EXIT_SUCCESS);
        case 'i': usage_license(); exit(EXIT_SUCCESS);
        case 'V':
            printf("memcached " MEMCACHED_COMPAT_VERSION "\n");
            exit(EXIT_SUCCESS);
        case 'r': settings.enable_coredumps = true; break;
        case 'v':
            settings.verbose++;
            if (optarg != NULL) {
                for (const char *p = optarg; *p == 'v'; p++) {
                    settings.verbose++;
                }
            }
            break;
        case 'd': settings.daemonize = true; break;
        case 'l': append_listen(optarg); break;
        case 'u': settings.username = optarg; break;
        case 'P': settings.pid_file = optarg; break;
        case 'f':
            if (!safe_strtod(optarg, &settings.factor) ||
                settings.factor <= 1.0) {
                die("Factor must be greater than 1");
            }
            break;
        case 'n':
            settings.chunk_size = parse_int_arg(optarg, "-n");
            if (settings.chunk_size <= 0) {
                die("Chunk size must be greater than 0");
            }
            break;
        case 't':
            settings.num_threads = parse_int_arg(optarg, "-t");
            if (settings.num_threads <= 0) {
                die("Number of threads must be greater than 0");
            }
            if (settings.num_threads > 64) {
                fprintf(stderr, "WARNING: Setting a high number of worker "
                        "threads is not recommended.\n"
                        " Set this value to the number of cores in your "
                        "machine or less.\n");
            }
            break;
        case 'L': settings.large_pages = true; break;
        case 'D':
            if (optarg[0] == '\0' || optarg[1] != '\0') {
                die("No delimiter specified");
            }
            settings.prefix_delimiter = optarg[0];
            settings.detail_enabled = 1;
            break;
        case 'R':
            settings.reqs_per_event = parse_int_arg(optarg, "-R");
            if (settings.reqs_per_event <= 0) {
                die("Number of requests per event must be greater than 0");
            }
            break;
        case 'C': settings.use_cas = false; break;
        case 'b':
            settings.backlog = parse_int_arg(optarg, "-b");
            if (settings.backlog <= 0) {
                die("Listen backlog must be greater than 0");
            }
            break;
        case 'B': parse_protocol(optarg); break;
        case 'I': parse_item_size(optarg); break;
        case 'S':
            die("SASL (-S) is not supported yet by tiercached.");
        case 'Z':
            die("TLS (-Z) is not supported yet by tiercached.");
        case 'e':
            die("Memory file (-e) is not supported yet by tiercached; "
                "see -o nvm_path for the slow tier.");
        case 'Y':
            die("ASCII authentication (-Y) is not supported yet by "
                "tiercached.");
        case 'F': settings.flush_enabled = false; break;
        case 'X': settings.dump_enabled = false; break;
        case 'W': settings.watch_enabled = false; break;
        case 'N': break;
        case 'o': {
            char *copy = strdup(optarg);
            if (copy == NULL) {
                die("Failed to allocate memory for -o");
            }
            parse_subopts(copy);
            break;
        }
        default:
            fprintf(stderr, "Illegal argument \"%c\"\n", optopt ? optopt : c);
            exit(EX_USAGE);
        }
    }
    if (optind < argc) {
        die("Unexpected argument: %s", argv[optind]);
    }
}

static void check_tier_settings(void)
{
    const struct nvm_config *nc = &settings.nvm;
    if (nc->path != NULL && nc->have_node) {
        die("nvm_path and nvm_node both name the N-zone: give one of them");
    }
    if ((nc->path != NULL || nc->have_node) && nc->size == 0) {
        die("nvm_path/nvm_node need nvm_size= (how much of it to use)");
    }
    if (nc->size == 0 && settings.tier_policy != TIER_POLICY_HMCACHED &&
        settings.tier_policy != TIER_POLICY_DRAM) {
        die("tier_policy=%s needs an N-zone: give nvm_size=",
            tier_policy_name(settings.tier_policy));
    }
    if (settings.tier_threshold_init > (1u << settings.tier_mq_queues)) {
        die("tier_threshold must be at most 2^tier_mq_queues (%u)",
            1u << settings.tier_mq_queues);
    }
}

/* Start-up: map the N-zone (or check dram_node) before storage exists;
 * failures print why and stop with nothing left behind. */
static void open_nvm_zone(void)
{
    char err[512];
    if (settings.nvm.size == 0) {
        if (settings.nvm.dram_node >= 0 &&
            nvm_check_node("dram_node", settings.nvm.dram_node, err,
                           sizeof(err)) != 0) {
            die("%s", err);
        }
        return;
    }
    if (nvm_zone_open(&settings.nvm, &nvm_zone, err, sizeof(err)) != 0) {
        die("%s", err);
    }
}

/* Checks that need every option to be known. */
static void check_settings(void)
{
    if (settings.item_size_max > 1024 * 1024) {
        settings.slab_page_size = settings.item_size_max;
    }
    settings.slab_chunk_size_max = settings.slab_page_size / 2;
    if ((uint64_t)settings.item_size_max > settings.maxbytes / 2) {
        die("Cannot set item size limit higher than 1/2 of memory max.");
    }
    if (settings.socketpath != NULL && settings.inter != NULL) {
        fprintf(stderr, "WARNING: -l is ignored with -s\n");
    }
    settings.num_threads_per_udp = settings.num_threads;
    check_tier_settings();
}

/* ------------------------------------------------------------------ */
/* process setup                                                       */

static void raise_limits(void)
{
    struct rlimit rlim;
    if (settings.enable_coredumps) {
        if (getrlimit(RLIMIT_CORE, &rlim) == 0) {
            struct rlimit want = { rlim.rlim_max, rlim.rlim_max };
            if (setrlimit(RLIMIT_CORE, &want) != 0) {
                fprintf(stderr, "failed to ensure corefile creation\n");
                exit(EX_OSERR);
            }
        }
    }
    if (getrlimit(RLIMIT_NOFILE, &rlim) != 0) {
        fprintf(stderr, "failed to getrlimit number of files\n");
        exit(EX_OSERR);
    }
    rlim_t want = (rlim_t)settings.maxconns;
    if (rlim.rlim_cur < want) {
        rlim.rlim_cur = want;
        if (rlim.rlim_max < want) {
            rlim.rlim_max = want;
        }
        if (setrlimit(RLIMIT_NOFILE, &rlim) != 0) {
            fprintf(stderr, "failed to set rlimit for open files. Try "
                    "starting as root or requesting smaller maxconns "
                    "value.\n");
            exit(EX_OSERR);
        }
    }
    max_fds = (int)(rlim.rlim_cur > INT_MAX / 2 ? INT_MAX / 2
                                                : rlim.rlim_cur);
    if ((size_t)max_fds > (size_t)settings.maxconns * 2 + 1024) {
        max_fds = settings.maxconns * 2 + 1024;
    }
    conns = calloc(max_fds, sizeof(*conns));
    if (conns == NULL) {
        fprintf(stderr, "Failed to allocate connection structures\n");
        exit(EX_OSERR);
    }
}

static void drop_privileges(void)
{
    if (getuid() != 0 && geteuid() != 0) {
        return;
    }
    if (settings.username == NULL || *settings.username == '\0') {
        fprintf(stderr, "can't run as root without the -u switch\n");
        exit(EX_USAGE);
    }
    struct passwd *pw = getpwnam(settings.username);
    if (pw == NULL) {
        fprintf(stderr, "can't find the user %s to switch to\n",
                settings.username);
        exit(EX_NOUSER);
    }
    if (setgroups(0, NULL) != 0 || setgid(pw->pw_gid) < 0 ||
        setuid(pw->pw_uid) < 0) {
        fprintf(stderr, "failed to assume identity of user %s\n",
                settings.username);
        exit(EX_OSERR);
    }
}

static void daemonize(void)
{
    switch (fork()) {
    case -1:
        perror("fork");
        exit(EXIT_FAILURE);
    case 0:
        break;
    default:
        _exit(EXIT_SUCCESS);
    }
    if (setsid() == -1) {
        perror("setsid");
        exit(EXIT_FAILURE);
    }
    if (chdir("/") != 0) {
        perror("chdir");
        exit(EXIT_FAILURE);
    }
    int fd = open("/dev/null", O_RDWR);
    if (fd != -1) {
        dup2(fd, STDIN_FILENO);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        if (fd > STDERR_FILENO) {
            close(fd);
        }
    }
}

static void save_pid(const char *path)
{
    FILE *fp = fopen(path, "w");
    if (fp == NULL) {
        fprintf(stderr, "Could not open the pid file %s for writing: %s\n",
                path, strerror(errno));
        return;
    }
    fprintf(fp, "%ld\n", (long)getpid());
    fclose(fp);
}

static void open_listeners(void)
{
    if (settings.socketpath != NULL) {
        if (server_socket_unix(settings.socketpath, settings.access) != 0) {
            fprintf(stderr, "failed to listen on UNIX socket: %s\n",
                    settings.socketpath);
            exit(EX_OSERR);
        }
        return;
    }
    const char *portfile_name = getenv("MEMCACHED_PORT_FILENAME");
    FILE *portfile = NULL;
    char temp_portfile[PATH_MAX];
    if (portfile_name != NULL) {
        snprintf(temp_portfile, sizeof(temp_portfile), "%s.lck",
                 portfile_name);
        portfile = fopen(temp_portfile, "a");
        if (portfile == NULL) {
            fprintf(stderr, "Failed to open \"%s\": %s\n", temp_portfile,
                    strerror(errno));
            exit(EX_OSERR);
        }
    }
    errno = 0;
    if (server_sockets(settings.port, false, portfile) != 0) {
        fprintf(stderr, "failed to listen on TCP port %d: %s\n",
                settings.port, strerror(errno ? errno : EADDRINUSE));
        exit(EX_OSERR);
    }
    if (settings.udpport != 0) {
        errno = 0;
        if (server_sockets(settings.udpport, true, portfile) != 0) {
            fprintf(stderr, "failed to listen on UDP port %d: %s\n",
                    settings.udpport, strerror(errno ? errno : EADDRINUSE));
            exit(EX_OSERR);
        }
    }
    if (portfile != NULL) {
        fclose(portfile);
        rename(temp_portfile, portfile_name);
    }
}

int main(int argc, char **argv)
{
    settings_init();
    parse_options(argc, argv);
    check_settings();
    raise_limits();
    drop_privileges();
    /* as the -u user, the way memcached opens its -e memory file: the
     * device or file must be that user's (doc/nvm.md) */
    open_nvm_zone();
    if (settings.daemonize) {
        daemonize();
    }

    main_base = event_base_new();
    if (main_base == NULL) {
        fprintf(stderr, "Failed to create the event base\n");
        exit(EXIT_FAILURE);
    }
    accept_pause_init(main_base);
    clock_init();
    stats.started = current_time;
    stats.accepting_conns = true;
    stats.reserved_fds = 5 * (uint64_t)settings.num_threads;

    storage_init();
    memcached_thread_init(settings.num_threads, NULL);
    if (storage_start_threads() != 0) {
        fprintf(stderr, "Failed to start the storage threads\n");
        exit(EXIT_FAILURE);
    }
    /* after the threads exist: MCL_FUTURE under a small RLIMIT_MEMLOCK
     * would otherwise keep their stacks from being mapped */
    if (settings.lock_memory && mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
        fprintf(stderr, "warning: -k invalid, mlockall() failed: %s\n",
                strerror(errno));
    }
    clock_handler(0, 0, NULL);
    install_signal_events();
    open_listeners();
    if (settings.daemonize && settings.pid_file != NULL) {
        save_pid(settings.pid_file);
    }

    event_base_loop(main_base, 0);

    storage_stop_threads();
    if (settings.nvm.size > 0) {
        nvm_zone_close(&nvm_zone);
    }
    if (settings.daemonize && settings.pid_file != NULL) {
        unlink(settings.pid_file);
    }
    return EXIT_SUCCESS;
}
