/*
 * binproto.h - the memcached binary protocol as tcload speaks it: GET and
 * SET request frames, and the reply header check.
 */
#ifndef TCLOAD_BINPROTO_H
#define TCLOAD_BINPROTO_H

#include <stddef.h>
#include <stdint.h>

#define BIN_HEADER_LEN 24
#define BIN_SET_EXTRAS 8                /* flags, expiry */

enum {
    BIN_STATUS_OK = 0x0000,
    BIN_STATUS_NOT_FOUND = 0x0001,
    BIN_STATUS_EXISTS = 0x0002,
    BIN_STATUS_TOO_LARGE = 0x0003,
    BIN_STATUS_EINVAL = 0x0004,
    BIN_STATUS_NOT_STORED = 0x0005,
    BIN_STATUS_UNKNOWN_COMMAND = 0x0081,
    BIN_STATUS_ENOMEM = 0x0082
};

enum { BIN_OP_GET = 0x00, BIN_OP_SET = 0x01 };

typedef struct {
    uint8_t opcode;
    uint8_t extlen;
    uint16_t keylen;
    uint16_t status;
    uint32_t bodylen;
    uint32_t opaque;
} bin_reply_t;

/* both write a whole request at p and return its length */
size_t bin_get_request(char *p, const char *key, uint16_t keylen,
                       uint32_t opaque);
size_t bin_set_request(char *p, const char *key, uint16_t keylen,
                       const char *value, uint32_t vlen, uint32_t opaque);
/* 0 and *r filled when buf starts with a reply header (BIN_HEADER_LEN
 * bytes), -1 when it cannot be one (wrong magic, extras or key longer
 * than the body) */
int bin_reply_header(const unsigned char *buf, bin_reply_t *r);

#endif
