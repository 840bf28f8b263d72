/*
 * util.c: generic helpers with no knowledge of connections or items.
 *
 * Owns the safe_strto* parsers, the decimal formatters, the base64 codec
 * and a comparison for passwords, all declared in util.h.  Nothing here
 * takes a lock or allocates.
 *
 * The parsers follow memcached's acceptance rules because clients see them
 * through protocol replies: a number may be followed by whitespace (the
 * rest is ignored), must not be empty, must not overflow, and an unsigned
 * parse refuses a minus sign on any non-zero value (strtoull would silently
 * wrap "-1" to 2^64-1).
 */
#include "config.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* A parse is complete when it consumed something and stopped at the end of
 * the string or at whitespace. */
static bool parse_ended_cleanly(const char *str, const char *end)
{
    if (end == str) {
        return false;
    }
    return *end == '\0' || isspace((unsigned char)*end);
}

static bool has_minus_sign(const char *str, const char *end)
{
    return memchr(str, '-', (size_t)(end - str)) != NULL;
}

static bool parse_unsigned(const char *str, int base, uint64_t *out)
{
    char *end;
    unsigned long long v;

    *out = 0;
    errno = 0;
    v = strtoull(str, &end, base);
    if (errno == ERANGE || !parse_ended_cleanly(str, end)) {
        return false;
    }
    if (v != 0 && has_minus_sign(str, end)) {
        return false;
    }
    *out = v;
    return true;
}

bool safe_strtoull(const char *str, uint64_t *out)
{
    return parse_unsigned(str, 10, out);
}

bool safe_strtoul(const char *str, uint32_t *out)
{
    uint64_t v;

    *out = 0;
    if (!parse_unsigned(str, 10, &v) || v > UINT32_MAX) {
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

bool safe_strtoll(const char *str, int64_t *out)
{
    char *end;
    long long v;

    *out = 0;
    errno = 0;
    v = strtoll(str, &end, 10);
    if (errno == ERANGE || !parse_ended_cleanly(str, end)) {
        return false;
    }
    *out = v;
    return true;
}

bool safe_strtol(const char *str, int32_t *out)
{
    int64_t v;

    *out = 0;
    if (!safe_strtoll(str, &v) || v > INT32_MAX || v < INT32_MIN) {
        return false;
    }
    *out = (int32_t)v;
    return true;
}

bool safe_strtod(const char *str, double *out)
{
    char *end;
    double v;

    *out = 0;
    errno = 0;
    v = strtod(str, &end);
    if (errno == ERANGE || !parse_ended_cleanly(str, end)) {
        return false;
    }
    *out = v;
    return true;
}

/* "00" to "99": two digits per division by 100. */
static const char digit_pairs[201] =
    "0001020304050607080910111213141516171819"
    "2021222324252627282930313233343536373839"
    "4041424344454647484950515253545556575859"
    "6061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

size_t u64_to_text(uint64_t v, char *dst)
{
    /* count the digits first, so they can be written in place from the
     * last one back, two at a time */
    size_t n = 1;
    uint64_t ten = 10;
    while (v >= ten) {
        n++;
        if (ten > UINT64_MAX / 10) {
            break;               /* 20 digits: 10^20 does not fit */
        }
        ten *= 10;
    }
    char *p = dst + n;
    while (v >= 100) {
        unsigned int pair = (unsigned int)(v % 100);
        v /= 100;
        p -= 2;
        memcpy(p, &digit_pairs[2 * pair], 2);
    }
    if (v >= 10) {
        memcpy(p - 2, &digit_pairs[2 * v], 2);
    } else {
        p[-1] = (char)('0' + v);
    }
    return n;
}

size_t i64_to_text(int64_t v, char *dst)
{
    if (v < 0) {
        dst[0] = '-';
        /* negate in unsigned arithmetic so INT64_MIN does not overflow */
        return 1 + u64_to_text((uint64_t)0 - (uint64_t)v, dst + 1);
    }
    return u64_to_text((uint64_t)v, dst);
}

/* ---- base64 ---- */

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t uri_encode(const char *src, size_t n, char *dst, size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)src[i];
        bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
            || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.'
            || ch == '_' || ch == '~';
        size_t need = plain ? 1 : 3;
        if (o + need >= size) {
            break;
        }
        if (plain) {
            dst[o++] = (char)ch;
        } else {
            dst[o++] = '%';
            dst[o++] = hex[ch >> 4];
            dst[o++] = hex[ch & 15];
        }
    }
    dst[o] = '\0';
    return o;
}

size_t base64_encode(const unsigned char *src, size_t len,
                     char *dst, size_t dst_max)
{
    size_t out = 0;
    size_t i;

    if (BASE64_ENCODED_LEN(len) > dst_max) {
        return 0;
    }
    for (i = 0; i + 2 < len; i += 3) {
        uint32_t group = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8
                         | src[i + 2];
        dst[out++] = b64_alphabet[(group >> 18) & 63];
        dst[out++] = b64_alphabet[(group >> 12) & 63];
        dst[out++] = b64_alphabet[(group >> 6) & 63];
        dst[out++] = b64_alphabet[group & 63];
    }
    if (i < len) {
        uint32_t group = (uint32_t)src[i] << 16;
        bool two = i + 1 < len;
        if (two) {
            group |= (uint32_t)src[i + 1] << 8;
        }
        dst[out++] = b64_alphabet[(group >> 18) & 63];
        dst[out++] = b64_alphabet[(group >> 12) & 63];
        dst[out++] = two ? b64_alphabet[(group >> 6) & 63] : '=';
        dst[out++] = '=';
    }
    return out;
}

/* 0..63 for alphabet characters, 64 for the pad '=', -1 for the rest. */
static int b64_value(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z') {
        return ch - 'A';
    }
    if (ch >= 'a' && ch <= 'z') {
        return ch - 'a' + 26;
    }
    if (ch >= '0' && ch <= '9') {
        return ch - '0' + 52;
    }
    if (ch == '+') {
        return 62;
    }
    if (ch == '/') {
        return 63;
    }
    if (ch == '=') {
        return 64;
    }
    return -1;
}

size_t base64_decode(const char *src, size_t len,
                     unsigned char *dst, size_t dst_max)
{
    size_t significant = 0;
    size_t out = 0;
    int quad[4];
    int filled = 0;
    int pads = 0;
    size_t i;

    /* memcached ignores characters outside the alphabet, but the remaining
     * ones must form whole 4-character groups */
    for (i = 0; i < len; i++) {
        if (b64_value((unsigned char)src[i]) >= 0) {
            significant++;
        }
    }
    if (significant == 0 || significant % 4 != 0
        || significant / 4 * 3 > dst_max) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        int v = b64_value((unsigned char)src[i]);
        if (v < 0) {
            continue;
        }
        if (v == 64) {
            pads++;
            v = 0;
        }
        quad[filled++] = v;
        if (filled < 4) {
            continue;
        }
        /* 4 inputs become 3 outputs: dst never overtakes src */
        dst[out++] = (unsigned char)(quad[0] << 2 | quad[1] >> 4);
        dst[out++] = (unsigned char)((quad[1] & 15) << 4 | quad[2] >> 2);
        dst[out++] = (unsigned char)((quad[2] & 3) << 6 | quad[3]);
        filled = 0;
        if (pads > 0) {
            /* padding ends the input; more than two pads is malformed */
            if (pads > 2) {
                return 0;
            }
            out -= (size_t)pads;
            break;
        }
    }
    return out;
}

bool same_bytes_slow(const char *a, size_t alen, const char *b,
                     size_t blen)
{
    unsigned char diff = alen != blen;
    size_t n = alen < blen ? alen : blen;

    for (size_t i = 0; i < n; i++) {
        diff |= (unsigned char)(a[i] ^ b[i]);
    }
    return diff == 0;
}
