/*
 * proto_auth.c: ASCII authentication (-Y authfile), the way memcached
 * 1.6.18 does it (doc/protocol.md "ASCII authentication").
 *
 * The authfile holds "user:password" lines, read once at start-up.  A
 * client authenticates with what looks like a set whose value is
 * "user password":
 *
 *     set <any key> <any flags> <any exptime> <bytes>\r\n
 *     <user> <password>\r\n
 *
 * and gets STORED (nothing is stored) or "CLIENT_ERROR authentication
 * failure"; it may try again.  Until it has succeeded, any other line
 * gets "CLIENT_ERROR unauthenticated".
 *
 * Owns the loaded entries and the pre-authentication parsing of a
 * connection's input: proto_ascii_auth (struct conn_proto), the ASCII
 * protocol (proto_text.c) with the login in front, which proto_select.c
 * chooses under -Y.
 *
 * Locks: none.  The entries are written at start-up on the main thread
 * and only read afterwards; a connection is served by its own worker.
 */
#include "config.h"
#include "proto_auth.h"
#include "daemon_stats.h"
#include "proto_text.h"
#include "settings.h"
#include "stat_counter.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* memcached closes a connection whose first line has no newline within
 * this many bytes; its "user password" value must fit its read buffer. */
#define AUTH_LINE_LIMIT 2048
#define AUTH_VALUE_LIMIT 16384
#define AUTH_MAX_WORDS 8

struct auth_entry {
    char *user;
    size_t ulen;
    char *pass;
    size_t plen;
};

static struct auth_entry *entries;
static size_t nentries;

/* One line (its end of line stripped): user, a colon, the password. */
static bool add_entry(char *line, size_t len)
{
    char *colon = memchr(line, ':', len);
    struct auth_entry *grown;

    if (colon == NULL) {
        return false;
    }
    grown = realloc(entries, (nentries + 1) * sizeof(*entries));
    if (grown == NULL) {
        fprintf(stderr, "Failed to allocate memory for the authfile\n");
        exit(EXIT_FAILURE);
    }
    entries = grown;
    *colon = '\0';
    line[len] = '\0';
    entries[nentries++] = (struct auth_entry){
        .user = line, .ulen = (size_t)(colon - line),
        .pass = colon + 1, .plen = len - (size_t)(colon - line) - 1
    };
    return true;
}

void authfile_load(const char *path)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;

    if (f == NULL) {
        fprintf(stderr, "Could not open authfile [%s] for reading, error "
                "%s\n", path, strerror(errno));
        exit(EXIT_FAILURE);
    }
    while ((len = getline(&line, &cap, f)) > 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) {
            len--;
        }
        if (!add_entry(line, (size_t)len)) {
            fprintf(stderr, "Authfile [%s] has a malformed entry. Should "
                    "be 'user:password'\n", path);
            exit(EXIT_FAILURE);
        }
        /* the entry keeps the line's memory */
        line = NULL;
        cap = 0;
    }
    free(line);
    fclose(f);
}

static bool authfile_grants(const char *user, const char *pass)
{
    size_t ulen = strlen(user);
    size_t plen = strlen(pass);
    bool granted = false;

    for (size_t i = 0; i < nentries; i++) {
        if (entries[i].ulen == ulen
            && memcmp(entries[i].user, user, ulen) == 0) {
            granted |= same_bytes_slow(entries[i].pass, entries[i].plen,
                                       pass, plen);
        }
    }
    return granted;
}

/* Split s in place on spaces (runs count as one, as memcached's
 * tokenizer does); at most max words. */
static size_t split_words(char *s, char **words, size_t max)
{
    size_t n = 0;

    while (n < max) {
        while (*s == ' ') {
            s++;
        }
        if (*s == '\0') {
            break;
        }
        words[n++] = s;
        while (*s != ' ' && *s != '\0') {
            s++;
        }
        if (*s == ' ') {
            *s++ = '\0';
        }
    }
    return n;
}

static void consume(conn *c, size_t n)
{
    c->rcurr += n;
    c->rbytes -= (int)n;
}

enum auth_line { AUTH_LINE_SET, AUTH_LINE_OTHER, AUTH_LINE_OVERSIZED };

/* Is this the "set ... <bytes>" line, and how long are the credentials
 * that follow it (*value_len, with their "\r\n")? */
static enum auth_line parse_auth_line(char *line, uint32_t *value_len)
{
    char *words[AUTH_MAX_WORDS];
    uint32_t bytes;
    size_t n = split_words(line, words, AUTH_MAX_WORDS);

    if (n < 5 || strcmp(words[0], "set") != 0
        || !safe_strtoul(words[4], &bytes)) {
        return AUTH_LINE_OTHER;
    }
    if ((uint64_t)bytes + 2 > AUTH_VALUE_LIMIT) {
        /* memcached's read buffer would fill up first: it hangs up */
        return AUTH_LINE_OVERSIZED;
    }
    *value_len = bytes + 2;
    return AUTH_LINE_SET;
}

static void check_credentials(conn *c, char *value, size_t len)
{
    char *words[AUTH_MAX_WORDS];
    struct thread_stats *s = c->thread_stats;

    if (len < 2 || memcmp(value + len - 2, "\r\n", 2) != 0) {
        out_string(c, "CLIENT_ERROR bad command line termination");
        return;
    }
    value[len - 2] = '\0';
    if (split_words(value, words, AUTH_MAX_WORDS) < 2) {
        out_string(c, "CLIENT_ERROR bad authentication token format");
        return;
    }
    STAT_INCR(s->auth_cmds);
    if (authfile_grants(words[0], words[1])) {
        c->authenticated = true;
        out_string(c, "STORED");
    } else {
        STAT_INCR(s->auth_errors);
        out_string(c, "CLIENT_ERROR authentication failure");
    }
}

static bool try_read_command_asciiauth(conn *c);

/* Before the set line: wait for a whole line, then take it. */
static bool read_auth_line(conn *c)
{
    char *el = memchr(c->rcurr, '\n', c->rbytes);
    char *line = c->rcurr;

    if (el == NULL) {
        if (c->rbytes > AUTH_LINE_LIMIT) {
            conn_set_state(c, conn_closing);
            return true;
        }
        return false;
    }
    *el = '\0';
    consume(c, (size_t)(el - line) + 1);
    if (el > line && el[-1] == '\r') {
        el[-1] = '\0';
    }
    switch (parse_auth_line(line, &c->auth_value_len)) {
    case AUTH_LINE_SET:
        break;
    case AUTH_LINE_OTHER:
        out_string(c, "CLIENT_ERROR unauthenticated");
        return true;
    case AUTH_LINE_OVERSIZED:
        conn_set_state(c, conn_closing);
        return true;
    }
    return c->rbytes >= (int)c->auth_value_len
           ? try_read_command_asciiauth(c) : false;
}

/* Serves the buffered "set" that carries "user password", or refuses any
 * other command; false when it needs more input. */
static bool try_read_command_asciiauth(conn *c)
{
    if (c->auth_value_len == 0) {
        return read_auth_line(c);
    }
    if (c->rbytes < (int)c->auth_value_len) {
        return false;
    }
    char *value = c->rcurr;
    size_t len = c->auth_value_len;

    consume(c, len);
    c->auth_value_len = 0;
    check_credentials(c, value, len);
    return true;
}

/* Until the client has authenticated, its lines are the login's. */
static bool try_read_command_auth(conn *c)
{
    if (c->authenticated) {
        return proto_ascii.try_read_command(c);
    }
    conn_login_begin(c);
    bool done = try_read_command_asciiauth(c);
    conn_command_end(c);
    return done;
}

static void complete_nread_auth(conn *c)
{
    proto_ascii.complete_nread(c);
}

const struct conn_proto proto_ascii_auth = {
    .name = "ascii",
    .lines = true,
    .try_read_command = try_read_command_auth,
    .complete_nread = complete_nread_auth,
};
