/*
 * item_lock.h: the striped item locks (thread.c).  item_lock(hv) guards an
 * index bucket and every item hashed to it.
 */
#ifndef ITEM_LOCK_H
#define ITEM_LOCK_H

#include <stdint.h>

void item_lock(uint64_t hv);
void item_unlock(uint64_t hv);
int item_trylock(uint64_t hv);   /* 0 on success, like pthread_mutex_trylock */

#endif
