/*
 * crc32c.h: CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum of N items and of the N-zone's superblock (doc/restart.md
 * "Items and their seal").  crc32c.c computes it with the CPU's crc32
 * instruction where there is one (SSE4.2, checked at run time) and with
 * tables elsewhere; both give the same value.
 *
 * Locks: none; every function is pure and may run on any thread.
 */
#ifndef CRC32C_H
#define CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The CRC-32C of n bytes at p, continuing from crc: 0 to start, the value
 * a previous call returned to go on with more bytes (crc32c(crc32c(0, a),
 * b) is the CRC of a followed by b).  crc32c(0, "123456789", 9) is
 * 0xE3069283. */
uint32_t crc32c(uint32_t crc, const void *p, size_t n);

/* The two implementations crc32c() chooses between, for the unit test:
 * the table-driven one works everywhere; the instruction's only where
 * crc32c_hw_available(). */
uint32_t crc32c_sw(uint32_t crc, const void *p, size_t n);
uint32_t crc32c_hw(uint32_t crc, const void *p, size_t n);
bool crc32c_hw_available(void);

#endif
