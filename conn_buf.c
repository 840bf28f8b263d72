/*
 * conn_buf.c: a connection's buffer memory and its reply queue
 * (doc/protocol.md "Connection memory").
 *
 * Owns the read buffer, the reply buffer (copied reply bytes) and the
 * reply-piece array of every connection struct: allocating them, growing
 * them, shrinking them after a large request or reply, while a value is
 * read into its item and when their connection closes, charging them to
 * the account the connection's worker lent it (conn.buf_usage), and
 * building the reply queue.
 *
 * The budget.  memcached 1.6.18 bounds the memory its workers spend on
 * read buffers and response objects with -o read_buf_mem_limit
 * (megabytes, split evenly between the workers) in 16 KB units: a
 * connection reading a request holds one as its read buffer (none while a
 * multiget line too long for it has a buffer of its own), and response
 * objects come 13 to a unit, one per command and one per further key of a
 * multiget, until memcached writes them at a flush point.  Our buffers
 * are smaller and laid out otherwise, so we count what memcached would
 * hold instead (conn_buf.h "memcached's response objects"), per worker:
 *   - a command that finds no object closes its connection, with the
 *     replies memcached would not have sent yet dropped (response_obj_oom);
 *   - a multiget key that finds none fails the multiget: those replies
 *     are dropped and it answers memcached's "SERVER_ERROR out of memory
 *     writing get response" (proto_text.c; response_obj_oom);
 *   - a connection about to read when the worker's unsent replies hold
 *     every unit is closed (read_buf_oom).
 * What memcached also counts and we do not: the read buffers of other
 * connections in the middle of a request.  Our buffers are charged to
 * their worker for `stats` only; a connection keeps its first buffers,
 * and under the limit its read buffer grows only for a multiget line
 * longer than it, as memcached's does.
 *
 * Locking: none.  A connection's buffers are touched only by the worker
 * that owns it (or, for a struct no worker owns, by the thread creating
 * or closing it).  The usage gauges of a worker are changed only by that
 * worker, with atomic adds, because `stats` sums them from another
 * thread; the gauge of cached structs is shared by all workers.  What a
 * worker's waiting connections hold of the budget (worker_parked) is
 * thread-local: only that worker parks and unparks its connections.
 */
#include "config.h"
#include "conn_buf.h"
#include "conn.h"
#include "daemon_stats.h"
#include "storage/storage.h"

#include <stdlib.h>
#include <string.h>

#define WBUF_INITIAL 2048
#define PIECES_INITIAL 16

/* memcached's unit of read buffer and response memory, and how many
 * response objects one holds (sizeof(mc_resp) in Debian's 1.6.18: a
 * multiget of (units - 1) * 13 keys is its largest). */
#define MC_UNIT_BYTES 16384
#define MC_RESPS_PER_UNIT 13

uint64_t resp_obj_budget;
uint64_t resp_objs_alone;
static _Atomic uint64_t cached_bytes;

void conn_buf_init(unsigned int limit_mb, int nthreads)
{
    uint64_t share = nthreads > 0
        ? (uint64_t)limit_mb * 1024 * 1024 / (uint64_t)nthreads : 0;
    /* memcached gives a worker at least one unit */
    resp_obj_budget = limit_mb == 0 ? 0
        : share < MC_UNIT_BYTES ? 1 : share / MC_UNIT_BYTES;
    resp_objs_alone = resp_obj_budget == 0 ? 0
        : (resp_obj_budget - 1) * MC_RESPS_PER_UNIT;
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
    struct conn_buf_usage *u = c->buf_usage;
    gauge_add(&u->read_bytes, read_delta);
    gauge_add(&u->reply_bytes, reply_delta);
    gauge_add(&u->reply_pieces, pieces_delta);
}

/* ---- memcached's response objects ---- */

_Thread_local struct resp_parked worker_parked;

/* The units c's worker would hold with c reading (its read buffer: none
 * when a long multiget line gave it one of its own), the waiting
 * connections keeping theirs, and c's objects since its flush point
 * besides theirs, 13 to a unit.  c's objects from before its flush point
 * are not counted: memcached would have written them before going on. */
static uint64_t units_needed(const conn *c, uint64_t c_objs)
{
    uint64_t read_buf = c->rsize > READ_BUFFER_SIZE ? 0 : 1;
    uint64_t objs = worker_parked.objs + c_objs;
    return read_buf + worker_parked.conns
        + (objs + MC_RESPS_PER_UNIT - 1) / MC_RESPS_PER_UNIT;
}

bool resp_objs_fit(conn *c)
{
    if (units_needed(c, c->resp_objs) <= resp_obj_budget) {
        return true;
    }
    c->resp_objs--;
    c->resp_unsent--;
    if (c->thread_stats != NULL) {
        STAT_INCR(c->thread_stats->response_obj_oom);
    }
    return false;
}

void resp_park(conn *c)
{
    worker_parked.conns++;
    worker_parked.objs += c->resp_unsent;
    c->resp_parked = c->resp_unsent;
}

void resp_unpark(conn *c)
{
    worker_parked.conns--;
    worker_parked.objs -= c->resp_parked;
    c->resp_parked = 0;
}

bool resp_read_buf_fits(conn *c)
{
    if (units_needed(c, 0) <= resp_obj_budget) {
        return true;
    }
    if (c->thread_stats != NULL) {
        STAT_INCR(c->thread_stats->read_buf_oom);
    }
    return false;
}

void conn_buf_adopt(conn *c)
{
    if (c->buf_usage == NULL || c->buf_charged) {
        return;
    }
    if (c->buf_cached) {
        gauge_add(&cached_bytes, -(int64_t)bytes_of(c));
        c->buf_cached = false;
    }
    c->buf_charged = true;
    atomic_fetch_add_explicit(&c->buf_usage->buffer_sets, 1,
                              memory_order_relaxed);
    charge(c, c->rsize, (int64_t)reply_bytes_of(c), c->pieces_size);
}

void conn_buf_release(conn *c)
{
    resp_written(c);
    /* what is left of the input is dead: a struct kept for the next
     * connection keeps buffers of the first sizes only */
    c->rbytes = 0;
    c->rcurr = c->rbuf;
    conn_buf_shrink(c);
    if (c->buf_charged) {
        charge(c, -(int64_t)c->rsize, -(int64_t)reply_bytes_of(c),
               -(int64_t)c->pieces_size);
        atomic_fetch_sub_explicit(&c->buf_usage->buffer_sets, 1,
                                  memory_order_relaxed);
        c->buf_charged = false;
    }
    if (!c->buf_cached) {
        gauge_add(&cached_bytes, (int64_t)bytes_of(c));
        c->buf_cached = true;
    }
}

void conn_buf_totals(struct conn_buf_totals *out)
{
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
    c->resp_mark_pieces = 0;
    c->resp_mark_wbuf = 0;
    c->resp_objs = 0;
    c->resp_unsent = 0;
    c->resp_parked = 0;
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
    /* written, in the middle of a command too (its value still coming):
     * nothing queued is left to drop */
    c->resp_mark_pieces = 0;
    c->resp_mark_wbuf = 0;
}

void resp_drop_unsent(conn *c)
{
    int from = c->resp_mark_pieces;
    int sent = c->write_started + (c->write_offset > 0 ? 1 : 0);
    if (from >= sent) {
        release_from(c, from);
        /* copied bytes may have been merged into the last piece kept: a
         * copied piece that was last ended where the reply buffer ended
         * at the mark */
        c->wbuf_used = c->resp_mark_wbuf;
        if (c->npieces > 0 && c->pieces[c->npieces - 1].copied) {
            resp_piece *last = &c->pieces[c->npieces - 1];
            last->len = c->resp_mark_wbuf - last->buf_off;
        }
    } else {
        /* a write in the middle of a command sent part of them: keep
         * what has gone out (its reply buffer bytes stay unused) */
        release_from(c, sent);
    }
    c->resp_mark_pieces = c->npieces;
    c->resp_mark_wbuf = c->wbuf_used;
    if (resp_obj_budget != 0) {
        c->resp_unsent -= c->resp_objs;
    }
    c->resp_objs = 0;
}

bool resp_grow_pieces(conn *c)
{
    size_t more = (size_t)c->pieces_size * sizeof(resp_piece);
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

bool resp_grow_wbuf(conn *c, size_t len)
{
    size_t nsize = c->wbuf_size;
    while (c->wbuf_used + len > nsize) {
        nsize *= 2;
    }
    if (nsize > UINT32_MAX) {
        return false;
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

bool resp_add_item_slow(conn *c, item *it, size_t off, size_t len)
{
    if (len == 0) {
        /* An empty window (a binary get of a 0-byte value) is not queued,
         * as resp_add queues no empty copy: the writer passes a piece
         * only when written bytes reach past it (conn.c), so an empty
         * last piece would stay unwritten for ever: TCP would send it
         * alone and take sendmsg's 0 for a dead peer (closing the
         * connection), UDP would loop on it.  Nothing will read the
         * item, so its reference goes now. */
        item_remove(it);
        return true;
    }
    if (!resp_grow_pieces(c)) {
        item_remove(it);
        return false;
    }
    return resp_add_item(c, it, off, len);
}
