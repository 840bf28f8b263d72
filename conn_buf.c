/*
 * conn_buf.c: a connection's buffer memory and its reply queue
 * (doc/protocol.md "Connection memory").
 *
 * Owns the read buffer, the reply buffer (copied reply bytes) and the
 * reply-piece array of every connection struct: allocating them, growing
 * them, shrinking them after a large request or reply, while a value is
 * read into its item and when their connection closes, charging them to
 * the worker that owns the connection, and building the reply queue.
 *
 * The budget.  memcached bounds the memory its workers spend on read
 * buffers and response objects with -o read_buf_mem_limit (megabytes,
 * split evenly between the workers).  Here every connection keeps its
 * first buffers whatever the limit (a connection can always be served),
 * and only growth is refused past the worker's share:
 *   - a read buffer that cannot grow ends the connection with memcached's
 *     "SERVER_ERROR out of memory reading request" (read_buf_oom);
 *   - a reply that cannot grow is cut back to where its command began and
 *     the command answers its own out-of-memory error instead, as a
 *     multiget gets "SERVER_ERROR out of memory writing get response"
 *     from memcached; if replies of earlier pipelined commands were
 *     already queued, the connection is closed, as memcached closes a
 *     connection whose stacked requests run out of response objects
 *     (response_obj_oom counts both).
 * The command's bounds are a mark (resp_command_begin): how many pieces
 * and reply-buffer bytes were queued before it, and the length of the
 * last piece, which later bytes may have been merged into.
 *
 * Locking: none.  A connection's buffers are touched only by the worker
 * that owns it (or, for a struct no worker owns, by the thread creating
 * or closing it).  The usage gauges of a worker are changed only by that
 * worker, with atomic adds, because `stats` sums them from another
 * thread; the gauge of cached structs is shared by all workers.
 */
#include "config.h"
#include "conn_buf.h"
#include "conn.h"
#include "items.h"
#include "thread.h"

#include <stdlib.h>
#include <string.h>

#define WBUF_INITIAL 2048
#define PIECES_INITIAL 16

static uint64_t worker_share;   /* bytes; 0 for no limit */
static _Atomic uint64_t cached_bytes;

void conn_buf_init(unsigned int limit_mb, int nthreads)
{
    worker_share = nthreads > 0
        ? (uint64_t)limit_mb * 1024 * 1024 / (uint64_t)nthreads : 0;
}

/* ---- accounting ---- */

static uint64_t reply_bytes_of(const conn *c)
{
    return (uint64_t)c->wbuf_size +
           (uint64_t)c->pieces_size * sizeof(resp_piece);
}

static uint64_t bytes_of(const conn *c)
{
    return (uint64_t)c->rsize + reply_bytes_of(c);
}

static void gauge_add(_Atomic uint64_t *g, int64_t delta)
{
    if (delta >= 0) {
        atomic_fetch_add_explicit(g, (uint64_t)delta, memory_order_relaxed);
    } else {
        atomic_fetch_sub_explicit(g, (uint64_t)-delta, memory_order_relaxed);
    }
}

/* Charge a change of c's buffers to its worker (if it has one). */
static void charge(conn *c, int64_t read_delta, int64_t reply_delta,
                   int64_t pieces_delta)
{
    if (!c->buf_charged) {
        return;
    }
    struct conn_buf_usage *u = &c->thread->buf_usage;
    gauge_add(&u->read_bytes, read_delta);
    gauge_add(&u->reply_bytes, reply_delta);
    gauge_add(&u->reply_pieces, pieces_delta);
}

/* May c's worker hold `more` bytes beyond what it holds now? */
static bool share_allows(const conn *c, uint64_t more)
{
    if (worker_share == 0 || !c->buf_charged) {
        return true;
    }
    const struct conn_buf_usage *u = &c->thread->buf_usage;
    uint64_t held =
        atomic_load_explicit(&u->read_bytes, memory_order_relaxed) +
        atomic_load_explicit(&u->reply_bytes, memory_order_relaxed);
    return held + more <= worker_share;
}

void conn_buf_adopt(conn *c)
{
    if (c->thread == NULL || c->buf_charged) {
        return;
    }
    if (c->buf_cached) {
        gauge_add(&cached_bytes, -(int64_t)bytes_of(c));
        c->buf_cached = false;
    }
    c->buf_charged = true;
    atomic_fetch_add_explicit(&c->thread->buf_usage.buffer_sets, 1,
                              memory_order_relaxed);
    charge(c, c->rsize, (int64_t)reply_bytes_of(c), c->pieces_size);
}

void conn_buf_release(conn *c)
{
    /* what is left of the input is dead: a struct kept for the next
     * connection keeps buffers of the first sizes only */
    c->rbytes = 0;
    c->rcurr = c->rbuf;
    conn_buf_shrink(c);
    if (c->buf_charged) {
        charge(c, -(int64_t)c->rsize, -(int64_t)reply_bytes_of(c),
               -(int64_t)c->pieces_size);
        atomic_fetch_sub_explicit(&c->thread->buf_usage.buffer_sets, 1,
                                  memory_order_relaxed);
        c->buf_charged = false;
    }
    if (!c->buf_cached) {
        gauge_add(&cached_bytes, (int64_t)bytes_of(c));
        c->buf_cached = true;
    }
    c->resp_mark_pieces = RESP_NO_MARK;
    c->resp_cut = false;
}

void conn_buf_totals(struct conn_buf_totals *out)
{
    memset(out, 0, sizeof(*out));
    threadlocal_conn_buf_sum(out);
    out->cached_bytes = atomic_load_explicit(&cached_bytes,
                                             memory_order_relaxed);
    out->bytes += out->cached_bytes;
}

/* ---- the buffers ---- */

bool conn_buf_alloc(conn *c, int read_size)
{
    c->rsize = read_size;
    c->rbuf = malloc(c->rsize);
    c->wbuf_size = WBUF_INITIAL;
    c->wbuf = malloc(c->wbuf_size);
    c->pieces_size = PIECES_INITIAL;
    c->pieces = malloc(sizeof(resp_piece) * c->pieces_size);
    c->resp_mark_pieces = RESP_NO_MARK;
    return c->rbuf != NULL && c->wbuf != NULL && c->pieces != NULL;
}

void conn_buf_free(conn *c)
{
    free(c->rbuf);
    free(c->wbuf);
    free(c->pieces);
}

bool conn_buf_grow_read(conn *c)
{
    if (!share_allows(c, (uint64_t)c->rsize)) {
        if (c->thread != NULL) {
            STAT_INCR(c->thread->stats.read_buf_oom);
        }
        return false;
    }
    char *nb = realloc(c->rbuf, (size_t)c->rsize * 2);
    if (nb == NULL) {
        return false;
    }
    c->rcurr = nb + (c->rcurr - c->rbuf);
    c->rbuf = nb;
    charge(c, c->rsize, 0, 0);
    c->rsize *= 2;
    return true;
}

/* Back to a read buffer of the first size, keeping the unread bytes
 * (fewer than that size). */
static void read_buf_to_first_size(conn *c)
{
    char *nb = malloc(READ_BUFFER_SIZE);
    if (nb != NULL) {
        memcpy(nb, c->rcurr, c->rbytes);
        free(c->rbuf);
        charge(c, (int64_t)READ_BUFFER_SIZE - c->rsize, 0, 0);
        c->rbuf = nb;
        c->rcurr = nb;
        c->rsize = READ_BUFFER_SIZE;
    }
}

void conn_buf_shrink_empty_read(conn *c)
{
    if (c->rsize > READ_BUFFER_SIZE && c->rbytes == 0
            && !IS_UDP(c->transport)) {
        read_buf_to_first_size(c);
    }
}

void conn_buf_shrink_large(conn *c)
{
    if (c->rsize > CONN_BUF_KEEP_MAX && c->rbytes < READ_BUFFER_SIZE) {
        read_buf_to_first_size(c);
    }
    if (c->wbuf_size > CONN_BUF_KEEP_MAX && c->wbuf_used == 0) {
        char *nb = malloc(WBUF_INITIAL);
        if (nb != NULL) {
            free(c->wbuf);
            charge(c, 0, (int64_t)WBUF_INITIAL - c->wbuf_size, 0);
            c->wbuf = nb;
            c->wbuf_size = WBUF_INITIAL;
        }
    }
    if (c->pieces_size > CONN_PIECES_KEEP_MAX && c->npieces == 0) {
        resp_piece *np = malloc(sizeof(resp_piece) * PIECES_INITIAL);
        if (np != NULL) {
            int64_t fewer = (int64_t)PIECES_INITIAL - c->pieces_size;
            free(c->pieces);
            charge(c, 0, fewer * (int64_t)sizeof(resp_piece), fewer);
            c->pieces = np;
            c->pieces_size = PIECES_INITIAL;
        }
    }
}

/* ---- the reply queue ---- */

static void release_from(conn *c, int first)
{
    for (int i = first; i < c->npieces; i++) {
        if (c->pieces[i].ref != NULL) {
            item_remove(c->pieces[i].ref);
        }
    }
    c->npieces = first;
}

void resp_release(conn *c)
{
    release_from(c, 0);
    c->wbuf_used = 0;
    c->write_started = 0;
    c->write_offset = 0;
    if (c->resp_mark_pieces != RESP_NO_MARK) {
        /* written in the middle of a command (its value still coming):
         * nothing queued before it is left to cut back to */
        c->resp_mark_pieces = 0;
        c->resp_mark_wbuf = 0;
    }
}

/* Drop what the current command queued.  Copied bytes may have been
 * merged into the last piece queued before it: a copied piece that was
 * last ended where the reply buffer ended at the mark. */
static void cut_back(conn *c)
{
    release_from(c, c->resp_mark_pieces);
    c->wbuf_used = c->resp_mark_wbuf;
    if (c->npieces > 0 && c->pieces[c->npieces - 1].copied) {
        resp_piece *last = &c->pieces[c->npieces - 1];
        last->len = c->resp_mark_wbuf - last->buf_off;
    }
}

/* The reply cannot grow within the worker's share: cut it back (once per
 * command) and refuse everything it adds after that but its error. */
static bool reply_over_share(conn *c)
{
    if (c->resp_mark_pieces == RESP_NO_MARK) {
        return false;           /* outside a command: just refused */
    }
    if (!c->resp_cut) {
        cut_back(c);
        c->resp_cut = true;
        if (c->thread != NULL) {
            STAT_INCR(c->thread->stats.response_obj_oom);
        }
    }
    return false;
}

static bool grow_pieces(conn *c, bool over_share_ok)
{
    size_t more = (size_t)c->pieces_size * sizeof(resp_piece);
    if (!over_share_ok && !share_allows(c, more)) {
        return reply_over_share(c);
    }
    int nsize = c->pieces_size * 2;
    resp_piece *np = realloc(c->pieces, sizeof(resp_piece) * nsize);
    if (np == NULL) {
        return false;
    }
    charge(c, 0, (int64_t)more, c->pieces_size);
    c->pieces = np;
    c->pieces_size = nsize;
    return true;
}

static resp_piece *piece_next(conn *c, bool over_share_ok)
{
    if (c->npieces == c->pieces_size && !grow_pieces(c, over_share_ok)) {
        return NULL;
    }
    return &c->pieces[c->npieces];
}

static bool wbuf_reserve(conn *c, size_t len, bool over_share_ok)
{
    if (c->wbuf_used + len <= c->wbuf_size) {
        return true;
    }
    size_t nsize = c->wbuf_size;
    while (c->wbuf_used + len > nsize) {
        nsize *= 2;
    }
    if (nsize > UINT32_MAX) {
        return false;
    }
    if (!over_share_ok && !share_allows(c, nsize - c->wbuf_size)) {
        return reply_over_share(c);
    }
    char *nb = realloc(c->wbuf, nsize);
    if (nb == NULL) {
        return false;
    }
    charge(c, 0, (int64_t)(nsize - c->wbuf_size), 0);
    c->wbuf = nb;
    c->wbuf_size = (uint32_t)nsize;
    return true;
}

/* Queue the len bytes just written at wbuf_used: they extend the last
 * piece when it is a copy that ends there, else start a new piece. */
static bool commit_copied(conn *c, size_t len, bool over_share_ok)
{
    resp_piece *last = c->npieces > 0 ? &c->pieces[c->npieces - 1] : NULL;
    if (last != NULL && last->copied &&
        last->buf_off + last->len == c->wbuf_used) {
        c->wbuf_used += len;
        last->len += len;
        return true;
    }
    resp_piece *p = piece_next(c, over_share_ok);
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

static bool add_copied(conn *c, const void *buf, size_t len,
                       bool over_share_ok)
{
    if (len == 0) {
        return true;
    }
    if (!wbuf_reserve(c, len, over_share_ok)) {
        return false;
    }
    memcpy(c->wbuf + c->wbuf_used, buf, len);
    return commit_copied(c, len, over_share_ok);
}

char *resp_reserve(conn *c, size_t max)
{
    if (c->resp_cut || !wbuf_reserve(c, max, false)) {
        return NULL;
    }
    return c->wbuf + c->wbuf_used;
}

bool resp_commit(conn *c, size_t len)
{
    return len == 0 || commit_copied(c, len, false);
}

bool resp_add(conn *c, const void *buf, size_t len)
{
    return !c->resp_cut && add_copied(c, buf, len, false);
}

bool resp_add_line(conn *c, const char *line, size_t len)
{
    bool error = c->resp_cut;
    if (error) {
        cut_back(c);            /* whatever came after the cut-off */
    }
    return add_copied(c, line, len, error) &&
           add_copied(c, "\r\n", 2, error);
}

bool resp_add_item(conn *c, item *it, size_t off, size_t len)
{
    if (len == 0 && !c->resp_cut) {
        /* An empty window (a binary get of a 0-byte value) is not queued,
         * as add_copied queues no empty copy: the writer passes a piece
         * only when written bytes reach past it (conn.c), so an empty
         * last piece would stay unwritten for ever: TCP would send it
         * alone and take sendmsg's 0 for a dead peer (closing the
         * connection), UDP would loop on it.  Nothing will read the
         * item, so its reference goes now. */
        item_remove(it);
        return true;
    }
    resp_piece *p = c->resp_cut ? NULL : piece_next(c, false);
    if (p == NULL) {
        item_remove(it);
        return false;
    }
    p->base = ITEM_data(it) + off;
    p->len = len;
    p->ref = it;
    p->buf_off = 0;
    p->copied = false;
    c->npieces++;
    return true;
}
