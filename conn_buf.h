/*
 * conn_buf.h: a connection's buffer memory and its reply queue
 * (conn_buf.c).
 *
 * Every connection struct owns a read buffer, a reply buffer for copied
 * reply bytes and an array of reply pieces.  They grow for one large
 * request or reply and shrink back after it.  With -o read_buf_mem_limit
 * each worker has memcached's budget of response objects, and a command
 * or a multiget key that would pass it is refused as memcached refuses it
 * (doc/protocol.md "Connection memory").
 *
 * Locking: a connection's buffers are touched only by the worker that
 * owns it.  The per-worker usage gauges are atomics that only the owner
 * changes and `stats` reads; what a worker's waiting connections hold
 * of memcached's budget is a thread-local of that worker.
 */
#ifndef CONN_BUF_H
#define CONN_BUF_H

#include "conn.h"
#include "storage/storage.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct conn conn;

/* What one worker's connections hold now (gauges: stats reset leaves
 * them). */
struct conn_buf_usage {
    _Atomic uint64_t buffer_sets;     /* connections, one set each */
    _Atomic uint64_t read_bytes;
    _Atomic uint64_t reply_bytes;     /* reply buffer and piece array */
    _Atomic uint64_t reply_pieces;    /* piece slots */
};

/* Summed over the workers, plus the buffers of closed connection structs
 * kept for the next connection on their descriptor. */
struct conn_buf_totals {
    uint64_t buffer_sets;
    uint64_t bytes;
    uint64_t cached_bytes;
    uint64_t reply_bytes;
    uint64_t reply_pieces;
};

/* Start-up: each of nthreads workers gets memcached's budget, limit_mb /
 * nthreads megabytes in 16 KB units (limit_mb 0: no limit). */
void conn_buf_init(unsigned int limit_mb, int nthreads);

/* A new struct's buffers (read_size bytes to read into); false when out
 * of memory. */
bool conn_buf_alloc(conn *c, int read_size);
void conn_buf_free(conn *c);
/* The struct is charged to c->buf_usage (conn_adopt), or handed back. */
void conn_buf_adopt(conn *c);
void conn_buf_release(conn *c);
/* After a large request or reply: give the memory back (the test is
 * inline: it runs after every reply). */
#define CONN_BUF_KEEP_MAX (64 * 1024)
#define CONN_PIECES_KEEP_MAX 1024
void conn_buf_shrink_large(conn *c);
static inline void conn_buf_shrink(conn *c)
{
    if (c->rsize > CONN_BUF_KEEP_MAX || c->wbuf_size > CONN_BUF_KEEP_MAX
            || c->pieces_size > CONN_PIECES_KEEP_MAX) {
        conn_buf_shrink_large(c);
    }
}
/* A value's bytes go straight into its item, so the read buffer is empty
 * while the connection waits for them: one that reading ahead grew goes
 * back to its first size then, so that a client that stops in the middle
 * of a value holds no more (doc/protocol.md "Connection memory"). */
void conn_buf_shrink_empty_read(conn *c);
/* Double the read buffer; false when out of memory. */
bool conn_buf_grow_read(conn *c);

/* ---- the reply queue ----
 * Every reply of a GET queues three or four pieces, so the common case of
 * each call below (room in the reply buffer and the piece array) is
 * inline; growing them, and giving up an item's reference, are
 * conn_buf.c's. */

/* Grow the reply buffer to hold len more bytes, or the piece array by
 * one piece (false when out of memory). */
bool resp_grow_wbuf(conn *c, size_t len);
bool resp_grow_pieces(conn *c);
/* resp_add_item's uncommon cases: len 0, or no piece to be had. */
bool resp_add_item_slow(conn *c, item *it, size_t off, size_t len);

static inline bool resp_wbuf_room(conn *c, size_t len)
{
    return c->wbuf_used + len <= c->wbuf_size || resp_grow_wbuf(c, len);
}

static inline resp_piece *resp_piece_next(conn *c)
{
    if (c->npieces == c->pieces_size && !resp_grow_pieces(c)) {
        return NULL;
    }
    return &c->pieces[c->npieces];
}

/* Queue the len bytes just written at wbuf_used: they extend the last
 * piece when it is a copy that ends there, else start a new piece. */
static inline bool resp_commit_copied(conn *c, size_t len)
{
    resp_piece *last = c->npieces > 0 ? &c->pieces[c->npieces - 1] : NULL;
    if (last != NULL && last->copied
            && last->buf_off + last->len == c->wbuf_used) {
        c->wbuf_used += len;
        last->len += len;
        return true;
    }
    resp_piece *p = resp_piece_next(c);
    if (p == NULL) {
        return false;
    }
    p->base = NULL;
    p->len = len;
    p->ref = NULL;
    p->buf_off = c->wbuf_used;
    p->copied = true;
    c->wbuf_used += len;
    c->npieces++;
    return true;
}

/* Append bytes to the reply; false when out of memory. */
static inline bool resp_add(conn *c, const void *buf, size_t len)
{
    if (len == 0) {
        return true;
    }
    if (!resp_wbuf_room(c, len)) {
        return false;
    }
    memcpy(c->wbuf + c->wbuf_used, buf, len);
    return resp_commit_copied(c, len);
}

/* A line written in place, one copy fewer than resp_add: resp_reserve
 * gives room for max bytes at the end of the reply (NULL when it cannot
 * grow), and resp_commit queues the len <= max bytes written there.
 * Nothing else may touch the reply in between. */
static inline char *resp_reserve(conn *c, size_t max)
{
    return resp_wbuf_room(c, max) ? c->wbuf + c->wbuf_used : NULL;
}

static inline bool resp_commit(conn *c, size_t len)
{
    return len == 0 || resp_commit_copied(c, len);
}

/* Queue len bytes of it's value from ITEM_data + off; takes over one
 * reference (released on failure too, and at once when len is 0: no
 * queued piece is ever empty). */
static inline bool resp_add_item(conn *c, item *it, size_t off, size_t len)
{
    if (len == 0 || c->npieces == c->pieces_size) {
        return resp_add_item_slow(c, it, off, len);
    }
    resp_piece *p = &c->pieces[c->npieces];
    p->base = ITEM_data(it) + off;
    p->len = len;
    p->ref = it;
    p->buf_off = 0;
    p->copied = false;
    c->npieces++;
    return true;
}

/* Append "line\r\n", the reply line of out_string. */
static inline bool resp_add_line(conn *c, const char *line, size_t len)
{
    return resp_add(c, line, len) && resp_add(c, "\r\n", 2);
}
/* Release every queued piece (written, or the connection ends). */
void resp_release(conn *c);

/* ---- memcached's response objects ----
 * memcached 1.6.18 answers each command, and each key of a multiget after
 * the first, with a response object, and writes what it has queued at its
 * flush points: the end of a get, gets, gat or gats, mn, a binary noop,
 * and when no complete command is left to read (or -R is reached); a
 * connection goes on only once that is written, and its objects are free
 * once written.  With read_buf_mem_limit the objects come 13 to a 16 KB
 * unit out of the worker's share, which read buffers draw on too
 * (conn_buf.c).  We keep its count, so that the same requests pass or
 * fail; without the limit only the mark matters: where the replies
 * memcached would still hold begin, which a failed multiget drops. */
extern uint64_t resp_obj_budget;  /* 16 KB units per worker; 0: no limit */
/* the most objects a connection may take while no other connection of
 * its worker holds any: the units but its read buffer's, times 13 */
extern uint64_t resp_objs_alone;
/* What the connections of this worker that wait with unwritten replies
 * hold: each keeps its read buffer, as memcached's do, and its objects.
 * The worker's own (thread-local): it parks a connection that stops with
 * replies unwritten and unparks it when it runs again. */
struct resp_parked {
    uint64_t conns;
    uint64_t objs;
};
extern _Thread_local struct resp_parked worker_parked;
bool resp_objs_fit(conn *c);
void resp_park(conn *c);
void resp_unpark(conn *c);

/* Under the limit: take the object resp_objs was just raised for. */
static inline bool resp_objs_take(conn *c)
{
    c->resp_unsent++;
    return (worker_parked.conns == 0 && c->resp_objs <= resp_objs_alone)
        || resp_objs_fit(c);
}

/* A command begins: one object.  False when memcached would have none
 * left: the connection closes (counted in response_obj_oom), after
 * resp_drop_unsent.  Inline: it runs for every request. */
static inline bool resp_command_begin(conn *c)
{
    if (c->resp_objs == 0) {
        c->resp_mark_pieces = c->npieces;
        c->resp_mark_wbuf = c->wbuf_used;
    }
    c->resp_objs++;
    return resp_obj_budget == 0 || resp_objs_take(c);
}

/* The next key of a multiget: one more object; false as above (the
 * multiget fails). */
static inline bool resp_next_key(conn *c)
{
    c->resp_objs++;
    return resp_obj_budget == 0 || resp_objs_take(c);
}

/* A flush point: memcached writes its queue before the connection goes
 * on, so what follows starts afresh; the objects stay taken until our
 * write of them completes (resp_written). */
static inline void resp_flush_point(conn *c)
{
    c->resp_objs = 0;
}

/* Every queued reply is written (or the connection ends): its objects
 * are free. */
static inline void resp_written(conn *c)
{
    c->resp_objs = 0;
    if (resp_obj_budget != 0) {
        if (c->resp_parked != 0) {
            resp_unpark(c);
        }
        c->resp_unsent = 0;
    }
}

/* The connection's loop starts (it is not counted as waiting any more)
 * and stops (counted when it waits with replies unwritten). */
static inline void resp_conn_runs(conn *c)
{
    if (c->resp_parked != 0) {
        resp_unpark(c);
    }
}

static inline void resp_conn_stops(conn *c)
{
    if (resp_obj_budget != 0 && c->resp_unsent != 0) {
        resp_park(c);
    }
}

/* Drop the replies memcached would not have sent yet, as it drops its
 * unsent responses when a multiget fails or before it closes a
 * connection that ran out of objects; their objects are freed. */
void resp_drop_unsent(conn *c);

/* May the worker give c a read buffer?  memcached reads into one of its
 * 16 KB units; when the waiting connections' replies hold them all it
 * closes the connection (counted in read_buf_oom).  Inline: every read
 * asks. */
bool resp_read_buf_fits(conn *c);
static inline bool resp_read_buf_available(conn *c)
{
    return resp_obj_budget == 0 || worker_parked.conns == 0
        || resp_read_buf_fits(c);
}

/* out holds the workers' usage (threadlocal_conn_buf_sum, thread.c): add
 * the buffers of the closed structs kept for reuse. */
void conn_buf_totals(struct conn_buf_totals *out);

#endif
