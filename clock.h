/*
 * clock.h: the server clock (clock.c).
 *
 * current_time counts seconds since process_started and is what every item
 * time is measured in; the main thread's timer advances it once a second.
 */
#ifndef CLOCK_H
#define CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

typedef uint32_t rel_time_t;     /* seconds since process_started */

/* client expiry times beyond this many seconds are absolute unix times */
#define REALTIME_MAXDELTA (60 * 60 * 24 * 30)

/* Relaxed atomic: written once a second by the clock, read everywhere. */
extern _Atomic rel_time_t current_time;
extern time_t process_started;
rel_time_t realtime(int64_t exptime);

struct event_base;
/* Main thread, at start-up: fix process_started and current_time. */
void clock_init(void);
/* Start-up, after clock_init and before other threads exist: carry on
 * the clock of an earlier run whose items are being restored (doc/
 * restart.md "The clock"): process_started becomes that run's `epoch`
 * and current_time the later of `now - epoch` and `last`, the earlier
 * run's last reading, so that restored times keep their meaning and the
 * clock never runs backwards for them. */
void clock_resume(time_t epoch, rel_time_t last);
/* Main thread: tick current_time once a second on `base`. */
void clock_start(struct event_base *base);
#ifdef MEMCACHED_DEBUG
/* debugtime: move the server clock by `seconds` (debug build only) */
void clock_debug_shift(int64_t seconds);
#endif

#endif
