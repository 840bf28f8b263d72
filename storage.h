/*
 * storage.h: the storage engine's start-up and shutdown (storage.c),
 * called by the daemon's main (memcached.c), the fuzz harness and the
 * unit tests; main thread only.
 */
#ifndef STORAGE_H
#define STORAGE_H

#include <stdbool.h>

/* The item locks, slabs, index and queues from settings; exits when out
 * of memory. */
void storage_init(void);
/* Before any client: recover the N-zone's items (a warm start), then
 * start the crawler, the index growth, the page mover and the tier
 * thread; 0 = ok. */
int storage_start_threads(void);
/* After the workers have stopped: stop the storage threads and, when
 * `graceful` (SIGUSR1, `shutdown graceful`), leave what a warm restart
 * needs (doc/restart.md). */
void storage_shutdown(bool graceful);

#endif
