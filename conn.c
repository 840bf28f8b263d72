/*
 * conn.c: client connections and the state machine that serves them.
 *
 * Owns the per-fd table of connection structs (reused with the fd, as
 * memcached does), a connection's life (new, close, idle_timeout, a
 * worker closing all of its own at shutdown), its reply lines
 * (out_string; the queue and the buffers are conn_buf.c's, which this
 * file brackets each command for; a reply made in batches asks its
 * producer for the next one once the queue is written, and a log
 * watcher's, which has none yet, waits in conn_watch until
 * logger_watch.c resumes it), the close reason of its conn_close line
 * (logger.h), reading requests and values, swallowing rejected ones,
 * flushing replies with sendmsg (TCP) or datagrams (UDP), and `stats
 * conns`.
 *
 * It knows no protocol, worker, TLS or listener by name: a connection
 * frames and serves its requests through its struct conn_proto (the
 * first one is handed in at start-up by proto_select.c, which also makes
 * -B auto's choice), reads and sends through its own io_read/io_sendmsg
 * and io_layer (the socket's, or those tls.c installs for a TLS client),
 * counts in the counters and buffer account its worker lends it
 * (conn_adopt, thread.c), and a listener's connection accepts through
 * what listen.c hands in (conn_set_listener_accept).
 *
 * Locks: stats_lock guards the connection counters in `stats`.  A
 * connection is touched only by the worker that owns it (a listener by
 * the main thread); the table `conns` is read by `stats conns` through
 * the published fields (pub_*), which are atomics, and walked by every
 * worker for idle_timeout and at shutdown, finding its own connections
 * by pub_owner.
 */
#include "config.h"
#include "conn.h"
#include "accept_pause.h"
#include "clock.h"
#include "conn_buf.h"
#include "daemon_stats.h"
#include "logger.h"
#include "settings.h"
#include "stat_counter.h"
#include "storage/storage.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sysexits.h>
#include <unistd.h>

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif
#define IOV_BATCH 64

static int max_fds;
static _Atomic(conn *) *conns;
static void (*listener_accept)(conn *listener);
static const struct conn_proto *first_proto;

static void drive_machine(conn *c);
static void conn_close(conn *c);

void conn_set_first_protocol(const struct conn_proto *proto)
{
    first_proto = proto;
}

void conn_set_listener_accept(void (*accept)(conn *listener))
{
    listener_accept = accept;
}

/* Start-up, before any connection: one slot per possible fd. */
void conn_table_init(int nfds)
{
    max_fds = nfds;
    conns = calloc(max_fds, sizeof(*conns));
    if (conns == NULL) {
        fprintf(stderr, "Failed to allocate connection structures\n");
        exit(EX_OSERR);
    }
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

static ssize_t socket_read(conn *c, void *buf, size_t len)
{
    return read(c->sfd, buf, len);
}

static ssize_t socket_sendmsg(conn *c, struct msghdr *msg, int flags)
{
    return sendmsg(c->sfd, msg, flags);
}

static bool layer_wants_write(const conn *c)
{
    return c->io_layer != NULL && c->io_layer->wants_write(c);
}

static conn *conn_alloc(int read_buffer_size)
{
    conn *c = calloc(1, sizeof(conn));
    if (c == NULL) {
        return NULL;
    }
    if (!conn_buf_alloc(c, read_buffer_size)) {
        conn_buf_free(c);
        free(c);
        return NULL;
    }
    pthread_mutex_lock(&stats_lock);
    stats.conn_structs++;
    pthread_mutex_unlock(&stats_lock);
    return c;
}

/* Connection structs are kept per fd and reused, as memcached does (a
 * worker's UDP connection has a descriptor of its own, listen.c's dup). */
static conn *conn_struct_for(int sfd, int read_buffer_size)
{
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
    conn *c = conn_struct_for(sfd, read_buffer_size);
    if (c == NULL) {
        pthread_mutex_lock(&stats_lock);
        stats.malloc_fails++;
        pthread_mutex_unlock(&stats_lock);
        return NULL;
    }
    c->sfd = sfd;
    c->io_read = socket_read;
    c->io_sendmsg = socket_sendmsg;
    c->io_layer = NULL;
    c->tls = NULL;
    c->accepts_tls = false;
    c->transport = transport;
    c->proto = first_proto;
    c->authenticated = false;
    c->sasl_started = false;
    c->sasl_conn = NULL;
    c->auth_value_len = 0;
    c->rcurr = c->rbuf;
    c->rbytes = 0;
    c->item = NULL;
    c->sbytes = 0;
    c->noreply = false;
    c->command_done = false;
    c->npieces = 0;
    c->wbuf_used = 0;
    c->write_started = 0;
    c->write_offset = 0;
    c->close_after_write = false;
    c->close_reason = init_state == conn_listening ? -1 : LOGGER_CLOSE_ERROR;
    c->request_addr_size = 0;
    c->thread = NULL;
    c->thread_stats = NULL;
    c->buf_usage = NULL;
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
                IS_UDP(transport) ? "udp" : c->proto->name);
    }
    pthread_mutex_lock(&stats_lock);
    stats.curr_conns++;
    stats.total_conns++;
    pthread_mutex_unlock(&stats_lock);
    if (c->close_reason >= 0 && !IS_UDP(transport)) {
        LOGGER_CONN(true, sfd, transport == local_transport, 0);
    }
    return c;
}

void conn_adopt(conn *c, LIBEVENT_THREAD *owner, struct thread_stats *counters,
                struct conn_buf_usage *usage)
{
    c->thread = owner;
    c->thread_stats = counters;
    c->buf_usage = usage;
    conn_buf_adopt(c);
    atomic_store_explicit(&c->pub_owner, owner, memory_order_relaxed);
}

static void conn_cleanup(conn *c)
{
    if (c->item != NULL) {
        item_remove(c->item);
        c->item = NULL;
    }
    if (c->producer != NULL) {
        c->producer(c, true);
    }
    resp_release(c);
    resp_written(c);
}

/* The struct is handed over with the fd: whichever worker gets this fd
 * number next reuses it.  The release store (matched by the acquire in
 * conn_struct_for) orders everything this worker did with the struct
 * before that reuse; after it the struct is not ours. */
static void conn_release_struct(conn *c)
{
    conn_buf_release(c);
    c->state = conn_closed;
    atomic_store_explicit(&c->pub_owner, NULL, memory_order_relaxed);
    atomic_store_explicit(&c->pub_state, conn_closed, memory_order_release);
    pthread_mutex_lock(&stats_lock);
    stats.curr_conns--;
    pthread_mutex_unlock(&stats_lock);
}

static void conn_close(conn *c)
{
    event_del(&c->event);
    if (settings.verbose > 1) {
        fprintf(stderr, "<%d connection closed.\n", c->sfd);
    }
    conn_cleanup(c);
    if (c->proto->release != NULL) {
        c->proto->release(c);
    }
    if (c->io_layer != NULL) {
        c->io_layer->end(c);
        c->io_layer = NULL;
    }
    int fd = c->sfd;
    if (c->close_reason >= 0) {
        LOGGER_CONN(false, fd, c->transport == local_transport,
                    c->close_reason);
    }
    conn_release_struct(c);
    close(fd);
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

void conn_drop(conn *c)
{
    if (IS_UDP(c->transport)) {
        /* its descriptor is listen.c's to close, after the workers stop */
        event_del(&c->event);
        conn_cleanup(c);
        conn_release_struct(c);
        return;
    }
    conn_set_state(c, conn_closing);
    drive_machine(c);
}

/* The TCP or unix connection in slot fd if worker me owns it (its UDP
 * ones are thread.c's to drop).  Other workers' slots are read but never
 * touched: only a worker stores itself in pub_owner, and it clears it
 * when it closes the connection, so reading back `me` means the
 * connection is ours. */
static conn *conn_owned_by(LIBEVENT_THREAD *me, int fd)
{
    conn *c = atomic_load(&conns[fd]);
    if (c == NULL ||
        atomic_load_explicit(&c->pub_owner, memory_order_relaxed) != me ||
        IS_UDP(c->transport)) {
        return NULL;
    }
    return c;
}

/* idle_timeout: run once a second by each worker (thread.c). */
void conns_close_idle(LIBEVENT_THREAD *me)
{
    rel_time_t now = current_time;
    for (int fd = 0; fd < max_fds; fd++) {
        conn *c = conn_owned_by(me, fd);
        if (c == NULL || !conn_is_idle(c, now)) {
            continue;
        }
        if (settings.verbose > 1) {
            fprintf(stderr, "Closing idle fd %d\n", c->sfd);
        }
        pthread_mutex_lock(&stats_lock);
        stats.idle_kicks++;
        pthread_mutex_unlock(&stats_lock);
        c->close_reason = LOGGER_CLOSE_IDLE_TIMEOUT;
        conn_drop(c);
    }
}

void conns_close_owned(LIBEVENT_THREAD *me)
{
    for (int fd = 0; fd < max_fds; fd++) {
        conn *c = conn_owned_by(me, fd);
        if (c != NULL) {
            c->close_reason = LOGGER_CLOSE_SHUTDOWN;
            conn_drop(c);
        }
    }
}

/* ------------------------------------------------------------------ */
/* replies (the queue itself is conn_buf.c's)                          */

void out_string(conn *c, const char *str)
{
    if (c->noreply) {
        c->noreply = false;
        return;
    }
    if (settings.verbose > 1) {
        fprintf(stderr, ">%d %s\n", c->sfd, str);
    }
    if (!resp_add_line(c, str, strlen(str))) {
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

/* quit, and the binary protocol's errors: a close memcached logs as
 * normal */
void conn_close_after_write(conn *c)
{
    c->close_after_write = true;
    c->close_reason = LOGGER_CLOSE_NORMAL;
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

static void count_bytes_read(conn *c, ssize_t n)
{
    if (c->thread_stats != NULL) {
        STAT_ADD(c->thread_stats->bytes_read, n);
    }
}

/* Is the buffered input the start of a line longer than the buffer?
 * (Binary requests fit the first size.) */
static bool line_outgrows_buffer(const conn *c)
{
    return c->proto->lines
        && memchr(c->rcurr, '\n', c->rbytes) == NULL;
}

static enum read_result try_read_tcp(conn *c)
{
    enum read_result result = READ_NO_DATA_RECEIVED;
    if (!resp_read_buf_available(c)) {
        return READ_ERROR;
    }
    rbuf_compact(c);
    for (int rounds = 0; rounds < 4; rounds++) {
        if (c->rbytes >= c->rsize) {
            /* under read_buf_mem_limit memcached fills its 16 KB buffer
             * once per event, and takes a larger one only for a multiget
             * line that does not fit it */
            if (rounds > 0 && resp_obj_budget != 0
                    && !line_outgrows_buffer(c)) {
                break;
            }
            if (!conn_buf_grow_read(c)) {
                return READ_MEMORY_ERROR;
            }
        }
        int avail = c->rsize - c->rbytes;
        ssize_t n = c->io_read(c, c->rbuf + c->rbytes, avail);
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
            c->close_reason = LOGGER_CLOSE_NORMAL;
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
    /* -B auto: each datagram says which protocol it speaks */
    c->proto = first_proto;
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

/* A piece is passed once n reaches past its end; the queue holds no
 * empty piece (conn_buf.c), which this would never pass. */
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
        ssize_t res = c->io_sendmsg(c, &msg, MSG_NOSIGNAL);
        if (res > 0) {
            if (c->thread_stats != NULL) {
                STAT_ADD(c->thread_stats->bytes_written, res);
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
        if (res > 0 && c->thread_stats != NULL) {
            STAT_ADD(c->thread_stats->bytes_written, res);
        }
    }
    return WRITE_COMPLETE;
}

/* ------------------------------------------------------------------ */
/* the state machine                                                   */

static void note_command_time(conn *c)
{
    c->last_cmd_time = current_time;
    atomic_store_explicit(&c->pub_last_cmd, c->last_cmd_time,
                          memory_order_relaxed);
}

/* memcached has no response object for a command (conn_buf.h): it closes
 * the connection without sending what it had not sent yet. */
static void out_of_response_objects(conn *c)
{
    resp_drop_unsent(c);
    conn_set_state(c, conn_closing);
}

bool conn_command_begin(conn *c)
{
    note_command_time(c);
    if (!resp_command_begin(c)) {
        out_of_response_objects(c);
        return false;
    }
    conn_set_state(c, conn_parse_cmd);
    return true;
}

void conn_login_begin(conn *c)
{
    note_command_time(c);
    conn_set_state(c, conn_parse_cmd);
}

/* Returns true when a command was processed, false when more input is
 * needed (state set accordingly). */
static bool try_read_command(conn *c)
{
    if (c->rbytes == 0) {
        return false;
    }
    bool done = c->proto->try_read_command(c);
    if (c->command_done) {
        c->command_done = false;
        if (c->state == conn_parse_cmd) {
            conn_set_state(c, conn_new_cmd);
        }
    }
    return done;
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
 * writability too while some of them are still unsent (or TLS must send
 * before it can read). */
static bool wait_for_more_input(conn *c)
{
    if (c->npieces > 0 && transmit_tcp(c) == WRITE_COMPLETE) {
        resp_release(c);
    }
    conn_buf_shrink_empty_read(c);
    int flags = EV_READ | EV_PERSIST;
    if (c->npieces > 0 || layer_wants_write(c)) {
        flags |= EV_WRITE;
    }
    return update_event(c, flags);
}

/* Feed value bytes into c->item; true when complete. */
static bool nread_step(conn *c, bool *stop)
{
    if (c->rlbytes == 0) {
        c->proto->complete_nread(c);
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
    ssize_t res = c->io_read(c, c->ritem, c->rlbytes);
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
    ssize_t res = c->io_read(c, scratch, want);
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
        resp_release(c);
        resp_written(c);
        if (c->producer != NULL && !c->close_after_write
                && c->producer(c, false)) {
            break;              /* the reply's next batch, still conn_write */
        }
        conn_buf_shrink(c);
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

/* Nothing to write and no complete command buffered: wait for input.
 * memcached writes its (skipped) responses here, and gives back a read
 * buffer that holds nothing. */
static void wait_for_command(conn *c)
{
    resp_written(c);
    if (resp_obj_budget != 0) {
        conn_buf_shrink_empty_read(c);
    }
    conn_set_state(c, conn_waiting);
}

/* Between commands: parse the next one if its line is buffered, otherwise
 * flush replies and wait for input. */
static void new_cmd_step(conn *c, bool *stop)
{
    reset_cmd(c);
    if (++c->reqs_this_event >= settings.reqs_per_event && c->rbytes > 0) {
        /* be fair to the other connections of this worker: flush, then
         * come back through the event loop */
        if (c->thread_stats != NULL) {
            STAT_INCR(c->thread_stats->conn_yields);
        }
        c->reqs_this_event = 0;
        if (c->npieces > 0) {
            conn_set_state(c, conn_write);
            return;
        }
        resp_written(c);
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
        resp_written(c);
        c->rbytes = 0;
        conn_set_state(c, conn_read);
        return;
    }
    wait_for_command(c);
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
        c->close_reason = LOGGER_CLOSE_ERROR;
        conn_set_state(c, conn_write);
        break;
    }
}

/* A log watcher (logger.c) between batches of lines: what its client
 * sends is read and dropped, as memcached ignores it, and its end closes
 * the connection; the logger wakes the producer for the next lines. */
static void watch_step(conn *c, bool *stop)
{
    char scratch[4096];
    c->rbytes = 0;
    ssize_t n = c->io_read(c, scratch, sizeof(scratch));
    if (n > 0 || (n < 0 && errno == EINTR)) {
        return;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        c->close_reason = n == 0 ? LOGGER_CLOSE_NORMAL : LOGGER_CLOSE_ERROR;
        conn_set_state(c, conn_closing);
        return;
    }
    if (!update_event(c, EV_READ | EV_PERSIST)) {
        conn_set_state(c, conn_closing);
        return;
    }
    *stop = true;
}

void conn_resume_producer(conn *c)
{
    if (c->state == conn_watch) {
        conn_set_state(c, conn_write);
        drive_machine(c);
    }
}

/* The per-connection loop: runs until it must wait for the socket. */
static void drive_machine(conn *c)
{
    bool stop = false;
    c->reqs_this_event = 0;
    logger_cfd = c->sfd;
    resp_conn_runs(c);
    while (!stop) {
        switch (c->state) {
        case conn_listening:
            listener_accept(c);
            stop = true;
            break;
        case conn_waiting:
            rbuf_compact(c);
            if (c->io_layer != NULL && c->io_layer->has_input(c)) {
                /* bytes TLS already decrypted raise no socket event */
                conn_set_state(c, conn_read);
                break;
            }
            if (!update_event(c, EV_READ | EV_PERSIST |
                                 (layer_wants_write(c) ? EV_WRITE : 0))) {
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
                if (c->npieces > 0) {
                    conn_set_state(c, conn_write);
                } else {
                    wait_for_command(c);
                }
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
                c->close_after_write = false;
                c->rbytes = 0;
                conn_set_state(c, conn_read);
                stop = true;
            } else {
                if (c->npieces > 0 && !c->close_after_write) {
                    /* send what was answered before closing */
                    c->close_after_write = true;
                    transmit_tcp(c);
                }
                /* c's descriptor is closed: a new connection may have
                 * its struct on another worker already */
                conn_close(c);
                return;
            }
            break;
        case conn_watch:
            watch_step(c, &stop);
            break;
        case conn_closed:
        case conn_max_state:
            stop = true;
            break;
        }
    }
    resp_conn_stops(c);
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

/* A datagram socket: a worker's UDP descriptor (its struct's transport
 * is not ours to read from this thread). */
static bool is_datagram_socket(int sfd)
{
    int type = 0;
    socklen_t len = sizeof(type);
    return getsockopt(sfd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
           type == SOCK_DGRAM;
}

static void describe_addr(int sfd, bool peer, bool udp, char *out,
                          size_t outlen)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof(sa);
    int rc = peer ? getpeername(sfd, (struct sockaddr *)&sa, &len)
                  : getsockname(sfd, (struct sockaddr *)&sa, &len);
    char host[INET6_ADDRSTRLEN] = "";
    const char *proto = udp ? "udp" : "tcp";
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
        snprintf(out, outlen, "%s:%s:%u", proto, host, ntohs(in->sin_port));
    } else if (sa.ss_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        snprintf(out, outlen, "%s6:[%s]:%u", proto, host,
                 ntohs(in6->sin6_port));
    } else {
        snprintf(out, outlen, "unknown");
    }
}

/* As memcached lists them: a client's address and the listener's it came
 * to; a TCP listener's or a worker's UDP socket's own address. */
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
        bool udp = is_datagram_socket(fd);
        bool client = state != conn_listening && !udp;
        describe_addr(fd, client, udp, addr, sizeof(addr));
        snprintf(key, sizeof(key), "%d:addr", fd);
        add_stats(key, strlen(key), addr, strlen(addr), c);
        if (client) {
            describe_addr(fd, false, false, addr, sizeof(addr));
            snprintf(key, sizeof(key), "%d:listen_addr", fd);
            add_stats(key, strlen(key), addr, strlen(addr), c);
        }
        const char *sn = state_name(state);
        snprintf(key, sizeof(key), "%d:state", fd);
        add_stats(key, strlen(key), sn, strlen(sn), c);
        rel_time_t last = atomic_load_explicit(&x->pub_last_cmd,
                                               memory_order_relaxed);
        snprintf(key, sizeof(key), "%d:secs_since_last_cmd", fd);
        append_stat(key, add_stats, c, "%u", current_time - last);
    }
}
