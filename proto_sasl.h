/*
 * proto_sasl.h: SASL authentication (-S) through Cyrus libsasl2, as
 * memcached 1.6.18 uses it (proto_sasl.c; doc/protocol.md "SASL").  The
 * binary protocol's SASL opcodes (proto_bin.c) call in here; the wire
 * format stays there.
 */
#ifndef PROTO_SASL_H
#define PROTO_SASL_H

#include "conn.h"

#include <stdbool.h>

/* Longest mechanism name a client may ask for, as memcached limits it. */
#define SASL_MECH_NAME_MAX 32

/* Longest response (the data of one auth or step) that Cyrus is given
 * for mechanism mech (nmech bytes, not NUL-terminated); a longer one is
 * refused as a failed login before Cyrus sees it. */
unsigned auth_sasl_token_max(const char *mech, size_t nmech);

/* Start-up, on the main thread before any worker: Cyrus's server side
 * with memcached's service name and configuration lookup.  Prints why
 * and exits when it cannot start. */
void auth_sasl_init(void);

/* The mechanisms c may use, space separated (Cyrus's memory, valid
 * until c's next SASL call); false when they cannot be listed. */
bool auth_sasl_mechs(conn *c, const char **list, unsigned *len);

enum auth_sasl_result {
    AUTH_SASL_OK,          /* authenticated */
    AUTH_SASL_CONTINUE,    /* send *out to the client, await a step */
    AUTH_SASL_FAILED
};

/* One exchange: `start` begins one with mechanism mech (a NUL-terminated
 * name), otherwise it is a step of the one under way.  data/len is the
 * client's response; *out and *outlen the server's challenge (Cyrus's
 * memory). */
enum auth_sasl_result auth_sasl_exchange(conn *c, bool start,
                                         const char *mech,
                                         const char *data, unsigned len,
                                         const char **out,
                                         unsigned *outlen);

/* A connection closes: its Cyrus state goes. */
void auth_sasl_release(conn *c);

#endif
