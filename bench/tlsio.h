/*
 * tlsio.h - tcload's TLS client side (OpenSSL): one context for the run,
 * a blocking handshake per connection, then non-blocking reads and writes
 * that report "try again" as errno EAGAIN, as recv and send do.
 */
#ifndef TCLOAD_TLSIO_H
#define TCLOAD_TLSIO_H

#include <stddef.h>
#include <sys/types.h>

typedef struct tlsio tlsio_t;

/* ca: verify the server against these CAs (NULL: no verification);
 * cert, key: a client certificate to present (NULL: none) */
int tlsio_init(const char *ca, const char *cert, const char *key,
               char *msg, size_t msglen);
tlsio_t *tlsio_connect(int fd, char *msg, size_t msglen);
ssize_t tlsio_send(tlsio_t *t, const void *buf, size_t len);
ssize_t tlsio_recv(tlsio_t *t, void *buf, size_t len);
/* notify: send the close_notify alert (not after an error) */
void tlsio_close(tlsio_t *t, int notify);
void tlsio_cleanup(void);

#endif
