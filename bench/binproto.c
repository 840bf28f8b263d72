/*
 * binproto.c - owns tcload's binary-protocol framing: the 24-byte request
 * header of GET and SET (big-endian fields, as the memcached binary
 * protocol defines them; doc/protocol.md "Binary protocol") and the
 * decoding of a reply header.  Buffers and accounting stay in net.c.
 */
#include "binproto.h"

#include <string.h>

enum { BIN_MAGIC_REQUEST = 0x80, BIN_MAGIC_REPLY = 0x81 };

static void put_be16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static uint16_t get_be16(const unsigned char *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

static uint32_t get_be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
           ((uint32_t)p[2] << 8) | p[3];
}

static void put_header(unsigned char *h, uint8_t opcode, uint16_t keylen,
                       uint8_t extlen, uint32_t bodylen, uint32_t opaque)
{
    memset(h, 0, BIN_HEADER_LEN);       /* data type, vbucket, cas: 0 */
    h[0] = BIN_MAGIC_REQUEST;
    h[1] = opcode;
    put_be16(h + 2, keylen);
    h[4] = extlen;
    put_be32(h + 8, bodylen);
    put_be32(h + 12, opaque);
}

size_t bin_get_request(char *p, const char *key, uint16_t keylen,
                       uint32_t opaque)
{
    put_header((unsigned char *)p, BIN_OP_GET, keylen, 0, keylen, opaque);
    memcpy(p + BIN_HEADER_LEN, key, keylen);
    return BIN_HEADER_LEN + (size_t)keylen;
}

size_t bin_set_request(char *p, const char *key, uint16_t keylen,
                       const char *value, uint32_t vlen, uint32_t opaque)
{
    unsigned char *h = (unsigned char *)p;
    put_header(h, BIN_OP_SET, keylen, BIN_SET_EXTRAS,
               BIN_SET_EXTRAS + keylen + vlen, opaque);
    memset(h + BIN_HEADER_LEN, 0, BIN_SET_EXTRAS);   /* flags 0, no expiry */
    char *k = p + BIN_HEADER_LEN + BIN_SET_EXTRAS;
    memcpy(k, key, keylen);
    memcpy(k + keylen, value, vlen);
    return BIN_HEADER_LEN + BIN_SET_EXTRAS + (size_t)keylen + vlen;
}

int bin_reply_header(const unsigned char *buf, bin_reply_t *r)
{
    if (buf[0] != BIN_MAGIC_REPLY)
        return -1;
    r->opcode = buf[1];
    r->keylen = get_be16(buf + 2);
    r->extlen = buf[4];
    r->status = get_be16(buf + 6);
    r->bodylen = get_be32(buf + 8);
    r->opaque = get_be32(buf + 12);
    if ((uint32_t)r->extlen + r->keylen > r->bodylen)
        return -1;
    return 0;
}
