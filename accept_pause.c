/*
 * accept_pause.c: switching the listeners off while no connection can be
 * accepted, and back on once one can.
 *
 * An accept() that fails for want of a descriptor (EMFILE, ENFILE) or of
 * kernel memory leaves the connection in the listen queue, so a listener
 * left armed (level-triggered) would wake the main thread again at once
 * for as long as the shortage lasts.  Like memcached 1.6.18 the server
 * instead disables its listeners: `stats` shows accepting_conns 0, counts
 * the pause in listen_disabled_num and, once it is over, its length in
 * time_in_listen_disabled_us.  With no_maxconns_fast the same pause holds
 * new connections back at -c (memcached gets that from its descriptor
 * limit, which it sets to -c).
 *
 * Resuming: a worker that closes a connection during a pause wakes the
 * main thread through a pipe, and a 100 ms timer re-checks in case room
 * comes some other way (files freed by other processes under ENFILE, a
 * raised limit).  The listeners come back when a probe socket opens and,
 * under no_maxconns_fast, the connections are below -c.  memcached
 * re-arms after any close, checking for one every 10 ms; see
 * doc/protocol.md.
 *
 * At shutdown accept_pause_stop takes both events off the main loop and
 * closes the pipe, once no worker is left to write to it.
 *
 * The listeners are listen.c's: it is handed how to switch them and how
 * to tell that -c is reached, so that it sits below the connections
 * that call it when they close.
 *
 * Threads and locks: everything here runs on the main thread, except
 * accept_pause_conn_closed (workers), which touches only the atomic
 * wake_armed and the pipe.  The counters are in struct server_stats,
 * under stats_lock.
 */
#include "config.h"
#include "accept_pause.h"
#include "daemon_stats.h"
#include "settings.h"

#include <event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RECHECK_USEC 100000

static struct event wake_event;      /* a worker closed a connection */
static struct event recheck_event;   /* the safety net */
static int wake_pipe[2] = { -1, -1 };
static _Atomic bool wake_armed;      /* the next close should wake us */
static bool paused;
static struct timespec paused_since;
/* the listeners' (listen.c), passed in at start-up */
static void (*arm_listeners)(bool on);
static bool (*at_conn_limit)(void);

static uint64_t usec_since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t us = (int64_t)(now.tv_sec - t0->tv_sec) * 1000000 +
                 (now.tv_nsec - t0->tv_nsec) / 1000;
    return us > 0 ? (uint64_t)us : 0;
}

/* accept() needs what a new socket needs: if a probe opens, try again.
 * A probe failing for another reason says nothing: let accept() tell. */
static bool room_to_accept(void)
{
    if (!settings.listen.maxconns_fast && at_conn_limit()) {
        return false;
    }
    int probe = socket(AF_UNIX, SOCK_STREAM, 0);
    if (probe == -1) {
        return !accept_shortage(errno);
    }
    close(probe);
    return true;
}

static void resume_if_room(void)
{
    if (!paused) {
        return;
    }
    /* armed before the check, so that a close after it still wakes us */
    atomic_store(&wake_armed, true);
    if (!room_to_accept()) {
        return;
    }
    atomic_store(&wake_armed, false);
    paused = false;
    event_del(&recheck_event);
    pthread_mutex_lock(&stats_lock);
    stats.accepting_conns = true;
    stats.time_in_listen_disabled_us += usec_since(&paused_since);
    pthread_mutex_unlock(&stats_lock);
    arm_listeners(true);
}

static void wake_handler(evutil_socket_t fd, short which, void *arg)
{
    char drain[64];
    while (read(fd, drain, sizeof(drain)) > 0) {
        continue;
    }
    resume_if_room();
}

static void recheck_handler(evutil_socket_t fd, short which, void *arg)
{
    resume_if_room();
}

void accept_pause_init(struct event_base *main_base, void (*arm)(bool on),
                       bool (*at_limit)(void))
{
    arm_listeners = arm;
    at_conn_limit = at_limit;
    if (pipe(wake_pipe) != 0 ||
        fcntl(wake_pipe[0], F_SETFL, O_NONBLOCK) != 0 ||
        fcntl(wake_pipe[1], F_SETFL, O_NONBLOCK) != 0) {
        perror("Can't create the accept wake-up pipe");
        exit(EXIT_FAILURE);
    }
    event_assign(&wake_event, main_base, wake_pipe[0], EV_READ | EV_PERSIST,
                 wake_handler, NULL);
    event_assign(&recheck_event, main_base, -1, EV_PERSIST,
                 recheck_handler, NULL);
    if (event_add(&wake_event, NULL) == -1) {
        fprintf(stderr, "Can't monitor the accept wake-up pipe\n");
        exit(EXIT_FAILURE);
    }
}

void accept_pause(void)
{
    if (paused) {
        return;
    }
    paused = true;
    arm_listeners(false);
    clock_gettime(CLOCK_MONOTONIC, &paused_since);
    pthread_mutex_lock(&stats_lock);
    stats.accepting_conns = false;
    stats.listen_disabled_num++;
    pthread_mutex_unlock(&stats_lock);
    atomic_store(&wake_armed, true);
    struct timeval every = { .tv_sec = 0, .tv_usec = RECHECK_USEC };
    event_add(&recheck_event, &every);
}

void accept_pause_conn_closed(void)
{
    if (!atomic_load_explicit(&wake_armed, memory_order_relaxed) ||
        !atomic_exchange(&wake_armed, false)) {
        return;
    }
    /* a full pipe already holds a wake-up: nothing is lost */
    char byte = 'w';
    ssize_t unused = write(wake_pipe[1], &byte, 1);
    (void)unused;
}

void accept_pause_stop(void)
{
    event_del(&wake_event);
    event_del(&recheck_event);
    atomic_store(&wake_armed, false);
    close(wake_pipe[0]);
    close(wake_pipe[1]);
    wake_pipe[0] = wake_pipe[1] = -1;
}
