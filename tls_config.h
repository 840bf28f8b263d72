/*
 * tls_config.h: the -Z and ssl_* options (settings.tls), apart from the
 * TLS code (tls.h) so that the settings need nothing of the connections.
 * Defaults in tls_config_init (tls_config.c), parsed by settings.c, used
 * by tls.c; written at start-up only.
 */
#ifndef TLS_CONFIG_H
#define TLS_CONFIG_H

#include <stdbool.h>

struct tls_config {
    bool enabled;                 /* -Z */
    char *chain_cert;             /* ssl_chain_cert: PEM chain file */
    char *key;                    /* ssl_key: NULL = in the chain file */
    int verify_mode;              /* ssl_verify_mode, 0-3 */
    int keyformat;                /* ssl_keyformat: 1 PEM, 2 DER */
    char *ciphers;                /* ssl_ciphers: NULL = OpenSSL's */
    char *ca_cert;                /* ssl_ca_cert: PEM CAs for clients */
    unsigned int wbuf_size;       /* ssl_wbuf_size, in bytes */
    bool session_cache;           /* ssl_session_cache */
    bool kernel_tls;              /* ssl_kernel_tls */
    int min_version;              /* ssl_min_version, 0-3 (tlsv1.0-1.3) */
    bool any_option;              /* some ssl_* sub-option was given */
};

#define TLS_VERIFY_MODE_MAX 3
#define TLS_MIN_VERSION_MAX 3

/* memcached's defaults */
void tls_config_init(struct tls_config *tc);

#endif
