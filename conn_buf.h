/*
 * conn_buf.h: a connection's buffer memory and its reply queue
 * (conn_buf.c).
 *
 * Every connection struct owns a read buffer, a reply buffer for copied
 * reply bytes and an array of reply pieces.  They grow for one large
 * request or reply and shrink back after it.  With -o read_buf_mem_limit
 * each worker may hold at most its share of the limit in grown buffers:
 * a reply that would need more is cut off (doc/protocol.md "Connection
 * memory").
 *
 * Locking: a connection's buffers are touched only by the worker that
 * owns it.  The per-worker usage gauges are atomics that only the owner
 * changes and `stats` reads.
 */
#ifndef CONN_BUF_H
#define CONN_BUF_H

#include "conn.h"
#include "item.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Start-up: each of nthreads workers gets limit_mb / nthreads megabytes
 * (limit_mb 0: no limit). */
void conn_buf_init(unsigned int limit_mb, int nthreads);

/* A new struct's buffers (read_size bytes to read into); false when out
 * of memory. */
bool conn_buf_alloc(conn *c, int read_size);
void conn_buf_free(conn *c);
/* The struct now belongs to c->thread, or is handed back by it. */
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
/* Double the read buffer; false when out of memory or over the worker's
 * share (counted in read_buf_oom). */
bool conn_buf_grow_read(conn *c);

/* ---- the reply queue ---- */
/* Append bytes to the reply; false when out of memory. */
bool resp_add(conn *c, const void *buf, size_t len);
/* A line written in place, one copy fewer than resp_add: resp_reserve
 * gives room for max bytes at the end of the reply (NULL when it cannot
 * grow), and resp_commit queues the len <= max bytes written there.
 * Nothing else may touch the reply in between. */
char *resp_reserve(conn *c, size_t max);
bool resp_commit(conn *c, size_t len);
/* Queue len bytes of it's value from ITEM_data + off; takes over one
 * reference (released on failure too, and at once when len is 0: no
 * queued piece is ever empty). */
bool resp_add_item(conn *c, item *it, size_t off, size_t len);
/* Append "line\r\n", the reply line of out_string.  After a cut-off it
 * is the command's error: it replaces whatever the command queued and is
 * queued even past the worker's share. */
bool resp_add_line(conn *c, const char *line, size_t len);
/* Release every queued piece (written, or the connection ends). */
void resp_release(conn *c);
/* Bracket one command: a reply that outgrows the worker's share is cut
 * back to where its command began.  resp_command_end returns false when
 * the connection must close: the cut-off command had earlier pipelined
 * replies queued before it.  Inline: they run for every request. */
#define RESP_NO_MARK (-1)
static inline void resp_command_begin(conn *c)
{
    c->resp_mark_pieces = c->npieces;
    c->resp_mark_wbuf = c->wbuf_used;
}

static inline bool resp_command_end(conn *c)
{
    bool stacked = c->resp_cut && c->resp_mark_pieces > 0;
    c->resp_mark_pieces = RESP_NO_MARK;
    c->resp_cut = false;
    return !stacked;
}

void conn_buf_totals(struct conn_buf_totals *out);

#endif
