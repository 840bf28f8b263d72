/*
 * tap.c: TAP output for the C unit tests (tap.h).
 *
 * Owns the check counters.  No locks: checks are made on the test's main
 * thread only (threads a test starts report back to it).
 */
#include "tap.h"

#include <stdarg.h>
#include <stdio.h>

static int tests_run;
static int tests_failed;

bool ok(bool cond, const char *fmt, ...)
{
    va_list ap;
    tests_run++;
    if (!cond) {
        tests_failed++;
    }
    printf("%sok %d - ", cond ? "" : "not ", tests_run);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    return cond;
}

void skip(const char *why)
{
    printf("ok %d # skip %s\n", ++tests_run, why);
    fflush(stdout);
}

void diag(const char *fmt, ...)
{
    va_list ap;
    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

int done_testing(void)
{
    printf("1..%d\n", tests_run);
    if (tests_failed != 0) {
        printf("# %d of %d checks failed\n", tests_failed, tests_run);
    }
    return tests_failed == 0 ? 0 : 1;
}
