/*
 * proto_util.c: helpers the ASCII protocol files share (proto_text.c,
 * proto_meta.c, proto_admin.c): the classic "noreply" switch, client
 * flags and 32-bit number parsing, the per-worker counting of incr/decr
 * and cas outcomes, and the refusal of a value that could not be given an
 * item (set and ms).
 *
 * Locks: none of our own.  reject_value() may delete the stale value of a
 * failed set through item_delete(), which takes the item lock itself
 * (items.h).  Statistics go to the calling worker's own counters
 * (STAT_INCR).
 */
#include "config.h"
#include "proto_internal.h"

/* A classic command's trailing "noreply" turns its nominal reply off. */
bool set_noreply_maybe(conn *c, token_t *tokens, size_t ntokens)
{
    const char *last = tokens[ntokens - 2].value;

    if (last != NULL && strcmp(last, "noreply") == 0) {
        c->noreply = true;
    }
    return c->noreply;
}

/* Client flags: memcached parses them as an unsigned long and keeps the low
 * 32 bits, so "4294967296" is accepted (as 0) while "-1" is refused. */
bool parse_client_flags(const char *str, client_flags_t *out)
{
    uint64_t v;

    if (!safe_strtoull(str, &v)) {
        *out = 0;
        return false;
    }
    *out = (client_flags_t)v;
    return true;
}

/* A signed 32-bit number (exptimes, lengths, TTL tokens) as memcached
 * reads one: strtol into a 64-bit long, then only its low 32 bits, so
 * "2147483648" is -2147483648 and "4294967297" is 1.  Past 64 bits it is
 * refused. */
bool parse_wrapped_int32(const char *str, int32_t *out)
{
    int64_t v;
    uint32_t low;

    *out = 0;
    if (!safe_strtoll(str, &v)) {
        return false;
    }
    low = (uint32_t)(uint64_t)v;
    *out = low <= INT32_MAX ? (int32_t)low
                            : -(int32_t)(UINT32_MAX - low) - 1;
    return true;
}

/* incr/decr outcome; hit is the updated item, NULL on a miss */
void count_arith(conn *c, bool incr, const item *hit)
{
    struct thread_stats *s = tstats(c);

    if (hit != NULL) {
        if (incr) {
            STAT_INCR(class_stats(c, hit->slabs_clsid)->incr_hits);
        } else {
            STAT_INCR(class_stats(c, hit->slabs_clsid)->decr_hits);
        }
    } else if (incr) {
        STAT_INCR(s->incr_misses);
    } else {
        STAT_INCR(s->decr_misses);
    }
}

/* cas outcome of a store that demanded a cas match */
void count_cas(conn *c, const item *it, enum store_item_type ret)
{
    struct thread_stats *s = tstats(c);

    if (ret == STORED) {
        STAT_INCR(class_stats(c, it->slabs_clsid)->cas_hits);
    } else if (ret == EXISTS) {
        STAT_INCR(class_stats(c, it->slabs_clsid)->cas_badval);
    } else if (ret == NOT_FOUND) {
        STAT_INCR(s->cas_misses);
    }
}

/* A failed set must not leave the previous value readable.  No delete
 * counter moves: memcached counts none here. */
static void drop_stale_value(conn *c, const char *key, size_t nkey)
{
    unsigned int clsid;

    item_delete(key, nkey, 0, conn_worker(c), &clsid);
}


/* The value could not be given an item: say why, drop the value from the
 * stream and, when drop_old (set, and ms in every mode, as memcached),
 * make sure the old value does not linger. */
void reject_value(conn *c, const char *key, size_t nkey,
                  client_flags_t flags, int vlen,
                  bool drop_old, bool always_report)
{
    struct thread_stats *s = tstats(c);
    const char *msg;

    if (!item_size_ok(nkey, flags, vlen)) {
        msg = "SERVER_ERROR object too large for cache";
        STAT_INCR(s->store_too_large);
    } else {
        msg = "SERVER_ERROR out of memory storing object";
        STAT_INCR(s->store_no_memory);
    }
    if (always_report) {
        out_errstring(c, msg);
    } else {
        out_string(c, msg);
    }
    conn_start_swallow(c, vlen);
    if (drop_old) {
        drop_stale_value(c, key, nkey);
    }
}
