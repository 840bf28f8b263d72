/*
 * proto_meta.c: the meta commands of the ASCII protocol of memcached
 * 1.6.18: mg, ms, md, ma, mn and me, their flag parsing and their reply
 * lines.  proto_text.c routes every two-letter command starting with 'm'
 * here through process_meta_family(), and hands a value read for ms back
 * through complete_mset() (the ms state waits in conn.meta_pending*).
 * Replies are byte-for-byte those of stock memcached 1.6.18.
 *
 * Locks: none of our own.  mg, md and ma look the key up with
 * item_get_locked(), which hands the item lock to us: mg builds its reply
 * line under it (the item's flags, times and cas are changed by other
 * workers under that lock), md and ma make their updates under it; we
 * release it before queueing any I/O.
 * Statistics go to the calling worker's own counters (STAT_INCR).
 */
#include "config.h"
#include "proto_internal.h"

#include <limits.h>
#include <string.h>

/* meta commands refuse lines with more tokens than this (terminal included) */
#define META_MAX_TOKENS 20
/* an opaque token, 'O' included, may be this long */
#define META_MAX_OPAQUE_LENGTH 32

/* ---- meta reply flags ---- */

/* " X": a meta return flag starts with a space and its letter */
static void line_flag(line_t *l, char flag)
{
    char two[2] = { ' ', flag };
    line_add(l, two, 2);
}

/* " k<key>", base64-encoded and followed by " b" for binary keys */
static void line_meta_key(line_t *l, const char *key, size_t nkey,
                          bool binary)
{
    line_flag(l, 'k');
    if (!binary) {
        line_add(l, key, nkey);
        return;
    }
    char enc[BASE64_ENCODED_LEN(KEY_MAX_LENGTH)];
    size_t n = base64_encode((const unsigned char *)key, nkey, enc,
                             sizeof(enc));
    line_add(l, enc, n);
    line_add(l, " b", 2);
}

/* " <opaque>" copied back as sent, 'O' included */
static void line_opaque(line_t *l, const token_t *tok)
{
    line_add(l, " ", 1);
    line_add(l, tok->value, tok->length);
}

/* memcached's server clock starts ITEM_UPDATE_INTERVAL (60 s) further
 * from its process_started than ours (clock.c): its current_time reads
 * 60 more.  Only the time that stands for "already expired" (1) is not
 * measured from process_started, so only it shows the gap. */
#define MEMCACHED_CLOCK_LEAD 60

/* remaining TTL as memcached reports it: -1 for items that never expire,
 * else an unsigned 32-bit difference, so that an item made already
 * expired (N or T with a negative TTL) reports a number near 2^32, the
 * one memcached's clock gives */
static void line_ttl(line_t *l, const item *it)
{
    rel_time_t exptime = it->exptime;

    if (exptime == 0) {
        line_add(l, "-1", 2);
        return;
    }
    if (exptime == 1) {
        exptime -= MEMCACHED_CLOCK_LEAD;    /* wraps, as memcached's does */
    }
    line_u64(l, (uint32_t)(exptime - current_time));
}

/* ---- meta commands: shared flag parsing ---- */

struct meta_flags {
    bool key_binary;     /* b */
    bool vivify;         /* N */
    bool new_ttl;        /* T */
    bool has_recache;    /* R */
    bool has_cas;        /* C */
    bool no_update;      /* u */
    bool no_reply;       /* q */
    bool value;          /* v */
    bool set_stale;      /* I */
    bool late_bump;      /* N, T, R, h or l: mg bumps after its reply */
    char mode;           /* M */
    rel_time_t exptime;
    rel_time_t autoviv_exptime;
    rel_time_t recache_time;
    client_flags_t client_flags;
    uint64_t req_cas;
    uint64_t delta;
    uint64_t initial;
};

/* Parse a meta TTL-like token ("T30"); negative means already expired. */
static bool meta_time_token(const token_t *tok, rel_time_t *out)
{
    int32_t v;

    if (!parse_wrapped_int32(tok->value + 1, &v)) {
        return false;
    }
    *out = exptime_from_client(v);
    return true;
}

/*
 * Read the flags of a meta command, tokens[start] up to the terminal one.
 * memcached's rules: a repeated or unknown flag stops at once with its own
 * error; a malformed token records its error and parsing goes on, so the
 * last recorded error wins.  A malformed F token records no message of its
 * own and leaves the generic one.  Returns false with *errstr set.
 */
static bool meta_parse_flags(token_t *tokens, size_t start,
                             struct meta_flags *of, const char **errstr)
{
    static const char *bad_token =
        "CLIENT_ERROR bad token in command line format";
    bool seen[128] = { false };
    bool failed = false;
    size_t i;

    memset(of, 0, sizeof(*of));
    *errstr = "CLIENT_ERROR bad command line format";
    of->delta = 1;

    for (i = start; tokens[i].length != 0; i++) {
        const token_t *tok = &tokens[i];
        unsigned char flag = (unsigned char)tok->value[0];

        if (flag >= 128 || seen[flag]) {
            *errstr = "CLIENT_ERROR duplicate flag";
            return false;
        }
        seen[flag] = true;
        switch (flag) {
        case 'b': {
            token_t *key = &tokens[KEY_TOKEN];
            /* decoding in place is safe: binary is shorter than base64 */
            size_t n = base64_decode(key->value, key->length,
                                     (unsigned char *)key->value,
                                     key->length);
            if (n == 0) {
                *errstr = "CLIENT_ERROR error decoding key";
                failed = true;
            }
            key->length = n;
            of->key_binary = true;
            break;
        }
        case 'N':
            of->vivify = true;
            of->late_bump = true;
            if (!meta_time_token(tok, &of->autoviv_exptime)) {
                *errstr = bad_token;
                failed = true;
            }
            break;
        case 'T':
            of->late_bump = true;
            if (!meta_time_token(tok, &of->exptime)) {
                *errstr = bad_token;
                failed = true;
            } else {
                of->new_ttl = true;
            }
            break;
        case 'R':
            of->late_bump = true;
            if (!meta_time_token(tok, &of->recache_time)) {
                *errstr = bad_token;
                failed = true;
            } else {
                of->has_recache = true;
            }
            break;
        case 'l':
        case 'h':
            of->late_bump = true;
            break;
        case 'O':
        case 'P':
        case 'L':
        case 'k':
        case 's':
        case 't':
        case 'c':
        case 'f':
            break;
        case 'v':
            of->value = true;
            break;
        case 'u':
            of->no_update = true;
            break;
        case 'q':
            of->no_reply = true;
            break;
        case 'F':
            if (!parse_client_flags(tok->value + 1, &of->client_flags)) {
                failed = true;
            }
            break;
        case 'C':
            if (!safe_strtoull(tok->value + 1, &of->req_cas)) {
                *errstr = bad_token;
                failed = true;
            } else {
                of->has_cas = true;
            }
            break;
        case 'M':
            if (tok->length != 2) {
                *errstr = "CLIENT_ERROR incorrect length for M token";
                failed = true;
            } else {
                of->mode = tok->value[1];
            }
            break;
        case 'J':
            if (!safe_strtoull(tok->value + 1, &of->initial)) {
                *errstr = "CLIENT_ERROR invalid numeric initial value";
                failed = true;
            }
            break;
        case 'D':
            if (!safe_strtoull(tok->value + 1, &of->delta)) {
                *errstr = "CLIENT_ERROR invalid numeric delta value";
                failed = true;
            }
            break;
        case 'I':
            of->set_stale = true;
            break;
        default:
            *errstr = "CLIENT_ERROR invalid flag";
            return false;
        }
    }
    return !failed;
}

static const char *opaque_error = "CLIENT_ERROR opaque token too long";

static bool opaque_too_long(const token_t *tok)
{
    return tok->value[0] == 'O' && tok->length > META_MAX_OPAQUE_LENGTH;
}

/* ms and md check their opaque tokens before they act; mg and ma meet
 * them in their reply line, after acting (see mget_hit_line). */
static bool meta_opaques_fit(const token_t *tokens, size_t start)
{
    size_t i;

    for (i = start; tokens[i].length != 0; i++) {
        if (opaque_too_long(&tokens[i])) {
            return false;
        }
    }
    return true;
}

/* The flags every meta reply echoes even without an item: O and k.
 * False, the line unfinished, at an opaque token that is too long. */
static bool line_echo_flags(line_t *l, const token_t *tokens,
                            const char *key, size_t nkey, bool binary)
{
    size_t i;

    for (i = KEY_TOKEN + 1; tokens[i].length != 0; i++) {
        if (opaque_too_long(&tokens[i])) {
            return false;
        }
        if (tokens[i].value[0] == 'O') {
            line_opaque(l, &tokens[i]);
        } else if (tokens[i].value[0] == 'k') {
            line_meta_key(l, key, nkey, binary);
        }
    }
    return true;
}

/* Common entry checks of mg, md, ma: key length and flag count. */
static bool meta_check_line(conn *c, const token_t *tokens, size_t ntokens)
{
    if (tokens[KEY_TOKEN].length > KEY_MAX_LENGTH) {
        out_errstring(c, "CLIENT_ERROR bad command line format");
        return false;
    }
    if (ntokens > META_MAX_TOKENS) {
        out_errstring(c, "CLIENT_ERROR options flags are too long");
        return false;
    }
    return true;
}

/* The checks mg, md and ma open with: the line and the flags (a bad one
 * is answered with flag_error, or with the parser's own message when
 * flag_error is NULL, as memcached's mg does).  False when the request
 * has been answered. */
static bool meta_open_request(conn *c, token_t *tokens, size_t ntokens,
                              struct meta_flags *of, const char *flag_error)
{
    const char *errstr;

    if (!meta_check_line(c, tokens, ntokens)) {
        return false;
    }
    if (!meta_parse_flags(tokens, KEY_TOKEN + 1, of, &errstr)) {
        out_errstring(c, flag_error != NULL ? flag_error : errstr);
        return false;
    }
    return true;
}

/* ---- mg ---- */

/* Create the empty placeholder item that N asks for on a miss.  Returns a
 * referenced item, or NULL when it could not be created.  It never
 * expires until the N flag's turn in the reply line gives it N's TTL: a
 * t flag before N reports -1, as memcached's does. */
static item *meta_vivify(conn *c, const char *key, size_t nkey)
{
    item *it = item_alloc(key, nkey, 0, 0, 2, conn_worker(c));

    if (it == NULL) {
        return NULL;
    }
    memcpy(ITEM_data(it), "\r\n", 2);
    if (store_item(it, NREAD_ADD, conn_worker(c), 0, NULL, false) != STORED) {
        item_remove(it);
        return NULL;
    }
    return it;
}

/* Build the hit reply of mg, handing out the recache token (W) when the
 * client wins it.  Reads and changes the item's metadata: call with the
 * item lock of hv held.  The flags act in their order: at an opaque token
 * that is too long it stops and returns false, leaving what the flags
 * before it did (a T's TTL, an N's), as memcached does. */
static bool mget_hit_line(line_t *l, const token_t *tokens,
                          const struct meta_flags *of, item *it,
                          uint64_t hv, bool created, bool *ttl_set)
{
    bool won = false;
    size_t i;

    if (of->value) {
        line_add(l, "VA ", 3);
        line_u64(l, it->nbytes - 2);
    } else {
        line_add(l, "HD", 2);
    }
    for (i = KEY_TOKEN + 1; tokens[i].length != 0; i++) {
        switch (tokens[i].value[0]) {
        case 'T':
            *ttl_set = true;
            do_item_set_exptime(it, hv, of->exptime);
            break;
        case 'N':
            if (created) {
                do_item_set_exptime(it, hv, of->autoviv_exptime);
                won = true;
            }
            break;
        case 'R':
            /* win the right to recache an item about to expire, unless
             * someone already holds it */
            if (!(it->it_flags & ITEM_TOKEN_SENT) && !created
                && it->exptime != 0 && it->exptime < of->recache_time) {
                won = true;
            }
            break;
        case 's':
            line_flag(l, 's');
            line_u64(l, it->nbytes - 2);
            break;
        case 't':
            line_flag(l, 't');
            line_ttl(l, it);
            break;
        case 'c':
            line_flag(l, 'c');
            line_u64(l, ITEM_get_cas(it));
            break;
        case 'f':
            line_flag(l, 'f');
            line_u64(l, it->client_flags);
            break;
        case 'l':
            line_flag(l, 'l');
            line_u64(l, (uint64_t)(current_time - it->time));
            break;
        case 'h':
            line_flag(l, 'h');
            line_add(l, (it->it_flags & ITEM_FETCHED) ? "1" : "0", 1);
            break;
        case 'O':
            if (opaque_too_long(&tokens[i])) {
                return false;
            }
            line_opaque(l, &tokens[i]);
            break;
        case 'k':
            /* the key comes back encoded when it was stored binary,
             * whatever this request said, as memcached does */
            line_meta_key(l, ITEM_key(it), it->nkey,
                          (it->it_flags & ITEM_KEY_BINARY) != 0);
            break;
        default:
            break;
        }
    }
    /* Z before X before W, and never W with Z */
    if (it->it_flags & ITEM_TOKEN_SENT) {
        line_flag(l, 'Z');
    }
    if (it->it_flags & ITEM_STALE) {
        line_flag(l, 'X');
        if (!(it->it_flags & ITEM_TOKEN_SENT)) {
            won = true;   /* a stale item hands its token to the first asker */
        }
    }
    if (won) {
        line_flag(l, 'W');
        do_item_set_flags(it, hv, ITEM_TOKEN_SENT, 0);
    }
    return true;
}

static void process_mget_command(conn *c, token_t *tokens, size_t ntokens)
{
    struct meta_flags of;
    const char *key;
    size_t nkey;
    item *it;
    enum item_lookup found;
    uint64_t hv = 0;
    bool created = false;
    bool ttl_set = false;
    line_t l;

    if (!meta_open_request(c, tokens, ntokens, &of, NULL)) {
        return;
    }
    key = tokens[KEY_TOKEN].value;
    nkey = tokens[KEY_TOKEN].length;
    l.len = 0;

    /* The reply line is built under the item lock the lookup takes: it
     * reads it_flags, exptime and the access time, which other workers'
     * hits and touches change under that lock. */
    it = item_get_locked(key, nkey, conn_worker(c), DONT_UPDATE, &hv, &found);
    if (it == NULL && found == LOOKUP_MISS && of.vivify) {
        /* store_item takes the item lock itself */
        item_unlock(hv);
        it = meta_vivify(c, key, nkey);
        created = it != NULL;
        if (it == NULL) {
            /* lost a race with another creator: use theirs */
            it = item_get_locked(key, nkey, conn_worker(c), DONT_UPDATE, &hv,
                                 &found);
        } else {
            item_lock(hv);
        }
    }

    if (found == LOOKUP_NO_MEMORY) {
        item_unlock(hv);
        out_errstring(c, "SERVER_ERROR out of memory writing get response");
        return;
    }
    if (it == NULL) {
        item_unlock(hv);
        count_get_miss(c, false);
        line_add(&l, "EN", 2);
        if (!line_echo_flags(&l, tokens, key, nkey, of.key_binary)) {
            out_errstring(c, opaque_error);   /* even under q */
        } else if (!of.no_reply) {
            line_send(c, &l);
        }
        return;
    }

    if (!mget_hit_line(&l, tokens, &of, it, hv, created, &ttl_set)) {
        /* memcached bumps at the lookup unless a flag needs the state
         * before it (late_bump), and then not at all on this error */
        if (!of.no_update && !of.late_bump) {
            item_bump(conn_worker(c), it, hv);
        }
        item_unlock(hv);
        item_remove(it);
        out_errstring(c, opaque_error);
        return;
    }
    /* bump only now, so h and l reported the state before this hit */
    if (!of.no_update) {
        item_bump(conn_worker(c), it, hv);
    }
    item_unlock(hv);
    count_get_hit(c, it, ttl_set);

    if (!line_send(c, &l)) {
        item_remove(it);
        return;
    }
    if (of.value) {
        resp_add_item(c, it, 0, it->nbytes);
    } else {
        item_remove(it);
    }
}

/* ---- ms ---- */

static bool mset_mode_to_cmd(char mode, enum store_cmd *comm)
{
    switch (mode) {
    case 0:
    case 'S':
        *comm = NREAD_SET;
        return true;
    case 'E':
        *comm = NREAD_ADD;
        return true;
    case 'A':
        *comm = NREAD_APPEND;
        return true;
    case 'P':
        *comm = NREAD_PREPEND;
        return true;
    case 'R':
        *comm = NREAD_REPLACE;
        return true;
    default:
        return false;
    }
}

/* Remember, in request order, the return flags an ms reply will carry
 * ("O<opaque>", "k", "c"), space separated, for complete_nread. */
static void mset_stash_reply_flags(conn *c, const token_t *tokens)
{
    size_t i;
    int len = 0;

    for (i = KEY_TOKEN + 2; tokens[i].length != 0; i++) {
        char flag = tokens[i].value[0];
        size_t n;
        if (flag == 'O') {
            n = tokens[i].length;
        } else if (flag == 'k' || flag == 'c') {
            n = 1;
        } else {
            continue;
        }
        if ((size_t)len + n + 1 > sizeof(c->meta_pending)) {
            break;
        }
        memcpy(c->meta_pending + len, tokens[i].value, n);
        len += (int)n;
        c->meta_pending[len++] = ' ';
    }
    c->meta_pending_len = len;
}

static void process_mset_command(conn *c, token_t *tokens, size_t ntokens)
{
    struct meta_flags of;
    const char *errstr = "CLIENT_ERROR bad command line format";
    const char *key = tokens[KEY_TOKEN].value;
    size_t nkey = tokens[KEY_TOKEN].length;
    enum store_cmd comm;
    int32_t vlen;
    item *it;

    if (nkey > KEY_MAX_LENGTH || ntokens == 3) {
        out_errstring(c, "CLIENT_ERROR bad command line format");
        return;
    }
    if (ntokens > META_MAX_TOKENS) {
        out_errstring(c, "CLIENT_ERROR options flags are too long");
        return;
    }
    if (!parse_wrapped_int32(tokens[KEY_TOKEN + 1].value, &vlen)
        || vlen < 0 || vlen > INT_MAX - 2) {
        out_errstring(c, "CLIENT_ERROR bad command line format");
        return;
    }
    vlen += 2;

    /* from here on the value is known to follow: errors swallow it */
    if (!meta_parse_flags(tokens, KEY_TOKEN + 2, &of, &errstr)) {
        goto reject;
    }
    if (!mset_mode_to_cmd(of.mode, &comm)) {
        errstr = "CLIENT_ERROR invalid mode for ms M token";
        goto reject;
    }
    if (!meta_opaques_fit(tokens, KEY_TOKEN + 2)) {
        errstr = opaque_error;
        goto reject;
    }
    key = tokens[KEY_TOKEN].value;   /* may have been base64-decoded */
    nkey = tokens[KEY_TOKEN].length;
    /* a cas, even C0, makes set and replace a cas store (a missing key
     * is NF, C0 never matches); append and prepend check a non-zero cas
     * themselves and add ignores it, as in memcached */
    if (of.has_cas && (comm == NREAD_SET || comm == NREAD_REPLACE)) {
        comm = NREAD_CAS;
    }

    it = item_alloc(key, nkey, of.client_flags, of.new_ttl ? of.exptime : 0,
                    vlen, conn_worker(c));
    if (it == NULL) {
        LOGGER_STORE(key, nkey, item_size_ok(nkey, of.client_flags, vlen)
                     ? NO_MEMORY : TOO_LARGE, comm, false, 0, 0, 0);
        /* memcached drops the old value whatever the mode or cas */
        reject_value(c, key, nkey, of.client_flags, vlen, true, true);
        return;
    }
    if (of.key_binary) {
        it->it_flags |= ITEM_KEY_BINARY;
    }
    mset_stash_reply_flags(c, tokens);
    c->meta_pending_flags = MSET_ACTIVE
        | (of.no_reply ? MSET_QUIET : 0)
        | (of.key_binary ? MSET_KEY_BINARY : 0)
        | (of.set_stale ? MSET_STALE : 0);
    c->cas = of.has_cas ? of.req_cas : 0;
    conn_start_nread(c, it, vlen, comm);
    return;

reject:
    out_errstring(c, errstr);
    conn_start_swallow(c, vlen);
}

void complete_mset(conn *c, item *it)
{
    uint32_t pending = c->meta_pending_flags;
    uint64_t new_cas = 0;
    enum store_item_type ret;
    const char *p = c->meta_pending;
    const char *end = c->meta_pending + c->meta_pending_len;
    line_t l;

    ret = store_item(it, c->cmd, conn_worker(c), c->cas, &new_cas,
                     (pending & MSET_STALE) != 0);
    if (c->cmd == NREAD_CAS) {
        count_cas(c, it, ret);
    }
    l.len = 0;
    switch (ret) {
    case STORED:
        if (pending & MSET_QUIET) {
            return;   /* quiet mode hides only the nominal reply */
        }
        line_add(&l, "HD", 2);
        break;
    case EXISTS:
        line_add(&l, "EX", 2);
        break;
    case NOT_FOUND:
        line_add(&l, "NF", 2);
        break;
    case NOT_STORED:
        line_add(&l, "NS", 2);
        break;
    default:
        out_errstring(c, "SERVER_ERROR Unhandled storage type.");
        return;
    }
    if (ret != STORED) {
        new_cas = 0;   /* memcached reports c0 when nothing was stored */
    }
    while (p < end) {
        size_t n = (size_t)((const char *)memchr(p, ' ', (size_t)(end - p))
                            - p);
        if (*p == 'O') {
            line_add(&l, " ", 1);
            line_add(&l, p, n);
        } else if (*p == 'k') {
            line_meta_key(&l, ITEM_key(it), it->nkey,
                          (pending & MSET_KEY_BINARY) != 0);
        } else if (*p == 'c') {
            line_flag(&l, 'c');
            line_u64(&l, new_cas);
        }
        p += n + 1;
    }
    line_send(c, &l);
}

/* ---- md ---- */

static void process_mdelete_command(conn *c, token_t *tokens, size_t ntokens)
{
    struct meta_flags of;
    const char *key;
    size_t nkey;
    item *it;
    enum item_lookup found;
    uint64_t hv;
    line_t l;

    if (!meta_open_request(c, tokens, ntokens, &of,
                           "CLIENT_ERROR invalid or duplicate flag")) {
        return;
    }
    if (!meta_opaques_fit(tokens, KEY_TOKEN + 1)) {
        out_errstring(c, opaque_error);
        return;
    }
    key = tokens[KEY_TOKEN].value;
    nkey = tokens[KEY_TOKEN].length;
    l.len = 0;

    it = item_get_locked(key, nkey, conn_worker(c), DONT_UPDATE, &hv, &found);
    if (found == LOOKUP_NO_MEMORY) {
        item_unlock(hv);
        out_errstring(c, "SERVER_ERROR out of memory");
        return;
    }
    if (it == NULL) {
        item_unlock(hv);
        STAT_INCR(tstats(c)->delete_misses);
        line_add(&l, "NF", 2);
    } else if (of.has_cas && ITEM_get_cas(it) != of.req_cas) {
        item_unlock(hv);
        STAT_INCR(tstats(c)->delete_misses);
        line_add(&l, "EX", 2);
    } else {
        if (of.set_stale) {
            /* keep the item but mark it stale with a fresh cas, and let
             * the next reader win the recache token */
            if (of.new_ttl) {
                do_item_set_exptime(it, hv, of.exptime);
            }
            do_item_set_flags(it, hv, ITEM_STALE, ITEM_TOKEN_SENT);
            do_item_set_cas(it, hv, get_cas_id());
        } else {
            STAT_INCR(class_stats(c, it->slabs_clsid)->delete_hits);
            do_item_unlink(it, hv);
        }
        item_unlock(hv);
        if (of.no_reply) {
            item_remove(it);
            return;
        }
        line_add(&l, "HD", 2);
    }
    line_echo_flags(&l, tokens, key, nkey, of.key_binary);
    if (it != NULL) {
        item_remove(it);
    }
    line_send(c, &l);
}

/* ---- ma ---- */

/* The flags of ma's reply line for the item it changed or made, in their
 * order; T and N act here.  False at an opaque token that is too long,
 * leaving what the flags before it did, as memcached does. */
static bool marith_item_flags(line_t *l, const token_t *tokens,
                              const struct meta_flags *of, item *it,
                              bool created)
{
    uint64_t hv = hash_key(ITEM_key(it), it->nkey);
    bool fits = true;

    item_lock(hv);
    for (size_t i = KEY_TOKEN + 1; fits && tokens[i].length != 0; i++) {
        switch (tokens[i].value[0]) {
        case 'c':
            line_flag(l, 'c');
            line_u64(l, ITEM_get_cas(it));
            break;
        case 't':
            line_flag(l, 't');
            line_ttl(l, it);
            break;
        case 'T':
            do_item_set_exptime(it, hv, of->exptime);
            break;
        case 'N':
            if (created) {
                do_item_set_exptime(it, hv, of->autoviv_exptime);
            }
            break;
        case 'O':
            fits = !opaque_too_long(&tokens[i]);
            if (fits) {
                line_opaque(l, &tokens[i]);
            }
            break;
        case 'k':
            line_meta_key(l, ITEM_key(it), it->nkey, of->key_binary);
            break;
        default:
            break;
        }
    }
    item_unlock(hv);
    return fits;
}

static void process_marithmetic_command(conn *c, token_t *tokens,
                                        size_t ntokens)
{
    struct meta_flags of;
    const char *key;
    size_t nkey;
    char number[INCR_MAX_STORAGE_LEN + 1];
    bool incr;
    bool created = false;
    bool quiet = false;
    item *it = NULL;
    line_t l;

    if (!meta_open_request(c, tokens, ntokens, &of,
                           "CLIENT_ERROR invalid or duplicate flag")) {
        return;
    }
    switch (of.mode) {
    case 0:
    case 'I':
    case '+':
        incr = true;
        break;
    case 'D':
    case '-':
        incr = false;
        break;
    default:
        out_errstring(c, "CLIENT_ERROR invalid mode for ma M token");
        return;
    }
    key = tokens[KEY_TOKEN].value;
    nkey = tokens[KEY_TOKEN].length;
    l.len = 0;
    number[0] = '\0';

    switch (add_delta(conn_worker(c), key, nkey, incr, of.delta, number,
                      of.has_cas ? of.req_cas : 0, NULL, &it)) {
    case DELTA_OK:
        count_arith(c, incr, it);
        /* q hides only this nominal reply: a vivified item is reported */
        quiet = of.no_reply;
        break;
    case DELTA_NON_NUMERIC:
        out_errstring(c,
            "CLIENT_ERROR cannot increment or decrement non-numeric value");
        return;
    case DELTA_EOM:
        out_errstring(c, "SERVER_ERROR out of memory");
        return;
    case DELTA_ITEM_NOT_FOUND:
        if (!of.vivify) {
            count_arith(c, incr, NULL);
            line_add(&l, "NF", 2);
            break;
        }
        number[u64_to_text(of.initial, number)] = '\0';
        it = item_alloc(key, nkey, 0, 0, (int)strlen(number) + 2,
                        conn_worker(c));
        if (it == NULL) {
            out_errstring(c,
                "SERVER_ERROR Out of memory allocating new item");
            return;
        }
        memcpy(ITEM_data(it), number, strlen(number));
        memcpy(ITEM_data(it) + strlen(number), "\r\n", 2);
        if (store_item(it, NREAD_ADD, conn_worker(c), 0, NULL, false)
                == STORED) {
            created = true;
        } else {
            /* someone created it between our miss and our add */
            item_remove(it);
            it = NULL;
            line_add(&l, "NS", 2);
        }
        break;
    case DELTA_ITEM_CAS_MISMATCH:
        line_add(&l, "EX", 2);
        break;
    }

    if (it == NULL) {
        if (!line_echo_flags(&l, tokens, key, nkey, of.key_binary)) {
            out_errstring(c, opaque_error);
            return;
        }
        line_send(c, &l);
        return;
    }
    size_t vlen = strlen(number);
    if (of.value) {
        line_add(&l, "VA ", 3);
        line_u64(&l, vlen);
    } else {
        line_add(&l, "HD", 2);
    }
    bool fits = marith_item_flags(&l, tokens, &of, it, created);
    item_remove(it);
    if (!fits) {
        out_errstring(c, opaque_error);   /* the arithmetic stays done */
        return;
    }
    if (quiet) {
        return;
    }
    if (of.value) {
        line_add(&l, "\r\n", 2);
        line_add(&l, number, vlen);
    }
    line_send(c, &l);
}

/* ---- me ---- */

static void process_meta_debug_command(conn *c, token_t *tokens,
                                       size_t ntokens)
{
    char *key = tokens[KEY_TOKEN].value;
    size_t nkey = tokens[KEY_TOKEN].length;
    item *it;
    enum item_lookup found;
    line_t l;

    if (ntokens < 3 || nkey > KEY_MAX_LENGTH) {
        out_errstring(c, "CLIENT_ERROR bad command line format");
        return;
    }
    if (ntokens >= 4 && token_is(&tokens[2], "b")) {
        nkey = base64_decode(key, nkey, (unsigned char *)key, nkey);
        if (nkey == 0) {
            /* stock answers a bad base64 key of me with the generic error */
            out_errstring(c, "CLIENT_ERROR bad command line format");
            return;
        }
    }
    /* memcached 1.6.18 counts cmd_meta for me only */
    STAT_INCR(tstats(c)->meta_cmds);
    it = item_get(key, nkey, conn_worker(c), DONT_UPDATE, &found);
    if (found == LOOKUP_NO_MEMORY) {
        out_string(c, "SERVER_ERROR out of memory");
        return;
    }
    if (it == NULL) {
        out_string(c, "EN");
        return;
    }
    l.len = 0;
    line_add(&l, "ME ", 3);
    /* encoded when stored binary (ms b), whatever this request's b says */
    if (it->it_flags & ITEM_KEY_BINARY) {
        char enc[BASE64_ENCODED_LEN(KEY_MAX_LENGTH)];
        line_add(&l, enc, base64_encode((const unsigned char *)ITEM_key(it),
                                        it->nkey, enc, sizeof(enc)));
    } else {
        line_add(&l, ITEM_key(it), it->nkey);
    }
    line_str(&l, " exp=");
    if (it->exptime == 0) {
        line_add(&l, "-1", 2);
    } else {
        /* memcached prints the time since the expiry, negative while the
         * item lives, as a signed 32-bit number */
        uint32_t since = current_time - it->exptime;
        line_i64(&l, since <= INT32_MAX ? (int64_t)since
                                        : (int64_t)since - 4294967296);
    }
    line_str(&l, " la=");
    line_u64(&l, (uint64_t)(current_time - it->time));
    line_str(&l, " cas=");
    line_u64(&l, ITEM_get_cas(it));
    line_str(&l, (it->it_flags & ITEM_FETCHED) ? " fetch=yes" : " fetch=no");
    line_str(&l, " cls=");
    line_u64(&l, it->slabs_clsid);
    line_str(&l, " size=");
    line_u64(&l, ITEM_ntotal(it));
    item_remove(it);
    line_send(c, &l);
}

void process_meta_family(conn *c, token_t *tokens, size_t ntokens)
{
    char which = tokens[COMMAND_TOKEN].value[1];

    if (which == 'n') {
        out_string(c, "MN");
        resp_flush_point(c);    /* memcached writes its replies here */
        return;
    }
    if (which == 'e') {
        process_meta_debug_command(c, tokens, ntokens);
        return;
    }
    if (ntokens < 3) {
        out_string(c, "ERROR");
        return;
    }
    switch (which) {
    case 'g':
        process_mget_command(c, tokens, ntokens);
        break;
    case 's':
        process_mset_command(c, tokens, ntokens);
        break;
    case 'd':
        process_mdelete_command(c, tokens, ntokens);
        break;
    case 'a':
        process_marithmetic_command(c, tokens, ntokens);
        break;
    default:
        out_string(c, "ERROR");
        break;
    }
}
