/*
 * item_locks.c: the striped item locks (item_lock.h): a power-of-two array
 * of mutexes; the stripe of a key is hv & item_lock_mask.  hash_desc.c
 * keeps at least as many buckets as stripes, so one stripe covers a whole
 * index bucket.
 *
 * Locks: the stripes themselves.  The array is made at start-up, before
 * any thread that takes a stripe exists.  item_lock and item_unlock are
 * inline (item_lock.h): every request takes a stripe.
 */
#include "config.h"
#include "item_lock.h"

#include <pthread.h>
#include <stdlib.h>

pthread_mutex_t *item_locks;
uint64_t item_lock_mask;
static unsigned int lock_power;

bool item_locks_init(unsigned int power)
{
    size_t count = (size_t)1 << power;
    pthread_mutex_t *locks = calloc(count, sizeof(pthread_mutex_t));
    if (locks == NULL) {
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        pthread_mutex_init(&locks[i], NULL);
    }
    free(item_locks);
    item_locks = locks;
    item_lock_mask = count - 1;
    lock_power = power;
    return true;
}

unsigned int item_lock_power(void)
{
    return lock_power;
}

int item_trylock(uint64_t hv)
{
    return pthread_mutex_trylock(&item_locks[hv & item_lock_mask]);
}
