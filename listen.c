/*
 * listen.c: the listening sockets and accept().
 *
 * Owns opening what -s, or -l/-p/-U, ask for (with the port file the
 * tests read, MEMCACHED_PORT_FILENAME), as memcached does: port 0 is
 * off, -1 any free port; under -Z every TCP listener speaks TLS but
 * those named notls: in -l; each worker gets its own descriptor of a UDP
 * socket.  Under systemd's socket activation the listening sockets it
 * passes take the place of -s's and -l/-p's; the daemon only closes its
 * descriptors of them, never unlinks a path it did not bind.  Then the
 * listener connections, and accepting, which their connection machine
 * (conn.c) is handed at start-up: a new connection is
 * refused at -c (or, under no_maxconns_fast, waits) and otherwise goes to
 * a worker thread, told whether it speaks TLS.  Pausing accept()
 * (descriptors run out, or -c under no_maxconns_fast) is
 * accept_pause.c's, which memcached.c hands listeners_arm and
 * conn_limit_reached.
 *
 * At shutdown it closes them: the listeners first, so that no client is
 * accepted while the workers stop, the UDP sockets once no worker serves
 * them any more (doc/design.md "Stopping").
 *
 * Locks: the listeners and the list of UDP sockets are the main thread's;
 * stats_lock guards the counters it reads and bumps in `stats`.
 */
#include "config.h"
#include "listen.h"
#include "accept_pause.h"
#include "conn.h"
#include "daemon_stats.h"
#include "settings.h"
#include "thread.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sysexits.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

static struct event_base *listen_base;
static conn *listen_conns;
/* UDP sockets, served by every worker (dispatch_udp_socket) */
static int *udp_fds;
static int udp_count;

static void reject_conn(int sfd)
{
    static const char msg[] = "ERROR Too many open connections\r\n";
    ssize_t unused = write(sfd, msg, sizeof(msg) - 1);
    (void)unused;
    close(sfd);
    pthread_mutex_lock(&stats_lock);
    stats.rejected_conns++;
    pthread_mutex_unlock(&stats_lock);
}

bool conn_limit_reached(void)
{
    uint64_t queued = threads_queued_conns();
    pthread_mutex_lock(&stats_lock);
    bool over = stats.curr_conns + queued + stats.reserved_fds >=
                (uint64_t)settings.listen.maxconns - 1;
    pthread_mutex_unlock(&stats_lock);
    return over;
}

/* The accept pause (accept_pause.c) switches the listeners off and on. */
void listeners_arm(bool on)
{
    for (conn *c = listen_conns; c != NULL; c = c->next) {
        if (!on) {
            event_del(&c->event);
        } else if (event_add(&c->event, NULL) == -1) {
            perror("event_add(listener)");
        }
    }
}

/* conn_listening: accept one pending connection and hand it to a worker. */
static void listener_accept(conn *listener)
{
    if (!settings.listen.maxconns_fast && conn_limit_reached()) {
        /* memcached's -c is its descriptor limit: wait for room */
        if (settings.verbose > 0) {
            fprintf(stderr, "Too many open connections\n");
        }
        accept_pause();
        return;
    }
    struct sockaddr_storage addr;
    socklen_t addrlen = sizeof(addr);
    int sfd = accept(listener->sfd, (struct sockaddr *)&addr, &addrlen);
    if (sfd == -1) {
        if (accept_shortage(errno)) {
            if (settings.verbose > 0) {
                perror("Too many open connections");
            }
            accept_pause();
        } else if (errno != EAGAIN && errno != EWOULDBLOCK &&
                   errno != EINTR && errno != ECONNABORTED) {
            perror("accept()");
        }
        return;
    }
    if (fcntl(sfd, F_SETFL, fcntl(sfd, F_GETFL) | O_NONBLOCK) < 0) {
        perror("setting O_NONBLOCK");
        close(sfd);
        return;
    }
    if (settings.listen.maxconns_fast && conn_limit_reached()) {
        reject_conn(sfd);
        return;
    }
    dispatch_conn_new(sfd, conn_new_cmd, EV_READ | EV_PERSIST,
                      READ_BUFFER_SIZE, listener->transport,
                      listener->accepts_tls);
}

static int new_socket(struct addrinfo *ai)
{
    int sfd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (sfd == -1) {
        return -1;
    }
    if (fcntl(sfd, F_SETFL, fcntl(sfd, F_GETFL) | O_NONBLOCK) < 0) {
        perror("setting O_NONBLOCK");
        close(sfd);
        return -1;
    }
    return sfd;
}

static void maximize_sndbuf(int sfd)
{
    int old = 0;
    socklen_t len = sizeof(old);
    if (getsockopt(sfd, SOL_SOCKET, SO_SNDBUF, &old, &len) != 0) {
        return;
    }
    int min = old, max = MAX_SENDBUF_SIZE;
    while (min <= max) {
        int avg = min + (max - min) / 2;
        if (setsockopt(sfd, SOL_SOCKET, SO_SNDBUF, &avg, sizeof(avg)) == 0) {
            min = avg + 1;
        } else {
            max = avg - 1;
        }
    }
}

static void set_socket_options(int sfd, struct addrinfo *ai, bool is_udp)
{
    int on = 1;
    setsockopt(sfd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (ai->ai_family == AF_INET6) {
        setsockopt(sfd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
    }
    if (is_udp) {
        maximize_sndbuf(sfd);
        return;
    }
    setsockopt(sfd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    struct linger ling = { 0, 0 };
    setsockopt(sfd, SOL_SOCKET, SO_LINGER, &ling, sizeof(ling));
    setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

static void remember_udp_fd(int sfd)
{
    int *grown = realloc(udp_fds, sizeof(*udp_fds) * (udp_count + 1));
    if (grown == NULL) {
        fprintf(stderr, "Failed to allocate memory for UDP sockets\n");
        exit(EXIT_FAILURE);
    }
    udp_fds = grown;
    udp_fds[udp_count++] = sfd;
}

/* As memcached does, each worker serving a UDP socket gets its own
 * descriptor for it (a dup): `stats conns` lists one per worker. */
static void add_udp_socket(int sfd)
{
    for (int i = 0; i < settings.num_threads_per_udp; i++) {
        int fd = i == 0 ? sfd : dup(sfd);
        if (fd == -1) {
            perror("dup(udp socket)");
            exit(EX_OSERR);
        }
        remember_udp_fd(fd);
        dispatch_conn_new(fd, conn_read, EV_READ | EV_PERSIST,
                          UDP_READ_BUFFER_SIZE, udp_transport, false);
    }
}

static void add_listener(int sfd, enum network_transport transport,
                         bool tls)
{
    conn *c = conn_new(sfd, conn_listening, EV_READ | EV_PERSIST, 1,
                       transport, listen_base);
    if (c == NULL) {
        fprintf(stderr, "failed to create listening connection\n");
        exit(EXIT_FAILURE);
    }
    c->accepts_tls = tls;
    c->next = listen_conns;
    listen_conns = c;
    if (settings.verbose > 1) {
        fprintf(stderr, "<%d server listening (%s%s)\n", sfd,
                transport == local_transport ? "unix" : "tcp",
                tls ? ", tls" : "");
    }
}

/* Bind every address `host` resolves to (port -1: one the kernel picks);
 * returns 0 on success.  tls: its TCP clients speak TLS. */
static int server_socket(const char *host, int port, bool is_udp, bool tls,
                         FILE *portfile)
{
    struct addrinfo hints = {
        .ai_flags = AI_PASSIVE,
        .ai_family = AF_UNSPEC,
        .ai_socktype = is_udp ? SOCK_DGRAM : SOCK_STREAM,
    };
    char port_buf[NI_MAXSERV];
    snprintf(port_buf, sizeof(port_buf), "%d", port == -1 ? 0 : port);
    struct addrinfo *ai;
    int error = getaddrinfo(host, port_buf, &hints, &ai);
    if (error != 0) {
        if (error != EAI_SYSTEM) {
            fprintf(stderr, "getaddrinfo(): %s\n", gai_strerror(error));
        } else {
            perror("getaddrinfo()");
        }
        return 1;
    }
    bool success = false;
    for (struct addrinfo *next = ai; next != NULL; next = next->ai_next) {
        int sfd = new_socket(next);
        if (sfd == -1) {
            if (errno == EMFILE) {
                perror("server_socket");
                exit(EXIT_FAILURE);
            }
            continue;
        }
        set_socket_options(sfd, next, is_udp);
        if (bind(sfd, next->ai_addr, next->ai_addrlen) == -1) {
            if (errno != EADDRINUSE) {
                perror("bind()");
                close(sfd);
                freeaddrinfo(ai);
                return 1;
            }
            close(sfd);
            continue;
        }
        success = true;
        if (!is_udp && listen(sfd, settings.listen.backlog) == -1) {
            perror("listen()");
            close(sfd);
            freeaddrinfo(ai);
            return 1;
        }
        if (portfile != NULL) {
            struct sockaddr_storage sa;
            socklen_t salen = sizeof(sa);
            if (getsockname(sfd, (struct sockaddr *)&sa, &salen) == 0) {
                int p = ntohs(sa.ss_family == AF_INET
                    ? ((struct sockaddr_in *)&sa)->sin_port
                    : ((struct sockaddr_in6 *)&sa)->sin6_port);
                fprintf(portfile, "%s INET%s: %d\n", is_udp ? "UDP" : "TCP",
                        next->ai_family == AF_INET ? "" : "6", p);
            }
        }
        if (is_udp) {
            add_udp_socket(sfd);
        } else {
            add_listener(sfd, tcp_transport, tls);
        }
    }
    freeaddrinfo(ai);
    return success ? 0 : 1;
}

#define NOTLS_PREFIX "notls:"

/* One -l entry: [notls:]host, host:port or [v6]:port; "*" is any
 * address.  host is cut out of entry in place (NULL for any). */
struct listen_entry {
    char *host;
    int port;
    bool tls;
};

static bool parse_listen_entry(char *entry, int port,
                               struct listen_entry *out)
{
    out->tls = settings.tls.enabled;
    if (strncmp(entry, NOTLS_PREFIX, strlen(NOTLS_PREFIX)) == 0) {
        if (!settings.tls.enabled) {
            fprintf(stderr, "'notls' option is valid only when SSL is "
                    "enabled\n");
            return false;
        }
        out->tls = false;
        entry += strlen(NOTLS_PREFIX);
    }
    out->host = entry;
    out->port = port;
    char *colon = strrchr(entry, ':');
    if (*entry == '[') {
        char *close_br = strchr(entry, ']');
        if (close_br == NULL) {
            fprintf(stderr, "Invalid IPV6 address: \"%s\"\n", entry);
            return false;
        }
        out->host = entry + 1;
        *close_br = '\0';
        colon = close_br[1] == ':' ? close_br + 1 : NULL;
    } else if (colon != NULL && strchr(entry, ':') != colon) {
        colon = NULL; /* bare IPv6 address without port */
    }
    if (colon != NULL) {
        *colon = '\0';
        int32_t parsed;
        if (!safe_strtol(colon + 1, &parsed) || parsed < 0 ||
            parsed > 65535) {
            fprintf(stderr, "Invalid port number: \"%s\"\n", colon + 1);
            return false;
        }
        out->port = parsed;
    }
    if (strcmp(out->host, "*") == 0) {
        out->host = NULL;
    }
    return true;
}

/* -l takes a comma list (and may be repeated); each entry may carry its own
 * port, and under -Z the notls: prefix. */
static int server_sockets(int port, bool is_udp, FILE *portfile)
{
    if (settings.listen.inter == NULL) {
        return server_socket(NULL, port, is_udp, settings.tls.enabled,
                             portfile);
    }
    char *list = strdup(settings.listen.inter);
    if (list == NULL) {
        fprintf(stderr, "Failed to allocate memory for listen list\n");
        return 1;
    }
    int ret = 0;
    char *save = NULL;
    for (char *p = strtok_r(list, ";,", &save); p != NULL;
         p = strtok_r(NULL, ";,", &save)) {
        struct listen_entry e;
        if (!parse_listen_entry(p, port, &e)) {
            free(list);
            return 1;
        }
        ret |= server_socket(e.host, e.port, is_udp, e.tls, portfile);
    }
    free(list);
    return ret;
}

static int server_socket_unix(const char *path, int access_mask)
{
    struct stat tstat;
    if (lstat(path, &tstat) == 0 && S_ISSOCK(tstat.st_mode)) {
        unlink(path);
    }
    int sfd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (sfd == -1) {
        perror("socket()");
        return 1;
    }
    if (fcntl(sfd, F_SETFL, fcntl(sfd, F_GETFL) | O_NONBLOCK) < 0) {
        perror("setting O_NONBLOCK");
        close(sfd);
        return 1;
    }
    int on = 1;
    setsockopt(sfd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof(addr.sun_path)) {
        fprintf(stderr, "unix socket path too long: %s\n", path);
        close(sfd);
        return 1;
    }
    strcpy(addr.sun_path, path);
    mode_t old_umask = umask(~(access_mask & 0777));
    if (bind(sfd, (struct sockaddr *)&addr, sizeof(addr)) == -1) {
        perror("bind()");
        close(sfd);
        umask(old_umask);
        return 1;
    }
    umask(old_umask);
    if (listen(sfd, settings.listen.backlog) == -1) {
        perror("listen()");
        close(sfd);
        return 1;
    }
    add_listener(sfd, local_transport, false);
    return 0;
}

static void open_network_listeners(int port, bool is_udp, FILE *portfile)
{
    errno = 0;
    if (server_sockets(port, is_udp, portfile) != 0) {
        fprintf(stderr, "failed to listen on %s port %d%s%s\n",
                is_udp ? "UDP" : "TCP", port, errno ? ": " : "",
                errno ? strerror(errno) : "");
        exit(EX_OSERR);
    }
}

/* Socket activation (doc/restart.md "Restarts under systemd"): the
 * listening sockets systemd passed to this process (LISTEN_FDS, with
 * LISTEN_PID ours) replace what -s or -l/-p would open, so that clients
 * wait in the socket's backlog while the daemon restarts instead of
 * being refused.  Returns how many there are; exits on one it cannot
 * serve. */
static int open_inherited_listeners(FILE *portfile)
{
    /* 1: the variables go, so nothing this process starts inherits them;
     * the descriptors are marked close-on-exec */
    int n = sd_listen_fds(1);
    if (n < 0) {
        fprintf(stderr, "socket activation: LISTEN_FDS: %s\n",
                strerror(-n));
        exit(EX_OSERR);
    }
    for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + n; fd++) {
        struct sockaddr_storage sa;
        socklen_t salen = sizeof(sa);
        if (sd_is_socket(fd, AF_UNSPEC, SOCK_STREAM, 1) <= 0 ||
            getsockname(fd, (struct sockaddr *)&sa, &salen) != 0) {
            fprintf(stderr, "socket activation: descriptor %d is not a "
                    "listening stream socket (ListenStream= only)\n", fd);
            exit(EX_OSERR);
        }
        /* systemd passes them blocking: one accept() too many would stop
         * the main loop */
        if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
            perror("socket activation: setting O_NONBLOCK");
            exit(EX_OSERR);
        }
        bool local = sa.ss_family == AF_UNIX;
        if (!local && portfile != NULL) {
            int p = ntohs(sa.ss_family == AF_INET
                ? ((struct sockaddr_in *)&sa)->sin_port
                : ((struct sockaddr_in6 *)&sa)->sin6_port);
            fprintf(portfile, "TCP INET%s: %d\n",
                    sa.ss_family == AF_INET ? "" : "6", p);
        }
        add_listener(fd, local ? local_transport : tcp_transport,
                     !local && settings.tls.enabled);
    }
    return n;
}

void listeners_open(struct event_base *base)
{
    listen_base = base;
    conn_set_listener_accept(listener_accept);
    const char *portfile_name = settings.listen.socketpath == NULL
                                ? getenv("MEMCACHED_PORT_FILENAME") : NULL;
    FILE *portfile = NULL;
    char temp_portfile[PATH_MAX];
    if (portfile_name != NULL) {
        snprintf(temp_portfile, sizeof(temp_portfile), "%s.lck",
                 portfile_name);
        portfile = fopen(temp_portfile, "a");
        if (portfile == NULL) {
            fprintf(stderr, "Failed to open \"%s\": %s\n", temp_portfile,
                    strerror(errno));
            exit(EX_OSERR);
        }
    }
    bool inherited = open_inherited_listeners(portfile) > 0;
    if (settings.listen.socketpath != NULL) {
        /* as memcached, -s alone: no TCP, no UDP */
        if (!inherited && server_socket_unix(settings.listen.socketpath,
                                             settings.listen.access) != 0) {
            fprintf(stderr, "failed to listen on UNIX socket: %s\n",
                    settings.listen.socketpath);
            exit(EX_OSERR);
        }
        return;
    }
    /* as memcached: port 0 is off, -1 any free port */
    if (!inherited && settings.listen.port != 0) {
        open_network_listeners(settings.listen.port, false, portfile);
    }
    /* UDP is never refused, so it gains nothing from systemd's sockets */
    if (settings.listen.udpport != 0) {
        open_network_listeners(settings.listen.udpport, true, portfile);
    }
    if (portfile != NULL) {
        fclose(portfile);
        rename(temp_portfile, portfile_name);
    }
}

void listeners_close(void)
{
    while (listen_conns != NULL) {
        conn *c = listen_conns;
        listen_conns = c->next;
        conn_drop(c);
    }
}

void udp_sockets_close(void)
{
    for (int i = 0; i < udp_count; i++) {
        close(udp_fds[i]);
    }
    free(udp_fds);
    udp_fds = NULL;
    udp_count = 0;
}
