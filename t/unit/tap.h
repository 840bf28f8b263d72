/*
 * tap.h: the TAP output every C unit test in t/unit prints (tap.c),
 * read by t/unit.t through the test's exit status and shown on failure.
 *
 * ok() numbers and prints one check and returns its verdict, so a test
 * can skip what depends on a failed check; skip() counts a check that
 * could not run here (with its one-line reason); done_testing() prints
 * the plan and returns the exit status (non-zero if any check failed).
 */
#ifndef TAP_H
#define TAP_H

#include <stdbool.h>

bool ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void skip(const char *why);
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int done_testing(void);

#endif
