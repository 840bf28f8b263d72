/*
 * accept_pause.h: switching the listeners off while no connection can be
 * accepted, and back on once one can (accept_pause.c).
 */
#ifndef ACCEPT_PAUSE_H
#define ACCEPT_PAUSE_H

#include <errno.h>
#include <stdbool.h>

/* accept() failed for want of a descriptor or of kernel memory: retrying
 * at once cannot succeed. */
static inline bool accept_shortage(int err)
{
    return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

struct event_base;
/* Main thread, at start-up, before the worker threads exist: arm
 * switches the listeners off and on, at_limit tells whether -c is reached
 * (listen.c's listeners_arm and conn_limit_reached). */
void accept_pause_init(struct event_base *main_base, void (*arm)(bool on),
                       bool (*at_limit)(void));
/* Main thread: the pending connection cannot be taken now. */
void accept_pause(void);
/* Any worker, after it closed a client connection. */
void accept_pause_conn_closed(void);
/* Main thread, at shutdown, once the listeners are closed and the
 * workers joined: nothing here runs again. */
void accept_pause_stop(void);

#endif
