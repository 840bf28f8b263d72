/*
 * proto_bin.c: memcached 1.6.18's binary protocol over the item API
 * (doc/protocol.md "Binary protocol"): get/getq/getk/getkq, set, add,
 * replace, append, prepend, delete, incr/decr (with initial value and
 * expiry), touch, gat/gatq/gatk/gatkq, flush, noop, version, quit, stat
 * with its groups, the SASL opcodes, and memcached's status codes and
 * error replies for everything else.
 *
 * The connection machine (conn.c) calls us through proto_binary (struct
 * conn_proto): we frame a request (header, extras and key in its read
 * buffer) and serve it (process_command_binary); a value is read into the
 * item we allocate and handed back through complete_nread_binary(), and a
 * closing connection's SASL state goes (auth_sasl_release).  Replies go
 * to the connection's response queue like the ASCII ones; a quiet
 * command's success reply is dropped, its errors are not.
 *
 * Locks: none of our own.  The item calls take the item lock themselves
 * (items.h).  Statistics go to the calling worker's own counters
 * (STAT_INCR).
 */
#include "config.h"
#include "proto_bin.h"
#include "proto_internal.h"
#include "proto_sasl.h"
#include "storage/storage.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* incr/decr: no item is made for a missing key when its expiry is this */
#define BIN_INCR_NO_CREATE 0xffffffffu
#define BIN_FLAGS_LEN 4

/* ---- byte order ---- */

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16
           | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void put16(unsigned char *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v & 0xff;
}

static void put32(unsigned char *p, uint32_t v)
{
    put16(p, v >> 16);
    put16(p + 2, v & 0xffff);
}

static void put64(unsigned char *p, uint64_t v)
{
    put32(p, v >> 32);
    put32(p + 4, v & 0xffffffffu);
}

/* Decode a request header (BIN_HEADER_SIZE bytes at buf) into *req;
 * false when its magic is not a request's. */
static bool bin_decode_header(const char *buf, struct bin_request *req)
{
    const unsigned char *h = (const unsigned char *)buf;

    if (h[0] != BIN_REQ_MAGIC) {
        return false;
    }
    /* the data type (byte 5) and vbucket (6-7) are not used */
    req->opcode = h[1];
    req->keylen = (uint16_t)(h[2] << 8 | h[3]);
    req->extlen = h[4];
    req->bodylen = get32(h + 8);
    req->opaque = get32(h + 12);
    req->cas = get64(h + 16);
    return true;
}

/* The key is what follows the extras in the read buffer. */
static const char *request_key(conn *c, const char *extras)
{
    return extras + c->bin.extlen;
}

/* Bytes of the frame after its extras and key. */
static uint32_t value_len(const conn *c)
{
    return c->bin.bodylen - c->bin.keylen - c->bin.extlen;
}

/* Binary expiry times are unsigned: no past times, unlike ASCII. */
static rel_time_t bin_exptime(const char *field)
{
    return realtime(get32((const unsigned char *)field));
}

/* ---- replies ---- */

static void queue_failed(conn *c)
{
    conn_set_state(c, conn_closing);
}

static bool add_header(conn *c, uint16_t status, uint8_t extlen,
                       uint16_t keylen, uint32_t bodylen, uint64_t cas)
{
    unsigned char h[BIN_HEADER_SIZE];

    h[0] = BIN_RES_MAGIC;
    h[1] = c->bin.opcode;
    put16(h + 2, keylen);
    h[4] = extlen;
    h[5] = 0;
    put16(h + 6, status);
    put32(h + 8, bodylen);
    put32(h + 12, c->bin.opaque);
    put64(h + 16, cas);
    if (settings.verbose > 1) {
        fprintf(stderr, ">%d binary reply opcode 0x%02x status 0x%04x\n",
                c->sfd, c->bin.opcode, status);
    }
    return resp_add(c, h, sizeof(h));
}

/* A reply whose body is copied: extras-less, keyless, `body` bytes. */
static void send_reply(conn *c, uint16_t status, const void *body,
                       uint32_t len, uint64_t cas)
{
    if (!add_header(c, status, 0, 0, len, cas) || !resp_add(c, body, len)) {
        queue_failed(c);
    }
}

/* Success: nothing at all for a quiet command. */
static void send_ok(conn *c, const void *body, uint32_t len, uint64_t cas)
{
    if (!c->noreply) {
        send_reply(c, BIN_OK, body, len, cas);
    }
}

static const char *status_text(uint16_t status)
{
    switch (status) {
    case BIN_KEY_ENOENT: return "Not found";
    case BIN_KEY_EEXISTS: return "Data exists for key.";
    case BIN_E2BIG: return "Too large.";
    case BIN_EINVAL: return "Invalid arguments";
    case BIN_NOT_STORED: return "Not stored.";
    case BIN_DELTA_BADVAL:
        return "Non-numeric server-side value for incr or decr";
    case BIN_AUTH_ERROR: return "Auth failure.";
    case BIN_UNKNOWN_COMMAND: return "Unknown command";
    case BIN_ENOMEM: return "Out of memory";
    }
    return "UNHANDLED ERROR";
}

/* Errors are sent even for quiet commands; `skip` value bytes that
 * follow in the stream are then discarded. */
static void send_error(conn *c, uint16_t status, uint32_t skip)
{
    const char *text = status_text(status);

    send_reply(c, status, text, (uint32_t)strlen(text), 0);
    if (skip > 0 && c->state != conn_closing) {
        conn_start_swallow(c, skip > INT_MAX ? INT_MAX : (int)skip);
    }
}

/* Malformed request: memcached answers Invalid arguments and hangs up. */
static void protocol_error(conn *c)
{
    send_error(c, BIN_EINVAL, 0);
    if (settings.verbose > 0) {
        fprintf(stderr, "Protocol error (opcode %02x), close connection "
                "%d\n", c->bin.opcode, c->sfd);
    }
    conn_close_after_write(c);
    conn_set_state(c, conn_write);
}

/* ---- get, getk, touch, gat, gatk and their quiet forms ---- */

static void send_hit(conn *c, item *it, bool with_key, bool with_value)
{
    unsigned char flags[BIN_FLAGS_LEN];
    uint16_t keylen = with_key ? it->nkey : 0;
    uint32_t vlen = with_value ? it->nbytes - 2 : 0;

    put32(flags, it->client_flags);
    if (!add_header(c, BIN_OK, BIN_FLAGS_LEN, keylen,
                    BIN_FLAGS_LEN + keylen + vlen, ITEM_get_cas(it))
        || !resp_add(c, flags, sizeof(flags))
        || !resp_add(c, ITEM_key(it), keylen)) {
        item_remove(it);
        queue_failed(c);
        return;
    }
    if (!with_value) {
        item_remove(it);
    } else if (!resp_add_item(c, it, 0, vlen)) {
        queue_failed(c);    /* resp_add_item released the reference */
    }
}

static void send_miss(conn *c, const char *key, uint16_t nkey,
                      bool with_key)
{
    if (c->noreply) {
        return;
    }
    if (!with_key) {
        send_error(c, BIN_KEY_ENOENT, 0);
    } else if (!add_header(c, BIN_KEY_ENOENT, 0, nkey, nkey, 0)
               || !resp_add(c, key, nkey)) {
        queue_failed(c);
    }
}

static void process_get_or_touch(conn *c, const char *extras, bool touch,
                                 bool with_key)
{
    const char *key = request_key(c, extras);
    uint16_t nkey = c->bin.keylen;
    bool with_value = c->bin.opcode != BIN_CMD_TOUCH;
    enum item_lookup found;
    item *it;

    if (touch) {
        it = item_touch(key, nkey, bin_exptime(extras), conn_worker(c),
                        with_value, &found);
    } else {
        it = item_get(key, nkey, conn_worker(c), DO_UPDATE, &found);
    }
    if (found == LOOKUP_NO_MEMORY) {
        send_error(c, BIN_ENOMEM, 0);
        return;
    }
    if (settings.detail_enabled) {
        stats_prefix_record_get(key, nkey, it != NULL);
    }
    if (it == NULL) {
        count_get_miss(c, touch);
        send_miss(c, key, nkey, with_key);
        return;
    }
    count_get_hit(c, it, touch);
    send_hit(c, it, with_key, with_value);
}

/* ---- set, add, replace, append, prepend ---- */

/* The cas a store must match.  memcached sets it on the new item, where
 * -C drops it: under -C stores ignore the request's cas. */
static uint64_t store_cas(const conn *c)
{
    return settings.use_cas ? c->bin.cas : 0;
}

/* No item for the value: say why and skip the value.  A failed set must
 * not leave the previous value readable: memcached drops it for SET and
 * SETQ, with or without a cas, and for nothing else. */
static void refuse_value(conn *c, const char *key, uint16_t nkey,
                         client_flags_t flags, uint32_t vlen, bool is_set)
{
    struct thread_stats *s = tstats(c);
    unsigned int clsid;

    if (vlen > INT_MAX - 2 || !item_size_ok(nkey, flags, (int)vlen + 2)) {
        STAT_INCR(s->store_too_large);
        /* past INT_MAX memcached cannot count the value: it skips
         * nothing, and so neither do we */
        send_error(c, BIN_E2BIG, vlen > INT_MAX - 2 ? 0 : vlen);
    } else {
        STAT_INCR(s->store_no_memory);
        send_error(c, BIN_ENOMEM, vlen);
    }
    if (is_set) {
        item_delete(key, nkey, 0, conn_worker(c), &clsid);
    }
}

static void start_value(conn *c, const char *key, uint16_t nkey,
                        client_flags_t flags, rel_time_t exptime,
                        uint32_t vlen, enum store_cmd cmd, bool is_set)
{
    item *it = NULL;

    if (settings.detail_enabled) {
        stats_prefix_record_set(key, nkey);
    }
    if (vlen <= INT_MAX - 2) {
        it = item_alloc(key, nkey, flags, exptime, (int)vlen + 2,
                        conn_worker(c));
    }
    if (it == NULL) {
        LOGGER_STORE(key, nkey, vlen <= INT_MAX - 2 && item_size_ok(nkey, flags,
                     (int)vlen + 2) ? NO_MEMORY : TOO_LARGE, cmd, false, 0, 0, 0);
        refuse_value(c, key, nkey, flags, vlen, is_set);
        return;
    }
    c->cas = store_cas(c);
    conn_start_nread(c, it, (int)vlen, cmd);
}

static void process_update(conn *c, const char *extras, uint8_t base)
{
    const unsigned char *ext = (const unsigned char *)extras;
    enum store_cmd cmd = base == BIN_CMD_ADD ? NREAD_ADD
                       : base == BIN_CMD_REPLACE ? NREAD_REPLACE
                       : NREAD_SET;

    /* a cas turns any of them into a cas command, as in memcached */
    if (store_cas(c) != 0) {
        cmd = NREAD_CAS;
    }
    start_value(c, request_key(c, extras), c->bin.keylen, get32(ext),
                bin_exptime(extras + 4), value_len(c), cmd,
                base == BIN_CMD_SET);
}

static void process_append_prepend(conn *c, const char *extras,
                                   uint8_t base)
{
    start_value(c, request_key(c, extras), c->bin.keylen, 0, 0,
                value_len(c),
                base == BIN_CMD_APPEND ? NREAD_APPEND : NREAD_PREPEND,
                false);
}

static void complete_update(conn *c, item *it)
{
    uint64_t cas = 0;
    enum store_item_type ret;

    STAT_INCR(class_stats(c, it->slabs_clsid)->set_cmds);
    /* the binary protocol sends no "\r\n"; items keep one */
    memcpy(ITEM_data(it) + it->nbytes - 2, "\r\n", 2);
    ret = store_item(it, c->cmd, conn_worker(c), c->cas, &cas, false);
    if (c->cmd == NREAD_CAS) {
        count_cas(c, it, ret);
    }
    switch (ret) {
    case STORED:
        send_ok(c, NULL, 0, cas);
        break;
    case EXISTS:
        send_error(c, BIN_KEY_EEXISTS, 0);
        break;
    case NOT_FOUND:
        send_error(c, BIN_KEY_ENOENT, 0);
        break;
    case NOT_STORED:
    case TOO_LARGE:
    case NO_MEMORY:
        send_error(c, c->cmd == NREAD_ADD ? BIN_KEY_EEXISTS
                      : c->cmd == NREAD_REPLACE ? BIN_KEY_ENOENT
                      : BIN_NOT_STORED, 0);
        break;
    }
}

/* ---- delete, incr/decr, flush ---- */

static void process_delete(conn *c, const char *extras)
{
    const char *key = request_key(c, extras);
    unsigned int clsid;

    if (settings.detail_enabled) {
        stats_prefix_record_delete(key, c->bin.keylen);
    }
    switch (item_delete(key, c->bin.keylen, c->bin.cas, conn_worker(c),
                        &clsid)) {
    case DELETE_OK:
        STAT_INCR(class_stats(c, clsid)->delete_hits);
        send_ok(c, NULL, 0, 0);
        break;
    case DELETE_NOT_FOUND:
        STAT_INCR(tstats(c)->delete_misses);
        send_error(c, BIN_KEY_ENOENT, 0);
        break;
    case DELETE_CAS_MISMATCH:
        send_error(c, BIN_KEY_EEXISTS, 0);
        break;
    }
}

static void send_counter(conn *c, uint64_t value, uint64_t cas)
{
    unsigned char body[8];

    put64(body, value);
    send_ok(c, body, sizeof(body), cas);
}

/* incr/decr of a missing key that the client wants created with its
 * initial value. */
static void create_counter(conn *c, const char *key, uint64_t initial,
                           const char *exptime)
{
    char text[INCR_MAX_STORAGE_LEN];
    int len = snprintf(text, sizeof(text), "%" PRIu64, initial);
    uint64_t cas = 0;
    item *it = item_alloc(key, c->bin.keylen, 0, bin_exptime(exptime),
                          len + 2, conn_worker(c));

    if (it == NULL) {
        send_error(c, BIN_ENOMEM, 0);
        return;
    }
    memcpy(ITEM_data(it), text, (size_t)len);
    memcpy(ITEM_data(it) + len, "\r\n", 2);
    if (store_item(it, NREAD_ADD, conn_worker(c), 0, &cas, false) == STORED) {
        send_counter(c, initial, cas);
    } else {
        send_error(c, BIN_NOT_STORED, 0);
    }
    item_remove(it);
}

static void process_arithmetic(conn *c, const char *extras, bool incr)
{
    const unsigned char *ext = (const unsigned char *)extras;
    const char *key = request_key(c, extras);
    char number[INCR_MAX_STORAGE_LEN + 1];
    uint64_t cas = 0;
    item *it = NULL;

    switch (add_delta(conn_worker(c), key, c->bin.keylen, incr, get64(ext),
                      number, c->bin.cas, &cas, &it)) {
    case DELTA_OK:
        count_arith(c, incr, it);
        item_remove(it);
        send_counter(c, strtoull(number, NULL, 10), cas);
        break;
    case DELTA_NON_NUMERIC:
        send_error(c, BIN_DELTA_BADVAL, 0);
        break;
    case DELTA_EOM:
        send_error(c, BIN_ENOMEM, 0);
        break;
    case DELTA_ITEM_NOT_FOUND:
        if (get32(ext + 16) != BIN_INCR_NO_CREATE) {
            create_counter(c, key, get64(ext + 8), extras + 16);
        } else {
            count_arith(c, incr, NULL);
            send_error(c, BIN_KEY_ENOENT, 0);
        }
        break;
    case DELTA_ITEM_CAS_MISMATCH:
        send_error(c, BIN_KEY_EEXISTS, 0);
        break;
    }
}

static void process_flush(conn *c, const char *extras)
{
    int64_t delay = 0;

    if (!settings.flush_enabled) {
        /* memcached's binary answer to a disabled flush_all */
        send_error(c, BIN_AUTH_ERROR, 0);
        return;
    }
    if (c->bin.extlen == 4) {
        delay = get32((const unsigned char *)extras);
    }
    STAT_INCR(tstats(c)->flush_cmds);
    items_flush(delay);
    send_ok(c, NULL, 0, 0);
}

/* ---- stat ---- */

/* ADD_STAT callback: one reply per statistic, key = name, value = value;
 * the empty one ends the listing. */
static void add_bin_stat(const char *key, uint16_t klen, const char *val,
                         uint32_t vlen, const void *cookie)
{
    conn *c = (conn *)cookie;

    if (!add_header(c, BIN_OK, 0, klen, klen + vlen, 0)
        || !resp_add(c, key, klen) || !resp_add(c, val, vlen)) {
        queue_failed(c);
    }
}

static void stats_end(conn *c)
{
    add_bin_stat(NULL, 0, NULL, 0, c);
}

static void process_stat_detail(conn *c, const char *how)
{
    if (strncmp(how, " dump", 5) == 0) {
        int len = 0;
        char *dump = stats_prefix_dump(&len);
        if (dump == NULL) {
            send_error(c, BIN_ENOMEM, 0);
            return;
        }
        add_bin_stat("detailed", 8, dump, (uint32_t)len, c);
        free(dump);
    } else if (strncmp(how, " on", 3) == 0) {
        settings.detail_enabled = 1;
    } else if (strncmp(how, " off", 4) == 0) {
        settings.detail_enabled = 0;
    } else {
        send_error(c, BIN_KEY_ENOENT, 0);
        return;
    }
    stats_end(c);
}

/* The groups memcached matches whole; "tier" is ours, as in ASCII. */
static bool stat_group(conn *c, const char *group)
{
    if (strcmp(group, "items") == 0) {
        item_stats(add_bin_stat, c);
    } else if (strcmp(group, "slabs") == 0) {
        slabs_stats(add_bin_stat, c);
    } else if (strcmp(group, "sizes") == 0) {
        item_stats_sizes(add_bin_stat, c);
    } else if (strcmp(group, "tier") == 0) {
        tier_stats(add_bin_stat, c);
    } else if (strcmp(group, "tier classes") == 0) {
        tier_stats_classes(add_bin_stat, c);
    } else if (strcmp(group, "sizes_enable") == 0
               || strcmp(group, "sizes_disable") == 0) {
        /* one line and no terminator, as memcached answers them */
        bool on = group[6] == 'e';
        if (on) {
            item_stats_sizes_enable();
        } else {
            item_stats_sizes_disable();
        }
        append_stat("sizes_status", add_bin_stat, c, "%s",
                    on ? "enabled" : "disabled");
        return true;
    } else {
        return false;
    }
    stats_end(c);
    return true;
}

/* memcached matches reset, settings and detail by prefix. */
static void process_bin_stat(conn *c, const char *extras)
{
    char group[KEY_MAX_LENGTH + 1];
    uint16_t nkey = c->bin.keylen;

    memcpy(group, request_key(c, extras), nkey);
    group[nkey] = '\0';
    if (nkey == 0) {
        server_stats(add_bin_stat, c);
        stats_end(c);
    } else if (strncmp(group, "reset", 5) == 0) {
        stats_reset();
        stats_end(c);
    } else if (strncmp(group, "settings", 8) == 0) {
        process_stat_settings(add_bin_stat, c);
        stats_end(c);
    } else if (strncmp(group, "detail", 6) == 0) {
        process_stat_detail(c, group + 6);
    } else if (!stat_group(c, group)) {
        send_error(c, BIN_KEY_ENOENT, 0);
    }
}

/* ---- SASL ---- */

static void process_sasl_mechs(conn *c)
{
    const char *list;
    unsigned len;

    if (!auth_sasl_mechs(c, &list, &len)) {
        if (settings.verbose > 0) {
            fprintf(stderr, "Failed to list SASL mechanisms.\n");
        }
        send_error(c, BIN_AUTH_ERROR, 0);
        return;
    }
    send_ok(c, list, len, 0);
}

/* auth and step: the mechanism is the key, the client's data the value,
 * read into an item as a stored value would be.  Data longer than Cyrus
 * may be given is a failed login: its bytes are skipped. */
static void process_sasl_auth(conn *c, const char *extras)
{
    uint32_t vlen = value_len(c);
    const char *mech = request_key(c, extras);
    item *it = NULL;

    if (c->bin.keylen > SASL_MECH_NAME_MAX) {
        send_error(c, BIN_EINVAL, vlen);
        return;
    }
    if (vlen > auth_sasl_token_max(mech, c->bin.keylen)) {
        struct thread_stats *s = tstats(c);
        STAT_INCR(s->auth_cmds);
        STAT_INCR(s->auth_errors);
        if (settings.verbose > 0) {
            fprintf(stderr, "SASL response of %u bytes refused\n",
                    (unsigned)vlen);
        }
        send_error(c, BIN_AUTH_ERROR, vlen);
        return;
    }
    if (vlen <= INT_MAX - 2) {
        it = item_alloc(mech, c->bin.keylen, 0, 0, (int)vlen + 2,
                        conn_worker(c));
    }
    if (it == NULL) {
        send_error(c, BIN_ENOMEM, vlen);
        return;
    }
    conn_start_nread(c, it, (int)vlen, NREAD_SET);
}

static void complete_sasl_auth(conn *c, item *it)
{
    char mech[SASL_MECH_NAME_MAX + 1];
    struct thread_stats *s = tstats(c);
    uint32_t vlen = it->nbytes - 2;
    const char *out;
    unsigned outlen;

    memcpy(mech, ITEM_key(it), it->nkey);
    mech[it->nkey] = '\0';
    if (settings.verbose > 0) {
        fprintf(stderr, "mech:  ``%s'' with %u bytes of data\n", mech,
                (unsigned)vlen);
    }
    switch (auth_sasl_exchange(c, c->bin.opcode == BIN_CMD_SASL_AUTH, mech,
                               vlen == 0 ? NULL : ITEM_data(it), vlen,
                               &out, &outlen)) {
    case AUTH_SASL_OK:
        c->authenticated = true;
        STAT_INCR(s->auth_cmds);
        send_ok(c, "Authenticated", 13, 0);
        break;
    case AUTH_SASL_CONTINUE:
        send_reply(c, BIN_AUTH_CONTINUE, out, outlen, 0);
        break;
    case AUTH_SASL_FAILED:
        STAT_INCR(s->auth_cmds);
        STAT_INCR(s->auth_errors);
        send_error(c, BIN_AUTH_ERROR, 0);
        break;
    }
}

/* ---- dispatch ---- */

/* The quiet form's plain opcode, or the opcode itself. */
static uint8_t base_opcode(uint8_t op, bool *quiet)
{
    static const uint8_t quiet_of[][2] = {
        { BIN_CMD_SETQ, BIN_CMD_SET }, { BIN_CMD_ADDQ, BIN_CMD_ADD },
        { BIN_CMD_REPLACEQ, BIN_CMD_REPLACE },
        { BIN_CMD_DELETEQ, BIN_CMD_DELETE },
        { BIN_CMD_INCREMENTQ, BIN_CMD_INCREMENT },
        { BIN_CMD_DECREMENTQ, BIN_CMD_DECREMENT },
        { BIN_CMD_QUITQ, BIN_CMD_QUIT }, { BIN_CMD_FLUSHQ, BIN_CMD_FLUSH },
        { BIN_CMD_APPENDQ, BIN_CMD_APPEND },
        { BIN_CMD_PREPENDQ, BIN_CMD_PREPEND },
        { BIN_CMD_GETQ, BIN_CMD_GET }, { BIN_CMD_GETKQ, BIN_CMD_GETK },
        { BIN_CMD_GATQ, BIN_CMD_GAT }, { BIN_CMD_GATKQ, BIN_CMD_GATK },
    };

    for (size_t i = 0; i < sizeof(quiet_of) / sizeof(quiet_of[0]); i++) {
        if (quiet_of[i][0] == op) {
            *quiet = true;
            return quiet_of[i][1];
        }
    }
    *quiet = false;
    return op;
}

/* Requests a client that has not authenticated may make under -S. */
static bool allowed_before_auth(uint8_t op)
{
    return op == BIN_CMD_SASL_LIST_MECHS || op == BIN_CMD_SASL_AUTH
           || op == BIN_CMD_SASL_STEP || op == BIN_CMD_VERSION;
}

static bool is_bare(const struct bin_request *r)
{
    return r->extlen == 0 && r->keylen == 0 && r->bodylen == 0;
}

/* Does the frame have the shape its command needs?  (memcached's
 * checks; a value may follow where none is checked for.) */
static bool well_formed(const struct bin_request *r, uint8_t base)
{
    switch (base) {
    case BIN_CMD_VERSION:
    case BIN_CMD_NOOP:
    case BIN_CMD_QUIT:
    case BIN_CMD_SASL_LIST_MECHS:
        return is_bare(r);
    case BIN_CMD_FLUSH:
        return r->keylen == 0 && r->bodylen == r->extlen
               && (r->extlen == 0 || r->extlen == 4);
    case BIN_CMD_SET:
    case BIN_CMD_ADD:
    case BIN_CMD_REPLACE:
        return r->extlen == 8 && r->keylen != 0
               && r->bodylen >= (uint32_t)r->keylen + 8;
    case BIN_CMD_GET:
    case BIN_CMD_GETK:
        return r->extlen == 0 && r->bodylen == r->keylen && r->keylen > 0;
    case BIN_CMD_DELETE:
        return r->keylen > 0 && r->extlen == 0 && r->bodylen == r->keylen;
    case BIN_CMD_INCREMENT:
    case BIN_CMD_DECREMENT:
        return r->keylen > 0 && r->extlen == 20
               && r->bodylen == (uint32_t)r->keylen + 20;
    case BIN_CMD_APPEND:
    case BIN_CMD_PREPEND:
        return r->keylen > 0 && r->extlen == 0;
    case BIN_CMD_STAT:
        return r->extlen == 0;
    case BIN_CMD_SASL_AUTH:
    case BIN_CMD_SASL_STEP:
        return r->extlen == 0 && r->keylen != 0;
    case BIN_CMD_TOUCH:
    case BIN_CMD_GAT:
    case BIN_CMD_GATK:
        return r->extlen == 4 && r->keylen != 0;
    }
    return true;
}

static void process_quit(conn *c)
{
    send_ok(c, NULL, 0, 0);
    conn_close_after_write(c);
    conn_set_state(c, conn_write);
}

static void run_command(conn *c, const char *extras, uint8_t base)
{
    switch (base) {
    case BIN_CMD_GET:
    case BIN_CMD_GETK:
        process_get_or_touch(c, extras, false, base == BIN_CMD_GETK);
        break;
    case BIN_CMD_TOUCH:
    case BIN_CMD_GAT:
    case BIN_CMD_GATK:
        process_get_or_touch(c, extras, true, base == BIN_CMD_GATK);
        break;
    case BIN_CMD_SET:
    case BIN_CMD_ADD:
    case BIN_CMD_REPLACE:
        process_update(c, extras, base);
        break;
    case BIN_CMD_APPEND:
    case BIN_CMD_PREPEND:
        process_append_prepend(c, extras, base);
        break;
    case BIN_CMD_DELETE:
        process_delete(c, extras);
        break;
    case BIN_CMD_INCREMENT:
    case BIN_CMD_DECREMENT:
        process_arithmetic(c, extras, base == BIN_CMD_INCREMENT);
        break;
    case BIN_CMD_FLUSH:
        process_flush(c, extras);
        break;
    case BIN_CMD_NOOP:
        send_ok(c, NULL, 0, 0);
        resp_flush_point(c);    /* memcached writes its replies here */
        break;
    case BIN_CMD_VERSION:
        send_ok(c, MEMCACHED_COMPAT_VERSION,
                sizeof(MEMCACHED_COMPAT_VERSION) - 1, 0);
        break;
    case BIN_CMD_QUIT:
        process_quit(c);
        break;
    case BIN_CMD_STAT:
        process_bin_stat(c, extras);
        break;
    case BIN_CMD_SASL_LIST_MECHS:
    case BIN_CMD_SASL_AUTH:
    case BIN_CMD_SASL_STEP:
        if (!settings.sasl) {
            send_error(c, BIN_UNKNOWN_COMMAND, value_len(c));
        } else if (base == BIN_CMD_SASL_LIST_MECHS) {
            process_sasl_mechs(c);
        } else {
            process_sasl_auth(c, extras);
        }
        break;
    }
}

/* Without -S the SASL opcodes are known but answered as unknown. */
static bool is_known(uint8_t base)
{
    return base <= BIN_CMD_PREPEND || base == BIN_CMD_STAT
           || base == BIN_CMD_TOUCH || base == BIN_CMD_GAT
           || base == BIN_CMD_GATK || base == BIN_CMD_SASL_LIST_MECHS
           || base == BIN_CMD_SASL_AUTH || base == BIN_CMD_SASL_STEP;
}

/* Serve c->bin: its extras and key are at `extras` (extlen bytes, then
 * keylen bytes), already consumed from the read buffer; a value, if any,
 * follows in the stream.  Sets the state the connection goes on in. */
static void process_command_binary(conn *c, const char *extras)
{
    const struct bin_request *r = &c->bin;
    bool quiet;
    uint8_t base;

    if (settings.verbose > 1) {
        fprintf(stderr, "<%d binary opcode 0x%02x keylen %u bodylen %u\n",
                c->sfd, r->opcode, r->keylen, r->bodylen);
    }
    if ((uint32_t)r->keylen + r->extlen > r->bodylen) {
        send_error(c, BIN_UNKNOWN_COMMAND, 0);
        conn_close_after_write(c);
        conn_set_state(c, conn_write);
        return;
    }
    if (settings.sasl && !c->authenticated
        && !allowed_before_auth(r->opcode)) {
        send_error(c, BIN_AUTH_ERROR, 0);
        conn_close_after_write(c);
        conn_set_state(c, conn_write);
        return;
    }
    if (r->keylen > KEY_MAX_LENGTH) {
        protocol_error(c);
        return;
    }
    base = base_opcode(r->opcode, &quiet);
    c->noreply = quiet;
    if (!is_known(base)) {
        /* memcached skips what it has not read of the frame (and, for
         * frames with extras or a key, as many bytes again: see
         * doc/protocol.md); we skip the rest of the frame */
        send_error(c, BIN_UNKNOWN_COMMAND, value_len(c));
    } else if (!well_formed(r, base)) {
        protocol_error(c);
    } else {
        run_command(c, extras, base);
    }
}

/* The value of a set/add/replace/append/prepend or SASL step has been
 * read into c->item. */
static void complete_nread_binary(conn *c)
{
    item *it = c->item;

    c->item = NULL;
    if (c->bin.opcode == BIN_CMD_SASL_AUTH
        || c->bin.opcode == BIN_CMD_SASL_STEP) {
        complete_sasl_auth(c, it);
    } else {
        complete_update(c, it);
    }
    item_remove(it);
}

/* A binary request: its header, extras and key must be buffered (a
 * value is read afterwards, into its item). */
static bool try_read_command_binary(conn *c)
{
    if (c->rbytes < BIN_HEADER_SIZE) {
        return false;
    }
    if (!bin_decode_header(c->rcurr, &c->bin)) {
        if (settings.verbose > 0) {
            fprintf(stderr, "Invalid magic:  %x\n",
                    (unsigned char)c->rcurr[0]);
        }
        conn_set_state(c, conn_closing);
        return true;
    }
    int prefix = BIN_HEADER_SIZE + c->bin.extlen + c->bin.keylen;
    if (c->rbytes < prefix) {
        return false;
    }
    const char *extras = c->rcurr + BIN_HEADER_SIZE;
    c->rcurr += prefix;
    c->rbytes -= prefix;
    if (!conn_command_begin(c)) {
        return true;
    }
    process_command_binary(c, extras);
    conn_command_end(c);
    return true;
}

const struct conn_proto proto_binary = {
    .name = "binary",
    .lines = false,
    .try_read_command = try_read_command_binary,
    .complete_nread = complete_nread_binary,
    .release = auth_sasl_release,
};
