/*
 * conn.h: a client connection (conn.c): its buffers and response queue
 * (conn_buf.c), the states of the machine that serves it, and the small
 * interfaces it is served through, which the layers above provide: its
 * protocol (struct conn_proto: proto_*.c, chosen by proto_select.c), the
 * layer over its socket (struct conn_io_layer: tls.c) and what its
 * worker lends it (conn_adopt: thread.c).
 *
 * A connection is touched only by the worker that owns it; other threads
 * read only the published fields (pub_*), which are atomics.
 */
#ifndef CONN_H
#define CONN_H

#include "clock.h"
#include "stat_line.h"
#include "storage/storage.h"

#include <event.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define READ_BUFFER_SIZE 16384
#define UDP_READ_BUFFER_SIZE 65536
#define UDP_MAX_PAYLOAD_SIZE 1400
#define UDP_HEADER_SIZE 8
#define MAX_SENDBUF_SIZE (256 * 1024 * 1024)

/* the worker thread that serves a connection (thread.h), and what it lends
 * the connection: its counters (daemon_stats.h) and the account of its
 * connections' buffers (conn_buf.h) */
typedef struct libevent_thread LIBEVENT_THREAD;
struct thread_stats;
struct conn_buf_usage;

enum conn_states {
    conn_listening,
    conn_new_cmd,      /* reset per-command state, then parse */
    conn_waiting,      /* waiting for readability */
    conn_read,         /* read more bytes */
    conn_parse_cmd,    /* a complete line may be in rbuf */
    conn_write,        /* flush the response queue */
    conn_nread,        /* reading a value into c->item */
    conn_swallow,      /* discarding c->sbytes */
    conn_closing,
    conn_mwrite,
    conn_closed,
    conn_watch,
    conn_max_state
};

enum network_transport { local_transport, tcp_transport, udp_transport };

#define IS_UDP(x) ((x) == udp_transport)

/* One queued piece of a reply: bytes copied into the connection's response
 * buffer, or a window into an item's value that holds a reference to the
 * item until the bytes are on the wire.  Never empty: conn.c's writer
 * counts a piece written only when bytes reach past it. */
typedef struct {
    const char *base;
    size_t len;
    item *ref;           /* released after the write; NULL for copied bytes */
    uint32_t buf_off;    /* for copied bytes: offset into c->wbuf */
    bool copied;
} resp_piece;

#define META_PENDING_MAX 512

/* A binary request's header (proto_bin.h), in host byte order. */
struct bin_request {
    uint8_t opcode;               /* as sent: replies echo quiet forms */
    uint8_t extlen;
    uint16_t keylen;
    uint32_t bodylen;             /* extras + key + value */
    uint32_t opaque;              /* echoed untouched */
    uint64_t cas;
};

typedef struct conn conn;
/* A protocol: what the connection machine calls to frame and serve a
 * connection's requests.  proto_text.c, proto_bin.c and proto_auth.c
 * provide theirs; proto_select.c chooses the one connections start with
 * (conn_set_first_protocol) and, under -B auto, the one a connection's
 * first byte asks for. */
struct conn_proto {
    const char *name;             /* for -vv */
    /* its requests are lines (or may be, before -B auto has chosen):
     * under read_buf_mem_limit a line longer than the read buffer lets
     * the buffer grow */
    bool lines;
    /* c->rbytes > 0 bytes at c->rcurr: frame one request and serve it
     * between conn_command_begin and conn_command_end; false when it
     * needs more input */
    bool (*try_read_command)(conn *c);
    /* the value conn_start_nread asked for is in c->item */
    void (*complete_nread)(conn *c);
    /* the connection closes: the protocol's state of it goes (or NULL) */
    void (*release)(conn *c);
};
/* A layer between a stream connection and its socket (tls.c's session),
 * which the worker installs with its io_read and io_sendmsg; NULL for the
 * plain socket. */
struct conn_io_layer {
    /* bytes wait inside the layer, which the socket will not signal: read
     * again before waiting */
    bool (*has_input)(const conn *c);
    /* it must send before it can read on: wait for writability as well */
    bool (*wants_write)(const conn *c);
    /* the connection closes: end the layer's session */
    void (*end)(conn *c);
};
/* A reply made in batches (lru_crawler metadump), so that what a client
 * has not read yet stays bounded: conn.c calls it once everything queued
 * has been written, and it queues the next batch and returns true (with
 * its last batch it clears c->producer; with nothing to send yet it sets
 * conn_watch and waits to be resumed); conn.c calls it with closing set
 * when the connection closes first, and it frees c->producer_state and
 * clears both. */
typedef bool (*conn_producer_fn)(conn *c, bool closing);
/* A producer that set conn_watch (nothing to send yet) has more now: its
 * owner's event callback resumes writing (logger.c's watchers). */
void conn_resume_producer(conn *c);

struct conn {
    int sfd;
    /* socket I/O: read(2) and sendmsg(2), or tls.c's for a TLS client */
    ssize_t (*io_read)(conn *c, void *buf, size_t len);
    ssize_t (*io_sendmsg)(conn *c, struct msghdr *msg, int flags);
    const struct conn_io_layer *io_layer;   /* NULL: the plain socket */
    struct tls_conn *tls;         /* tls.c's session; NULL without TLS */
    bool accepts_tls;             /* a listener whose clients speak TLS */
    enum conn_states state;
    enum network_transport transport;
    const struct conn_proto *proto;   /* proto_select.c's choice */
    struct event event;
    short ev_flags;
    short which;
    LIBEVENT_THREAD *thread;      /* NULL until a worker adopts it */
    struct thread_stats *thread_stats;  /* its worker's counters */
    struct conn_buf_usage *buf_usage;   /* its worker's buffer account */
    conn *next;                   /* free list / all-connections list */

    /* input */
    char *rbuf;
    char *rcurr;
    int rsize;
    int rbytes;

    /* value being read (conn_nread) */
    item *item;
    char *ritem;
    int rlbytes;
    enum store_cmd cmd;
    uint64_t cas;                 /* for NREAD_CAS and meta C */
    int sbytes;                   /* conn_swallow: bytes still to discard */

    /* reply modes for the command in progress */
    bool noreply;                 /* classic noreply: drop the next reply */
    bool command_done;            /* conn_command_end was called */
    /* meta set: the reply tail ("k", "O", "c" flags...) and quiet mode to
     * apply when the value has arrived; owned by proto_text.c */
    char meta_pending[META_PENDING_MAX];
    int meta_pending_len;
    uint32_t meta_pending_flags;
    /* binary protocol: the request being served (proto_bin.c) */
    struct bin_request bin;

    /* authentication: -S (proto_sasl.c) or -Y (proto_auth.c) */
    bool authenticated;
    bool sasl_started;            /* a SASL exchange is under way */
    void *sasl_conn;              /* the Cyrus connection, made on demand */
    /* -Y: bytes of "user pass\r\n" expected after the set line; 0 while
     * that line has not arrived */
    uint32_t auth_value_len;

    /* output: response queue flushed with sendmsg in conn_write */
    resp_piece *pieces;
    int npieces;
    int pieces_size;
    char *wbuf;
    uint32_t wbuf_used;
    uint32_t wbuf_size;
    int write_started;            /* pieces already fully written */
    size_t write_offset;          /* bytes of pieces[write_started] written */
    /* the replies memcached would not have sent yet (those since its
     * last flush point) begin after this much of the queue, and take
     * resp_objs of its response objects; under read_buf_mem_limit
     * resp_unsent counts those of all the replies not written yet, and
     * resp_parked those its worker counts while it waits (conn_buf.c) */
    int resp_mark_pieces;
    uint32_t resp_mark_wbuf;
    uint32_t resp_objs;
    uint32_t resp_unsent;
    uint32_t resp_parked;
    bool buf_charged;             /* buffers counted in thread->buf_usage */
    bool buf_cached;              /* a closed struct's, counted as cached */
    bool close_after_write;
    int close_reason;             /* logger.h's, for its conn_close line;
                                   * -1: none (a listener) */
    conn_producer_fn producer;    /* the rest of the reply, or NULL */
    void *producer_state;

    /* UDP */
    struct sockaddr_storage request_addr;
    socklen_t request_addr_size;
    uint16_t request_id;

    rel_time_t last_cmd_time;
    int reqs_this_event;
    bool udp_multipacket;         /* this datagram is not a whole request */
    /* read by `stats conns` from other threads */
    _Atomic int pub_state;
    _Atomic rel_time_t pub_last_cmd;
    /* the worker serving it, NULL once closed: the idle walk's test */
    _Atomic(LIBEVENT_THREAD *) pub_owner;
};

/* ---- connection API (conn.c), used by the protocol layer ---- */
void conn_set_state(conn *c, enum conn_states state);
/* A protocol's framer has taken a whole request out of the read buffer:
 * note the time of the command and enter conn_parse_cmd.  The request
 * takes one of memcached's response objects (conn_buf.h): when none is
 * left the connection closes instead, and this returns false. */
bool conn_command_begin(conn *c);
/* The same for -Y's login (proto_auth.c), which takes no response object:
 * it comes once, before any command, and a failure closes the
 * connection. */
void conn_login_begin(conn *c);
/* The request has been served: on to the next one, unless it chose
 * another state.  The framer calls it last, just before it returns to
 * conn.c, which makes the move (so that a request enters conn.c once, at
 * conn_command_begin). */
static inline void conn_command_end(conn *c)
{
    c->command_done = true;
}
/* Reply "str\r\n", or nothing when c->noreply is set (which it clears). */
void out_string(conn *c, const char *str);
/* Reply an error even under noreply (memcached reports errors always). */
void out_errstring(conn *c, const char *str);
/* Read the value for c->item (c->ritem/rlbytes set), then call
 * complete_nread(c). */
void conn_start_nread(conn *c, item *it, int nbytes, enum store_cmd cmd);
/* Discard n bytes of the stream (a rejected value): conn_start_swallow. */
void conn_start_swallow(conn *c, int nbytes);
void conn_close_after_write(conn *c);

conn *conn_new(int sfd, enum conn_states init_state, int event_flags,
               int read_buffer_size, enum network_transport transport,
               struct event_base *base);
/* The worker owner serves c from now on (thread.c): c counts in its
 * counters and charges its buffers to its account. */
void conn_adopt(conn *c, LIBEVENT_THREAD *owner, struct thread_stats *counters,
                struct conn_buf_usage *usage);
/* Close c now, from the worker that owns it (or, for a listener, the
 * main thread), between two of its requests: queued replies get one
 * non-blocking send, a value still arriving is lost.  A UDP connection's
 * descriptor is left open: listen.c closes it once the workers stop. */
void conn_drop(conn *c);
/* idle_timeout, run by worker me's timer: close its idle connections */
void conns_close_idle(LIBEVENT_THREAD *me);
/* Shutdown, run by worker me: close every TCP and unix connection it
 * owns (its UDP connections are thread.c's to drop). */
void conns_close_owned(LIBEVENT_THREAD *me);

/* Start-up, before any connection (proto_select.c): the protocol a
 * connection starts with, and each UDP datagram. */
void conn_set_first_protocol(const struct conn_proto *proto);
/* Start-up (listen.c, before its first listener): what a listener's
 * connection runs in conn_listening, when a client waits to be accepted. */
void conn_set_listener_accept(void (*accept)(conn *listener));
/* Start-up: the per-fd table of connection structs, for fds below max_fds. */
void conn_table_init(int max_fds);
/* stats conns: walks the connection table */
void process_stat_conns(ADD_STAT add_stats, void *c);

#endif
