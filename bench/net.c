/*
 * net.c - owns tcload's network engine: connecting (TCP or unix socket),
 * one epoll loop per thread over non-blocking sockets, pipelined request
 * issue in closed loop or open loop (latency from the intended send
 * time), reply parsing in the text or the binary protocol (framing in
 * binproto.c) with every value checked against the stored pattern,
 * plain or TLS sockets (tlsio.c), set-on-miss, error accounting by kind
 * and the per-connection / hard time limits.
 */
#define _GNU_SOURCE
#include "tcload.h"
#include "binproto.h"
#include "tlsio.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

const char *const err_names[E_N] = {
    "error", "client_error", "server_error", "not_stored", "other_reply",
    "bad_value", "protocol", "conn_closed", "connect", "timeout", "lost"
};

volatile int g_interrupted;

enum { PS_LINE, PS_DATA, PS_END };

typedef struct {
    uint64_t key;
    uint64_t t_start;
    uint8_t op;
    uint8_t from_miss;
    uint8_t kind;                 /* KIND_* */
} req_t;

typedef struct conn {
    int id, fd, dead, want_out;
    tlsio_t *tls;                 /* NULL: a plain socket */
    rng_t rng;
    uint64_t quota, issued;
    uint64_t pre_next;            /* preload: next key, step = conns */
    uint64_t uniq;                /* one-hit keys issued, whole run */
    req_t *ring;
    unsigned head, count, cap, depth;
    char *obuf;
    size_t olen, ooff, ocap;
    char *ibuf;
    size_t ilen, ioff, icap;
    int pstate;
    size_t vlen;
    uint64_t next_due, interval;
    uint64_t *pend;               /* set-on-miss keys, FIFO */
    unsigned pend_head, pend_n, pend_cap;
    uint64_t last_progress;
} conn_t;

typedef struct {
    config_t *cfg;
    phase_t *ph;
    int stage;
    conn_t **conns;
    int nconns;
    int epfd, tfd;
    int stopping;
    uint64_t t0, stop_at, t_end;
    stats_t st;
    char *tbuf;
    size_t tlen;
} thr_t;

static conn_t *g_conns;
static int g_nconns;
static char *g_valbuf;
static size_t g_valcap;
static pthread_mutex_t g_trace_lock = PTHREAD_MUTEX_INITIALIZER;

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) {
        fprintf(stderr, "tcload: out of memory\n");
        exit(1);
    }
    return q;
}

/* ---- connecting ---- */

static int connect_one(config_t *cfg, char *msg, size_t msglen)
{
    int fd = -1;
    if (cfg->unix_path) {
        struct sockaddr_un sa;
        memset(&sa, 0, sizeof(sa));
        sa.sun_family = AF_UNIX;
        if (strlen(cfg->unix_path) >= sizeof(sa.sun_path)) {
            snprintf(msg, msglen, "unix socket path too long");
            return -1;
        }
        strcpy(sa.sun_path, cfg->unix_path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            snprintf(msg, msglen, "connect %s: %s", cfg->unix_path,
                     strerror(errno));
            if (fd >= 0)
                close(fd);
            return -1;
        }
    } else {
        char host[256];
        const char *hp = cfg->host_port;
        const char *colon = strrchr(hp, ':');
        if (!colon || colon == hp || strlen(hp) >= sizeof(host)) {
            snprintf(msg, msglen, "bad -s '%s' (want host:port)", hp);
            return -1;
        }
        size_t hl = (size_t)(colon - hp);
        memcpy(host, hp, hl);
        host[hl] = '\0';
        if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
            memmove(host, host + 1, hl - 2);
            host[hl - 2] = '\0';
        }
        struct addrinfo hints, *res = NULL, *ai;
        memset(&hints, 0, sizeof(hints));
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_family = AF_UNSPEC;
        int rc = getaddrinfo(host, colon + 1, &hints, &res);
        if (rc != 0) {
            snprintf(msg, msglen, "resolve %s: %s", hp, gai_strerror(rc));
            return -1;
        }
        int err = 0;
        for (ai = res; ai; ai = ai->ai_next) {
            fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                        ai->ai_protocol);
            if (fd < 0) {
                err = errno;
                continue;
            }
            if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
                break;
            err = errno;
            close(fd);
            fd = -1;
        }
        freeaddrinfo(res);
        if (fd < 0) {
            snprintf(msg, msglen, "connect %s: %s", hp, strerror(err));
            return -1;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    return fd;
}

static void set_io_timeout(int fd, double seconds)
{
    struct timeval tv;
    tv.tv_sec = (time_t)seconds;
    tv.tv_usec = (suseconds_t)((seconds - (double)tv.tv_sec) * 1e6);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* a connected socket becomes the connection's, after its TLS handshake
 * when TLS is on (made while the socket still blocks, for --timeout at
 * most: a server that stalls it fails the connection) */
static int conn_attach(config_t *cfg, conn_t *c, int fd)
{
    if (cfg->tls) {
        set_io_timeout(fd, cfg->idle_timeout);
        c->tls = tlsio_connect(fd, cfg->connect_msg,
                               sizeof(cfg->connect_msg));
        if (!c->tls) {
            close(fd);
            return -1;
        }
        set_io_timeout(fd, 0);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    c->fd = fd;
    return 0;
}

int engine_open(config_t *cfg)
{
    g_nconns = cfg->conns;
    g_conns = calloc((size_t)g_nconns, sizeof(conn_t));
    if (!g_conns)
        return -1;
    if (cfg->tls && tlsio_init(cfg->tls_ca, cfg->tls_cert, cfg->tls_key,
                               cfg->connect_msg,
                               sizeof(cfg->connect_msg)) < 0)
        return -1;
    int ok = 0;
    for (int i = 0; i < g_nconns; i++) {
        conn_t *c = &g_conns[i];
        c->id = i;
        c->fd = -1;
        int fd = connect_one(cfg, cfg->connect_msg, sizeof(cfg->connect_msg));
        if (fd < 0 || conn_attach(cfg, c, fd) < 0) {
            c->dead = 1;
            cfg->connect_errors++;
        } else {
            ok++;
        }
    }
    /* the value bytes: one shared pattern as large as the largest value */
    size_t maxv = 1;
    for (int p = 0; p < cfg->nphases; p++) {
        size_t m = dataset_max_size(&cfg->phases[p].ds);
        if (m > maxv)
            maxv = m;
    }
    g_valcap = maxv;
    g_valbuf = xrealloc(NULL, g_valcap);
    for (size_t i = 0; i < g_valcap; i++)
        g_valbuf[i] = (char)('a' + i % 26);
    return ok ? 0 : -1;
}

void engine_close(config_t *cfg)
{
    for (int i = 0; i < g_nconns; i++) {
        conn_t *c = &g_conns[i];
        tlsio_close(c->tls, !c->dead);
        if (c->fd >= 0 && !c->dead)
            close(c->fd);
        free(c->ring);
        free(c->obuf);
        free(c->ibuf);
        free(c->pend);
    }
    free(g_conns);
    free(g_valbuf);
    g_conns = NULL;
    if (cfg->tls)
        tlsio_cleanup();
}

/* ---- helpers ---- */

static void conn_kill(thr_t *t, conn_t *c, int kind, const char *why)
{
    if (c->dead)
        return;
    t->st.err[kind]++;
    t->st.err[E_LOST] += c->count;
    if (why && !t->st.first_err[0])
        snprintf(t->st.first_err, sizeof(t->st.first_err), "conn %d: %s",
                 c->id, why);
    tlsio_close(c->tls, 0);
    c->tls = NULL;
    close(c->fd);
    c->fd = -1;
    c->dead = 1;
    c->count = 0;
    c->pend_n = 0;
    c->olen = c->ooff = 0;
}

static void obuf_reserve(conn_t *c, size_t n)
{
    if (c->ooff > 0 && c->ooff == c->olen)
        c->ooff = c->olen = 0;
    if (c->olen + n <= c->ocap)
        return;
    if (c->ooff > 0) {
        memmove(c->obuf, c->obuf + c->ooff, c->olen - c->ooff);
        c->olen -= c->ooff;
        c->ooff = 0;
        if (c->olen + n <= c->ocap)
            return;
    }
    size_t cap = c->ocap ? c->ocap : 16384;
    while (cap < c->olen + n)
        cap *= 2;
    c->obuf = xrealloc(c->obuf, cap);
    c->ocap = cap;
}

static char *put_u64(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

int format_key(char *out, char ns, uint64_t id)
{
    out[0] = ns;
    for (int i = 9; i >= 1; i--) {
        out[i] = (char)('0' + id % 10);
        id /= 10;
    }
    return 10;
}

static void trace_line(thr_t *t, int op, uint64_t key, uint32_t size)
{
    if (!t->cfg->trace)
        return;
    if (t->tlen + 64 > 65536) {
        pthread_mutex_lock(&g_trace_lock);
        fwrite(t->tbuf, 1, t->tlen, t->cfg->trace);
        pthread_mutex_unlock(&g_trace_lock);
        t->tlen = 0;
    }
    t->tlen += (size_t)sprintf(t->tbuf + t->tlen, "%c %llu %u\n",
                               op == OP_GET ? 'G' : 'S',
                               (unsigned long long)key, size);
}

/* a binary request; its opaque is the key id, which the reply echoes */
static char *issue_bin(thr_t *t, conn_t *c, int op, uint64_t key)
{
    phase_t *ph = t->ph;
    char k[16];
    uint16_t kl = (uint16_t)format_key(k, ph->ns, key);
    if (op == OP_GET) {
        obuf_reserve(c, BIN_HEADER_LEN + kl);
        char *p = c->obuf + c->olen;
        return p + bin_get_request(p, k, kl, (uint32_t)key);
    }
    uint32_t vs = dataset_value_size(&ph->ds, key);
    if (vs > g_valcap)
        vs = (uint32_t)g_valcap;
    obuf_reserve(c, BIN_HEADER_LEN + BIN_SET_EXTRAS + kl + (size_t)vs);
    char *p = c->obuf + c->olen;
    return p + bin_set_request(p, k, kl, g_valbuf, vs, (uint32_t)key);
}

static void issue(thr_t *t, conn_t *c, int op, uint64_t key, uint64_t ts,
                  int from_miss, int kind)
{
    phase_t *ph = t->ph;
    char *p;
    if (t->cfg->protocol == PROTO_BINARY) {
        p = issue_bin(t, c, op, key);
    } else if (op == OP_GET) {
        obuf_reserve(c, 16);
        p = c->obuf + c->olen;
        memcpy(p, "get ", 4);
        p += 4;
        p += format_key(p, ph->ns, key);
        *p++ = '\r';
        *p++ = '\n';
    } else {
        uint32_t vs = dataset_value_size(&ph->ds, key);
        if (vs > g_valcap)
            vs = (uint32_t)g_valcap;
        obuf_reserve(c, 48 + (size_t)vs);
        p = c->obuf + c->olen;
        memcpy(p, "set ", 4);
        p += 4;
        p += format_key(p, ph->ns, key);
        memcpy(p, " 0 0 ", 5);
        p += 5;
        p = put_u64(p, vs);
        *p++ = '\r';
        *p++ = '\n';
        memcpy(p, g_valbuf, vs);
        p += vs;
        *p++ = '\r';
        *p++ = '\n';
    }
    t->st.bytes_out += (uint64_t)(p - (c->obuf + c->olen));
    c->olen = (size_t)(p - c->obuf);
    unsigned slot = (c->head + c->count) % c->cap;
    c->ring[slot].key = key;
    c->ring[slot].t_start = ts;
    c->ring[slot].op = (uint8_t)op;
    c->ring[slot].from_miss = (uint8_t)from_miss;
    c->ring[slot].kind = (uint8_t)kind;
    if (kind == KIND_ONE_HIT)
        t->st.one_hit++;
    if (c->count == 0)
        c->last_progress = now_ns();
    c->count++;
    t->st.sent[op]++;
    if (from_miss)
        t->st.set_on_miss++;
}

static void conn_fill(thr_t *t, conn_t *c, uint64_t now)
{
    phase_t *ph = t->ph;
    while (!c->dead && c->count < c->depth) {
        if (c->pend_n) {
            uint64_t key = c->pend[c->pend_head];
            c->pend_head = (c->pend_head + 1) % c->pend_cap;
            c->pend_n--;
            issue(t, c, OP_SET, key, now, 1, KIND_STREAM);
            continue;
        }
        if (t->stopping || c->issued >= c->quota)
            break;
        if (t->stage == STAGE_PRELOAD) {
            issue(t, c, OP_SET, c->pre_next, now, 0, KIND_STREAM);
            c->pre_next += (uint64_t)g_nconns;
            c->issued++;
            continue;
        }
        uint64_t ts = now;
        if (c->interval) {
            if (c->next_due > now)
                break;
            ts = c->next_due;
            c->next_due += c->interval;
        }
        int op, kind;
        uint64_t key;
        phase_next(ph, &c->rng, c->id, g_nconns, &c->uniq, &op, &key, &kind);
        if (t->cfg->trace)
            trace_line(t, op, key, dataset_value_size(&ph->ds, key));
        issue(t, c, op, key, ts, 0, kind);
        c->issued++;
    }
}

static void conn_set_out(thr_t *t, conn_t *c, int want)
{
    if (c->dead || c->want_out == want)
        return;
    struct epoll_event ev;
    ev.events = EPOLLIN | (want ? EPOLLOUT : 0);
    ev.data.ptr = c;
    epoll_ctl(t->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = want;
}

static ssize_t conn_send(conn_t *c, const char *buf, size_t len)
{
    if (c->tls)
        return tlsio_send(c->tls, buf, len);
    return send(c->fd, buf, len, MSG_NOSIGNAL);
}

static ssize_t conn_recv(conn_t *c, char *buf, size_t len)
{
    if (c->tls)
        return tlsio_recv(c->tls, buf, len);
    return recv(c->fd, buf, len, 0);
}

static void conn_flush(thr_t *t, conn_t *c)
{
    while (!c->dead && c->ooff < c->olen) {
        ssize_t n = conn_send(c, c->obuf + c->ooff, c->olen - c->ooff);
        if (n > 0) {
            c->ooff += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            conn_set_out(t, c, 1);
            return;
        }
        conn_kill(t, c, E_CLOSED, n < 0 ? strerror(errno) : "send failed");
        return;
    }
    if (c->ooff == c->olen)
        c->ooff = c->olen = 0;
    conn_set_out(t, c, 0);
}

static void complete(thr_t *t, conn_t *c, uint64_t now, int result)
{
    /* result: 0 ok/hit, 1 miss, 2 error (already counted) */
    req_t *rq = &c->ring[c->head];
    uint64_t lat = now > rq->t_start ? now - rq->t_start : 0;
    t->st.done[rq->op]++;
    hist_add(&t->st.lat[0], lat);
    hist_add(&t->st.lat[1 + rq->op], lat);
    if (rq->kind == KIND_ABSENT && result != 2) {
        /* not in hits or misses: the hit ratio is the stream's */
        t->st.absent++;
        t->st.absent_hits += result == 0;
        result = 2;
    }
    if (rq->op == OP_GET && result == 0)
        t->st.hits++;
    if (rq->op == OP_GET && result == 1) {
        t->st.misses++;
        if (t->ph->set_on_miss && !t->stopping) {
            if (c->pend_n == c->pend_cap) {
                unsigned ncap = c->pend_cap ? c->pend_cap * 2 : 64;
                uint64_t *np = xrealloc(NULL, ncap * sizeof(uint64_t));
                for (unsigned i = 0; i < c->pend_n; i++)
                    np[i] = c->pend[(c->pend_head + i) % c->pend_cap];
                free(c->pend);
                c->pend = np;
                c->pend_cap = ncap;
                c->pend_head = 0;
            }
            c->pend[(c->pend_head + c->pend_n) % c->pend_cap] = rq->key;
            c->pend_n++;
        }
    }
    c->head = (c->head + 1) % c->cap;
    c->count--;
    c->last_progress = now;
}

static int line_is(const char *l, size_t len, const char *w)
{
    size_t wl = strlen(w);
    return len == wl && memcmp(l, w, wl) == 0;
}

static int line_starts(const char *l, size_t len, const char *w)
{
    size_t wl = strlen(w);
    return len >= wl && memcmp(l, w, wl) == 0;
}

/* an error-ish reply line; returns its kind */
static int classify(const char *l, size_t len)
{
    if (line_starts(l, len, "SERVER_ERROR"))
        return E_SERVER;
    if (line_starts(l, len, "CLIENT_ERROR"))
        return E_CLIENT;
    if (line_is(l, len, "ERROR"))
        return E_ERROR;
    if (line_is(l, len, "NOT_STORED"))
        return E_NOT_STORED;
    if (line_is(l, len, "EXISTS") || line_is(l, len, "NOT_FOUND") ||
        line_is(l, len, "STORED") || line_is(l, len, "DELETED"))
        return E_OTHER_REPLY;
    return E_PROTOCOL;
}

static void note_err(thr_t *t, conn_t *c, int kind, const char *l, size_t len)
{
    t->st.err[kind]++;
    if (!t->st.first_err[0])
        snprintf(t->st.first_err, sizeof(t->st.first_err), "conn %d: %.*s",
                 c->id, (int)(len > 120 ? 120 : len), l);
}

/* every value tcload stores is a prefix of g_valbuf's pattern, whatever
 * the dataset, so a value that is not one was corrupted on the way */
static void check_value(thr_t *t, conn_t *c, const char *v, size_t len)
{
    if (len <= g_valcap && memcmp(v, g_valbuf, len) == 0)
        return;
    static const char why[] = "a value differs from the stored pattern";
    note_err(t, c, E_BAD_VALUE, why, sizeof(why) - 1);
}

/* room for a reply of need bytes in the input buffer */
static void ibuf_fit(conn_t *c, size_t need)
{
    if (c->icap >= need + 4096)
        return;
    size_t rest = c->ilen - c->ioff;
    memmove(c->ibuf, c->ibuf + c->ioff, rest);
    c->ilen = rest;
    c->ioff = 0;
    c->icap = need + 65536;
    c->ibuf = xrealloc(c->ibuf, c->icap);
}

static int bin_status_kind(uint16_t status)
{
    switch (status) {
    case BIN_STATUS_NOT_STORED: return E_NOT_STORED;
    case BIN_STATUS_UNKNOWN_COMMAND: return E_ERROR;
    case BIN_STATUS_EINVAL:
    case BIN_STATUS_TOO_LARGE: return E_CLIENT;
    default: return status >= 0x80 ? E_SERVER : E_OTHER_REPLY;
    }
}

/* a binary reply that is not a success or a GET miss */
static void note_bin_err(thr_t *t, conn_t *c, const bin_reply_t *r,
                         const char *body)
{
    char msg[160];
    uint32_t ml = r->bodylen - r->extlen - r->keylen;
    snprintf(msg, sizeof(msg), "binary status 0x%04x: %.*s", r->status,
             (int)(ml > 100 ? 100 : ml), body + r->extlen + r->keylen);
    note_err(t, c, bin_status_kind(r->status), msg, strlen(msg));
}

/* one complete binary reply, the answer to the oldest request */
static int conn_bin_reply(thr_t *t, conn_t *c, const bin_reply_t *r,
                          const char *body, uint64_t now)
{
    req_t *rq = &c->ring[c->head];
    uint8_t want = rq->op == OP_GET ? BIN_OP_GET : BIN_OP_SET;
    if (r->opcode != want || r->opaque != (uint32_t)rq->key) {
        conn_kill(t, c, E_PROTOCOL, "binary reply out of step (opcode or "
                  "opaque is not the oldest request's)");
        return -1;
    }
    if (r->status == BIN_STATUS_OK && rq->op == OP_GET) {
        if (r->extlen != 4) {
            conn_kill(t, c, E_PROTOCOL, "GET reply without 4 bytes of flags");
            return -1;
        }
        check_value(t, c, body + r->extlen + r->keylen,
                    r->bodylen - r->extlen - r->keylen);
        complete(t, c, now, 0);
    } else if (r->status == BIN_STATUS_OK) {
        complete(t, c, now, 0);
    } else if (r->status == BIN_STATUS_NOT_FOUND && rq->op == OP_GET) {
        complete(t, c, now, 1);
    } else {
        note_bin_err(t, c, r, body);
        complete(t, c, now, 2);
    }
    return 0;
}

static void conn_parse_bin(thr_t *t, conn_t *c, uint64_t now)
{
    while (!c->dead) {
        const unsigned char *buf = (unsigned char *)c->ibuf + c->ioff;
        size_t avail = c->ilen - c->ioff;
        if (avail == 0)
            return;
        if (c->count == 0) {
            conn_kill(t, c, E_PROTOCOL, "binary reply to no request");
            return;
        }
        if (avail < BIN_HEADER_LEN)
            return;
        bin_reply_t r;
        if (bin_reply_header(buf, &r) < 0 || r.bodylen > (1u << 31)) {
            conn_kill(t, c, E_PROTOCOL, "not a binary reply header");
            return;
        }
        size_t frame = BIN_HEADER_LEN + (size_t)r.bodylen;
        if (avail < frame) {
            ibuf_fit(c, frame);
            return;
        }
        c->ioff += frame;
        if (conn_bin_reply(t, c, &r, (const char *)buf + BIN_HEADER_LEN,
                           now) < 0)
            return;
    }
}

/* parse every complete reply in the input buffer */
static void conn_parse(thr_t *t, conn_t *c, uint64_t now)
{
    if (t->cfg->protocol == PROTO_BINARY) {
        conn_parse_bin(t, c, now);
        return;
    }
    while (!c->dead) {
        char *buf = c->ibuf + c->ioff;
        size_t avail = c->ilen - c->ioff;
        if (avail == 0)
            return;
        if (c->count == 0) {
            note_err(t, c, E_PROTOCOL, buf, avail);
            conn_kill(t, c, E_PROTOCOL, NULL);
            return;
        }
        req_t *rq = &c->ring[c->head];
        if (c->pstate == PS_DATA) {
            if (avail < c->vlen + 2)
                return;
            if (buf[c->vlen] != '\r' || buf[c->vlen + 1] != '\n') {
                conn_kill(t, c, E_PROTOCOL, "value not followed by CRLF");
                return;
            }
            check_value(t, c, buf, c->vlen);
            c->ioff += c->vlen + 2;
            c->pstate = PS_END;
            continue;
        }
        char *nl = memchr(buf, '\n', avail);
        if (!nl) {
            if (avail > 65536)
                conn_kill(t, c, E_PROTOCOL, "reply line too long");
            return;
        }
        size_t len = (size_t)(nl - buf);
        c->ioff += len + 1;
        if (len && buf[len - 1] == '\r')
            len--;
        if (rq->op == OP_GET && c->pstate == PS_LINE) {
            if (line_is(buf, len, "END")) {
                complete(t, c, now, 1);
            } else if (line_starts(buf, len, "VALUE ")) {
                /* VALUE <key> <flags> <bytes> [<cas>] */
                char tmp[256];
                unsigned long long flags, bytes;
                char kbuf[251];
                size_t cl = len < sizeof(tmp) - 1 ? len : sizeof(tmp) - 1;
                memcpy(tmp, buf, cl);
                tmp[cl] = '\0';
                if (sscanf(tmp, "VALUE %250s %llu %llu", kbuf, &flags,
                           &bytes) != 3 || bytes > (1ULL << 31)) {
                    note_err(t, c, E_PROTOCOL, buf, len);
                    conn_kill(t, c, E_PROTOCOL, NULL);
                    return;
                }
                c->vlen = (size_t)bytes;
                c->pstate = PS_DATA;
                ibuf_fit(c, c->vlen);
            } else {
                int k = classify(buf, len);
                note_err(t, c, k, buf, len);
                if (k == E_PROTOCOL) {
                    conn_kill(t, c, E_PROTOCOL, NULL);
                    return;
                }
                complete(t, c, now, 2);
            }
        } else if (rq->op == OP_GET) {          /* PS_END */
            if (!line_is(buf, len, "END")) {
                note_err(t, c, E_PROTOCOL, buf, len);
                conn_kill(t, c, E_PROTOCOL, NULL);
                return;
            }
            c->pstate = PS_LINE;
            complete(t, c, now, 0);
        } else {
            if (line_is(buf, len, "STORED")) {
                complete(t, c, now, 0);
            } else {
                int k = classify(buf, len);
                if (k == E_OTHER_REPLY && line_is(buf, len, "STORED"))
                    k = E_PROTOCOL;
                note_err(t, c, k, buf, len);
                if (k == E_PROTOCOL) {
                    conn_kill(t, c, E_PROTOCOL, NULL);
                    return;
                }
                complete(t, c, now, 2);
            }
        }
    }
}

static void conn_read(thr_t *t, conn_t *c)
{
    for (;;) {
        if (c->ioff > 0 && (c->ioff == c->ilen || c->icap - c->ilen < 16384)) {
            memmove(c->ibuf, c->ibuf + c->ioff, c->ilen - c->ioff);
            c->ilen -= c->ioff;
            c->ioff = 0;
        }
        if (c->icap - c->ilen < 16384) {
            c->icap = c->icap ? c->icap * 2 : 65536;
            c->ibuf = xrealloc(c->ibuf, c->icap);
        }
        ssize_t n = conn_recv(c, c->ibuf + c->ilen, c->icap - c->ilen);
        if (n > 0) {
            c->ilen += (size_t)n;
            t->st.bytes_in += (uint64_t)n;
            conn_parse(t, c, now_ns());
            /* TLS reads one record at a time and may hold decrypted bytes
             * that epoll cannot see: read on until it would block */
            if (c->dead || (!c->tls && (size_t)n < 16384))
                return;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        conn_kill(t, c, E_CLOSED, n == 0 ? "server closed the connection"
                                          : strerror(errno));
        return;
    }
}

static int conn_done(thr_t *t, conn_t *c)
{
    if (c->dead)
        return 1;
    return (t->stopping || c->issued >= c->quota) && c->pend_n == 0 &&
           c->count == 0 && c->ooff == c->olen;
}

/* ---- the per-thread loop ---- */

static void *thr_main(void *arg)
{
    thr_t *t = arg;
    config_t *cfg = t->cfg;
    struct epoll_event evs[64];
    int open_loop = t->stage == STAGE_RUN && t->ph->rate > 0;
    uint64_t idle_ns = (uint64_t)(cfg->idle_timeout * 1e9);

    for (;;) {
        uint64_t now = now_ns();
        if (g_interrupted || (t->stop_at && now >= t->stop_at))
            t->stopping = 1;
        if (now >= cfg->hard_deadline_ns) {
            t->stopping = 1;
            for (int i = 0; i < t->nconns; i++) {
                conn_t *c = t->conns[i];
                if (!c->dead && (c->count || c->ooff < c->olen))
                    conn_kill(t, c, E_TIMEOUT, "hard time cap reached");
            }
        }
        int alive = 0;
        uint64_t next_due = UINT64_MAX;
        for (int i = 0; i < t->nconns; i++) {
            conn_t *c = t->conns[i];
            if (c->dead)
                continue;
            if (c->count && now > c->last_progress &&
                now - c->last_progress > idle_ns) {
                conn_kill(t, c, E_TIMEOUT, "no reply within --timeout");
                continue;
            }
            conn_fill(t, c, now);
            if (c->ooff < c->olen && !c->want_out)
                conn_flush(t, c);
            if (conn_done(t, c))
                continue;
            alive++;
            if (open_loop && c->count < c->depth && !t->stopping &&
                c->issued < c->quota && c->next_due < next_due)
                next_due = c->next_due;
        }
        if (!alive)
            break;
        int timeout_ms = 100;
        if (next_due != UINT64_MAX) {
            struct itimerspec its;
            memset(&its, 0, sizeof(its));
            if (next_due <= now)
                next_due = now + 1000;
            its.it_value.tv_sec = (time_t)(next_due / 1000000000ULL);
            its.it_value.tv_nsec = (long)(next_due % 1000000000ULL);
            timerfd_settime(t->tfd, TFD_TIMER_ABSTIME, &its, NULL);
        }
        int n = epoll_wait(t->epfd, evs, 64, timeout_ms);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == NULL) {
                uint64_t x;
                if (read(t->tfd, &x, sizeof(x)) < 0) {
                    /* spurious; nothing to do */
                }
                continue;
            }
            conn_t *c = evs[i].data.ptr;
            if (c->dead)
                continue;
            if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                conn_read(t, c);
            if (!c->dead && (evs[i].events & EPOLLOUT))
                conn_flush(t, c);
        }
    }
    t->t_end = now_ns();
    if (cfg->trace && t->tlen) {
        pthread_mutex_lock(&g_trace_lock);
        fwrite(t->tbuf, 1, t->tlen, cfg->trace);
        pthread_mutex_unlock(&g_trace_lock);
        t->tlen = 0;
    }
    return NULL;
}

void engine_stage(config_t *cfg, phase_t *ph, int stage)
{
    int nthr = cfg->threads < g_nconns ? cfg->threads : g_nconns;
    thr_t *thr = calloc((size_t)nthr, sizeof(thr_t));
    pthread_t *tid = calloc((size_t)nthr, sizeof(pthread_t));
    if (!thr || !tid) {
        fprintf(stderr, "tcload: out of memory\n");
        exit(1);
    }
    uint64_t t0 = now_ns();
    uint64_t total = stage == STAGE_PRELOAD ? ph->ds.nkeys : ph->requests;
    int nc = g_nconns;
    for (int i = 0; i < nthr; i++) {
        thr_t *t = &thr[i];
        t->cfg = cfg;
        t->ph = ph;
        t->stage = stage;
        t->t0 = t0;
        if (stage == STAGE_RUN && ph->duration > 0)
            t->stop_at = t0 + (uint64_t)(ph->duration * 1e9);
        stats_init(&t->st);
        t->conns = calloc((size_t)nc, sizeof(conn_t *));
        t->epfd = epoll_create1(EPOLL_CLOEXEC);
        t->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
        epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->tfd, &ev);
        if (cfg->trace && stage == STAGE_RUN)
            t->tbuf = xrealloc(NULL, 65536);
    }
    for (int i = 0; i < nc; i++) {
        conn_t *c = &g_conns[i];
        thr_t *t = &thr[i % nthr];
        c->issued = 0;
        c->pstate = PS_LINE;
        c->pend_n = c->pend_head = 0;
        if (stage == STAGE_PRELOAD) {
            c->quota = (ph->ds.nkeys + (uint64_t)(nc - 1 - i)) / (uint64_t)nc;
            c->pre_next = (uint64_t)i;
            c->depth = (unsigned)cfg->preload_depth;
            c->interval = 0;
        } else {
            c->quota = total ? total / (uint64_t)nc +
                               ((uint64_t)i < total % (uint64_t)nc) : UINT64_MAX;
            rng_seed(&c->rng, conn_seed(cfg->seed, ph->index, i));
            c->depth = (unsigned)cfg->depth;
            c->interval = 0;
            if (ph->rate > 0) {
                c->interval = (uint64_t)(1e9 * nc / ph->rate);
                if (c->interval == 0)
                    c->interval = 1;
                c->next_due = t0 + c->interval * (uint64_t)i / (uint64_t)nc;
            }
        }
        if (c->cap < c->depth) {
            free(c->ring);
            c->cap = c->depth;
            c->ring = xrealloc(NULL, c->cap * sizeof(req_t));
        }
        c->head = c->count = 0;
        if (c->dead)
            continue;
        c->want_out = 0;
        c->last_progress = t0;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(t->epfd, EPOLL_CTL_ADD, c->fd, &ev);
        t->conns[t->nconns++] = c;
    }
    for (int i = 0; i < nthr; i++)
        pthread_create(&tid[i], NULL, thr_main, &thr[i]);
    uint64_t t_end = t0;
    stats_t *st = &ph->st[stage];
    stats_init(st);
    for (int i = 0; i < nthr; i++) {
        pthread_join(tid[i], NULL);
        if (thr[i].t_end > t_end)
            t_end = thr[i].t_end;
        stats_merge(st, &thr[i].st);
        for (int j = 0; j < thr[i].nconns; j++) {
            conn_t *c = thr[i].conns[j];
            if (!c->dead)
                epoll_ctl(thr[i].epfd, EPOLL_CTL_DEL, c->fd, NULL);
        }
        close(thr[i].epfd);
        close(thr[i].tfd);
        free(thr[i].conns);
        free(thr[i].tbuf);
    }
    ph->elapsed[stage] = (double)(t_end - t0) / 1e9;
    ph->ran[stage] = 1;
    free(thr);
    free(tid);
}
