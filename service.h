/*
 * service.h: running under systemd (service.c): the sd_notify states of
 * a Type=notify unit, and the rule of what a graceful stop keeps and how
 * long it may take, which the daemon, its --stop-plan output and
 * tiercached-wrapper --dry-run share.  Main thread only.
 */
#ifndef SERVICE_H
#define SERVICE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Whether a graceful stop (SIGUSR1) can keep anything for the next start:
 * an N-zone in a file or on a device (nvm_path=) that the tier uses, or
 * -e's memory file.  Without either, a graceful stop is a plain one. */
bool service_stop_keeps(void);
/* The seconds a graceful stop asks systemd for (EXTEND_TIMEOUT_USEC);
 * 0 when it keeps nothing. */
uint64_t service_stop_seconds(void);
/* --stop-plan: what a graceful stop keeps and the time it asks for, as
 * lines of text (tiercached-wrapper prints them under --dry-run). */
void service_print_stop_plan(FILE *out);
/* Once every listener accepts: READY=1. */
void service_ready(void);
/* A stop begins: STOPPING=1, and when it is graceful and keeps
 * something, the time it needs (EXTEND_TIMEOUT_USEC=). */
void service_stopping(bool graceful);

#endif
