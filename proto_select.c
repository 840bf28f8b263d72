/*
 * proto_select.c: which protocol (struct conn_proto, conn.h) a connection
 * speaks: -B's, and under -B auto (memcached's default) the one its first
 * byte asks for, 0x80 (a binary request's magic) for binary and anything
 * else for ASCII; under -Y ASCII is proto_auth.c's, with the login in
 * front.  The connection machine (conn.c) knows none of them: it is
 * handed the first one here, at start-up, and calls a connection's own
 * from then on; under -B auto that first one chooses and hands over.
 *
 * Locks: none.  The first protocol is set before any worker starts; a
 * connection's is its worker's to change.
 */
#include "config.h"
#include "proto_select.h"
#include "conn.h"
#include "proto_auth.h"
#include "proto_bin.h"
#include "proto_text.h"
#include "settings.h"

#include <stdio.h>

static const struct conn_proto *ascii_protocol(void)
{
    return settings.auth_file != NULL ? &proto_ascii_auth : &proto_ascii;
}

/* -B auto: the first byte of the first request (of each datagram, for
 * UDP) chooses. */
static bool try_read_command_negotiate(conn *c)
{
    bool binary = (unsigned char)c->rcurr[0] == BIN_REQ_MAGIC;
    c->proto = binary ? &proto_binary : ascii_protocol();
    if (settings.verbose > 1) {
        fprintf(stderr, "%d: Client using the %s protocol\n", c->sfd,
                binary ? "binary" : "ascii");
    }
    return c->proto->try_read_command(c);
}

static const struct conn_proto negotiating = {
    .name = "auto-negotiating",
    .lines = true,
    .try_read_command = try_read_command_negotiate,
};

void proto_select_init(void)
{
    switch (settings.binding_protocol) {
    case ascii_prot:
        conn_set_first_protocol(ascii_protocol());
        break;
    case binary_prot:
        conn_set_first_protocol(&proto_binary);
        break;
    case negotiating_prot:
        conn_set_first_protocol(&negotiating);
        break;
    }
}
