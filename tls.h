/*
 * tls.h: TLS termination (tls.c, over OpenSSL): the -Z and ssl_* options,
 * the server's context built from them, a connection's TLS session (its
 * handshake and the read/sendmsg functions and the io layer conn.c calls
 * in place of the socket's), refresh_certs and the ssl_* stats.
 * doc/protocol.md "TLS".
 *
 * No OpenSSL header is needed to use it: a connection's TLS state is
 * opaque outside tls.c.
 */
#ifndef TLS_H
#define TLS_H

#include "tls_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/* What `stats settings` shows for ssl_verify_mode: OpenSSL's verify
 * flags for the mode, as memcached reports them (2 shows 3, 3 shows 7). */
int tls_verify_flags(int mode);
/* "tlsv1.0" ... "tlsv1.3" */
const char *tls_version_name(int min_version);

/* Start-up, before privileges are dropped (the key may be readable only
 * by root), when -Z is given: build the context from settings.tls or
 * print memcached's error line and exit. */
void tls_init(void);

struct conn;

/* A connection accepted on a TLS listener, on its worker: give it a TLS
 * session whose handshake its first read drives, and route its reads and
 * sends through tls.c, which it also asks, through its io_layer (conn.h),
 * whether input waits decrypted, whether the handshake must send, and
 * which ends the session when it closes.  False (nothing allocated) when
 * it cannot. */
bool tls_conn_start(struct conn *c);

/* refresh_certs: a new context from the same files, used by connections
 * accepted from now on.  On failure the old one stays and err says why
 * (memcached's wording). */
bool tls_refresh_certs(char *err, size_t errlen);

struct tls_stats {
    uint64_t handshake_errors;
    uint64_t new_sessions;
    uint64_t secs_since_cert_refresh;
};
void tls_get_stats(struct tls_stats *out);
/* stats reset */
void tls_stats_reset(void);

#endif
