/*
 * proto_admin.c: the statistics and administrative commands of the ASCII
 * protocol of memcached 1.6.18: stats (with detail and cachedump),
 * flush_all, verbosity, cache_memlimit, shutdown, refresh_certs, slabs,
 * lru_crawler (writing metadump's batches as the client reads them), lru,
 * watch (whose streams are logger.c's), and in debug builds misbehave,
 * debugfail, debugmove and debugtime.
 * proto_text.c's dispatch calls in here once it has gated the token count.
 *
 * Locks: none of our own.  The stats and item calls take the locks they
 * need themselves (items.h, slabs.h, crawler.h); the settings changed here
 * are atomics that workers read while we write them (settings.h).
 * Statistics go to the calling worker's own counters (STAT_INCR).
 */
#include "config.h"
#include "proto_internal.h"
#include "storage/storage.h"
#include "tls.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_VERBOSITY_LEVEL 2

/* ---- stats ---- */

/* Queue a malloc'd reply and free it (cachedump, detail dump). */
static void write_and_free(conn *c, char *buf, size_t len)
{
    if (buf == NULL) {
        out_errstring(c, "SERVER_ERROR out of memory writing stats");
        return;
    }
    if (!resp_add(c, buf, len)) {
        out_errstring(c, "SERVER_ERROR out of memory writing stats");
    }
    free(buf);
}

static void stats_end(conn *c)
{
    append_ascii_stats(NULL, 0, NULL, 0, c);
}

static void process_stats_detail(conn *c, const char *what)
{
    if (strcmp(what, "on") == 0) {
        SETTING_STORE(detail_enabled, 1);
        out_string(c, "OK");
    } else if (strcmp(what, "off") == 0) {
        SETTING_STORE(detail_enabled, 0);
        out_string(c, "OK");
    } else if (strcmp(what, "dump") == 0) {
        int len = 0;
        char *dump = stats_prefix_dump(&len);
        write_and_free(c, dump, (size_t)len);
    } else {
        out_string(c, "CLIENT_ERROR usage: stats detail on|off|dump");
    }
}

static void process_stats_cachedump(conn *c, token_t *tokens, size_t ntokens)
{
    uint32_t id;
    uint32_t limit;
    unsigned int bytes = 0;
    char *buf;

    if (!settings.dump_enabled) {
        out_string(c, "CLIENT_ERROR stats cachedump not allowed");
        return;
    }
    if (ntokens < 5) {
        out_string(c, "CLIENT_ERROR bad command line");
        return;
    }
    if (!safe_strtoul(tokens[2].value, &id)
        || !safe_strtoul(tokens[3].value, &limit)) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    if (id >= MAX_NUMBER_OF_SLAB_CLASSES) {
        out_string(c, "CLIENT_ERROR Illegal slab id");
        return;
    }
    buf = item_cachedump(id, limit, &bytes);
    write_and_free(c, buf, bytes);
}

void process_stat(conn *c, token_t *tokens, size_t ntokens)
{
    const char *sub = tokens[SUBCOMMAND_TOKEN].value;

    if (ntokens == 2) {
        server_stats(append_ascii_stats, c);
        stats_end(c);
    } else if (strcmp(sub, "reset") == 0) {
        stats_reset();
        out_string(c, "RESET");
    } else if (strcmp(sub, "detail") == 0) {
        process_stats_detail(c, ntokens < 4 ? "" : tokens[2].value);
    } else if (strcmp(sub, "settings") == 0) {
        process_stat_settings(append_ascii_stats, c);
        stats_end(c);
    } else if (strcmp(sub, "cachedump") == 0) {
        process_stats_cachedump(c, tokens, ntokens);
    } else if (strcmp(sub, "conns") == 0) {
        process_stat_conns(append_ascii_stats, c);
        stats_end(c);
    } else if (strcmp(sub, "items") == 0) {
        item_stats(append_ascii_stats, c);
        stats_end(c);
    } else if (strcmp(sub, "tier") == 0) {
        if (ntokens >= 4 && strcmp(tokens[2].value, "classes") == 0) {
            tier_stats_classes(append_ascii_stats, c);
        } else {
            tier_stats(append_ascii_stats, c);
        }
        stats_end(c);
    } else if (strcmp(sub, "slabs") == 0) {
        slabs_stats(append_ascii_stats, c);
        stats_end(c);
    } else if (strcmp(sub, "sizes") == 0) {
        item_stats_sizes(append_ascii_stats, c);
        stats_end(c);
    } else if (strcmp(sub, "sizes_enable") == 0) {
        /* memcached sends this one line without an END */
        item_stats_sizes_enable();
        append_stat("sizes_status", append_ascii_stats, c, "enabled");
    } else if (strcmp(sub, "sizes_disable") == 0) {
        item_stats_sizes_disable();
        append_stat("sizes_status", append_ascii_stats, c, "disabled");
    } else {
        out_string(c, "ERROR");
    }
}

/* ---- administrative commands ---- */

void process_flush_all_command(conn *c, token_t *tokens,
                               size_t ntokens)
{
    int32_t delay = 0;

    set_noreply_maybe(c, tokens, ntokens);
    STAT_INCR(tstats(c)->flush_cmds);
    if (!settings.flush_enabled) {
        out_string(c, "CLIENT_ERROR flush_all not allowed");
        return;
    }
    /* a delay is present unless the line is just "flush_all [noreply]" */
    if (ntokens != (c->noreply ? 3u : 2u)
        && !safe_strtol(tokens[1].value, &delay)) {
        out_string(c, "CLIENT_ERROR invalid exptime argument");
        return;
    }
    items_flush(delay > 0 ? delay : 0);
    out_string(c, "OK");
}

void process_verbosity_command(conn *c, token_t *tokens,
                               size_t ntokens)
{
    uint32_t level;

    set_noreply_maybe(c, tokens, ntokens);
    if (!safe_strtoul(tokens[1].value, &level)) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    SETTING_STORE(verbose, level > MAX_VERBOSITY_LEVEL ? MAX_VERBOSITY_LEVEL
                                                       : (int)level);
    out_string(c, "OK");
}

void process_memlimit_command(conn *c, token_t *tokens,
                              size_t ntokens)
{
    uint32_t megabytes;

    set_noreply_maybe(c, tokens, ntokens);
    if (!safe_strtoul(tokens[1].value, &megabytes)) {
        out_string(c, "ERROR");
    } else if (megabytes < 8) {
        out_string(c,
            "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m");
    } else if (megabytes > 1000000000) {
        out_string(c,
            "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes");
    } else if (slabs_adjust_mem_limit((size_t)megabytes * 1024 * 1024)) {
        if (settings.verbose > 0) {
            fprintf(stderr, "maxbytes adjusted to %um\n", megabytes);
        }
        out_string(c, "OK");
    } else {
        out_string(c,
            "MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust");
    }
}

void process_shutdown_command(conn *c, token_t *tokens,
                              size_t ntokens)
{
    if (!settings.shutdown_command) {
        out_string(c, "ERROR: shutdown not enabled");
        return;
    }
    if (ntokens == 2
        || (ntokens == 3 && token_is(&tokens[1], "graceful"))) {
        conn_set_state(c, conn_closing);
        /* as memcached: the daemon's SIGINT and SIGUSR1 (graceful) stops
         * (memcached.c) follow */
        kill(getpid(), ntokens == 3 ? SIGUSR1 : SIGINT);
        return;
    }
    out_string(c, "CLIENT_ERROR invalid shutdown mode");
}

/* New connections get certificates reloaded from the ssl_* files; the
 * open ones keep theirs.  Errors are answered even under noreply, as
 * memcached answers them. */
void process_refresh_certs_command(conn *c, token_t *tokens, size_t ntokens)
{
    set_noreply_maybe(c, tokens, ntokens);
    if (!settings.tls.enabled) {
        out_errstring(c, "Error TLS not enabled");
        return;
    }
    char err[1024];
    if (!tls_refresh_certs(err, sizeof(err))) {
        out_errstring(c, err);
        return;
    }
    out_string(c, "OK");
}

static void process_slabs_automove_command(conn *c, token_t *tokens,
                                           size_t ntokens)
{
    uint32_t level;

    set_noreply_maybe(c, tokens, ntokens);
    if (ntokens == 5 && token_is(&tokens[2], "ratio")) {
        double ratio;
        if (!safe_strtod(tokens[3].value, &ratio)) {
            out_string(c, "ERROR");
            return;
        }
        SETTING_STORE(slab_automove_ratio, ratio);
    } else {
        if (!safe_strtoul(tokens[2].value, &level)) {
            out_string(c, "CLIENT_ERROR bad command line format");
            return;
        }
        if (level > 2) {
            out_string(c, "ERROR");
            return;
        }
        SETTING_STORE(slab_automove, (int)level);
    }
    out_string(c, "OK");
}

void process_slabs_command(conn *c, token_t *tokens, size_t ntokens)
{
    if (ntokens == 5 && token_is(&tokens[1], "reassign")) {
        int32_t src;
        int32_t dst;

        if (!settings.slab_reassign) {
            out_string(c, "CLIENT_ERROR slab reassignment disabled");
            return;
        }
        if (!safe_strtol(tokens[2].value, &src)
            || !safe_strtol(tokens[3].value, &dst)) {
            out_string(c, "CLIENT_ERROR bad command line format");
            return;
        }
        switch (slabs_reassign(src, dst)) {
        case REASSIGN_OK:
            out_string(c, "OK");
            break;
        case REASSIGN_RUNNING:
            out_string(c, "BUSY currently processing reassign request");
            break;
        case REASSIGN_BADCLASS:
            out_string(c, "BADCLASS invalid src or dst class id");
            break;
        case REASSIGN_NOSPARE:
            out_string(c, "NOSPARE source class has no spare pages");
            break;
        case REASSIGN_SRC_DST_SAME:
            out_string(c, "SAME src and dst class are identical");
            break;
        }
    } else if (ntokens >= 4 && token_is(&tokens[1], "automove")) {
        process_slabs_automove_command(c, tokens, ntokens);
    } else {
        out_string(c, "ERROR");
    }
}

static void reply_crawler_result(conn *c, enum crawler_result_type rv)
{
    switch (rv) {
    case CRAWLER_OK:
        out_string(c, "OK");
        break;
    case CRAWLER_RUNNING:
        out_string(c, "BUSY currently processing crawler request");
        break;
    case CRAWLER_BADCLASS:
        out_string(c, "BADCLASS invalid class id");
        break;
    case CRAWLER_NOTSTARTED:
        out_string(c, "NOTSTARTED no items to crawl");
        break;
    case CRAWLER_ERROR:
        out_string(c, "ERROR an unknown error happened");
        break;
    }
}

/* "lru_crawler sleep|tocrawl <n>" */
static void process_crawler_setting(conn *c, token_t *tokens, bool sleep)
{
    uint32_t v;

    if (!safe_strtoul(tokens[2].value, &v)) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    if (sleep) {
        if (v > 1000000) {
            out_string(c, "CLIENT_ERROR sleep must be one second or less");
            return;
        }
        SETTING_STORE(lru_crawler_sleep, v);
    } else {
        SETTING_STORE(lru_crawler_tocrawl, v);
    }
    out_string(c, "OK");
}

/* ---- metadump behind other commands ----
 * memcached writes out what get, gets, gat, gats and mn answered before it
 * reads on; after any other command its replies are still queued when the
 * next one is read, and it refuses a metadump then.  The commands read
 * with this one since the last read are still in the read buffer, before
 * this line, as the parser left them: words ended by NULs, a \r\n by a
 * NUL and its \n (a lone \n by a NUL: such a line runs into the next), a
 * value after its command line. */

static bool is_word_end(char ch)
{
    return ch == ' ' || ch == '\0';
}

/* The n-th word of [p, end), or NULL; *len its length. */
static const char *line_word(const char *p, const char *end, int n,
                             size_t *len)
{
    for (int i = 0;; i++) {
        while (p < end && is_word_end(*p)) {
            p++;
        }
        if (p == end) {
            return NULL;
        }
        const char *w = p;
        while (p < end && !is_word_end(*p)) {
            p++;
        }
        if (i == n) {
            *len = (size_t)(p - w);
            return w;
        }
    }
}

static bool word_is(const char *w, size_t len, const char *word)
{
    return w != NULL && len == strlen(word) && memcmp(w, word, len) == 0;
}

static bool line_flushes(const char *p, const char *end)
{
    size_t len;
    const char *cmd = line_word(p, end, 0, &len);
    return word_is(cmd, len, "get") || word_is(cmd, len, "gets")
        || word_is(cmd, len, "gat") || word_is(cmd, len, "gats")
        || word_is(cmd, len, "mn");
}

/* Bytes of value (with its \r\n) that follow a storage command's line. */
static size_t line_value_bytes(const char *p, const char *end)
{
    static const char *const storage[] = {
        "set", "add", "replace", "append", "prepend", "cas", NULL
    };
    size_t len;
    const char *cmd = line_word(p, end, 0, &len);
    int at = word_is(cmd, len, "ms") ? 2 : -1;
    for (int i = 0; at < 0 && storage[i] != NULL; i++) {
        if (word_is(cmd, len, storage[i])) {
            at = 4;
        }
    }
    char num[16];
    const char *w = at < 0 ? NULL : line_word(p, end, at, &len);
    int32_t bytes;
    if (w == NULL || len >= sizeof(num)) {
        return 0;
    }
    memcpy(num, w, len);
    num[len] = '\0';
    return safe_strtol(num, &bytes) && bytes >= 0 ? (size_t)bytes + 2 : 0;
}

/* Where the line starting at p ends ("\0\n"), else limit. */
static const char *line_end(const char *p, const char *limit)
{
    const char *nul;
    while ((nul = memchr(p, '\0', (size_t)(limit - p))) != NULL) {
        if (nul + 1 < limit && nul[1] == '\n') {
            return nul;
        }
        p = nul + 1;
    }
    return limit;
}

static bool metadump_pipelined(const conn *c, const char *line)
{
    const char *p = c->rbuf;
    bool queued = false;
    while (p < line) {
        const char *end = line_end(p, line);
        size_t len;
        if (end == line && line_word(p, end, 0, &len) == NULL) {
            break;              /* blanks before this line's command */
        }
        queued = !line_flushes(p, end);
        size_t value = line_value_bytes(p, end);
        p = end == line ? line : end + 2;
        p += value < (size_t)(line - p) ? value : (size_t)(line - p);
    }
    return queued;
}

/* ---- lru_crawler metadump ----
 * The storage walk (items.h) hands out its lines one batch of about
 * METADUMP_BATCH bytes at a time: the first in the command, each next one
 * when the connection has written the previous (conn.h's producer). */

#define METADUMP_BATCH (32 * 1024)

static bool metadump_line(void *ctx, const char *line, size_t len)
{
    return resp_add(ctx, line, len);
}

static void metadump_end(conn *c)
{
    metadump_free(c->producer_state);
    c->producer = NULL;
    c->producer_state = NULL;
}

/* conn.h's producer: the next batch, or the last one with END. */
static bool metadump_produce(conn *c, bool closing)
{
    if (closing) {
        metadump_end(c);
        return false;
    }
    switch (metadump_batch(c->producer_state, METADUMP_BATCH, metadump_line,
                           c)) {
    case METADUMP_MORE:
        break;
    case METADUMP_END:
        metadump_end(c);
        if (!resp_add(c, "END\r\n", 5)) {
            conn_set_state(c, conn_closing);
        }
        break;
    case METADUMP_STOPPED:
        metadump_end(c);
        conn_set_state(c, conn_closing);
        break;
    }
    return true;
}

/* Over UDP the dump goes all at once: a reply is one run of datagrams. */
static enum crawler_result_type metadump_start(conn *c, const char *classes)
{
    struct metadump *md;
    enum crawler_result_type rv = lru_crawler_metadump_start(classes, &md);
    if (rv != CRAWLER_OK) {
        return rv;
    }
    c->producer = metadump_produce;
    c->producer_state = md;
    metadump_produce(c, false);
    if (IS_UDP(c->transport)) {
        while (c->producer != NULL) {
            metadump_produce(c, false);
        }
    } else if (c->producer != NULL) {
        /* no next command before the dump is written */
        conn_set_state(c, conn_write);
    }
    return CRAWLER_OK;
}

void process_lru_crawler_command(conn *c, token_t *tokens,
                                 size_t ntokens)
{
    if (ntokens == 4 && token_is(&tokens[1], "crawl")) {
        if (!settings.lru_crawler) {
            out_string(c, "CLIENT_ERROR lru crawler disabled");
            return;
        }
        reply_crawler_result(c, lru_crawler_crawl(tokens[2].value));
    } else if (ntokens == 4 && token_is(&tokens[1], "metadump")) {
        enum crawler_result_type rv;
        if (!settings.lru_crawler) {
            out_string(c, "CLIENT_ERROR lru crawler disabled");
            return;
        }
        if (!settings.dump_enabled) {
            out_string(c, "ERROR metadump not allowed");
            return;
        }
        if (metadump_pipelined(c, tokens[0].value)) {
            out_string(c,
                "ERROR cannot pipeline other commands before metadump");
            return;
        }
        rv = metadump_start(c, tokens[2].value);
        if (rv != CRAWLER_OK) {
            /* on success the dump itself is the reply */
            reply_crawler_result(c, rv);
        }
    } else if (ntokens == 4 && token_is(&tokens[1], "tocrawl")) {
        process_crawler_setting(c, tokens, false);
    } else if (ntokens == 4 && token_is(&tokens[1], "sleep")) {
        process_crawler_setting(c, tokens, true);
    } else if (ntokens == 3 && token_is(&tokens[1], "enable")) {
        out_string(c, lru_crawler_set_enabled(true)
                      ? "OK" : "ERROR failed to start lru crawler thread");
    } else if (ntokens == 3 && token_is(&tokens[1], "disable")) {
        out_string(c, lru_crawler_set_enabled(false)
                      ? "OK" : "ERROR failed to stop lru crawler thread");
    } else {
        out_string(c, "ERROR");
    }
}

static void process_lru_tune(conn *c, token_t *tokens)
{
    uint32_t pct_hot;
    uint32_t pct_warm;
    double hot_factor;
    double warm_factor;

    if (!safe_strtoul(tokens[2].value, &pct_hot)
        || !safe_strtoul(tokens[3].value, &pct_warm)
        || !safe_strtod(tokens[4].value, &hot_factor)
        || !safe_strtod(tokens[5].value, &warm_factor)) {
        out_string(c, "ERROR");
    } else if ((uint64_t)pct_hot + pct_warm > 80) {
        out_string(c, "ERROR hot and warm pcts must not exceed 80");
    } else if (hot_factor <= 0 || warm_factor <= 0) {
        out_string(c, "ERROR hot/warm age factors must be greater than 0");
    } else {
        SETTING_STORE(hot_lru_pct, (int)pct_hot);
        SETTING_STORE(warm_lru_pct, (int)pct_warm);
        SETTING_STORE(hot_max_factor, hot_factor);
        SETTING_STORE(warm_max_factor, warm_factor);
        out_string(c, "OK");
    }
}

void process_lru_command(conn *c, token_t *tokens, size_t ntokens)
{
    set_noreply_maybe(c, tokens, ntokens);
    if (token_is(&tokens[1], "tune") && ntokens >= 7) {
        process_lru_tune(c, tokens);
    } else if (token_is(&tokens[1], "mode") && ntokens >= 4
               && settings.lru_maintainer_thread) {
        if (token_is(&tokens[2], "flat")) {
            SETTING_STORE(lru_segmented, false);
            out_string(c, "OK");
        } else if (token_is(&tokens[2], "segmented")) {
            SETTING_STORE(lru_segmented, true);
            out_string(c, "OK");
        } else {
            out_string(c, "ERROR");
        }
    } else if (token_is(&tokens[1], "temp_ttl") && ntokens >= 4
               && settings.lru_maintainer_thread) {
        int32_t ttl;
        if (!safe_strtol(tokens[2].value, &ttl)) {
            out_string(c, "ERROR");
            return;
        }
        SETTING_STORE(temp_lru, ttl >= 0);
        if (ttl >= 0) {
            SETTING_STORE(temporary_ttl, ttl);
        }
        out_string(c, "OK");
    } else {
        out_string(c, "ERROR");
    }
}

/* ---- watch ---- */

static const struct {
    const char *name;
    uint32_t stream;
} watch_streams[] = {
    { "fetchers", LOG_FETCHERS }, { "mutations", LOG_MUTATIONS },
    { "evictions", LOG_EVICTIONS }, { "connevents", LOG_CONNEVENTS },
    { "sysevents", LOG_SYSEVENTS }, { "rawcmds", LOG_RAWCMDS },
    { "proxyreqs", LOG_PROXYREQS }, { "proxyevents", LOG_PROXYEVENTS },
    { "proxyuser", LOG_PROXYUSER }, { "tier", LOG_TIER },
};

/* A stream's bit: memcached 1.6.18's words and `tier`, ours; 0 for any
 * other word. */
static uint32_t watch_stream(const char *word)
{
    for (size_t i = 0; i < sizeof(watch_streams) / sizeof(watch_streams[0]);
         i++) {
        if (strcmp(word, watch_streams[i].name) == 0) {
            return watch_streams[i].stream;
        }
    }
    return 0;
}

/* watch [stream...]: without one, fetchers, as memcached.  The replies
 * so far, OK, then the stream until the client hangs up
 * (logger_watch.c). */
void process_watch_command(conn *c, token_t *tokens, size_t ntokens)
{
    uint32_t streams = 0;

    set_noreply_maybe(c, tokens, ntokens);
    if (!settings.watch_enabled) {
        out_string(c, "CLIENT_ERROR watch commands not allowed");
        return;
    }
    for (size_t i = 1; i + 1 < ntokens; i++) {
        uint32_t s = watch_stream(tokens[i].value);
        if (s == 0) {
            out_string(c, "ERROR");
            return;
        }
        streams |= s;
    }
    if (streams == 0) {
        streams = LOG_FETCHERS;
    }
    /* a stream of lines has no place in datagrams */
    switch (IS_UDP(c->transport) ? LOGGER_ADD_FAILED
            : logger_add_watcher(c, streams)) {
    case LOGGER_ADD_OK:
        out_string(c, "OK");
        conn_set_state(c, conn_write);
        break;
    case LOGGER_ADD_TOO_MANY:
        out_string(c, "WATCHER_TOO_MANY log watcher limit reached");
        break;
    case LOGGER_ADD_FAILED:
        out_string(c, "WATCHER_FAILED failed to add log watcher");
        break;
    }
}

#ifdef MEMCACHED_DEBUG
/* Debug build only: tells whether a sandbox stops us from doing things a
 * cache server never needs.  We run without one, so this answers ERROR
 * exactly like memcached does when its seccomp profile is off. */
void process_misbehave_command(conn *c)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd != -1) {
        close(fd);
        out_string(c, "ERROR");
        return;
    }
    out_string(c, "OK");
}

/* Debug build only: "debugfail <n>": the next n copies of N-zone items
 * fail as if out of memory (tests of those paths). */
void process_debugfail_command(conn *c, token_t *tokens)
{
    uint32_t n;

    if (tokens[1].value == NULL || !safe_strtoul(tokens[1].value, &n)) {
        out_string(c, "ERROR");
        return;
    }
    items_debug_fail_snapshots(n);
    out_string(c, "OK");
}

/* Debug build only: "debugmove hold" stops page moves once their page is
 * chosen, "debugmove release" lets them go on, "debugmove held" answers
 * YES while one is stopped there (NO otherwise). */
void process_debugmove_command(conn *c, token_t *tokens)
{
    if (tokens[1].value == NULL) {
        out_string(c, "ERROR");
    } else if (strcmp(tokens[1].value, "hold") == 0) {
        slabs_debug_hold_moves(true);
        out_string(c, "OK");
    } else if (strcmp(tokens[1].value, "release") == 0) {
        slabs_debug_hold_moves(false);
        out_string(c, "OK");
    } else if (strcmp(tokens[1].value, "held") == 0) {
        out_string(c, slabs_debug_move_held() ? "YES" : "NO");
    } else {
        out_string(c, "ERROR");
    }
}

/* Debug build only: "debugtime <seconds>" moves the server clock. */
void process_debugtime_command(conn *c, token_t *tokens)
{
    int64_t seconds;

    if (tokens[1].value == NULL || !safe_strtoll(tokens[1].value, &seconds)) {
        out_string(c, "ERROR");
        return;
    }
    clock_debug_shift(seconds);
    out_string(c, "OK");
}
#endif
