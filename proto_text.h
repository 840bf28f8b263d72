/*
 * proto_text.h: the ASCII protocol (proto_text.c), called by the
 * connection machine (conn.c) with a complete request line or once a
 * value has been read.
 */
#ifndef PROTO_TEXT_H
#define PROTO_TEXT_H

#include "conn.h"

#include <stddef.h>

#define MAX_TOKENS 24          /* meta commands accept up to this many */

void process_command_ascii(conn *c, char *command, size_t len);
void complete_nread(conn *c);

#endif
