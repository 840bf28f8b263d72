/*
 * proto_text.h: the ASCII protocol (proto_text.c) as the connection
 * machine (conn.c) calls it: it frames a request line and serves it, and
 * finishes a storage command once its value has been read.
 */
#ifndef PROTO_TEXT_H
#define PROTO_TEXT_H

#include "conn.h"

extern const struct conn_proto proto_ascii;

#endif
