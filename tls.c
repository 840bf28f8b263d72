/*
 * tls.c: TLS termination with OpenSSL, as memcached 1.6.18 does it
 * (doc/protocol.md "TLS").
 *
 * Owns the server's SSL_CTX (built at start-up from settings.tls, rebuilt
 * by refresh_certs), each TLS connection's session (struct tls_conn: its
 * SSL object and the buffer its replies are gathered in), the read and
 * sendmsg functions and the layer (struct conn_io_layer, conn.h) it
 * installs on such a connection for conn.c to call, and the ssl_*
 * counters.  The handshake has no state of its own: the connection's
 * first reads drive it, so a client that stalls is an idle connection
 * like any other (idle_timeout) and one that fails is closed.
 *
 * Locks: ctx_lock guards the current context and when it was loaded:
 * refresh_certs swaps them while workers take references for new
 * connections (SSL_new counts one; a session keeps its context alive).
 * A session is touched only by the worker that owns its connection.  The
 * counters are relaxed atomics.
 */
#include "config.h"
#include "tls.h"
#include "conn.h"
#include "settings.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sysexits.h>
#include <time.h>

struct tls_conn {
    SSL *ssl;
    char *wbuf;                   /* replies gathered for one SSL_write */
    bool wants_write;             /* the handshake waits to send */
    bool established;             /* the handshake is done */
    bool failed;                  /* a fatal error: no goodbye */
};

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static SSL_CTX *server_ctx;
static struct timespec ctx_loaded_at;     /* CLOCK_MONOTONIC */

static _Atomic uint64_t handshake_errors;
static _Atomic uint64_t new_sessions;

/* the session id context: any fixed bytes; OpenSSL refuses to resume
 * a session that was verified against a client certificate without one */
static const unsigned char session_context[] = "tiercached";

int tls_verify_flags(int mode)
{
    switch (mode) {
    case 1:
        return SSL_VERIFY_PEER;
    case 2:
        return SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    case 3:
        return SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT |
               SSL_VERIFY_CLIENT_ONCE;
    default:
        return SSL_VERIFY_NONE;
    }
}

const char *tls_version_name(int min_version)
{
    static const char *const names[] = {
        "tlsv1.0", "tlsv1.1", "tlsv1.2", "tlsv1.3"
    };
    if (min_version < 0 || min_version > TLS_MIN_VERSION_MAX) {
        return "unknown";
    }
    return names[min_version];
}

static int protocol_version(int min_version)
{
    static const int versions[] = {
        TLS1_VERSION, TLS1_1_VERSION, TLS1_2_VERSION, TLS1_3_VERSION
    };
    return versions[min_version];
}

/* OpenSSL's reason for a failure (the first error queued, the root cause
 * as memcached reports it); the queue is emptied. */
static const char *openssl_reason(char *buf, size_t len)
{
    unsigned long code = ERR_get_error();
    ERR_clear_error();
    if (code == 0) {
        snprintf(buf, len, "unknown error");
    } else {
        ERR_error_string_n(code, buf, len);
    }
    return buf;
}

static int count_new_session(SSL *ssl, SSL_SESSION *session)
{
    atomic_fetch_add_explicit(&new_sessions, 1, memory_order_relaxed);
    return 0;   /* the cache keeps the session; we hold no reference */
}

static bool load_certificates(SSL_CTX *ctx, const struct tls_config *tc,
                              char *err, size_t errlen)
{
    char reason[256];
    const char *key = tc->key != NULL ? tc->key : tc->chain_cert;
    if (tc->chain_cert == NULL ||
        SSL_CTX_use_certificate_chain_file(ctx, tc->chain_cert) != 1) {
        snprintf(err, errlen, "Error loading the certificate chain: %s : %s",
                 tc->chain_cert ? tc->chain_cert : "(null)",
                 openssl_reason(reason, sizeof(reason)));
        return false;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, tc->keyformat) != 1) {
        snprintf(err, errlen, "Error loading the key: %s : %s", key,
                 openssl_reason(reason, sizeof(reason)));
        return false;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, errlen, "Error validating the certificate: %s",
                 openssl_reason(reason, sizeof(reason)));
        return false;
    }
    if (tc->ca_cert == NULL) {
        return true;
    }
    STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(tc->ca_cert);
    if (names == NULL ||
        SSL_CTX_load_verify_locations(ctx, tc->ca_cert, NULL) != 1) {
        sk_X509_NAME_pop_free(names, X509_NAME_free);
        snprintf(err, errlen, "Error loading the CA certificate: %s : %s",
                 tc->ca_cert, openssl_reason(reason, sizeof(reason)));
        return false;
    }
    SSL_CTX_set_client_CA_list(ctx, names);
    return true;
}

static void set_session_policy(SSL_CTX *ctx, const struct tls_config *tc)
{
    SSL_CTX_set_session_id_context(ctx, session_context,
                                   sizeof(session_context) - 1);
    if (tc->session_cache) {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
        SSL_CTX_sess_set_new_cb(ctx, count_new_session);
    } else {
        /* session tickets still let clients resume, as with memcached */
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    }
}

static SSL_CTX *build_context(char *err, size_t errlen)
{
    const struct tls_config *tc = &settings.tls;
    char reason[256];
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        snprintf(err, errlen, "Unable to create the SSL context: %s",
                 openssl_reason(reason, sizeof(reason)));
        return NULL;
    }
    uint64_t options = SSL_OP_NO_RENEGOTIATION;
    if (tc->kernel_tls) {
        options |= SSL_OP_ENABLE_KTLS;
    }
    SSL_CTX_set_options(ctx, options);
    /* a reply may be sent in pieces and resent from another address */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                          SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                          SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_min_proto_version(ctx, protocol_version(tc->min_version));
    if (!load_certificates(ctx, tc, err, errlen)) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (tc->ciphers != NULL &&
        SSL_CTX_set_cipher_list(ctx, tc->ciphers) != 1) {
        snprintf(err, errlen, "Error setting the provided cipher(s): %s",
                 tc->ciphers);
        ERR_clear_error();
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_verify(ctx, tls_verify_flags(tc->verify_mode), NULL);
    set_session_policy(ctx, tc);
    return ctx;
}

static void install_context(SSL_CTX *ctx)
{
    pthread_mutex_lock(&ctx_lock);
    SSL_CTX *old = server_ctx;
    server_ctx = ctx;
    clock_gettime(CLOCK_MONOTONIC, &ctx_loaded_at);
    pthread_mutex_unlock(&ctx_lock);
    /* sessions made from it keep it until they end */
    SSL_CTX_free(old);
}

void tls_init(void)
{
    char err[1024];
    if (OPENSSL_init_ssl(0, NULL) != 1) {
        fprintf(stderr, "Failed to initialize OpenSSL\n");
        exit(EX_SOFTWARE);
    }
    SSL_CTX *ctx = build_context(err, sizeof(err));
    if (ctx == NULL) {
        fprintf(stderr, "%s\n", err);
        exit(EX_USAGE);
    }
    install_context(ctx);
}

bool tls_refresh_certs(char *err, size_t errlen)
{
    SSL_CTX *ctx = build_context(err, errlen);
    if (ctx == NULL) {
        return false;
    }
    install_context(ctx);
    return true;
}

/* ------------------------------------------------------------------ */
/* a connection's session                                              */

/* A handshake that ends badly after the client said something counts;
 * a bare connect and close (a port probe) does not. */
static void note_failure(conn *c, const char *why)
{
    struct tls_conn *t = c->tls;
    if (t->failed) {
        return;
    }
    t->failed = true;
    if (t->established || BIO_number_read(SSL_get_rbio(t->ssl)) == 0) {
        return;
    }
    atomic_fetch_add_explicit(&handshake_errors, 1, memory_order_relaxed);
    if (settings.verbose > 0) {
        fprintf(stderr, "<%d TLS handshake failed: %s\n", c->sfd, why);
    }
}

/* Asked before a failure can hide it: OpenSSL reports a session in error
 * as not finished. */
static void note_progress(struct tls_conn *t)
{
    if (!t->established && SSL_is_init_finished(t->ssl)) {
        t->established = true;
    }
}

/* errno and the return value conn.c expects from read(2)/sendmsg(2) for
 * an SSL_read/SSL_write that returned rc. */
static ssize_t map_failure(conn *c, int rc)
{
    struct tls_conn *t = c->tls;
    char reason[256];
    int saved_errno = errno;
    int code = SSL_get_error(t->ssl, rc);
    t->wants_write = code == SSL_ERROR_WANT_WRITE;
    switch (code) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        note_progress(t);
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        /* the client said goodbye: once established, a clean end */
        if (!t->established) {
            note_failure(c, "closed by the client");
        }
        return 0;
    case SSL_ERROR_SYSCALL:
        ERR_clear_error();
        if (saved_errno == EINTR) {
            errno = EINTR;
            return -1;
        }
        note_failure(c, saved_errno ? strerror(saved_errno)
                                    : "closed by the client");
        if (saved_errno == 0) {
            return 0;
        }
        errno = saved_errno;
        return -1;
    default:
        note_failure(c, openssl_reason(reason, sizeof(reason)));
        errno = EPROTO;
        return -1;
    }
}

static ssize_t tls_read(conn *c, void *buf, size_t len)
{
    int want = len > INT_MAX ? INT_MAX : (int)len;
    ERR_clear_error();
    errno = 0;
    int rc = SSL_read(c->tls->ssl, buf, want);
    if (rc > 0) {
        c->tls->wants_write = false;
        c->tls->established = true;
        return rc;
    }
    return map_failure(c, rc);
}

/* Gather the iovecs into one buffer so that a reply made of many pieces
 * goes out in few records.  A write that could not finish is retried by
 * conn.c with the same unsent bytes, or more: what OpenSSL asks of a
 * retry. */
static ssize_t tls_sendmsg(conn *c, struct msghdr *msg, int flags)
{
    struct tls_conn *t = c->tls;
    size_t room = settings.tls.wbuf_size;
    if (t->wbuf == NULL) {
        t->wbuf = malloc(room);
        if (t->wbuf == NULL) {
            errno = ENOMEM;
            return -1;
        }
    }
    size_t len = 0;
    for (size_t i = 0; i < msg->msg_iovlen && len < room; i++) {
        size_t take = msg->msg_iov[i].iov_len;
        if (take > room - len) {
            take = room - len;
        }
        memcpy(t->wbuf + len, msg->msg_iov[i].iov_base, take);
        len += take;
    }
    if (len == 0) {
        return 0;
    }
    ERR_clear_error();
    errno = 0;
    int rc = SSL_write(t->ssl, t->wbuf, (int)len);
    if (rc > 0) {
        return rc;
    }
    ssize_t res = map_failure(c, rc);
    if (res == 0) {
        /* the peer is gone: a failed send, never "0 bytes sent" */
        errno = EPIPE;
        res = -1;
    }
    return res;
}

/* The connection closes: say goodbye if the handshake was done, free
 * its session. */
static void tls_end(conn *c)
{
    struct tls_conn *t = c->tls;
    if (t->established && !t->failed) {
        /* one non-blocking try at close_notify; the socket closes next */
        SSL_shutdown(t->ssl);
    }
    ERR_clear_error();
    SSL_free(t->ssl);
    free(t->wbuf);
    free(t);
    c->tls = NULL;
}

static bool tls_has_input(const conn *c)
{
    return SSL_pending(c->tls->ssl) > 0;
}

static bool tls_wants_write(const conn *c)
{
    return c->tls->wants_write;
}

static const struct conn_io_layer tls_layer = {
    .has_input = tls_has_input,
    .wants_write = tls_wants_write,
    .end = tls_end,
};

bool tls_conn_start(conn *c)
{
    struct tls_conn *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return false;
    }
    pthread_mutex_lock(&ctx_lock);
    t->ssl = SSL_new(server_ctx);
    pthread_mutex_unlock(&ctx_lock);
    if (t->ssl == NULL || SSL_set_fd(t->ssl, c->sfd) != 1) {
        if (settings.verbose > 0) {
            fprintf(stderr, "Failed to created the SSL object\n");
        }
        SSL_free(t->ssl);
        free(t);
        ERR_clear_error();
        return false;
    }
    SSL_set_accept_state(t->ssl);
    c->tls = t;
    c->io_read = tls_read;
    c->io_sendmsg = tls_sendmsg;
    c->io_layer = &tls_layer;
    return true;
}

/* ------------------------------------------------------------------ */
/* stats                                                               */

void tls_get_stats(struct tls_stats *out)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    out->handshake_errors = atomic_load_explicit(&handshake_errors,
                                                 memory_order_relaxed);
    out->new_sessions = atomic_load_explicit(&new_sessions,
                                             memory_order_relaxed);
    pthread_mutex_lock(&ctx_lock);
    int64_t ns = (int64_t)(now.tv_sec - ctx_loaded_at.tv_sec) * 1000000000 +
                 (now.tv_nsec - ctx_loaded_at.tv_nsec);
    pthread_mutex_unlock(&ctx_lock);
    out->secs_since_cert_refresh = ns > 0 ? (uint64_t)ns / 1000000000 : 0;
}

void tls_stats_reset(void)
{
    atomic_store_explicit(&handshake_errors, 0, memory_order_relaxed);
    atomic_store_explicit(&new_sessions, 0, memory_order_relaxed);
}
