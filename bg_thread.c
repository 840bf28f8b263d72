/*
 * bg_thread.c: start, stop, wake and sleep of a background thread (the
 * crawler, the page mover, the index expansion, the tier thread).
 *
 * Owns nothing global: each struct bg_thread belongs to the module that
 * runs the thread.  Locks: the struct's fields are guarded by the owner's
 * lock (t->lock), the one the thread sleeps on; see bg_thread.h.
 */
#include "config.h"
#include "bg_thread.h"

#include <errno.h>

int bg_thread_start(struct bg_thread *t, void *(*fn)(void *), void *arg)
{
    int rc = EALREADY;
    pthread_mutex_lock(t->lock);
    if (!t->running) {
        t->stop = false;
        rc = pthread_create(&t->tid, NULL, fn, arg);
        t->running = rc == 0;
        if (t->running && t->name != NULL) {
            /* a name is for operators only: a failure changes nothing */
            (void)pthread_setname_np(t->tid, t->name);
        }
    }
    pthread_mutex_unlock(t->lock);
    return rc;
}

bool bg_thread_stop(struct bg_thread *t)
{
    pthread_mutex_lock(t->lock);
    if (!t->running) {
        pthread_mutex_unlock(t->lock);
        return false;
    }
    t->stop = true;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(t->lock);
    pthread_join(t->tid, NULL);
    pthread_mutex_lock(t->lock);
    t->running = false;
    t->woken = false;
    pthread_mutex_unlock(t->lock);
    return true;
}

void do_bg_thread_wake(struct bg_thread *t)
{
    t->woken = true;
    pthread_cond_signal(&t->cond);
}

void bg_thread_wake(struct bg_thread *t)
{
    pthread_mutex_lock(t->lock);
    do_bg_thread_wake(t);
    pthread_mutex_unlock(t->lock);
}

bool do_bg_thread_stopping(const struct bg_thread *t)
{
    return t->stop;
}

bool bg_thread_stopping(struct bg_thread *t)
{
    pthread_mutex_lock(t->lock);
    bool stop = t->stop;
    pthread_mutex_unlock(t->lock);
    return stop;
}

bool do_bg_thread_running(const struct bg_thread *t)
{
    return t->running;
}

void do_bg_thread_wait(struct bg_thread *t)
{
    if (!t->stop && !t->woken) {
        pthread_cond_wait(&t->cond, t->lock);
    }
    t->woken = false;
}

bool do_bg_thread_wait_until(struct bg_thread *t,
                             const struct timespec *deadline)
{
    int rc = 0;
    while (!t->stop && !t->woken && rc != ETIMEDOUT) {
        rc = pthread_cond_timedwait(&t->cond, t->lock, deadline);
    }
    bool early = t->stop || t->woken;
    t->woken = false;
    return early;
}

void bg_thread_sleep(struct bg_thread *t, long ns)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += ns / 1000000000L;
    deadline.tv_nsec += ns % 1000000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(t->lock);
    do_bg_thread_wait_until(t, &deadline);
    pthread_mutex_unlock(t->lock);
}
