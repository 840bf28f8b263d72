/*
 * listen.h: the listening sockets (listen.c): TCP, UDP and the unix
 * socket, accepting connections on them, and closing them at shutdown.
 * Main thread only.
 */
#ifndef LISTEN_H
#define LISTEN_H

#include <stdbool.h>

struct event_base;

/* Start-up: open what -s, or -l/-p/-U, ask for on `base`; exits with one
 * line on failure. */
void listeners_open(struct event_base *base);
/* Switch the listeners off and on (memcached.c hands it to the accept
 * pause, accept_pause.c). */
void listeners_arm(bool on);
/* -c reached: no connection may be accepted now. */
bool conn_limit_reached(void);
/* Shutdown: close the TCP and unix listeners (stop accepting). */
void listeners_close(void);
/* Shutdown, once the workers are stopped: close the UDP sockets. */
void udp_sockets_close(void);

#endif
