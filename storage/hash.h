/*
 * hash.h: the key hash (hash.c), used by the index and the item locks.
 */
#ifndef HASH_H
#define HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t hash_key(const void *key, size_t length);

#endif
