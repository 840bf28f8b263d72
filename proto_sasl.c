/*
 * proto_sasl.c: SASL authentication (-S) through Cyrus libsasl2, set up
 * as memcached 1.6.18 sets it up (doc/protocol.md "SASL"):
 *
 *  - the service is "memcached", the server's name its host name;
 *  - Cyrus reads its options (mech_list, sasldb_path, ...) from
 *    memcached.conf in the directory named by SASL_CONF_PATH, or else in
 *    /etc/sasl or /etc/sasl2 where such a file exists; with none the
 *    server does not start, as memcached does not;
 *  - MEMCACHED_SASL_PWDB names a file of user:password lines against
 *    which plaintext mechanisms (PLAIN) check passwords before Cyrus's
 *    own password stores, memcached's sasl_pwdb convention.
 *
 * Owns the Cyrus server initialisation, each connection's Cyrus state
 * (made at its first SASL command, gone when it closes), the password
 * file check and how long a response Cyrus may be given.  The SASL
 * opcodes themselves are proto_bin.c's.
 *
 * Locks: none.  Cyrus is initialised on the main thread before the
 * workers exist; afterwards each connection's state is used only by the
 * worker that owns it, and the password file is re-read, read-only, at
 * each check.
 */
#include "config.h"
#include "proto_sasl.h"
#include "settings.h"
#include "util.h"

#include <sasl/sasl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define SASL_APP_NAME "memcached"

static char server_name[256];
static const char *pwdb_path;      /* MEMCACHED_SASL_PWDB, or NULL */
static char conf_dir[4096];

/* Where Cyrus finds memcached.conf: SASL_CONF_PATH, else the first of
 * memcached's two default directories that has one. */
static const char *find_conf_dir(void)
{
    static const char *const defaults[] = { "/etc/sasl", "/etc/sasl2" };
    const char *env = getenv("SASL_CONF_PATH");

    if (env != NULL) {
        return env;
    }
    for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
        char file[64];
        snprintf(file, sizeof(file), "%s/" SASL_APP_NAME ".conf",
                 defaults[i]);
        if (access(file, F_OK) == 0) {
            return defaults[i];
        }
    }
    return NULL;
}

/* Cyrus asks once, at sasl_server_init; it does not free the answer. */
static int conf_path_callback(void *context, char **path)
{
    *path = conf_dir;
    return SASL_OK;
}

static int log_callback(void *context, int level, const char *message)
{
    if (settings.verbose > 0) {
        fprintf(stderr, "SASL (severity %d): %s\n", level, message);
    }
    return SASL_OK;
}

/* Does line ("user:password", its end of line stripped) grant user? */
static bool pwdb_line_matches(const char *line, size_t len,
                              const char *user, const char *pass,
                              unsigned passlen)
{
    const char *colon = memchr(line, ':', len);
    size_t ulen = strlen(user);

    if (colon == NULL || (size_t)(colon - line) != ulen
        || memcmp(line, user, ulen) != 0) {
        return false;
    }
    return same_bytes_slow(colon + 1, len - ulen - 1, pass, passlen);
}

static int pwdb_checkpass(sasl_conn_t *sconn, void *context,
                          const char *user, const char *pass,
                          unsigned passlen, struct propctx *propctx)
{
    FILE *f = fopen(pwdb_path, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    bool granted = false;

    if (f == NULL) {
        if (settings.verbose > 0) {
            fprintf(stderr, "Cannot open MEMCACHED_SASL_PWDB %s\n",
                    pwdb_path);
        }
        return SASL_NOUSER;
    }
    while (!granted && (len = getline(&line, &cap, f)) > 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) {
            len--;
        }
        granted = pwdb_line_matches(line, (size_t)len, user, pass, passlen);
    }
    free(line);
    fclose(f);
    return granted ? SASL_OK : SASL_NOUSER;
}

/* Cyrus keeps a pointer to the list: it must outlive the server. */
static sasl_callback_t callbacks[4];

/* Cyrus's callback records hold every callback as int (*)(void); the
 * detour through void (*)(void) says the cast is meant. */
#define SASL_PROC(fn) ((int (*)(void))(void (*)(void))(fn))

static void build_callbacks(void)
{
    int n = 0;

    callbacks[n++] = (sasl_callback_t){ SASL_CB_GETCONFPATH,
                                        SASL_PROC(conf_path_callback), NULL };
    callbacks[n++] = (sasl_callback_t){ SASL_CB_LOG,
                                        SASL_PROC(log_callback), NULL };
    if (pwdb_path != NULL) {
        callbacks[n++] = (sasl_callback_t){ SASL_CB_SERVER_USERDB_CHECKPASS,
                                            SASL_PROC(pwdb_checkpass),
                                            NULL };
    }
    callbacks[n] = (sasl_callback_t){ SASL_CB_LIST_END, NULL, NULL };
}

void auth_sasl_init(void)
{
    const char *dir = find_conf_dir();

    if (dir == NULL) {
        fprintf(stderr, "SASL: no configuration: set SASL_CONF_PATH to a "
                "directory holding " SASL_APP_NAME ".conf, or create "
                "/etc/sasl2/" SASL_APP_NAME ".conf\n"
                "Error initializing sasl.\n");
        exit(EXIT_FAILURE);
    }
    snprintf(conf_dir, sizeof(conf_dir), "%s", dir);
    if (settings.verbose > 0) {
        fprintf(stderr, "Reading configuration from: <%s>\n", conf_dir);
    }
    pwdb_path = getenv("MEMCACHED_SASL_PWDB");
    if (gethostname(server_name, sizeof(server_name) - 1) != 0) {
        server_name[0] = '\0';
    }
    build_callbacks();
    if (sasl_server_init(callbacks, SASL_APP_NAME) != SASL_OK) {
        fprintf(stderr, "Error initializing sasl.\n");
        exit(EXIT_FAILURE);
    }
    if (settings.verbose > 0) {
        fprintf(stderr, "Initialized SASL.\n");
    }
}

/* libsasl2 (2.1.28) keeps for good, at each failed login, a user name
 * longer than its 1024-byte canonical-name buffer: about the name's
 * length per attempt, so a client retrying with 60,000-byte names grows
 * the server without bound (as it grows memcached).  A response of at
 * most 1024 bytes cannot hold such a name, and no real one needs more:
 * PLAIN's is authorization id, user name and password.  The Kerberos
 * mechanisms carry a ticket, often several KB, whose names Kerberos
 * checks before Cyrus takes them; they get more room.  Items are bounded
 * by -I anyway, which is the only limit memcached puts on them. */
#define SASL_TOKEN_MAX 1024
#define SASL_TICKET_TOKEN_MAX (64 * 1024)

unsigned auth_sasl_token_max(const char *mech, size_t nmech)
{
    bool kerberos = (nmech >= 3 && strncasecmp(mech, "GSS", 3) == 0)
                    || (nmech >= 4 && strncasecmp(mech, "GS2-", 4) == 0);
    return kerberos ? SASL_TICKET_TOKEN_MAX : SASL_TOKEN_MAX;
}

static sasl_conn_t *conn_sasl(conn *c)
{
    if (c->sasl_conn == NULL) {
        sasl_conn_t *sc = NULL;
        if (sasl_server_new(SASL_APP_NAME, server_name, NULL, NULL, NULL,
                            NULL, 0, &sc) != SASL_OK) {
            if (settings.verbose > 0) {
                fprintf(stderr, "Failed to initialize SASL conn.\n");
            }
            return NULL;
        }
        c->sasl_conn = sc;
    }
    return c->sasl_conn;
}

bool auth_sasl_mechs(conn *c, const char **list, unsigned *len)
{
    sasl_conn_t *sc = conn_sasl(c);

    return sc != NULL && sasl_listmech(sc, NULL, "", " ", "", list, len,
                                       NULL) == SASL_OK;
}

enum auth_sasl_result auth_sasl_exchange(conn *c, bool start,
                                         const char *mech,
                                         const char *data, unsigned len,
                                         const char **out,
                                         unsigned *outlen)
{
    sasl_conn_t *sc = conn_sasl(c);
    int rc;

    *out = NULL;
    *outlen = 0;
    if (sc == NULL) {
        return AUTH_SASL_FAILED;
    }
    if (start) {
        rc = sasl_server_start(sc, mech, data, len, out, outlen);
        c->sasl_started = rc == SASL_OK || rc == SASL_CONTINUE;
    } else if (c->sasl_started) {
        rc = sasl_server_step(sc, data, len, out, outlen);
    } else {
        rc = SASL_BADPROT;      /* a step with no exchange begun */
    }
    if (settings.verbose > 0) {
        fprintf(stderr, "sasl result code:  %d\n", rc);
    }
    if (rc == SASL_OK) {
        return AUTH_SASL_OK;
    }
    return rc == SASL_CONTINUE ? AUTH_SASL_CONTINUE : AUTH_SASL_FAILED;
}

void auth_sasl_release(conn *c)
{
    if (c->sasl_conn != NULL) {
        sasl_conn_t *sc = c->sasl_conn;
        sasl_dispose(&sc);
        c->sasl_conn = NULL;
    }
    c->sasl_started = false;
}
