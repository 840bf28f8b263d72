/*
 * proto_bin.h: memcached's binary protocol (proto_bin.c): the frame
 * layout, opcodes and status codes of memcached 1.6.18
 * (doc/protocol.md "Binary protocol"), and the protocol (struct
 * conn_proto) that the connection machine (conn.c) calls.
 */
#ifndef PROTO_BIN_H
#define PROTO_BIN_H

#include "conn.h"

/* Every frame starts with a 24-byte header, multi-byte fields in network
 * order: magic, opcode, key length (2), extras length, data type,
 * vbucket (request) or status (response) (2), total body length (4),
 * opaque (4), cas (8).  The body is extras, then key, then value. */
#define BIN_HEADER_SIZE 24
#define BIN_REQ_MAGIC 0x80
#define BIN_RES_MAGIC 0x81

enum bin_opcode {
    BIN_CMD_GET = 0x00,
    BIN_CMD_SET = 0x01,
    BIN_CMD_ADD = 0x02,
    BIN_CMD_REPLACE = 0x03,
    BIN_CMD_DELETE = 0x04,
    BIN_CMD_INCREMENT = 0x05,
    BIN_CMD_DECREMENT = 0x06,
    BIN_CMD_QUIT = 0x07,
    BIN_CMD_FLUSH = 0x08,
    BIN_CMD_GETQ = 0x09,
    BIN_CMD_NOOP = 0x0a,
    BIN_CMD_VERSION = 0x0b,
    BIN_CMD_GETK = 0x0c,
    BIN_CMD_GETKQ = 0x0d,
    BIN_CMD_APPEND = 0x0e,
    BIN_CMD_PREPEND = 0x0f,
    BIN_CMD_STAT = 0x10,
    BIN_CMD_SETQ = 0x11,
    BIN_CMD_ADDQ = 0x12,
    BIN_CMD_REPLACEQ = 0x13,
    BIN_CMD_DELETEQ = 0x14,
    BIN_CMD_INCREMENTQ = 0x15,
    BIN_CMD_DECREMENTQ = 0x16,
    BIN_CMD_QUITQ = 0x17,
    BIN_CMD_FLUSHQ = 0x18,
    BIN_CMD_APPENDQ = 0x19,
    BIN_CMD_PREPENDQ = 0x1a,
    BIN_CMD_VERBOSITY = 0x1b,
    BIN_CMD_TOUCH = 0x1c,
    BIN_CMD_GAT = 0x1d,
    BIN_CMD_GATQ = 0x1e,
    BIN_CMD_SASL_LIST_MECHS = 0x20,
    BIN_CMD_SASL_AUTH = 0x21,
    BIN_CMD_SASL_STEP = 0x22,
    BIN_CMD_GATK = 0x23,
    BIN_CMD_GATKQ = 0x24
};

enum bin_status {
    BIN_OK = 0x0000,
    BIN_KEY_ENOENT = 0x0001,
    BIN_KEY_EEXISTS = 0x0002,
    BIN_E2BIG = 0x0003,
    BIN_EINVAL = 0x0004,
    BIN_NOT_STORED = 0x0005,
    BIN_DELTA_BADVAL = 0x0006,
    BIN_AUTH_ERROR = 0x0020,
    BIN_AUTH_CONTINUE = 0x0021,
    BIN_UNKNOWN_COMMAND = 0x0081,
    BIN_ENOMEM = 0x0082
};

/* The protocol as the connection machine (conn.c) calls it: it frames a
 * request's header, extras and key and serves it, finishes a command
 * once its value has been read, and ends a closing connection's SASL
 * state. */
extern const struct conn_proto proto_binary;

#endif
