/*
 * proto_text.c: the ASCII protocol of memcached 1.6.18: the tokenizer,
 * the dispatch of a request line and the classic commands (get, gets, gat,
 * gats, set, add, replace, append, prepend, cas, delete, incr, decr,
 * touch, version, quit).  Meta commands live in proto_meta.c, stats and
 * administrative commands in proto_admin.c, what they share in
 * proto_util.c and proto_internal.h.
 *
 * The connection machine (conn.c) calls us through proto_ascii (struct
 * conn_proto): we frame the request line (NUL-terminated, "\r\n"
 * stripped) and dispatch it (process_command_ascii), and complete_nread
 * runs once the value of a storage command has been read into the item we
 * allocated.  Replies are byte-for-byte those of stock memcached 1.6.18,
 * including its error strings and its quirks (which are noted where they
 * look surprising).
 *
 * Locks: none of our own.  The item calls take the item lock themselves
 * (items.h).  Statistics go to the calling worker's own counters
 * (STAT_INCR).
 *
 * Parsing is in place: the line is split into tokens by writing NULs over
 * the separating spaces, keys are used where they lie, and values are
 * queued zero-copy with resp_add_item().
 */
#include "config.h"
#include "proto_text.h"
#include "proto_internal.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* a line without '\n' past this closes the connection, except a
 * multiget's */
#define LINE_LIMIT 2048

/*
 * Split `command` on single spaces (runs of spaces count as one; tabs are
 * not separators, as in memcached).  At most max_tokens - 1 words are
 * returned; the last entry is a terminal token of length 0 whose value is
 * NULL when the whole line was consumed, or points to the unsplit rest of
 * the line (long multi-gets are processed in batches this way).  Returns
 * the number of entries including the terminal one.
 */
static size_t tokenize_command(char *command, token_t *tokens,
                               size_t max_tokens)
{
    size_t ntokens = 0;
    char *p = command;

    for (;;) {
        while (*p == ' ') {
            p++;
        }
        if (*p == '\0') {
            tokens[ntokens].value = NULL;
            break;
        }
        if (ntokens == max_tokens - 1) {
            tokens[ntokens].value = p;   /* rest of the line, unsplit */
            break;
        }
        tokens[ntokens].value = p;
        while (*p != ' ' && *p != '\0') {
            p++;
        }
        tokens[ntokens].length = (size_t)(p - tokens[ntokens].value);
        ntokens++;
        if (*p == ' ') {
            *p++ = '\0';
        }
    }
    tokens[ntokens].length = 0;
    return ntokens + 1;
}

/* ---- retrieval: get, gets, gat, gats ---- */

/* Is any key of this request longer than memcached allows?  memcached
 * answers such a request with a lone CLIENT_ERROR, dropping the values it
 * had already queued; we cannot take queued bytes back, so we look first. */
static bool request_has_overlong_key(const token_t *first)
{
    const token_t *t;
    const char *p;

    for (t = first; t->length != 0; t++) {
        if (t->length > KEY_MAX_LENGTH) {
            return true;
        }
    }
    /* t is the terminal token: the unsplit rest of the line, if any */
    for (p = t->value; p != NULL && *p != '\0';) {
        size_t run;
        while (*p == ' ') {
            p++;
        }
        run = strcspn(p, " ");
        if (run > KEY_MAX_LENGTH) {
            return true;
        }
        p += run;
    }
    return false;
}

/* "VALUE <key> <flags> <bytes> [<cas>]\r\n" at its longest */
#define VALUE_LINE_MAX (6 + KEY_MAX_LENGTH + 3 * (1 + UINT64_TEXT_MAX) + 2)

/* The VALUE line is written straight into the reply (the GET path's one
 * copy of it); the value and its "\r\n" go out from the item itself. */
static bool queue_value(conn *c, item *it, bool return_cas)
{
    char *line = resp_reserve(c, VALUE_LINE_MAX);
    if (line == NULL) {
        item_remove(it);
        return false;
    }
    char *p = line;
    memcpy(p, "VALUE ", 6);
    p += 6;
    memcpy(p, ITEM_key(it), it->nkey);
    p += it->nkey;
    *p++ = ' ';
    p += u64_to_text(it->client_flags, p);
    *p++ = ' ';
    p += u64_to_text(it->nbytes - 2, p);
    if (return_cas) {
        *p++ = ' ';
        p += u64_to_text(ITEM_get_cas(it), p);
    }
    *p++ = '\r';
    *p++ = '\n';
    if (!resp_commit(c, (size_t)(p - line))) {
        item_remove(it);
        return false;
    }
    /* the queue owns our reference from here on */
    return resp_add_item(c, it, 0, it->nbytes);
}

/* Look one key up, count it, and queue its VALUE unless only counting.
 * False when the reply cannot be built (out of memory: the value could
 * not be copied out of the N-zone, or the reply could not grow). */
static bool get_one_key(conn *c, const token_t *key, bool return_cas,
                        bool touch, rel_time_t exptime, bool emit)
{
    item *it;
    enum item_lookup found;

    if (touch) {
        it = item_touch(key->value, key->length, exptime, conn_worker(c),
                        true, &found);
    } else {
        it = item_get(key->value, key->length, conn_worker(c), DO_UPDATE,
                      &found);
    }
    if (found == LOOKUP_NO_MEMORY) {
        return false;
    }
    if (settings.detail_enabled) {
        stats_prefix_record_get(key->value, key->length, it != NULL);
    }
    if (it == NULL) {
        count_get_miss(c, touch);
        return true;
    }
    count_get_hit(c, it, touch);
    if (!emit) {
        item_remove(it);
        return true;
    }
    return queue_value(c, it, return_cas);
}

/* A multiget that cannot go on answers its error alone: memcached drops
 * every reply it had not sent yet, this one's and those of the commands
 * pipelined before it since its last flush, and needs a response object
 * for the error (without one it closes the connection). */
static void fail_get(conn *c, const char *error)
{
    resp_drop_unsent(c);
    if (!resp_command_begin(c)) {
        conn_set_state(c, conn_closing);
        return;
    }
    out_string(c, error);
}

static void process_get_command(conn *c, token_t *tokens, bool return_cas,
                                bool touch)
{
    token_t *key = &tokens[KEY_TOKEN];
    rel_time_t exptime = 0;
    bool overlong;
    bool first = true;

    if (touch) {
        int32_t exptime_int;
        if (!parse_wrapped_int32(tokens[1].value, &exptime_int)) {
            out_string(c, "CLIENT_ERROR invalid exptime argument");
            return;
        }
        exptime = exptime_from_client(exptime_int);
        key++;
    }
    overlong = request_has_overlong_key(key);

    for (;;) {
        for (; key->length != 0; key++) {
            /* memcached takes a response object for every key after the
             * first, before it looks at the key */
            if (!first && !resp_next_key(c)) {
                fail_get(c, "SERVER_ERROR out of memory writing get "
                         "response");
                return;
            }
            first = false;
            if (key->length > KEY_MAX_LENGTH) {
                fail_get(c, "CLIENT_ERROR bad command line format");
                return;
            }
            /* keys before an overlong one are still looked up and
             * counted, as memcached does, but their values are dropped */
            if (!get_one_key(c, key, return_cas, touch, exptime,
                             !overlong)) {
                fail_get(c,
                    "SERVER_ERROR out of memory writing get response");
                return;
            }
        }
        if (key->value == NULL) {
            break;
        }
        /* more keys than one batch of tokens: split the rest */
        tokenize_command(key->value, tokens, MAX_TOKENS);
        key = tokens;
    }
    if (!resp_add(c, "END\r\n", 5)) {
        fail_get(c, "SERVER_ERROR out of memory writing get response");
        return;
    }
    resp_flush_point(c);        /* memcached writes its replies here */
}

/* ---- storage: set, add, replace, append, prepend, cas ---- */

static void process_update_command(conn *c, token_t *tokens, size_t ntokens,
                                   enum store_cmd comm, bool handle_cas)
{
    const char *key = tokens[KEY_TOKEN].value;
    size_t nkey = tokens[KEY_TOKEN].length;
    client_flags_t flags;
    int32_t exptime_int;
    int32_t vlen;
    uint64_t req_cas = 0;
    item *it;

    set_noreply_maybe(c, tokens, ntokens);
    if (nkey > KEY_MAX_LENGTH) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    if (!parse_client_flags(tokens[2].value, &flags)
        || !parse_wrapped_int32(tokens[3].value, &exptime_int)
        || !parse_wrapped_int32(tokens[4].value, &vlen)) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    if (handle_cas && !safe_strtoull(tokens[5].value, &req_cas)) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    if (vlen < 0 || vlen > INT_MAX - 2) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    vlen += 2;
    if (settings.detail_enabled) {
        stats_prefix_record_set(key, nkey);
    }

    it = item_alloc(key, nkey, flags, exptime_from_client(exptime_int), vlen,
                    conn_worker(c));
    if (it == NULL) {
        LOGGER_STORE(key, nkey, item_size_ok(nkey, flags, vlen) ? NO_MEMORY
                     : TOO_LARGE, comm, false, 0, 0, 0);
        reject_value(c, key, nkey, flags, vlen, comm == NREAD_SET, false);
        return;
    }
    c->cas = req_cas;
    conn_start_nread(c, it, vlen, comm);
}

static bool value_is_terminated(const item *it)
{
    const char *end = ITEM_data(it) + it->nbytes - 2;
    return it->nbytes >= 2 && end[0] == '\r' && end[1] == '\n';
}

static void complete_update_ascii(conn *c, item *it)
{
    enum store_item_type ret;

    ret = store_item(it, c->cmd, conn_worker(c), c->cas, NULL, false);
    if (c->cmd == NREAD_CAS) {
        count_cas(c, it, ret);
    }
    switch (ret) {
    case STORED:
        out_string(c, "STORED");
        break;
    case EXISTS:
        out_string(c, "EXISTS");
        break;
    case NOT_FOUND:
        out_string(c, "NOT_FOUND");
        break;
    case NOT_STORED:
        out_string(c, "NOT_STORED");
        break;
    case TOO_LARGE:
        out_string(c, "SERVER_ERROR object too large for cache");
        break;
    case NO_MEMORY:
        out_string(c, "SERVER_ERROR out of memory storing object");
        break;
    }
}

/* ---- delete, incr/decr, touch ---- */

static void process_delete_command(conn *c, token_t *tokens, size_t ntokens)
{
    const char *key = tokens[KEY_TOKEN].value;
    size_t nkey = tokens[KEY_TOKEN].length;
    unsigned int clsid;

    if (ntokens > 3) {
        /* only the legacy hold time "0" and "noreply" may follow the key */
        bool hold_is_zero = token_is(&tokens[KEY_TOKEN + 1], "0");
        bool noreply = set_noreply_maybe(c, tokens, ntokens);
        bool valid = (ntokens == 4 && (hold_is_zero || noreply))
                     || (ntokens == 5 && hold_is_zero && noreply);
        if (!valid) {
            out_string(c, "CLIENT_ERROR bad command line format.  "
                          "Usage: delete <key> [noreply]");
            return;
        }
    }
    if (nkey > KEY_MAX_LENGTH) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    if (settings.detail_enabled) {
        stats_prefix_record_delete(key, nkey);
    }
    if (item_delete(key, nkey, 0, conn_worker(c), &clsid) != DELETE_OK) {
        STAT_INCR(tstats(c)->delete_misses);
        out_string(c, "NOT_FOUND");
        return;
    }
    STAT_INCR(class_stats(c, clsid)->delete_hits);
    out_string(c, "DELETED");
}

static void process_arithmetic_command(conn *c, token_t *tokens,
                                       size_t ntokens, bool incr)
{
    const char *key = tokens[KEY_TOKEN].value;
    size_t nkey = tokens[KEY_TOKEN].length;
    char number[INCR_MAX_STORAGE_LEN + 1];
    uint64_t delta;
    item *it = NULL;

    set_noreply_maybe(c, tokens, ntokens);
    if (nkey > KEY_MAX_LENGTH) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    if (!safe_strtoull(tokens[2].value, &delta)) {
        out_string(c, "CLIENT_ERROR invalid numeric delta argument");
        return;
    }
    number[0] = '\0';
    switch (add_delta(conn_worker(c), key, nkey, incr, delta, number, 0, NULL,
                      &it)) {
    case DELTA_OK:
        count_arith(c, incr, it);
        if (it != NULL) {
            item_remove(it);
        }
        out_string(c, number);
        break;
    case DELTA_NON_NUMERIC:
        out_string(c,
            "CLIENT_ERROR cannot increment or decrement non-numeric value");
        break;
    case DELTA_EOM:
        out_string(c, "SERVER_ERROR out of memory");
        break;
    case DELTA_ITEM_NOT_FOUND:
        count_arith(c, incr, NULL);
        out_string(c, "NOT_FOUND");
        break;
    case DELTA_ITEM_CAS_MISMATCH:
        break;   /* no cas was asked for */
    }
}

static void process_touch_command(conn *c, token_t *tokens, size_t ntokens)
{
    const char *key = tokens[KEY_TOKEN].value;
    size_t nkey = tokens[KEY_TOKEN].length;
    int32_t exptime_int;
    item *it;
    enum item_lookup found;

    set_noreply_maybe(c, tokens, ntokens);
    if (nkey > KEY_MAX_LENGTH) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    if (!parse_wrapped_int32(tokens[2].value, &exptime_int)) {
        out_string(c, "CLIENT_ERROR invalid exptime argument");
        return;
    }
    it = item_touch(key, nkey, exptime_from_client(exptime_int),
                    conn_worker(c), false, &found);
    if (found == LOOKUP_NO_MEMORY) {
        out_string(c, "SERVER_ERROR out of memory");
        return;
    }
    if (it == NULL) {
        count_get_miss(c, true);
        out_string(c, "NOT_FOUND");
        return;
    }
    count_get_hit(c, it, true);
    item_remove(it);
    out_string(c, "TOUCHED");
}

/* ---- dispatch ---- */

/* Is the command token word?  Length first, then the bytes: the compiler
 * turns each comparison with a literal into a few instructions, where a
 * call to strcmp per candidate would cost every request dozens. */
#define COMMAND_IS(tok, word) \
    ((tok)->length == sizeof(word) - 1 \
     && memcmp((tok)->value, (word), sizeof(word) - 1) == 0)

/* Token-count gates: memcached answers a wrong count with plain ERROR. */
static bool tokens_between(conn *c, size_t ntokens, size_t lo, size_t hi)
{
    if (ntokens < lo || ntokens > hi) {
        out_string(c, "ERROR");
        return false;
    }
    return true;
}

static void dispatch_storage(conn *c, token_t *tokens, size_t ntokens,
                             enum store_cmd comm)
{
    if (comm == NREAD_CAS) {
        if (tokens_between(c, ntokens, 7, 8)) {
            process_update_command(c, tokens, ntokens, comm, true);
        }
    } else if (tokens_between(c, ntokens, 6, 7)) {
        process_update_command(c, tokens, ntokens, comm, false);
    }
}

static void dispatch_get_family(conn *c, token_t *tokens, size_t ntokens)
{
    const token_t *cmd = &tokens[COMMAND_TOKEN];

    if (!tokens_between(c, ntokens, 3, MAX_TOKENS)) {
        return;
    }
    if (COMMAND_IS(cmd, "get")) {
        process_get_command(c, tokens, false, false);
    } else if (COMMAND_IS(cmd, "gets")) {
        process_get_command(c, tokens, true, false);
    } else if (COMMAND_IS(cmd, "gat")) {
        process_get_command(c, tokens, false, true);
    } else if (COMMAND_IS(cmd, "gats")) {
        process_get_command(c, tokens, true, true);
    } else {
        out_string(c, "ERROR");
    }
}

/* Commands whose first letter is not enough to route them. */
static void dispatch_other(conn *c, token_t *tokens, size_t ntokens)
{
    const token_t *cmd = &tokens[COMMAND_TOKEN];

    if (COMMAND_IS(cmd, "flush_all")) {
        if (tokens_between(c, ntokens, 2, 4)) {
            process_flush_all_command(c, tokens, ntokens);
        }
    } else if (COMMAND_IS(cmd, "version")) {
        out_string(c, "VERSION " MEMCACHED_COMPAT_VERSION);
    } else if (COMMAND_IS(cmd, "quit")) {
        /* flush what earlier commands answered, then hang up without
         * reading anything further */
        conn_close_after_write(c);
        conn_set_state(c, conn_write);
    } else if (COMMAND_IS(cmd, "lru_crawler")) {
        process_lru_crawler_command(c, tokens, ntokens);
    } else if (COMMAND_IS(cmd, "watch")) {
        process_watch_command(c, tokens, ntokens);
    } else if (COMMAND_IS(cmd, "verbosity")) {
        if (tokens_between(c, ntokens, 3, 4)) {
            process_verbosity_command(c, tokens, ntokens);
        }
    } else if (COMMAND_IS(cmd, "lru")) {
        if (tokens_between(c, ntokens, 3, MAX_TOKENS)) {
            process_lru_command(c, tokens, ntokens);
        }
#ifdef MEMCACHED_DEBUG
    } else if (COMMAND_IS(cmd, "misbehave")) {
        process_misbehave_command(c);
#endif
    } else if (strncmp(tokens[ntokens - 2].value, "HTTP/", 5) == 0) {
        /* a web browser or HTTP probe: hang up, as memcached does */
        conn_set_state(c, conn_closing);
    } else {
        out_string(c, "ERROR");
    }
}

static void process_command_ascii(conn *c, char *command, size_t len)
{
    token_t tokens[MAX_TOKENS];
    size_t ntokens;
    const token_t *cmd;

    (void)len;
    c->noreply = false;
    c->meta_pending_flags = 0;
    c->meta_pending_len = 0;

    ntokens = tokenize_command(command, tokens, MAX_TOKENS);
    /* every command has at least two letters */
    if (ntokens < 2 || tokens[COMMAND_TOKEN].length < 2) {
        out_string(c, "ERROR");
        return;
    }
    cmd = &tokens[COMMAND_TOKEN];

    if (cmd->value[0] == 'm' && cmd->length == 2) {
        process_meta_family(c, tokens, ntokens);
    } else if (cmd->value[0] == 'g') {
        dispatch_get_family(c, tokens, ntokens);
    } else if (COMMAND_IS(cmd, "set")) {
        dispatch_storage(c, tokens, ntokens, NREAD_SET);
    } else if (COMMAND_IS(cmd, "add")) {
        dispatch_storage(c, tokens, ntokens, NREAD_ADD);
    } else if (COMMAND_IS(cmd, "replace")) {
        dispatch_storage(c, tokens, ntokens, NREAD_REPLACE);
    } else if (COMMAND_IS(cmd, "append")) {
        dispatch_storage(c, tokens, ntokens, NREAD_APPEND);
    } else if (COMMAND_IS(cmd, "prepend")) {
        dispatch_storage(c, tokens, ntokens, NREAD_PREPEND);
    } else if (COMMAND_IS(cmd, "cas")) {
        dispatch_storage(c, tokens, ntokens, NREAD_CAS);
    } else if (COMMAND_IS(cmd, "stats")) {
        process_stat(c, tokens, ntokens);
    } else if (COMMAND_IS(cmd, "shutdown")) {
        process_shutdown_command(c, tokens, ntokens);
    } else if (COMMAND_IS(cmd, "refresh_certs")) {
        process_refresh_certs_command(c, tokens, ntokens);
    } else if (COMMAND_IS(cmd, "slabs")) {
        process_slabs_command(c, tokens, ntokens);
    } else if (COMMAND_IS(cmd, "cache_memlimit")) {
        if (tokens_between(c, ntokens, 3, 4)) {
            process_memlimit_command(c, tokens, ntokens);
        }
    } else if (COMMAND_IS(cmd, "incr") || COMMAND_IS(cmd, "decr")) {
        if (tokens_between(c, ntokens, 4, 5)) {
            process_arithmetic_command(c, tokens, ntokens,
                                       cmd->value[0] == 'i');
        }
    } else if (COMMAND_IS(cmd, "delete")) {
        if (tokens_between(c, ntokens, 3, 5)) {
            process_delete_command(c, tokens, ntokens);
        }
    } else if (COMMAND_IS(cmd, "touch")) {
        if (tokens_between(c, ntokens, 4, 5)) {
            process_touch_command(c, tokens, ntokens);
        }
#ifdef MEMCACHED_DEBUG
    } else if (COMMAND_IS(cmd, "debugtime")) {
        process_debugtime_command(c, tokens);
    } else if (COMMAND_IS(cmd, "debugfail")) {
        process_debugfail_command(c, tokens);
    } else if (COMMAND_IS(cmd, "debugmove")) {
        process_debugmove_command(c, tokens);
#endif
    } else {
        dispatch_other(c, tokens, ntokens);
    }
}

static void complete_nread(conn *c)
{
    item *it = c->item;
    bool meta = (c->meta_pending_flags & MSET_ACTIVE) != 0;

    c->item = NULL;
    STAT_INCR(class_stats(c, it->slabs_clsid)->set_cmds);

    if (!value_is_terminated(it)) {
        /* memcached reports bad chunks even under noreply for ms only;
         * the rest of the line is then read as the next command */
        if (meta) {
            out_errstring(c, "CLIENT_ERROR bad data chunk");
        } else {
            out_string(c, "CLIENT_ERROR bad data chunk");
        }
    } else if (meta) {
        complete_mset(c, it);
    } else {
        complete_update_ascii(c, it);
    }
    c->meta_pending_flags = 0;
    c->meta_pending_len = 0;
    item_remove(it);
}

/* Only a multiget may have a line longer than LINE_LIMIT. */
static bool line_may_grow(conn *c)
{
    const char *p = c->rcurr;
    const char *end = c->rcurr + c->rbytes;
    while (p < end && *p == ' ') {
        p++;
    }
    if (p - c->rcurr > 100) {
        return false;
    }
    size_t left = end - p;
    return (left >= 4 && memcmp(p, "get ", 4) == 0) ||
           (left >= 5 && memcmp(p, "gets ", 5) == 0);
}

/* An ASCII request: a line. */
static bool try_read_command_ascii(conn *c)
{
    char *el = memchr(c->rcurr, '\n', c->rbytes);
    if (el == NULL) {
        if (c->rbytes > LINE_LIMIT && !line_may_grow(c)) {
            conn_set_state(c, conn_closing);
            return true;
        }
        return false;
    }
    char *cont = el + 1;
    if (el > c->rcurr && el[-1] == '\r') {
        el--;
    }
    *el = '\0';
    size_t len = el - c->rcurr;
    char *line = c->rcurr;
    c->rbytes -= cont - c->rcurr;
    c->rcurr = cont;
    if (settings.verbose > 1) {
        fprintf(stderr, "<%d %s\n", c->sfd, line);
    }
    if (!conn_command_begin(c)) {
        return true;
    }
    process_command_ascii(c, line, len);
    conn_command_end(c);
    return true;
}

const struct conn_proto proto_ascii = {
    .name = "ascii",
    .lines = true,
    .try_read_command = try_read_command_ascii,
    .complete_nread = complete_nread,
};
