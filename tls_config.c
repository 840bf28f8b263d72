/*
 * tls_config.c: memcached's defaults for the -Z and ssl_* options
 * (tls_config.h).  Start-up only, no locks.
 */
#include "config.h"
#include "tls_config.h"

#include <openssl/ssl.h>
#include <string.h>

#define TLS_WBUF_DEFAULT (16 * 1024)

void tls_config_init(struct tls_config *tc)
{
    memset(tc, 0, sizeof(*tc));
    tc->keyformat = SSL_FILETYPE_PEM;
    tc->wbuf_size = TLS_WBUF_DEFAULT;
    tc->min_version = 2;
}
