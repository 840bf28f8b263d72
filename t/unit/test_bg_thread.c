/*
 * test_bg_thread.c: bg_thread.c: start twice, stop without a thread, a
 * wake sent before the sleep is not lost, a stop ends a long sleep at
 * once, a timed wait times out, and the thread can be started again
 * after a stop.  Run under -fsanitize=thread as well (scripts/test).
 */
#include "bg_thread.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct bg_thread thr = BG_THREAD_INIT("tc-test", &lock);
static unsigned int rounds;           /* guarded by lock */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Counts one round per sleep; each sleep is an hour unless woken. */
static void *sleeper(void *arg)
{
    while (!bg_thread_stopping(&thr)) {
        pthread_mutex_lock(&lock);
        rounds++;
        pthread_mutex_unlock(&lock);
        bg_thread_sleep(&thr, 3600L * 1000000000L);
    }
    return NULL;
}

static unsigned int rounds_now(void)
{
    pthread_mutex_lock(&lock);
    unsigned int n = rounds;
    pthread_mutex_unlock(&lock);
    return n;
}

/* Up to 10 s for the sleeper to reach `want` rounds. */
static bool wait_rounds(unsigned int want)
{
    struct timespec pause = { 0, 1000000 };
    for (int i = 0; i < 10000 && rounds_now() < want; i++) {
        nanosleep(&pause, NULL);
    }
    return rounds_now() >= want;
}

static void test_start_stop(void)
{
    ok(!bg_thread_stop(&thr), "stop without a thread does nothing");
    ok(bg_thread_start(&thr, sleeper, NULL) == 0, "start");
    ok(bg_thread_start(&thr, sleeper, NULL) == EALREADY,
       "a second start finds it running");
    ok(wait_rounds(1), "the thread runs its first round");
    bg_thread_wake(&thr);
    ok(wait_rounds(2), "a wake ends the hour's sleep");
    double t0 = now_s();
    ok(bg_thread_stop(&thr), "stop joins the running thread");
    ok(now_s() - t0 < 5.0, "stop ends the hour's sleep at once");
    pthread_mutex_lock(&lock);
    ok(!do_bg_thread_running(&thr), "not running after stop");
    pthread_mutex_unlock(&lock);
    ok(bg_thread_start(&thr, sleeper, NULL) == 0, "starts again after stop");
    ok(wait_rounds(3), "and runs");
    ok(bg_thread_stop(&thr), "and stops again");
}

/* The waits themselves, on the test's own thread: a struct never started
 * (one that was stopped keeps its stop request until the next start, so
 * every wait on it returns at once). */
static void test_waits(void)
{
    static struct bg_thread idle = BG_THREAD_INIT("tc-test", &lock);
    struct timespec deadline;
    pthread_mutex_lock(&lock);
    do_bg_thread_wake(&idle);
    do_bg_thread_wait(&idle);
    ok(!idle.woken, "a wake sent before the wait is taken by it");
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += 20000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    ok(!do_bg_thread_wait_until(&idle, &deadline),
       "a timed wait with nothing to wake it times out");
    do_bg_thread_wake(&idle);
    ok(do_bg_thread_wait_until(&idle, &deadline), "a wake ends it early");
    pthread_mutex_unlock(&lock);
}

int main(void)
{
    test_start_stop();
    test_waits();
    return done_testing();
}
