/*
 * proto_auth.h: ASCII authentication (-Y authfile) as memcached 1.6.18
 * does it (proto_auth.c; doc/protocol.md "ASCII authentication").
 */
#ifndef PROTO_AUTH_H
#define PROTO_AUTH_H

#include "conn.h"

/* Start-up, before privileges are dropped: read the user:password lines
 * of path.  Prints memcached's message and exits when it cannot. */
void authfile_load(const char *path);

/* The ASCII protocol (proto_text.h) with the login in front: until a
 * connection has authenticated, its lines are the login's. */
extern const struct conn_proto proto_ascii_auth;

#endif
