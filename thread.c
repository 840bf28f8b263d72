/*
 * thread.c: worker threads and connection hand-off.
 *
 * Each worker runs its own libevent base.  The listener (main thread) hands
 * an accepted socket to a worker through the worker's queue and a byte on
 * its notify pipe; from then on only that worker touches the connection
 * (and starts its TLS session, tls.c, when it came to a TLS listener),
 * which it lends its counters and its buffer account (conn_adopt).
 * With idle_timeout each worker also runs a one-second timer that closes
 * its own idle connections (conns_close_idle in conn.c).  Each worker's
 * struct storage_worker joins storage's registry (storage_worker.c)
 * before any worker starts: the index it gets is its histogram slot.
 *
 * Stopping (memcached_thread_stop, doc/design.md "Stopping"): a stop byte
 * on the same pipe, behind every hand-off sent before it, makes the
 * worker close all its connections between two callbacks, so that no
 * request is cut in the middle, and leave its loop; the main thread joins
 * it and frees what it ran on.  The descriptors and their stats stay, for
 * the storage threads that read them until storage_shutdown.
 *
 * Locks:
 *   - the striped item locks are item_locks.c's; workers start after them.
 *   - conn_queue.lock: guards one worker's queue of new connections.
 *   - per-thread stats need no lock: see STAT_INCR in stat_counter.h.
 */
#include "config.h"
#include "thread.h"
#include "conn.h"
#include "daemon_stats.h"
#include "item_lock.h"
#include "settings.h"
#include "stat_counter.h"
#include "storage/storage.h"
#include "tls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct conn_queue_item {
    int sfd;
    enum conn_states init_state;
    int event_flags;
    int read_buffer_size;
    enum network_transport transport;
    bool tls;                     /* accepted on a TLS listener */
    struct conn_queue_item *next;
} conn_queue_item;

struct conn_queue {
    conn_queue_item *head;
    conn_queue_item *tail;
    pthread_mutex_t lock;
};

/* the bytes on a worker's notify pipe */
#define NOTIFY_CONN 'c'     /* a connection waits in its queue */
#define NOTIFY_STOP 's'     /* shutdown: close everything and return */

LIBEVENT_THREAD *threads;
static int nthreads_running;
static int last_thread = -1;

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t init_cond = PTHREAD_COND_INITIALIZER;
static int init_count;

static void cq_push(struct conn_queue *cq, conn_queue_item *qi)
{
    qi->next = NULL;
    pthread_mutex_lock(&cq->lock);
    if (cq->tail == NULL) {
        cq->head = qi;
    } else {
        cq->tail->next = qi;
    }
    cq->tail = qi;
    pthread_mutex_unlock(&cq->lock);
}

static conn_queue_item *cq_pop(struct conn_queue *cq)
{
    pthread_mutex_lock(&cq->lock);
    conn_queue_item *qi = cq->head;
    if (qi != NULL) {
        cq->head = qi->next;
        if (cq->head == NULL) {
            cq->tail = NULL;
        }
    }
    pthread_mutex_unlock(&cq->lock);
    return qi;
}

/* Client connections handed to a worker that has not counted them in
 * curr_conns yet: -c must see them, or a burst of connects accepted
 * before the workers catch up goes past it. */
static _Atomic uint64_t queued_conns;

uint64_t threads_queued_conns(void)
{
    return atomic_load_explicit(&queued_conns, memory_order_relaxed);
}

static void adopt_queued_conn(LIBEVENT_THREAD *me)
{
    conn_queue_item *qi = cq_pop(me->new_conn_queue);
    if (qi == NULL) {
        return;
    }
    conn *c = conn_new(qi->sfd, qi->init_state, qi->event_flags,
                       qi->read_buffer_size, qi->transport, me->base);
    if (!IS_UDP(qi->transport)) {
        atomic_fetch_sub_explicit(&queued_conns, 1, memory_order_relaxed);
    }
    if (c == NULL) {
        if (!IS_UDP(qi->transport)) {
            fprintf(stderr, "Can't listen for events on fd %d\n",
                    qi->sfd);
            close(qi->sfd);
        }
    } else if (qi->tls && !tls_conn_start(c)) {
        conn_drop(c);
    } else {
        conn_adopt(c, me, &me->stats, &me->buf_usage);
        if (IS_UDP(qi->transport)) {
            /* conn.c's shutdown walk leaves UDP to us: dropped at stop */
            c->next = me->udp_conns;
            me->udp_conns = c;
        }
    }
    free(qi);
}

/* The stop byte.  This runs between callbacks, so no request of this
 * worker is half processed: a connection is between commands, waiting
 * for the rest of a value (lost with it) or for room to send a reply.
 * They are closed here, while the storage that the items they hold live
 * in is still up. */
static void worker_stop(LIBEVENT_THREAD *me)
{
    conns_close_owned(me);
    while (me->udp_conns != NULL) {
        conn *c = me->udp_conns;
        me->udp_conns = c->next;
        conn_drop(c);
    }
    if (me->idle_event != NULL) {
        event_del(me->idle_event);
    }
    event_del(&me->notify_event);
    event_base_loopbreak(me->base);
}

/* A worker's notify pipe became readable: adopt the queued connections,
 * or stop. */
static void thread_libevent_process(evutil_socket_t fd, short which,
                                    void *arg)
{
    LIBEVENT_THREAD *me = arg;
    char buf[64];
    ssize_t n = read(fd, buf, sizeof(buf));
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] == NOTIFY_STOP) {
            worker_stop(me);
            return;
        }
        adopt_queued_conn(me);
    }
}

static void idle_check(evutil_socket_t fd, short which, void *arg)
{
    conns_close_idle(arg);
}

/* memcached checks for idle connections about once a second too */
static void start_idle_check(LIBEVENT_THREAD *me)
{
    struct timeval every = { .tv_sec = 1, .tv_usec = 0 };
    me->idle_event = event_new(me->base, -1, EV_PERSIST, idle_check, me);
    if (me->idle_event == NULL || event_add(me->idle_event, &every) == -1) {
        fprintf(stderr, "Can't start the idle connection check\n");
        exit(EXIT_FAILURE);
    }
}

static void setup_thread(LIBEVENT_THREAD *me)
{
    me->base = event_base_new();
    if (me->base == NULL) {
        fprintf(stderr, "Can't allocate event base\n");
        exit(EXIT_FAILURE);
    }
    event_assign(&me->notify_event, me->base, me->notify_receive_fd,
                 EV_READ | EV_PERSIST, thread_libevent_process, me);
    if (event_add(&me->notify_event, 0) == -1) {
        fprintf(stderr, "Can't monitor libevent notify pipe\n");
        exit(EXIT_FAILURE);
    }
    me->new_conn_queue = calloc(1, sizeof(struct conn_queue));
    if (me->new_conn_queue == NULL) {
        fprintf(stderr, "Failed to allocate memory for connection queue");
        exit(EXIT_FAILURE);
    }
    pthread_mutex_init(&me->new_conn_queue->lock, NULL);
    if (settings.idle_timeout > 0) {
        start_idle_check(me);
    }
}

static void *worker_libevent(void *arg)
{
    LIBEVENT_THREAD *me = arg;
    tier_reassign_thread_worker(me->storage.index);
    pthread_mutex_lock(&init_lock);
    init_count++;
    pthread_cond_signal(&init_cond);
    pthread_mutex_unlock(&init_lock);
    event_base_loop(me->base, 0);
    return NULL;
}

/* After the worker is joined: the listeners being closed before, nothing
 * can be queued any more; a connection still queued was never served and
 * is closed unseen (a UDP socket is shared, listen.c closes it). */
static void worker_free(LIBEVENT_THREAD *me)
{
    conn_queue_item *qi;
    while ((qi = cq_pop(me->new_conn_queue)) != NULL) {
        if (!IS_UDP(qi->transport)) {
            close(qi->sfd);
        }
        free(qi);
    }
    pthread_mutex_destroy(&me->new_conn_queue->lock);
    free(me->new_conn_queue);
    me->new_conn_queue = NULL;
    if (me->idle_event != NULL) {
        event_free(me->idle_event);
        me->idle_event = NULL;
    }
    event_base_free(me->base);
    me->base = NULL;
    close(me->notify_receive_fd);
    close(me->notify_send_fd);
}

void memcached_thread_init(int nthreads, void *arg)
{
    threads = calloc(nthreads, sizeof(LIBEVENT_THREAD));
    if (threads == NULL) {
        perror("Can't allocate thread descriptors");
        exit(EXIT_FAILURE);
    }
    for (int i = 0; i < nthreads; i++) {
        int fds[2];
        if (pipe(fds)) {
            perror("Can't create notify pipe");
            exit(EXIT_FAILURE);
        }
        threads[i].notify_receive_fd = fds[0];
        threads[i].notify_send_fd = fds[1];
        storage_worker_register(&threads[i].storage);
        setup_thread(&threads[i]);
    }
    for (int i = 0; i < nthreads; i++) {
        if (pthread_create(&threads[i].thread_id, NULL, worker_libevent,
                           &threads[i]) != 0) {
            perror("Can't create thread");
            exit(EXIT_FAILURE);
        }
        (void)pthread_setname_np(threads[i].thread_id, "mc-worker");
    }
    pthread_mutex_lock(&init_lock);
    while (init_count < nthreads) {
        pthread_cond_wait(&init_cond, &init_lock);
    }
    pthread_mutex_unlock(&init_lock);
    nthreads_running = nthreads;
}

static void notify_thread(LIBEVENT_THREAD *t, char byte)
{
    while (write(t->notify_send_fd, &byte, 1) != 1) {
        if (errno != EINTR) {
            perror("Writing to thread notify pipe");
            return;
        }
    }
}

void dispatch_conn_new(int sfd, enum conn_states init_state, int event_flags,
                       int read_buffer_size, enum network_transport transport,
                       bool tls)
{
    conn_queue_item *qi = malloc(sizeof(*qi));
    if (qi == NULL) {
        close(sfd);
        fprintf(stderr, "Failed to allocate memory for connection object\n");
        return;
    }
    last_thread = (last_thread + 1) % nthreads_running;
    LIBEVENT_THREAD *t = &threads[last_thread];
    qi->sfd = sfd;
    qi->init_state = init_state;
    qi->event_flags = event_flags;
    qi->read_buffer_size = read_buffer_size;
    qi->transport = transport;
    qi->tls = tls;
    if (!IS_UDP(transport)) {
        atomic_fetch_add_explicit(&queued_conns, 1, memory_order_relaxed);
    }
    cq_push(t->new_conn_queue, qi);
    notify_thread(t, NOTIFY_CONN);
}

void memcached_thread_stop(void)
{
    for (int i = 0; i < nthreads_running; i++) {
        notify_thread(&threads[i], NOTIFY_STOP);
    }
    for (int i = 0; i < nthreads_running; i++) {
        pthread_join(threads[i].thread_id, NULL);
        worker_free(&threads[i]);
    }
}

static void stats_sum(stat_u64 *dst, stat_u64 *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        atomic_store_explicit(&dst[i],
            atomic_load_explicit(&dst[i], memory_order_relaxed) +
            atomic_load_explicit(&src[i], memory_order_relaxed),
            memory_order_relaxed);
    }
}

void threadlocal_stats_aggregate(struct thread_stats *out)
{
    /* struct thread_stats is made only of stat_u64 fields */
    size_t n = sizeof(struct thread_stats) / sizeof(stat_u64);
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < nthreads_running; i++) {
        stats_sum((stat_u64 *)out, (stat_u64 *)&threads[i].stats, n);
    }
}

void threadlocal_conn_buf_sum(struct conn_buf_totals *out)
{
    for (int i = 0; i < nthreads_running; i++) {
        const struct conn_buf_usage *u = &threads[i].buf_usage;
        uint64_t read = atomic_load_explicit(&u->read_bytes,
                                             memory_order_relaxed);
        uint64_t reply = atomic_load_explicit(&u->reply_bytes,
                                              memory_order_relaxed);
        out->buffer_sets += atomic_load_explicit(&u->buffer_sets,
                                                 memory_order_relaxed);
        out->bytes += read + reply;
        out->reply_bytes += reply;
        out->reply_pieces += atomic_load_explicit(&u->reply_pieces,
                                                  memory_order_relaxed);
    }
}

void threadlocal_stats_reset(void)
{
    size_t n = sizeof(struct thread_stats) / sizeof(stat_u64);
    for (int i = 0; i < nthreads_running; i++) {
        stat_u64 *f = (stat_u64 *)&threads[i].stats;
        for (size_t k = 0; k < n; k++) {
            atomic_store_explicit(&f[k], 0, memory_order_relaxed);
        }
    }
}
