/*
 * util.h: small, dependency-free helpers shared by the protocol layer and
 * anyone else who needs them (number parsing and formatting, base64 for
 * meta "b" keys), defined in util.c.
 */
#ifndef UTIL_H
#define UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Numbers as memcached accepts them: whitespace may follow, nothing else;
 * no overflow; unsigned parses refuse a minus sign.  False on bad input. */
bool safe_strtoull(const char *str, uint64_t *out);
bool safe_strtoll(const char *str, int64_t *out);
bool safe_strtoul(const char *str, uint32_t *out);
bool safe_strtol(const char *str, int32_t *out);
bool safe_strtod(const char *str, double *out);

/* Longest text a uint64_t can need, without a terminating NUL. */
#define UINT64_TEXT_MAX 20

/* Write v in decimal at dst (no NUL); return the number of bytes written. */
size_t u64_to_text(uint64_t v, char *dst);
/* Same for a signed value. */
size_t i64_to_text(int64_t v, char *dst);

/* memcached's encoding of keys in metadump and log lines: RFC 3986's
 * unreserved characters as they are, every other byte as %XX, into dst of
 * size bytes (3 * n + 1 hold any key), cut at a whole character; NUL
 * terminated.  Returns the length written. */
size_t uri_encode(const char *src, size_t n, char *dst, size_t size);

/* Bytes base64_encode writes for n input bytes (with padding, no NUL). */
#define BASE64_ENCODED_LEN(n) ((((n) + 2) / 3) * 4)

/* Standard alphabet, '=' padding, no line breaks.  Returns the length
 * written, or 0 when dst_max is too small. */
size_t base64_encode(const unsigned char *src, size_t len,
                     char *dst, size_t dst_max);
/* Decodes src; characters outside the alphabet are skipped, as memcached
 * does.  dst may be src (decoding in place is safe: output never overtakes
 * input).  Returns the decoded length, or 0 on malformed input or when
 * dst_max is too small. */
size_t base64_decode(const char *src, size_t len,
                     unsigned char *dst, size_t dst_max);

/* Are the two byte strings equal?  Takes as long whatever their first
 * difference, so that a password check's time tells nothing about how
 * much of the password was right. */
bool same_bytes_slow(const char *a, size_t alen, const char *b,
                     size_t blen);

#endif
