/*
 * clock.c: the server clock.
 *
 * Owns current_time (seconds since start, from CLOCK_MONOTONIC so that a
 * wall-clock step does not age items), process_started (the unix time
 * that current_time 0 stands for) and realtime(), which turns a client's
 * expiry time into the server clock.
 *
 * Locks: none.  current_time is a relaxed atomic written by the main
 * thread's one-second timer (and by debugtime in the debug build) and read
 * everywhere; process_started is written once at start-up, before any
 * other thread exists.
 */
#include "config.h"
#include "clock.h"

#include <event.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

_Atomic rel_time_t current_time;
time_t process_started;

static struct event_base *clock_base;
static struct event clock_event;
static struct timespec monotonic_start;
/* seconds current_time is ahead of the monotonic clock's count since
 * start-up: 2 (memcached's start), more after clock_resume */
static int64_t clock_offset = 2;
#ifdef MEMCACHED_DEBUG
static _Atomic int64_t clock_shift;
#endif

static rel_time_t clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t secs = ts.tv_sec - monotonic_start.tv_sec;
#ifdef MEMCACHED_DEBUG
    secs += atomic_load(&clock_shift);
#endif
    return (rel_time_t)(secs + clock_offset);
}

static void clock_handler(evutil_socket_t fd, short which, void *arg)
{
    static bool initialized;
    struct timeval t = { .tv_sec = 1, .tv_usec = 0 };
    if (initialized) {
        evtimer_del(&clock_event);
    }
    initialized = true;
    evtimer_assign(&clock_event, clock_base, clock_handler, NULL);
    evtimer_add(&clock_event, &t);
    atomic_store_explicit(&current_time, clock_now(), memory_order_relaxed);
}

void clock_init(void)
{
    clock_gettime(CLOCK_MONOTONIC, &monotonic_start);
    /* memcached starts its clock at 2 so that 0 and 1 stay special */
    clock_offset = 2;
    process_started = time(NULL) - clock_offset;
    current_time = clock_now();
}

void clock_resume(time_t epoch, rel_time_t last)
{
    int64_t since_epoch = (int64_t)time(NULL) - (int64_t)epoch;
    clock_gettime(CLOCK_MONOTONIC, &monotonic_start);
    clock_offset = since_epoch > (int64_t)last ? since_epoch : (int64_t)last;
    if (clock_offset < 2) {
        clock_offset = 2;
    }
    process_started = epoch;
    current_time = clock_now();
}

void clock_start(struct event_base *base)
{
    clock_base = base;
    clock_handler(0, 0, NULL);
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
