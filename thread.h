/*
 * thread.h: the worker threads (thread.c): each runs its own event base,
 * owns the connections dispatched to it (and lends them, conn_adopt, its
 * own struct thread_stats and the account of their buffers) and the
 * struct storage_worker it registers with storage.
 * New connections reach a worker through its queue and notify pipe.
 */
#ifndef THREAD_H
#define THREAD_H

#include "conn.h"
#include "conn_buf.h"
#include "daemon_stats.h"
#include "storage/storage.h"

#include <event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct libevent_thread {
    pthread_t thread_id;
    struct event_base *base;
    struct event notify_event;
    int notify_receive_fd;
    int notify_send_fd;
    struct conn_queue *new_conn_queue;
    /* what storage counts for this worker: the item API (items.h) takes
     * it; registered with storage at start-up */
    struct storage_worker storage;
    struct thread_stats stats;
    struct conn_buf_usage buf_usage; /* its connections' buffers */
    struct event *idle_event;     /* idle_timeout's check, or NULL */
    conn *udp_conns;              /* its UDP connections, linked by next */
} LIBEVENT_THREAD;

void memcached_thread_init(int nthreads, void *arg);
/* Shutdown, main thread, after the listeners are closed: every worker
 * closes its connections between two requests and ends; returns once
 * all are joined.  `threads` and their stats stay readable. */
void memcached_thread_stop(void);
/* Client connections dispatched but not yet in curr_conns (listen.c's -c
 * check adds them). */
uint64_t threads_queued_conns(void);
/* Hand a new connection (or one worker's descriptor of a UDP socket) to
 * the next worker; tls: accepted on a TLS listener. */
void dispatch_conn_new(int sfd, enum conn_states init_state, int event_flags,
                       int read_buffer_size, enum network_transport transport,
                       bool tls);
/* stats: every worker's counters summed into out, and set back to 0 */
void threadlocal_stats_aggregate(struct thread_stats *out);
void threadlocal_stats_reset(void);
/* Add every worker's conn_buf_usage into out (conn_buf.c). */
void threadlocal_conn_buf_sum(struct conn_buf_totals *out);
extern LIBEVENT_THREAD *threads;

#endif
