/*
 * bg_thread.h: one background thread's start, stop, wake and sleep
 * (bg_thread.c), shared by every background thread of the server.
 *
 * The owner keeps one static struct bg_thread per thread, made with
 * BG_THREAD_INIT(&its_lock).  The lock is the owner's: it guards the
 * thread's running/stop/woken flags here and whatever state the owner
 * keeps beside them (its request, its counters), so that the owner can
 * test its own condition and sleep in one critical section.  The
 * condition variable is usable from the start, before the thread runs
 * (a wake then only sets the woken flag).
 *
 * The thread function is an ordinary pthread start routine.  It loops
 * until bg_thread_stopping() / do_bg_thread_stopping() is true, sleeping
 * in do_bg_thread_wait() (until woken), do_bg_thread_wait_until() (until
 * woken or a deadline) or bg_thread_sleep() (for a while, without the
 * lock held around it).  Every sleep returns at once once a stop was
 * asked for or a wake arrived since the last sleep ended, so neither is
 * lost; a sleep may also return spuriously, so owners waiting for their
 * own condition test it in a loop.
 *
 * Functions named do_ assume the owner's lock is held; the others take
 * it.  bg_thread_stop joins the thread, so it must not be called from
 * the thread itself, nor with the lock held.
 */
#ifndef BG_THREAD_H
#define BG_THREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

struct bg_thread {
    const char *name;            /* the thread's name (ps -L, top -H) */
    pthread_mutex_t *lock;       /* the owner's; guards the fields below */
    pthread_cond_t cond;         /* signalled on wake and stop */
    pthread_t tid;
    bool running;                /* started and not yet joined */
    bool stop;                   /* bg_thread_stop asked the thread to end */
    bool woken;                  /* a wake not yet consumed by a sleep */
};

/* name: memcached's for the threads it has too (mc-lrumaint, ...), at
 * most 15 characters (the kernel's limit). */
#define BG_THREAD_INIT(thread_name, lockp) \
    { .name = (thread_name), .lock = (lockp), \
      .cond = PTHREAD_COND_INITIALIZER }

/* Start the thread running fn(arg), named t->name, clearing an earlier
 * stop request.
 * 0 when started, EALREADY when it was already running (nothing done),
 * else pthread_create's error. */
int bg_thread_start(struct bg_thread *t, void *(*fn)(void *), void *arg);
/* Ask the thread to stop, wake it and join it.  True if it was running;
 * the owner then resets what the thread left behind.  The stop request
 * stays until the next start. */
bool bg_thread_stop(struct bg_thread *t);

/* Wake the thread from its current or next sleep. */
void bg_thread_wake(struct bg_thread *t);
void do_bg_thread_wake(struct bg_thread *t);

bool bg_thread_stopping(struct bg_thread *t);
bool do_bg_thread_stopping(const struct bg_thread *t);
bool do_bg_thread_running(const struct bg_thread *t);

/* Sleep until woken or stopped (or spuriously). */
void do_bg_thread_wait(struct bg_thread *t);
/* Sleep until woken, stopped or the CLOCK_REALTIME deadline; false when
 * the deadline passed first. */
bool do_bg_thread_wait_until(struct bg_thread *t,
                             const struct timespec *deadline);
/* Sleep ns nanoseconds unless woken or stopped first; takes the lock. */
void bg_thread_sleep(struct bg_thread *t, long ns);

#endif
