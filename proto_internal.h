/*
 * proto_internal.h: what the ASCII protocol files share (proto_text.c,
 * proto_meta.c, proto_admin.c, proto_util.c), and the counters and cas
 * bookkeeping the binary protocol (proto_bin.c) shares with them;
 * nothing outside the protocol layer includes it.
 *
 * Owns the token type of a split request line, the reply line builder
 * (line_t and the generic line_* appenders) and the get/touch counters,
 * inline because every get runs them; the ms state bits kept in
 * conn.meta_pending_flags between the command line and complete_nread();
 * and the entry points one protocol file calls in another.
 *
 * Locks: none.  Everything here works on the calling worker's connection
 * and its own statistics.
 */
#ifndef PROTO_INTERNAL_H
#define PROTO_INTERNAL_H

#include "clock.h"
#include "conn.h"
#include "conn_buf.h"
#include "item_lock.h"
#include "logger.h"
#include "settings.h"
#include "stat_counter.h"
#include "stats.h"
#include "storage/storage.h"
#include "thread.h"
#include "util.h"

#include <string.h>

/* ---- tokens ---- */

typedef struct {
    char *value;
    size_t length;
} token_t;

#define MAX_TOKENS 24          /* meta commands accept up to this many */
#define COMMAND_TOKEN 0
#define SUBCOMMAND_TOKEN 1
#define KEY_TOKEN 1

static inline bool token_is(const token_t *tok, const char *word)
{
    return tok->value != NULL && strcmp(tok->value, word) == 0;
}

/* memcached maps negative exptimes to a time in the past: they expire at
 * once instead of wrapping around to "never". */
static inline rel_time_t exptime_from_client(int32_t exptime)
{
    return realtime(exptime < 0 ? (int64_t)REALTIME_MAXDELTA + 1 : exptime);
}

/* ---- reply line builder ----
 * Meta replies are assembled here, then queued with one resp_add();
 * the ASCII GET path writes its VALUE lines in place instead
 * (resp_reserve). */

#define LINE_MAX_BYTES 1024

typedef struct {
    char buf[LINE_MAX_BYTES];
    size_t len;
} line_t;

static inline void line_add(line_t *l, const char *s, size_t n)
{
    if (n > sizeof(l->buf) - l->len) {
        n = sizeof(l->buf) - l->len;   /* never happens with legal input */
    }
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static inline void line_str(line_t *l, const char *s)
{
    line_add(l, s, strlen(s));
}

static inline void line_u64(line_t *l, uint64_t v)
{
    char tmp[UINT64_TEXT_MAX];
    line_add(l, tmp, u64_to_text(v, tmp));
}

static inline void line_i64(line_t *l, int64_t v)
{
    char tmp[UINT64_TEXT_MAX + 1];
    line_add(l, tmp, i64_to_text(v, tmp));
}

static inline bool line_send(conn *c, line_t *l)
{
    line_add(l, "\r\n", 2);
    return resp_add(c, l->buf, l->len);
}

/* ---- statistics helpers ---- */

static inline struct thread_stats *tstats(conn *c)
{
    return c->thread_stats;
}

/* what the item API counts this connection's requests in */
static inline struct storage_worker *conn_worker(conn *c)
{
    return &c->thread->storage;
}

/* the per-class hit counters of this connection's worker */
static inline struct slab_stats *class_stats(conn *c, unsigned int clsid)
{
    return &c->thread->storage.stats.slab_stats[clsid];
}

static inline void count_get_hit(conn *c, const item *it, bool touched)
{
    struct thread_stats *s = tstats(c);

    /* memcached counts a get-and-touch as a touch only, not as a get */
    if (touched) {
        STAT_INCR(s->touch_cmds);
        STAT_INCR(class_stats(c, it->slabs_clsid)->touch_hits);
    } else {
        struct storage_worker *w = conn_worker(c);
        STAT_INCR(s->get_cmds);
        STAT_INCR(w->stats.slab_stats[it->slabs_clsid].get_hits);
        STAT_INCR(w->stats.lru_hits[it->slabs_clsid][w->hit_segment]);
    }
}

static inline void count_get_miss(conn *c, bool touched)
{
    struct thread_stats *s = tstats(c);

    if (touched) {
        STAT_INCR(s->touch_cmds);
        STAT_INCR(s->touch_misses);
    } else {
        STAT_INCR(s->get_cmds);
        STAT_INCR(s->get_misses);
    }
}

/* ---- ms: between the command line and complete_nread ---- */

/* meta_pending_flags bits: what complete_nread needs to finish an ms */
#define MSET_ACTIVE     (1u << 0)
#define MSET_QUIET      (1u << 1)
#define MSET_KEY_BINARY (1u << 2)
#define MSET_STALE      (1u << 3)

/* ---- proto_util.c ---- */

bool set_noreply_maybe(conn *c, token_t *tokens, size_t ntokens);
bool parse_client_flags(const char *str, client_flags_t *out);
bool parse_wrapped_int32(const char *str, int32_t *out);
void count_arith(conn *c, bool incr, const item *hit);
void count_cas(conn *c, const item *it, enum store_item_type ret);
void reject_value(conn *c, const char *key, size_t nkey,
                  client_flags_t flags, int vlen,
                  bool drop_old, bool always_report);

/* ---- proto_meta.c ---- */

void process_meta_family(conn *c, token_t *tokens, size_t ntokens);
void complete_mset(conn *c, item *it);

/* ---- proto_admin.c ---- */

void process_stat(conn *c, token_t *tokens, size_t ntokens);
void process_flush_all_command(conn *c, token_t *tokens, size_t ntokens);
void process_verbosity_command(conn *c, token_t *tokens, size_t ntokens);
void process_memlimit_command(conn *c, token_t *tokens, size_t ntokens);
void process_shutdown_command(conn *c, token_t *tokens, size_t ntokens);
void process_refresh_certs_command(conn *c, token_t *tokens, size_t ntokens);
void process_slabs_command(conn *c, token_t *tokens, size_t ntokens);
void process_lru_crawler_command(conn *c, token_t *tokens, size_t ntokens);
void process_lru_command(conn *c, token_t *tokens, size_t ntokens);
void process_watch_command(conn *c, token_t *tokens, size_t ntokens);
#ifdef MEMCACHED_DEBUG
void process_misbehave_command(conn *c);
void process_debugfail_command(conn *c, token_t *tokens);
void process_debugtime_command(conn *c, token_t *tokens);
void process_debugmove_command(conn *c, token_t *tokens);
#endif

#endif
