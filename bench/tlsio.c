/*
 * tlsio.c - owns tcload's TLS client: the SSL_CTX shared by every
 * connection (built once before the threads start; OpenSSL lets threads
 * create sessions from one context), each connection's SSL session and
 * the translation of OpenSSL's results into recv/send conventions so that
 * net.c drives TLS and plain sockets with the same code.  A session is
 * used only by the thread that owns its connection.
 */
#include "tlsio.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tlsio {
    SSL *ssl;
};

static SSL_CTX *client_ctx;

static void openssl_msg(char *msg, size_t msglen, const char *what)
{
    int err = errno;
    unsigned long e = ERR_get_error();
    char buf[160];
    if (e)
        ERR_error_string_n(e, buf, sizeof(buf));
    else if (err == EAGAIN || err == EWOULDBLOCK)
        snprintf(buf, sizeof(buf), "timed out");
    else
        snprintf(buf, sizeof(buf), "%s", err ? strerror(err) : "failed");
    snprintf(msg, msglen, "%s: %s", what, buf);
    ERR_clear_error();
}

int tlsio_init(const char *ca, const char *cert, const char *key,
               char *msg, size_t msglen)
{
    client_ctx = SSL_CTX_new(TLS_client_method());
    if (!client_ctx) {
        openssl_msg(msg, msglen, "SSL_CTX_new");
        return -1;
    }
    /* a write that the socket takes only in part is resumed from the
     * output buffer, which may have moved (realloc) or grown meanwhile */
    SSL_CTX_set_mode(client_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                                 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (ca) {
        if (SSL_CTX_load_verify_locations(client_ctx, ca, NULL) != 1) {
            openssl_msg(msg, msglen, ca);
            return -1;
        }
        SSL_CTX_set_verify(client_ctx, SSL_VERIFY_PEER, NULL);
    }
    if (cert && SSL_CTX_use_certificate_chain_file(client_ctx, cert) != 1) {
        openssl_msg(msg, msglen, cert);
        return -1;
    }
    if (key && SSL_CTX_use_PrivateKey_file(client_ctx, key,
                                           SSL_FILETYPE_PEM) != 1) {
        openssl_msg(msg, msglen, key);
        return -1;
    }
    return 0;
}

tlsio_t *tlsio_connect(int fd, char *msg, size_t msglen)
{
    tlsio_t *t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(msg, msglen, "out of memory");
        return NULL;
    }
    t->ssl = SSL_new(client_ctx);
    if (!t->ssl || SSL_set_fd(t->ssl, fd) != 1) {
        openssl_msg(msg, msglen, "SSL_new");
        tlsio_close(t, 0);
        return NULL;
    }
    /* the socket is still blocking here: connections are set up one after
     * the other before any load is sent */
    errno = 0;
    if (SSL_connect(t->ssl) != 1) {
        openssl_msg(msg, msglen, "TLS handshake");
        tlsio_close(t, 0);
        return NULL;
    }
    return t;
}

/* n > 0 passes through; otherwise errno tells the caller what happened */
static ssize_t io_result(tlsio_t *t, int n)
{
    if (n > 0)
        return n;
    switch (SSL_get_error(t->ssl, n)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    case SSL_ERROR_SYSCALL:
        if (errno == 0)
            errno = ECONNRESET;
        ERR_clear_error();
        return -1;
    default:
        ERR_clear_error();
        errno = EPROTO;
        return -1;
    }
}

ssize_t tlsio_send(tlsio_t *t, const void *buf, size_t len)
{
    int n = len > (size_t)1 << 30 ? 1 << 30 : (int)len;
    errno = 0;
    return io_result(t, SSL_write(t->ssl, buf, n));
}

ssize_t tlsio_recv(tlsio_t *t, void *buf, size_t len)
{
    int n = len > (size_t)1 << 30 ? 1 << 30 : (int)len;
    errno = 0;
    return io_result(t, SSL_read(t->ssl, buf, n));
}

void tlsio_close(tlsio_t *t, int notify)
{
    if (!t)
        return;
    if (t->ssl && notify)
        SSL_shutdown(t->ssl);       /* best effort: the socket won't block */
    SSL_free(t->ssl);
    free(t);
}

void tlsio_cleanup(void)
{
    SSL_CTX_free(client_ctx);
    client_ctx = NULL;
}
