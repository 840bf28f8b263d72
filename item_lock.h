/*
 * item_lock.h: the striped item locks (item_locks.c).  item_lock(hv)
 * guards an index bucket and every item hashed to it.
 */
#ifndef ITEM_LOCK_H
#define ITEM_LOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* Stripes the server makes.  The index keeps every key's buckets in its
 * stripe, so each stripe is a table that fills by chance: few stripes
 * fill evenly (doc/tiering.md "Index and descriptors"). */
#define ITEM_LOCK_POWER 8

/* Make 2^power stripes (again: the old ones are freed, so only before any
 * thread uses them); false when out of memory. */
bool item_locks_init(unsigned int power);
/* The power the stripes were made with: item_lock(hv) is stripe
 * hv & ((1 << power) - 1). */
unsigned int item_lock_power(void);

/* The stripes, item_locks.c's (made by item_locks_init); here so that
 * taking and dropping one is inline: every request does. */
extern pthread_mutex_t *item_locks;
extern uint64_t item_lock_mask;

static inline void item_lock(uint64_t hv)
{
    pthread_mutex_lock(&item_locks[hv & item_lock_mask]);
}

static inline void item_unlock(uint64_t hv)
{
    pthread_mutex_unlock(&item_locks[hv & item_lock_mask]);
}

int item_trylock(uint64_t hv);   /* 0 on success, like pthread_mutex_trylock */

#endif
