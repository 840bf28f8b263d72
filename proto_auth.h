/*
 * proto_auth.h: ASCII authentication (-Y authfile) as memcached 1.6.18
 * does it (proto_auth.c; doc/protocol.md "ASCII authentication").
 */
#ifndef PROTO_AUTH_H
#define PROTO_AUTH_H

#include "conn.h"

#include <stdbool.h>

/* Start-up, before privileges are dropped: read the user:password lines
 * of path.  Prints memcached's message and exits when it cannot. */
void authfile_load(const char *path);

/* Called by the connection machine (conn.c) instead of the ASCII parser
 * while c has not authenticated: serves the buffered "set" that carries
 * "user password", or refuses any other command.  Returns false when it
 * needs more input, as conn.c's command readers do. */
bool try_read_command_asciiauth(conn *c);

#endif
